"""Lesson 09's checkers accept other right answers, not only the reference solution's spelling."""
import pytest

from course_utils.exercises import lesson09
from course_utils.exercises.core import CORRECT

PRELUDE = "import torch\nimport torch.nn.functional as F\n"

RIGHT_ANSWERS = [
    (lesson09.q1, "def rms_norm(x, weight, eps=1e-6):\n"
                  "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight\n"),
    (lesson09.q1, "def rms_norm(x, weight, eps=1e-6):\n    return F.rms_norm(x, (x.size(-1),), weight, eps)\n"),
    (lesson09.q2, "def apply_rope(x, positions, base=10000.0):\n"
                  "    half = x.size(-1) // 2\n"
                  "    theta = base ** (-2 * torch.arange(half, dtype=torch.float64) / x.size(-1))\n"
                  "    z = torch.complex(x[..., :half].double(), x[..., half:].double())\n"
                  "    z = z * torch.polar(torch.ones_like(theta), positions.double()[:, None] * theta)\n"
                  "    return torch.cat([z.real, z.imag], dim=-1).float()\n"),
    (lesson09.q3, "def repeat_kv_heads(kv, n_repeats):\n"
                  "    b, h, s, d = kv.shape\n"
                  "    return kv[:, :, None].expand(b, h, n_repeats, s, d).reshape(b, h * n_repeats, s, d)\n"),
    (lesson09.q4, "def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):\n"
                  "    per_token = 2 * layers * n_kv_heads * d_head\n"
                  "    return batch * seq * per_token * 2\n"),
]


@pytest.mark.parametrize("exercise, code", RIGHT_ANSWERS,
                         ids=[f"{e.name}:{i}" for i, (e, _) in enumerate(RIGHT_ANSWERS)])
def test_other_right_answers_are_accepted(exercise, code):
    result = exercise.evaluate_code(code, PRELUDE)
    assert result.status == CORRECT, result.message
