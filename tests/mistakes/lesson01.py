"""Typical wrong answers to the exercises of lesson01, each with the phrase its feedback must contain."""
from . import Alternative, Mistake

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
      'changed its input `ids`'),
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
      'changed its input `ids`'),
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

SOLUTION_MERGE = ('def merge_pair(ids, pair, new_id):\n'
                  '    merged, i = [], 0\n'
                  '    while i < len(ids):\n'
                  '        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):\n'
                  '            merged.append(new_id)\n'
                  '            i += 2\n'
                  '        else:\n'
                  '            merged.append(ids[i])\n'
                  '            i += 1\n'
                  '    return merged\n')
SOLUTION_PAD = ('def pad_with_mask(sequences, pad_id=0):\n'
                '    longest = max(len(s) for s in sequences)\n'
                '    ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)\n'
                '    for row, sequence in enumerate(sequences):\n'
                '        ids[row, :len(sequence)] = torch.tensor(sequence)\n'
                '    mask = (ids != pad_id)[:, None, None, :]\n'
                '    return ids, mask\n')
SOLUTION_EMBED = ('def scaled_one_hot_embedding(ids, weight):\n'
                  '    vocab_size, d_model = weight.shape\n'
                  '    one_hot = F.one_hot(ids, num_classes=vocab_size).float()\n'
                  '    return one_hot @ weight * math.sqrt(d_model)\n')

