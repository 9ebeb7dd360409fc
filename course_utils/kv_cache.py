"""The KV cache: the keys and values attention has already computed, kept for generation one token at a time.

Built in lesson 07 (the translator's decoder) and reused by the GPT (lesson 08) and the modern block (lesson 09).
A model makes one :class:`KVCache` per batch of prompts (``model.new_cache()``); each attention layer owns one
:class:`LayerCache` in it and appends the keys/values of every new step. Beam search copies each hypothesis's
parent rows with :meth:`KVCache.reorder`.

:class:`CachedMultiHeadAttention` is lesson 03's block taught to use a cache — the attention the course's models are
built with.
"""
from __future__ import annotations

__all__ = ["CachedMultiHeadAttention", "KVCache", "LayerCache"]

import torch
import torch.nn as nn

from .attention import (
    MultiHeadAttention,
    check_attention_settings,
    check_mask,
    check_qkv,
    fused_attention,
    scaled_dot_product_attention,
)
from .errors import CourseTypeError, CourseValueError
from .validation import (
    check_bool,
    check_non_empty,
    check_non_negative_int,
    check_positive_int,
    check_rank,
    check_tensor,
    checked_by,
    describe,
)


def check_rows(rows: object, batch_size: int | None) -> None:
    """Raise a course error unless ``rows`` is a non-empty 1-D integer tensor of row indices in ``[0, batch_size)``
    (any index while nothing is cached, ``batch_size=None``)."""
    check_tensor("rows", rows, hint=", e.g. torch.tensor([1, 0]) (a long tensor of row indices)")
    if rows.dtype.is_floating_point or rows.dtype == torch.bool or rows.dtype.is_complex:
        raise CourseTypeError(f"rows must be integer row indices (torch.long), got {rows.dtype}; for a bool mask of "
                              "the rows to keep use mask.nonzero().squeeze(1)")
    if rows.dim() != 1 or rows.numel() == 0:
        raise CourseValueError(f"rows must have shape (new_batch,) with new_batch >= 1, got {tuple(rows.shape)}; pass "
                               "one cached row index per row of the new batch (beam search: each hypothesis's parent)")
    if batch_size is not None and (int(rows.min()) < 0 or int(rows.max()) >= batch_size):
        raise CourseValueError(f"rows must lie in [0, {batch_size}) (the cache holds {batch_size} rows), found range "
                               f"[{int(rows.min())}, {int(rows.max())}]; index the rows of the batch that filled it")


class LayerCache:
    """One attention layer's cached keys and values, each ``(batch, kv_heads, length, d_head)``."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    def check_append(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Raise a course error unless ``keys``/``values`` can extend this cache: non-empty float tensors ``(batch,
        kv_heads, new, d_head)`` with the same batch, heads and positions, and the cached ones' dtype and sizes."""
        for name, x in (("keys", keys), ("values", values)):
            check_rank(x, 4, name, "(batch, kv_heads, new_positions, d_head)")
            if not x.is_floating_point():
                raise CourseTypeError(f"{name} must be floating-point vectors (the projected {name}), got {x.dtype}")
            check_non_empty(name, x, "at least one row, head, position and feature")
        if keys.shape[:-1] != values.shape[:-1]:
            raise CourseValueError(f"keys {tuple(keys.shape)} and values {tuple(values.shape)} need the same (batch, "
                                   "kv_heads, new_positions): one value per key")
        if self.keys is None:
            return
        for name, new, cached in (("keys", keys, self.keys), ("values", values, self.values)):
            if new.dtype != cached.dtype or new.device != cached.device or new.shape[:2] != cached.shape[:2] \
                    or new.size(3) != cached.size(3):
                raise CourseValueError(f"the new {name} ({new.dtype}, shape {tuple(new.shape)}, {new.device}) do not "
                                       f"continue the cached ones ({cached.dtype}, shape {tuple(cached.shape)}, "
                                       f"{cached.device}): only the positions (dim 2) may differ; start a new cache "
                                       "for another batch or model")

    @checked_by(check_append)
    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new steps' keys/values (dim 2 = positions) and return everything cached so far."""
        if self.keys is not None:
            keys, values = torch.cat([self.keys, keys], dim=2), torch.cat([self.values, values], dim=2)
        self.keys, self.values = keys, values
        return keys, values

    @property
    def length(self) -> int:
        """How many positions are cached (0 before the first step)."""
        return 0 if self.keys is None else self.keys.size(2)

    @property
    def batch_size(self) -> int | None:
        """Rows cached (``None`` before the first step)."""
        return None if self.keys is None else self.keys.size(0)

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached tensors."""
        return sum(t.numel() * t.element_size() for t in (self.keys, self.values) if t is not None)

    def check_reorder(self, rows: torch.Tensor) -> None:
        check_rows(rows, self.batch_size)

    @checked_by(check_reorder)
    def reorder(self, rows: torch.Tensor) -> None:
        """Keep the cached rows ``rows`` (a ``(new_batch,)`` long tensor), e.g. each beam's parent."""
        if self.keys is not None:
            self.keys, self.values = self.keys[rows], self.values[rows]


