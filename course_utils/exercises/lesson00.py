"""Exercises of notebook 00 (setup): warm-ups that show how every exercise in the course works."""
from __future__ import annotations

import torch

from .core import Exercise, ExerciseFailure


def check_token_batch(ns) -> None:
    batch = ns["token_batch"]
    if not isinstance(batch, torch.Tensor):
        raise ExerciseFailure(f"`token_batch` should be a torch.Tensor, got {type(batch).__name__}.")
    if batch.shape != (4, 10):
        raise ExerciseFailure(f"shape is {tuple(batch.shape)}, expected (4, 10) = (batch, seq).")
    if batch.dtype != torch.long:
        raise ExerciseFailure(f"dtype is {batch.dtype}; token ids must be integers: use dtype=torch.long "
                              "(torch.randint gives long by default).")
    if batch.min() < 0 or batch.max() >= 1000:
        raise ExerciseFailure(f"ids range over [{int(batch.min())}, {int(batch.max())}], expected [0, 1000): "
                              "torch.randint's upper bound is exclusive.")


def check_device_of(ns) -> None:
    device_of = ns["device_of"]
    # a CPU tensor, and a "meta" tensor (shape and dtype only, no data): it exists on every machine, so a device
    # other than the CPU can be tried even without a GPU
    for tensor in (torch.zeros(2), torch.zeros(2, device="meta")):
        result = device_of(tensor)
        if not isinstance(result, torch.device):
            raise ExerciseFailure(f"`device_of` should return a torch.device, got {type(result).__name__}; "
                                  "a tensor's `.device` attribute already is one.")
        if result != tensor.device:
            if result == torch.device("cpu"):
                raise ExerciseFailure(f"for a tensor on the {tensor.device} device your function said cpu: do not "
                                      "hard-code the device, read it from the tensor, tensor.device.")
            raise ExerciseFailure(f"a tensor on {tensor.device} lives on {tensor.device}, your function said "
                                  f"{result}: return tensor.device.")


def check_same_draws(ns) -> None:
    draws = ns["same_draws"]
    first, second = draws()
    for value, name in ((first, "first"), (second, "second")):
        if not isinstance(value, torch.Tensor):
            raise ExerciseFailure(f"return two tensors (first, second); the {name} is a {type(value).__name__}.")
    if not torch.equal(first, second):
        raise ExerciseFailure("the two draws differ: seed the generator (e.g. seed_everything(0)) "
                              "before *each* draw, not once before both.")
    if first.numel() < 2 or torch.all(first == first.flatten()[0]):
        raise ExerciseFailure("draw random numbers (torch.rand / torch.randn), not constants.")
    torch.rand(7)  # move the global generator on: a function that seeds gives the same numbers anyway
    again, _ = draws()
    if not torch.equal(again, first):
        raise ExerciseFailure("calling `same_draws()` twice gave different numbers: your two tensors are equal "
                              "only because one is a copy of the other, not because the generator was seeded. "
                              "Seed (seed_everything(0)) before each torch.rand call.")


q1 = Exercise(
    name="A batch of token ids",
    variables=("token_batch",),
    checker=check_token_batch,
    hint="torch.randint(low, high, size) draws integers in [low, high).",
    solution="import torch\ntoken_batch = torch.randint(0, 1000, (4, 10))\n",
)

q2 = Exercise(
    name="Where does a tensor live?",
    variables=("device_of",),
    checker=check_device_of,
    hint="Every tensor has a `.device` attribute.",
    solution="def device_of(tensor):\n    return tensor.device\n",
)

q3 = Exercise(
    name="Reproducible randomness",
    variables=("same_draws",),
    checker=check_same_draws,
    hint="Call seed_everything(0) right before each torch.rand(...).",
    solution=("import torch\nfrom course_utils import seed_everything\n\n"
              "def same_draws():\n    seed_everything(0)\n    first = torch.rand(3)\n"
              "    seed_everything(0)\n    second = torch.rand(3)\n    return first, second\n"),
)
