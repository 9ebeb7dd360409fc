"""Typical wrong answers to the exercises of lesson09, each with the phrase its feedback must contain, and right
answers written differently (which must be accepted)."""
from course_utils.exercises import lesson09

from . import Alternative, Mistake, plant

PRELUDE = "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson09", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson09", exercise, name, code, PRELUDE)


RMS = lesson09.q1.solution
ROPE = lesson09.q2.solution
REPEAT = lesson09.q3.solution
CACHE = lesson09.q4.solution
ROOT = "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)"
MISTAKES = [
    # q1: RMSNorm
    q('q1', "the package's block", "from course_utils.modern import RMSNorm\n\n"
      "def rms_norm(x, weight, eps=1e-6):\n    return RMSNorm(x.size(-1), eps)(x) * weight\n", 'use your own code'),
    q('q1', 'F.rms_norm', "def rms_norm(x, weight, eps=1e-6):\n"
      "    return F.rms_norm(x, (x.size(-1),), weight, eps)\n", 'torch.nn.functional.rms_norm'),
    q('q1', 'nn.RMSNorm with the gain copied', "def rms_norm(x, weight, eps=1e-6):\n"
      "    norm = nn.RMSNorm(x.shape[-1], eps=eps)\n"
      "    with torch.no_grad():\n        norm.weight.copy_(weight)\n"
      "    return norm(x)\n", 'torch.nn.RMSNorm'),
    q('q1', 'torch.rms_norm', "def rms_norm(x, weight, eps=1e-6):\n"
      "    return torch.rms_norm(x, [x.shape[-1]], weight, eps)\n", 'torch.rms_norm'),
    q('q1', 'another default eps', plant(RMS, "eps=1e-6", "eps=1e-5"), 'use the `eps` parameter'),
    q('q1', 'divided in place', "def rms_norm(x, weight, eps=1e-6):\n"
      "    x /= torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)\n"
      "    return x * weight\n", 'in place'),
    q('q1', 'root detached', plant(RMS, ROOT, ROOT + ".detach()"), 'gradient of the input `x` differs'),
    q('q1', 'float64 result', plant(RMS, "    return x /", "    x = x.double()\n    return x /"), 'torch.float32'),
    q('q1', 'hard-coded d_model', plant(RMS, "x.pow(2).mean(dim=-1, keepdim=True)",
                                        "x.pow(2).sum(dim=-1, keepdim=True) / 8"), 'differs'),
    q('q1', 'gain detached', plant(RMS, " * weight\n", " * weight.detach()\n"),
      'no gradient reaches the input `weight`'),
    # q2: RoPE
    q('q2', "the package's rotation", "from course_utils.modern import apply_rotary\n\n"
      "def apply_rope(x, positions, base=10000.0):\n    return apply_rotary(x, x, positions, base)[0]\n",
      'to do the work'),
    q('q2', 'float64 frequencies', plant(ROPE, "torch.arange(0, d, 2).float()", "torch.arange(0, d, 2).double()"),
      'torch.float32'),
    q('q2', 'rotated in place', plant(ROPE, "    return x * angles.cos() + rotated_half * angles.sin()\n",
                                      "    return x.mul_(angles.cos()).add_(rotated_half * angles.sin())\n"),
      'in place'),
    q('q2', 'hard-coded d_head', plant(ROPE, "d = x.size(-1)", "d = 8"), 'raised'),
    q('q2', "the package's tables", "from course_utils.modern import rotary_embedding, rotate_half\n\n"
      "def apply_rope(x, positions, base=10000.0):\n"
      "    cos, sin = rotary_embedding(positions, x.size(-1), base)\n"
      "    return x * cos + rotate_half(x) * sin\n", 'to do the work'),
    q('q2', 'half-rotation detached', plant(ROPE, "x.chunk(2, dim=-1)", "x.detach().chunk(2, dim=-1)"),
      'gradient of the input `x` differs'),
    # q3: repeat K/V heads
    q('q3', "the package's function", "from course_utils.modern import repeat_kv as repeat_kv_heads\n",
      'use your own code'),
    q('q3', 'copies concatenated', "def repeat_kv_heads(kv, n_repeats):\n"
      "    return torch.cat([kv] * n_repeats, dim=1)\n", 'tiled'),
    q('q3', 'new axis in front of the heads', "def repeat_kv_heads(kv, n_repeats):\n"
      "    b, h, s, d = kv.shape\n"
      "    return kv[:, None].expand(b, n_repeats, h, s, d).reshape(b, n_repeats * h, s, d)\n", 'tiled'),
    q('q3', 'hard-coded n_repeats', plant(REPEAT, "repeat_interleave(n_repeats", "repeat_interleave(2"),
      'expected shape'),
    q('q3', 'view that needs a contiguous input', "def repeat_kv_heads(kv, n_repeats):\n"
      "    b, h, s, d = kv.shape\n"
      "    return kv.view(b * h, s, d).repeat_interleave(n_repeats, dim=0).view(b, h * n_repeats, s, d)\n",
      'transposed view'),
    q('q3', 'squeezed single head', "def repeat_kv_heads(kv, n_repeats):\n"
      "    return kv.squeeze(1).repeat_interleave(n_repeats, dim=1)\n", 'expected shape'),
    q('q3', 'rebuilt from a list', "def repeat_kv_heads(kv, n_repeats):\n"
      "    return torch.tensor(kv.repeat_interleave(n_repeats, dim=1).tolist())\n", 'carries no gradient'),
    # q4: KV-cache bytes
    q('q4', 'true division', "def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):\n"
      "    return 2 * batch * seq * layers * n_heads * d_head * 2 * n_kv_heads / n_heads\n", 'return an int'),
    q('q4', 'hard-coded d_head', plant(CACHE, "* d_head *", "* 128 *"), 'should be'),
    q('q4', 'a float tensor', "def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):\n"
      "    return torch.tensor(2.0 * batch * seq * layers * n_kv_heads * d_head * 2)\n", 'return an int'),
    q('q4', "the package's formula", "from course_utils.modern import kv_cache_bytes\n\n"
      "def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):\n"
      "    return kv_cache_bytes(batch, seq, layers, n_kv_heads, d_head, 2)\n", 'use your own code'),
]

