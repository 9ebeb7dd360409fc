"""Typical wrong answers to the exercises of lesson08, each with the phrase its feedback must contain."""
from course_utils.exercises import lesson08

from . import Mistake, plant

PRELUDE = "import torch\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson08", exercise, name, code, message, PRELUDE)


TOP_K = lesson08.q3.solution
TOP_P = lesson08.q4.solution

MISTAKES = [
    q('q1', 'no shift',
      'def shift_for_lm(ids):\n'
      '    return ids, ids\n',
      'no shift'),
    q('q1', 'wrong direction',
      'def shift_for_lm(ids):\n'
      '    return ids[:, 1:], ids[:, :-1]\n',
      'wrong way'),
    q('q1', 'batch axis',
      'def shift_for_lm(ids):\n'
      '    return ids[:-1], ids[1:]\n',
      'batch axis'),
    q('q1', 'targets not shifted',
      'def shift_for_lm(ids):\n'
      '    return ids[:, :-1], ids[:, :-1]\n',
      'not shifted'),
    q('q1', 'shifted by two',
      'def shift_for_lm(ids):\n'
      '    return ids[:, :-2], ids[:, 2:]\n',
      'exactly one position'),
    q('q1', 'not a pair',
      'def shift_for_lm(ids):\n'
      '    return ids[:, :-1]\n',
      'pair'),
    q('q1', "the package's function",
      'from course_utils.losses import shift_for_lm\n',
      'use your own function'),
    q('q2', 'multiplied',
      'def temperature_probs(logits, t):\n'
      '    return torch.softmax(logits * t, dim=-1)\n',
      'multiplied'),
    q('q2', 'wrong axis',
      'def temperature_probs(logits, t):\n'
      '    return torch.softmax(logits / t, dim=0)\n',
      'wrong axis'),
    q('q2', 'logits returned',
      'def temperature_probs(logits, t):\n'
      '    return logits / t\n',
      'not scaled logits'),
    q('q2', 'temperature ignored',
      'def temperature_probs(logits, t):\n'
      '    return torch.softmax(logits, dim=-1)\n',
      'changed nothing'),
    q('q2', 'power without renormalising',
      'def temperature_probs(logits, t):\n'
      '    return torch.softmax(logits, dim=-1) ** (1 / t)\n',
      'sum to 1'),
    q('q3', 'removed the top k',
      plant(TOP_K, 'logits < kth_largest', 'logits >= kth_largest'),
      'removed the'),
    q('q3', 'off by one (strictly greater)',
      plant(TOP_K, 'logits < kth_largest', 'logits <= kth_largest'),
      'kept only'),
    q('q3', 'zero instead of -inf',
      plant(TOP_K, "float('-inf')", '0.0'),
      "float('-inf')"),
    q('q3', 'mask returned',
      'def top_k_filter(logits, k):\n'
      '    return logits >= logits.topk(k, dim=-1).values[..., -1:]\n',
      'not a 0/1 or bool mask'),
    q('q3', 'wrong axis',
      'def top_k_filter(logits, k):\n'
      '    kth = logits.topk(k, dim=0).values[-1:]\n'
      "    return logits.masked_fill(logits < kth, float('-inf'))\n",
      'wrong axis'),
    q('q4', 'cumulative mass including the token',
      plant(TOP_P, 'probs.cumsum(dim=-1) - probs < p', 'probs.cumsum(dim=-1) <= p'),
      'mass *before* it'),
    q('q4', 'not sorted',
      'def top_p_filter(logits, p):\n'
      '    probs = torch.softmax(logits, dim=-1)\n'
      '    keep = probs.cumsum(dim=-1) - probs < p\n'
      "    return logits.masked_fill(~keep, float('-inf'))\n",
      'sorted from most to least'),
    q('q4', 'sorted decision not mapped back',
      'def top_p_filter(logits, p):\n'
      '    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)\n'
      '    keep = probs.cumsum(dim=-1) - probs < p\n'
      "    return logits.masked_fill(~keep, float('-inf'))\n",
      'expected to keep tokens'),
    q('q4', 'zero instead of -inf',
      plant(TOP_P, "float('-inf')", '0.0'),
      "float('-inf')"),
]