MISTAKES += [
    # q1: pairs that do not overlap, reversed, ids assumed small, keys that are not pairs of ints
    q('q1', 'every other pair', 'def count_pairs(ids):\n    return Counter(zip(ids[::2], ids[1::2]))\n',
      'every other pair'),
    q('q1', 'pairs reversed', 'def count_pairs(ids):\n    return Counter(zip(ids[1:], ids))\n', 'reversed'),
    q('q1', 'a 256 x 256 table: ids assumed below 256',
      'def count_pairs(ids):\n'
      '    table = [[0] * 256 for _ in range(256)]\n'
      '    for a, b in zip(ids, ids[1:]):\n'
      '        table[a][b] += 1\n'
      '    return {(a, b): table[a][b] for a in range(256) for b in range(256) if table[a][b]}\n',
      'beyond 255'),
    q('q1', 'tensor keys', 'def count_pairs(ids):\n    t = torch.tensor(ids)\n    return Counter(zip(t, t[1:]))\n',
      'keys hold tensors'),
    q('q1', 'string keys', 'def count_pairs(ids):\n'
      '    return Counter(f"{a},{b}" for a, b in zip(ids, ids[1:]))\n', 'tuples (a, b)'),
    # q2: hard-coded id, text replace, scanned from the right, list compared with a tuple
    q('q2', 'new id hard-coded as 256', SOLUTION_MERGE.replace('merged.append(new_id)', 'merged.append(256)'),
      'do not hard-code'),
    q('q2', 'replace in a text of the ids',
      'def merge_pair(ids, pair, new_id):\n'
      '    text = " ".join(map(str, ids)).replace(f"{pair[0]} {pair[1]}", str(new_id))\n'
      '    return [int(t) for t in text.split()]\n',
      'str.replace'),
    q('q2', 'scanned from the right',
      'def merge_pair(ids, pair, new_id):\n'
      '    out, i = [], len(ids) - 1\n'
      '    while i >= 0:\n'
      '        if i > 0 and (ids[i - 1], ids[i]) == tuple(pair):\n'
      '            out.insert(0, new_id)\n'
      '            i -= 2\n'
      '        else:\n'
      '            out.insert(0, ids[i])\n'
      '            i -= 1\n'
      '    return out\n',
      'scan from the left'),
    q('q2', 'only the first id compared', SOLUTION_MERGE.replace('(ids[i], ids[i + 1]) == tuple(pair)',
                                                                 'ids[i] == pair[0]'), "*first* id"),
    q('q2', 'a list compared with the pair', SOLUTION_MERGE.replace('(ids[i], ids[i + 1]) == tuple(pair)',
                                                                   '[ids[i], ids[i + 1]] == pair'),
      'nothing was replaced'),
    q('q2', 'the package\'s merge_pair under another name',
      'import course_utils.tokenization as T\n\n\ndef merge_pair(ids, pair, new_id):\n'
      '    return T.merge_pair(ids, pair, new_id)\n', 'course_utils.tokenization.merge_pair'),
    # q3: a batch of one squeezed, the width from the first row, pad_id taken but ignored
    q('q3', 'batch of one squeezed', SOLUTION_PAD.replace('return ids, mask', 'return ids.squeeze(), mask'),
      '.squeeze()'),
    q('q3', 'width of the first row', SOLUTION_PAD.replace('max(len(s) for s in sequences)', 'len(sequences[0])'),
      'whichever row'),
    q('q3', 'pad_id taken, 0 used', SOLUTION_PAD.replace('torch.full((len(sequences), longest), pad_id',
                                                         'torch.full((len(sequences), longest), 0'),
      'you padded with 0'),
    q('q3', 'mask compares with 0', SOLUTION_PAD.replace('mask = (ids != pad_id)', 'mask = (ids != 0)'),
      'compares with 0'),
    q('q3', 'int32 ids', SOLUTION_PAD.replace('dtype=torch.long', 'dtype=torch.int32'), 'torch.long'),
    q('q3', 'mask (batch, 1, seq, 1)', SOLUTION_PAD.replace('[:, None, None, :]', '[:, None, :, None]'),
      '(batch, 1, 1, seq)'),
    q('q3', 'the package\'s pad_batch', 'from course_utils.tokenization import pad_batch as pb\n\n\n'
      'def pad_with_mask(sequences):\n    ids = pb(sequences)\n    return ids, (ids != 0)[:, None, None, :]\n',
      'pad_batch'),
    # q4: float64, lookups in disguise, a detached W, sizes assumed
    q('q4', 'float64', SOLUTION_EMBED.replace('.float()', '.double()').replace('one_hot @ weight',
                                                                               'one_hot @ weight.double()'),
      'torch.float32'),
    q('q4', 'rows picked one by one', 'def scaled_one_hot_embedding(ids, w):\n'
      '    rows = [torch.stack([w[int(i)] for i in row]) for row in ids]\n'
      '    return torch.stack(rows) * math.sqrt(w.size(1))\n', 'without indexing'),
    q('q4', 'identity product, then indexed', 'def scaled_one_hot_embedding(ids, w):\n'
      '    return (torch.eye(w.size(0)) @ w)[ids] * math.sqrt(w.size(1))\n', 'without indexing'),
    q('q4', 'W detached', SOLUTION_EMBED.replace('one_hot @ weight', 'one_hot @ weight.detach()'),
      'no gradient reaches'),
    q('q4', 'nn.Embedding holding W', 'def scaled_one_hot_embedding(ids, w):\n'
      '    emb = torch.nn.Embedding(*w.shape)\n    emb.weight.data = w\n'
      '    return emb(ids) * math.sqrt(w.size(1))\n', 'without indexing'),
    q('q4', 'd_model assumed 16', SOLUTION_EMBED.replace('math.sqrt(d_model)', '4.0'), 'no fixed number'),
    q('q4', 'vocabulary assumed 10', SOLUTION_EMBED.replace('num_classes=vocab_size', 'num_classes=10'),
      'neither a fixed number'),
    q('q4', 'squeezed', SOLUTION_EMBED.replace('return one_hot @ weight * math.sqrt(d_model)',
                                               'return (one_hot @ weight * math.sqrt(d_model)).squeeze()'),
      'should have shape'),
    q('q4', 'num_classes from the largest id', SOLUTION_EMBED.replace('num_classes=vocab_size',
                                                                      'num_classes=int(ids.max()) + 1'),
      'num_classes'),
]