MISTAKES += [  # a constant that shows only on some inputs
    q('q1', 'eps of 1e-12', plant(RMS, "keepdim=True) + eps)", "keepdim=True) + 1e-12)"), 'use the `eps` parameter'),
]

ALTERNATIVES = [
    # q1 (the first two were tests/test_modern_exercises.py's right answers; F.rms_norm is now forbidden)
    right('q1', 'rsqrt', "def rms_norm(x, weight, eps=1e-6):\n"
          "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight\n"),
    right('q1', 'einsum and a float64 detour', "def rms_norm(x, weight, eps=1e-6):\n"
          "    h = x.double()\n"
          "    ms = torch.einsum('bsd,bsd->bs', h, h)[..., None] / h.shape[-1]\n"
          "    return (h / (ms + eps).sqrt() * weight.double()).to(x.dtype)\n"),
    right('q1', 'square, add, sqrt chained', "def rms_norm(x, weight, eps=1e-6):\n"
          "    rms = x.square().mean(dim=2, keepdim=True).add(eps).sqrt()\n"
          "    return weight * (x / rms)\n"),
    # q2
    right('q2', 'complex numbers', "def apply_rope(x, positions, base=10000.0):\n"
          "    half = x.size(-1) // 2\n"
          "    theta = base ** (-2 * torch.arange(half, dtype=torch.float64) / x.size(-1))\n"
          "    z = torch.complex(x[..., :half].double(), x[..., half:].double())\n"
          "    z = z * torch.polar(torch.ones_like(theta), positions.double()[:, None] * theta)\n"
          "    return torch.cat([z.real, z.imag], dim=-1).float()\n"),
    right('q2', "the package's rotate_half", "from course_utils.modern import rotate_half\n\n"
          "def apply_rope(x, positions, base=10000.0):\n"
          "    d = x.shape[-1]\n"
          "    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32) / d))\n"
          "    freqs = torch.outer(positions.to(torch.float32), inv_freq)\n"
          "    emb = torch.cat((freqs, freqs), dim=-1)\n"
          "    return x * emb.cos() + rotate_half(x) * emb.sin()\n"),
    right('q2', 'the two halves written out', "def apply_rope(x, positions, base=10000.0):\n"
          "    d = x.size(-1)\n"
          "    theta = torch.pow(base, -torch.arange(0, d, 2).float() / d)\n"
          "    angles = positions[:, None].float() * theta[None, :]\n"
          "    cos, sin = angles.cos(), angles.sin()\n"
          "    x1, x2 = x[..., :d // 2], x[..., d // 2:]\n"
          "    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)\n"),
    # q3
    right('q3', 'expand and reshape', "def repeat_kv_heads(kv, n_repeats):\n"
          "    b, h, s, d = kv.shape\n"
          "    return kv[:, :, None].expand(b, h, n_repeats, s, d).reshape(b, h * n_repeats, s, d)\n"),
    right('q3', 'stack and flatten', "def repeat_kv_heads(kv, n_repeats):\n"
          "    return torch.stack([kv] * n_repeats, dim=2).flatten(1, 2)\n"),
    right('q3', 'index list', "def repeat_kv_heads(kv, n_repeats):\n"
          "    heads = [h // n_repeats for h in range(kv.size(1) * n_repeats)]\n"
          "    return kv[:, heads]\n"),
    # q4
    right('q4', 'per token first', "def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):\n"
          "    per_token = 2 * layers * n_kv_heads * d_head\n"
          "    return batch * seq * per_token * 2\n"),
    right('q4', 'numpy product', "def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):\n"
          "    return np.prod([2, batch, seq, layers, n_kv_heads, d_head, 2], dtype=np.int64)\n"),
    right('q4', 'a 0-d integer tensor', "def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):\n"
          "    bytes_per_value = torch.tensor(2)\n"
          "    return 2 * batch * seq * layers * n_kv_heads * d_head * bytes_per_value\n"),
]

