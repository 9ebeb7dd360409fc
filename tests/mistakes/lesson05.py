"""Typical wrong answers to the exercises of lesson05, each with the phrase its feedback must contain."""
from . import Mistake

PRELUDE = 'import torch\n'


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson05", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'expected count',
      'def p_token_present(vocab_size, seq_len):\n    return seq_len / vocab_size\n',
      'expected number'),
    q('q1', 'absent',
      'def p_token_present(vocab_size, seq_len):\n    return (1 - 1 / vocab_size) ** seq_len\n',
      'absent'),
    q('q1', 'every position',
      'def p_token_present(vocab_size, seq_len):\n    return (1 / vocab_size) ** seq_len\n',
      'every position'),
    q('q1', 'one position',
      'def p_token_present(vocab_size, seq_len):\n    return 1 / vocab_size\n',
      'one given position'),
    q('q1', 'off by one',
      'def p_token_present(vocab_size, seq_len):\n    return 1 - (1 - 1 / vocab_size) ** (seq_len - 1)\n',
      'expected'),
    q('q1', 'string',
      "def p_token_present(vocab_size, seq_len):\n    return 'about 3 %'\n",
      'return a number'),
    q('q2', 'plain mean',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n    return hidden.mean(1)\n',
      'plain mean'),
    q('q2', 'divided by full length',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n    return (hidden * (ids != 0).float()[..., None]).sum(1) / ids.size(1)\n',
      'full length'),
    q('q2', 'cls',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n    return hidden[:, 0]\n',
      '[CLS] pooling'),
    q('q2', 'inverted mask',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n    m = (ids == 0).float()\n    return (hidden * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1)\n',
      'skipped the real tokens'),
    q('q2', 'kept sequence axis',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n    return hidden * (ids != 0).float()[..., None]\n',
      '(batch, d_model)'),
    q('q3', 'transposed',
      'def confusion_matrix(predictions, labels, n):\n    m = torch.zeros(n, n, dtype=torch.long)\n    for t, p in zip(labels, predictions):\n        m[p, t] += 1\n    return m\n',
      'swapped'),
    q('q3', 'row-normalised',
      'def confusion_matrix(predictions, labels, n):\n    m = torch.zeros(n, n)\n    for t, p in zip(labels, predictions):\n        m[t, p] += 1\n    return m / m.sum(1, keepdim=True)\n',
      'counts'),
    q('q3', 'wrong shape',
      'def confusion_matrix(predictions, labels, n):\n    return torch.bincount(labels * n + predictions, minlength=n * n)\n',
      '(3, 3)'),
    q('q3', 'only correct ones',
      'def confusion_matrix(predictions, labels, n):\n    m = torch.zeros(n, n, dtype=torch.long)\n    for t, p in zip(labels, predictions):\n        m[t, t] += int(t == p)\n    return m\n',
      'add up'),
]
