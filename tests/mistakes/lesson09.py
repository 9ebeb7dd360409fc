"""Typical wrong answers to the exercises of lesson09, each with the phrase its feedback must contain."""
from course_utils.exercises import lesson09

from . import Mistake, plant

PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson09", exercise, name, code, message, PRELUDE)


RMS = lesson09.q1.solution
ROPE = lesson09.q2.solution
REPEAT = lesson09.q3.solution
CACHE = lesson09.q4.solution
MISTAKES = [
    # q1: RMSNorm
    q('q1', "the package's block", "from course_utils.modern import RMSNorm\n\n"
      "def rms_norm(x, weight, eps=1e-6):\n    return RMSNorm(x.size(-1), eps)(x) * weight\n", 'use your own function'),
    q('q1', 'mean subtracted (LayerNorm)',
      plant(RMS, "    return x / torch.sqrt(x.pow(2)",
            "    x = x - x.mean(-1, keepdim=True)\n    return x / torch.sqrt(x.pow(2)"),
      'that is LayerNorm'),
    q('q1', 'gain forgotten', plant(RMS, " * weight\n", "\n"), 'gain is missing'),
    q('q1', 'no square root', plant(RMS, "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)",
                                    "(x.pow(2).mean(dim=-1, keepdim=True) + eps)"), 'square root'),
    q('q1', 'eps outside the root', plant(RMS, "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)",
                                          "(torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + eps)"), 'outside'),
    q('q1', 'L2 norm instead of RMS', plant(RMS, "torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)",
                                            "x.norm(dim=-1, keepdim=True)"), 'L2 norm'),
    q('q1', 'over the sequence', plant(RMS, "mean(dim=-1", "mean(dim=1"), 'over the sequence'),
    # q2: RoPE
    q('q2', "the package's rotation", "from course_utils.modern import apply_rotary\n\n"
      "def apply_rope(x, positions, base=10000.0):\n    return apply_rotary(x, x, positions, base)[0]\n",
      'hands the work to the package'),
    q('q2', 'adjacent pairs instead of halves',
      plant(plant(ROPE,
                  "    angles = torch.cat([angles, angles], dim=-1)                     # (seq, d): both halves\n",
                  ""),
            "    first, second = x.chunk(2, dim=-1)\n    rotated_half = torch.cat([-second, first], dim=-1)\n"
            "    return x * angles.cos() + rotated_half * angles.sin()\n",
            "    even, odd = x[..., 0::2], x[..., 1::2]\n"
            "    return torch.stack([even * angles.cos() - odd * angles.sin(),\n"
            "                        even * angles.sin() + odd * angles.cos()], dim=-1).flatten(-2)\n"),
      'adjacent pairs'),
    q('q2', 'sin with the wrong sign',
      plant(ROPE, "torch.cat([-second, first], dim=-1)", "torch.cat([second, -first], dim=-1)"),
      'backwards'),
    q('q2', 'positions ignored', plant(ROPE, "positions.float()[:, None]", "torch.arange(x.size(-2)).float()[:, None]"),
      'positions 0..seq-1'),
    q('q2', 'exponent without the 2',
      plant(ROPE, "torch.arange(0, d, 2).float() / d", "torch.arange(d // 2).float() / d"),
      'frequencies are off'),
    q('q2', 'exponent sign missing', plant(ROPE, "base ** (-torch.arange", "base ** (torch.arange"), "sign is missing"),
    q('q2', 'no rotation at all', "def apply_rope(x, positions, base=10000.0):\n    return x.clone()\n",
      'nothing was rotated'),
    # q3: repeat K/V heads
    q('q3', "the package's function", "from course_utils.modern import repeat_kv as repeat_kv_heads\n",
      'use your own function'),
    q('q3', 'tiled instead of interleaved',
      plant(REPEAT, "kv.repeat_interleave(n_repeats, dim=1)", "kv.repeat(1, n_repeats, 1, 1)"),
      'tiled'),
    q('q3', 'wrong axis', plant(REPEAT, "dim=1", "dim=2"), 'dim 1'),
    q('q3', 'not repeated', "def repeat_kv_heads(kv, n_repeats):\n    return kv\n", 'expected shape'),
    q('q3', 'heads reversed', plant(REPEAT, "kv.repeat_interleave(n_repeats, dim=1)",
                                    "kv.flip(1).repeat_interleave(n_repeats, dim=1)"), 'in a row'),
    # q4: KV-cache bytes
    q('q4', 'all query heads cached', plant(CACHE, "* n_kv_heads *", "* n_heads *"), 'n_kv_heads K/V heads'),
    q('q4', 'keys only', plant(CACHE, "return 2 * batch", "return batch"), 'keys *and* values'),
    q('q4', 'float32 bytes', plant(CACHE, "* d_head * 2\n", "* d_head * 4\n"), 'float32'),
    q('q4', 'one layer only', plant(CACHE, "* layers ", ""), 'number of layers'),
    q('q4', 'a float', plant(CACHE, "return 2", "return 2.0"), 'return an int'),
]
