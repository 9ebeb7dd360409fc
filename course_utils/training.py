"""A small, complete training loop: AdamW, warmup + decay, gradient clipping, evaluation, history."""
from __future__ import annotations

import math
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm


SCHEDULES = ("constant", "linear", "cosine", "inverse_sqrt")


def lr_multiplier(step: int, warmup_steps: int, total_steps: int, schedule: str = "cosine") -> float:
    """Factor applied to the peak learning rate at optimizer step ``step`` (0-based).

    Linear warmup from ~0 to 1 over ``warmup_steps``, then: ``constant``; ``linear`` decay to 0 at
    ``total_steps``; ``cosine`` decay to 0; ``inverse_sqrt`` ∝ 1/√step (the paper's "Noam" schedule).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    step += 1
    if warmup_steps > 0 and step <= warmup_steps:
        return step / warmup_steps
    if schedule == "constant":
        return 1.0
    if schedule == "inverse_sqrt":
        return math.sqrt(max(warmup_steps, 1) / step)
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    if schedule == "linear":
        return 1.0 - progress
    return 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass
class History:
    """What :func:`fit` recorded: one entry per optimizer step, plus evaluations ``(step, {metric: value})``."""

    train_loss: list[float] = field(default_factory=list)
    learning_rate: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    evaluations: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    seconds: float = 0.0

    def metric(self, name: str) -> tuple[list[int], list[float]]:
        """``(steps, values)`` of one evaluation metric, ready to plot."""
        steps = [step for step, metrics in self.evaluations if name in metrics]
        return steps, [metrics[name] for _, metrics in self.evaluations if name in metrics]

    @property
    def final(self) -> dict[str, float]:
        """The last evaluation's metrics (empty before any evaluation)."""
        return dict(self.evaluations[-1][1]) if self.evaluations else {}


def to_device(batch, device: torch.device):
    """Move a tensor, or a tuple/list/dict of tensors, to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def make_loader(*tensors: torch.Tensor, batch_size: int = 32, shuffle: bool = True, seed: int = 0) -> DataLoader:
    """A seeded :class:`DataLoader` over equally long tensors (same shuffling on every run)."""
    if not tensors or any(len(t) != len(tensors[0]) for t in tensors):
        raise ValueError(f"make_loader needs tensors of equal length, got {[len(t) for t in tensors]}")
    generator = torch.Generator().manual_seed(seed)
    return DataLoader(TensorDataset(*tensors), batch_size=batch_size, shuffle=shuffle, generator=generator)


def make_optimizer(model: nn.Module, lr: float = 1e-3, weight_decay: float = 0.01) -> torch.optim.AdamW:
    """The course's optimizer: AdamW over every parameter of ``model`` (what :func:`fit` uses)."""
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)


def make_scheduler(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int,
                   schedule: str = "cosine") -> torch.optim.lr_scheduler.LambdaLR:
    """Warmup + decay as a ``LambdaLR`` (see :func:`lr_multiplier`); step it once per optimizer step."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_multiplier(step, warmup_steps, total_steps, schedule))


@dataclass
class StepResult:
    """What one optimizer step of :func:`train_one_epoch` measured."""

    loss: torch.Tensor      # the scalar loss (still a tensor: ``.item()`` when you need the number)
    grad_norm: float        # global gradient norm before clipping
    learning_rate: float    # the learning rate this step used


def train_one_epoch(model: nn.Module, batches: Iterable, loss_fn: Callable[[nn.Module, object], torch.Tensor],
                    optimizer: torch.optim.Optimizer, scheduler, clip_norm: float | None = 1.0,
                    on_step: Callable[[StepResult], None] | None = None) -> list[float]:
    """One pass over ``batches``: for each, zero the gradients, compute the loss, backpropagate, clip, step the
    optimizer, then the learning-rate schedule (once per step). Built in lesson 05; :func:`fit` runs it per epoch.

    Args:
        loss_fn: ``loss_fn(model, batch) -> scalar loss``.
        scheduler: e.g. from :func:`make_scheduler`; stepped after every optimizer step.
        clip_norm: clip the global gradient norm to this value (``None`` = no clipping; the norm is still measured).
        on_step: called with a :class:`StepResult` after every step (``fit`` records its history there).

    Returns:
        the loss of every step, as floats.
    """
    model.train()
    losses = []
    for batch in batches:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model, batch)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm if clip_norm else float("inf"))
        learning_rate = optimizer.param_groups[0]["lr"]
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(StepResult(loss.detach(), float(norm), learning_rate))
    return losses


def fit(model: nn.Module, train_batches: Iterable, loss_fn: Callable[[nn.Module, object], torch.Tensor], *,
        epochs: int = 1, lr: float = 1e-3, weight_decay: float = 0.01, warmup_steps: int = 0,
        schedule: str = "cosine", clip_norm: float | None = 1.0,
        eval_fn: Callable[[nn.Module], dict[str, float]] | None = None, eval_every: int | None = None,
        device: torch.device | None = None, amp: bool = False, progress: bool = True) -> History:
    """Train ``model`` with AdamW and return its :class:`History`.

    Args:
        train_batches: re-iterable batches (e.g. from :func:`make_loader`); each goes to ``loss_fn`` after
            :func:`to_device`.
        loss_fn: ``loss_fn(model, batch) -> scalar loss``; the task decides what a batch is.
        epochs: passes over ``train_batches``.
        warmup_steps, schedule: see :func:`lr_multiplier`; the total is ``epochs × len(train_batches)``.
        clip_norm: clip the global gradient norm (``None`` = no clipping; the norm is still recorded).
        eval_fn: ``eval_fn(model) -> {metric: value}``, run in eval mode without gradients after every epoch
            and every ``eval_every`` steps.
        amp: autocast to bfloat16 on CUDA (ignored on CPU).
        progress: show a tqdm progress bar.
    """
    device = device or next(model.parameters()).device
    model.to(device)
    total_steps = epochs * len(train_batches)
    if total_steps == 0:
        raise ValueError("no training batches: train_batches is empty")
    optimizer = make_optimizer(model, lr, weight_decay)
    scheduler = make_scheduler(optimizer, warmup_steps, total_steps, schedule)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if amp and device.type == "cuda" else nullcontext()
    history = History()
    start = time.perf_counter()

    def evaluate(step: int) -> None:
        model.eval()
        with torch.no_grad():
            history.evaluations.append((step, dict(eval_fn(model))))
        model.train()

    bar = tqdm(total=total_steps, disable=not progress, desc="training")
    step = 0

    def task_loss(model: nn.Module, batch) -> torch.Tensor:
        with autocast:
            loss = loss_fn(model, to_device(batch, device))
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss became {loss.item()} at step {step}: lower the learning rate, "
                                     "add warmup or gradient clipping, and check masks for all-masked rows")
        return loss

    def record(result: StepResult) -> None:
        nonlocal step
        history.learning_rate.append(result.learning_rate)
        history.train_loss.append(result.loss.item())
        history.grad_norm.append(result.grad_norm)
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{result.loss.item():.3f}")
        if eval_fn is not None and eval_every and step % eval_every == 0:
            evaluate(step)

    for _ in range(epochs):
        train_one_epoch(model, train_batches, task_loss, optimizer, scheduler, clip_norm, on_step=record)
        if eval_fn is not None and not (history.evaluations and history.evaluations[-1][0] == step):
            evaluate(step)
    bar.close()
    history.seconds = time.perf_counter() - start
    return history
