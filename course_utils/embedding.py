"""Token embeddings: ids → vectors, scaled by √d_model."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


def check_token_ids(ids: torch.Tensor, vocab_size: int, max_len: int | None = None) -> None:
    """Raise a clear error unless ``ids`` is a non-empty integer ``(batch, seq)`` tensor of valid ids.

    Checks: integer dtype, 2 dimensions, non-empty batch and sequence, every id in ``[0, vocab_size)``, and
    ``seq <= max_len`` when ``max_len`` is given.
    """
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"token ids must be a torch.Tensor, got {type(ids).__name__}; "
                        "wrap them with torch.tensor(ids, dtype=torch.long)")
    if ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.dtype.is_complex:
        raise TypeError(f"token ids must be integers (torch.long), got {ids.dtype}; "
                        "convert with ids.long() — and check you did not pass embeddings instead of ids")
    if ids.dim() != 2:
        raise ValueError(f"token ids must have shape (batch, seq), got {tuple(ids.shape)}; "
                         "for a single sequence use ids.unsqueeze(0)")
    if ids.size(0) == 0 or ids.size(1) == 0:
        raise ValueError(f"empty batch: token ids have shape {tuple(ids.shape)}; "
                         "every batch needs at least one sequence of at least one token")
    if max_len is not None and ids.size(1) > max_len:
        raise ValueError(f"sequence length {ids.size(1)} exceeds max_len={max_len}; truncate the input "
                         "or build the model with a larger max_len")
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(f"token ids must lie in [0, {vocab_size}) (vocab_size={vocab_size}), found range "
                         f"[{low}, {high}]; the tokenizer and the model disagree on the vocabulary size")


class TokenEmbedding(nn.Module):
    """Lookup table ``(vocab_size, d_model)``, output multiplied by √d_model.

    The scale keeps the token signal comparable to (larger than) the positional encoding, whose entries lie in
    [-1, 1], when the table is initialised with small values.
    """

    def __init__(self, vocab_size: int, d_model: int, pad_id: int | None = None) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.lookup = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)

    @property
    def weight(self) -> nn.Parameter:
        return self.lookup.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` long → ``(batch, seq, d_model)``."""
        check_token_ids(ids, self.vocab_size)
        return self.lookup(ids) * math.sqrt(self.d_model)