ALTERNATIVES = [
    Alternative('lesson01', 'q1', 'a loop with dict.get', 'def count_pairs(ids):\n    counts = {}\n'
                '    for i in range(len(ids) - 1):\n        pair = (ids[i], ids[i + 1])\n'
                '        counts[pair] = counts.get(pair, 0) + 1\n    return counts\n', PRELUDE),
    Alternative('lesson01', 'q1', 'defaultdict', 'from collections import defaultdict\n\n\n'
                'def count_pairs(ids):\n    counts = defaultdict(int)\n    for pair in zip(ids, ids[1:]):\n'
                '        counts[pair] += 1\n    return counts\n', PRELUDE),
    Alternative('lesson01', 'q1', 'NumPy ints as keys', 'import numpy as np\n\n\ndef count_pairs(ids):\n'
                '    a = np.array(ids, dtype=np.int64)\n    return Counter(zip(a[:-1], a[1:]))\n', PRELUDE),
    Alternative('lesson01', 'q1', 'list.count over a set', 'def count_pairs(ids):\n'
                '    pairs = list(zip(ids, ids[1:]))\n    return {p: pairs.count(p) for p in set(pairs)}\n', PRELUDE),
    Alternative('lesson01', 'q2', 'a tuple of NumPy ints', 'import numpy as np\n\n\n'
                'def merge_pair(ids, pair, new_id):\n    out, skip = [], False\n'
                '    for i, x in enumerate(ids):\n        if skip:\n            skip = False\n'
                '            continue\n        if i + 1 < len(ids) and x == pair[0] and ids[i + 1] == pair[1]:\n'
                '            out.append(np.int64(new_id))\n            skip = True\n        else:\n'
                '            out.append(np.int64(x))\n    return tuple(out)\n', PRELUDE),
    Alternative('lesson01', 'q2', 'recursive', 'def merge_pair(ids, pair, new_id):\n    if len(ids) < 2:\n'
                '        return list(ids)\n    if (ids[0], ids[1]) == tuple(pair):\n'
                '        return [new_id] + merge_pair(ids[2:], pair, new_id)\n'
                '    return [ids[0]] + merge_pair(ids[1:], pair, new_id)\n', PRELUDE),
    Alternative('lesson01', 'q2', 'a copy edited in place', 'def merge_pair(ids, pair, new_id):\n'
                '    out, i = list(ids), 0\n    while i < len(out) - 1:\n'
                '        if out[i] == pair[0] and out[i + 1] == pair[1]:\n            out[i:i + 2] = [new_id]\n'
                '        i += 1\n    return out\n', PRELUDE),
    Alternative('lesson01', 'q3', 'pad_sequence with a pad_id', 'from torch.nn.utils.rnn import pad_sequence\n\n\n'
                'def pad_with_mask(sequences, pad_id=0):\n'
                '    ids = pad_sequence([torch.tensor(s) for s in sequences], batch_first=True, padding_value=pad_id)\n'
                '    return ids, (ids != pad_id).unsqueeze(1).unsqueeze(2)\n', PRELUDE),
    Alternative('lesson01', 'q3', 'mask from the lengths, a list returned', 'def pad_with_mask(sequences):\n'
                '    longest = max(map(len, sequences))\n'
                '    ids = torch.tensor([list(s) + [0] * (longest - len(s)) for s in sequences])\n'
                '    lengths = torch.tensor([len(s) for s in sequences])\n'
                '    mask = torch.arange(longest)[None, :] < lengths[:, None]\n'
                '    return [ids, mask.view(len(sequences), 1, 1, longest)]\n', PRELUDE),
    Alternative('lesson01', 'q3', 'keyword-only pad', 'def pad_with_mask(sequences, *, pad=0):\n'
                '    longest = max(len(s) for s in sequences)\n'
                '    ids = torch.stack([torch.cat([torch.tensor(s, dtype=torch.long),\n'
                '                                  torch.full((longest - len(s),), pad)]) for s in sequences])\n'
                '    return ids, ids.ne(pad)[:, None, None]\n', PRELUDE),
    Alternative('lesson01', 'q4', 'einsum', 'def scaled_one_hot_embedding(ids, w):\n'
                '    one_hot = F.one_hot(ids, w.shape[0]).to(w.dtype)\n'
                '    return torch.einsum("bsv,vd->bsd", one_hot, w) * w.shape[1] ** 0.5\n', PRELUDE),
    Alternative('lesson01', 'q4', 'rows of the identity as the one-hot', 'def scaled_one_hot_embedding(ids, w):\n'
                '    return torch.eye(w.size(0))[ids] @ w * torch.tensor(w.size(1)).sqrt()\n', PRELUDE),
    Alternative('lesson01', 'q4', 'broadcast product and sum', 'def scaled_one_hot_embedding(ids, w):\n'
                '    one_hot = F.one_hot(ids, w.size(0)).float()\n'
                '    return (one_hot[..., None] * w).sum(dim=-2) * math.sqrt(w.size(1))\n', PRELUDE),
    Alternative('lesson01', 'q4', 'F.linear, one sequence at a time', 'def scaled_one_hot_embedding(ids, w):\n'
                '    scale = math.sqrt(w.size(1))\n'
                '    return torch.stack([F.linear(F.one_hot(row, w.size(0)).float(), w.t()) for row in ids]) * scale\n',
                PRELUDE),
]
