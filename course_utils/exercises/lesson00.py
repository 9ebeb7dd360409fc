"""Exercises of notebook 00 (setup): warm-ups that show how every exercise in the course works.

Each check tries the answer on more than one input where it can: ``device_of`` sees tensors on the CPU, on the
"meta" device and on a (simulated) second GPU; ``same_draws`` is called twice, with the global random state moved in
between, while the random calls it makes are counted.
"""
from __future__ import annotations

import random
import sys
from typing import Any

import numpy as np
import torch

from .asserts import Case, Draw, call_learner, show
from .core import Exercise, ExerciseFailure, solution_of

VOCAB, BATCH, SEQ = 1000, 4, 10


# ---------------------------------------------------------------------------- q1: a batch of token ids
def check_token_batch(ns) -> None:
    batch = ns["token_batch"]
    if not isinstance(batch, torch.Tensor):
        raise ExerciseFailure(f"`token_batch` should be a torch.Tensor, got {type(batch).__name__}.")
    if batch.shape != (BATCH, SEQ):
        raise ExerciseFailure(f"shape is {tuple(batch.shape)}, expected ({BATCH}, {SEQ}) = (batch, seq).")
    if batch.dtype != torch.long:
        raise ExerciseFailure(f"dtype is {batch.dtype}; token ids must be integers: use dtype=torch.long "
                              "(torch.randint gives long by default).")
    batch = batch.detach().cpu()
    low, high = int(batch.min()), int(batch.max())
    if low >= 0 and high == VOCAB:
        raise ExerciseFailure(f"ids range over [{low}, {high}], expected [0, {VOCAB}): {VOCAB} is not an id of a "
                              f"vocabulary of {VOCAB} (ids 0 … {VOCAB - 1}); torch.randint's upper bound is "
                              "exclusive.")
    if low < 0 or high >= VOCAB:
        raise ExerciseFailure(f"ids range over [{low}, {high}], expected [0, {VOCAB}): a vocabulary of {VOCAB} has "
                              f"the ids 0 … {VOCAB - 1}.")
    # 40 ids drawn uniformly from 1000: about 39 different ones, some below 500 and some above (a draw that fails
    # this happens about once in 10¹² runs)
    distinct = len(set(batch.flatten().tolist()))
    if distinct == 1:
        raise ExerciseFailure(f"every id is {low}: the ids were not drawn at random. Draw each id independently "
                              f"from [0, {VOCAB}).")
    if high < VOCAB // 2 or low >= VOCAB // 2:
        raise ExerciseFailure(f"your ids only span [{low}, {high}]: {BATCH * SEQ} ids drawn from the whole "
                              f"vocabulary of {VOCAB} land on both sides of {VOCAB // 2}. Draw from [0, {VOCAB}), "
                              "not from a smaller range.")
    if distinct < 20:
        raise ExerciseFailure(f"your {BATCH * SEQ} ids hold only {distinct} different value(s): they were not drawn "
                              f"at random. Draw each id independently from [0, {VOCAB}).")


# ---------------------------------------------------------------------------- q2: where does a tensor live?
class SecondGPUTensor(torch.Tensor):
    """A shape-only ("meta") tensor that says it lives on ``cuda:1``: the checker can ask for a GPU tensor's device on
    a machine without a GPU. Only its attributes are meant to be read (an operation on it may fail)."""

    where = torch.device("cuda", 1)

    @property
    def device(self) -> torch.device:
        return self.where

    @property
    def is_cuda(self) -> bool:
        return True

    @property
    def is_meta(self) -> bool:
        return False

    @property
    def is_cpu(self) -> bool:
        return False

    def get_device(self) -> int:
        return self.where.index

    def __repr__(self, *args, **kwargs) -> str:
        return f"tensor(..., size={tuple(self.shape)}, device='{self.where}')"


