"""A small, complete training loop: AdamW, warmup + decay, gradient clipping, evaluation, history."""
from __future__ import annotations

__all__ = ["History", "SCHEDULES", "check_fit_arguments", "evaluate_lm", "fit", "lr_multiplier", "make_loader",
           "to_device", "train_lm"]

import math
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm.auto import tqdm

from .data.lm_data import lm_training_batches
from .errors import CourseTypeError, CourseValueError
from .losses import lm_loss, lm_loss_sum, lm_target_count
from .tokenization import PAD_ID
from .validation import (
    check_batches,
    check_bool,
    check_choice,
    check_device,
    check_id_lists,
    check_int,
    check_module,
    check_non_negative_int,
    check_positive_int,
    check_real,
    check_str,
    check_tensor,
    describe,
)

SCHEDULES = ("constant", "linear", "cosine", "inverse_sqrt")


def lr_multiplier(step: int, warmup_steps: int, total_steps: int, schedule: str = "cosine") -> float:
    """Factor applied to the peak learning rate at optimizer step ``step`` (0-based).

    Linear warmup from ~0 to 1 over ``warmup_steps``, then: ``constant``; ``linear`` decay to 0 at
    ``total_steps``; ``cosine`` decay to 0; ``inverse_sqrt`` ∝ 1/√step (the paper's "Noam" schedule).
    """
    check_non_negative_int("step", step)
    check_non_negative_int("warmup_steps", warmup_steps)
    check_positive_int("total_steps", total_steps)
    check_choice("schedule", schedule, SCHEDULES)
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
    """What :func:`fit` recorded: one entry per optimizer step, evaluations ``(step, {metric: value})``, and the
    wall-clock and CPU seconds of the training steps alone (evaluation excluded)."""

    train_loss: list[float] = field(default_factory=list)
    learning_rate: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    evaluations: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def metric(self, name: str) -> tuple[list[int], list[float]]:
        """``(steps, values)`` of one evaluation metric, ready to plot."""
        check_str("name", name)
        steps = [step for step, metrics in self.evaluations if name in metrics]
        return steps, [metrics[name] for _, metrics in self.evaluations if name in metrics]

    @property
    def final(self) -> dict[str, float]:
        """The last evaluation's metrics (empty before any evaluation)."""
        return dict(self.evaluations[-1][1]) if self.evaluations else {}


def to_device(batch, device: torch.device):
    """Move a tensor, or a tuple/list/dict of tensors, to ``device``."""
    device = check_device("device", device)
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def make_loader(*tensors: torch.Tensor, batch_size: int = 32, shuffle: bool = True, seed: int = 0) -> DataLoader:
    """A seeded :class:`DataLoader` over equally long tensors (same shuffling on every run)."""
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            raise CourseTypeError(f"make_loader: argument {i} must be a tensor with a first (example) dimension, "
                                  f"got {describe(t)}; pass e.g. make_loader(ids, labels)")
    if not tensors or any(len(t) != len(tensors[0]) for t in tensors):
        raise CourseValueError(f"make_loader needs tensors of equal length, got {[len(t) for t in tensors]}")
    if len(tensors[0]) == 0:
        raise CourseValueError("make_loader got tensors with 0 examples; pass at least one example")
    check_positive_int("batch_size", batch_size)
    check_bool("shuffle", shuffle)
    check_int("seed", seed)
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
                    on_step: Callable[[StepResult], None] | None = None, accumulate: int = 1) -> list[float]:
    """One pass over ``batches``: for each, zero the gradients, compute the loss, backpropagate, clip, step the
    optimizer, then the learning-rate schedule (once per step). Written out in lesson 05 (section 1, and
    ``accumulate`` in its capstone); :func:`fit` runs it once per epoch.

    Args:
        loss_fn: ``loss_fn(model, batch) -> scalar loss``.
        scheduler: e.g. from :func:`make_scheduler`; stepped after every optimizer step.
        clip_norm: clip the global gradient norm to this value (``None`` = no clipping; the norm is still measured).
        on_step: called with a :class:`StepResult` after every step (``fit`` records its history there).
        accumulate: gradient accumulation (lesson 05's capstone): one optimizer step per ``accumulate``
            consecutive batches, each batch's loss divided by the number of batches in its group (the last
            group may be shorter) before ``backward``, so that the step follows the mean gradient of the group.

    Returns:
        the loss of every batch, as floats (not divided).
    """
    check_positive_int("accumulate", accumulate)
    model.train()
    batches = list(batches)
    losses = []
    for start in range(0, len(batches), accumulate):
        group = batches[start:start + accumulate]      # one optimizer step per group (accumulate=1: per batch)
        optimizer.zero_grad(set_to_none=True)
        for batch in group:
            loss = loss_fn(model, batch)
            (loss / len(group)).backward()             # .grad adds up: the mean gradient of the group
            losses.append(loss.item())
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm if clip_norm else float("inf"))
        learning_rate = optimizer.param_groups[0]["lr"]
        optimizer.step()
        scheduler.step()
        if on_step is not None:
            on_step(StepResult(torch.tensor(losses[-len(group):]).mean(), float(norm), learning_rate))
    return losses


