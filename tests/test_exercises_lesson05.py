"""Lesson 05 exercises: each usual mistake fails with the message that names it (solutions: test_exercises_all.py)."""
import pytest

from course_utils.exercises import lesson05
from course_utils.exercises.core import CORRECT
from exercise_checks import assert_rejected

PRELUDE = "import torch\n"


PRESENCE_MISTAKES = {
    "expected count": ("return seq_len / vocab_size", "expected number"),
    "absent": ("return (1 - 1 / vocab_size) ** seq_len", "absent"),
    "every position": ("return (1 / vocab_size) ** seq_len", "every position"),
    "one position": ("return 1 / vocab_size", "one given position"),
    "off by one": ("return 1 - (1 - 1 / vocab_size) ** (seq_len - 1)", "expected"),
    "string": ("return 'about 3 %'", "return a number"),
}


@pytest.mark.parametrize("mistake", list(PRESENCE_MISTAKES))
def test_presence_mistakes_are_named(mistake):
    body, message = PRESENCE_MISTAKES[mistake]
    assert_rejected(lesson05.q1, f"def p_token_present(vocab_size, seq_len):\n    {body}\n", message, PRELUDE)


def test_presence_accepts_a_tensor_answer():
    code = "def p_token_present(v, n):\n    return 1 - (1 - 1 / torch.tensor(float(v), dtype=torch.float64)) ** n\n"
    assert lesson05.q1.evaluate_code(prelude=PRELUDE, code=code).status == CORRECT


POOL_MISTAKES = {
    "plain mean": ("return hidden.mean(1)", "plain mean"),
    "divided by full length": ("return (hidden * (ids != 0).float()[..., None]).sum(1) / ids.size(1)",
                               "full length"),
    "cls": ("return hidden[:, 0]", "[CLS] pooling"),
    "inverted mask": ("m = (ids == 0).float()\n    return (hidden * m[..., None]).sum(1) / m.sum(1, keepdim=True)"
                      ".clamp(min=1)", "skipped the real tokens"),
    "kept sequence axis": ("return hidden * (ids != 0).float()[..., None]", "(batch, d_model)"),
}


@pytest.mark.parametrize("mistake", list(POOL_MISTAKES))
def test_pool_mistakes_are_named(mistake):
    body, message = POOL_MISTAKES[mistake]
    assert_rejected(lesson05.q2, f"def masked_mean_pool(hidden, ids, pad_id=0):\n    {body}\n", message, PRELUDE)


CONFUSION_MISTAKES = {
    "transposed": ("m = torch.zeros(n, n, dtype=torch.long)\n    for t, p in zip(labels, predictions):\n"
                   "        m[p, t] += 1\n    return m", "swapped"),
    "row-normalised": ("m = torch.zeros(n, n)\n    for t, p in zip(labels, predictions):\n        m[t, p] += 1\n"
                       "    return m / m.sum(1, keepdim=True)", "counts"),
    "wrong shape": ("return torch.bincount(labels * n + predictions, minlength=n * n)", "(3, 3)"),
    "only correct ones": ("m = torch.zeros(n, n, dtype=torch.long)\n    for t, p in zip(labels, predictions):\n"
                          "        m[t, t] += int(t == p)\n    return m", "add up"),
}


@pytest.mark.parametrize("mistake", list(CONFUSION_MISTAKES))
def test_confusion_mistakes_are_named(mistake):
    body, message = CONFUSION_MISTAKES[mistake]
    assert_rejected(lesson05.q3, f"def confusion_matrix(predictions, labels, n):\n    {body}\n", message, PRELUDE)
