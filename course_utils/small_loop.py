"""Lesson 00's training loop: forward, loss, zero_grad, backward, step — nothing else.

Lessons 02–04 train with it; lesson 05 opens up the full loop (:mod:`course_utils.training`: batches from a loader,
warmup, clipping, evaluation).
"""
from __future__ import annotations

__all__ = ["train_steps"]

from typing import Callable

import torch
import torch.nn as nn

from .errors import CourseTypeError, CourseValueError
from .validation import check_module, check_positive_int, checked_by, describe


def check_train_steps_arguments(model: object, next_batch: object, loss_fn: object, optimizer: object,
                                steps: object, scheduler: object = None) -> None:
    check_module("model", model)
    for name, value in (("next_batch", next_batch), ("loss_fn", loss_fn)):
        if not callable(value):
            raise CourseTypeError(f"{name} must be a function, got {describe(value)}; e.g. next_batch=lambda: "
                                  "(inputs, targets) and loss_fn=torch.nn.functional.cross_entropy")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise CourseTypeError(f"optimizer must be a torch.optim.Optimizer, got {describe(optimizer)}; e.g. "
                              "torch.optim.Adam(model.parameters(), lr=1e-3)")
    check_positive_int("steps", steps)
    if scheduler is not None and not callable(getattr(scheduler, "step", None)):
        raise CourseTypeError(f"scheduler must have a .step() method (e.g. torch.optim.lr_scheduler.LambdaLR), got "
                              f"{describe(scheduler)}")


@checked_by(check_train_steps_arguments, trusts_callees=False)
def train_steps(model: nn.Module, next_batch: Callable[[], tuple[torch.Tensor, torch.Tensor]],
                loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], optimizer: torch.optim.Optimizer,
                steps: int, scheduler: torch.optim.lr_scheduler.LRScheduler | None = None) -> list[float]:
    """Train ``model`` for ``steps`` steps and return the loss of each step (lesson 00).

    ``next_batch()`` returns ``(inputs, targets)``; ``loss_fn(model(inputs), targets)`` is a scalar tensor.
    """
    model.train()
    losses = []
    for _ in range(steps):
        inputs, targets = next_batch()
        loss = loss_fn(model(inputs), targets)       # forward
        optimizer.zero_grad()
        loss.backward()                              # gradients
        optimizer.step()                             # update
        if scheduler is not None:
            scheduler.step()
        if not torch.isfinite(loss):
            raise CourseValueError(f"the loss became {loss.item()} at step {len(losses)}; lower the learning rate "
                                   "or check the model's inputs")
        losses.append(loss.item())
    return losses
