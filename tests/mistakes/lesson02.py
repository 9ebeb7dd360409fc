"""Typical wrong answers to the exercises of lesson02, each with the phrase its feedback must contain."""
from . import Alternative, Mistake

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

SOLUTION_TABLE = ('def sinusoidal_pe(max_len, d_model):\n'
                  '    position = torch.arange(max_len, dtype=torch.float32)[:, None]\n'
                  '    frequency = torch.exp(-torch.arange(0, d_model, 2, dtype=torch.float32)\n'
                  '                          * math.log(10000.0) / d_model)\n'
                  '    table = torch.zeros(max_len, d_model)\n'
                  '    table[:, 0::2] = torch.sin(position * frequency)\n'
                  '    table[:, 1::2] = torch.cos(position * frequency)\n'
                  '    return table\n')
SOLUTION_SHIFT = ('def shift_matrix(k, d_model):\n'
                  '    blocks = []\n'
                  '    for two_i in range(0, d_model, 2):\n'
                  '        angle = k / 10000 ** (two_i / d_model)\n'
                  '        c, s = math.cos(angle), math.sin(angle)\n'
                  '        blocks.append(torch.tensor([[c, s], [-s, c]]))\n'
                  '    return torch.block_diag(*blocks)\n')

MISTAKES += [
    # q1: float64, a size written as a number, log10 for ln, NumPy
    q('q1', 'float64', 'def pair_frequencies(d):\n'
      '    return torch.exp(-torch.arange(0, d, 2, dtype=torch.float64) * math.log(10000.0) / d)\n', 'torch.float32'),
    q('q1', 'd_model hard-coded as 512', 'def pair_frequencies(d):\n'
      '    return torch.exp(-torch.arange(0, d, 2).float() * math.log(10000.0) / 512)\n', 'do not hard-code'),
    q('q1', 'log10 for ln', 'def pair_frequencies(d):\n'
      '    return torch.exp(-torch.arange(0, d, 2).float() * math.log10(10000.0) / d)\n', 'math.log10'),
    q('q1', 'a NumPy array', 'import numpy as np\n\n\ndef pair_frequencies(d):\n'
      '    return np.exp(-np.arange(0, d, 2) * math.log(10000.0) / d)\n', 'torch.Tensor'),
    q('q1', 'a straight line', 'def pair_frequencies(d):\n    return torch.linspace(1.0, 1e-4, d // 2)\n',
      'ω_i = exp(-2i'),
    # q2: float64, a batch of one squeezed, each column its own frequency, sizes swapped
    q('q2', 'float64 table', SOLUTION_TABLE.replace('torch.zeros(max_len, d_model)',
                                                    'torch.zeros(max_len, d_model, dtype=torch.float64)'),
      'torch.float32'),
    q('q2', 'squeezed', SOLUTION_TABLE.replace('return table', 'return table.squeeze()'), '(max_len, d_model)'),
    q('q2', 'each column its own frequency', 'def sinusoidal_pe(max_len, d_model):\n'
      '    table = torch.zeros(max_len, d_model)\n'
      '    for pos in range(max_len):\n'
      '        for i in range(d_model):\n'
      '            angle = pos / 10000 ** (i / d_model)\n'
      '            table[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)\n'
      '    return table\n', 'share one frequency'),
    q('q2', 'sin and cos stacked, not interleaved', 'def sinusoidal_pe(max_len, d_model):\n'
      '    pos = torch.arange(max_len).float()[:, None]\n'
      '    angle = pos * torch.exp(-torch.arange(0, d_model, 2).float() * math.log(10000.0) / d_model)\n'
      '    return torch.stack([angle.sin(), angle.cos()], dim=1).reshape(max_len, d_model)\n',
      'interleaves'),
    q('q2', 'd_model hard-coded as 512',
      SOLUTION_TABLE.replace('math.log(10000.0) / d_model', 'math.log(10000.0) / 512'), 'do not hard-code'),
    # q3: float64, blocks overlapping, a fixed size
    q('q3', 'float64', SOLUTION_SHIFT.replace('torch.tensor([[c, s], [-s, c]])',
                                              'torch.tensor([[c, s], [-s, c]], dtype=torch.float64)'), 'torch.float32'),
    q('q3', 'blocks one apart, overlapping', 'def shift_matrix(k, d_model):\n'
      '    m = torch.zeros(d_model, d_model)\n'
      '    for i in range(d_model // 2):\n'
      '        a = k / 10000 ** (2 * i / d_model)\n'
      '        m[i:i + 2, i:i + 2] = torch.tensor([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])\n'
      '    return m\n', 'outside the 2×2'),
    q('q3', 'd_model hard-coded as 8', SOLUTION_SHIFT.replace('range(0, d_model, 2)', 'range(0, 8, 2)'), 'matrix'),
    q('q3', 'k in degrees', SOLUTION_SHIFT.replace('c, s = math.cos(angle), math.sin(angle)',
                                                   'a = math.radians(angle)\n        c, s = math.cos(a), math.sin(a)'),
      'should equal PE[pos + 1]'),
]

