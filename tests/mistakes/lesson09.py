"""Typical wrong answers to the exercises of lesson09 that no declared table holds, each with the phrase its
feedback must contain, and right answers written differently (which must be accepted)."""
from course_utils.exercises import lesson09

from . import Alternative, Mistake, plant

PRELUDE = "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson09", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson09", exercise, name, code, PRELUDE)


MEASURE = lesson09.q1.solution
ROTATE = lesson09.q2.solution
STEP = lesson09.q3.solution

MISTAKES = [
    # q1: predict, then measure what GQA saves
    q('q1', 'no prediction', plant(MEASURE, "predicted_parameter_fraction = (",
                                   "predicted_parameter_fraction = 'a little', ("), 'should hold a fraction'),
    q('q1', 'the saving in parameters, not a fraction', plant(MEASURE, "predicted_parameter_fraction = (",
                                                              "predicted_parameter_fraction = 14_336 + 0 * ("),
      'between 0 and 1'),
    q('q1', 'the parameter fraction kept, not saved', plant(MEASURE, "predicted_parameter_fraction = (",
                                                            "predicted_parameter_fraction = 1 - ("), '1 − kept'),
    q('q1', 'only W_K and W_V counted', plant(MEASURE, "2 * 2 * 64 * (8 - 1) * 8", "0.5 * 2 * 2 * 64 * (8 - 1) * 8"),
      'only W_K and W_V depend'),
    q('q1', 'transfer: one layer only', plant(MEASURE, "/ (2 * 48 * 8 * 128 * 2))", "/ (2 * 8 * 128 * 2))"),
      'one layer'),
    q('q1', 'transfer: query heads cached', plant(MEASURE, "/ (2 * 48 * 8 * 128 * 2))", "/ (2 * 48 * 40 * 128 * 2))"),
      "40 query heads"),
    q('q1', 'transfer not set', plant(MEASURE, "cache_equals_weights_tokens = (",
                                      "cache_equals_weights_tokens = ... or ("),
      'number of tokens'),
    q('q1', 'cache and parameter fractions swapped', plant(MEASURE, "predicted_parameter_fraction = (",
                                                           "predicted_parameter_fraction = 0.875 + 0 * ("),
      'that is the saving of the cache'),
    # q2: RoPE after a cache
    q('q2', 'offsets as key minus query', plant(ROTATE, 'prompt_offsets = list(range(12))',
                                                'prompt_offsets = list(range(-11, 1))'), 'holds n − m'),
    q('q2', 'positions given as offsets', plant(ROTATE, 'prompt_offsets = list(range(12))',
                                                'prompt_offsets = list(range(-12, 0))'),
      "holds the prompt's positions"),
    q('q2', 'no offsets given', plant(ROTATE, 'prompt_offsets = list(range(12))', 'prompt_offsets = ...'),
      'now set `prompt_offsets`'),
    q('q2', 'one tensor returned', plant(ROTATE, "    return apply_rotary(q, k, positions, base)",
                                         "    return apply_rotary(q, k, positions, base)[0]"), 'tuple of 2'),
    q('q2', 'positions as floats', plant(ROTATE, "torch.arange(cache_length, cache_length + q.size(-2))",
                                         "torch.arange(cache_length, cache_length + q.size(-2)).float()"), 'raised'),
    q('q2', 'the cache length forgotten on the keys', plant(
        ROTATE, "    return apply_rotary(q, k, positions, base)",
        "    q_rotated = apply_rotary(q, q, positions, base)[0]\n"
        "    k_rotated = apply_rotary(k, k, torch.arange(k.size(-2)), base)[0]\n"
        "    return q_rotated, k_rotated"), 'differs'),
    q('q2', "the colleague's code shown on the page", "def rope(x, positions, base=10000.0):\n"
      "    d_head = x.size(-1)\n"
      "    theta = base ** (-torch.arange(0, d_head, 2).float() / d_head)\n"
      "    angles = positions.float()[:, None] * theta\n"
      "    angles = torch.cat([angles, angles], dim=-1)\n"
      "    first, second = x.chunk(2, dim=-1)\n"
      "    return x * angles.cos() + torch.cat([-second, first], dim=-1) * angles.sin()\n\n"
      "def rotate_new(q, k, cache_length, base=10000.0):\n"
      "    new = q.size(-2)\n"
      "    positions = torch.arange(cache_length - new, cache_length)\n"
      "    return rope(q, positions, base), rope(k, positions, base)\n", "the colleague's code"),
    q('q2', 'positions of the fix, not of the bug', plant(ROTATE, "prompt_positions = list(range(-12, 0))",
                                                          "prompt_positions = list(range(12))"), 'prompt_positions'),
    q('q2', 'no diagnosis', plant(ROTATE, "first_token_position = 11", "first_token_position = ..."),
      'first_token_position'),
    # q3 (capstone): cached grouped-query attention
    q('q3', "the package's attention inside", "from course_utils.modern import GroupedQueryAttention\n\n"
      + STEP.replace("class CachedAttention", "class _Unused") + "\n"
      "class CachedAttention(_Unused):\n"
      "    def forward(self, x, cache):\n"
      "        GroupedQueryAttention(x.size(-1), self.heads)\n"
      "        return super().forward(x, cache)\n", 'GroupedQueryAttention'),
    q('q3', 'biases', plant(STEP, "self.w_o = nn.Linear(d_model, d_model, bias=False)",
                            "self.w_o = nn.Linear(d_model, d_model)"), 'needs exactly'),
    q('q3', 'the whole text each step', plant(
        STEP, "        return self.w_o(out.transpose(1, 2).flatten(2))",
        "        return self.w_o(out.transpose(1, 2).flatten(2))[:, :0]"), 'shape'),
]

