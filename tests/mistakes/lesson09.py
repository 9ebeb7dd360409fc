"""Typical wrong answers to the exercises of lesson09 that no declared table holds, each with the phrase its
feedback must contain, and right answers written differently (which must be accepted)."""
from course_utils.exercises import lesson09

from . import Alternative, Mistake, plant

PRELUDE = "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson09", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson09", exercise, name, code, PRELUDE)


GEGLU = lesson09.q1.solution
ROTATE = lesson09.q2.solution
BLOCK = lesson09.q3.solution

MISTAKES = [
    # q1: GeGLU
    q('q1', 'weights changed in place', plant(GEGLU, "    hidden = F.gelu(x @ w_gate.T",
                                              "    x.add_(1.0)\n    x = x - 1.0\n    hidden = F.gelu(x @ w_gate.T"),
      'in place'),
    q('q1', 'float64 result', plant(GEGLU, "    return hidden @ w_down.T", "    return (hidden @ w_down.T).double()"),
      'torch.float32'),
    q('q1', 'a numpy array', plant(GEGLU, "    return hidden @ w_down.T", "    return (hidden @ w_down.T).numpy()"),
      'torch.Tensor'),
    # q2: RoPE after a cache
    q('q2', 'one tensor returned', plant(ROTATE, "    return apply_rotary(q, k, positions, base)",
                                         "    return apply_rotary(q, k, positions, base)[0]"), 'tuple of 2'),
    q('q2', 'positions as floats', plant(ROTATE, "torch.arange(cache_length, cache_length + q.size(-2))",
                                         "torch.arange(cache_length, cache_length + q.size(-2)).float()"), 'raised'),
    q('q2', 'the cache length forgotten on the keys', plant(
        ROTATE, "    return apply_rotary(q, k, positions, base)",
        "    q_rotated = apply_rotary(q, q, positions, base)[0]\n"
        "    k_rotated = apply_rotary(k, k, torch.arange(k.size(-2)), base)[0]\n"
        "    return q_rotated, k_rotated"), 'differs'),
]

ALTERNATIVES = [
    right('q1', 'F.linear', "def geglu(x, w_gate, w_up, w_down):\n"
          "    return F.linear(F.gelu(F.linear(x, w_gate), approximate='tanh') * F.linear(x, w_up), w_down)\n"),
    right('q1', 'the tanh formula written out', "import math\n\n"
          "def geglu(x, w_gate, w_up, w_down):\n"
          "    g = x @ w_gate.T\n"
          "    gelu = 0.5 * g * (1 + torch.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3)))\n"
          "    return (gelu * (x @ w_up.T)) @ w_down.T\n"),
    right('q2', "the page's rope written out", "def rotate_new(q, k, cache_length, base=10000.0):\n"
          "    def rope(x, positions):\n"
          "        d = x.size(-1)\n"
          "        theta = base ** (-torch.arange(0, d, 2).float() / d)\n"
          "        angles = positions.float()[:, None] * theta\n"
          "        angles = torch.cat([angles, angles], dim=-1)\n"
          "        first, second = x.chunk(2, dim=-1)\n"
          "        return x * angles.cos() + torch.cat([-second, first], dim=-1) * angles.sin()\n"
          "    positions = cache_length + torch.arange(q.size(-2))\n"
          "    return rope(q, positions), rope(k, positions)\n"),
    right('q2', 'complex numbers', "def rotate_new(q, k, cache_length, base=10000.0):\n"
          "    def turn(x):\n"
          "        half = x.size(-1) // 2\n"
          "        theta = base ** (-2 * torch.arange(half, dtype=torch.float64) / x.size(-1))\n"
          "        where = torch.arange(cache_length, cache_length + x.size(-2), dtype=torch.float64)\n"
          "        z = torch.complex(x[..., :half].double(), x[..., half:].double())\n"
          "        z = z * torch.polar(torch.ones_like(theta), where[:, None] * theta)\n"
          "        return torch.cat([z.real, z.imag], dim=-1).float()\n"
          "    return turn(q), turn(k)\n"),
]

BLOCK_MISTAKES = [
    q('q3', "the package's block inside", "from course_utils.language_model import DecoderOnlyBlock\n\n"
      + BLOCK.replace("class FusedModernBlock", "class _Unused") + "\n"
      "class FusedModernBlock(_Unused):\n"
      "    def forward(self, x, mask):\n"
      "        DecoderOnlyBlock(x.size(-1), self.heads, 4, 0.0)\n"
      "        return super().forward(x, mask)\n", 'DecoderOnlyBlock'),
    q('q3', 'x changed in place', plant(BLOCK, "        x = x + self.attend(", "        x += self.attend("),
      'in-place'),
    q('q3', 'separate projections', "class FusedModernBlock(nn.Module):\n"
      "    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):\n"
      "        super().__init__()\n"
      "        self.w_q = nn.Linear(d_model, d_model, bias=False)\n"
      "    def forward(self, x, mask):\n"
      "        return x\n", 'needs exactly'),
    q('q3', 'gradient cut at the norm', plant(BLOCK, "torch.rsqrt(x.pow(2).mean(-1, keepdim=True)",
                                              "torch.rsqrt(x.detach().pow(2).mean(-1, keepdim=True)"), 'gradient'),
]
MISTAKES += BLOCK_MISTAKES

ALTERNATIVES += [
    right('q3', 'attention written out', "import math\n\n" + plant(
        BLOCK, "        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)\n",
        "        group = self.heads // self.kv_heads\n"
        "        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)\n"
        "        scores = (q @ k.transpose(-2, -1) / math.sqrt(self.d_head)).masked_fill(~mask, float('-inf'))\n"
        "        out = scores.softmax(dim=-1) @ v\n")),
]
