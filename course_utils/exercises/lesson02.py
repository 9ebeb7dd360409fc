"""Exercises of notebook 02 (positional encoding): the frequencies, the sin/cos table, the shift-as-rotation.

Every check draws fresh sizes (``COURSE_CHECK_SEED`` fixes them) and compares the answer with the package's
``course_utils.positional.sinusoidal_table`` on each, smallest first: one pair (d_model = 2), d_model not a multiple
of 4, an odd number of positions, max_len smaller and larger than d_model, a large table. The answer must be a
float32 tensor of the right shape.
"""
from __future__ import annotations

import math

import torch

from ..positional import SinusoidalPositionalEncoding, sinusoidal_table
from .asserts import Case, Draw, check_function
from .core import Exercise, solution_of


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


def table_from(frequencies: torch.Tensor, max_len: int, start: int = 0) -> torch.Tensor:
    angles = torch.arange(start, start + max_len, dtype=torch.float64)[:, None] * frequencies
    table = torch.zeros(max_len, 2 * len(frequencies), dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table


def rotation_blocks(angles: list[float]) -> torch.Tensor:
    """The block-diagonal matrix of 2×2 blocks [[cos a, sin a], [−sin a, cos a]], in float64."""
    return torch.block_diag(*[torch.tensor([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]],
                                           dtype=torch.float64) for a in angles])


def reference_shift_matrix(k: int, d_model: int) -> torch.Tensor:
    """``(d_model, d_model)`` float64 M with ``PE[pos + k] = M @ PE[pos]`` for every ``pos``."""
    return rotation_blocks([k * omega for omega in reference_frequencies(d_model).tolist()])


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-4) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=tol, rtol=tol))


def as_float64(value) -> torch.Tensor | None:
    """The learner's tensor as float64 for a diagnosis (``None`` when it is not a float tensor)."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().cpu().double()
    return None


def fitted_base(omega_1: float, d_model: int) -> float | None:
    """The base b with ω_1 = b^(-2/d_model) (``None`` when ω_1 says nothing)."""
    if not 0 < omega_1 < 1:
        return None
    return omega_1 ** (-d_model / 2)


def wrong_base_or_size(base: float, d_model: int) -> str:
    """What frequencies of the form base^(-2i/d_model) with the wrong ``base`` most likely come from: a size written
    as a number (10000^(-2i/D) with a fixed D), ln swapped for log10 (base e⁴), or another base."""
    if any(abs(base - 10.0 ** n) < 1e-3 * base for n in (1, 2, 3, 5, 6)):
        return f"your frequencies follow the base {base:.4g}; the formula's base is 10000"
    size = d_model * math.log(10000.0) / math.log(base) if base > 1 else 0.0
    if abs(size - round(size)) < 1e-3 and round(size) in (8, 16, 32, 64, 128, 256, 512, 768, 1024, 2048):
        return (f"your frequencies divide by {round(size)} where d_model = {d_model} belongs: do not hard-code the "
                "model size, use the d_model argument")
    if abs(base - math.exp(4.0)) < 1e-3 * base:
        return ("your frequencies use log10(10000) = 4 where the natural logarithm ln(10000) ≈ 9.21 belongs "
                "(math.log, not math.log10)")
    return f"your frequencies follow the base {base:.4g}; the formula's base is 10000"


TABLE_FORBIDDEN = {"the package's course_utils.positional.sinusoidal_table": sinusoidal_table,
                   "the package's SinusoidalPositionalEncoding": SinusoidalPositionalEncoding}


# ---------------------------------------------------------------------------- q1: the frequencies
def reference_pair_frequencies(d_model: int) -> torch.Tensor:
    """ω_i of the package's table, float32 ``(d_model // 2,)``: the reference answer."""
    return reference_frequencies(d_model).float()


def frequency_cases(draw: Draw) -> list[Case]:
    sizes = [2, draw.choice(range(6, 31, 4)), draw.choice(range(32, 129, 2)), draw.choice(range(256, 1025, 2))]
    what = ["one (sin, cos) pair", "not a multiple of 4", "", "a large model"]
    return [Case(f"d_model={d}" + (f" ({w})" if w else ""), (d,)) for d, w in zip(sizes, what)]


