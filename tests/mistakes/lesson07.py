"""Typical wrong answers to the exercises of lesson07, each with the phrase its feedback must contain."""
from . import Mistake

PRELUDE = 'import torch\n'


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson07", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'no shift',
      'def shift_targets(t):\n    return t, t\n',
      'no shift'),
    q('q1', 'wrong direction',
      'def shift_targets(t):\n    return t[:, 1:], t[:, :-1]\n',
      'wrong way'),
    q('q1', 'batch axis',
      'def shift_targets(t):\n    return t[:-1], t[1:]\n',
      'sequence axis'),
    q('q1', 'labels not shifted',
      'def shift_targets(t):\n    return t[:, :-1], t[:, :-1]\n',
      'tgt[:, 1:]'),
    q('q1', 'not a pair',
      'def shift_targets(t):\n    return t[:, :-1]\n',
      'pair'),
    q('q2', 'inverted',
      'def cross_attention_mask(s, n):\n    return (s == 0)[:, None, None, :]\n',
      'inverted'),
    q('q2', 'causal',
      'def cross_attention_mask(s, n):\n    return (s != 0)[:, None, None, :] & torch.ones(n, s.size(1), dtype=torch.bool).tril()\n',
      'not causal'),
    q('q2', 'no mask',
      'def cross_attention_mask(s, n):\n    return torch.ones(s.shape[0], 1, 1, s.shape[1], dtype=torch.bool)\n',
      'nothing is masked'),
    q('q2', '2-D',
      'def cross_attention_mask(s, n):\n    return s != 0\n',
      'does not broadcast'),
    q('q2', 'ints',
      'def cross_attention_mask(s, n):\n    return (s != 0).long()[:, None, None, :]\n',
      'bool'),
    q('q3', 'replace',
      'def append_to_cache(c, n):\n    return n\n',
      'only the new step'),
    q('q3', 'heads axis',
      'def append_to_cache(c, n):\n    return torch.cat([c, n], dim=1)\n',
      'wrong axis'),
    q('q3', 'stacked',
      'def append_to_cache(c, n):\n    return torch.cat([c, n.expand(-1, -1, 3, -1)], dim=1)\n',
      'wrong axis'),
    q('q3', 'new first',
      'def append_to_cache(c, n):\n    return torch.cat([n, c], dim=2)\n',
      'went first'),
]
MISTAKES += [
    q('q1', 'shifted by two positions', "def shift_targets(t):\n    return t[:, :-2], t[:, 2:]\n", 'more than one position'),
]
