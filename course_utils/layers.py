"""The position-wise feed-forward network and the encoder/decoder layers (Post-LN or Pre-LN).

Every layer takes lesson 09's switches as keyword arguments (``normalization``, ``n_kv_heads``, ``rope_base``;
``activation="swiglu"``): :meth:`~course_utils.config.TransformerConfig.layer_options` hands a config's settings
to them, so one config builds every layer of a model the same way. Their attention is lesson 07's
:class:`~course_utils.kv_cache.CachedMultiHeadAttention` (lesson 03's block, with a cache and the fused kernel), or
lesson 09's :class:`~course_utils.modern.GroupedQueryAttention` when the switches ask for it
(:func:`~course_utils.modern.make_attention`).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import ACTIVATIONS, NORM_PLACEMENTS, check_choice
from .errors import CourseTypeError
from .kv_cache import LayerCache
from .modern import SwiGLUFeedForward, make_attention, make_norm
from .validation import (
    check_bool,
    check_features,
    check_positive_int,
    check_probability,
    check_rank,
    check_vectors,
    checked_by,
)

__all__ = ["DecoderLayer", "EncoderLayer", "PositionwiseFeedForward", "ResidualSublayer", "make_feed_forward"]


class PositionwiseFeedForward(nn.Module):
    """``Linear(d_model → d_ff) → activation → dropout → Linear(d_ff → d_model)``, applied to every position alone.

    ``activation`` is ``"relu"``, ``"gelu"`` (exact, with erf: BERT's) or ``"gelu_tanh"`` (the tanh approximation
    GPT-2 was trained with: ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))``).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu",
                 bias: bool = True) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout)
        check_bool("bias", bias)
        check_choice("activation", activation, ("relu", "gelu", "gelu_tanh"))
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.activation_name = activation
        self.activation = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": _gelu_tanh}[activation]

    def check_input(self, x: torch.Tensor) -> None:
        check_features(x, self, self.linear1.in_features)

    @checked_by(check_input)
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., d_model)`` → same shape: ``(batch, seq, d_model)`` in a layer, or one vector ``(d_model,)``."""
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU with the tanh approximation (GPT-2's ``gelu_new``)."""
    return F.gelu(x, approximate="tanh")


def make_feed_forward(d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu",
                      bias: bool = True) -> nn.Module:
    """The feed-forward sublayer an ``activation`` names: :class:`PositionwiseFeedForward` for ``"relu"``,
    ``"gelu"`` and ``"gelu_tanh"``, :class:`~course_utils.modern.SwiGLUFeedForward` (hidden size ``d_ff``) for
    ``"swiglu"``."""
    check_choice("activation", activation, ACTIVATIONS)
    check_positive_int("d_ff", d_ff)  # SwiGLUFeedForward alone would read None as its default width
    if activation == "swiglu":
        return SwiGLUFeedForward(d_model, d_ff, dropout, bias)
    return PositionwiseFeedForward(d_model, d_ff, dropout, activation, bias)


