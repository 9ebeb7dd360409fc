"""Exercises of notebook 02 (positional encoding): the frequencies, the sin/cos table, the shift-as-rotation."""
from __future__ import annotations

import math

import torch

from ..positional import sinusoidal_table
from . import asserts
from .asserts import as_tensor
from .core import Exercise, ExerciseFailure

D_MODELS = (4, 16, 64)


def reference_table(max_len: int, d_model: int) -> torch.Tensor:
    """The package's table (``course_utils.positional.sinusoidal_table``) in float64: the reference answer."""
    return sinusoidal_table(max_len, d_model).double()


def reference_frequencies(d_model: int) -> torch.Tensor:
    """ω_i, read off the package's table: row 1 holds sin(1 · ω_i) in its even columns (ω_i ≤ 1, so asin is exact)."""
    return torch.asin(reference_table(2, d_model)[1, 0::2])


def frequencies_with(d_model: int, base: float = 10000.0, exponent: str = "2i") -> torch.Tensor:
    """ω_i as a typical mistake computes it: another ``base``, or ``exponent="i"`` (i / d_model for 2i / d_model)."""
    steps = torch.arange(0, d_model, 2) if exponent == "2i" else torch.arange(d_model // 2)
    return 1.0 / base ** (steps.double() / d_model)


def table_from(frequencies: torch.Tensor, max_len: int) -> torch.Tensor:
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * frequencies
    table = torch.zeros(max_len, 2 * len(frequencies), dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table


def reference_shift_matrix(k: int, d_model: int) -> torch.Tensor:
    """``(d_model, d_model)`` float64 M with ``PE[pos + k] = M @ PE[pos]`` for every ``pos``."""
    matrix = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, omega in enumerate(reference_frequencies(d_model).tolist()):
        c, s = math.cos(k * omega), math.sin(k * omega)
        matrix[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    return matrix


def as_float64(value, name: str) -> torch.Tensor:
    return as_tensor(value, name).double()


def close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-4) -> bool:
    return asserts.close(a, b, atol=tol, rtol=tol)


def check_pair_frequencies(ns) -> None:
    for d_model in D_MODELS:
        got = as_float64(ns["pair_frequencies"](d_model), "pair_frequencies")
        expected = reference_frequencies(d_model)
        if got.shape == (d_model,):
            raise ExerciseFailure(f"for d_model={d_model} you returned {d_model} values; there is one frequency "
                                  f"per (sin, cos) pair, so d_model // 2 = {d_model // 2}: use "
                                  "torch.arange(0, d_model, 2).")
        if got.shape != expected.shape:
            raise ExerciseFailure(f"for d_model={d_model} expected shape ({d_model // 2},), got {tuple(got.shape)}.")
        if close(got, torch.ones_like(expected)):
            raise ExerciseFailure("every frequency is 1: the exponent became 0. Integer division? Make the arange "
                                  "float (dtype=torch.float32) before dividing by d_model.")
        if close(got, 1.0 / expected):
            raise ExerciseFailure("your frequencies grow from 1 to 10000; they must fall from 1 towards 1/10000. "
                                  "Put the minus sign in the exponent: exp(-2i · ln(10000) / d_model).")
        half_exponent = 1.0 / 10000.0 ** (torch.arange(d_model // 2, dtype=torch.float64) / d_model)
        if close(got, half_exponent):
            raise ExerciseFailure("the exponent is i / d_model; the formula has 2i / d_model. Take i from "
                                  "torch.arange(0, d_model, 2) (which already counts 0, 2, 4, …).")
        if close(got, expected, 1e-5):
            continue
        if bool((got > 0).all()) and float(got[1]) < 1:
            base = float(got[1]) ** (-d_model / 2)  # ω_1 = base^(-2/d_model)
            if abs(base - 10000) > 1 and close(got, frequencies_with(d_model, base), 1e-5):
                raise ExerciseFailure(f"your frequencies follow the base {base:.4g}; the formula's base is 10000: "
                                      "ω_i = 1 / 10000^(2i / d_model) = exp(-2i · ln(10000) / d_model).")
        if not close(got, expected, 1e-5):
            raise ExerciseFailure(f"for d_model={d_model} expected {expected[:3].tolist()}…, got "
                                  f"{got[:3].tolist()}…: ω_i = exp(-2i · ln(10000) / d_model).")


def check_sinusoidal_pe(ns) -> None:
    max_len, d_model = 12, 8
    got = as_float64(ns["sinusoidal_pe"](max_len, d_model), "sinusoidal_pe")
    expected = reference_table(max_len, d_model)
    if got.shape != expected.shape:
        raise ExerciseFailure(f"sinusoidal_pe({max_len}, {d_model}) should have shape (max_len, d_model) = "
                              f"{tuple(expected.shape)}, got {tuple(got.shape)}.")
    if close(got, expected):
        return
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * reference_frequencies(d_model)
    if close(got, torch.cat([angles.sin(), angles.cos()], dim=1)):
        raise ExerciseFailure("you put all the sines in the first half and all the cosines in the second half. "
                              "The paper interleaves them: sin in even columns (table[:, 0::2]), cos in odd "
                              "columns (table[:, 1::2]), so each (sin, cos) pair sits side by side.")
    swapped = torch.zeros_like(expected)
    swapped[:, 0::2], swapped[:, 1::2] = angles.cos(), angles.sin()
    if close(got, swapped):
        raise ExerciseFailure("sin and cos are swapped: even columns get sin, odd columns get cos "
                              "(row 0 must read 0, 1, 0, 1, …).")
    # angles up to ~10⁴ rad: float32 keeps only ~3 decimals of them, hence the looser tolerance
    if close(got, table_from(1.0 / frequencies_with(d_model), max_len), tol=1e-2):
        raise ExerciseFailure("your frequencies grow with the pair index (the exponent's sign is flipped): pair i "
                              "must turn *slower* as i grows, ω_i = exp(-2i · ln(10000) / d_model) — mind the "
                              "minus sign.")
    if close(got, table_from(frequencies_with(d_model, base=1000.0), max_len)):
        raise ExerciseFailure("your table uses the base 1000; the formula's base is 10000: "
                              "ω_i = 1 / 10000^(2i / d_model).")
    if close(got, table_from(frequencies_with(d_model, exponent="i"), max_len)):
        raise ExerciseFailure("the exponent is i / d_model; the formula has 2i / d_model (pair i uses "
                              "10000^(2i/d_model)). Take 2i from torch.arange(0, d_model, 2).")
    if close(got, reference_table(max_len + 1, d_model)[1:]):
        raise ExerciseFailure("your positions start at 1; they start at 0 (torch.arange(max_len)), so row 0 "
                              "is 0, 1, 0, 1, ….")
    row = int((got - expected).abs().amax(dim=1).argmax())
    raise ExerciseFailure(f"row {row} (position {row}) differs from the formula: expected "
                          f"{[round(v, 4) for v in expected[row, :4].tolist()]}…, got "
                          f"{[round(v, 4) for v in got[row, :4].tolist()]}…: PE[pos, 2i] = sin(pos · ω_i), "
                          "PE[pos, 2i+1] = cos(pos · ω_i), ω_i = exp(-2i · ln(10000) / d_model).")


def check_shift_matrix(ns) -> None:
    d_model = 8
    table = reference_table(40, d_model)
    for k in (1, 3, 10):
        got = as_float64(ns["shift_matrix"](k, d_model), "shift_matrix")
        if got.shape != (d_model, d_model):
            raise ExerciseFailure(f"shift_matrix({k}, {d_model}) should be a ({d_model}, {d_model}) matrix, "
                                  f"got {tuple(got.shape)}.")
        expected = reference_shift_matrix(k, d_model)
        if close(got, expected):
            continue
        if close(got, expected.T):
            raise ExerciseFailure(f"your matrix moves positions backwards (M @ PE[pos] = PE[pos - {k}]): the sign "
                                  "of the sine terms is flipped. From sin(a+b) = sin a cos b + cos a sin b and "
                                  "cos(a+b) = cos a cos b − sin a sin b, each block is [[cos, sin], [−sin, cos]].")
        if close(got, reference_shift_matrix(1, d_model)) and k != 1:
            raise ExerciseFailure(f"shift_matrix({k}, …) equals the shift by 1: the angle of pair i is k · ω_i.")
        if (got.abs() > 1e-9).logical_and(~torch.block_diag(*[torch.ones(2, 2)] * (d_model // 2)).bool()).any():
            raise ExerciseFailure("entries outside the 2×2 diagonal blocks must be 0: each (sin, cos) pair "
                                  "rotates on its own, by its own frequency.")
        wrong_exponent = torch.block_diag(*[torch.tensor([[math.cos(k * w), math.sin(k * w)],
                                                          [-math.sin(k * w), math.cos(k * w)]], dtype=torch.float64)
                                            for w in frequencies_with(d_model, exponent="i").tolist()])
        if close(got, wrong_exponent):
            raise ExerciseFailure("the blocks rotate by the wrong angles: the exponent is i / d_model, the formula "
                                  "has 2i / d_model. Use two_i in range(0, d_model, 2) in 10000 ** (two_i / d_model).")
        moved = table[:-k] @ got.T
        error = float((moved - table[k:]).abs().max())
        raise ExerciseFailure(f"M @ PE[pos] should equal PE[pos + {k}], but they differ by up to {error:.3f}: "
                              "block i is [[cos(k·ω_i), sin(k·ω_i)], [−sin(k·ω_i), cos(k·ω_i)]].")


q1 = Exercise(
    name="One frequency per (sin, cos) pair",
    variables=("pair_frequencies",),
    checker=check_pair_frequencies,
    hint="exp(-(2i) · ln(10000) / d_model) with 2i = torch.arange(0, d_model, 2) as floats; "
         "the result has d_model // 2 entries, from 1 down towards 1/10000.",
    solution=("import math\nimport torch\n\n"
              "def pair_frequencies(d_model):\n"
              "    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)\n"
              "    return torch.exp(-two_i * math.log(10000.0) / d_model)\n"),
)

q2 = Exercise(
    name="The sinusoidal table",
    variables=("sinusoidal_pe",),
    checker=check_sinusoidal_pe,
    hint="angles = positions (max_len, 1) × frequencies (d_model/2,) by broadcasting; then "
         "table[:, 0::2] = sin(angles) and table[:, 1::2] = cos(angles).",
    solution=("import math\nimport torch\n\n"
              "def sinusoidal_pe(max_len, d_model):\n"
              "    position = torch.arange(max_len, dtype=torch.float32)[:, None]              # (max_len, 1)\n"
              "    frequency = torch.exp(-torch.arange(0, d_model, 2, dtype=torch.float32)\n"
              "                          * math.log(10000.0) / d_model)                      # (d_model/2,)\n"
              "    table = torch.zeros(max_len, d_model)\n"
              "    table[:, 0::2] = torch.sin(position * frequency)\n"
              "    table[:, 1::2] = torch.cos(position * frequency)\n"
              "    return table\n"),
)

q3 = Exercise(
    name="A shift of k positions is a rotation",
    variables=("shift_matrix",),
    checker=check_shift_matrix,
    hint="Pair i holds (sin(pos·ω_i), cos(pos·ω_i)). Expand sin(pos·ω + k·ω) and cos(pos·ω + k·ω) with the "
         "angle-addition formulas; the coefficients of sin(pos·ω) and cos(pos·ω) form the 2×2 block. "
         "Put the blocks on the diagonal (torch.block_diag).",
    solution=("import math\nimport torch\n\n"
              "def shift_matrix(k, d_model):\n"
              "    blocks = []\n"
              "    for two_i in range(0, d_model, 2):\n"
              "        angle = k / 10000 ** (two_i / d_model)\n"
              "        c, s = math.cos(angle), math.sin(angle)\n"
              "        blocks.append(torch.tensor([[c, s], [-s, c]]))\n"
              "    return torch.block_diag(*blocks)\n"),
)
