"""The modern decoder block's parts (lesson 09): RoPE, RMSNorm, SwiGLU and grouped-query attention.

Each is one switch of :class:`~course_utils.config.TransformerConfig`, used by lesson 08's GPT
(:class:`~course_utils.language_model.DecoderOnlyLM`) — so an ablation can turn each on alone:

===================  ==========================  ====================================
switch               baseline (Pre-LN, ReLU)     modern (Llama-like)
===================  ==========================  ====================================
``positional``       ``"learned"`` (added)       ``"rope"`` (rotates q and k)
``normalization``    ``"layernorm"``             ``"rmsnorm"``
``activation``       ``"relu"`` (width d_ff)     ``"swiglu"`` (three matrices of width d_ff)
``n_kv_heads``       ``n_heads`` (multi-head)    fewer: grouped-query; 1: multi-query
===================  ==========================  ====================================

:func:`modern_config` turns all four on. :class:`GroupedQueryAttention` is lesson 07's attention
(:class:`~course_utils.kv_cache.CachedMultiHeadAttention`) with fewer K/V heads (:func:`repeat_kv`) and RoPE
(:func:`apply_rotary`); the layers pick it with :func:`make_attention`, and :func:`make_norm` and
:class:`SwiGLUFeedForward`. The equal-budget ablation is :mod:`course_utils.ablation`.
"""
from __future__ import annotations

__all__ = ["GroupedQueryAttention", "MODERN_SWITCHES", "RMSNorm", "SwiGLUFeedForward", "apply_rotary",
           "check_positions", "kv_cache_bytes", "make_attention", "make_norm", "modern_config", "repeat_kv",
           "rope_frequencies", "rotary_embedding", "rotate_half", "swiglu_hidden_size"]

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import NORMALIZATIONS, TransformerConfig, check_kv_heads
from .errors import CourseTypeError, CourseValueError
from .kv_cache import CachedMultiHeadAttention, LayerCache, check_cached_inputs, check_cached_settings
from .validation import (
    check_bool,
    check_choice,
    check_features,
    check_float_input,
    check_non_empty,
    check_positive_int,
    check_probability,
    check_rank,
    check_real,
    check_tensor,
    checked_by,
)

MODERN_SWITCHES = {"positional": "rope", "normalization": "rmsnorm", "activation": "swiglu"}
"""The config fields lesson 09 swaps (with ``n_kv_heads`` < ``n_heads``, which depends on the head count)."""


# ---------------------------------------------------------------------------- RoPE
def rope_frequencies(d_head: int, base: float = 10000.0) -> torch.Tensor:
    """The ``d_head / 2`` rotation speeds ``θ_j = base^(-2j / d_head)``, float32 ``(d_head / 2,)``.

    Pair ``j`` turns by the angle ``m · θ_j`` at position ``m``: pair 0 by one radian per token, the last pair
    slowest — the same geometric ladder as the sinusoidal table of lesson 02.
    """
    check_positive_int("d_head", d_head)
    base = check_real("base", base, low=1.0, low_inclusive=False, hint="; 10000.0 is the usual value")
    if d_head % 2:
        raise CourseValueError(f"RoPE rotates pairs of dimensions, so d_head must be even, got {d_head}; "
                               "pick d_model and n_heads with an even d_model // n_heads")
    return base ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)


def check_positions(positions: object, seq_len: int | None = None) -> torch.Tensor:
    """``positions`` as a 1-D integer tensor (of length ``seq_len`` when given) of non-negative positions."""
    check_tensor("positions", positions, hint=", e.g. torch.arange(seq_len)")
    if positions.dtype.is_floating_point or positions.dtype == torch.bool or positions.dtype.is_complex:
        raise CourseTypeError(f"positions must be integers, got {positions.dtype}; use torch.arange(seq_len)")
    if positions.dim() != 1:
        raise CourseValueError(f"positions must have shape (seq,), got {tuple(positions.shape)}; one position per "
                               "token, shared by the whole batch: torch.arange(seq_len)")
    if seq_len is not None and positions.numel() != seq_len:
        raise CourseValueError(f"positions has {positions.numel()} entries but the sequence has {seq_len} tokens; "
                               "give one position per token (torch.arange(offset, offset + seq_len))")
    if positions.numel() and int(positions.min()) < 0:
        raise CourseValueError(f"positions must be >= 0, got a minimum of {int(positions.min())}")
    return positions


