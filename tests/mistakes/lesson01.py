"""Typical wrong answers to the exercises of lesson01, each with the phrase its feedback must contain."""
from . import Mistake

PRELUDE = 'import math\nfrom collections import Counter\nimport torch\nimport torch.nn.functional as F\n'


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson01", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'distinct pairs',
      'def count_pairs(ids):\n'
      '    return {p: 1 for p in zip(ids, ids[1:])}\n',
      'not distinct pairs'),
    q('q1', 'wrap around',
      'def count_pairs(ids):\n'
      '    return Counter(zip(ids, ids[1:] + ids[:1]))\n',
      'wraps from the last id'),
    q('q1', 'self pairs',
      'def count_pairs(ids):\n'
      '    return Counter(zip(ids, ids))\n',
      'zip(ids, ids)'),
    q('q1', 'off by one',
      'def count_pairs(ids):\n'
      '    return Counter((ids[i], ids[i + 1]) for i in range(len(ids) - 2))\n',
      'n - 1 adjacent pairs'),
    q('q1', 'a list',
      'def count_pairs(ids):\n'
      '    return list(zip(ids, ids[1:]))\n',
      'should return a dict'),
    q('q1', 'mutates input',
      'def count_pairs(ids):\n'
      '    pairs = Counter(zip(ids, ids[1:]))\n'
      '    ids.clear()\n'
      '    return pairs\n',
      'changed the list'),
    q('q2', 'first only',
      'def merge_pair(ids, pair, new_id):\n'
      '    for i in range(len(ids) - 1):\n'
      '        if (ids[i], ids[i + 1]) == tuple(pair):\n'
      '            return ids[:i] + [new_id] + ids[i + 2:]\n'
      '    return list(ids)\n',
      'every'),
    q('q2', 'drops last',
      'def merge_pair(ids, pair, new_id):\n'
      '    out, i = [], 0\n'
      '    while i < len(ids) - 1:\n'
      '        if (ids[i], ids[i + 1]) == tuple(pair):\n'
      '            out.append(new_id)\n'
      '            i += 2\n'
      '        else:\n'
      '            out.append(ids[i])\n'
      '            i += 1\n'
      '    return out\n',
      'lost the last id'),
    q('q2', 'no skip',
      'def merge_pair(ids, pair, new_id):\n'
      '    out = []\n'
      '    for i in range(len(ids) - 1):\n'
      '        out.append(new_id if (ids[i], ids[i + 1]) == tuple(pair) else ids[i])\n'
      '    return out + ids[-1:]\n',
      'i += 2'),
    q('q2', 'in place',
      'def merge_pair(ids, pair, new_id):\n'
      '    i = 0\n'
      '    while i < len(ids) - 1:\n'
      '        if (ids[i], ids[i + 1]) == tuple(pair):\n'
      '            ids[i:i + 2] = [new_id]\n'
      '        i += 1\n'
      '    return ids\n',
      'changed the list'),
    q('q3', 'inverted mask',
      'def pad_with_mask(sequences):\n'
      '    longest = max(len(s) for s in sequences)\n'
      '    ids = torch.zeros(len(sequences), longest, dtype=torch.long)\n'
      '    for r, s in enumerate(sequences):\n'
      '        ids[r, :len(s)] = torch.tensor(s)\n'
      '    return ids, (ids == 0)[:, None, None, :]\n',
      'inverted'),
    q('q3', '2-D mask',
      'def pad_with_mask(sequences):\n'
      '    longest = max(len(s) for s in sequences)\n'
      '    ids = torch.zeros(len(sequences), longest, dtype=torch.long)\n'
      '    for r, s in enumerate(sequences):\n'
      '        ids[r, :len(s)] = torch.tensor(s)\n'
      '    return ids, ids != 0\n',
      '(batch, 1, 1, seq)'),
    q('q3', 'float mask',
      'def pad_with_mask(sequences):\n'
      '    longest = max(len(s) for s in sequences)\n'
      '    ids = torch.zeros(len(sequences), longest, dtype=torch.long)\n'
      '    for r, s in enumerate(sequences):\n'
      '        ids[r, :len(s)] = torch.tensor(s)\n'
      '    return ids, (ids != 0).float()[:, None, None, :]\n',
      'boolean'),
    q('q3', 'left padding',
      'def pad_with_mask(sequences):\n'
      '    longest = max(len(s) for s in sequences)\n'
      '    ids = torch.tensor([[0] * (longest - len(s)) + s for s in sequences])\n'
      '    return ids, (ids != 0)[:, None, None, :]\n',
      'on the left'),
    q('q3', 'float ids',
      'def pad_with_mask(sequences):\n'
      '    longest = max(len(s) for s in sequences)\n'
      '    ids = torch.tensor([s + [0] * (longest - len(s)) for s in sequences], dtype=torch.float)\n'
      '    return ids, (ids != 0)[:, None, None, :]\n',
      'torch.long'),
    q('q3', 'pads with 1',
      'def pad_with_mask(sequences):\n'
      '    longest = max(len(s) for s in sequences)\n'
      '    ids = torch.tensor([s + [1] * (longest - len(s)) for s in sequences])\n'
      '    return ids, (ids != 1)[:, None, None, :]\n',
      '[PAD] = 0'),
    q('q3', 'only ids',
      'def pad_with_mask(sequences):\n'
      '    longest = max(len(s) for s in sequences)\n'
      '    ids = torch.zeros(len(sequences), longest, dtype=torch.long)\n'
      '    for r, s in enumerate(sequences):\n'
      '        ids[r, :len(s)] = torch.tensor(s)\n'
      '    return ids\n',
      'tuple (ids, mask)'),
    q('q4', 'no scale',
      'def scaled_one_hot_embedding(ids, w):\n'
      '    return F.one_hot(ids, w.size(0)).float() @ w\n',
      'plain lookup'),
    q('q4', 'times d_model',
      'def scaled_one_hot_embedding(ids, w):\n'
      '    return F.one_hot(ids, w.size(0)).float() @ w * w.size(1)\n',
      'square root'),
    q('q4', 'divided',
      'def scaled_one_hot_embedding(ids, w):\n'
      '    return F.one_hot(ids, w.size(0)).float() @ w / math.sqrt(w.size(1))\n',
      'divided by √d_model'),
    q('q4', 'sqrt vocab',
      'def scaled_one_hot_embedding(ids, w):\n'
      '    return F.one_hot(ids, w.size(0)).float() @ w * math.sqrt(w.size(0))\n',
      '√vocab_size'),
    q('q4', 'num_classes inferred',
      'def scaled_one_hot_embedding(ids, w):\n'
      '    return F.one_hot(ids).float() @ w * math.sqrt(w.size(1))\n',
      'num_classes'),
    q('q4', 'integer one-hot',
      'def scaled_one_hot_embedding(ids, w):\n'
      '    return F.one_hot(ids, w.size(0)) @ w * math.sqrt(w.size(1))\n',
      '.float()'),
    q('q4', 'wrong rows',
      'def scaled_one_hot_embedding(ids, w):\n'
      '    return F.one_hot(ids + 1, w.size(0)).float() @ w * math.sqrt(w.size(1))\n',
      'differ from W[ids]'),
]
MISTAKES += [
    q('q4', 'plain indexing', "def scaled_one_hot_embedding(ids, w):\n    return w[ids] * math.sqrt(w.size(1))\n",
      'without indexing'),
    q('q4', 'F.embedding', "def scaled_one_hot_embedding(ids, w):\n"
      "    return F.embedding(ids, w) * math.sqrt(w.size(1))\n",
      'without indexing'),
    q('q4', 'index_select', "def scaled_one_hot_embedding(ids, w):\n"
      "    return w.index_select(0, ids.flatten()).view(*ids.shape, -1) * math.sqrt(w.size(1))\n", 'without indexing'),
]