def frequency_mistake(case: Case, got) -> str | None:
    (d_model,) = case.args
    got = as_float64(got)
    if got is None:
        return None
    expected = reference_frequencies(d_model)
    if got.shape == (d_model,):
        return (f"you returned {d_model} values; there is one frequency per (sin, cos) pair, so d_model // 2 = "
                f"{d_model // 2}: take the even dimensions 0, 2, 4, …")
    if got.shape != expected.shape or close(got, expected, 1e-5):
        return None  # the shape or dtype is what differs: the contract's own message says it
    if d_model > 2 and close(got, torch.ones_like(expected)):
        return ("every frequency is 1: the exponent became 0. Integer division? Make the exponents floats "
                "before dividing by d_model")
    if d_model > 2 and close(got, 1.0 / expected):
        return ("your frequencies grow from 1 to 10000; they must fall from 1 towards 1/10000. Put the minus sign "
                "in the exponent: exp(-2i · ln(10000) / d_model)")
    if d_model > 2 and close(got, frequencies_with(d_model, exponent="i")):
        return ("the exponent is i / d_model; the formula has 2i / d_model. Count the even dimensions "
                "0, 2, 4, … (not the pair index 0, 1, 2, …)")
    base = fitted_base(float(got[1]), d_model) if d_model > 2 else None
    if base is not None and abs(base - 10000) > 1 and close(got, frequencies_with(d_model, base), 1e-5):
        return wrong_base_or_size(base, d_model) + (": ω_i = 1 / 10000^(2i / d_model) = exp(-2i · ln(10000) / "
                                                    "d_model)")
    return (f"expected {[round(v, 6) for v in expected[:3].tolist()]}…, got "
            f"{[round(v, 6) for v in got[:3].tolist()]}…: ω_i = exp(-2i · ln(10000) / d_model) for the even "
            "dimensions 2i = 0, 2, 4, …")


def check_pair_frequencies(ns) -> None:
    check_function(ns["pair_frequencies"], reference_pair_frequencies, frequency_cases(Draw()), "pair_frequencies",
                   forbidden=TABLE_FORBIDDEN, diagnose=frequency_mistake, atol=1e-8, rtol=1e-4)


# ---------------------------------------------------------------------------- q2: the table
def reference_sinusoidal_pe(max_len: int, d_model: int) -> torch.Tensor:
    """The package's ``sinusoidal_table``: the reference answer."""
    return sinusoidal_table(max_len, d_model)


def table_cases(draw: Draw) -> list[Case]:
    odd_len, small_d = draw.choice(range(5, 14, 2)), draw.choice([6, 10, 14])
    short_len, wide_d = draw.integer(3, 9), draw.choice(range(16, 41, 2))
    long_len, d_model = draw.choice(range(151, 302, 2)), draw.choice(range(64, 161, 2))
    sizes = [(1, 2, "a single position, one pair"), (12, 8, ""), (odd_len, small_d, "an odd number of positions"),
             (short_len, wide_d, "fewer positions than dimensions"), (long_len, d_model, "a large table")]
    return [Case(f"sinusoidal_pe({n}, {d})" + (f" ({what})" if what else ""), (n, d)) for n, d, what in sizes]


def table_mistake(case: Case, got) -> str | None:
    max_len, d_model = case.args
    expected = reference_table(max_len, d_model)
    got = as_float64(got)
    if got is None:
        return None
    if got.shape == (d_model, max_len) and got.shape != expected.shape:
        return (f"your table has shape {tuple(got.shape)} = (d_model, max_len); it should be (max_len, d_model) "
                f"= {tuple(expected.shape)}: one row per position")
    if got.shape != expected.shape:
        return (f"sinusoidal_pe({max_len}, {d_model}) should have shape (max_len, d_model) = "
                f"{tuple(expected.shape)}, got {tuple(got.shape)}")
    tol = 1e-5 + max_len * 2.5e-7  # float32 angles up to max_len rad carry rounding of that order
    if close(got, expected, tol):
        return None  # the dtype is what differs: the contract's own message says it
    frequencies = reference_frequencies(d_model)
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * frequencies
    if close(got, torch.cat([angles.sin(), angles.cos()], dim=1), tol):
        return ("you put all the sines in the first half and all the cosines in the second half. The paper "
                "interleaves them: sin in the even columns, cos in the odd columns, so each (sin, cos) pair sits "
                "side by side")
    swapped = torch.zeros_like(expected)
    swapped[:, 0::2], swapped[:, 1::2] = angles.cos(), angles.sin()
    if close(got, swapped, tol):
        return "sin and cos are swapped: even columns get sin, odd columns get cos (row 0 must read 0, 1, 0, 1, …)"
    if close(got, table_from(frequencies, max_len, start=1), tol):
        return "your positions start at 1; they start at 0, so row 0 is 0, 1, 0, 1, …"
    # angles up to ~10⁴ · max_len rad: float32 keeps only ~3 decimals of them, hence the looser tolerance
    if d_model > 2 and close(got, table_from(1.0 / frequencies, max_len), 1e-2):
        return ("your frequencies grow with the pair index (the exponent's sign is flipped): pair i must turn "
                "*slower* as i grows, ω_i = exp(-2i · ln(10000) / d_model) — mind the minus sign")
    if d_model > 2 and close(got, table_from(frequencies_with(d_model, exponent="i"), max_len), tol):
        return ("the exponent is i / d_model; the formula has 2i / d_model (pair i uses 10000^(2i/d_model)): "
                "count the even dimensions 0, 2, 4, …")
    if max_len > 1 and d_model > 2:
        omega_1 = math.asin(max(-1.0, min(1.0, float(got[1, 2]))))
        base = fitted_base(omega_1, d_model)
        if base is not None and abs(base - 10000) > 1 and close(got, table_from(frequencies_with(d_model, base),
                                                                                 max_len), tol):
            return wrong_base_or_size(base, d_model).replace("your frequencies", "the frequencies of your table") + (
                ": ω_i = 1 / 10000^(2i / d_model)")
    own = 1.0 / 10000.0 ** (torch.arange(d_model, dtype=torch.float64) / d_model)
    own_angles = torch.arange(max_len, dtype=torch.float64)[:, None] * own
    columns = torch.where(torch.arange(d_model) % 2 == 0, own_angles.sin(), own_angles.cos())
    if d_model > 2 and max_len > 1 and close(got, columns, tol):
        return ("each column uses its own exponent (column / d_model), so the cos of a pair turns at another "
                "frequency than its sin: both columns 2i and 2i+1 share one frequency, ω_i = 1 / 10000^(2i / d_model)")
    row = int((got - expected).abs().amax(dim=1).argmax())
    return (f"row {row} (position {row}) differs from the formula: expected "
            f"{[round(v, 4) for v in expected[row, :4].tolist()]}…, got {[round(v, 4) for v in got[row, :4].tolist()]}…"
            ": PE[pos, 2i] = sin(pos · ω_i), PE[pos, 2i+1] = cos(pos · ω_i), ω_i = exp(-2i · ln(10000) / d_model)")