def check_fit_arguments(model: nn.Module, train_batches: Iterable, loss_fn: Callable, *, epochs: int, lr: float,
                        weight_decay: float, warmup_steps: int, schedule: str, clip_norm: float | None,
                        eval_fn: Callable | None, eval_every: int | None, device: torch.device | None, amp: bool,
                        progress: bool) -> None:
    """Raise a clear course error for any argument of :func:`fit` that cannot work, before training starts."""
    check_module("model", model)
    if next(model.parameters(), None) is None:
        raise CourseValueError(f"model {type(model).__name__} has no parameters to train")
    check_batches("train_batches", train_batches, "a DataLoader from make_loader, or a list of batches")
    if not callable(loss_fn):
        raise CourseTypeError(f"loss_fn must be a function loss_fn(model, batch) -> scalar loss, "
                              f"got {describe(loss_fn)}")
    check_int("epochs", epochs)
    if epochs < 1:
        raise CourseValueError(f"epochs must be >= 1 (one pass over train_batches at least), got {epochs}")
    check_real("lr", lr, 0.0, low_inclusive=False, hint="; 1e-3 is a good start for small models")
    check_real("weight_decay", weight_decay, 0.0)
    check_non_negative_int("warmup_steps", warmup_steps)
    check_choice("schedule", schedule, SCHEDULES)
    if clip_norm is not None:
        check_real("clip_norm", clip_norm, 0.0, low_inclusive=False, hint="; use None for no clipping")
    if eval_fn is not None and not callable(eval_fn):
        raise CourseTypeError(f"eval_fn must be a function eval_fn(model) -> dict of metrics, got {describe(eval_fn)}")
    if eval_every is not None:
        check_positive_int("eval_every", eval_every)
    if device is not None:
        check_device("device", device)
    check_bool("amp", amp)
    check_bool("progress", progress)


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
        amp: autocast matrix products to bfloat16, on CUDA and on CPU; weights, gradients and AdamW state stay
            float32. On CPUs without bf16 units it saves activation memory but runs slower (lesson 10 measures
            both).
        progress: show a tqdm progress bar.
    """
    check_fit_arguments(model, train_batches, loss_fn, epochs=epochs, lr=lr, weight_decay=weight_decay,
                        warmup_steps=warmup_steps, schedule=schedule, clip_norm=clip_norm, eval_fn=eval_fn,
                        eval_every=eval_every, device=device, amp=amp, progress=progress)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(device)
    total_steps = epochs * len(train_batches)
    optimizer = make_optimizer(model, lr, weight_decay)
    scheduler = make_scheduler(optimizer, warmup_steps, total_steps, schedule)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if amp else nullcontext()
    history = History()
    evaluation_seconds = [0.0, 0.0]  # wall, CPU
    start, cpu_start = time.perf_counter(), time.process_time()

    def evaluate(step: int) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        model.eval()
        with torch.no_grad():
            history.evaluations.append((step, dict(eval_fn(model))))
        model.train()
        evaluation_seconds[0] += time.perf_counter() - wall
        evaluation_seconds[1] += time.process_time() - cpu

    bar = tqdm(total=total_steps, desc="training") if progress else None  # tqdm(disable=True) still starts a thread
    step = 0

    def task_loss(model: nn.Module, batch) -> torch.Tensor:
        with autocast:
            loss = loss_fn(model, to_device(batch, device))
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.is_floating_point():
            raise CourseTypeError(f"loss_fn must return a scalar float tensor (one number to minimise), got "
                                  f"{describe(loss)} at step {step}; average the per-token losses, e.g. "
                                  "F.cross_entropy(...) with its default reduction='mean'")
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
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{result.loss.item():.3f}")
        if eval_fn is not None and eval_every and step % eval_every == 0:
            evaluate(step)

    for _ in range(epochs):
        train_one_epoch(model, train_batches, task_loss, optimizer, scheduler, clip_norm, on_step=record)
        if eval_fn is not None and not (history.evaluations and history.evaluations[-1][0] == step):
            evaluate(step)
    if bar is not None:
        bar.close()
    history.seconds = time.perf_counter() - start - evaluation_seconds[0]
    history.cpu_seconds = time.process_time() - cpu_start - evaluation_seconds[1]
    return history


# --- helpers the lessons share (plumbing: each lives here once, the notebooks import it) ---------------------


@torch.no_grad()
def predict_classes(model: nn.Module, batches: Iterable) -> torch.Tensor:
    """Arg-max class of every example in ``(ids, labels)`` batches, in batch order: ``(n_examples,)`` int64.

    Puts the model in evaluation mode (no dropout) and computes without gradients.
    """
    model.eval()
    device = next(model.parameters()).device
    predictions = [model(ids.to(device)).argmax(-1).cpu() for ids, _ in batches]
    if not predictions:
        raise CourseValueError("predict_classes got no batches; pass a non-empty list of (ids, labels) pairs.")
    return torch.cat(predictions)


def classification_accuracy(model: nn.Module, batches: Iterable) -> float:
    """Share of examples in ``(ids, labels)`` batches whose arg-max class is the label (a float in [0, 1])."""
    batches = list(batches)
    labels = torch.cat([labels.cpu() for _, labels in batches]) if batches else torch.empty(0)
    return (predict_classes(model, batches) == labels).double().mean().item()


def check_lm_batches(name: str, batches: object) -> None:
    """Raise unless ``batches`` is a non-empty list of tensors: the ``(batch, seq)`` id batches of ``lm_batches``."""
    check_batches(name, batches, "a list of (batch, seq) id tensors from lm_batches")
    for i, batch in enumerate(batches):
        check_tensor(f"{name}[{i}]", batch, hint="; each batch is a (batch, seq) tensor of ids (lm_batches)")


@torch.no_grad()
def evaluate_lm(model: nn.Module, batches: Sequence[torch.Tensor], pad_id: int = PAD_ID) -> dict[str, float]:
    """Summed next-token loss over every real target of ``batches`` → ``{"loss", "perplexity", "n_tokens"}``.

    The same positions :func:`course_utils.ngram.perplexity` scores on the same sequences (lesson 08).
    """
    check_module("model", model)
    check_lm_batches("batches", batches)
    check_non_negative_int("pad_id", pad_id)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        total += lm_loss_sum(model, batch, pad_id).item()
        count += lm_target_count(batch, pad_id)
    model.train(was_training)
    if count == 0:
        raise CourseValueError("no tokens to score: every target is padding; pass batches from lm_batches(...)")
    return {"loss": total / count, "perplexity": math.exp(total / count), "n_tokens": count}


def train_lm(model: nn.Module, train_sequences: Sequence[Sequence[int]], steps: int, batch_size: int = 32,
             lr: float = 3e-3, warmup_steps: int = 50, weight_decay: float = 0.01,
             validation: Sequence[torch.Tensor] | None = None, eval_every: int | None = None,
             seed: int = 0) -> History:
    """Train a language model for exactly ``steps`` steps of :func:`~course_utils.losses.lm_loss` with :func:`fit`
    (AdamW, warmup + cosine decay, clipping at 1) — lessons 08 and 09.

    Batches come from :func:`~course_utils.data.lm_data.lm_training_batches` (``lm_batches`` regrouped every epoch,
    ``seed + epoch``).
    With ``validation`` batches, the validation loss is recorded every ``eval_every`` steps and after the last one
    (``history.metric("loss")``).
    """
    check_module("model", model)
    check_id_lists("train_sequences", train_sequences)
    check_positive_int("steps", steps)
    check_non_negative_int("warmup_steps", warmup_steps)
    if validation is not None:
        check_lm_batches("validation", validation)
    check_int("seed", seed)
    batches = lm_training_batches(train_sequences, steps, batch_size, seed=seed)
    eval_fn = None if validation is None else (lambda m: {"loss": evaluate_lm(m, validation)["loss"]})
    return fit(model, batches, lm_loss, lr=lr, weight_decay=weight_decay,
               warmup_steps=min(warmup_steps, steps - 1), eval_fn=eval_fn, eval_every=eval_every, progress=False)


def best_time(function: Callable[[], object], repeats: int = 3) -> float:
    """The fastest of ``repeats`` wall-clock timings of ``function()``, in seconds.

    The minimum is the least disturbed by other programs sharing the CPU (they can only make a run slower).
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise CourseValueError(f"best_time: repeats must be an int >= 1, got {repeats!r}")
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best
