"""Lesson 01: right answers written differently. The typical wrong answers are the exercises' own declared tables
(``Exercise.mistakes`` in course_utils/exercises/lesson01.py), which tests/mistakes/__init__.py turns into entries."""
from course_utils.exercises.core import solution_of

from . import Alternative

PRELUDE = ("import math\nfrom collections import Counter\nimport torch\n"
           "import torch.nn.functional as F\nfrom course_utils.tokenization import split_words, tie_break_key\n")


def prelude(*pieces: str) -> str:
    """The imports, and the learner's own right pieces that a train/encode answer builds on."""
    return PRELUDE + solution_of("lesson01", *pieces)


MISTAKES = []  # every typical mistake of lesson 01 is declared in its exercise's table

ALTERNATIVES = [
    Alternative('lesson01', 'q1', 'a tuple of NumPy ints', 'import numpy as np\n\n\n'
                'def merge_pair(ids, pair, new_id):\n    out, skip = [], False\n'
                '    for i, x in enumerate(ids):\n        if skip:\n            skip = False\n'
                '            continue\n        if i + 1 < len(ids) and x == pair[0] and ids[i + 1] == pair[1]:\n'
                '            out.append(np.int64(new_id))\n            skip = True\n        else:\n'
                '            out.append(np.int64(x))\n    return tuple(out)\n', PRELUDE),
    Alternative('lesson01', 'q1', 'recursive', 'def merge_pair(ids, pair, new_id):\n    if len(ids) < 2:\n'
                '        return list(ids)\n    if (ids[0], ids[1]) == tuple(pair):\n'
                '        return [new_id] + merge_pair(ids[2:], pair, new_id)\n'
                '    return [ids[0]] + merge_pair(ids[1:], pair, new_id)\n', PRELUDE),
    Alternative('lesson01', 'q1', 'a copy edited in place', 'def merge_pair(ids, pair, new_id):\n'
                '    out, i = list(ids), 0\n    while i < len(out) - 1:\n'
                '        if out[i] == pair[0] and out[i + 1] == pair[1]:\n            out[i:i + 2] = [new_id]\n'
                '        i += 1\n    return out\n', PRELUDE),
    Alternative('lesson01', 'q2', 'sorted candidates, lists as merges', 'def train(texts, n_merges):\n'
                '    counts = Counter()\n    for text in texts:\n        counts.update(split_words(text))\n'
                '    words = [(list(w.encode()), n) for w, n in counts.items()]\n'
                '    words = [([b + 7 for b in ids], n) for ids, n in words]\n    merges = []\n'
                '    while len(merges) < n_merges:\n        totals = {}\n        for ids, n in words:\n'
                '            for pair, c in count_pairs(ids).items():\n'
                '                totals[pair] = totals.get(pair, 0) + c * n\n'
                '        ranked = sorted(totals.items(), key=lambda item: (-item[1], tie_break_key(item[0])))\n'
                '        if not ranked or ranked[0][1] < 2:\n            break\n'
                '        pair = list(ranked[0][0])\n'
                '        words = [(merge_pair(ids, tuple(pair), 263 + len(merges)), n) for ids, n in words]\n'
                '        merges.append(pair)\n    return merges\n', prelude("count_pairs", "merge_pair")),
    Alternative('lesson01', 'q2', 'one Counter per word, a tuple returned', 'def train(texts, n_merges):\n'
                '    words = Counter(w for t in texts for w in split_words(t))\n'
                '    ids = {w: [7 + b for b in bytes(w, "utf-8")] for w in words}\n    merges = ()\n'
                '    for new_id in range(263, 263 + n_merges):\n        totals = Counter()\n'
                '        for w in words:\n'
                '            totals.update({p: c * words[w] for p, c in count_pairs(ids[w]).items()})\n'
                '        best = max(totals, default=None,\n'
                '                   key=lambda p: (totals[p], [-x for x in tie_break_key(p)]))\n'
                '        if best is None or totals[best] <= 1:\n            break\n        merges += (best,)\n'
                '        ids = {w: merge_pair(ids[w], best, new_id) for w in ids}\n    return merges\n',
                prelude("count_pairs", "merge_pair")),
    Alternative('lesson01', 'q3', 'a dict of ranks, merging the best pair first', 'def encode(text, merges):\n'
                '    rank = {tuple(pair): k for k, pair in enumerate(merges)}\n    out = []\n'
                '    for word in split_words(text):\n        ids = [7 + b for b in word.encode("utf-8")]\n'
                '        while len(ids) > 1:\n'
                '            pair = min(zip(ids, ids[1:]), key=lambda p: rank.get(p, float("inf")))\n'
                '            if pair not in rank:\n                break\n'
                '            ids = merge_pair(ids, pair, 263 + rank[pair])\n        out.extend(ids)\n'
                '    return out\n', prelude("merge_pair")),
    Alternative('lesson01', 'q3', 'NumPy byte ids, a tensor returned', 'import numpy as np\n\n\n'
                'def encode(text, merges):\n    ids = []\n    for word in split_words(text):\n'
                '        w = list(np.frombuffer(word.encode("utf-8"), dtype=np.uint8).astype(np.int64) + 7)\n'
                '        for k, (a, b) in enumerate(merges):\n            w = merge_pair(w, (a, b), 263 + k)\n'
                '        ids += [int(i) for i in w]\n    return torch.tensor(ids, dtype=torch.long)\n',
                prelude("merge_pair")),
    Alternative('lesson01', 'q4', 'number pieces of split_words cut in a loop', 'import regex\n\n\n'
                'def split_digits(text):\n    pieces = []\n    for piece in split_words(text):\n'
                '        number = regex.fullmatch(r" ?\\p{N}+", piece)\n        if not number:\n'
                '            pieces.append(piece)\n            continue\n'
                '        groups = [piece.lstrip(" ")[i:i + 3] for i in range(0, len(piece.lstrip(" ")), 3)]\n'
                '        pieces += [piece[:len(piece) - len(piece.lstrip(" "))] + groups[0]] + groups[1:]\n'
                '    return pieces\n', PRELUDE),
    Alternative('lesson01', 'q4', 'the pattern rewritten by hand, compiled', 'import regex\n\n'
                'PATTERN = regex.compile(r"""\'s|\'t|\'re|\'ve|\'m|\'ll|\'d| ?\\p{L}+| ?\\p{N}{1,3}'
                '| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+""")\n\n\n'
                'def split_digits(text):\n    return list(PATTERN.findall(text))\n', PRELUDE),
    Alternative('lesson01', 'q5', 'index_add_', 'def embedding_grad(ids, grad_output, vocab_size):\n'
                '    d = grad_output.shape[-1]\n    grad = torch.zeros(vocab_size, d)\n'
                '    grad.index_add_(0, ids.flatten(), grad_output.reshape(-1, d))\n    return grad * d ** 0.5\n',
                PRELUDE),
    Alternative('lesson01', 'q5', 'einsum', 'def embedding_grad(ids, grad_output, vocab_size):\n'
                '    one_hot = F.one_hot(ids, vocab_size).float()\n'
                '    return torch.einsum("bsv,bsd->vd", one_hot, grad_output) * math.sqrt(grad_output.size(-1))\n',
                PRELUDE),
    Alternative('lesson01', 'q5', 'a loop over positions', 'def embedding_grad(ids, grad_output, vocab_size):\n'
                '    scale = math.sqrt(grad_output.size(-1))\n'
                '    grad = torch.zeros(vocab_size, grad_output.size(-1))\n'
                '    for b in range(ids.size(0)):\n        for s in range(ids.size(1)):\n'
                '            grad[ids[b, s]] += scale * grad_output[b, s]\n    return grad\n', PRELUDE),
    Alternative('lesson01', 'q5', 'index_put with accumulate', 'def embedding_grad(ids, grad_output, vocab_size):\n'
                '    d = grad_output.size(-1)\n    grad = torch.zeros(vocab_size, d)\n'
                '    grad.index_put_((ids.reshape(-1),), grad_output.reshape(-1, d) * math.sqrt(d), accumulate=True)\n'
                '    return grad\n', PRELUDE),
]
