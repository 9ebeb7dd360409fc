"""A task where order is the whole answer: which of two marked tokens comes first (lesson 02).

Every sequence holds random filler tokens and exactly one ``A`` and one ``B``; the label is 1 when ``A`` stands
before ``B``. The examples come in **mirrored pairs**: rows ``2j`` and ``2j + 1`` are the same sequence with ``A``
and ``B`` swapped, so they hold the same tokens (as a multiset) with opposite labels. A model that cannot see
positions — self-attention without a positional encoding, then a mean over the tokens — gives both rows of a pair
the same prediction, so it scores **exactly** 50 % on any set of pairs, not merely about 50 %. With positions the
task is easy: compare where ``A`` and ``B`` are.

Lesson 02 writes out :class:`OrderModel` (a set model: the same small MLP on every token, then a mean) and
:func:`train_order_model` (lesson 00's loop on this task's data) in its reading flow. The copies here, the same code,
serve that lesson's exercise checks only, so they stay out of ``__all__``.
"""
from __future__ import annotations

__all__ = ["MARKER_A", "MARKER_B", "FIRST_FILLER", "which_comes_first"]

from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..errors import CourseTypeError, CourseValueError
from ..runtime import seed_everything
from ..small_loop import train_steps
from ..validation import check_int, check_positive_int, describe

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


class OrderModel(nn.Module):
    """Lesson 02's model for the order task: ids ``(batch, seq)`` → embedding (+ positions) → the same two-layer MLP
    on every token → mean over the tokens → 2 scores ``(batch, 2)``.

    Without ``positions`` it treats a sequence as a set of tokens, so it scores exactly 50 % on mirrored pairs.
    """

    def __init__(self, positions: nn.Module | None = None, vocab_size: int = 16, d_model: int = 32,
                 hidden: int = 64) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.positions = positions
        self.per_token = nn.Sequential(nn.Linear(d_model, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embedding(ids)                                  # (batch, seq, d_model)
        if self.positions is not None:
            x = self.positions(x)                                # + one vector per position
        return self.head(self.per_token(x).mean(dim=1))          # (batch, 2)


def train_order_model(make_model: Callable[[], nn.Module], seed: int, steps: int = 600,
                      batch_size: int = 64) -> tuple[nn.Module, float, list[float]]:
    """Lesson 02's experiment: seed, build the model with ``make_model()`` (e.g.
    ``lambda: OrderModel(SinusoidalPositionalEncoding(32, 16))``), train it with lesson 00's
    :func:`~course_utils.small_loop.train_steps` (AdamW, lr 3e-3, cross-entropy, random batches of the 2000 training
    sequences ``which_comes_first(2000, seed=1)``), and measure it on the 1000 test sequences
    ``which_comes_first(1000, seed=2)``.

    Returns ``(model, test accuracy as a fraction, the loss of each step)``.
    """
    if not callable(make_model):
        raise CourseTypeError(f"make_model must be a function that builds the model, got {describe(make_model)}; "
                              "e.g. lambda: OrderModel(None)")
    check_int("seed", seed)
    check_positive_int("steps", steps)
    check_positive_int("batch_size", batch_size)
    train_ids, train_labels = which_comes_first(2000, seq_len=16, vocab_size=16, seed=1)
    test_ids, test_labels = which_comes_first(1000, seq_len=16, vocab_size=16, seed=2)
    seed_everything(seed)
    model = make_model()
    if not isinstance(model, nn.Module):
        raise CourseTypeError(f"make_model() must return the model (an nn.Module), got {describe(model)}; "
                              "e.g. lambda: OrderModel(None)")

    def next_batch() -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.randint(0, len(train_ids), (batch_size,))
        return train_ids[rows], train_labels[rows]

    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = train_steps(model, next_batch, F.cross_entropy, optimizer, steps)
    model.eval()
    with torch.no_grad():
        accuracy = (model(test_ids).argmax(dim=-1) == test_labels).float().mean().item()
    return model, accuracy, losses
