"""Lesson 07 exercises: each usual mistake fails with the message that names it (solutions: test_exercises_all.py)."""
import pytest

from course_utils.exercises import lesson07
from exercise_checks import assert_rejected

PRELUDE = "import torch\n"


SHIFT_MISTAKES = {
    "no shift (seed 001)": ("def shift_targets(t):\n    return t, t\n", "no shift"),
    "wrong direction": ("def shift_targets(t):\n    return t[:, 1:], t[:, :-1]\n", "wrong way"),
    "batch axis": ("def shift_targets(t):\n    return t[:-1], t[1:]\n", "sequence axis"),
    "labels not shifted": ("def shift_targets(t):\n    return t[:, :-1], t[:, :-1]\n", "tgt[:, 1:]"),
    "not a pair": ("def shift_targets(t):\n    return t[:, :-1]\n", "pair"),
}


@pytest.mark.parametrize("mistake", SHIFT_MISTAKES)
def test_shift_mistakes(mistake):
    code, message = SHIFT_MISTAKES[mistake]
    assert_rejected(lesson07.q1, code, message, PRELUDE)


MASK_MISTAKES = {
    "inverted": ("def cross_attention_mask(s, n):\n    return (s == 0)[:, None, None, :]\n", "inverted"),
    "causal": ("def cross_attention_mask(s, n):\n"
               "    return (s != 0)[:, None, None, :] & torch.ones(n, s.size(1), dtype=torch.bool).tril()\n",
               "not causal"),
    "no mask (seed 001)": ("def cross_attention_mask(s, n):\n    return torch.ones(s.shape[0], 1, 1, s.shape[1], "
                           "dtype=torch.bool)\n", "nothing is masked"),
    "2-D": ("def cross_attention_mask(s, n):\n    return s != 0\n", "does not broadcast"),
    "ints": ("def cross_attention_mask(s, n):\n    return (s != 0).long()[:, None, None, :]\n", "bool"),
}


@pytest.mark.parametrize("mistake", MASK_MISTAKES)
def test_mask_mistakes(mistake):
    code, message = MASK_MISTAKES[mistake]
    assert_rejected(lesson07.q2, code, message, PRELUDE)


CACHE_MISTAKES = {
    "replace": ("def append_to_cache(c, n):\n    return n\n", "only the new step"),
    "heads axis": ("def append_to_cache(c, n):\n    return torch.cat([c, n], dim=1)\n", "wrong axis"),
    "stacked": ("def append_to_cache(c, n):\n    return torch.cat([c, n.expand(-1, -1, 3, -1)], dim=1)\n",
                "wrong axis"),
    "new first": ("def append_to_cache(c, n):\n    return torch.cat([n, c], dim=2)\n", "went first"),
}


@pytest.mark.parametrize("mistake", CACHE_MISTAKES)
def test_cache_mistakes(mistake):
    code, message = CACHE_MISTAKES[mistake]
    assert_rejected(lesson07.q3, code, message, PRELUDE)
