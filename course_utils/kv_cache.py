"""The KV cache: the keys and values attention has already computed, kept for generation one token at a time.

Built in lesson 07 (the translator's decoder) and reused by the GPT (lesson 08) and the modern block (lesson 09).
A model makes one :class:`KVCache` per batch of prompts (``model.new_cache()``); each attention layer owns one
:class:`LayerCache` in it and appends the keys/values of every new step. Beam search copies each hypothesis's
parent rows with :meth:`KVCache.reorder`.
"""
from __future__ import annotations

__all__ = ["KVCache", "LayerCache"]

import torch

from .validation import check_non_negative_int


class LayerCache:
    """One attention layer's cached keys and values, each ``(batch, kv_heads, length, d_head)``."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

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

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep the cached rows ``rows`` (a ``(new_batch,)`` long tensor), e.g. each beam's parent."""
        if self.keys is not None:
            self.keys, self.values = self.keys[rows], self.values[rows]


class KVCache:
    """A model's cache: one :class:`LayerCache` per self-attention layer, and per cross-attention layer for an
    encoder–decoder (there the memory's keys/values are projected once, at the first step, and reused)."""

    def __init__(self, n_layers: int, cross_attention: bool = False) -> None:
        n_layers = check_non_negative_int("n_layers", n_layers)
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

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep the cached rows ``rows`` in every layer (beam search: each hypothesis inherits its parent's)."""
        for layer in self.layers():
            layer.reorder(rows)
