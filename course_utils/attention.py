"""Scaled dot-product attention and multi-head attention (lesson 03).

:class:`MultiHeadAttention` is the block lesson 03 builds, whole: project, split into heads, attend, merge, project
out. The later lessons extend it where they teach: the KV cache and cross-attention's reuse of the memory in
:class:`~course_utils.kv_cache.CachedMultiHeadAttention` (lesson 07, the block the models use), grouped-query heads
and RoPE in :class:`~course_utils.modern.GroupedQueryAttention` (lesson 09). :func:`fused_attention` is the same
attention through PyTorch's fused kernel (``F.scaled_dot_product_attention``), the measured fast option
(``benchmarks/bench_throughput.py``).

Masks follow :mod:`course_utils.masks`: boolean, ``True`` = may attend, 4-D ``(batch | 1, heads | 1, q_len | 1,
k_len)`` — one dimension per score dimension, each of size 1 or the scores' size (:func:`check_mask`).
"""
from __future__ import annotations

import inspect
import math
from contextlib import contextmanager
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import check_heads
from .errors import CourseTypeError, CourseValueError
from .validation import (
    check_bool,
    check_float_input,
    check_non_empty,
    check_probability,
    check_rank,
    check_real,
    check_same_batch,
    check_tensor,
    checked_by,
)

__all__ = ["MultiHeadAttention", "capture_attention", "check_attention_inputs", "check_mask", "fused_attention",
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


def check_fused_inputs(query: object, key: object, value: object, mask: torch.Tensor | None = None,
                       dropout_p: float = 0.0, scale: float | None = None) -> None:
    """:func:`check_attention_inputs`, except that key and value may have fewer heads (dimension -3) than query, a
    divisor of its count: each K/V head then serves a group of query heads (grouped-query attention, lesson 09)."""
    if (all(isinstance(x, torch.Tensor) and x.dim() >= 3 for x in (query, key, value))
            and key.shape[:-2] == value.shape[:-2] and key.shape[:-3] == query.shape[:-3]
            and 0 < key.size(-3) < query.size(-3) and query.size(-3) % key.size(-3) == 0):
        # check them as the repeated heads they stand for (a view: nothing is copied)
        key, value = (x.narrow(-3, 0, 1).expand(*query.shape[:-2], *x.shape[-2:]) for x in (key, value))
    check_attention_inputs(query, key, value, mask, dropout_p, scale)


@checked_by(check_fused_inputs)
def fused_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None,
                    dropout_p: float = 0.0, scale: float | None = None) -> torch.Tensor:
    """:func:`scaled_dot_product_attention`'s output through the fused kernel (``F.scaled_dot_product_attention``),
    which never forms the weights: faster, less memory, same guarantees (a query that may see no key gets a zero
    output, a key no query may see contributes nothing). Key and value may have fewer heads than the query (grouped-
    query attention). Dropout draws its own random numbers, so in training the two functions differ."""
    if mask is not None:
        key, value = _hide_unseen_keys(mask, key, value)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=dropout_p, scale=scale,
                                         enable_gqa=key.dim() > 2 and key.size(-3) != query.size(-3))
    if mask is not None:  # the fused kernels may leave NaN where a query can see no key: make it 0
        out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return out


# ---------------------------------------------------------------------------- the block's checks, at its door
def check_attention_settings(block: nn.Module, d_model: int, n_heads: int, dropout: float = 0.0,
                             bias: bool = True) -> None:
    """Raise a course error unless the arguments fit :class:`MultiHeadAttention`."""
    check_heads(d_model, n_heads)
    check_probability("dropout", dropout)
    check_bool("bias", bias)


def check_head_input(block: nn.Module, x: object, rank: int, shape_doc: str, size: int) -> None:
    """Raise a course error unless ``x`` is a non-empty tensor of the block's dtype, of ``rank`` dimensions with
    ``size`` features in the last one."""
    check_rank(x, rank, "x", shape_doc)
    if x.size(-1) != size:
        raise CourseValueError(f"x must have shape {shape_doc} with {size} in the last dimension, got "
                               f"{tuple(x.shape)}")
    check_float_input(x, block, "x")
    check_non_empty("x", x)


def check_split_input(block: nn.Module, x: object) -> None:
    """Raise a course error unless ``x`` fits :meth:`MultiHeadAttention.split_heads`."""
    check_head_input(block, x, 3, "(batch, seq, heads · d_head)", block.n_heads * block.d_head)


def check_merge_input(block: nn.Module, x: object) -> None:
    """Raise a course error unless ``x`` fits :meth:`MultiHeadAttention.merge_heads`."""
    check_head_input(block, x, 4, "(batch, heads, seq, d_head)", block.d_head)
    if x.size(1) != block.n_heads:
        raise CourseValueError(f"x must have shape (batch, heads={block.n_heads}, seq, d_head), got "
                               f"{tuple(x.shape)}; merge the output of split_heads")


