"""Exercises of notebook 05 (a classifier): the token-99 base rate, masked mean pooling, a confusion matrix."""
from __future__ import annotations

import math

import torch

from .core import Exercise, ExerciseFailure

PRESENCE_CASES = ((1000, 32), (993, 32), (10, 20), (50, 400))  # the last two: expected count > probability range


def check_p_token_present(ns) -> None:
    function = ns["p_token_present"]
    for vocab_size, seq_len in PRESENCE_CASES:
        got = function(vocab_size, seq_len)
        if isinstance(got, torch.Tensor):
            got = got.item()
        if not isinstance(got, (int, float)):
            raise ExerciseFailure(f"return a number (a probability), got {type(got).__name__}.")
        expected = 1 - (1 - 1 / vocab_size) ** seq_len
        if math.isclose(got, expected, rel_tol=1e-6):
            continue
        if math.isclose(got, seq_len / vocab_size, rel_tol=1e-6):
            raise ExerciseFailure(f"seq_len / vocab_size is the *expected number* of occurrences, not the "
                                  f"probability of at least one; for vocab {vocab_size}, length {seq_len} it is "
                                  f"{got:.3g}{' — more than 1!' if got > 1 else ''}. Use the complement: "
                                  "1 − P(no position holds the token).")
        if math.isclose(got, (1 - 1 / vocab_size) ** seq_len, rel_tol=1e-6):
            raise ExerciseFailure("that is the probability that the token is *absent*; the question asks for "
                                  "present: 1 − that.")
        if math.isclose(got, (1 / vocab_size) ** seq_len, rel_tol=1e-6) or math.isclose(got, 1 / vocab_size):
            raise ExerciseFailure("that is the chance of the token at every position (or at one given position). "
                                  "Present at least once = 1 − (1 − 1/vocab_size) ** seq_len.")
        raise ExerciseFailure(f"for vocab {vocab_size}, length {seq_len} expected {expected:.4f}, got {got:.4f}.")


def example_hidden_and_ids() -> tuple[torch.Tensor, torch.Tensor]:
    """hidden ``(3, 5, 4)`` with large values at padding positions; ids ``(3, 5)`` with 0, 2 and 4 pads."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.tensor([[2, 11, 12, 13, 14], [2, 21, 22, 0, 0], [2, 31, 0, 0, 0]])
    hidden = torch.randn(3, 5, 4, generator=generator)
    hidden[ids == 0] = 100.0
    return hidden, ids


def check_masked_mean_pool(ns) -> None:
    hidden, ids = example_hidden_and_ids()
    got = ns["masked_mean_pool"](hidden, ids)
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return a tensor, got {type(got).__name__}.")
    if got.shape != (3, 4):
        raise ExerciseFailure(f"pooling turns (batch, seq, d_model) = {tuple(hidden.shape)} into (batch, d_model) = "
                              f"(3, 4), got {tuple(got.shape)}.")
    real = (ids != 0).float()
    expected = (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True)
    if torch.allclose(got, expected, atol=1e-5):
        return
    if torch.allclose(got, hidden.mean(1), atol=1e-5):
        raise ExerciseFailure("a plain mean over the sequence averages the padding vectors in too (row 2 is "
                              "mostly padding). Weight by the mask (ids != pad_id) and divide by the number of "
                              "real tokens.")
    if torch.allclose(got, (hidden * real[..., None]).sum(1) / ids.size(1), atol=1e-5):
        raise ExerciseFailure("padding is zeroed, but you divided by the full length; divide by the number of "
                              "real tokens in each row, real.sum(1, keepdim=True).")
    if torch.allclose(got, hidden[:, 0], atol=1e-5):
        raise ExerciseFailure("that is [CLS] pooling (position 0); this exercise asks for the mean of the real "
                              "tokens.")
    pads = (ids == 0).float()
    if torch.allclose(got, (hidden * pads[..., None]).sum(1) / pads.sum(1, keepdim=True).clamp(min=1), atol=1e-5):
        raise ExerciseFailure("you averaged the padding and skipped the real tokens: real tokens are ids != pad_id.")
    raise ExerciseFailure(f"differs from the masked mean by up to {(got - expected).abs().max():.3g}.")


def example_predictions() -> tuple[torch.Tensor, torch.Tensor]:
    labels = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 0])
    predictions = torch.tensor([0, 1, 0, 1, 2, 2, 2, 0, 2, 2])
    return predictions, labels


def check_confusion_matrix(ns) -> None:
    predictions, labels = example_predictions()
    got = ns["confusion_matrix"](predictions, labels, 3)
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return a tensor, got {type(got).__name__}.")
    expected = torch.zeros(3, 3, dtype=torch.long)
    for true, predicted in zip(labels, predictions):
        expected[true, predicted] += 1
    if got.shape != (3, 3):
        raise ExerciseFailure(f"the matrix is (n_classes, n_classes) = (3, 3), got {tuple(got.shape)}.")
    if got.dtype.is_floating_point and not torch.equal(got, got.round()):
        if torch.allclose(got, expected / expected.sum(1, keepdim=True)) or torch.allclose(got, expected / 10):
            raise ExerciseFailure("return counts (integers); normalise later, when you plot or report rates.")
    if torch.equal(got.long(), expected):
        return
    if torch.equal(got.long(), expected.T):
        raise ExerciseFailure("rows and columns are swapped: row = true class, column = predicted class, so "
                              "matrix[true, predicted] += 1.")
    if int(got.sum()) != len(labels):
        raise ExerciseFailure(f"the entries should add up to the number of examples ({len(labels)}), got "
                              f"{int(got.sum())}.")
    raise ExerciseFailure(f"expected\n{expected}\ngot\n{got}")


q1 = Exercise(
    name="How often does token 99 occur?",
    variables=("p_token_present",),
    checker=check_p_token_present,
    hint="Each position misses token 99 with probability 1 − 1/vocab_size, independently.",
    solution="def p_token_present(vocab_size, seq_len):\n    return 1 - (1 - 1 / vocab_size) ** seq_len\n",
)

q2 = Exercise(
    name="Masked mean pooling",
    variables=("masked_mean_pool",),
    checker=check_masked_mean_pool,
    hint="real = (ids != pad_id).float() has shape (batch, seq); multiply hidden by real[..., None], sum over "
         "dim 1, divide by real.sum(1, keepdim=True).",
    solution=(
        "def masked_mean_pool(hidden, ids, pad_id=0):\n"
        "    real = (ids != pad_id).to(hidden.dtype)                  # (batch, seq)\n"
        "    return (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True).clamp(min=1)\n"
    ),
)

q3 = Exercise(
    name="A confusion matrix",
    variables=("confusion_matrix",),
    checker=check_confusion_matrix,
    hint="Start from torch.zeros(n_classes, n_classes, dtype=torch.long); for each example add 1 at "
         "[true, predicted]. (One line: torch.bincount(labels * n_classes + predictions, minlength=n_classes**2).)",
    solution=(
        "import torch\n\n"
        "def confusion_matrix(predictions, labels, n_classes):\n"
        "    flat = torch.bincount(labels * n_classes + predictions, minlength=n_classes * n_classes)\n"
        "    return flat.reshape(n_classes, n_classes)               # row = true class, column = predicted\n"
    ),
)
