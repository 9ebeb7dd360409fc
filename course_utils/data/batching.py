"""Batches of token ids: sequences of similar length together (little padding), reshuffled every epoch.

Lessons 04–06 batch their data this way; lesson 05 explains why (padding is wasted compute, and a length-sorted
order alone would feed the model short strings first and long strings last, so the batch *order* is shuffled).
"""
from __future__ import annotations

from typing import Iterator, Sequence

import torch

from ..errors import CourseTypeError, CourseValueError
from ..tokenization import PAD_ID, pad_batch


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
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise CourseTypeError(f"length_bucketed_batches: batch_size must be an int, got {type(batch_size).__name__}; "
                              "pass e.g. batch_size=32.")
    if batch_size < 1:
        raise CourseValueError(f"length_bucketed_batches: batch_size must be >= 1, got {batch_size}.")
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
        if len(batches) == 0:
            raise CourseValueError("ReshuffledEachEpoch got no batches; pass a non-empty list of batches.")
        self.batches = list(batches)
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator:
        order = torch.randperm(len(self.batches), generator=self.generator).tolist()
        return iter([self.batches[i] for i in order])
