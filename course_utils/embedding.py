"""Token embeddings: ids → vectors, scaled by √d_model (lesson 01 builds it as one_hot(ids) @ W · √d_model)."""
from __future__ import annotations

__all__ = ["TokenEmbedding"]

import math

import torch
import torch.nn as nn

from .validation import check_bool, check_index, check_positive_int, check_token_ids, checked_by


class TokenEmbedding(nn.Module):
    """Lookup table ``(vocab_size, d_model)``, output multiplied by √d_model.

    The table starts as ``nn.Embedding`` does, from N(0, 1), so the scaled rows have RMS about √d_model; the full
    models (``models.init_weights``) re-initialise it with Xavier's rule, which gives an RMS below the positional
    encoding's 0.71 that shrinks as the vocabulary grows. Only a start from N(0, 1/d_model), the reference code's,
    gives RMS 1 for every size: lesson 01 measures all three. ``pad_id``: the row of that id (``[PAD]``) starts at zero
    and gets no gradient (``nn.Embedding``'s ``padding_idx``); after ``models.init_weights`` it is a fixed non-zero
    row, harmless because attention masks ``[PAD]``. Lesson 01 writes this block out, ``pad_id`` included.
    ``scale=False`` returns the rows as they are (GPT-2, BERT and Llama do not scale).
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