class KVCache:
    """A model's cache: one :class:`LayerCache` per self-attention layer, and per cross-attention layer for an
    encoder–decoder (there the memory's keys/values are projected once, at the first step, and reused)."""

    def __init__(self, n_layers: int, cross_attention: bool = False) -> None:
        n_layers = check_non_negative_int("n_layers", n_layers)
        check_bool("cross_attention", cross_attention)
        self.self_attention = [LayerCache() for _ in range(n_layers)]
        self.cross_attention = [LayerCache() for _ in range(n_layers)] if cross_attention else None

    def layers(self) -> list[LayerCache]:
        """Every layer cache, self-attention first."""
        return self.self_attention + (self.cross_attention or [])

    @property
    def length(self) -> int:
        """How many target positions are cached (0 before the first step)."""
        return self.self_attention[0].length if self.self_attention else 0

    @property
    def batch_size(self) -> int | None:
        """Rows cached (``None`` before the first step)."""
        return self.self_attention[0].batch_size if self.self_attention else None

    @property
    def nbytes(self) -> int:
        """Bytes held by every cached key and value."""
        return sum(layer.nbytes for layer in self.layers())

    def check_reorder(self, rows: torch.Tensor) -> None:
        check_rows(rows, self.batch_size)

    @checked_by(check_reorder)
    def reorder(self, rows: torch.Tensor) -> None:
        """Keep the cached rows ``rows`` in every layer (beam search: each hypothesis inherits its parent's)."""
        for layer in self.layers():
            layer.reorder(rows)


# ---------------------------------------------------------------------------- attention with a cache
def check_cached_settings(block: nn.Module, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                          use_fast_path: bool = True, kdim: int | None = None, vdim: int | None = None) -> None:
    """Raise a course error unless the arguments fit :class:`CachedMultiHeadAttention`."""
    check_attention_settings(block, d_model, n_heads, dropout, bias)
    check_bool("use_fast_path", use_fast_path)
    for name, size in (("kdim", kdim), ("vdim", vdim)):
        if size is not None:
            check_positive_int(name, size)


def check_cache_entry(query: torch.Tensor, cache: object) -> int:
    """The number of cached positions, after checking ``cache`` is ``None`` or a :class:`LayerCache` for
    ``query``'s rows."""
    if cache is None:
        return 0
    if not isinstance(cache, LayerCache):
        raise CourseTypeError(f"cache must be a LayerCache (one entry of model.new_cache()), got {describe(cache)}; "
                              "build the model's cache with model.new_cache() and let the model hand each layer its "
                              "entry")
    if cache.batch_size is not None and cache.batch_size != query.size(0):
        raise CourseValueError(f"the cache holds keys for {cache.batch_size} rows but the query has {query.size(0)}; "
                               "start a new cache for a new batch")
    return cache.length