def rotary_embedding(positions: torch.Tensor, d_head: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)`` of the angles ``m · θ_j``, each ``(seq, d_head)`` float32, laid out in halves.

    Dimension ``i`` and dimension ``i + d_head/2`` form pair ``i`` (the "rotate half" layout of GPT-NeoX and
    Llama), so both halves repeat the same ``d_head / 2`` angles.
    """
    positions = check_positions(positions)
    return _rotary_tables(positions, rope_frequencies(d_head, base))


LLAMA3_KEYS = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")


def _llama3_frequencies(frequencies: torch.Tensor, scaling: dict) -> torch.Tensor:
    """Llama 3's RoPE scaling (``rope_type: "llama3"``): pairs slower than ``original_max_position_embeddings /
    low_freq_factor`` positions per turn are slowed by ``factor``, pairs faster than ``… / high_freq_factor`` are
    kept, and the ones between are blended smoothly. ``scaling`` holds :data:`LLAMA3_KEYS` (checked by the caller)."""
    factor, low, high, old = (float(scaling[key]) for key in LLAMA3_KEYS)
    wavelength = 2 * math.pi / frequencies                                  # positions per full turn of each pair
    slowed = torch.where(wavelength > old / low, frequencies / factor, frequencies)
    smooth = (old / wavelength - low) / (high - low)
    blended = (1 - smooth) * slowed / factor + smooth * slowed
    between = (wavelength >= old / high) & (wavelength <= old / low)
    return torch.where(between, blended, slowed)


def _rotary_tables(positions: torch.Tensor, frequencies: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`rotary_embedding` for positions and frequencies already known to be valid (no checks)."""
    angles = positions.float()[:, None] * frequencies.to(positions.device)     # (seq, d_head/2)
    angles = torch.cat([angles, angles], dim=-1)                                 # (seq, d_head)
    return angles.cos(), angles.sin()


def check_rotate_half_input(x: object) -> None:
    """Raise a course error unless ``x`` fits :func:`rotate_half`: a floating tensor ``(..., d)`` with an even ``d``."""
    check_tensor("x", x)
    if not x.is_floating_point():
        raise CourseTypeError(f"x must be a float tensor (queries or keys), got {x.dtype}; convert it with .float()")
    if x.dim() == 0 or x.size(-1) % 2:
        raise CourseValueError(f"rotate_half splits the last dimension into two halves, so x must have shape (..., d) "
                               f"with an even d, got {tuple(x.shape)}; RoPE needs an even d_head")


@checked_by(check_rotate_half_input)
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``(x1, x2) → (-x2, x1)`` on the two halves of the last dimension: a 90° turn of every pair."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``x·cos + rotate_half(x)·sin``: every pair of ``x (..., seq, d_head)`` turned by its position's angle."""
    return x * cos.to(x.dtype) + rotate_half(x) * sin.to(x.dtype)