def device_cases(draw: Draw) -> list[Case]:
    shape = tuple(draw.distinct(2, 2, 9))
    return [
        Case("a 0-d tensor on the CPU", (torch.tensor(3.0),)),
        Case(f"a {shape} long tensor on the CPU", (torch.zeros(shape, dtype=torch.long),)),
        # "meta": shape and dtype only, no data; it exists on every machine, so a device other than the CPU can be
        # tried even without a GPU
        Case(f"a {shape} tensor on the 'meta' device", (torch.zeros(shape, device="meta"),)),
        Case("a parameter on the 'meta' device", (torch.nn.Parameter(torch.zeros(shape[0], device="meta")),)),
        Case("a tensor on the second GPU, cuda:1 (simulated)",
             (torch.empty(shape, device="meta").as_subclass(SecondGPUTensor),)),
    ]


def check_device_of(ns) -> None:
    device_of = ns["device_of"]
    for case in device_cases(Draw()):
        (tensor,) = case.args
        simulated = isinstance(tensor, SecondGPUTensor)
        try:
            result = call_learner(device_of, "device_of", case.description, tensor)
        except ExerciseFailure:
            if simulated:  # the simulated GPU tensor has no data: only reading its attributes is judged
                continue
            raise
        expected = tensor.device
        if isinstance(result, str):
            raise ExerciseFailure(f"on {case.description}: `device_of` returned the string {result!r}; return a "
                                  "torch.device, which a tensor's `.device` attribute already is (a string is "
                                  "not the same object as a device: torch.device('cpu') != 'cpu').")
        if isinstance(result, int) and not isinstance(result, bool):
            raise ExerciseFailure(f"on {case.description}: `device_of` returned the number {result}: "
                                  "tensor.get_device() (or .device.index) is only the GPU's index (-1 on the CPU). "
                                  "Return the torch.device itself: tensor.device.")
        if not isinstance(result, torch.device):
            raise ExerciseFailure(f"on {case.description}: `device_of` should return a torch.device, got "
                                  f"{type(result).__name__}; a tensor's `.device` attribute already is one.")
        if result == expected:
            continue
        if result.type == expected.type:
            raise ExerciseFailure(f"on {case.description}: your function said {result}, which loses the device's "
                                  f"index: the tensor is on {expected}. Return the tensor's own device "
                                  "(tensor.device), not one rebuilt from its type.")
        if result == torch.device("cpu") or result.type in ("cuda", "cpu"):
            raise ExerciseFailure(f"on {case.description}: your function said {result}, the tensor is on "
                                  f"{expected}: do not hard-code the device (nor guess it from "
                                  "torch.cuda.is_available()), read it from the tensor: tensor.device.")
        raise ExerciseFailure(f"on {case.description}: the tensor lives on {expected}, your function said "
                              f"{result}: return tensor.device.")


# ---------------------------------------------------------------------------- q3: reproducible randomness
DRAWS = {  # names of the calls that draw random numbers (torch, NumPy, Python's random)
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal", "bernoulli",
    "multinomial", "poisson", "uniform_", "normal_", "random_", "exponential_", "geometric_", "cauchy_",
    "log_normal_", "bernoulli_", "random", "random_sample", "uniform", "integers", "standard_normal", "choice",
    "permutation", "shuffle", "sample", "gauss", "randrange", "normalvariate", "getrandbits",
}


def numpy_state() -> tuple:
    _, key, position, *_ = np.random.get_state()
    return tuple(key.tolist()), position


def global_random_states() -> tuple:
    """The global random states of torch, NumPy and Python's ``random``, moved on first (so that seeding inside the
    learner's function always changes them)."""
    torch.rand(1)
    np.random.random()
    random.random()
    return torch.get_rng_state(), numpy_state(), random.getstate()


def counted_call(function, name: str, case: str) -> tuple[Any, int, bool]:
    """``function()``, with the random draws it makes counted (torch's and Python's calls named in :data:`DRAWS`),
    and whether it used a global random state at all (NumPy's draws are not seen one by one)."""
    count = [0]
    previous = sys.getprofile()

    def profile(frame, event, arg) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") in DRAWS:
            count[0] += 1

    before = global_random_states()
    sys.setprofile(profile)
    try:
        result = call_learner(function, name, case)
    finally:
        sys.setprofile(previous)
    after = torch.get_rng_state(), numpy_state(), random.getstate()
    touched = (not torch.equal(before[0], after[0]) or before[1] != after[1]
               or before[2] != after[2])
    return result, count[0], touched


