"""A task where order is the whole answer: which of two marked tokens comes first (lesson 02).

Every sequence holds random filler tokens and exactly one ``A`` and one ``B``; the label is 1 when ``A`` stands
before ``B``. The examples come in **mirrored pairs**: rows ``2j`` and ``2j + 1`` are the same sequence with ``A``
and ``B`` swapped, so they hold the same tokens (as a multiset) with opposite labels. A model that cannot see
positions — self-attention without a positional encoding, then a mean over the tokens — gives both rows of a pair
the same prediction, so it scores **exactly** 50 % on any set of pairs, not merely about 50 %. With positions the
task is easy: compare where ``A`` and ``B`` are.
"""
from __future__ import annotations

__all__ = ["MARKER_A", "MARKER_B", "FIRST_FILLER", "which_comes_first"]

import torch

from ..errors import CourseValueError
from ..validation import check_int, check_positive_int

MARKER_A, MARKER_B = 1, 2  # id 0 stays free for [PAD], as everywhere in the course
FIRST_FILLER = 3


def which_comes_first(n_examples: int, seq_len: int = 16, vocab_size: int = 16,
                      seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_examples`` sequences of ``seq_len`` ids with one ``A`` and one ``B``, labelled by which comes first.

    Args:
        n_examples: an even number: the examples come in mirrored pairs (rows ``2j`` and ``2j + 1`` swap ``A`` and
            ``B``), so exactly half the labels are 1.
        seq_len: tokens per sequence (at least 2: room for ``A`` and ``B``).
        vocab_size: ids ``0 .. vocab_size - 1``: 0 unused (``[PAD]``), ``MARKER_A = 1``, ``MARKER_B = 2``, fillers
            drawn uniformly from ``3 .. vocab_size - 1`` (at least one: ``vocab_size >= 4``).
        seed: the draw is deterministic for a given seed.

    Returns:
        ``ids`` ``(n_examples, seq_len)`` int64 and ``labels`` ``(n_examples,)`` int64: 1 if ``A`` comes before ``B``,
        else 0.
    """
    check_positive_int("n_examples", n_examples)
    if n_examples % 2:
        raise CourseValueError(f"n_examples must be even, got {n_examples}: every example comes with its mirror "
                               f"image (A and B swapped); pass {n_examples + 1}")
    check_int("seq_len", seq_len, minimum=2, hint="; a sequence needs room for A and B")
    check_int("vocab_size", vocab_size, minimum=FIRST_FILLER + 1,
              hint=f"; ids 0-2 are [PAD], A and B, so fillers start at {FIRST_FILLER}")
    check_int("seed", seed)
    generator = torch.Generator().manual_seed(seed)
    n_pairs = n_examples // 2
    ids = torch.randint(FIRST_FILLER, vocab_size, (n_pairs, seq_len), generator=generator)
    slots = torch.rand(n_pairs, seq_len, generator=generator).argsort(dim=1)[:, :2]   # two distinct positions
    rows = torch.arange(n_pairs)
    ids[rows, slots[:, 0]] = MARKER_A
    ids[rows, slots[:, 1]] = MARKER_B
    mirrored = ids.clone()
    mirrored[rows, slots[:, 0]] = MARKER_B
    mirrored[rows, slots[:, 1]] = MARKER_A
    a_first = (slots[:, 0] < slots[:, 1]).long()
    ids = torch.stack([ids, mirrored], dim=1).reshape(n_examples, seq_len)         # rows 2j, 2j + 1: a pair
    labels = torch.stack([a_first, 1 - a_first], dim=1).reshape(n_examples)
    return ids, labels
