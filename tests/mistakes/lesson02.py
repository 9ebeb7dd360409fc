"""Typical wrong answers to the exercises of lesson02, each with the phrase its feedback must contain."""
from . import Mistake

PRELUDE = 'import math\nimport torch\n'


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson02", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'one per dimension',
      'def pair_frequencies(d):\n'
      '    return torch.exp(-torch.arange(d).float() * math.log(1e4) / d)',
      'd_model // 2'),
    q('q1', 'integer division',
      'def pair_frequencies(d):\n'
      '    return 1 / 10000 ** (torch.arange(0, d, 2) // d)',
      'exponent became 0'),
    q('q1', 'missing minus',
      'def pair_frequencies(d):\n'
      '    return torch.exp(torch.arange(0, d, 2).float() * math.log(1e4) / d)',
      'minus sign'),
    q('q1', 'i instead of 2i',
      'def pair_frequencies(d):\n'
      '    return 1 / 10000 ** (torch.arange(d // 2).float() / d)',
      '2i / d_model'),
    q('q1', 'wrong base',
      'def pair_frequencies(d):\n'
      '    return 1 / 1000 ** (torch.arange(0, d, 2).float() / d)',
      'exp(-2i'),
    q('q1', 'a list',
      'def pair_frequencies(d):\n'
      '    return [1.0] * (d // 2)',
      'torch.Tensor'),
    q('q2', 'halves instead of interleaved',
      'def sinusoidal_pe(max_len, d):\n'
      '    pos = torch.arange(0, max_len + 0, dtype=torch.float32)[:, None]\n'
      '    angle = pos * torch.exp(-torch.arange(0, d, 2).float() * math.log(10000.0) / d)\n'
      '    return torch.cat([angle.sin(), angle.cos()], dim=1)\n',
      'interleaves'),
    q('q2', 'sin and cos swapped',
      'def sinusoidal_pe(max_len, d):\n'
      '    pos = torch.arange(0, max_len + 0, dtype=torch.float32)[:, None]\n'
      '    angle = pos * torch.exp(-torch.arange(0, d, 2).float() * math.log(10000.0) / d)\n'
      '    t = torch.zeros(max_len, d)\n'
      '    t[:, 0::2] = angle.cos()\n'
      '    t[:, 1::2] = angle.sin()\n'
      '    return t\n',
      'swapped'),
    q('q2', 'positions from 1',
      'def sinusoidal_pe(max_len, d):\n'
      '    pos = torch.arange(1, max_len + 1, dtype=torch.float32)[:, None]\n'
      '    angle = pos * torch.exp(-torch.arange(0, d, 2).float() * math.log(10000.0) / d)\n'
      '    t = torch.zeros(max_len, d)\n'
      '    t[:, 0::2] = angle.sin()\n'
      '    t[:, 1::2] = angle.cos()\n'
      '    return t\n',
      'start at 1'),
    q('q2', 'transposed table',
      'def sinusoidal_pe(max_len, d):\n'
      '    pos = torch.arange(0, max_len + 0, dtype=torch.float32)[:, None]\n'
      '    angle = pos * torch.exp(-torch.arange(0, d, 2).float() * math.log(10000.0) / d)\n'
      '    t = torch.zeros(max_len, d)\n'
      '    t[:, 0::2] = angle.sin()\n'
      '    t[:, 1::2] = angle.cos()\n'
      '    return t.T\n',
      '(max_len, d_model)'),
    q('q2', 'i instead of 2i in the exponent',
      'def sinusoidal_pe(max_len, d):\n'
      '    pos = torch.arange(max_len).float()[:, None]\n'
      '    angle = pos / 10000 ** (torch.arange(d // 2).float() / d)\n'
      '    t = torch.zeros(max_len, d)\n'
      '    t[:, 0::2] = angle.sin()\n'
      '    t[:, 1::2] = angle.cos()\n'
      '    return t\n',
      '2i / d_model'),
    q('q2', 'frequencies rising',
      'def sinusoidal_pe(max_len, d):\n'
      '    pos = torch.arange(max_len).float()[:, None]\n'
      '    angle = pos * torch.exp(torch.arange(0, d, 2).float() * math.log(10000.0) / d)\n'
      '    t = torch.zeros(max_len, d)\n'
      '    t[:, 0::2] = angle.sin()\n'
      '    t[:, 1::2] = angle.cos()\n'
      '    return t\n',
      'minus sign'),
    q('q3', 'rotates backwards',
      'def shift_matrix(k, d):\n'
      '    blocks = []\n'
      '    for two_i in range(0, d, 2):\n'
      '        a = k / 10000 ** (two_i / d)\n'
      '        c, s = math.cos(a), math.sin(a)\n'
      '        blocks.append(torch.tensor([[c, -s], [s, c]]))\n'
      '    return torch.block_diag(*blocks)\n',
      'backwards'),
    q('q3', 'angle ignores k',
      'def shift_matrix(k, d):\n'
      '    blocks = []\n'
      '    for two_i in range(0, d, 2):\n'
      '        a = 1 / 10000 ** (two_i / d)\n'
      '        c, s = math.cos(a), math.sin(a)\n'
      '        blocks.append(torch.tensor([[c, s], [-s, c]]))\n'
      '    return torch.block_diag(*blocks)\n',
      'k · ω_i'),
    q('q3', 'one big dense rotation',
      'def shift_matrix(k, d):\n'
      '    blocks = []\n'
      '    for two_i in range(0, d, 2):\n'
      '        a = k / 10000 ** (two_i / d)\n'
      '        c, s = math.cos(a), math.sin(a)\n'
      '        blocks.append(torch.tensor([[c, s], [-s, c]]))\n'
      '    return torch.block_diag(*blocks) + 0.01\n',
      'outside the 2×2'),
    q('q3', 'wrong size',
      'def shift_matrix(k, d):\n'
      '    return torch.eye(d // 2)\n',
      'matrix'),
    q('q3', 'identity',
      'def shift_matrix(k, d):\n'
      '    return torch.eye(d)\n',
      'should equal PE[pos + 1]'),
]
MISTAKES += [
    q('q1', 'base 1000 written as a power', "def pair_frequencies(d):\n"
      "    return 1 / 1000 ** (torch.arange(0, d, 2).float() / d)\n", 'base 1000'),
    q('q2', 'base 1000', "def sinusoidal_pe(max_len, d):\n    pos = torch.arange(max_len).float()[:, None]\n"
      "    angle = pos / 1000 ** (torch.arange(0, d, 2).float() / d)\n"
      "    t = torch.zeros(max_len, d)\n    t[:, 0::2] = angle.sin()\n    t[:, 1::2] = angle.cos()\n    return t\n",
      'base 1000'),
    q('q3', 'i instead of 2i in the angle', "def shift_matrix(k, d):\n    blocks = []\n    for i in range(d // 2):\n"
      "        a = k / 10000 ** (i / d)\n        c, s = math.cos(a), math.sin(a)\n"
      "        blocks.append(torch.tensor([[c, s], [-s, c]]))\n    return torch.block_diag(*blocks)\n",
      '2i / d_model'),
]
