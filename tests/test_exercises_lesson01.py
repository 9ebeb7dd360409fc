"""Lesson 01 exercises: each usual mistake fails with the message that names it (solutions: test_exercises_all.py)."""
import pytest

from course_utils.exercises import lesson01
from exercise_checks import assert_rejected

PRELUDE = "import math\nfrom collections import Counter\nimport torch\nimport torch.nn.functional as F\n"


def test_check_prints_and_never_raises(capsys):
    lesson01.q1.bind({"count_pairs": lambda ids: 1 / 0}).check()
    assert "❌" in (out := capsys.readouterr().out) and "ZeroDivisionError" in out


def test_solutions_agree_with_the_course_tokenizer():
    from course_utils.tokenization import merge_pair as package_merge_pair

    merge_pair = lesson01.q2.run_solution()["merge_pair"]
    for ids, pair in (([1, 1, 1, 1, 2], (1, 1)), ([3, 4, 3, 4, 3], (4, 3)), ([5], (5, 5))):
        assert merge_pair(ids, pair, 99) == package_merge_pair(ids, pair, 99)


PAIR_MISTAKES = {
    "distinct pairs": "def count_pairs(ids):\n    return {p: 1 for p in zip(ids, ids[1:])}\n",
    "wrap around": "def count_pairs(ids):\n    return Counter(zip(ids, ids[1:] + ids[:1]))\n",
    "self pairs": "def count_pairs(ids):\n    return Counter(zip(ids, ids))\n",
    "off by one": "def count_pairs(ids):\n    return Counter((ids[i], ids[i + 1]) for i in range(len(ids) - 2))\n",
    "a list": "def count_pairs(ids):\n    return list(zip(ids, ids[1:]))\n",
    "mutates input": ("def count_pairs(ids):\n    pairs = Counter(zip(ids, ids[1:]))\n    ids.clear()\n"
                      "    return pairs\n"),
}
PAIR_MESSAGES = {"distinct pairs": "not distinct pairs", "wrap around": "wraps from the last id",
                 "self pairs": "zip(ids, ids)", "off by one": "n - 1 adjacent pairs", "a list": "should return a dict",
                 "mutates input": "changed the list"}


@pytest.mark.parametrize("mistake", PAIR_MISTAKES)
def test_count_pairs_mistakes(mistake):
    assert_rejected(lesson01.q1, PAIR_MISTAKES[mistake], PAIR_MESSAGES[mistake], PRELUDE)


MERGE_MISTAKES = {
    "first only": ("def merge_pair(ids, pair, new_id):\n    for i in range(len(ids) - 1):\n"
                   "        if (ids[i], ids[i + 1]) == tuple(pair):\n"
                   "            return ids[:i] + [new_id] + ids[i + 2:]\n    return list(ids)\n"),
    "drops last": ("def merge_pair(ids, pair, new_id):\n    out, i = [], 0\n    while i < len(ids) - 1:\n"
                   "        if (ids[i], ids[i + 1]) == tuple(pair):\n"
                   "            out.append(new_id)\n            i += 2\n"
                   "        else:\n            out.append(ids[i])\n            i += 1\n    return out\n"),
    "no skip": ("def merge_pair(ids, pair, new_id):\n    out = []\n    for i in range(len(ids) - 1):\n"
                "        out.append(new_id if (ids[i], ids[i + 1]) == tuple(pair) else ids[i])\n"
                "    return out + ids[-1:]\n"),
    "in place": ("def merge_pair(ids, pair, new_id):\n    i = 0\n    while i < len(ids) - 1:\n"
                 "        if (ids[i], ids[i + 1]) == tuple(pair):\n            ids[i:i + 2] = [new_id]\n"
                 "        i += 1\n    return ids\n"),
}
MERGE_MESSAGES = {"first only": "every", "drops last": "lost the last id", "no skip": "i += 2",
                  "in place": "changed the list"}


@pytest.mark.parametrize("mistake", MERGE_MISTAKES)
def testmerge_pair_mistakes(mistake):
    assert_rejected(lesson01.q2, MERGE_MISTAKES[mistake], MERGE_MESSAGES[mistake], PRELUDE)


