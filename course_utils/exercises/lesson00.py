"""Exercises of notebook 00 (setup): warm-ups that show how every exercise in the course works (q1–q3), then the
PyTorch that lessons 01–03 assume (q4–q6): broadcasting, view and transpose, nn.Module and its state_dict.

Each check tries the answer on more than one input where it can: ``device_of`` sees tensors on the CPU, on the
"meta" device and on a (simulated) second GPU; ``same_draws`` is called twice, with the global random state moved in
between, while the random calls it makes are counted. q4–q6 draw fresh sizes per check (no two equal, a single row,
batch 1, a single token, float64): ``pairwise_sq_distances`` is also run on large inputs while its tensor operations
are counted (a Python loop runs a few per row); ``to_rows``/``from_rows`` get tensors whose every entry differs, one of
them a transposed (non-contiguous) view; ``TinyMLP`` is built twice, its state_dict compared key by key with a saved
TinyMLP's, that state loaded, and outputs and gradients compared with ``linear2(relu(linear1(x)))``.
"""
from __future__ import annotations

import math
import random
import sys
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .asserts import (
    Case,
    Draw,
    OwnWork,
    as_tensor,
    backward,
    call_learner,
    check_function,
    close,
    compare_gradients,
    instantiate,
    learner_function,
    max_difference,
    show,
)
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


# ---------------------------------------------------------------------------- q4: every row against every row
FORBIDDEN_DISTANCES = {"torch.cdist": torch.cdist}


class CountedOps(TorchFunctionMode):
    """Counts the tensor operations (``a[i]``, ``-``, ``.sum()`` …) run while it is active: a Python loop over rows
    runs a few per row, a broadcast answer a handful in all."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def reference_distances(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(n, d)``, ``(m, d)`` → ``(n, m)``: entry ``[i, j]`` is ``‖a[i] − b[j]‖²``."""
    return (a[:, None, :] - b[None, :, :]).pow(2).sum(-1)


def distance_cases(draw: Draw) -> list[Case]:
    """Smallest first: one row in ``a``, one row in ``b``, one feature; then random sizes (no two equal), ``b``
    equal to ``a`` (zeros on the diagonal) and float64."""
    n, m, d = draw.distinct(3, 2, 9)
    cases = [Case(f"a of shape (1, {d}) (a single row) and b of shape ({m}, {d})",
                  (draw.randn(1, d), draw.randn(m, d))),
             Case(f"a of shape ({n}, {d}) and b of shape (1, {d}) (a single row)",
                  (draw.randn(n, d), draw.randn(1, d))),
             Case(f"a of shape ({n}, 1) and b of shape ({m}, 1) (one feature)", (draw.randn(n, 1), draw.randn(m, 1))),
             Case(f"a of shape ({n}, {d}) and b of shape ({m}, {d})", (draw.randn(n, d), draw.randn(m, d)))]
    x = draw.randn(m, d)
    cases.append(Case(f"b equal to a, both of shape ({m}, {d}) (the diagonal must be 0)", (x, x.clone())))
    n, m, d = draw.distinct(3, 2, 9)
    cases.append(Case(f"float64 a of shape ({n}, {d}) and b of shape ({m}, {d})",
                      (draw.randn(n, d).double(), draw.randn(m, d).double())))
    return cases


def broadcast_hint(error: BaseException) -> str | None:
    if "must match the size of tensor" in str(error):
        return ("a (n, d) and b (m, d) do not broadcast as they are: sizes are lined up from the right and each pair "
                "must be equal or 1. Give a an axis of size 1 for b's rows and b one for a's rows: (n, 1, d) and "
                "(1, m, d) broadcast to (n, m, d)")
    return None