def check_sinusoidal_pe(ns) -> None:
    function = ns["sinusoidal_pe"]
    for case in table_cases(Draw()):
        max_len = case.args[0]
        check_function(function, reference_sinusoidal_pe, [case], "sinusoidal_pe", forbidden=TABLE_FORBIDDEN,
                       diagnose=table_mistake, atol=1e-5 + max_len * 2.5e-7, rtol=0.0)


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


def shift_mistake(case: Case, got) -> str | None:
    k, d_model = case.args
    got = as_float64(got)
    if got is None:
        return None
    if got.shape != (d_model, d_model):
        return f"shift_matrix({k}, {d_model}) should be a ({d_model}, {d_model}) matrix, got {tuple(got.shape)}"
    expected = reference_shift_matrix(k, d_model)
    if close(got, expected):
        return None  # the dtype is what differs: the contract's own message says it
    if close(got, expected.T):
        return (f"your matrix moves positions backwards (M @ PE[pos] = PE[pos - {k}]): the sign of the sine terms "
                "is flipped. From sin(a+b) = sin a cos b + cos a sin b and cos(a+b) = cos a cos b − sin a sin b, "
                "each block is [[cos, sin], [−sin, cos]]")
    if k != 1 and close(got, reference_shift_matrix(1, d_model)):
        return f"shift_matrix({k}, …) equals the shift by 1: the angle of pair i is k · ω_i"
    blocks = torch.block_diag(*[torch.ones(2, 2)] * (d_model // 2)).bool()
    if (got.abs() > 1e-6).logical_and(~blocks).any():
        return ("entries outside the 2×2 diagonal blocks must be 0: each (sin, cos) pair rotates on its own, by "
                "its own frequency")
    if d_model > 2 and close(got, rotation_blocks([k * w for w in frequencies_with(d_model, exponent="i").tolist()])):
        return ("the blocks rotate by the wrong angles: the exponent is i / d_model, the formula has 2i / d_model "
                "(count the even dimensions 0, 2, 4, …)")
    table = reference_table(k + 40, d_model)
    moved = table[:-k] @ got.T
    error = float((moved - table[k:]).abs().max())
    return (f"M @ PE[pos] should equal PE[pos + {k}], but they differ by up to {error:.3f}: block i is "
            "[[cos(k·ω_i), sin(k·ω_i)], [−sin(k·ω_i), cos(k·ω_i)]]")


def check_shift_matrix(ns) -> None:
    check_function(ns["shift_matrix"], reference_shift, shift_cases(Draw()), "shift_matrix", diagnose=shift_mistake,
                   atol=1e-4, rtol=1e-4)


q1 = Exercise(
    name="One frequency per (sin, cos) pair",
    variables=("pair_frequencies",),
    checker=check_pair_frequencies,
    hints=("Write 1 / 10000^(2i / d_model) as an exponential of a logarithm. How many pairs does d_model hold, and "
           "which dimensions start them?",
           "Take the even dimensions 0, 2, 4, … below d_model as a float32 tensor (d_model // 2 values); multiply "
           "them by −ln(10000) / d_model; take the exponential. The values fall from 1 towards 1/10000."),
    solution=solution_of("lesson02", "pair_frequencies"),
)

q2 = Exercise(
    name="The sinusoidal table",
    variables=("sinusoidal_pe",),
    checker=check_sinusoidal_pe,
    hints=("Every entry is sin or cos of (position × frequency of its pair): build all the angles at once by "
           "broadcasting a column of positions against a row of frequencies.",
           "positions 0 … max_len − 1 as a float32 column (max_len, 1); frequencies of the even dimensions as in "
           "exercise 1, a row (d_model/2,); angles = their product (max_len, d_model/2); a float32 table of zeros "
           "(max_len, d_model); even columns ← sin(angles), odd columns ← cos(angles)."),
    solution=solution_of("lesson02", "sinusoidal_pe"),
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