PAD_BODY = ("    longest = max(len(s) for s in sequences)\n"
            "    ids = torch.zeros(len(sequences), longest, dtype=torch.long)\n"
            "    for r, s in enumerate(sequences):\n        ids[r, :len(s)] = torch.tensor(s)\n")
PAD_MISTAKES = {
    "inverted mask": f"def pad_with_mask(sequences):\n{PAD_BODY}    return ids, (ids == 0)[:, None, None, :]\n",
    "2-D mask": f"def pad_with_mask(sequences):\n{PAD_BODY}    return ids, ids != 0\n",
    "float mask": f"def pad_with_mask(sequences):\n{PAD_BODY}    return ids, (ids != 0).float()[:, None, None, :]\n",
    "left padding": ("def pad_with_mask(sequences):\n    longest = max(len(s) for s in sequences)\n"
                     "    ids = torch.tensor([[0] * (longest - len(s)) + s for s in sequences])\n"
                     "    return ids, (ids != 0)[:, None, None, :]\n"),
    "float ids": ("def pad_with_mask(sequences):\n    longest = max(len(s) for s in sequences)\n"
                  "    ids = torch.tensor([s + [0] * (longest - len(s)) for s in sequences], dtype=torch.float)\n"
                  "    return ids, (ids != 0)[:, None, None, :]\n"),
    "pads with 1": ("def pad_with_mask(sequences):\n    longest = max(len(s) for s in sequences)\n"
                    "    ids = torch.tensor([s + [1] * (longest - len(s)) for s in sequences])\n"
                    "    return ids, (ids != 1)[:, None, None, :]\n"),
    "only ids": f"def pad_with_mask(sequences):\n{PAD_BODY}    return ids\n",
}
PAD_MESSAGES = {"inverted mask": "inverted", "2-D mask": "(batch, 1, 1, seq)", "float mask": "boolean",
                "left padding": "on the left", "float ids": "torch.long", "pads with 1": "[PAD] = 0",
                "only ids": "tuple (ids, mask)"}


@pytest.mark.parametrize("mistake", PAD_MISTAKES)
def test_pad_with_mask_mistakes(mistake):
    assert_rejected(lesson01.q3, PAD_MISTAKES[mistake], PAD_MESSAGES[mistake], PRELUDE)


EMBED_MISTAKES = {
    "no scale": "def scaled_one_hot_embedding(ids, w):\n    return F.one_hot(ids, w.size(0)).float() @ w\n",
    "times d_model": ("def scaled_one_hot_embedding(ids, w):\n"
                      "    return F.one_hot(ids, w.size(0)).float() @ w * w.size(1)\n"),
    "divided": ("def scaled_one_hot_embedding(ids, w):\n"
                "    return F.one_hot(ids, w.size(0)).float() @ w / math.sqrt(w.size(1))\n"),
    "sqrt vocab": ("def scaled_one_hot_embedding(ids, w):\n"
                   "    return F.one_hot(ids, w.size(0)).float() @ w * math.sqrt(w.size(0))\n"),
    "num_classes inferred": ("def scaled_one_hot_embedding(ids, w):\n"
                             "    return F.one_hot(ids).float() @ w * math.sqrt(w.size(1))\n"),
    "integer one-hot": ("def scaled_one_hot_embedding(ids, w):\n"
                        "    return F.one_hot(ids, w.size(0)) @ w * math.sqrt(w.size(1))\n"),
    "wrong rows": ("def scaled_one_hot_embedding(ids, w):\n"
                   "    return F.one_hot(ids + 1, w.size(0)).float() @ w * math.sqrt(w.size(1))\n"),
}
EMBED_MESSAGES = {"no scale": "plain lookup", "times d_model": "square root", "divided": "divided by √d_model",
                  "sqrt vocab": "√vocab_size", "num_classes inferred": "num_classes", "integer one-hot": ".float()",
                  "wrong rows": "differ from W[ids]"}


@pytest.mark.parametrize("mistake", EMBED_MISTAKES)
def test_embedding_mistakes(mistake):
    assert_rejected(lesson01.q4, EMBED_MISTAKES[mistake], EMBED_MESSAGES[mistake], PRELUDE)