def apply_rotary(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor,
                 base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate queries and keys by their positions (RoPE); values are left alone.

    Args:
        q: ``(batch, heads, seq, d_head)``; k: ``(batch, kv_heads, seq, d_head)`` (fewer heads under GQA).
        positions: ``(seq,)`` integer positions of the tokens, e.g. ``torch.arange(offset, offset + seq)``.

    Returns:
        ``(q_rotated, k_rotated)``, same shapes and dtypes: ``x·cos + rotate_half(x)·sin``. Then
        ``q_m · k_n`` depends on ``m − n`` only.
    """
    check_rank(q, 4, "q", "(batch, heads, seq, d_head)")
    check_rank(k, 4, "k", "(batch, kv_heads, seq, d_head)")
    check_non_empty("q", q, "at least one sequence of at least one vector")
    check_non_empty("k", k, "at least one sequence of at least one vector")
    if q.size(-1) != k.size(-1) or q.size(-2) != k.size(-2):
        raise CourseValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} need the same seq and d_head "
                               "(dims 2 and 3): rotate the queries and keys of the same tokens")
    if not (q.is_floating_point() and k.is_floating_point()):
        raise CourseTypeError(f"q and k must be float tensors, got {q.dtype} and {k.dtype}")
    cos, sin = rotary_embedding(check_positions(positions, q.size(-2)).to(q.device), q.size(-1), base)
    return _rotate(q, cos, sin), _rotate(k, cos, sin)


# ---------------------------------------------------------------------------- RMSNorm
class RMSNorm(nn.Module):
    """``x / sqrt(mean(x²) + eps) · weight`` over the last dimension: LayerNorm without centring and bias.

    ``eps=None`` uses the machine epsilon of the computation (``torch.finfo(float32).eps`` for float32, float16
    and bfloat16 inputs, which are computed in float32), as ``torch.nn.RMSNorm`` does.
    """

    def __init__(self, d_model: int, eps: float | None = None) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.eps = None if eps is None else check_real("eps", eps, low=0.0, hint="; None or 1e-6 are usual")
        self.weight = nn.Parameter(torch.ones(d_model))

    def check_input(self, x: torch.Tensor) -> None:
        check_features(x, self, self.d_model)

    @checked_by(check_input)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., d_model)`` → same shape and dtype."""
        compute = torch.promote_types(x.dtype, torch.float32)
        eps = torch.finfo(compute).eps if self.eps is None else self.eps
        h = x.to(compute)
        normed = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
        return (normed * self.weight.to(compute)).to(x.dtype)


def make_norm(normalization: str, d_model: int, bias: bool = True, eps: float | None = None) -> nn.Module:
    """``"layernorm"`` → ``nn.LayerNorm(d_model, bias=bias)``; ``"rmsnorm"`` → :class:`RMSNorm` (which has no bias).

    ``eps`` is the norm's ε; ``None`` keeps each one's default (1e-5 for LayerNorm, the machine epsilon for RMSNorm).
    """
    check_choice("normalization", normalization, NORMALIZATIONS)
    check_positive_int("d_model", d_model)
    check_bool("bias", bias)
    if eps is not None:
        check_real("eps", eps, low=0.0, low_inclusive=False, hint="; None keeps the norm's default")
    if normalization == "rmsnorm":
        return RMSNorm(d_model, eps)
    return nn.LayerNorm(d_model, bias=bias) if eps is None else nn.LayerNorm(d_model, eps=eps, bias=bias)


# ---------------------------------------------------------------------------- SwiGLU
def swiglu_hidden_size(d_ff: int) -> int:
    """Hidden size of a bias-free SwiGLU with the parameters of a bias-free ReLU FFN of width ``d_ff``.

    ReLU FFN: two matrices, ``2 · d_model · d_ff``. SwiGLU: three (gate, up, down), ``3 · d_model · h``. Equal
    when ``h = 2 · d_ff / 3``, rounded to the nearest int (``d_ff = 4 · d_model`` gives ``h ≈ 8/3 · d_model``).
    """
    check_positive_int("d_ff", d_ff)
    return max(1, round(2 * d_ff / 3))


class SwiGLUFeedForward(nn.Module):
    """``W_down · (silu(W_gate x) ⊙ W_up x)``, ``(..., d_model)`` → same shape; bias-free unless ``bias=True``.

    The gate decides, per hidden unit and per token, how much of ``W_up x`` passes. ``d_hidden`` defaults to
    :func:`swiglu_hidden_size` of ``4 · d_model``.
    """

    def __init__(self, d_model: int, d_hidden: int | None = None, dropout: float = 0.0, bias: bool = False) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        d_hidden = swiglu_hidden_size(4 * d_model) if d_hidden is None else check_positive_int("d_hidden", d_hidden)
        check_probability("dropout", dropout)
        check_bool("bias", bias)
        self.gate = nn.Linear(d_model, d_hidden, bias=bias)
        self.up = nn.Linear(d_model, d_hidden, bias=bias)
        self.down = nn.Linear(d_hidden, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def check_input(self, x: torch.Tensor) -> None:
        check_features(x, self, self.gate.in_features)

    @checked_by(check_input)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., d_model)`` → same shape."""
        return self.down(self.dropout(F.silu(self.gate(x)) * self.up(x)))


# ---------------------------------------------------------------------------- grouped-query attention
def repeat_kv(x: torch.Tensor, n_repeats: int) -> torch.Tensor:
    """``(batch, kv_heads, seq, d_head)`` → ``(batch, kv_heads · n_repeats, seq, d_head)``, each head repeated
    ``n_repeats`` times in a row: query head ``h`` reads K/V head ``h // n_repeats`` (as ``enable_gqa=True``)."""
    check_rank(x, 4, "x", "(batch, kv_heads, seq, d_head)")
    check_positive_int("n_repeats", n_repeats)
    return x if n_repeats == 1 else x.repeat_interleave(n_repeats, dim=1)


def check_grouped_settings(block: nn.Module, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                           use_fast_path: bool = True, n_kv_heads: int | None = None,
                           rope_base: float | None = None) -> None:
    """Raise a course error unless the arguments fit :class:`GroupedQueryAttention`."""
    check_cached_settings(block, d_model, n_heads, dropout, bias, use_fast_path)
    if n_kv_heads is not None:
        check_kv_heads(n_heads, n_kv_heads)
    if rope_base is not None:
        check_real("rope_base", rope_base, 1.0, low_inclusive=False)
        rope_frequencies(d_model // n_heads, rope_base)  # refuses an odd d_head now, not at the first forward


def check_grouped_inputs(block: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         mask: torch.Tensor | None = None, need_weights: bool = False,
                         cache: LayerCache | None = None, static_kv: bool = False) -> None:
    """Raise a course error unless the arguments fit :meth:`GroupedQueryAttention.forward`."""
    check_cached_inputs(block, query, key, value, mask, need_weights, cache, static_kv)
    if block.rope_base is not None and (static_kv or query.size(1) != key.size(1)):
        raise CourseValueError("RoPE rotates queries and keys of the same tokens: this block (rope_base="
                               f"{block.rope_base}) does self-attention only, got query {tuple(query.shape)} and "
                               f"key {tuple(key.shape)}{' with static_kv=True' if static_kv else ''}")


def check_kv_split_input(block: nn.Module, x: torch.Tensor) -> None:
    """Raise a course error unless ``x`` fits :meth:`GroupedQueryAttention.split_kv_heads`."""
    check_rank(x, 3, "x", "(batch, seq, kv_heads · d_head)")
    if x.size(-1) != block.n_kv_heads * block.d_head:
        raise CourseValueError(f"x must have shape (batch, seq, kv_heads · d_head) with "
                               f"{block.n_kv_heads * block.d_head} in the last dimension, got {tuple(x.shape)}")
    check_float_input(x, block, "x")
    check_non_empty("x", x)


class GroupedQueryAttention(CachedMultiHeadAttention):
    """Lesson 07's attention with lesson 09's two changes: ``n_kv_heads`` key/value heads (default ``n_heads``),
    each shared by a group of ``n_heads // n_kv_heads`` query heads (grouped-query attention; 1 = multi-query),
    and ``rope_base`` (default ``None``: no rotation): queries and keys rotated by their positions (RoPE,
    self-attention only; with a cache the new tokens continue after the cached ones).
    """

    @checked_by(check_grouped_settings)
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 use_fast_path: bool = True, n_kv_heads: int | None = None, rope_base: float | None = None) -> None:
        nn.Module.__init__(self)  # the projections of lesson 03, with narrower W_k and W_v: built here, in order
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        self.dropout, self.use_fast_path, self.rope_base = dropout, use_fast_path, rope_base
        self.kdim = self.vdim = d_model
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, self.n_kv_heads * self.d_head, bias=bias)   # (B, T, h_kv · d_head)
        self.w_v = nn.Linear(d_model, self.n_kv_heads * self.d_head, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    @checked_by(check_kv_split_input)
    def split_kv_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, h_kv · d_head)`` → ``(B, h_kv, T, d_head)``."""
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.n_kv_heads, self.d_head).transpose(1, 2)

    def _rotate_by_position(self, q: torch.Tensor, k: torch.Tensor, past: int) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE on ``q (B, h, T, d_head)`` and ``k (B, h_kv, T, d_head)`` at positions ``past … past + T − 1``."""
        if self.rope_base is None:
            return q, k
        positions = torch.arange(past, past + q.size(2), device=q.device)
        frequencies = rope_frequencies(self.d_head, self.rope_base)
        if getattr(self, "rope_scaling", None) is not None:                 # a Llama 3 checkpoint (interop)
            frequencies = _llama3_frequencies(frequencies, self.rope_scaling)
        cos, sin = _rotary_tables(positions, frequencies)
        return _rotate(q, cos, sin), _rotate(k, cos, sin)

    def _repeat_kv_heads(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each K/V head repeated for the ``n_heads // n_kv_heads`` query heads of its group."""
        groups = self.n_heads // self.n_kv_heads
        return repeat_kv(k, groups), repeat_kv(v, groups)

    check_inputs = check_grouped_inputs

    @checked_by(check_grouped_inputs)
    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None,
                need_weights: bool = False, cache: LayerCache | None = None,
                static_kv: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """As :meth:`CachedMultiHeadAttention.forward` (the cache holds ``n_kv_heads`` heads)."""
        return super().forward(query, key, value, mask, need_weights, cache, static_kv)


def make_attention(d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                   n_kv_heads: int | None = None, rope_base: float | None = None) -> CachedMultiHeadAttention:
    """The attention a layer of the course's models uses: lesson 07's
    :class:`~course_utils.kv_cache.CachedMultiHeadAttention`, or :class:`GroupedQueryAttention` when lesson 09's
    switches ask for fewer K/V heads or RoPE."""
    if n_kv_heads in (None, n_heads) and rope_base is None:
        return CachedMultiHeadAttention(d_model, n_heads, dropout, bias)
    return GroupedQueryAttention(d_model, n_heads, dropout, bias, n_kv_heads=n_kv_heads, rope_base=rope_base)


def kv_cache_bytes(batch: int, seq: int, n_layers: int, n_kv_heads: int, d_head: int, bytes_per_value: int = 4) -> int:
    """The KV-cache formula: ``2 (K and V) · batch · seq · layers · kv_heads · d_head · bytes``."""
    for name, value in (("batch", batch), ("seq", seq), ("n_layers", n_layers), ("n_kv_heads", n_kv_heads),
                        ("d_head", d_head), ("bytes_per_value", bytes_per_value)):
        check_positive_int(name, value)
    return 2 * batch * seq * n_layers * n_kv_heads * d_head * bytes_per_value


# ---------------------------------------------------------------------------- all four at once
def modern_config(vocab_size: int, **settings) -> TransformerConfig:
    """A Pre-norm, bias-free :class:`~course_utils.config.TransformerConfig` with all four swaps on: RoPE,
    RMSNorm, SwiGLU and grouped-query attention with half as many K/V heads (``settings`` override any field)."""
    n_heads = check_positive_int("n_heads", settings.get("n_heads", TransformerConfig.n_heads))
    defaults = {"norm": "pre", "bias": False, **MODERN_SWITCHES, "n_kv_heads": max(1, n_heads // 2)}
    return TransformerConfig(vocab_size, **{**defaults, **settings})


# ---------------------------------------------------------------------------- lesson 09's pictures
# Drawing helpers (matplotlib imported when called); not part of the tensor API above.
_CHANGED, _EDGE = "#f4b6b6", "#555555"


def _box(ax, x, y, text, face, width=2.6, height=0.5, fontsize=9):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.03",
                                facecolor=face, edgecolor=_EDGE, linewidth=1.2))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, start, end, **style):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="->", color=_EDGE, lw=1.1, **style))