def check_qkv(block: nn.Module, query: object, key: object, value: object,
              features: tuple[tuple[str, int], ...] | None = None) -> None:
    """Raise a course error unless ``query``, ``key`` and ``value`` are non-empty ``(batch, seq, features)`` float
    tensors of the block's dtype, with one batch and one value per key. ``features`` names and sizes their last
    dimensions, ``(("d_model", block.d_model),) * 3`` unless given."""
    features = features or (("d_model", block.d_model),) * 3
    for (name, x), (feature, size) in zip((("query", query), ("key", key), ("value", value)), features):
        check_rank(x, 3, name, f"(batch, seq, {feature}={size})")
        if x.size(-1) != size:
            raise CourseValueError(f"{name} must have shape (batch, seq, {feature}={size}), got "
                                   f"{tuple(x.shape)}; project it to {size} features first")
        check_float_input(x, block, name)
        check_non_empty(name, x)
    check_same_batch(("query", query), ("key", key), ("value", value))
    if key.size(1) != value.size(1):
        raise CourseValueError(f"key and value need the same length, got {key.size(1)} and {value.size(1)}; "
                               "pass one value per key")


def check_block_inputs(block: nn.Module, query: object, key: object, value: object,
                       mask: torch.Tensor | None = None) -> None:
    """Raise a course error unless the arguments fit :meth:`MultiHeadAttention.forward`."""
    check_qkv(block, query, key, value)
    if mask is not None:
        check_mask(mask, torch.Size((query.size(0), block.n_heads, query.size(1), key.size(1))))


# ---------------------------------------------------------------------------- the block
class MultiHeadAttention(nn.Module):
    """Multi-head attention (lesson 03): ``n_heads`` attentions side by side, each on its own ``d_head``-wide slice
    of the projected queries, keys and values; their outputs concatenated and projected back to ``d_model``.

    Self-attention passes one tensor as query, key and value; cross-attention takes key and value from elsewhere.
    The arguments are checked when you call it (see the ``check_*`` functions above), not in the formula.
    """

    @checked_by(check_attention_settings)
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout = dropout                              # on the attention weights, in training only
        self.w_q = nn.Linear(d_model, d_model, bias=bias)   # all heads at once: head i owns the outputs
        self.w_k = nn.Linear(d_model, d_model, bias=bias)   # i·d_head … (i + 1)·d_head − 1
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    @checked_by(check_split_input)
    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, T, d_model)`` → ``(B, h, T, d_head)``: cut the features into ``h`` slices, move heads forward."""
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)

    @checked_by(check_merge_input)
    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, h, T, d_head)`` → ``(B, T, d_model)``: the inverse of :meth:`split_heads`."""
        batch, _, seq, _ = x.shape
        return x.transpose(1, 2).contiguous().view(batch, seq, self.d_model)

    check_inputs = check_block_inputs  # the door of forward; a layer calls it to check the input it hands on

    @checked_by(check_block_inputs)
    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Attend from ``query (B, T_q, d_model)`` to ``key``, ``value (B, T_k, d_model)``.

        ``mask``: bool, True = may attend, 4-D, each dimension 1 or the size of ``(B, h, T_q, T_k)``:
        ``padding_mask(ids)``, ``causal_mask(n)``, or both combined. Returns ``(output (B, T_q, d_model),
        weights (B, h, T_q, T_k))``; in training, the weights after dropout.
        """
        q = self.split_heads(self.w_q(query))                   # (B, h, T_q, d_head)
        k = self.split_heads(self.w_k(key))                     # (B, h, T_k, d_head)
        v = self.split_heads(self.w_v(value))                   # (B, h, T_k, d_head)
        dropout_p = self.dropout if self.training else 0.0
        out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)   # (B, h, T_q, d_head), (B, h, T_q, T_k)
        return self.w_o(self.merge_heads(out)), weights         # (B, T_q, d_model)


# ---------------------------------------------------------------------------- looking inside: heatmaps
def _weights_requested(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A forward pre-hook: call ``module`` with ``need_weights=True`` (the fused kernel forms no weights)."""
    position = list(inspect.signature(module.forward).parameters).index("need_weights")
    if len(args) > position:
        return args[:position] + (True,) + args[position + 1:], kwargs
    return args, {**kwargs, "need_weights": True}


@contextmanager
def capture_attention(model: nn.Module) -> Iterator[dict[str, torch.Tensor]]:
    """Record the attention weights of every :class:`MultiHeadAttention` (subclasses included) inside ``model``.

    Example::

        with capture_attention(model) as maps:
            model(ids)
        maps["encoder.layers.0.self_attn"]   # (batch, heads, q_len, k_len)

    A block that can skip its weights (``need_weights=False``, the fused kernel) computes them while capturing.
    With a KV cache, each entry holds the last call's weights. The hooks are removed on leaving the ``with``.
    """
    if not isinstance(model, nn.Module):
        raise CourseTypeError(f"capture_attention expects the model (an nn.Module), got {type(model).__name__}")
    maps: dict[str, torch.Tensor] = {}

    def keep(name: str):
        def hook(module: nn.Module, args: tuple, output: tuple) -> None:
            maps[name] = output[1].detach()
        return hook

    handles = []
    for name, module in model.named_modules():
        if isinstance(module, MultiHeadAttention):
            if "need_weights" in inspect.signature(module.forward).parameters:
                handles.append(module.register_forward_pre_hook(_weights_requested, with_kwargs=True))
            handles.append(module.register_forward_hook(keep(name)))
    try:
        yield maps
    finally:
        for handle in handles:
            handle.remove()
