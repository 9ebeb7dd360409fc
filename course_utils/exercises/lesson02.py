"""Exercises of notebook 02 (positional encoding): predict-then-measure without positions, the other layout, the
shift as a rotation matrix.

Each exercise declares its typical mistakes once, in a table beside it (``*_MISTAKES``: a name, how to recognise the
mistake in an answer — usually a variant of the package's reference — and the message naming the bug); the checker
names a mistake by walking that table. Checks draw fresh inputs (``COURSE_CHECK_SEED`` fixes them) and compare with
the package: ``course_utils.positional.sinusoidal_table`` and ``course_utils.data.order.train_order_model``.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..positional import sinusoidal_table
from .asserts import Case, Draw, call_learner, check_function, learner_function
from .core import Exercise, ExerciseFailure, solution_of


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer: ``matches(case, got)`` recognises it, ``message`` (text, or a function of the case and
    the answer) names the bug."""
    name: str
    matches: Callable[[Case, Any], bool]
    message: str | Callable[[Case, Any], str]

    def says(self, case: Case, got: Any) -> str:
        return self.message(case, got) if callable(self.message) else self.message


def diagnosis(table: tuple[Mistake, ...]) -> Callable[[Case, Any], str | None]:
    """The ``diagnose`` of :func:`~.asserts.check_function` that names the first mistake of ``table`` an answer
    matches."""
    def diagnose(case: Case, got: Any) -> str | None:
        for mistake in table:
            try:
                if mistake.matches(case, got):
                    return mistake.says(case, got)
            except (RuntimeError, TypeError, ValueError, IndexError):
                continue
        return None
    return diagnose


def reference_table(max_len: int, d_model: int) -> torch.Tensor:
    """The package's table (``course_utils.positional.sinusoidal_table``) in float64."""
    return sinusoidal_table(max_len, d_model).double()


def reference_frequencies(d_model: int) -> torch.Tensor:
    """ω_i, read off the package's table: row 1 holds sin(1 · ω_i) in its even columns (ω_i ≤ 1, so asin is exact)."""
    return torch.asin(reference_table(2, d_model)[1, 0::2])


def frequencies_with(d_model: int, base: float = 10000.0, exponent: str = "2i") -> torch.Tensor:
    """ω_i as a typical mistake computes it: another ``base``, or ``exponent="i"`` (i / d_model for 2i / d_model)."""
    steps = torch.arange(0, d_model, 2) if exponent == "2i" else torch.arange(d_model // 2)
    return 1.0 / base ** (steps.double() / d_model)


def rotation_blocks(angles: list[float]) -> torch.Tensor:
    """The block-diagonal matrix of 2×2 blocks [[cos a, sin a], [−sin a, cos a]], in float64."""
    return torch.block_diag(*[torch.tensor([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]],
                                           dtype=torch.float64) for a in angles])


def reference_shift_matrix(k: int, d_model: int) -> torch.Tensor:
    """``(d_model, d_model)`` float64 M with ``PE[pos + k] = M @ PE[pos]`` for every ``pos``."""
    return rotation_blocks([k * omega for omega in reference_frequencies(d_model).tolist()])


def close(a: torch.Tensor | None, b: torch.Tensor, tol: float = 1e-4) -> bool:
    return a is not None and a.shape == b.shape and bool(torch.allclose(a, b, atol=tol, rtol=tol))


def as_float64(value) -> torch.Tensor | None:
    """The learner's tensor as float64 for a diagnosis (``None`` when it is not a float tensor)."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().cpu().double()
    return None


# ---------------------------------------------------------------------------- q1: predict, then measure
def fraction(value: Any) -> float | None:
    """A real number (Python or a one-element tensor) as a float; ``None`` for anything else."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex():
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


NO_POSITIONS_MISTAKES = (
    Mistake("a percentage", lambda case, got: got == 50,
            "return the accuracy as a fraction (0.5 for 50 %), as `train_order_model` gives it"),
    Mistake("positions kept", lambda case, got: 0.9 < got <= 1,
            lambda case, got: f"{case.description} returned {got:.1%}: that model still sees positions. Build it "
                              "with no positional module — `OrderModel(None)`, i.e. `make_positions=lambda: None`"),
    Mistake("not the whole test set", lambda case, got: 0.3 < got < 0.7,
            lambda case, got: f"{case.description} returned {got}: measure on all 1000 test sequences, as "
                              "`train_order_model` does (they come in mirrored pairs)"),
)


