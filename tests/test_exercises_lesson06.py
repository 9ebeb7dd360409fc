"""Lesson 06 exercises: each usual mistake fails with the message that names it (solutions: test_exercises_all.py)."""
import pytest

from course_utils.exercises import lesson06
from course_utils.exercises.core import CORRECT, INCORRECT
from exercise_checks import assert_rejected

PRELUDE = "import torch\n"


HEAD = "def corrupt_selected(ids, selected, vocab_size, generator):\n"
U = "    u = torch.rand(ids.shape, generator=generator)\n"
RANDOM = "    r = torch.randint(7, vocab_size, ids.shape, generator=generator)\n"
CORRUPT_MISTAKES = {
    "all [MASK]": (HEAD + "    return ids.masked_fill(selected, 4), ids.masked_fill(~selected, -100)\n",
                   "every selected token became [MASK]"),
    "labels everywhere": (HEAD + U + "    return ids.masked_fill(selected & (u < 0.8), 4), ids.clone()\n",
                          "labels equal `ids` everywhere"),
    "labels from corrupted inputs": (
        HEAD + U + "    x = ids.masked_fill(selected & (u < 0.8), 4)\n    return x, x.masked_fill(~selected, -100)\n",
        "*corrupted* ids"),
    "two independent draws": (
        HEAD + U + RANDOM + "    v = torch.rand(ids.shape, generator=generator)\n"
        "    x = ids.masked_fill(selected & (u < 0.8), 4)\n"
        "    x = torch.where(selected & (v < 0.1), r, x)\n"
        "    return x, ids.masked_fill(~selected, -100)\n", "aim for 80 % / 10 % / 10 %"),
    "random ids include specials": (
        HEAD + U + "    r = torch.randint(0, vocab_size, ids.shape, generator=generator)\n"
        "    x = ids.masked_fill(selected & (u < 0.8), 4)\n"
        "    x = torch.where(selected & (u >= 0.8) & (u < 0.9), r, x)\n"
        "    return x, ids.masked_fill(~selected, -100)\n", "real token"),
    "touches unselected tokens": (
        HEAD + U + "    return ids.masked_fill(u < 0.12, 4), ids.masked_fill(~selected, -100)\n",
        "only selected positions may change"),
    "in place": (HEAD + U + "    labels = ids.masked_fill(~selected, -100)\n    ids[selected & (u < 0.8)] = 4\n"
                 "    return ids, labels\n", "in place"),
    "unseeded": (HEAD + "    u = torch.rand(ids.shape)\n    r = torch.randint(7, vocab_size, ids.shape)\n"
                 "    x = ids.masked_fill(selected & (u < 0.8), 4)\n"
                 "    x = torch.where(selected & (u >= 0.8) & (u < 0.9), r, x)\n"
                 "    return x, ids.masked_fill(~selected, -100)\n", "generator=generator"),
}


@pytest.mark.parametrize("mistake", list(CORRUPT_MISTAKES))
def test_corruption_mistakes_are_named(mistake):
    code, message = CORRUPT_MISTAKES[mistake]
    assert_rejected(lesson06.q1, code, message, PRELUDE)


ACCURACY_MISTAKES = {
    "counts hits over all positions": ("def masked_accuracy(logits, labels):\n    s = labels != -100\n"
                                       "    return ((logits.argmax(-1) == labels) & s).sum().item() / s.numel()\n",
                                       "divided by every position"),
    "percentage": ("def masked_accuracy(logits, labels):\n    s = labels != -100\n"
                   "    return 100 * (logits.argmax(-1)[s] == labels[s]).float().mean().item()\n", "percentage"),
    "max instead of argmax": ("def masked_accuracy(logits, labels):\n    s = labels != -100\n"
                              "    return (logits.max(-1).values[s] == labels[s]).float().mean().item()\n",
                              "argmax(dim=-1)"),
    "ignores the mask": ("def masked_accuracy(logits, labels):\n"
                         "    return (logits.argmax(-1) == labels).float().mean().item()\n", "divided by every position"),
}


@pytest.mark.parametrize("mistake", list(ACCURACY_MISTAKES))
def test_accuracy_mistakes_are_named(mistake):
    code, message = ACCURACY_MISTAKES[mistake]
    assert_rejected(lesson06.q2, code, message, PRELUDE)


TIE_MISTAKES = {
    "copy of the values": ("def tie_weights(model):\n"
                           "    model.output.weight.data = model.embedding.weight.data.clone()\n    return model\n",
                           "a copy"),
    "transposed": ("def tie_weights(model):\n"
                   "    model.output.weight = torch.nn.Parameter(model.embedding.weight.t())\n    return model\n",
                   "no transpose needed"),
    "new parameter from the same values": (
        "def tie_weights(model):\n"
        "    model.output.weight = torch.nn.Parameter(model.embedding.weight.detach().clone())\n    return model\n",
        "a copy"),
    "tied the wrong way round but shared": (
        "def tie_weights(model):\n    model.embedding.weight = model.output.weight\n    return model\n", None),
}


@pytest.mark.parametrize("mistake", list(TIE_MISTAKES))
def test_tie_mistakes_are_named(mistake):
    code, message = TIE_MISTAKES[mistake]
    result = lesson06.q3.evaluate_code(prelude=PRELUDE, code=code)
    if message is None:  # sharing the output's matrix with the embedding is just as tied: accepted
        assert result.status == CORRECT, result.message
    else:
        assert result.status == INCORRECT and message in result.message, result.message
