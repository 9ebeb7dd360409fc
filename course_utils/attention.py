"""Scaled dot-product attention and multi-head attention.

Masks follow :mod:`course_utils.masks`: boolean, ``True`` = may attend, broadcastable to
``(batch, heads, q_len, k_len)``.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import check_heads


def check_mask(mask: torch.Tensor, scores_shape: torch.Size) -> None:
    """Raise a clear error unless ``mask`` is a bool tensor that broadcasts to ``scores_shape``."""
    if mask.dtype != torch.bool:
        raise TypeError(f"attention masks must be bool (True = may attend), got {mask.dtype}; "
                        "for an additive float mask m use (m == 0), for 0/1 ints use mask.bool()")
    try:
        torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the attention scores "
            f"{tuple(scores_shape)} = (batch, heads, q_len, k_len); a padding mask from ids (batch, seq) "
            "needs shape (batch, 1, 1, seq) — use course_utils.masks.padding_mask") from None


def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 mask: torch.Tensor | None = None,
                                 dropout_p: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q Kᵀ / √d_k) V``, written out step by step.

    Args:
        query: ``(..., q_len, d_k)``; key: ``(..., k_len, d_k)``; value: ``(..., k_len, d_v)``.
        mask: optional bool, ``True`` = may attend, broadcastable to ``(..., q_len, k_len)``.
        dropout_p: dropout on the attention weights (use 0 in evaluation).

    Returns:
        ``(output (..., q_len, d_v), weights (..., q_len, k_len))``. A query whose every key is masked gets
        all-zero weights and a zero output — finite, never NaN.
    """
    if query.size(-1) != key.size(-1):
        raise ValueError(f"query and key need the same last dimension d_k, got {query.size(-1)} and {key.size(-1)}")
    if key.size(-2) != value.size(-2):
        raise ValueError(f"key and value need the same length, got {key.size(-2)} and {value.size(-2)}")
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        check_mask(mask, scores.shape)
        # a finite "minus infinity": a fully masked row becomes a uniform softmax instead of 0/0 = NaN, ...
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        # ... and zeroing the masked entries afterwards turns that uniform row into all zeros.
        weights = weights.masked_fill(~mask, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights


class MultiHeadAttention(nn.Module):
    """Multi-head attention for self-attention (query = key = value) and cross-attention.

    ``use_fast_path=True`` computes the same result through ``F.scaled_dot_product_attention`` (fused kernels)
    whenever the weights are not requested.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 use_fast_path: bool = True) -> None:
        super().__init__()
        check_heads(d_model, n_heads)
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.use_fast_path = use_fast_path
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.capture = False  # set by capture_attention()
        self.captured_weights: torch.Tensor | None = None

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, seq, d_model)`` → ``(batch, heads, seq, d_head)``."""
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, heads, seq, d_head)`` → ``(batch, seq, d_model)``."""
        batch, _, seq, _ = x.shape
        return x.transpose(1, 2).contiguous().view(batch, seq, self.d_model)

    def check_inputs(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x.dim() != 3 or x.size(-1) != self.d_model:
                raise ValueError(f"{name} must have shape (batch, seq, d_model={self.d_model}), got {tuple(x.shape)}")
        if not query.size(0) == key.size(0) == value.size(0):
            raise ValueError(f"query, key and value need the same batch size, got "
                             f"{query.size(0)}, {key.size(0)}, {value.size(0)}")
        if key.size(1) != value.size(1):
            raise ValueError(f"key and value need the same length, got {key.size(1)} and {value.size(1)}")
        if query.size(0) == 0:
            raise ValueError("empty batch: attention needs at least one sequence")

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None, need_weights: bool = False,
                cache: dict[str, torch.Tensor] | None = None,
                static_kv: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(batch, q_len, d_model)``; key, value: ``(batch, k_len, d_model)``.
            mask: bool, ``True`` = may attend, broadcastable to ``(batch, heads, q_len, k_len)``.
            need_weights: also return the per-head attention weights.
            cache: a dict this layer owns during incremental decoding. Self-attention (``static_kv=False``)
                appends the new keys/values to the cached ones; cross-attention (``static_kv=True``) projects the
                memory once and reuses it.

        Returns:
            ``(output (batch, q_len, d_model), weights (batch, heads, q_len, k_len) or None)``.
        """
        self.check_inputs(query, key, value)
        q = self.split_heads(self.w_q(query))
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k = self.split_heads(self.w_k(key))
            v = self.split_heads(self.w_v(value))
            if cache is not None:
                if not static_kv and "k" in cache:
                    k = torch.cat([cache["k"], k], dim=2)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        dropout_p = self.dropout if self.training else 0.0
        need_weights = need_weights or self.capture
        if need_weights or not self.use_fast_path:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
        else:
            if mask is not None:
                check_mask(mask, torch.Size((q.size(0), self.n_heads, q.size(2), k.size(2))))
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
            if mask is not None:  # the fused kernels may leave NaN where a query can see no key: make it 0
                out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
            weights = None
        if self.capture:
            self.captured_weights = weights.detach()
        return self.w_o(self.merge_heads(out)), (weights if need_weights else None)


@contextmanager
def capture_attention(model: nn.Module) -> Iterator[dict[str, torch.Tensor]]:
    """Record the attention weights of every :class:`MultiHeadAttention` inside ``model``.

    Example::

        with capture_attention(model) as maps:
            model(ids)
        maps["encoder.layers.0.self_attn"]   # (batch, heads, q_len, k_len)

    With a KV cache, each entry holds the last call's weights.
    """
    modules = {name: m for name, m in model.named_modules() if isinstance(m, MultiHeadAttention)}
    maps: dict[str, torch.Tensor] = {}
    for m in modules.values():
        m.capture, m.captured_weights = True, None
    try:
        yield maps
    finally:
        for name, m in modules.items():
            m.capture = False
            if m.captured_weights is not None:
                maps[name] = m.captured_weights
            m.captured_weights = None