def two_tensors(result, case: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise ExerciseFailure(f"{case}: `same_draws()` should return two tensors (first, second), got "
                              f"{show(result)}.")
    for value, which in zip(result, ("first", "second")):
        if not isinstance(value, torch.Tensor):
            raise ExerciseFailure(f"{case}: return two tensors (first, second); the {which} is a "
                                  f"{type(value).__name__}.")
        if value.numel() != 3:
            raise ExerciseFailure(f"{case}: the {which} tensor holds {value.numel()} numbers; draw 3 each "
                                  "(torch.rand(3)).")
    return result[0].detach(), result[1].detach()


def check_same_draws(ns) -> None:
    draws = ns["same_draws"]
    case = "on the first call"
    result, count, touched = counted_call(draws, "same_draws", case)
    first, second = two_tensors(result, case)
    if first.is_floating_point() and not (torch.isfinite(first).all() and torch.isfinite(second).all()):
        raise ExerciseFailure("the draws hold NaN or inf: draw random numbers with torch.rand / torch.randn.")
    if not torch.equal(first, second):
        raise ExerciseFailure("the two draws differ: seed the generator (e.g. seed_everything(0)) "
                              "before *each* draw, not once before both.")
    if torch.all(first == first.flatten()[0]):
        raise ExerciseFailure("draw random numbers (torch.rand / torch.randn), not constants.")
    if count == 0 and not touched:
        raise ExerciseFailure("`same_draws()` drew no random number while it ran: the numbers were drawn once, "
                              "outside the function, and are handed back on every call. Inside the function: seed, "
                              "draw, seed again, draw again.")
    if count == 1 or first.data_ptr() == second.data_ptr():
        raise ExerciseFailure("your two tensors are equal only because one is a copy of the other (a single draw, "
                              f"{'copied' if count == 1 else 'returned twice'}), not because the generator was "
                              "seeded. Draw twice, seeding (seed_everything(0)) before each torch.rand call.")
    case = "on a second call, after the global random state moved on"
    result, again_count, touched = counted_call(draws, "same_draws", case)
    again, _ = two_tensors(result, case)
    if not torch.equal(again, first):
        raise ExerciseFailure("calling `same_draws()` twice gave different numbers: your two tensors are equal "
                              "only because one is a copy of the other, not because the generator was seeded. "
                              "Seed (seed_everything(0)) before each torch.rand call.")
    if again_count < count or (again_count == 0 and not touched):
        raise ExerciseFailure("on its second call `same_draws()` drew no new random numbers: it hands back numbers "
                              "drawn earlier (kept from the first call). Seed and draw on every call.")


q1 = Exercise(
    name="A batch of token ids",
    variables=("token_batch",),
    checker=check_token_batch,
    hints=("Which torch function draws random *integers* in a range? Mind whether its upper bound is included.",
           "Call it with low = 0, high = the vocabulary size (excluded), and size = (batch, seq) = (4, 10); its "
           "default dtype is already torch.long."),
    solution=solution_of("lesson00", "token_batch"),
)

q2 = Exercise(
    name="Where does a tensor live?",
    variables=("device_of",),
    checker=check_device_of,
    hints=("Every tensor has a `.device` attribute.",
           "Return that attribute as it is: it already is a torch.device, with the GPU's index (cuda:1 is not "
           "cuda:0). Do not build a device from a string or guess it from torch.cuda.is_available()."),
    solution=solution_of("lesson00", "device_of"),
)

q3 = Exercise(
    name="Reproducible randomness",
    variables=("same_draws",),
    checker=check_same_draws,
    hints=("A seed fixes what the *next* draws will be. What must happen right before each draw for two draws to "
           "repeat?",
           "Inside the function: seed with the course's seeding helper (or torch's own), draw 3 numbers; seed again "
           "with the same seed, draw 3 numbers again; return both. Every call must draw anew (no numbers kept from "
           "earlier, no copy of one draw)."),
    solution=solution_of("lesson00", "same_draws"),
)
