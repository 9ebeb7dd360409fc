"""Lesson 04 exercises: each usual mistake fails with the message that names it (solutions: test_exercises_all.py)."""
import pytest

from course_utils.exercises import lesson04
from exercise_checks import assert_rejected

PRELUDE = "import torch\n"


COUNT_MISTAKES = {
    "seed estimate, weights only": ("return 4 * d * d + 2 * d * f", "only the weight matrices"),
    "no LayerNorms": ("return 4 * (d * d + d) + d * f + f + f * d + d", "two LayerNorms are missing"),
    "one LayerNorm": ("return 4 * (d * d + d) + d * f + f + f * d + d + 2 * d", "one LayerNorm is missing"),
    "no biases": ("return 4 * d * d + 2 * d * f + 4 * d", "biases of the six linear layers"),
    "d_ff assumed 4·d": ("return 4 * (d * d + d) + 8 * d * d + 4 * d + d + 4 * d", "off by"),
    "float": ("return float(4 * (d * d + d) + d * f + f + f * d + d + 4 * d)", "return an int"),
}


@pytest.mark.parametrize("mistake", list(COUNT_MISTAKES))
def test_count_mistakes_are_named(mistake):
    body, message = COUNT_MISTAKES[mistake]
    assert_rejected(lesson04.q1, f"def encoder_layer_parameters(d, f):\n    {body}\n", message, PRELUDE)


BLOCK_MISTAKES = {
    "Post-LN": ("return norm(x + sublayer(x))", "that is Post-LN"),
    "no residual": ("return sublayer(norm(x))", "residual is missing"),
    "normalised output": ("return x + norm(sublayer(x))", "normalised the sublayer's output"),
    "normalised residual": ("return norm(x) + sublayer(norm(x))", "raw x"),
    "wrong shape": ("return (x + sublayer(norm(x))).mean(1)", "keep the shape"),
    "other": ("return x + 2 * sublayer(norm(x))", "differs"),
}


@pytest.mark.parametrize("mistake", list(BLOCK_MISTAKES))
def test_block_mistakes_are_named(mistake):
    body, message = BLOCK_MISTAKES[mistake]
    assert_rejected(lesson04.q2, f"def pre_ln_sublayer(x, sublayer, norm):\n    {body}\n", message, PRELUDE)


NORM_MISTAKES = {
    "no eps": ("(x - x.mean(-1, keepdim=True)) / x.var(-1, unbiased=False, keepdim=True).sqrt()", "eps"),
    "unbiased": ("(x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)", "unbiased"),
    "batch axis": ("(x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, unbiased=False, keepdim=True) + 1e-5)",
                   "BatchNorm's axis"),
    "sequence axis": ("(x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)",
                      "over the sequence"),
    "centred only": ("x - x.mean(-1, keepdim=True)", "did not divide"),
    "no keepdim": ("(x - x.mean(-1)) / torch.sqrt(x.var(-1, unbiased=False) + 1e-5)", "raised"),
}


@pytest.mark.parametrize("mistake", list(NORM_MISTAKES))
def test_layer_norm_mistakes_are_named(mistake):
    body, message = NORM_MISTAKES[mistake]
    assert_rejected(lesson04.q3, f"def layer_norm(x):\n    return {body}\n", message, PRELUDE)
