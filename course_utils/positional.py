"""Positional encodings: sinusoidal (fixed) and learned."""
from __future__ import annotations

__all__ = ["LearnedPositionalEncoding", "SinusoidalPositionalEncoding", "sinusoidal_table"]

import math

import torch
import torch.nn as nn

from .errors import CourseTypeError, CourseValueError
from .validation import (
    check_float_input,
    check_non_empty,
    check_non_negative_int,
    check_positive_int,
    check_rank,
    checked_by,
)


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """The table of "Attention Is All You Need", ``(max_len, d_model)`` float32.

    ``PE[pos, 2i] = sin(pos / 10000^(2i/d_model))`` and ``PE[pos, 2i+1] = cos(...)``. The frequencies are computed
    as ``exp(-2i · ln(10000) / d_model)``: the same numbers as the power, without forming ``10000**x`` first.
    """
    check_positive_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    if d_model % 2 != 0:
        raise CourseValueError(f"sinusoidal encoding pairs sin/cos dimensions, so d_model must be even, got {d_model}")
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    frequency = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


def check_positions(x: torch.Tensor, d_model: int, max_len: int, offset: int) -> None:
    """Raise a clear error unless ``x`` is a float ``(batch, seq, d_model)`` tensor whose positions
    ``offset .. offset + seq - 1`` exist in a table of ``max_len`` rows."""
    check_rank(x, 3, "x", f"(batch, seq, d_model={d_model})")
    if x.size(-1) != d_model:
        raise CourseValueError(f"positional encoding expects (batch, seq, d_model={d_model}), got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise CourseTypeError(f"positional encoding adds to float vectors (batch, seq, d_model), got {x.dtype}; "
                              "embed token ids first (TokenEmbedding)")
    check_non_empty("x", x, "at least one sequence of at least one vector")
    check_non_negative_int("offset", offset)
    if offset + x.size(1) > max_len:
        raise CourseValueError(f"sequence of {x.size(1)} positions starting at {offset} exceeds max_len={max_len} "
                               "of the positional encoding; truncate the input or build the model with a larger "
                               "max_len")


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table; the table is a buffer (moves with ``.to(device)``, is not trained)."""

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def check_inputs(self, x: torch.Tensor, offset: int = 0) -> None:
        check_positions(x, self.d_model, self.max_len, offset)

    @checked_by(check_inputs)
    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``(batch, seq, d_model)`` → same shape, ``x + PE[offset : offset + seq]``.

        ``offset`` is the position of the first vector (non-zero when decoding one token at a time).
        """
        return x + self.table[offset: offset + x.size(1)].to(x.dtype)


class LearnedPositionalEncoding(nn.Module):
    """Adds a trained vector per position (as in BERT); cannot go past ``max_len``."""

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = check_positive_int("max_len", max_len)
        self.table = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.table.weight, std=0.02)

    def check_inputs(self, x: torch.Tensor, offset: int = 0) -> None:
        check_positions(x, self.d_model, self.max_len, offset)
        check_float_input(x, self)

    @checked_by(check_inputs)
    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``(batch, seq, d_model)`` → same shape, ``x + P[offset : offset + seq]``."""
        return x + self.table.weight[offset: offset + x.size(1)]
