"""Typical wrong answers to the exercises of lesson02, each with the phrase its feedback must contain."""
from . import Alternative, Mistake

PRELUDE = ('import math\nimport torch\nimport torch.nn as nn\nfrom course_utils.data.order import OrderModel, '
           'train_order_model\nfrom course_utils.positional import SinusoidalPositionalEncoding\n')


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson02", exercise, name, code, message, PRELUDE)


MAKE = ('def make_model():\n'
        '    model = OrderModel(SinusoidalPositionalEncoding(32, 16))\n'
        '    model.per_token = nn.Sequential(nn.Linear(32, 64), nn.Linear(64, 64))\n'
        '    return model\n\n\n')
MEASURE = MAKE + ('def accuracy_without_relu(seed):\n'
                  '    return train_order_model(make_model, seed)[1]\n')

MISTAKES = [
    # q1: predict, then measure
    q('q1', 'an estimate typed in', 'my_prediction = 0.5\n\n\ndef accuracy_without_relu(seed):\n'
      '    return 0.52\n', 'all 1000 test sequences'),
    q('q1', 'prediction as a percentage', 'my_prediction = 50\n' + MEASURE, 'as a fraction (0.5 for 50'),
    q('q1', 'prediction in words', 'my_prediction = "about half"\n' + MEASURE, 'should hold a number'),
    q('q1', 'prediction above 100 %', 'my_prediction = 150\n' + MEASURE, 'should hold a number'),
    q('q1', 'prediction left out', MEASURE, 'should hold a number'),
    q('q1', 'accuracy not a function', 'my_prediction = 0.5\naccuracy_without_relu = [0.5, 0.5, 0.5]\n',
      'should be a function'),
    # q2: the other layout
    q('q2', 'float indices', 'def to_halves(d_model):\n'
      '    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)]).float()\n', 'torch.int64'),
    q('q2', 'a list', 'def to_halves(d_model):\n    return list(range(0, d_model, 2)) + list(range(1, d_model, 2))\n',
      'torch.Tensor'),
    q('q2', 'one off', 'def to_halves(d_model):\n'
      '    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)]).roll(1)\n', 'to_halves('),
    q('q2', 'layout prediction left out', 'def to_halves(d_model):\n'
      '    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])\n', 'should hold a number'),
    q('q2', 'layout prediction as a percentage', 'my_layout_prediction = 40\n\n\ndef to_halves(d_model):\n'
      '    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])\n',
      'as a fraction (0.4 for 40'),
    # q3: the shift as a rotation matrix
    q('q3', 'wrong size', 'def shift_matrix(k, d):\n    return torch.eye(d // 2)\n', 'shape'),
    q('q3', 'identity', 'def shift_matrix(k, d):\n    return torch.eye(d)\n', 'should equal PE[pos + k]'),
    q('q3', 'a sine alone', 'def shift_matrix(k, d_model):\n'
      '    angles = [k / 10000 ** (two_i / d_model) for two_i in range(0, d_model, 2)]\n'
      '    return torch.block_diag(*[torch.tensor([[math.cos(a), 0.0], [0.0, math.cos(a)]]) for a in angles])\n',
      'should equal PE[pos + k]'),
]

SOLUTION_SHIFT = ('def shift_matrix(k, d_model):\n'
                  '    blocks = []\n'
                  '    for two_i in range(0, d_model, 2):\n'
                  '        angle = k / 10000 ** (two_i / d_model)\n'
                  '        c, s = math.cos(angle), math.sin(angle)\n'
                  '        blocks.append(torch.tensor([[c, s], [-s, c]]))\n'
                  '    return torch.block_diag(*blocks)\n')

MISTAKES += [
    # q3: float64, blocks overlapping, a fixed size
    q('q3', 'float64', SOLUTION_SHIFT.replace('torch.tensor([[c, s], [-s, c]])',
                                              'torch.tensor([[c, s], [-s, c]], dtype=torch.float64)'), 'torch.float32'),
    q('q3', 'blocks one apart, overlapping', 'def shift_matrix(k, d_model):\n'
      '    m = torch.zeros(d_model, d_model)\n'
      '    for i in range(d_model // 2):\n'
      '        a = k / 10000 ** (2 * i / d_model)\n'
      '        m[i:i + 2, i:i + 2] = torch.tensor([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])\n'
      '    return m\n', 'outside the 2×2'),
    q('q3', 'd_model hard-coded as 8', SOLUTION_SHIFT.replace('range(0, d_model, 2)', 'range(0, 8, 2)'), 'shape'),
]