ALTERNATIVES = [
    right('q1', 'parameters and cache counted by hand', "from course_utils.language_model import DecoderOnlyLM\n"
          "from course_utils.modern import modern_config\n\n"
          "predicted_parameter_fraction = 0.06   # counted by hand, rounded\n\n"
          "def measure_gqa(n_kv_heads):\n"
          "    model = DecoderOnlyLM(modern_config(100, d_model=64, n_heads=8, n_kv_heads=n_kv_heads, n_layers=2,\n"
          "                                        max_len=64))\n"
          "    model.eval()\n"
          "    cache = model.new_cache()\n"
          "    with torch.no_grad():\n"
          "        model(torch.ones(4, 50, dtype=torch.long), cache)\n"
          "    size = sum(t.numel() * t.element_size()\n"
          "               for layer in cache.layers() for t in (layer.keys, layer.values))\n"
          "    return size, sum(p.numel() for p in model.parameters())\n\n"
          "(cache8, params8), (cache1, params1) = measure_gqa(8), measure_gqa(1)\n"
          "print((cache8 - cache1) / cache8, (params8 - params1) / params8)\n"
          "cache_equals_weights_tokens = torch.tensor(149_500)   # 29.4 GB / 192 KiB a token, rounded\n"),
    right('q2', "the page's rope written out", "prompt_positions = list(range(-12, 0))\nfirst_token_position = 11\n"
          "prompt_offsets = [11 - k for k in range(12)]\n\n"
          "def rotate_new(q, k, cache_length, base=10000.0):\n"
          "    def rope(x, positions):\n"
          "        d = x.size(-1)\n"
          "        theta = base ** (-torch.arange(0, d, 2).float() / d)\n"
          "        angles = positions.float()[:, None] * theta\n"
          "        angles = torch.cat([angles, angles], dim=-1)\n"
          "        first, second = x.chunk(2, dim=-1)\n"
          "        return x * angles.cos() + torch.cat([-second, first], dim=-1) * angles.sin()\n"
          "    positions = cache_length + torch.arange(q.size(-2))\n"
          "    return rope(q, positions), rope(k, positions)\n"),
    right('q2', 'complex numbers', "prompt_positions = torch.arange(-12, 0)\nfirst_token_position = (11,)\n"
          "prompt_offsets = torch.arange(12)\n\n"
          "def rotate_new(q, k, cache_length, base=10000.0):\n"
          "    def turn(x):\n"
          "        half = x.size(-1) // 2\n"
          "        theta = base ** (-2 * torch.arange(half, dtype=torch.float64) / x.size(-1))\n"
          "        where = torch.arange(cache_length, cache_length + x.size(-2), dtype=torch.float64)\n"
          "        z = torch.complex(x[..., :half].double(), x[..., half:].double())\n"
          "        z = z * torch.polar(torch.ones_like(theta), where[:, None] * theta)\n"
          "        return torch.cat([z.real, z.imag], dim=-1).float()\n"
          "    return turn(q), turn(k)\n"),
    right('q3', 'attention written out', "import math\n\n" + plant(
        STEP, "        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)",
        "        group = self.heads // self.kv_heads\n"
        "        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)\n"
        "        scores = (q @ k.transpose(-2, -1) / math.sqrt(self.d_head)).masked_fill(~allowed, float('-inf'))\n"
        "        out = scores.softmax(dim=-1) @ v")),
]
