"""Token embeddings: ids → vectors, scaled by √d_model (lesson 01 builds it as one_hot(ids) @ W · √d_model)."""
from __future__ import annotations

__all__ = ["TokenEmbedding"]

import math

import torch
import torch.nn as nn

from .validation import check_bool, check_index, check_positive_int, check_token_ids, checked_by


class TokenEmbedding(nn.Module):
    """Lookup table ``(vocab_size, d_model)``, output multiplied by √d_model.

    The scale keeps the token signal comparable to (larger than) the positional encoding, whose entries lie in
    [-1, 1], when the table is initialised with small values. ``scale=False`` returns the rows as they are (GPT-2,
    BERT and Llama do not scale).
    """

    def __init__(self, vocab_size: int, d_model: int, pad_id: int | None = None, scale: bool = True) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.d_model = check_positive_int("d_model", d_model)
        self.scale = check_bool("scale", scale)
        if pad_id is not None:
            check_index("pad_id", pad_id, vocab_size, f"the vocabulary (vocab_size={vocab_size})")
        self.lookup = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)

    @property
    def weight(self) -> nn.Parameter:
        return self.lookup.weight

    def check_ids(self, ids: torch.Tensor) -> None:
        check_token_ids(ids, self.vocab_size)

    @checked_by(check_ids)
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` integer ids (any integer dtype) → ``(batch, seq, d_model)``."""
        if not self.scale:
            return self.lookup(ids.long())
        return self.lookup(ids.long()) * math.sqrt(self.d_model)
