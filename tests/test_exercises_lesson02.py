"""Lesson 02 exercises: each usual mistake fails with the message that names it (solutions: test_exercises_all.py)."""
import pytest

from course_utils.exercises import lesson02
from exercise_checks import assert_rejected

PRELUDE = "import math\nimport torch\n"


FREQUENCY_MISTAKES = {
    "one per dimension": ("def pair_frequencies(d):\n"
                          "    return torch.exp(-torch.arange(d).float() * math.log(1e4) / d)",
                          "d_model // 2"),
    "integer division": ("def pair_frequencies(d):\n    return 1 / 10000 ** (torch.arange(0, d, 2) // d)",
                         "exponent became 0"),
    "missing minus": ("def pair_frequencies(d):\n"
                      "    return torch.exp(torch.arange(0, d, 2).float() * math.log(1e4) / d)",
                      "minus sign"),
    "i instead of 2i": ("def pair_frequencies(d):\n    return 1 / 10000 ** (torch.arange(d // 2).float() / d)",
                        "2i / d_model"),
    "wrong base": ("def pair_frequencies(d):\n    return 1 / 1000 ** (torch.arange(0, d, 2).float() / d)",
                   "exp(-2i"),
    "a list": ("def pair_frequencies(d):\n    return [1.0] * (d // 2)", "torch.Tensor"),
}


@pytest.mark.parametrize("mistake", list(FREQUENCY_MISTAKES))
def test_frequency_mistakes_are_named(mistake):
    code, message = FREQUENCY_MISTAKES[mistake]
    assert_rejected(lesson02.q1, code, message, PRELUDE)


TABLE_BODY = ("    pos = torch.arange({start}, max_len + {start}, dtype=torch.float32)[:, None]\n"
              "    angle = pos * torch.exp(-torch.arange(0, d, 2).float() * math.log(10000.0) / d)\n")
TABLE_MISTAKES = {
    "halves instead of interleaved": (
        "def sinusoidal_pe(max_len, d):\n" + TABLE_BODY.format(start=0)
        + "    return torch.cat([angle.sin(), angle.cos()], dim=1)\n", "interleaves"),
    "sin and cos swapped": (
        "def sinusoidal_pe(max_len, d):\n" + TABLE_BODY.format(start=0)
        + "    t = torch.zeros(max_len, d)\n    t[:, 0::2] = angle.cos()\n    t[:, 1::2] = angle.sin()\n    return t\n",
        "swapped"),
    "positions from 1": (
        "def sinusoidal_pe(max_len, d):\n" + TABLE_BODY.format(start=1)
        + "    t = torch.zeros(max_len, d)\n    t[:, 0::2] = angle.sin()\n    t[:, 1::2] = angle.cos()\n    return t\n",
        "start at 1"),
    "transposed table": (
        "def sinusoidal_pe(max_len, d):\n" + TABLE_BODY.format(start=0)
        + "    t = torch.zeros(max_len, d)\n    t[:, 0::2] = angle.sin()\n    t[:, 1::2] = angle.cos()\n"
        + "    return t.T\n",
        "(max_len, d_model)"),
    "i instead of 2i in the exponent": (
        "def sinusoidal_pe(max_len, d):\n    pos = torch.arange(max_len).float()[:, None]\n"
        "    angle = pos / 10000 ** (torch.arange(d // 2).float() / d)\n"
        "    t = torch.zeros(max_len, d)\n    t[:, 0::2] = angle.sin()\n    t[:, 1::2] = angle.cos()\n    return t\n",
        "2i / d_model"),
    "frequencies rising": (
        "def sinusoidal_pe(max_len, d):\n    pos = torch.arange(max_len).float()[:, None]\n"
        "    angle = pos * torch.exp(torch.arange(0, d, 2).float() * math.log(10000.0) / d)\n"
        "    t = torch.zeros(max_len, d)\n    t[:, 0::2] = angle.sin()\n    t[:, 1::2] = angle.cos()\n    return t\n",
        "differs from the formula"),
}


@pytest.mark.parametrize("mistake", list(TABLE_MISTAKES))
def test_table_mistakes_are_named(mistake):
    code, message = TABLE_MISTAKES[mistake]
    assert_rejected(lesson02.q2, code, message, PRELUDE)


ROTATION_BODY = ("    blocks = []\n    for two_i in range(0, d, 2):\n"
                 "        a = {k} / 10000 ** (two_i / d)\n        c, s = math.cos(a), math.sin(a)\n"
                 "        blocks.append(torch.tensor({block}))\n")
ROTATION_MISTAKES = {
    "rotates backwards": ("def shift_matrix(k, d):\n" + ROTATION_BODY.format(k="k", block="[[c, -s], [s, c]]")
                          + "    return torch.block_diag(*blocks)\n", "backwards"),
    "angle ignores k": ("def shift_matrix(k, d):\n" + ROTATION_BODY.format(k="1", block="[[c, s], [-s, c]]")
                        + "    return torch.block_diag(*blocks)\n", "k · ω_i"),
    "one big dense rotation": ("def shift_matrix(k, d):\n" + ROTATION_BODY.format(k="k", block="[[c, s], [-s, c]]")
                               + "    return torch.block_diag(*blocks) + 0.01\n", "outside the 2×2"),
    "wrong size": ("def shift_matrix(k, d):\n    return torch.eye(d // 2)\n", "matrix"),
    "identity": ("def shift_matrix(k, d):\n    return torch.eye(d)\n", "should equal PE[pos + 1]"),
}


@pytest.mark.parametrize("mistake", list(ROTATION_MISTAKES))
def test_rotation_mistakes_are_named(mistake):
    code, message = ROTATION_MISTAKES[mistake]
    assert_rejected(lesson02.q3, code, message, PRELUDE)


def test_solutions_agree_with_the_package():
    import torch

    from course_utils.positional import sinusoidal_table

    scope = lesson02.q2.run_solution()
    torch.testing.assert_close(scope["sinusoidal_pe"](30, 16), sinusoidal_table(30, 16))