ALTERNATIVES = [
    Alternative('lesson02', 'q1', 'the power form', 'def pair_frequencies(d_model):\n'
                '    return 1.0 / 10000 ** (torch.arange(0, d_model, 2) / d_model)\n', PRELUDE),
    Alternative('lesson02', 'q1', 'float64, then float32', 'def pair_frequencies(d_model):\n'
                '    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)\n'
                '    return torch.pow(10000.0, -two_i / d_model).float()\n', PRELUDE),
    Alternative('lesson02', 'q1', 'logspace', 'def pair_frequencies(d_model):\n'
                '    return torch.logspace(0, -4 * (d_model - 2) / d_model, d_model // 2)\n', PRELUDE),
    Alternative('lesson02', 'q1', 'a list comprehension', 'def pair_frequencies(d_model):\n'
                '    return torch.tensor([math.exp(-i * math.log(10000) / d_model) for i in range(0, d_model, 2)])\n',
                PRELUDE),
    Alternative('lesson02', 'q2', 'stacked and flattened', 'def sinusoidal_pe(max_len, d_model):\n'
                '    pos = torch.arange(max_len)[:, None]\n'
                '    angle = pos * torch.pow(torch.tensor(1e-4), torch.arange(0, d_model, 2) / d_model)\n'
                '    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)\n', PRELUDE),
    Alternative('lesson02', 'q2', 'a loop over positions and pairs', 'def sinusoidal_pe(max_len, d_model):\n'
                '    table = torch.zeros(max_len, d_model)\n'
                '    for pos in range(max_len):\n'
                '        for i in range(0, d_model, 2):\n'
                '            angle = pos / 10000 ** (i / d_model)\n'
                '            table[pos, i] = math.sin(angle)\n'
                '            table[pos, i + 1] = math.cos(angle)\n'
                '    return table\n', PRELUDE),
    Alternative('lesson02', 'q2', 'float64, then float32', 'def sinusoidal_pe(max_len, d_model):\n'
                '    pos = torch.arange(max_len, dtype=torch.float64)[:, None]\n'
                '    angle = pos / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)\n'
                '    table = torch.empty(max_len, d_model, dtype=torch.float64)\n'
                '    table[:, ::2], table[:, 1::2] = angle.sin(), angle.cos()\n'
                '    return table.float()\n', PRELUDE),
    Alternative('lesson02', 'q3', 'the one-step rotation to the power k', 'def shift_matrix(k, d_model):\n'
                '    m = torch.zeros(d_model, d_model, dtype=torch.float64)\n'
                '    for i in range(0, d_model, 2):\n'
                '        w = 10000 ** (-i / d_model)\n'
                '        c, s = math.cos(w), math.sin(w)\n'
                '        m[i:i + 2, i:i + 2] = torch.tensor([[c, s], [-s, c]])\n'
                '    return torch.linalg.matrix_power(m, k).float()\n', PRELUDE),
    Alternative('lesson02', 'q3', 'vectorised entries', 'def shift_matrix(k, d_model):\n'
                '    angle = k * torch.exp(-torch.arange(0, d_model, 2).float() * math.log(10000.0) / d_model)\n'
                '    m = torch.zeros(d_model, d_model)\n'
                '    even = torch.arange(0, d_model, 2)\n'
                '    m[even, even] = angle.cos()\n'
                '    m[even + 1, even + 1] = angle.cos()\n'
                '    m[even, even + 1] = angle.sin()\n'
                '    m[even + 1, even] = -angle.sin()\n'
                '    return m\n', PRELUDE),
]