# ---------------------------------------------------------------------------- q5 (capstone): the modern block
BLOCK = lesson09.q5.solution
BLOCK_PRELUDE = PRELUDE + "import math\n\n" + RMS + "\n" + ROPE + "\n" + REPEAT + "\n"   # exercises 1-3 done


def block(name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson09", "q5", name, code, message, BLOCK_PRELUDE)


def block_right(name: str, code: str) -> Alternative:
    return Alternative("lesson09", "q5", name, code, BLOCK_PRELUDE)


MISTAKES += [
    block("the package's block imported", "from course_utils.language_model import DecoderOnlyBlock as ModernBlock\n",
          'use your own class'),
    block('SwiGLU gate active in eval mode only',
          plant(BLOCK, "return self.down(F.silu(self.gate(x)) * self.up(x))",
                "return self.down((self.gate(x) if self.training else F.silu(self.gate(x))) * self.up(x))"),
          'computes differently in train mode and in eval mode'),
    block("the package's attention inside",
          plant(BLOCK, "        self.self_attn = GroupedQueryAttention(d_model, n_heads, n_kv_heads, rope_base)\n",
                "        from course_utils.modern import GroupedQueryAttention as PackageAttention\n"
                "        self.self_attn = PackageAttention(d_model, n_heads, bias=False, n_kv_heads=n_kv_heads,\n"
                "                                          rope_base=rope_base)\n"),
          'use your own code'),
    block("torch's nn.RMSNorm", plant(BLOCK, "        self.norm = RMSNormLayer(d_model, eps)\n",
                                      "        self.norm = nn.RMSNorm(d_model, eps=eps)\n"), 'use your own code'),
    block("torch's F.rms_norm", plant(BLOCK, "return rms_norm(x, self.weight, self.eps)",
                                      "return F.rms_norm(x, (x.size(-1),), self.weight, self.eps)"),
          'use your own code'),
    block("the package's SwiGLU", plant(BLOCK, "        self.feed_forward = SwiGLU(d_model, d_ff)\n",
                                        "        from course_utils import modern\n"
                                        "        self.feed_forward = modern.SwiGLUFeedForward(d_model, d_ff)\n"),
          'use your own code'),
    block("the package's rotation", plant(BLOCK, "        q = apply_rope(q, positions, self.rope_base)",
                                          "        from course_utils.modern import apply_rotary\n"
                                          "        q, _ = apply_rotary(q, q, positions, self.rope_base)\n"
                                          "        q = q"), 'use your own code'),
    block("the package's repeat_kv", plant(BLOCK, "k, v = repeat_kv_heads(k, groups), repeat_kv_heads(v, groups)",
                                           "k, v = __import__('course_utils.modern', fromlist=['x']).repeat_kv(k, "
                                           "groups), __import__('course_utils.modern', fromlist=['x']).repeat_kv(v, "
                                           "groups)"), 'use your own code'),
    block('values rotated too', plant(BLOCK, "        groups = self.n_heads // self.n_kv_heads\n",
                                      "        v = apply_rope(v, positions, self.rope_base)\n"
                                      "        groups = self.n_heads // self.n_kv_heads\n"),
          'values are rotated too'),
    block('adjacent pairs rotated',
          plant(BLOCK, "    first, second = x.chunk(2, dim=-1)\n"
                       "    rotated_half = torch.cat([-second, first], dim=-1)\n"
                       "    return x * angles.cos() + rotated_half * angles.sin()\n",
                "    angles = angles[..., :d // 2].repeat_interleave(2, dim=-1)\n"
                "    rotated = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)\n"
                "    return x * angles.cos() + rotated * angles.sin()\n"),
          'adjacent dimensions'),
    block('no RoPE', plant(plant(BLOCK, "        q = apply_rope(q, positions, self.rope_base)", "        q = q"),
                           "        k = apply_rope(k, positions, self.rope_base)", "        k = k"),
          'no position reaches'),
    block('only the queries rotated', plant(BLOCK, "        k = apply_rope(k, positions, self.rope_base)",
                                            "        k = k"), 'only the queries'),
    block('K/V heads tiled', plant(BLOCK, "return kv.repeat_interleave(n_repeats, dim=1)",
                                   "return kv.repeat(1, n_repeats, 1, 1)"), 'tiled'),
    block('LayerNorm centring kept', plant(BLOCK, "def rms_norm(x, weight, eps=1e-6):\n",
                                           "def rms_norm(x, weight, eps=1e-6):\n"
                                           "    x = x - x.mean(dim=-1, keepdim=True)\n"), 'subtracts the mean'),
    block('eps outside the square root', plant(BLOCK, "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)",
                                               "(torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + eps)"),
          'outside the square root'),
    block('eps not passed on', plant(BLOCK, "return rms_norm(x, self.weight, self.eps)",
                                     "return rms_norm(x, self.weight)"), 'pass eps on'),
    block('gain missing', plant(BLOCK, "return rms_norm(x, self.weight, self.eps)",
                                "return rms_norm(x, torch.ones_like(self.weight), self.eps)"), 'gain is missing'),
    block('SiLU on up instead of gate', plant(BLOCK, "F.silu(self.gate(x)) * self.up(x)",
                                              "self.gate(x) * F.silu(self.up(x))"), 'SiLU is applied to `up`'),
    block('GELU gate', plant(BLOCK, "F.silu(self.gate(x))", "F.gelu(self.gate(x))"), 'GELU'),
    block('no gate', plant(BLOCK, "self.down(F.silu(self.gate(x)) * self.up(x))", "self.down(F.silu(self.up(x)))"),
          'gate is missing'),
    block('Post-norm', plant(BLOCK, "return x + sublayer(self.norm(x))", "return self.norm(x + sublayer(x))"),
          'Post-norm'),
    block('residual missing', plant(BLOCK, "return x + sublayer(self.norm(x))", "return sublayer(self.norm(x))"),
          'residual connection is missing'),
    block('scaled by sqrt(d_model)', plant(BLOCK, "/ math.sqrt(self.d_head)", "/ math.sqrt(d_model)"),
          '1/√d_model'),
    block('mask ignored', plant(BLOCK, "        if mask is not None:\n            scores = scores.masked_fill(~mask, "
                                       "float(\"-inf\"))\n", ""), 'mask is ignored'),
    block('always causal (the given mask ignored)',
          plant(BLOCK, "        if mask is not None:\n"
                       "            scores = scores.masked_fill(~mask, float(\"-inf\"))\n",
                "        causal = torch.ones(seq, seq, dtype=torch.bool).tril()\n"
                "        scores = scores.masked_fill(~causal, float(\"-inf\"))\n"),
          'the mask you are given'),
    block('rope_base not passed on', plant(BLOCK, "self.rope_base = rope_base", "self.rope_base = 10000.0"),
          'rope_base='),
    block('as many K/V heads as query heads',
          plant(BLOCK, "n_kv_heads * self.d_head, bias=False)   # fewer K/V heads", "d_model, bias=False)"),
          'has shape'),
    block('biases left on', plant(BLOCK, "self.gate = nn.Linear(d_model, d_ff, bias=False)",
                                  "self.gate = nn.Linear(d_model, d_ff)"), 'no biases'),
    block('one RMSNorm for both sublayers', plant(BLOCK, "        self.ff_block = PreNorm(d_model, eps)\n",
                                                  "        self.ff_block = self.attn_block\n"),
          'one and the same'),
    block('heads split without the transpose',
          plant(BLOCK, "q = self.w_q(x).view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)",
                "q = self.w_q(x).view(batch, self.n_heads, seq, self.d_head)"), 'differs'),
    block('residual added in place', plant(BLOCK, "return x + sublayer(self.norm(x))",
                                           "x += sublayer(self.norm(x))\n        return x"), 'in place'),
    block('positions of a fixed length', plant(BLOCK, "positions = torch.arange(seq, device=x.device)",
                                               "positions = torch.arange(8)"), 'raised'),
]

ALTERNATIVES += [
    block_right('F.scaled_dot_product_attention with enable_gqa, containers, a float32 detour',
                'class Norm(nn.Module):\n'
                '    def __init__(self, d, eps):\n'
                '        super().__init__()\n'
                '        self.weight = nn.Parameter(torch.ones(d))\n'
                '        self.eps = eps\n\n'
                '    def forward(self, x):\n'
                '        return rms_norm(x.float(), self.weight, self.eps).to(x.dtype)\n\n\n'
                'class Attention(nn.Module):\n'
                '    def __init__(self, d_model, n_heads, n_kv_heads, base):\n'
                '        super().__init__()\n'
                '        self.h, self.kv, self.base = n_heads, n_kv_heads, base\n'
                '        self.w_q = nn.Linear(d_model, d_model, bias=False)\n'
                '        self.w_k = nn.Linear(d_model, d_model // n_heads * n_kv_heads, bias=False)\n'
                '        self.w_v = nn.Linear(d_model, d_model // n_heads * n_kv_heads, bias=False)\n'
                '        self.w_o = nn.Linear(d_model, d_model, bias=False)\n\n'
                '    def forward(self, x, mask):\n'
                '        b, s, d = x.shape\n'
                '        q = self.w_q(x).reshape(b, s, self.h, -1).permute(0, 2, 1, 3)\n'
                '        k = self.w_k(x).reshape(b, s, self.kv, -1).permute(0, 2, 1, 3)\n'
                '        v = self.w_v(x).reshape(b, s, self.kv, -1).permute(0, 2, 1, 3)\n'
                '        pos = torch.arange(s)\n'
                '        q, k = apply_rope(q, pos, self.base), apply_rope(k, pos, self.base)\n'
                '        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=self.kv != self.h)\n'
                '        return self.w_o(out.permute(0, 2, 1, 3).reshape(b, s, d))\n\n\n'
                'class ModernBlock(nn.Module):\n'
                '    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):\n'
                '        super().__init__()\n'
                '        self.self_attn = Attention(d_model, n_heads, n_kv_heads, rope_base)\n'
                '        self.feed_forward = nn.Module()\n'
                '        self.feed_forward.gate = nn.Linear(d_model, d_ff, bias=False)\n'
                '        self.feed_forward.up = nn.Linear(d_model, d_ff, bias=False)\n'
                '        self.feed_forward.down = nn.Linear(d_ff, d_model, bias=False)\n'
                '        self.attn_block, self.ff_block = nn.Module(), nn.Module()\n'
                '        self.attn_block.norm = Norm(d_model, eps)\n'
                '        self.ff_block.norm = Norm(d_model, eps)\n\n'
                '    def forward(self, x, mask=None):\n'
                '        x = x + self.self_attn(self.attn_block.norm(x), mask)\n'
                '        h = self.ff_block.norm(x)\n'
                '        f = self.feed_forward\n'
                '        g = f.gate(h)\n'
                '        return x + f.down(g * torch.sigmoid(g) * f.up(h))\n'),
    block_right('einsum attention, finfo.min masking, the heads repeated after RoPE by expand',
                plant(plant(BLOCK,
                            "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)            "
                            "# (batch, heads, seq, seq)\n"
                            "        if mask is not None:\n"
                            "            scores = scores.masked_fill(~mask, float(\"-inf\"))\n"
                            "        out = torch.softmax(scores, dim=-1) @ v                              "
                            "# (batch, heads, seq, d_head)\n",
                            "        scores = torch.einsum('bhqd,bhkd->bhqk', q, k) * self.d_head ** -0.5\n"
                            "        if mask is not None:\n"
                            "            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)\n"
                            "        out = torch.einsum('bhqk,bhkd->bhqd', scores.softmax(-1), v)\n"),
                      "k, v = repeat_kv_heads(k, groups), repeat_kv_heads(v, groups)",
                      "k = k[:, :, None].expand(-1, -1, groups, -1, -1).flatten(1, 2)\n"
                      "        v = v[:, :, None].expand(-1, -1, groups, -1, -1).flatten(1, 2)")),
]