def distance_mistake(case: Case, got: Any) -> str | None:
    a, b = case.args
    expected = reference_distances(a, b)
    n, m = expected.shape
    if not isinstance(got, torch.Tensor) or got.dtype != expected.dtype:
        return None
    diff = a[:, None, :] - b[None, :, :]
    squared = (a * a).sum(-1)[:, None] + (b * b).sum(-1)[None, :]
    known = (
        (expected.T, f"the result is (m, n) = {tuple(got.shape)}, expected (n, m) = ({n}, {m}): a's rows run down "
                     "the result (axis 0), b's rows across it (axis 1): a gets the new axis in the middle, b in front"),
        (expected.sqrt(), "these are the distances, not their squares: leave out the square root"),
        (diff.abs().sum(-1), "these are sums of absolute differences: square each difference, then sum"),
        (diff.sum(-1), "the differences were summed without being squared (positive and negative ones cancel): square "
                       "each difference, then sum over the features"),
        (diff.pow(2).mean(-1), "the squared differences were averaged over the features: sum them"),
        (a @ b.T, "these are dot products a[i]·b[j], not squared distances: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b"),
        (squared - a @ b.T, "the factor 2 is missing: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b"),
        (squared + 2 * a @ b.T, "the sign of the cross term is wrong: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b"),
    )
    for wrong, message in known:
        if got.shape == wrong.shape and close(got.detach(), wrong, atol=1e-3):
            return message
    if got.dim() == 1:
        return (f"got one value per row, shape {tuple(got.shape)}: row i of a was paired with row i of b only. Every "
                f"row of a must meet every row of b — give a an axis of size 1 for b's rows and b one for a's rows, so "
                f"the difference broadcasts to (n, m, d) = ({n}, {m}, {a.size(1)})")
    if got.dim() == 3:
        return (f"got shape {tuple(got.shape)}: the squared differences (n, m, d) still need to be summed over the "
                "features, the last axis")
    if got.dim() == 2 and got.shape != expected.shape and a.size(1) in got.shape:
        return (f"got shape {tuple(got.shape)}, expected (n, m) = ({n}, {m}): the sum ran over a row axis; sum the "
                "squared differences over the features (the last axis) only")
    return None


def check_pairwise_sq_distances(ns) -> None:
    function = learner_function(ns, "pairwise_sq_distances")
    check_function(function, reference_distances, distance_cases(Draw()), "pairwise_sq_distances",
                   diagnose=distance_mistake, error_hint=broadcast_hint, atol=1e-3)
    draw = Draw()
    n, m, d = draw.distinct(3, 16, 32)
    case = f"a of shape ({n}, {d}) and b of shape ({m}, {d})"
    guard = OwnWork(FORBIDDEN_DISTANCES)
    with CountedOps() as ops, guard:
        call_learner(function, "pairwise_sq_distances", case, draw.randn(n, d), draw.randn(m, d))
    if guard.used:
        raise ExerciseFailure(f"your `pairwise_sq_distances` calls {guard.used}, which computes the distances for you: "
                              "this exercise is about building them with broadcasting — write the subtraction "
                              "yourself. (Outside this exercise torch.cdist is a fine tool.)")
    if ops.count > min(n, m, d):
        raise ExerciseFailure(f"on {case}: your `pairwise_sq_distances` ran {ops.count} tensor operations — a "
                              "Python loop, a few operations per row (or per feature). The point is broadcasting: "
                              "a[:, None, :] is (n, 1, d), b[None, :, :] is (1, m, d), and one subtraction pairs "
                              "every row of a with every row of b. Write it without a loop.")


