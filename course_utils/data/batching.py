"""Batches of token ids: sequences of similar length together (little padding), reshuffled every epoch.

Lessons 04–06 batch their data this way; lesson 05 explains why (padding is wasted compute, and a length-sorted
order alone would feed the model short strings first and long strings last, so the batch *order* is shuffled).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import torch

from ..errors import CourseTypeError, CourseValueError
from ..tokenization import PAD_ID, pad_batch
from ..validation import (
    check_batches,
    check_bool,
    check_int,
    check_non_negative_int,
    check_positive_int,
    check_token_ids,
    describe,
)

__all__ = ["ReshuffledEachEpoch", "length_bucketed_batches", "trim_padding"]


def length_bucketed_batches(sequences: Sequence[Sequence[int]], batch_size: int,
                            labels: Sequence[int] | torch.Tensor | None = None, *, shuffle: bool = True,
                            seed: int = 0, pad_id: int = PAD_ID) -> list:
    """Sort ``sequences`` by length, cut them into padded batches, and (``shuffle``) shuffle the batch order.

    Args:
        sequences: token-id lists (special tokens already added, e.g. with ``add_special_tokens``).
        batch_size: sequences per batch (the last batch may be smaller).
        labels: one label per sequence, or ``None``.
        shuffle: shuffle the order of the batches with ``torch.Generator().manual_seed(seed)``; the sequences
            inside a batch stay the ones of similar length.

    Returns:
        a list of ``ids (batch, seq)`` int64 tensors right-padded with ``pad_id`` — or, with ``labels``, of
        ``(ids (batch, seq), labels (batch,))`` pairs. A list, so ``training.fit`` can iterate it every epoch.
    """
    if isinstance(sequences, (str, bytes, torch.Tensor)) or not hasattr(sequences, "__len__"):
        raise CourseTypeError(f"sequences must be a list of token-id lists, got {describe(sequences)}")
    check_positive_int("batch_size", batch_size, hint="; pass e.g. batch_size=32")
    check_bool("shuffle", shuffle)
    check_int("seed", seed)
    if len(sequences) == 0:
        raise CourseValueError("length_bucketed_batches got no sequences; pass at least one list of token ids.")
    if labels is not None:
        labels = torch.as_tensor(labels)
        if labels.dim() != 1 or len(labels) != len(sequences):
            raise CourseValueError(f"length_bucketed_batches: got {len(sequences)} sequences but labels of shape "
                                   f"{tuple(labels.shape)}; pass one label per sequence.")
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))   # stable: ties keep their order
    batches = []
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        ids = pad_batch([sequences[i] for i in rows], pad_id=pad_id)
        batches.append(ids if labels is None else (ids, labels[rows]))
    if shuffle:
        permutation = torch.randperm(len(batches), generator=torch.Generator().manual_seed(seed)).tolist()
        batches = [batches[i] for i in permutation]
    return batches


class ReshuffledEachEpoch:
    """Re-iterable batches whose order changes at every pass (seeded), for ``training.fit(..., epochs=n)``.

    ``fit`` iterates ``train_batches`` once per epoch; a plain list gives the same order every epoch. Wrapping
    the list here draws a new order each time, from one seeded generator, so a rerun repeats all orders.
    """

    def __init__(self, batches: Sequence, seed: int = 0):
        check_batches("batches", batches, "a list of batches, e.g. from length_bucketed_batches")
        check_int("seed", seed)
        self.batches = list(batches)
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator:
        order = torch.randperm(len(self.batches), generator=self.generator).tolist()
        return iter([self.batches[i] for i in order])


def trim_padding(ids: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    """``(batch, seq)`` → ``(batch, longest real row)``: padding-only columns cost time and change nothing."""
    check_token_ids(ids, torch.iinfo(torch.long).max, name="ids")
    check_non_negative_int("pad_id", pad_id)
    return ids[:, : max(1, int((ids != pad_id).sum(1).max()))]
