"""The KV cache: the keys and values attention has already computed, kept for generation one token at a time.

Built in lesson 07 (the translator's decoder) and reused by the GPT (lesson 08) and the modern block (lesson 09).
A model makes one :class:`KVCache` per batch of prompts (``model.new_cache()``); each attention layer owns one
:class:`LayerCache` in it and appends the keys/values of every new step. Beam search copies each hypothesis's
parent rows with :meth:`KVCache.reorder`.
"""
from __future__ import annotations

__all__ = ["KVCache", "LayerCache"]

import torch

from .errors import CourseTypeError, CourseValueError
from .validation import check_bool, check_non_empty, check_non_negative_int, check_rank, check_tensor, checked_by


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