class ResidualSublayer(nn.Module):
    """Residual connection around a sublayer with its normalisation, placed after (Post-LN) or before (Pre-LN).

    post: ``norm(x + dropout(sublayer(x)))`` — the original paper.
    pre:  ``x + dropout(sublayer(norm(x)))`` — the residual path stays an identity, easier to train deep.

    ``normalization`` is ``"layernorm"`` (lessons 04–08) or ``"rmsnorm"`` (lesson 09); ``eps`` its ε (``None``:
    the norm's default).
    """

    def __init__(self, d_model: int, dropout: float, norm: str, bias: bool = True,
                 normalization: str = "layernorm", eps: float | None = None) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        check_probability("dropout", dropout)
        check_bool("bias", bias)
        check_choice("norm", norm, NORM_PLACEMENTS)
        self.norm_first = norm == "pre"
        self.norm = make_norm(normalization, d_model, bias, eps)
        self.dropout = nn.Dropout(dropout)

    def check_inputs(self, x: torch.Tensor, sublayer) -> None:
        check_vectors(x, self, self.d_model)
        if not callable(sublayer):
            raise CourseTypeError(f"sublayer must be a callable (a module or a function of x), got "
                                  f"{type(sublayer).__name__}; e.g. lambda h: attention(h, h, h)[0]")

    @checked_by(check_inputs, trusts_callees=False)  # your sublayer checks its own inputs
    def forward(self, x: torch.Tensor, sublayer) -> torch.Tensor:
        """``x (batch, seq, d_model)`` → same shape; ``sublayer`` maps ``(batch, seq, d_model)`` to the same."""
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in a residual + normalisation.

    ``bias=False`` drops every bias (projections, feed-forward, LayerNorm), like ``nn.TransformerEncoderLayer``'s.
    The keyword-only switches are lesson 09's (see :class:`~course_utils.config.TransformerConfig`); ``norm_eps``
    is the ε of both norms (``None``: the default).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 activation: str = "relu", norm: str = "post", bias: bool = True, *,
                 normalization: str = "layernorm", n_kv_heads: int | None = None,
                 rope_base: float | None = None, norm_eps: float | None = None) -> None:
        super().__init__()
        self.self_attn = make_attention(d_model, n_heads, dropout, bias, n_kv_heads, rope_base)
        self.feed_forward = make_feed_forward(d_model, d_ff, dropout, activation, bias)
        self.attn_block = ResidualSublayer(d_model, dropout, norm, bias, normalization, norm_eps)
        self.ff_block = ResidualSublayer(d_model, dropout, norm, bias, normalization, norm_eps)

    def check_inputs(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> None:
        check_vectors(x, self, self.attn_block.d_model)
        self.self_attn.check_inputs(x, x, x, mask)

    @checked_by(check_inputs)
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x (batch, seq, d_model)`` → same shape; ``mask`` 4-D bool, e.g. ``padding_mask(ids)``
        (batch, 1, 1, seq)."""
        x = self.attn_block(x, lambda h: self.self_attn(h, h, h, mask)[0])
        return self.ff_block(x, self.feed_forward)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder memory, feed-forward; each residual + normalisation.

    ``bias=False`` drops every bias (projections, feed-forward, LayerNorm), like ``nn.TransformerDecoderLayer``'s.
    The keyword-only switches are lesson 09's; RoPE (``rope_base``) rotates the self-attention only; ``norm_eps`` is
    the ε of the three norms (``None``: the default).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 activation: str = "relu", norm: str = "post", bias: bool = True, *,
                 normalization: str = "layernorm", n_kv_heads: int | None = None,
                 rope_base: float | None = None, norm_eps: float | None = None) -> None:
        super().__init__()
        self.self_attn = make_attention(d_model, n_heads, dropout, bias, n_kv_heads, rope_base)
        self.cross_attn = make_attention(d_model, n_heads, dropout, bias, n_kv_heads)
        self.feed_forward = make_feed_forward(d_model, d_ff, dropout, activation, bias)
        self.self_attn_block = ResidualSublayer(d_model, dropout, norm, bias, normalization, norm_eps)
        self.cross_attn_block = ResidualSublayer(d_model, dropout, norm, bias, normalization, norm_eps)
        self.ff_block = ResidualSublayer(d_model, dropout, norm, bias, normalization, norm_eps)

    def check_inputs(self, y: torch.Tensor, memory: torch.Tensor, tgt_mask: torch.Tensor | None = None,
                     memory_mask: torch.Tensor | None = None, self_cache: LayerCache | None = None,
                     cross_cache: LayerCache | None = None) -> None:
        check_rank(y, 3, "y (the target-side vectors)", "(batch, tgt_len, d_model)")
        check_rank(memory, 3, "memory (the encoder output)", "(batch, src_len, d_model)")
        self.self_attn.check_inputs(y, y, y, tgt_mask, cache=self_cache)
        self.cross_attn.check_inputs(y, memory, memory, memory_mask, cache=cross_cache, static_kv=True)

    @checked_by(check_inputs)
    def forward(self, y: torch.Tensor, memory: torch.Tensor, tgt_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None, self_cache: LayerCache | None = None,
                cross_cache: LayerCache | None = None) -> torch.Tensor:
        """Decoder step.

        Args:
            y: target-side vectors ``(batch, tgt_len, d_model)``.
            memory: encoder output ``(batch, src_len, d_model)``.
            tgt_mask: 4-D bool, each dimension 1 or the size of (batch, heads, tgt_len, tgt_len): causal AND
                target padding, e.g. ``target_mask(tgt_ids)`` (batch, 1, tgt_len, tgt_len).
            memory_mask: 4-D bool for (batch, heads, tgt_len, src_len): hides source padding, e.g.
                ``padding_mask(src_ids)`` (batch, 1, 1, src_len).
            self_cache, cross_cache: during incremental decoding, this layer's two entries of a
                :class:`~course_utils.kv_cache.KVCache` (``cache.self_attention[i]``, ``cache.cross_attention[i]``).

        Returns:
            ``(batch, tgt_len, d_model)``.
        """
        y = self.self_attn_block(y, lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0])
        y = self.cross_attn_block(
            y, lambda h: self.cross_attn(h, memory, memory, memory_mask, cache=cross_cache, static_kv=True)[0])
        return self.ff_block(y, self.feed_forward)