def draw_modern_block():
    """The baseline block of lesson 09's ablation (Pre-LN, ReLU feed-forward; lesson 08's model uses GELU) beside the
    modern (Llama-style) block; the four changed parts (position, norms, attention, feed-forward) in red on both."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.6))
    columns = (("the baseline block (section 6: Pre-LN, ReLU)",
                ("LayerNorm", "multi-head attention\n(causal)", "LayerNorm", "feed-forward: ReLU"),
                "token + learned position"),
               ("the modern block (Llama-like)", ("RMSNorm", "grouped-query attention\n(causal, RoPE on q and k)",
                                                  "RMSNorm", "feed-forward: SwiGLU"), "token (no position added)"))
    for ax, (title, parts, bottom) in zip(axes, columns):
        ax.set(xlim=(-2.2, 2.2), ylim=(-0.6, 6.2), title=title)
        ax.axis("off")
        _box(ax, 0, 0, bottom, _CHANGED, width=3.2)
        ys = (1.1, 2.1, 3.4, 4.4)
        for (y, part) in zip(ys, parts):
            _box(ax, 0, y, part, _CHANGED, width=3.2, height=0.6 if "\n" in part else 0.5)
        for y in (1.1, 3.4):  # the sublayer reads the normalised stream; the stream itself goes around
            _arrow(ax, (0, y + 0.25), (0, y + 0.65))
        _arrow(ax, (0, 0.25), (0, 0.85))
        _arrow(ax, (0, 2.45), (0, 2.75))
        _arrow(ax, (0, 4.7), (0, 5.3))
        for low, high in ((0.55, 2.75), (2.75, 5.0)):   # residual paths: x + sublayer(norm(x))
            ax.plot([0, -1.95, -1.95, -0.15], [low, low, high, high], color="#1f5fa8", lw=1.4)
            ax.text(0, high, "+", ha="center", va="center", fontsize=13, color="#1f5fa8",
                    bbox=dict(boxstyle="circle,pad=0.1", facecolor="white", edgecolor="#1f5fa8"))
        ax.text(-2.05, 1.7, "residual", rotation=90, color="#1f5fa8", fontsize=8, va="center")
        ax.text(0, 5.7, "× n_layers, then a final norm and the output layer", ha="center", fontsize=8)
    fig.text(0.5, 0.01, "red: every part lesson 09 replaces, one at a time in section 6; blue: the residual stream "
             "and the Pre-LN order, which stay", ha="center", fontsize=8, color="#a33")
    fig.tight_layout()
    return fig


def draw_rope_pairs(d_head: int = 8, positions: int = 8, base: float = 10000.0):
    """One query vector's ``d_head / 2`` pairs, each drawn as a 2-D arrow at positions 0 … ``positions − 1``: pair
    ``j`` turns by ``θ_j = base^(-2j/d_head)`` radians per position."""
    import matplotlib.pyplot as plt

    speeds = rope_frequencies(d_head, base)
    fig, axes = plt.subplots(1, len(speeds), figsize=(3.0 * len(speeds), 3.1))
    colours = plt.cm.viridis(torch.linspace(0, 0.9, positions).tolist())
    for j, (ax, speed) in enumerate(zip(axes, speeds.tolist())):
        for m in range(positions):
            angle = 0.3 + m * speed
            ax.annotate("", xy=(math.cos(angle), math.sin(angle)), xytext=(0, 0),
                        arrowprops=dict(arrowstyle="->", color=colours[m], lw=1.6))
        ax.add_patch(plt.Circle((0, 0), 1, fill=False, color="#bbbbbb", lw=0.8))
        ax.set(xlim=(-1.2, 1.2), ylim=(-1.2, 1.2), aspect="equal", xticks=[], yticks=[],
               title=f"pair {j}: dims {j} and {j + d_head // 2}\nθ = {speed:.3g} rad per position")
        ax.title.set_fontsize(9)
    sm = plt.cm.ScalarMappable(cmap="viridis", norm=plt.Normalize(0, positions - 1))
    fig.colorbar(sm, ax=axes, shrink=0.8, label="position m")
    fig.suptitle("RoPE: the same pair of a vector at positions 0 … 7 (turned by m·θ_j)", y=1.04)
    return fig


def draw_kv_sharing(n_heads: int = 8, kv_options: tuple[int, ...] = (8, 2, 1)):
    """Query heads (top) and the K/V heads they read (bottom) for multi-head, grouped-query and multi-query
    attention."""
    import matplotlib.pyplot as plt

    names = {n_heads: "multi-head", 1: "multi-query"}
    fig, axes = plt.subplots(1, len(kv_options), figsize=(4.2 * len(kv_options), 2.6))
    for ax, kv in zip(axes, kv_options):
        group = n_heads // kv
        tops = [(i - (n_heads - 1) / 2) * 0.5 for i in range(n_heads)]
        bottoms = [(g - (kv - 1) / 2) * 0.5 * group for g in range(kv)]
        colours = plt.cm.tab10(range(kv))
        for h, x in enumerate(tops):
            _box(ax, x, 1.6, f"q{h}", "#dbe8f7", width=0.4, height=0.35)
            ax.plot([x, bottoms[h // group]], [1.42, 0.45], color=colours[h // group], lw=1.2)
        for g, x in enumerate(bottoms):
            _box(ax, x, 0.2, f"k{g}\nv{g}", colours[g], width=0.4, height=0.5, fontsize=8)
        label = names.get(kv, "grouped-query")
        ax.set(xlim=(-2.3, 2.3), ylim=(-0.2, 2.0),
               title=f"{label}: {n_heads} query heads, {kv} K/V head{'s' if kv > 1 else ''}\n"
                     f"cache: {kv}/{n_heads} of multi-head's")
        ax.axis("off")
    fig.tight_layout()
    return fig