def check_no_positions(ns) -> None:
    prediction = fraction(ns["my_prediction"])
    if prediction is None or not 0 <= prediction <= 100:
        raise ExerciseFailure("`my_prediction` should be a number: the test accuracy you expect, as a fraction "
                              "(0.8 for 80 %), written down before you measure.")
    if prediction > 1:
        raise ExerciseFailure(f"`my_prediction` = {prediction}: write it as a fraction ({prediction / 100:g} for "
                              f"{prediction:g} %).")
    function = learner_function(ns, "accuracy_without_positions")
    seed = Draw().integer(3, 99)
    case = Case(f"accuracy_without_positions({seed})", (seed,))
    got = fraction(call_learner(function, "accuracy_without_positions", case.description, seed))
    if got is None:
        raise ExerciseFailure("`accuracy_without_positions(seed)` should return a number, the test accuracy as a "
                              "fraction (train_order_model returns it second).")
    if got != 0.5:
        raise ExerciseFailure(diagnosis(NO_POSITIONS_MISTAKES)(case, got)
                              or f"{case.description} returned {got}; train `OrderModel(None)` from that seed "
                                 "with `train_order_model` and return its test accuracy")


# ---------------------------------------------------------------------------- q2: the other layout
def reference_to_halves(d_model: int) -> torch.Tensor:
    """Column indices ``idx`` with ``sinusoidal_table(n, d_model)[:, idx]`` = sines | cosines, read off the package's
    table (its sines sit where row 0 holds 0): int64 ``(d_model,)``."""
    row_0 = sinusoidal_table(1, d_model)[0]
    return torch.cat([torch.nonzero(row_0 == 0).flatten(), torch.nonzero(row_0 == 1).flatten()])


def section_3_permutation(d_model: int) -> torch.Tensor:
    """The lesson's permutation, the other way: ``halves[:, p]`` = the interleaved table."""
    half = d_model // 2
    return torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).flatten()


def same_indices(got: Any, expected: torch.Tensor) -> bool:
    """Whether ``got`` is an int64 tensor holding the indices ``expected`` (other dtypes: the contract's message)."""
    return (isinstance(got, torch.Tensor) and got.dtype == torch.int64 and got.shape == expected.shape
            and bool((got == expected).all()))


def halves_cases(draw: Draw) -> list[Case]:
    sizes = [2, draw.choice([6, 10, 14]), draw.choice(range(16, 65, 2)), draw.choice(range(128, 513, 2))]
    what = ["one pair", "", "", "a large model"]
    return [Case(f"to_halves({d})" + (f" ({w})" if w else ""), (d,)) for d, w in zip(sizes, what)]