def check_cached_inputs(block: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        mask: torch.Tensor | None = None, need_weights: bool = False, cache: LayerCache | None = None,
                        static_kv: bool = False) -> None:
    """Raise a course error unless the arguments fit :meth:`CachedMultiHeadAttention.forward`."""
    check_qkv(block, query, key, value, (("d_model", block.d_model), ("kdim", block.kdim), ("vdim", block.vdim)))
    check_bool("need_weights", need_weights)
    check_bool("static_kv", static_kv)
    past = check_cache_entry(query, cache)
    if mask is not None:  # one check for both paths: the same bad mask gives the same error
        k_len = past if static_kv and past else past + key.size(1)
        check_mask(mask, torch.Size((query.size(0), block.n_heads, query.size(1), k_len)))


class CachedMultiHeadAttention(MultiHeadAttention):
    """Lesson 03's :class:`~course_utils.attention.MultiHeadAttention` for decoding one token at a time (lesson 07).

    With ``cache`` (this layer's :class:`LayerCache`), self-attention appends the new keys and values to the cached
    ones; cross-attention (``static_kv=True``) projects the memory once, at the first step, and reuses it. Unless
    the weights are asked for (``need_weights=True``, or :func:`~course_utils.attention.capture_attention`), the
    fused kernel computes the same output without forming them (``use_fast_path=True``:
    :func:`~course_utils.attention.fused_attention`) and ``None`` comes back in their place. ``kdim`` and
    ``vdim`` (default ``d_model``) are the feature sizes of keys and values, as in ``nn.MultiheadAttention``.
    Lesson 09's :class:`~course_utils.modern.GroupedQueryAttention` overrides three of its steps: ``split_kv_heads``,
    ``_rotate_by_position`` and ``_repeat_kv_heads``.
    """

    @checked_by(check_cached_settings)
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 use_fast_path: bool = True, kdim: int | None = None, vdim: int | None = None) -> None:
        super().__init__(d_model, n_heads, dropout, bias)
        self.use_fast_path = use_fast_path
        self.kdim, self.vdim = kdim or d_model, vdim or d_model
        if self.kdim != d_model:
            self.w_k = nn.Linear(self.kdim, d_model, bias=bias)
        if self.vdim != d_model:
            self.w_v = nn.Linear(self.vdim, d_model, bias=bias)

    def split_kv_heads(self, x: torch.Tensor) -> torch.Tensor:
        """Projected keys or values ``(B, T, d_model)`` → ``(B, h, T, d_head)`` (lesson 09: fewer K/V heads)."""
        return self.split_heads(x)

    def _rotate_by_position(self, q: torch.Tensor, k: torch.Tensor, past: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries and keys of the tokens at positions ``past, past + 1, …``: as they are (lesson 09: RoPE)."""
        return q, k

    def _repeat_kv_heads(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values with one head per query head: as they are (lesson 09: repeated for each group)."""
        return k, v

    check_inputs = check_cached_inputs

    @checked_by(check_cached_inputs)
    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None,
                need_weights: bool = False, cache: LayerCache | None = None,
                static_kv: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query (B, T_q, d_model)`` to ``key (B, T_k, kdim)``, ``value (B, T_k, vdim)``.

        ``mask`` as in lesson 03, over every key the query sees (cached ones first): with a cache of ``past``
        positions, self-attention's ``T_k`` is ``past + T_q``. Returns ``(output (B, T_q, d_model), weights
        (B, h, T_q, T_k) or None)``.
        """
        q = self.split_heads(self.w_q(query))                                   # (B, h, T_q, d_head)
        if static_kv and cache is not None and cache.length:                    # cross-attention, later steps:
            k, v = cache.keys, cache.values                                     # the memory projected at step 1
        else:
            k, v = self.split_kv_heads(self.w_k(key)), self.split_kv_heads(self.w_v(value))   # (B, h, T_k, d_head)
            q, k = self._rotate_by_position(q, k, past=0 if cache is None else cache.length)
            if cache is not None:
                k, v = cache.append(k, v)                                       # (B, h, past + T_k, d_head)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights or not self.use_fast_path:
            out, weights = scaled_dot_product_attention(q, *self._repeat_kv_heads(k, v), mask, dropout_p)
        else:
            out, weights = fused_attention(q, k, v, mask, dropout_p), None
        return self.w_o(self.merge_heads(out)), weights
