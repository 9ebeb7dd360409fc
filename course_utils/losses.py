"""Every loss the lessons train with, in one place: classification (05), masked LM (06), translation (07) and the
next-token loss of a language model (08, 09).

Each comes as ``loss_fn(model, batch) -> scalar`` for :func:`~course_utils.training.fit`, and — where the
distributed trainer needs it — as a ``*_sum`` over the batch's targets plus a ``*_target_count``: a token-level
loss is a *sum* over targets divided by the number of targets in the whole optimizer step (all micro-batches, all
processes), so a short batch's tokens do not weigh more than a long batch's.
"""
from __future__ import annotations

__all__ = ["classification_loss", "classification_loss_sum", "lm_loss", "lm_loss_sum", "lm_target_count",
           "loss_per_position", "masked_lm_loss", "masked_lm_loss_sum", "shift_for_lm", "translation_loss",
           "translation_loss_sum", "translation_target_count"]

import torch
import torch.nn as nn
import torch.nn.functional as F

from .data.batching import trim_padding
from .errors import CourseTypeError, CourseValueError
from .mlm import IGNORE_INDEX, check_labels
from .tokenization import PAD_ID
from .validation import (
    check_index,
    check_module,
    check_non_negative_int,
    check_positive_int,
    check_probability,
    check_rank,
    check_same_batch,
    check_token_ids,
    checked_by,
    describe,
)

ANY_ID = torch.iinfo(torch.long).max  # ids checked for their type and shape here; the model checks its vocabulary


