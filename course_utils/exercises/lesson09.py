"""Exercises of notebook 09 (the modern block): RMSNorm by hand, applying RoPE, repeating K/V heads, the KV-cache
size of grouped-query attention."""
from __future__ import annotations

import torch

from ..modern import RMSNorm, apply_rotary, kv_cache_bytes, repeat_kv, rotate_half
from .asserts import as_tensor, close, max_difference, own_function
from .core import Exercise, ExerciseFailure

EPS = 1e-6


def example_vectors(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``x (2, 4, 8)``: a tiny token (root mean square ~1e-3, where eps matters), then tokens with a non-zero mean
    and growing scales; and a gain ``weight (8,)``."""
    generator = torch.Generator().manual_seed(seed)
    scales, shifts = torch.tensor([1e-3, 1.0, 5.0, 40.0]), torch.tensor([0.0, 0.7, 0.7, 0.7])
    x = torch.randn(2, 4, 8, generator=generator) * scales[None, :, None] + shifts[None, :, None]
    weight = torch.randn(8, generator=generator)
    return x, weight


def check_rms_norm(ns) -> None:
    x, weight = example_vectors()
    function = own_function(ns["rms_norm"], "rms_norm", "course_utils.modern.RMSNorm")
    got = as_tensor(function(x.clone(), weight.clone()), "rms_norm", tuple(x.shape), "(batch, seq, d_model)")
    reference = RMSNorm(8, eps=EPS)
    with torch.no_grad():
        reference.weight.copy_(weight)
        expected = reference(x)
    if close(got, expected):
        return
    ms = x.pow(2).mean(-1, keepdim=True)
    centred = x - x.mean(-1, keepdim=True)
    if close(got, centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + EPS) * weight):
        raise ExerciseFailure("you subtracted the mean first: that is LayerNorm. RMSNorm does not centre, it only "
                              "divides by the root mean square of the raw features, sqrt(mean(x²) + eps).")
    if close(got, x / torch.sqrt(ms + EPS)):
        raise ExerciseFailure("the gain is missing: multiply the normalised vector by `weight`, one factor per "
                              "feature.")
    if close(got, x / (ms + EPS) * weight):
        raise ExerciseFailure("you divided by the mean square itself; divide by its square root, "
                              "torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) (or multiply by torch.rsqrt).")
    if close(got, x / (ms.sqrt() + EPS) * weight):
        raise ExerciseFailure("eps is added outside the square root: x / (sqrt(mean(x²)) + eps). Put it inside, "
                              "x / sqrt(mean(x²) + eps), as torch.nn.RMSNorm does.")
    if close(got, x / x.norm(dim=-1, keepdim=True) * weight, atol=1e-4):
        raise ExerciseFailure("you divided by the vector's length (the L2 norm); RMSNorm divides by the *root mean* "
                              "square: the length divided by sqrt(d_model). Use the mean of x², not the sum.")
    for dims, what in (((1,), "over the sequence"), ((0,), "over the batch")):
        other = x / torch.sqrt(x.pow(2).mean(dims, keepdim=True) + EPS) * weight
        if close(got, other):
            raise ExerciseFailure(f"you took the mean square {what}; each token is normalised on its own, over "
                                  "its d_model features: x.pow(2).mean(dim=-1, keepdim=True).")
    raise ExerciseFailure(f"differs from torch.nn.RMSNorm (eps={EPS}) by up to {max_difference(got, expected):.3g}: "
                          "x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.")


def example_heads(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``x (2, 3, 5, 8)`` = (batch, heads, seq, d_head) and the positions ``2..6`` of its five tokens."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(2, 3, 5, 8, generator=generator), torch.arange(2, 7)


def interleaved_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """RoPE with adjacent pairs ``(0, 1), (2, 3), …`` (the original paper's layout) instead of halves."""
    d = x.size(-1)
    angles = positions.float()[:, None] * base ** (-torch.arange(0, d, 2).float() / d)
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([even * angles.cos() - odd * angles.sin(), even * angles.sin() + odd * angles.cos()], -1)
    return rotated.flatten(-2)


def halves_rope(x: torch.Tensor, positions: torch.Tensor, frequencies: torch.Tensor, sign: float = 1.0) -> torch.Tensor:
    angles = positions.float()[:, None] * frequencies
    angles = torch.cat([angles, angles], dim=-1)
    return x * angles.cos() + sign * rotate_half(x) * angles.sin()


def check_apply_rope(ns) -> None:
    x, positions = example_heads()
    function = own_function(ns["apply_rope"], "apply_rope", "course_utils.modern.apply_rotary")
    got = as_tensor(function(x.clone(), positions.clone()), "apply_rope", tuple(x.shape),
                    "(batch, heads, seq, d_head)")
    expected, _ = apply_rotary(x, x, positions)
    if close(got, expected):
        return
    d = x.size(-1)
    right = 10000.0 ** (-torch.arange(0, d, 2).float() / d)
    if close(got, x):
        raise ExerciseFailure("nothing was rotated: the output equals the input. Multiply by cos and add "
                              "rotate_half(x) times sin, with angles positions · θ.")
    if close(got, interleaved_rope(x, positions)):
        raise ExerciseFailure("you rotated adjacent pairs (0, 1), (2, 3), …; the course (like GPT-NeoX and Llama) "
                              "pairs dimension i with i + d_head/2 — the two halves. Both layouts work if q and k "
                              "use the same one, but a model trained with one breaks with the other.")
    if close(got, halves_rope(x, positions, right, sign=-1.0)):
        raise ExerciseFailure("the rotation goes backwards (sin has the wrong sign): rotate_half(x) is "
                              "(-x2, x1), and the formula is x·cos + rotate_half(x)·sin.")
    if close(got, halves_rope(x, torch.arange(x.size(-2)), right)):
        raise ExerciseFailure("you used positions 0..seq-1 instead of the `positions` given (here 2..6): with a "
                              "KV cache the new tokens do not start at 0.")
    if close(got, halves_rope(x, positions, 10000.0 ** (-torch.arange(d // 2).float() / d))):
        raise ExerciseFailure("the frequencies are off: θ_j = base^(-2j / d_head) for j = 0 .. d_head/2 - 1 "
                              "(torch.arange(0, d_head, 2) / d_head in the exponent).")
    if close(got, halves_rope(x, positions, 10000.0 ** (torch.arange(0, d, 2).float() / d))):
        raise ExerciseFailure("the exponent's sign is missing: θ_j = base^(-2j / d_head) is 1 for the first pair "
                              "and small for the last; yours grow.")
    raise ExerciseFailure(f"differs from course_utils.modern.apply_rotary by up to "
                          f"{max_difference(got, expected):.3g}: angles = positions[:, None] · θ, repeated for both "
                          "halves; x·cos(angles) + rotate_half(x)·sin(angles).")


def check_repeat_kv_heads(ns) -> None:
    generator = torch.Generator().manual_seed(0)
    kv = torch.randn(2, 2, 5, 4, generator=generator)              # (batch, kv_heads=2, seq, d_head)
    function = own_function(ns["repeat_kv_heads"], "repeat_kv_heads", "course_utils.modern.repeat_kv")
    got = function(kv.clone(), 3)
    expected = repeat_kv(kv, 3)
    got = as_tensor(got, "repeat_kv_heads")
    if got.shape == expected.shape and torch.equal(got, expected):
        one = as_tensor(function(kv.clone(), 1), "repeat_kv_heads")
        if not torch.equal(one, kv):
            raise ExerciseFailure("with n_repeats=1 (multi-head attention) the heads must come back unchanged.")
        return
    if got.shape != expected.shape:
        raise ExerciseFailure(f"expected shape {tuple(expected.shape)} = (batch, kv_heads · n_repeats, seq, "
                              f"d_head), got {tuple(got.shape)}: repeat along the heads axis, dim 1.")
    if torch.equal(got, kv.repeat(1, 3, 1, 1)):
        raise ExerciseFailure("the heads are tiled (0, 1, 0, 1, 0, 1); a group of query heads shares one K/V head, "
                              "so the order must be 0, 0, 0, 1, 1, 1 — what enable_gqa=True assumes. Use "
                              "repeat_interleave(n_repeats, dim=1).")
    raise ExerciseFailure("expected each K/V head repeated n_repeats times in a row: "
                          "kv.repeat_interleave(n_repeats, dim=1).")


SIZES = ((32, 1024, 12, 32, 8, 128), (1, 4096, 32, 8, 8, 128), (4, 100, 2, 4, 1, 16))
"""(batch, seq, layers, n_heads, n_kv_heads, d_head) of the KV-cache exercise."""


def check_cache_bytes(ns) -> None:
    function = ns["cache_bytes"]
    for batch, seq, layers, n_heads, n_kv_heads, d_head in SIZES:
        got = function(batch, seq, layers, n_heads, n_kv_heads, d_head)
        expected = kv_cache_bytes(batch, seq, layers, n_kv_heads, d_head, 2)
        if not isinstance(got, int) or isinstance(got, bool):
            raise ExerciseFailure(f"return an int (a number of bytes), got {type(got).__name__} {got!r}.")
        if got == expected:
            continue
        case = f"batch={batch}, seq={seq}, layers={layers}, n_heads={n_heads}, n_kv_heads={n_kv_heads}"
        if got == expected // n_kv_heads * n_heads:
            raise ExerciseFailure(f"{case}: you counted n_heads key/value heads; the cache stores only the "
                                  "n_kv_heads K/V heads — that is the whole saving of GQA and MQA.")
        if got * 2 == expected:
            raise ExerciseFailure(f"{case}: half the answer — the cache holds keys *and* values (a factor 2), and "
                                  "each bfloat16 number takes 2 bytes (another factor 2).")
        if got * 2 == expected * 4:
            raise ExerciseFailure(f"{case}: you counted 4 bytes per number (float32); this cache is bfloat16, "
                                  "2 bytes.")
        if got * layers == expected:
            raise ExerciseFailure(f"{case}: every layer has its own cache: multiply by the number of layers.")
        raise ExerciseFailure(f"{case}: expected {expected:,} bytes, got {got:,}: 2 (K and V) · batch · seq · "
                              "layers · n_kv_heads · d_head · 2 bytes.")


q1 = Exercise(
    name="RMSNorm by hand",
    variables=("rms_norm",),
    checker=check_rms_norm,
    hint="No mean is subtracted: x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight, eps = 1e-6.",
    solution=("import torch\n\n"
              "def rms_norm(x, weight, eps=1e-6):\n"
              "    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight\n"),
)

q2 = Exercise(
    name="Apply RoPE",
    variables=("apply_rope",),
    checker=check_apply_rope,
    hint="θ = base ** (-torch.arange(0, d, 2) / d); angles = positions[:, None] * θ, then torch.cat([angles, "
         "angles], -1); rotate_half(x) = torch.cat([-x2, x1], -1) for the halves x1, x2; return x·cos + "
         "rotate_half(x)·sin.",
    solution=("import torch\n\n"
              "def apply_rope(x, positions, base=10000.0):\n"
              "    d = x.size(-1)\n"
              "    theta = base ** (-torch.arange(0, d, 2).float() / d)             # (d/2,)\n"
              "    angles = positions.float()[:, None] * theta                      # (seq, d/2)\n"
              "    angles = torch.cat([angles, angles], dim=-1)                     # (seq, d): both halves\n"
              "    first, second = x.chunk(2, dim=-1)\n"
              "    rotated_half = torch.cat([-second, first], dim=-1)\n"
              "    return x * angles.cos() + rotated_half * angles.sin()\n"),
)

q3 = Exercise(
    name="Repeat K/V heads for grouped-query attention",
    variables=("repeat_kv_heads",),
    checker=check_repeat_kv_heads,
    hint="Query heads h·n_repeats … (h+1)·n_repeats − 1 share K/V head h: kv.repeat_interleave(n_repeats, dim=1).",
    solution=("def repeat_kv_heads(kv, n_repeats):\n"
              "    return kv.repeat_interleave(n_repeats, dim=1)\n"),
)

q4 = Exercise(
    name="KV-cache size under GQA",
    variables=("cache_bytes",),
    checker=check_cache_bytes,
    hint="Only the K/V heads are cached: 2 · batch · seq · layers · n_kv_heads · d_head numbers of 2 bytes each "
         "(bfloat16); n_heads does not appear.",
    solution=("def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):\n"
              "    return 2 * batch * seq * layers * n_kv_heads * d_head * 2\n"),
)