# ---------------------------------------------------------------------------- q5: view and transpose
def layout_tensor(draw: Draw, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Every entry different, so a value in the wrong place always shows."""
    return (torch.arange(math.prod(shape), dtype=dtype).view(shape) + draw.randn(*shape).to(dtype) * 0.01)


def reference_rows(x: torch.Tensor) -> torch.Tensor:
    """``(seq, batch, d)`` → ``(batch * seq, d)``: row ``b * seq + s`` holds ``x[s, b]``."""
    return x.transpose(0, 1).reshape(-1, x.size(-1))


def reference_from_rows(rows: torch.Tensor, batch: int) -> torch.Tensor:
    """``(batch * seq, d)`` → ``(seq, batch, d)``: the inverse of :func:`reference_rows`."""
    return rows.reshape(batch, -1, rows.size(-1)).transpose(0, 1)


def layout_sizes(draw: Draw) -> list[tuple[str, int, int, int]]:
    """``(what, seq, batch, d)``, smallest first: batch 1, a single token, then sizes with no two equal."""
    seq, batch, d = draw.distinct(3, 2, 9)
    other = draw.distinct(3, 2, 9)
    return [("batch 1", seq, 1, d), ("a single token (seq 1)", 1, batch, d), ("", seq, batch, d),
            ("", *other)]


def describe_layout(what: str, seq: int, batch: int, d: int, extra: str = "") -> str:
    return f"seq {seq}, batch {batch}, d {d}" + (f" ({what})" if what else "") + extra


def rows_cases(draw: Draw) -> list[Case]:
    cases = []
    for what, seq, batch, d in layout_sizes(draw):
        cases.append(Case("x of " + describe_layout(what, seq, batch, d), (layout_tensor(draw, (seq, batch, d)),)))
    seq, batch, d = draw.distinct(3, 2, 9)
    batch_first = layout_tensor(draw, (batch, seq, d))
    cases.append(Case("x of " + describe_layout("", seq, batch, d, ", a transposed view of a (batch, seq, d) tensor"),
                      (batch_first.transpose(0, 1),)))
    seq, batch, d = draw.distinct(3, 2, 9)
    cases.append(Case("x of " + describe_layout("float64", seq, batch, d),
                      (layout_tensor(draw, (seq, batch, d), torch.float64),)))
    return cases


def from_rows_cases(draw: Draw) -> list[Case]:
    cases = []
    for what, seq, batch, d in layout_sizes(draw):
        rows = reference_rows(layout_tensor(draw, (seq, batch, d)))
        cases.append(Case(f"rows of shape ({batch * seq}, {d}) and batch={batch} (seq {seq}"
                          + (f", {what})" if what else ")"), (rows, batch)))
    seq, batch, d = draw.distinct(3, 2, 9)
    rows = reference_rows(layout_tensor(draw, (seq, batch, d), torch.float64))
    cases.append(Case(f"float64 rows of shape ({batch * seq}, {d}) and batch={batch} (seq {seq})", (rows, batch)))
    return cases


def layout_hint(error: BaseException) -> str | None:
    message = str(error)
    if "view" in message and ("contiguous" in message or "stride" in message):
        return ("After .transpose the numbers still sit in memory in the old order (the tensor is not contiguous), so "
                ".view cannot regroup them: call .contiguous() before .view, or use .reshape (which copies when it "
                "must)")
    if "is invalid for input of size" in message:
        return "Take every size from the inputs (x.shape, rows.shape, batch) in a view/reshape, not fixed numbers"
    return None


def rows_mistake(case: Case, got: Any) -> str | None:
    (x,) = case.args
    seq, batch, d = x.shape
    expected = reference_rows(x)
    if not isinstance(got, torch.Tensor) or got.dtype != expected.dtype:
        return None
    if got.shape == expected.shape and torch.equal(got.detach(), x.reshape(-1, d)):
        return ("the tokens of different sentences interleave: row 0 is token 0 of sentence 0, row 1 token 0 of "
                "sentence 1 … A view (or reshape) only regroups the numbers in the order they sit, and x sits position "
                "by position. Bring the batch axis in front first (transpose(0, 1)), then flatten")
    if got.shape == (batch, seq, d) and torch.equal(got.detach(), x.transpose(0, 1)):
        return (f"you stopped at (batch, seq, d) = {(batch, seq, d)}: now flatten the first two axes into batch * seq "
                "rows")
    if got.shape != expected.shape:
        return (f"(seq, batch, d) = {tuple(x.shape)} should become (batch * seq, d) = {tuple(expected.shape)}, got "
                f"{tuple(got.shape)}: take every size from x.shape, and keep the features as the last axis")
    return "the shape is right but the values are not where they belong: row b * seq + s should hold x[s, b]"


def from_rows_mistake(case: Case, got: Any) -> str | None:
    rows, batch = case.args
    d = rows.size(-1)
    seq = rows.size(0) // batch
    expected = reference_from_rows(rows, batch)
    if not isinstance(got, torch.Tensor) or got.dtype != expected.dtype:
        return None
    if got.shape == expected.shape and torch.equal(got.detach(), rows.reshape(seq, batch, d)):
        return ("the values land in the wrong sentences: a view regroups the rows in the order they sit, and they sit "
                "sentence by sentence (all of sentence 0, then all of sentence 1 …), not position by position. View "
                "them as (batch, seq, d) — the order they are in — then swap the first two axes")
    if got.shape == (batch, seq, d) and torch.equal(got.detach(), rows.reshape(batch, seq, d)):
        return f"you stopped at (batch, seq, d) = {(batch, seq, d)}: swap the first two axes to (seq, batch, d)"
    if got.dim() == 3 and got.shape != expected.shape and sorted(got.shape) == sorted(expected.shape):
        return (f"the axes are in the wrong order: got {tuple(got.shape)}, expected (seq, batch, d) = "
                f"{tuple(expected.shape)}. View the rows as (batch, seq, d), then swap axes 0 and 1 only")
    if got.shape != expected.shape:
        return (f"rows of shape {tuple(rows.shape)} with batch={batch} should become (seq, batch, d) = "
                f"{tuple(expected.shape)}, got {tuple(got.shape)}: seq is the number of rows divided by batch")
    return "the shape is right but the values are not where they belong: [s, b] should hold rows[b * seq + s]"


def check_rows(ns) -> None:
    check_function(learner_function(ns, "to_rows"), reference_rows, rows_cases(Draw()), "to_rows",
                   diagnose=rows_mistake, error_hint=layout_hint)
    check_function(learner_function(ns, "from_rows"), reference_from_rows, from_rows_cases(Draw()), "from_rows",
                   diagnose=from_rows_mistake, error_hint=layout_hint)


# ---------------------------------------------------------------------------- q6: nn.Module and state_dict
MLP_LAYOUT = "self.linear1 = nn.Linear(d_in, d_hidden), self.linear2 = nn.Linear(d_hidden, d_out)"
ACTIVATIONS = {"no activation at all": lambda h: h, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
               "GELU": F.gelu, "SiLU": F.silu, "leaky ReLU": F.leaky_relu}


def mlp_state(draw: Draw, d_in: int, d_hidden: int, d_out: int) -> dict[str, torch.Tensor]:
    """Reference weights, drawn afresh: what a saved TinyMLP's state_dict holds."""
    return {"linear1.weight": draw.randn(d_hidden, d_in, scale=0.5), "linear1.bias": draw.randn(d_hidden, scale=0.5),
            "linear2.weight": draw.randn(d_out, d_hidden, scale=0.5), "linear2.bias": draw.randn(d_out, scale=0.5)}


def reference_mlp(state: dict[str, torch.Tensor], x: torch.Tensor, activation=F.relu) -> torch.Tensor:
    """``linear2(relu(linear1(x)))`` from the weights in ``state``."""
    hidden = activation(F.linear(x, state["linear1.weight"], state["linear1.bias"]))
    return F.linear(hidden, state["linear2.weight"], state["linear2.bias"])


def construction_hint(error: BaseException) -> str | None:
    if "before Module.__init__() call" in str(error):
        return "Call super().__init__() first in __init__, before assigning any layer"
    return None


def unregistered_layers(model: nn.Module) -> list[str]:
    """Attributes that hold layers in a plain list, tuple or dict (which nn.Module does not look into)."""
    found = []
    for attribute, value in vars(model).items():
        if attribute.startswith("_"):  # nn.Module's own registries (_modules, _parameters …)
            continue
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        if any(isinstance(item, nn.Module) for item in items):
            found.append(attribute)
    return found


def check_registration(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """The learner's state_dict holds exactly the reference's keys and shapes, as registered parameters."""
    got = model.state_dict()
    shapes = ", ".join(f"`{key}` {tuple(value.shape)}" for key, value in state.items())
    plain = unregistered_layers(model)
    if plain and set(state) - set(got):
        kind = type(vars(model)[plain[0]]).__name__
        raise ExerciseFailure(f"your `TinyMLP` keeps its layers in a plain Python {kind} (`self.{plain[0]}`): those "
                              "layers are not registered — nn.Module only finds a layer assigned as an attribute "
                              "(self.linear1 = nn.Linear(...)) or held in an nn.ModuleList / nn.ModuleDict. So "
                              "model.parameters() misses them (the optimizer would never train them) and the "
                              f"state_dict has {', '.join(f'`{k}`' for k in got) or 'no entries'} instead of "
                              f"{shapes}. Write {MLP_LAYOUT}.")
    missing = [key for key in state if key not in got]
    extra = [key for key in got if key not in state]
    if missing:
        found = ", ".join(f"`{key}`" for key in got) or "nothing"
        raise ExerciseFailure(f"your `TinyMLP`'s state_dict has no {', '.join(f'`{k}`' for k in missing)} (it has "
                              f"{found}). The keys are the attribute names of the layers, so a saved model loads "
                              f"into yours only if the names match: {MLP_LAYOUT} (bias included).")
    if extra:
        raise ExerciseFailure(f"your `TinyMLP`'s state_dict has entries a TinyMLP does not: "
                              f"{', '.join(f'`{k}` {tuple(got[k].shape)}' for k in extra)}; load_state_dict refuses "
                              f"them. Expected exactly {shapes}: {MLP_LAYOUT}, nothing else that holds weights.")
    for key, value in state.items():
        if tuple(got[key].shape) != tuple(value.shape):
            raise ExerciseFailure(f"your `TinyMLP.{key}` has shape {tuple(got[key].shape)}, expected "
                                  f"{tuple(value.shape)}: {MLP_LAYOUT}, the sizes in the order TinyMLP(d_in, "
                                  "d_hidden, d_out) gets them (nn.Linear(in, out).weight is stored as (out, in)).")
        if got[key].dtype != value.dtype:
            raise ExerciseFailure(f"your `TinyMLP.{key}` is {got[key].dtype}, expected {value.dtype}: create the "
                                  "layers in the default float32 (no .double(), no dtype=torch.float64).")
    parameters = dict(model.named_parameters())
    buffers = [key for key in state if key not in parameters]
    if buffers:
        raise ExerciseFailure(f"`{buffers[0]}` is in your `TinyMLP`'s state_dict but is not a parameter (a buffer "
                              "or a plain tensor): the optimizer never sees it. Let nn.Linear create the weights.")


def mlp_mistake(model: nn.Module, state: dict, x: torch.Tensor, got: torch.Tensor) -> str:
    if close(got, reference_mlp(state, x, ACTIVATIONS["no activation at all"])):
        return ("the output matches linear2(linear1(x)) with no activation in between: two linear layers in a row are "
                "just one linear map. Put a ReLU between them")
    for name, activation in ACTIVATIONS.items():
        if close(got, reference_mlp(state, x, activation)):
            return (f"the output matches linear2(linear1(x)) with {name} in between: the hidden layer must go through "
                    "ReLU (F.relu, torch.relu or nn.ReLU())")
    if close(got, reference_mlp(state, F.relu(x))):
        return "the input went through ReLU too: only the hidden layer, linear1's output, does"
    if close(got, F.relu(reference_mlp(state, x))):
        return "the output went through ReLU too: only the hidden layer does; return linear2's output as it is"
    model.eval()
    evaluated = call_learner(model, "TinyMLP", "the same input in eval mode", x)
    model.train()
    if isinstance(evaluated, torch.Tensor) and close(evaluated.detach(), reference_mlp(state, x)):
        return ("in eval mode your output is right, in training mode it is not (dropout?): the task has no dropout, "
                "the output must not depend on the mode")
    again = call_learner(model, "TinyMLP", "a second call on the same input", x)
    if isinstance(again, torch.Tensor) and again.shape == got.shape and not close(again.detach(), got):
        return ("calling it twice on the same input gives different outputs: forward builds new layers (or draws "
                "random numbers) on every call. Create the layers once, in __init__, and only use them in forward")
    return (f"your `TinyMLP` differs from linear2(relu(linear1(x))) (by up to "
            f"{max_difference(got, reference_mlp(state, x)):.3g}) with the loaded weights")


def mlp_inputs(draw: Draw, d_in: int) -> list[tuple[str, torch.Tensor]]:
    batch, seq = draw.distinct(2, 3, 9, avoid=(d_in,))
    return [(f"x of shape ({batch}, {d_in})", draw.randn(batch, d_in)),
            (f"x of shape (1, {d_in}) (batch 1)", draw.randn(1, d_in)),
            (f"x of shape ({batch}, {seq}, {d_in}) (a batch of sequences)", draw.randn(batch, seq, d_in))]


def check_tiny_mlp(ns) -> None:
    cls = ns["TinyMLP"]
    if not isinstance(cls, type):
        raise ExerciseFailure(f"`TinyMLP` should be a class (`class TinyMLP(nn.Module): ...`), got "
                              f"{type(cls).__name__}.")
    if not issubclass(cls, nn.Module):
        raise ExerciseFailure("`TinyMLP` should subclass nn.Module (`class TinyMLP(nn.Module):`) and call "
                              "super().__init__() first: only then are its layers registered, and it has "
                              "parameters(), state_dict() and load_state_dict().")
    if all("forward" not in vars(klass) for klass in cls.__mro__ if klass not in (nn.Module, object)):
        raise ExerciseFailure("`TinyMLP` has no method named `forward`: calling model(x) runs model.forward(x), "
                              "so the method must be spelled exactly `def forward(self, x):`.")
    draw = Draw()
    sizes = [draw.distinct(3, 2, 9), draw.distinct(3, 2, 9)]
    sizes[1][1] = 1  # a single hidden unit
    for d_in, d_hidden, d_out in sizes:
        config = f"TinyMLP(d_in={d_in}, d_hidden={d_hidden}, d_out={d_out})"
        model = call_learner(instantiate, "TinyMLP", config, cls, "TinyMLP", "(d_in, d_hidden, d_out)", d_in,
                             d_hidden, d_out, error_hint=construction_hint)
        state = mlp_state(draw, d_in, d_hidden, d_out)
        check_registration(model, state)
        model.load_state_dict(state)
        for what, x in mlp_inputs(draw, d_in):
            case = f"{config} with loaded weights, {what}"
            leaf = x.clone().requires_grad_()
            got = call_learner(model, "TinyMLP", case, leaf)
            expected_shape = (*x.shape[:-1], d_out)
            got_d = as_tensor(got, "TinyMLP.forward", expected_shape, f"(..., d_out) for x of shape {tuple(x.shape)}")
            if got_d.dtype != torch.float32:
                raise ExerciseFailure(f"on {case}: the output is {got_d.dtype}, expected torch.float32: keep the "
                                      "dtype of the input.")
            if not close(got_d, reference_mlp(state, x)):
                raise ExerciseFailure(f"on {case}: {mlp_mistake(model, state, x, got_d)}.")
            probe = draw.randn(*expected_shape)
            weights = {key: value.clone().requires_grad_() for key, value in state.items()}
            reference_input = x.clone().requires_grad_()
            (reference_mlp(weights, reference_input) * probe).sum().backward()
            model.zero_grad()
            backward(got * probe, "TinyMLP", f"on {case}")
            parameters = dict(model.named_parameters())
            compare_gradients({**{f"parameter `{k}`": w.grad for k, w in weights.items()},
                               "input `x`": reference_input.grad},
                              {**{f"parameter `{k}`": parameters[k].grad for k in weights}, "input `x`": leaf.grad},
                              "TinyMLP", f"on {case}")


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

q4 = Exercise(
    name="Every row against every row (broadcasting)",
    variables=("pairwise_sq_distances",),
    checker=check_pairwise_sq_distances,
    hints=("Broadcasting lines two shapes up from the right and stretches every axis of size 1 to the other's size. "
           "Which shapes must a and b take so that a single subtraction pairs every row of a with every row of b?",
           "1. Give a a new axis of size 1 in the middle → (n, 1, d), and b one in front → (1, m, d) (index with "
           "None, or unsqueeze). 2. Subtract: the result broadcasts to (n, m, d). 3. Square every entry and sum over "
           "the last axis, the features → (n, m). No Python loop, and no torch.cdist (refused here)."),
    solution=solution_of("lesson00", "pairwise_sq_distances"),
)

q5 = Exercise(
    name="Sentence by sentence (view and transpose)",
    variables=("to_rows", "from_rows"),
    checker=check_rows,
    hints=("A view only regroups the numbers in the order they sit; a transpose swaps which axis comes first. In "
           "which order must the rows come out — and in which order does x hold its numbers?",
           "to_rows: 1. swap the seq and batch axes → (batch, seq, d). 2. Flatten the first two axes into one: the "
           "swapped tensor is not contiguous, so make it contiguous before a view (or use reshape). from_rows: 1. seq "
           "is the number of rows divided by batch. 2. Regroup the rows as (batch, seq, d), the order they are in. "
           "3. Swap the first two axes → (seq, batch, d). Every size comes from the inputs."),
    solution=solution_of("lesson00", "to_rows", "from_rows"),
)

q6 = Exercise(
    name="A module and its state_dict",
    variables=("TinyMLP",),
    checker=check_tiny_mlp,
    hints=("An nn.Module finds its layers through its attributes: a layer assigned to self in __init__ (after the "
           "parent's __init__ has run) is registered, and its attribute name becomes its state_dict key.",
           "class TinyMLP, a subclass of nn.Module, whose __init__ takes d_in, d_hidden, d_out: 1. run the parent's "
           "__init__ first. 2. Attribute linear1: a Linear layer from d_in to d_hidden features; attribute linear2: "
           "from d_hidden to d_out (both with a bias, the default). forward(self, x): linear1, then ReLU, then "
           "linear2. No plain Python list of layers: a list hides them from parameters() and state_dict()."),
    solution=solution_of("lesson00", "TinyMLP"),
)
