"""Lesson 03 exercises: each usual mistake fails with the message that names it (solutions: test_exercises_all.py)."""
import pytest

from course_utils.exercises import lesson03
from exercise_checks import assert_rejected

PRELUDE = "import math\nimport torch\n"


WEIGHT_MISTAKES = {
    "missing sqrt(d_k)": "def attention_weights(q, k):\n    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)\n",
    "divided by d_k": ("def attention_weights(q, k):\n"
                       "    return torch.softmax(q @ k.transpose(-2, -1) / q.size(-1), -1)\n"),
    "softmax over queries": ("def attention_weights(q, k):\n"
                             "    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-2)\n"),
    "no softmax": "def attention_weights(q, k):\n    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n",
    "no transpose": "def attention_weights(q, k):\n    return torch.softmax(q @ k / math.sqrt(q.size(-1)), dim=-1)\n",
    "key @ query": ("def attention_weights(q, k):\n"
                    "    return torch.softmax(k @ q.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)\n"),
}
WEIGHT_MESSAGES = {"missing sqrt(d_k)": "√d_k scale is missing", "divided by d_k": "square root",
                   "softmax over queries": "wrong axis", "no softmax": "torch.softmax", "no transpose": "transpose",
                   "key @ query": "(batch, q_len, k_len)"}


@pytest.mark.parametrize("mistake", list(WEIGHT_MISTAKES))
def test_weight_mistakes_are_named(mistake):
    assert_rejected(lesson03.q1, WEIGHT_MISTAKES[mistake], WEIGHT_MESSAGES[mistake], PRELUDE)


SCORES = "    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
MASK_MISTAKES = {
    "minus infinity gives NaN": (
        "def masked_weights(q, k, mask):\n" + SCORES
        + "    return torch.softmax(s.masked_fill(~mask, float('-inf')), dim=-1)\n", "NaN"),
    "seed-style mask == 0 with -inf": (
        "def masked_weights(q, k, mask):\n" + SCORES
        + "    return torch.softmax(s.masked_fill(mask == 0, float('-inf')), dim=-1)\n", "NaN"),
    "convention inverted": (
        "def masked_weights(q, k, mask):\n" + SCORES
        + "    w = torch.softmax(s.masked_fill(mask, torch.finfo(s.dtype).min), dim=-1)\n"
        + "    return w.masked_fill(mask, 0.0)\n", "inverted"),
    "blocked score set to 0": (
        "def masked_weights(q, k, mask):\n" + SCORES
        + "    return torch.softmax(s.masked_fill(~mask, 0.0), dim=-1)\n", "does not block"),
    "fully masked row left uniform": (
        "def masked_weights(q, k, mask):\n" + SCORES
        + "    return torch.softmax(s.masked_fill(~mask, torch.finfo(s.dtype).min), dim=-1)\n", "fully masked"),
    "missing scale": (
        "def masked_weights(q, k, mask):\n    s = q @ k.transpose(-2, -1)\n"
        + "    w = torch.softmax(s.masked_fill(~mask, torch.finfo(s.dtype).min), dim=-1)\n"
        + "    return w.masked_fill(~mask, 0.0)\n", "√d_k"),
    "mask ignored": (
        "def masked_weights(q, k, mask):\n" + SCORES + "    return torch.softmax(s, dim=-1)\n", "blocked keys"),
}


@pytest.mark.parametrize("mistake", list(MASK_MISTAKES))
def test_mask_mistakes_are_named(mistake):
    code, message = MASK_MISTAKES[mistake]
    assert_rejected(lesson03.q2, code, message, PRELUDE)


SPLIT_MISTAKES = {
    "view straight to heads": ("def split_heads(x, h):\n    b, s, d = x.shape\n    return x.view(b, h, s, d // h)\n",
                               "scrambled"),
    "strided heads": ("def split_heads(x, h):\n    b, s, d = x.shape\n"
                      "    return x.view(b, s, d // h, h).permute(0, 3, 1, 2)\n", "stride"),
    "forgot transpose": ("def split_heads(x, h):\n    b, s, d = x.shape\n    return x.view(b, s, h, d // h)\n",
                         ".transpose(1, 2) to (batch, heads, seq, d_head)"),
}


@pytest.mark.parametrize("mistake", list(SPLIT_MISTAKES))
def test_split_mistakes_are_named(mistake):
    code, message = SPLIT_MISTAKES[mistake]
    assert_rejected(lesson03.q3, code, message, PRELUDE)


MERGE_MISTAKES = {
    "view without contiguous": ("def merge_heads(x):\n    b, h, s, d = x.shape\n"
                                "    return x.transpose(1, 2).view(b, s, h * d)\n", ".contiguous()"),
    "no transpose back": ("def merge_heads(x):\n    b, h, s, d = x.shape\n    return x.reshape(b, s, h * d)\n",
                          "mixed up"),
    "wrong shape": ("def merge_heads(x):\n    return x.transpose(1, 2)\n", "(batch, seq, d_model)"),
}


@pytest.mark.parametrize("mistake", list(MERGE_MISTAKES))
def test_merge_mistakes_are_named(mistake):
    code, message = MERGE_MISTAKES[mistake]
    assert_rejected(lesson03.q4, code, message, PRELUDE)


def test_masked_solution_matches_the_package():
    import torch

    from course_utils.attention import scaled_dot_product_attention

    query, key = lesson03.example_query_key()
    mask = lesson03.example_mask()
    weights = lesson03.q2.run_solution()["masked_weights"](query, key, mask)
    _, expected = scaled_dot_product_attention(query, key, key, mask)
    torch.testing.assert_close(weights, expected)
    assert not torch.isnan(weights).any() and weights[1, 0].abs().sum() == 0