def check_pair(batch: object, first: str, second: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` as its two tensors: a tuple or list ``(first, second)`` with the same batch size, ``first``
    non-empty ``(batch, seq)`` integer ids and ``second`` integer (ids or labels) of at least one dimension."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise CourseTypeError(f"batch must be a pair ({first}, {second}) of tensors, got {describe(batch)}; a "
                              "DataLoader of two tensors yields such pairs")
    check_token_ids(batch[0], ANY_ID, name=first)
    labels = batch[1]
    if not isinstance(labels, torch.Tensor) or labels.dim() == 0:
        raise CourseTypeError(f"{second} must be a tensor with one row per example, got {describe(labels)}")
    if labels.dtype.is_floating_point or labels.dtype == torch.bool or labels.dtype.is_complex:
        raise CourseTypeError(f"{second} must be integers (torch.long), got {labels.dtype}; the loss reads them as "
                              f"indices: convert with {second}.long()")
    check_same_batch((first, batch[0]), (second, labels))
    return batch[0], labels


def check_targets(name: str, targets: torch.Tensor, logits: torch.Tensor, what: str) -> None:
    """Raise unless every entry of ``targets`` indexes the last dimension of the model's ``logits`` (checked after
    the model has run, so it holds for any model)."""
    n = logits.size(-1)
    if targets.numel() and (int(targets.min()) < 0 or int(targets.max()) >= n):
        raise CourseValueError(f"{name} must lie in [0, {n}) — the model scores {n} {what} — found range "
                               f"[{int(targets.min())}, {int(targets.max())}]; the data and the model disagree on "
                               f"the number of {what}")


def check_vocabulary(targets: torch.Tensor, logits: torch.Tensor, pad_id: int, what: str) -> None:
    """Raise unless the token-level ``targets`` (ids >= 0) and ``pad_id`` are ids of the vocabulary the model's
    ``logits`` score (checked after the model has run, so it holds for any model)."""
    vocab_size = logits.size(-1)
    check_index("pad_id", pad_id, vocab_size, f"the model's vocabulary ({vocab_size} logits)")
    if targets.numel() and int(targets.max()) >= vocab_size:
        raise CourseValueError(f"the {what} must be ids in [0, {vocab_size}) — the model scores {vocab_size} tokens "
                               f"— found id {int(targets.max())}; encode the data with the model's tokenizer, or "
                               f"build the model with vocab_size >= {int(targets.max()) + 1}")


# ---------------------------------------------------------------------------------------------- lesson 05
def check_classification_loss(model: object, batch: object) -> None:
    """Raise a course error unless ``batch`` is ``(ids (batch, seq), labels (batch,))`` of integers for ``model``."""
    check_module("model", model)
    _, labels = check_pair(batch, "ids", "labels")
    check_rank(labels, 1, "labels", "(batch,)")


@checked_by(check_classification_loss, trusts_callees=False)  # your model checks its own input
def classification_loss(model: nn.Module, batch) -> torch.Tensor:
    """Mean cross-entropy of ``(ids (batch, seq), labels (batch,))`` batches — one target per string."""
    ids, labels = batch
    logits = model(ids)
    check_targets("labels", labels, logits, "classes")
    return F.cross_entropy(logits.float(), labels)


@checked_by(check_classification_loss, trusts_callees=False)
def classification_loss_sum(model: nn.Module, batch) -> torch.Tensor:
    """Summed cross-entropy of ``(ids (batch, seq), labels (batch,))`` (the trainer divides by ``labels.numel()``)."""
    ids, labels = batch
    logits = model(ids)
    check_targets("labels", labels, logits, "classes")
    return F.cross_entropy(logits.float(), labels, reduction="sum")


# ---------------------------------------------------------------------------------------------- lesson 06
def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the selected positions (``labels != -100``).

    Args:
        logits: ``(batch, seq, vocab_size)``; labels: ``(batch, seq)`` int64, ``-100`` where nothing is predicted.
    """
    check_labels(labels, logits)
    selected = labels != IGNORE_INDEX
    if not selected.any():
        raise CourseValueError("no position is selected (every label is -100): the loss would be 0/0 = NaN. "
                               "The batch holds no real tokens — drop empty rows before masking")
    # the value of F.cross_entropy(..., ignore_index=-100) on all positions, with the softmax on the ~15 % selected
    return F.cross_entropy(logits[selected], labels[selected])


def check_masked_lm_loss_sum(model: object, batch: object) -> None:
    """Raise a course error unless ``batch`` is ``(inputs, labels)``, both integer ``(batch, seq)``, for ``model``."""
    check_module("model", model)
    inputs, labels = check_pair(batch, "inputs", "labels")
    if labels.shape != inputs.shape:
        raise CourseValueError(f"labels {tuple(labels.shape)} must have the shape of inputs {tuple(inputs.shape)}: "
                               "one label (or -100) per position, as mask_tokens returns them")


@checked_by(check_masked_lm_loss_sum, trusts_callees=False)
def masked_lm_loss_sum(model: nn.Module, batch) -> torch.Tensor:
    """Summed cross-entropy at the selected positions of a masked batch ``(inputs, labels)``.

    Calls ``model(inputs)`` (not only the head at the selected positions), so it also works through a
    ``DistributedDataParallel`` wrapper, whose gradient synchronisation starts in its ``forward``.
    """
    inputs, labels = batch
    selected = labels != IGNORE_INDEX
    logits = model(inputs)
    check_labels(labels, logits)
    return F.cross_entropy(logits[selected].float(), labels[selected], reduction="sum")


# ---------------------------------------------------------------------------------------------- lesson 07
def check_translation_target_count(batch: object, pad_id: object = PAD_ID) -> None:
    """Raise a course error unless ``batch`` is ``(src_ids (batch, src_len), tgt_ids (batch, tgt_len))`` of integer
    ids with ``tgt_len >= 2`` ([BOS] and at least one token to predict), and ``pad_id`` an int >= 0."""
    _, tgt = check_pair(batch, "src_ids", "tgt_ids")
    check_rank(tgt, 2, "tgt_ids", "(batch, tgt_len)")
    if tgt.size(1) < 2:
        raise CourseValueError(f"tgt_ids need at least 2 tokens per row ([BOS] and one to predict), got shape "
                               f"{tuple(tgt.shape)}")
    check_non_negative_int("pad_id", pad_id)


@checked_by(check_translation_target_count)
def translation_target_count(batch, pad_id: int = PAD_ID) -> int:
    """Number of target tokens that are scored: every non-padding id of ``tgt_ids[:, 1:]``."""
    return int((batch[1][:, 1:] != pad_id).sum())


def check_translation_loss(model: object, batch: object, label_smoothing: object = 0.1,
                           pad_id: object = PAD_ID) -> None:
    """Raise a course error unless the arguments fit :func:`translation_loss_sum` (the ids' vocabularies are the
    model's to check)."""
    check_module("model", model)
    check_translation_target_count(batch, pad_id)
    check_probability("label_smoothing", label_smoothing, hint="; 0.1 is the usual value, 0 switches it off")


@checked_by(check_translation_loss, trusts_callees=False)
def translation_loss_sum(model: nn.Module, batch, label_smoothing: float = 0.1,
                         pad_id: int = PAD_ID) -> torch.Tensor:
    """Summed teacher-forcing cross-entropy of ``(src_ids (batch, src_len), tgt_ids (batch, tgt_len))``.

    ``tgt_ids`` is ``[BOS] … [EOS]`` right-padded; the decoder reads ``tgt_ids[:, :-1]`` and is scored on
    ``tgt_ids[:, 1:]`` (padding ignored).
    """
    src, tgt = (trim_padding(ids, pad_id) for ids in batch)
    decoder_input, labels = tgt[:, :-1], tgt[:, 1:]
    logits = model(src, decoder_input).float()                  # (batch, tgt_len - 1, tgt_vocab)
    check_vocabulary(labels, logits, pad_id, "target tokens")
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=pad_id,
                           label_smoothing=label_smoothing, reduction="sum")


def translation_loss(model: nn.Module, batch, label_smoothing: float = 0.1, pad_id: int = PAD_ID) -> torch.Tensor:
    """Mean cross-entropy per target token: equal to ``F.cross_entropy(..., ignore_index=pad_id)`` (both parts
    check the arguments)."""
    return translation_loss_sum(model, batch, label_smoothing, pad_id) / translation_target_count(batch, pad_id)


# ------------------------------------------------------------------------------------------- lessons 08–09
def shift_for_lm(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(batch, seq)`` ids → ``(inputs, targets)``, both ``(batch, seq - 1)``: the model reads ``ids[:, :-1]``
    and position ``t`` is scored on the next token ``ids[:, t + 1]``."""
    ids = check_token_ids(ids, vocab_size=torch.iinfo(torch.long).max, name="ids")
    if ids.size(1) < 2:
        raise CourseValueError(f"a language-model batch needs at least 2 tokens per row ([BOS] and one to "
                               f"predict), got shape {tuple(ids.shape)}")
    return ids[:, :-1], ids[:, 1:]


def check_lm_loss(model: object, batch: object, pad_id: object = PAD_ID) -> None:
    """Raise a course error unless ``model`` is a module and ``pad_id`` an int >= 0 (:func:`shift_for_lm` checks
    the batch, and the targets are checked against the model's vocabulary once it has run)."""
    check_module("model", model)
    check_non_negative_int("pad_id", pad_id)


@checked_by(check_lm_loss, trusts_callees=False)
def lm_loss(model: nn.Module, batch: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    """Mean next-token cross-entropy over the real (non-padding) targets of ``batch (batch, seq)``."""
    inputs, targets = shift_for_lm(batch)
    logits = model(inputs)  # (batch, seq - 1, vocab)
    check_vocabulary(targets, logits, pad_id, "next-token targets")
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=pad_id)


@checked_by(check_lm_loss, trusts_callees=False)
def lm_loss_sum(model: nn.Module, batch: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    """Summed next-token cross-entropy over the real targets of ``batch (batch, seq)`` (divide by
    :func:`lm_target_count`)."""
    inputs, targets = shift_for_lm(batch)
    logits = model(inputs).float()
    check_vocabulary(targets, logits, pad_id, "next-token targets")
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=pad_id,
                           reduction="sum")


def check_lm_target_count(batch: object, pad_id: object = PAD_ID) -> None:
    """Raise a course error unless ``batch`` is a ``(batch, seq)`` integer tensor and ``pad_id`` an int >= 0."""
    check_token_ids(batch, ANY_ID, name="batch", allow_empty=True)
    check_non_negative_int("pad_id", pad_id)


@checked_by(check_lm_target_count)
def lm_target_count(batch: torch.Tensor, pad_id: int = PAD_ID) -> int:
    """Number of scored next-token targets in ``batch (batch, seq)``: the non-padding ids of ``batch[:, 1:]``."""
    return int((batch[:, 1:] != pad_id).sum())


@torch.no_grad()
def loss_per_position(model: nn.Module, windows: torch.Tensor, batch_size: int = 128) -> torch.Tensor:
    """Mean next-token loss at each position of equally long ``windows (n, seq + 1)``: float ``(seq,)``, nats."""
    check_module("model", model)
    windows = check_token_ids(windows, vocab_size=torch.iinfo(torch.long).max, name="windows")
    check_positive_int("batch_size", batch_size)
    was_training = model.training
    model.eval()
    totals = torch.zeros(windows.size(1) - 1)
    for start in range(0, windows.size(0), batch_size):
        inputs, targets = shift_for_lm(windows[start:start + batch_size])
        losses = F.cross_entropy(model(inputs).float().transpose(1, 2), targets, reduction="none")  # (batch, seq)
        totals += losses.sum(dim=0).cpu()
    model.train(was_training)
    return totals / windows.size(0)