ALTERNATIVES = [
    Alternative('lesson02', 'q1', 'fewer steps, a tensor prediction', 'my_prediction = torch.tensor(0.5)\n' + MAKE +
                'def accuracy_without_relu(seed):\n'
                '    model, accuracy, _ = train_order_model(make_model, seed, steps=200)\n'
                '    return accuracy\n', PRELUDE),
    Alternative('lesson02', 'q1', 'a wrong prediction, an honest measurement', 'my_prediction = 0.95\n' + MEASURE,
                PRELUDE),
    Alternative('lesson02', 'q1', 'the ReLU replaced by Identity, measured by hand', 'my_prediction = 1 / 2\n'
                'from course_utils.data.order import which_comes_first\n\n\n'
                'def accuracy_without_relu(seed):\n'
                '    def build():\n'
                '        model = OrderModel(SinusoidalPositionalEncoding(32, 16))\n'
                '        model.per_token[1] = nn.Identity()\n'
                '        return model\n'
                '    model = train_order_model(build, seed)[0]\n'
                '    ids, labels = which_comes_first(1000, 16, 16, seed=2)\n'
                '    with torch.no_grad():\n'
                '        return (model(ids).argmax(-1) == labels).double().mean()\n', PRELUDE),
    Alternative('lesson02', 'q2', 'a reshape and transpose', 'my_layout_prediction = 0.9\n\n\ndef to_halves(d_model):\n'
                '    return torch.arange(d_model).reshape(-1, 2).T.flatten()\n', PRELUDE),
    Alternative('lesson02', 'q2', "inverting section 3's permutation",
                'my_layout_prediction = 0.9\n\n\ndef to_halves(d_model):\n'
                '    half = d_model // 2\n'
                '    forward = torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).flatten()\n'
                '    return torch.argsort(forward)\n', PRELUDE),
    Alternative('lesson02', 'q2', 'a list comprehension', 'my_layout_prediction = 0.9\n\n\ndef to_halves(d_model):\n'
                '    order = [j for j in range(d_model) if j % 2 == 0] + [j for j in range(d_model) if j % 2]\n'
                '    return torch.tensor(order)\n', PRELUDE),
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

MISTAKES += [
    # q4: positions after a prompt (generic contract: the whole sequence at once, the new tokens at once, the shape)
    q('q4', 'the whole sequence at once', 'def encode_after_prompt(encoding, prompt, new_tokens):\n'
      '    return encoding(torch.cat([prompt, new_tokens], dim=1))\n', 'each new token alone'),
    q('q4', 'the new tokens at once', 'def encode_after_prompt(encoding, prompt, new_tokens):\n'
      '    return torch.cat([encoding(prompt), encoding(new_tokens, offset=prompt.size(1))], dim=1)\n',
      'each new token alone'),
    q('q4', 'the new tokens only', 'def encode_after_prompt(encoding, prompt, new_tokens):\n'
      '    P = prompt.size(1)\n'
      '    return torch.cat([encoding(new_tokens[:, t:t + 1], offset=P + t) for t in range(new_tokens.size(1))], 1)\n',
      'shape'),
    q('q4', 'concatenated along the batch', 'def encode_after_prompt(encoding, prompt, new_tokens):\n'
      '    P = prompt.size(1)\n'
      '    steps = [encoding(new_tokens[:, t:t + 1], offset=P + t) for t in range(new_tokens.size(1))]\n'
      '    return torch.cat([encoding(prompt)] + steps, dim=0)\n', 'raised RuntimeError'),
]

ALTERNATIVES += [
    Alternative('lesson02', 'q4', 'a loop filling a tensor', 'def encode_after_prompt(encoding, prompt, new_tokens):\n'
                '    P, N = prompt.size(1), new_tokens.size(1)\n'
                '    out = torch.empty(prompt.size(0), P + N, prompt.size(2))\n'
                '    out[:, :P] = encoding(prompt)\n'
                '    for t in range(N):\n'
                '        out[:, P + t] = encoding(new_tokens[:, t].unsqueeze(1), P + t)[:, 0]\n'
                '    return out\n', PRELUDE),
    Alternative('lesson02', 'q4', 'everything one token at a time, a running count',
                'def encode_after_prompt(encoding, prompt, new_tokens):\n'
                '    done = prompt[:, :0]\n'
                '    for x in (prompt, new_tokens):\n'
                '        for t in range(x.size(1)):\n'
                '            done = torch.cat([done, encoding(x[:, t:t + 1], offset=done.size(1))], dim=1)\n'
                '    return done\n', PRELUDE),
]