HALVES_MISTAKES = (
    Mistake("a boolean mask", lambda case, got: isinstance(got, torch.Tensor) and got.dtype == torch.bool,
            "return column indices (int64), not a boolean mask: a mask keeps the order of the columns"),
    Mistake("section 3's permutation", lambda case, got: same_indices(got, section_3_permutation(*case.args)),
            "that is section 3's permutation, which builds the interleaved table from the halves. You need the way "
            "back: the halves start with every sine (the even columns of the course's table), then every cosine"),
    Mistake("cosines first", lambda case, got: same_indices(got, reference_to_halves(*case.args).roll(
        case.args[0] // 2)), "your halves start with the cosines; tensor2tensor puts the sines first"),
    Mistake("the identity", lambda case, got: same_indices(got, torch.arange(case.args[0])),
            "these indices leave the table as it is (interleaved); reorder the columns: sines first, then cosines"),
    Mistake("only the sines", lambda case, got: same_indices(got, torch.arange(0, case.args[0], 2)),
            lambda case, got: f"you return only the {case.args[0] // 2} sine columns; the halves layout keeps all "
                              f"{case.args[0]}: every sine, then every cosine"),
)


def check_to_halves(ns) -> None:
    check_function(learner_function(ns, "to_halves"), reference_to_halves, halves_cases(Draw()), "to_halves",
                   diagnose=diagnosis(HALVES_MISTAKES), atol=0, rtol=0)


# ---------------------------------------------------------------------------- q3: a shift is a rotation
def reference_shift(k: int, d_model: int) -> torch.Tensor:
    """The rotation of the package's table, float32 ``(d_model, d_model)``: the reference answer."""
    return reference_shift_matrix(k, d_model).float()


def shift_cases(draw: Draw) -> list[Case]:
    small_d = draw.choice([6, 10, 14])
    k_small = draw.choice([k for k in range(2, 6) if k != small_d])
    mid_d = draw.choice(range(16, 41, 2))
    k_large = draw.choice([k for k in range(20, 61) if k != mid_d])
    big_d = draw.choice(range(64, 129, 2))
    k_mid = draw.integer(3, 15)
    sizes = [(1, 4, "one step"), (1, 2, "one pair"), (k_small, small_d, "d_model not a multiple of 4"),
             (k_large, mid_d, "a long shift"), (k_mid, big_d, "a large model")]
    return [Case(f"shift_matrix({k}, {d}) ({what})", (k, d)) for k, d, what in sizes]


def off_blocks(got: torch.Tensor | None) -> bool:
    """Whether ``got`` has entries outside the 2×2 diagonal blocks."""
    if got is None:
        return False
    blocks = torch.block_diag(*[torch.ones(2, 2)] * (got.shape[0] // 2)).bool()
    return bool((got.abs() > 1e-6).logical_and(~blocks).any())


def shift_error(case: Case, got: torch.Tensor) -> str:
    k, d_model = case.args
    table = reference_table(k + 40, d_model)
    error = float((table[:-k] @ got.T - table[k:]).abs().max())
    return (f"M @ PE[pos] should equal PE[pos + {k}], but they differ by up to {error:.3f}: block i is "
            "[[cos(k·ω_i), sin(k·ω_i)], [−sin(k·ω_i), cos(k·ω_i)]]")


def square_float(case: Case, got: Any) -> torch.Tensor | None:
    got = as_float64(got)
    return got if got is not None and got.shape == (case.args[1], case.args[1]) else None


SHIFT_MISTAKES = (
    Mistake("wrong size", lambda case, got: as_float64(got) is not None and square_float(case, got) is None,
            lambda case, got: f"shift_matrix({case.args[0]}, {case.args[1]}) should be a ({case.args[1]}, "
                              f"{case.args[1]}) matrix, got {tuple(got.shape)}"),
    Mistake("rotates backwards", lambda case, got: close(square_float(case, got), reference_shift_matrix(*case.args).T),
            lambda case, got: f"your matrix moves positions backwards (M @ PE[pos] = PE[pos - {case.args[0]}]): the "
                              "sign of the sine terms is flipped. From sin(a+b) = sin a cos b + cos a sin b and "
                              "cos(a+b) = cos a cos b − sin a sin b, each block is [[cos, sin], [−sin, cos]]"),
    Mistake("angle ignores k", lambda case, got: case.args[0] != 1 and close(square_float(case, got),
                                                                              reference_shift_matrix(1, case.args[1])),
            lambda case, got: f"shift_matrix({case.args[0]}, …) equals the shift by 1: the angle of pair i is k · ω_i"),
    Mistake("entries outside the blocks", lambda case, got: off_blocks(square_float(case, got)),
            "entries outside the 2×2 diagonal blocks must be 0: each (sin, cos) pair rotates on its own, by its own "
            "frequency"),
    Mistake("i instead of 2i", lambda case, got: case.args[1] > 2 and close(
        square_float(case, got), rotation_blocks([case.args[0] * w for w in
                                                  frequencies_with(case.args[1], exponent="i").tolist()])),
        "the blocks rotate by the wrong angles: the exponent is i / d_model, the formula has 2i / d_model (count the "
        "even dimensions 0, 2, 4, …)"),
    Mistake("another matrix", lambda case, got: square_float(case, got) is not None and not close(
        square_float(case, got), reference_shift_matrix(*case.args)),
            lambda case, got: shift_error(case, square_float(case, got))),
)


def check_shift_matrix(ns) -> None:
    check_function(ns["shift_matrix"], reference_shift, shift_cases(Draw()), "shift_matrix",
                   diagnose=diagnosis(SHIFT_MISTAKES), atol=1e-4, rtol=1e-4)


q1 = Exercise(
    name="Predict, then measure: no positions",
    variables=("my_prediction", "accuracy_without_positions"),
    checker=check_no_positions,
    hints=("What does the model without positions see of a sequence and of its mirror? What are their labels?",
           "Write your prediction first. Then: a function of `seed` that calls `train_order_model` with a "
           "`make_positions` that builds nothing, and returns the accuracy it measured (its second result)."),
    solution=solution_of("lesson02", "my_prediction", "accuracy_without_positions"),
    success=("Correct. Exactly 0.5, for every seed — not about 0.5. Without positions the model gives a sequence and "
             "its mirror (the same tokens, the opposite label) the same scores, so it is right on exactly one of each "
             "pair, however long it trains. Next, predict before you try: keep the sinusoidal table but take the ReLU "
             "out of `per_token`."),
)

q2 = Exercise(
    name="The other layout",
    variables=("to_halves",),
    checker=check_to_halves,
    hints=("Which columns of the course's table hold the sines, and which the cosines? The halves layout lists "
           "the first group, then the second, each in its own order.",
           "The even column numbers 0, 2, …, d_model − 2, followed by the odd ones 1, 3, …, d_model − 1, as one "
           "int64 tensor of length d_model."),
    solution=solution_of("lesson02", "to_halves"),
)

q3 = Exercise(
    name="A shift of k positions is a rotation",
    variables=("shift_matrix",),
    checker=check_shift_matrix,
    hints=("Pair i holds (sin(pos·ω_i), cos(pos·ω_i)). Expand sin(pos·ω + k·ω) and cos(pos·ω + k·ω) with the "
           "angle-addition formulas; the coefficients of sin(pos·ω) and cos(pos·ω) form the 2×2 block.",
           "For each even dimension 2i: the angle is k · ω_i with ω_i = 1 / 10000^(2i / d_model); its block is "
           "[[cos, sin], [−sin, cos]] of that angle. Place the blocks along the diagonal (torch has a function "
           "for a block-diagonal matrix), zeros elsewhere; the result is float32 (d_model, d_model)."),
    solution=solution_of("lesson02", "shift_matrix"),
)
