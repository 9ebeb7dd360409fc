"""Scaled dot-product attention and multi-head attention.

Masks follow :mod:`course_utils.masks`: boolean, ``True`` = may attend, 4-D ``(batch | 1, heads | 1, q_len | 1,
k_len)`` — one dimension per score dimension, each of size 1 or the scores' size (:func:`check_mask`).
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import check_heads, check_kv_heads
from .errors import CourseTypeError, CourseValueError
from .kv_cache import LayerCache
from .modern import _rotary_tables, _rotate, repeat_kv, rope_frequencies
from .validation import (
    check_bool,
    check_float_input,
    check_non_empty,
    check_positive_int,
    check_probability,
    check_rank,
    check_real,
    check_same_batch,
    check_tensor,
    checked_by,
    describe,
)

__all__ = ["MultiHeadAttention", "capture_attention", "check_attention_inputs", "check_mask",
           "scaled_dot_product_attention"]

_SCORE_DIMS = ("batch", "heads", "q_len", "k_len")


def _score_dim_names(n_dims: int) -> tuple[str, ...]:
    """Names of the score dimensions: ``(batch, heads, q_len, k_len)`` for 4-D scores, ``(..., q_len, k_len)`` else."""
    if n_dims == len(_SCORE_DIMS):
        return _SCORE_DIMS
    return tuple(f"dim {i}" for i in range(n_dims - 2)) + ("q_len", "k_len")


def check_mask(mask: torch.Tensor, scores_shape: torch.Size) -> None:
    """Raise a course error unless ``mask`` can only be read one way against scores of ``scores_shape``.

    The rule: a bool tensor with exactly as many dimensions as the scores, each of size 1 or the scores' size. So
    the mask never adds a dimension (a ``(batch, seq)`` padding mask would be read as ``(q_len, k_len)``) and
    never enlarges the scores (a ``(3, 1, 1, k_len)`` mask on a batch of 1 would make 3 outputs).
    """
    if not isinstance(mask, torch.Tensor):
        raise CourseTypeError(f"expected the attention mask as a bool torch.Tensor (True = may attend), got "
                              f"{type(mask).__name__}; build one with course_utils.masks.padding_mask(ids) or "
                              "causal_mask(seq_len)")
    if mask.dtype != torch.bool:
        raise CourseTypeError(f"expected a bool attention mask (True = may attend), got {mask.dtype} of shape "
                              f"{tuple(mask.shape)}; attention masks must be bool: for an additive float mask m "
                              "use (m == 0), for 0/1 ints use mask.bool()")
    names = _score_dim_names(len(scores_shape))
    scores = f"{tuple(scores_shape)} = ({', '.join(names)})"
    if mask.dim() != len(scores_shape):
        if mask.dim() == 2 and len(scores_shape) == 4:
            fix = ("a (batch, seq) padding mask such as `ids != pad_id` would be read as (q_len, k_len); a padding "
                   "mask needs shape (batch, 1, 1, seq): use course_utils.masks.padding_mask(ids); a (q_len, k_len) "
                   "mask needs mask[None, None]")
        elif mask.dim() == 3 and len(scores_shape) == 4:
            fix = "a (batch, q_len, k_len) mask needs the heads dimension: mask.unsqueeze(1)"
        else:
            fix = "give the mask one dimension per score dimension, of size 1 where it does not vary"
        raise CourseValueError(f"expected a {len(scores_shape)}-D bool mask for attention scores {scores}, got a "
                               f"{mask.dim()}-D mask of shape {tuple(mask.shape)}; {fix}")
    for name, size, expected in zip(names, mask.shape, scores_shape):
        if size not in (1, expected):
            allowed = "1" if expected == 1 else f"1 or {expected}"
            raise CourseValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to the attention scores {scores} as they "
                f"are: its {name} dimension is {size}, expected {allowed} (each mask dimension must be 1 or the "
                "scores' size: a mask may not enlarge the scores); build the mask from the same ids as the input: "
                "padding_mask(ids) → (batch, 1, 1, seq), causal_mask(seq_len) → (1, 1, seq, seq)")


def check_attention_inputs(query: object, key: object, value: object, mask: torch.Tensor | None = None,
                           dropout_p: float = 0.0, scale: float | None = None) -> None:
    """Raise a course error unless the arguments fit :func:`scaled_dot_product_attention` (see its docstring)."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, x)
        if not x.is_floating_point():
            raise CourseTypeError(f"{name} must be floating-point vectors, got {x.dtype}; embed token ids first, "
                                  "and convert a 0/1 tensor with .float()")
        if x.dim() != query.dim() or x.dim() < 2:
            raise CourseValueError(f"{name} must have shape (..., seq, features) with as many dimensions as query "
                                   f"{tuple(query.shape)} (at least 2), got {tuple(x.shape)}")
        check_non_empty(name, x)
    if not query.dtype == key.dtype == value.dtype:
        raise CourseTypeError(f"query, key and value must have one dtype, got {query.dtype}, {key.dtype} and "
                              f"{value.dtype}; convert them with .to(query.dtype) (mixing would silently promote)")
    if not query.shape[:-2] == key.shape[:-2] == value.shape[:-2]:
        raise CourseValueError(f"query, key and value need the same leading (batch, heads) dimensions, got "
                               f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
    if dropout_p != 0.0:
        check_probability("dropout_p", dropout_p)
    if scale is not None:
        check_real("scale", scale, 0.0, low_inclusive=False, hint="; None uses 1 / sqrt(d_k)")
    if query.size(-1) != key.size(-1):
        raise CourseValueError(f"query and key need the same last dimension d_k, got {query.size(-1)} and "
                               f"{key.size(-1)}; project both to the same size")
    if key.size(-2) != value.size(-2):
        raise CourseValueError(f"key and value need the same length, got {key.size(-2)} and {value.size(-2)}; "
                               "pass one value per key")
    if mask is not None:
        check_mask(mask, torch.Size((*query.shape[:-1], key.size(-2))))


def _hide_unseen_keys(mask: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Zero the keys and values that no query may see (padding), so a NaN/inf stored there cannot reach a real
    output through ``0 × NaN``. ``mask`` broadcasts to ``(..., q_len, k_len)``; key/value are ``(..., k_len, d)``."""
    seen = mask.any(dim=-2)[..., None]                                   # (..., k_len, 1)
    if seen.dim() == 4 and seen.size(1) not in (1, key.size(1)):         # per-query-head mask, fewer K/V heads
        seen = seen.any(dim=1, keepdim=True)
    return key.masked_fill(~seen, 0.0), value.masked_fill(~seen, 0.0)


@checked_by(check_attention_inputs)
def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                                 scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q Kᵀ / √d_k) V``, written out step by step (lesson 03).

    Args:
        query: ``(..., q_len, d_k)``; key: ``(..., k_len, d_k)``; value: ``(..., k_len, d_v)``, one dtype.
        mask: optional bool, ``True`` = may attend, with as many dimensions as the scores ``(..., q_len, k_len)``,
            each of size 1 or the scores' size (see :func:`check_mask`).
        dropout_p: dropout on the attention weights (use 0 in evaluation).
        scale: the factor on the scores; default ``1 / √d_k``.

    Returns:
        ``(output (..., q_len, d_v), weights (..., q_len, k_len))`` in the dtype of ``query``. A query whose every
        key is masked gets all-zero weights and a zero output — finite, never NaN; a key no query may see
        contributes nothing, even if it holds NaN. float16/bfloat16 inputs are computed in float32 (as the fused
        kernels accumulate), so large inputs do not overflow.
    """
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    compute_dtype = torch.promote_types(query.dtype, torch.float32)  # float16/bfloat16 → float32
    if mask is not None:
        key, value = _hide_unseen_keys(mask, key, value)
    # scale the queries *before* the product: Q Kᵀ alone can exceed the float16 range where Q Kᵀ / √d_k does not
    scores = (query.to(compute_dtype) * scale) @ key.to(compute_dtype).transpose(-2, -1)
    if mask is not None:
        # a finite "minus infinity": a fully masked row becomes a uniform softmax instead of 0/0 = NaN, ...
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        # ... and zeroing the masked entries afterwards turns that uniform row into all zeros.
        weights = weights.masked_fill(~mask, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    output = weights @ value.to(compute_dtype)
    return output.to(query.dtype), weights.to(query.dtype)


class MultiHeadAttention(nn.Module):
    """Multi-head attention for self-attention (query = key = value) and cross-attention (lesson 03).

    ``use_fast_path=True`` computes the same result through ``F.scaled_dot_product_attention`` (fused kernels)
    whenever the weights are not requested. ``kdim``/``vdim`` (default ``d_model``) are the feature sizes of the
    keys and values when they differ from the queries', as in ``nn.MultiheadAttention``.

    Lesson 09's switches: ``n_kv_heads`` (default ``n_heads``) key/value heads shared by groups of query heads
    (grouped-query attention; 1 = multi-query), and ``rope_base`` (default ``None``): rotate queries and keys by
    their positions (RoPE, self-attention only; with a cache the new tokens continue after the cached ones).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 use_fast_path: bool = True, kdim: int | None = None, vdim: int | None = None,
                 n_kv_heads: int | None = None, rope_base: float | None = None) -> None:
        super().__init__()
        check_heads(d_model, n_heads)
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        check_kv_heads(n_heads, self.n_kv_heads)
        self.kdim = d_model if kdim is None else check_positive_int("kdim", kdim)
        self.vdim = d_model if vdim is None else check_positive_int("vdim", vdim)
        self.scale = 1.0 / math.sqrt(self.d_head)
        self.dropout = check_probability("dropout", dropout)
        self.use_fast_path = check_bool("use_fast_path", use_fast_path)
        self.rope_base = None if rope_base is None else check_real("rope_base", rope_base, 1.0, low_inclusive=False)
        if self.rope_base is not None:
            rope_frequencies(self.d_head, self.rope_base)  # refuses an odd d_head now, not at the first forward
        check_bool("bias", bias)
        kv_features = self.n_kv_heads * self.d_head
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(self.kdim, kv_features, bias=bias)
        self.w_v = nn.Linear(self.vdim, kv_features, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.capture = False  # set by capture_attention()
        self.captured_weights: torch.Tensor | None = None

    def check_split_input(self, x: torch.Tensor, n_heads: int | None = None) -> None:
        """Raise a course error unless ``x`` fits :meth:`split_heads`."""
        heads = self.n_heads if n_heads is None else check_positive_int("n_heads", n_heads)
        self._check_head_input(x, 3, "(batch, seq, heads · d_head)", -1, heads * self.d_head)

    @checked_by(check_split_input)
    def split_heads(self, x: torch.Tensor, n_heads: int | None = None) -> torch.Tensor:
        """``(batch, seq, heads · d_head)`` → ``(batch, heads, seq, d_head)``; ``heads`` is ``n_heads`` unless given
        (the keys and values of grouped-query attention have ``n_kv_heads``)."""
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.n_heads if n_heads is None else n_heads, self.d_head).transpose(1, 2)

    def check_merge_input(self, x: torch.Tensor) -> None:
        """Raise a course error unless ``x`` fits :meth:`merge_heads`."""
        self._check_head_input(x, 4, "(batch, heads, seq, d_head)", -1, self.d_head)
        if x.size(1) != self.n_heads:
            raise CourseValueError(f"x must have shape (batch, heads={self.n_heads}, seq, d_head), got "
                                   f"{tuple(x.shape)}; merge the output of split_heads")

    @checked_by(check_merge_input)
    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, heads, seq, d_head)`` → ``(batch, seq, d_model)``."""
        batch, _, seq, _ = x.shape
        return x.transpose(1, 2).contiguous().view(batch, seq, self.d_model)

    def _check_head_input(self, x: torch.Tensor, rank: int, shape_doc: str, dim: int, size: int) -> None:
        """Raise a course error unless ``x`` is a non-empty tensor of this block's dtype, of ``rank`` dimensions and
        ``size`` features in dimension ``dim``."""
        check_rank(x, rank, "x", shape_doc)
        if x.size(dim) != size:
            raise CourseValueError(f"x must have shape {shape_doc} with {size} in the last dimension, got "
                                   f"{tuple(x.shape)}")
        check_float_input(x, self, "x")
        check_non_empty("x", x)

    def check_inputs(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     mask: torch.Tensor | None = None, need_weights: bool = False, cache: LayerCache | None = None,
                     static_kv: bool = False) -> None:
        """Raise a course error unless the arguments fit this block; see :meth:`forward`."""
        for name, x, features in (("query", query, "d_model"), ("key", key, "kdim"), ("value", value, "vdim")):
            size = getattr(self, features)
            check_rank(x, 3, name, f"(batch, seq, {features}={size})")
            if x.size(-1) != size:
                raise CourseValueError(f"{name} must have shape (batch, seq, {features}={size}), got "
                                       f"{tuple(x.shape)}; project it to {size} features first")
            check_float_input(x, self, name)
            check_non_empty(name, x)
        check_same_batch(("query", query), ("key", key), ("value", value))
        if key.size(1) != value.size(1):
            raise CourseValueError(f"key and value need the same length, got {key.size(1)} and {value.size(1)}; "
                                   "pass one value per key")
        check_bool("need_weights", need_weights)
        check_bool("static_kv", static_kv)
        if self.rope_base is not None and (static_kv or query.size(1) != key.size(1)):
            raise CourseValueError("RoPE rotates queries and keys of the same tokens: this block (rope_base="
                                   f"{self.rope_base}) does self-attention only, got query {tuple(query.shape)} and "
                                   f"key {tuple(key.shape)}{' with static_kv=True' if static_kv else ''}")
        past = 0
        if cache is not None:
            if not isinstance(cache, LayerCache):
                raise CourseTypeError(f"cache must be a LayerCache (one entry of model.new_cache()), got "
                                      f"{describe(cache)}; build the model's cache with model.new_cache() and let "
                                      "the model hand each layer its entry")
            if cache.batch_size is not None and cache.batch_size != query.size(0):
                raise CourseValueError(f"the cache holds keys for {cache.batch_size} rows but the query has "
                                       f"{query.size(0)}; start a new cache for a new batch")
            past = cache.length
        if mask is not None:  # one check for both paths: the same bad mask gives the same error
            k_len = past if static_kv and past else past + key.size(1)
            check_mask(mask, torch.Size((query.size(0), self.n_heads, query.size(1), k_len)))

    @checked_by(check_inputs)
    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None, need_weights: bool = False,
                cache: LayerCache | None = None,
                static_kv: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: ``(batch, q_len, d_model)``; key: ``(batch, k_len, kdim)``; value: ``(batch, k_len, vdim)``.
            mask: bool, ``True`` = may attend, 4-D, each dimension 1 or the size of ``(batch, heads, q_len,
                k_len)``: ``padding_mask(ids)`` (batch, 1, 1, k_len), ``causal_mask(n)`` (1, 1, n, n), or both
                combined. Anything else — a ``(batch, seq)`` mask, a mask for a bigger batch — raises.
            need_weights: also return the per-head attention weights.
            cache: the :class:`~course_utils.kv_cache.LayerCache` this layer owns during incremental decoding.
                Self-attention (``static_kv=False``) appends the new keys/values to the cached ones;
                cross-attention (``static_kv=True``) projects the memory once, at the first step, and reuses it.

        Returns:
            ``(output (batch, q_len, d_model), weights (batch, heads, q_len, k_len) or None)``.
        """
        q = self.split_heads(self.w_q(query))                              # (batch, heads, q_len, d_head)
        if cache is not None and static_kv and cache.length:
            k, v = cache.keys, cache.values
        else:
            k = self.split_heads(self.w_k(key), self.n_kv_heads)           # (batch, kv_heads, k_len, d_head)
            v = self.split_heads(self.w_v(value), self.n_kv_heads)
            if self.rope_base is not None:                                 # lesson 09: rotate by position
                q, k = self._rotate_by_position(q, k, past=0 if cache is None else cache.length)
            if cache is not None:
                k, v = cache.append(k, v)
        dropout_p = self.dropout if self.training else 0.0
        need_weights = need_weights or self.capture
        if need_weights or not self.use_fast_path:
            groups = self.n_heads // self.n_kv_heads
            out, weights = scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups), mask,
                                                        dropout_p, self.scale)
        else:
            if mask is not None:
                k, v = _hide_unseen_keys(mask, k, v)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=self.scale,
                                                 enable_gqa=self.n_kv_heads != self.n_heads)
            if mask is not None:  # the fused kernels may leave NaN where a query can see no key: make it 0
                out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
            weights = None
        if self.capture:
            self.captured_weights = weights.detach()
        return self.w_o(self.merge_heads(out)), (weights if need_weights else None)

    def _rotate_by_position(self, q: torch.Tensor, k: torch.Tensor, past: int) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE on ``q``/``k`` ``(batch, heads, seq, d_head)`` of the tokens at positions ``past .. past + seq - 1``."""
        positions = torch.arange(past, past + q.size(2), device=q.device)
        cos, sin = _rotary_tables(positions, rope_frequencies(self.d_head, self.rope_base))
        return _rotate(q, cos, sin), _rotate(k, cos, sin)


@contextmanager
def capture_attention(model: nn.Module) -> Iterator[dict[str, torch.Tensor]]:
    """Record the attention weights of every :class:`MultiHeadAttention` inside ``model``.

    Example::

        with capture_attention(model) as maps:
            model(ids)
        maps["encoder.layers.0.self_attn"]   # (batch, heads, q_len, k_len)

    With a KV cache, each entry holds the last call's weights.
    """
    if not isinstance(model, nn.Module):
        raise CourseTypeError(f"capture_attention expects the model (an nn.Module), got {type(model).__name__}")
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
