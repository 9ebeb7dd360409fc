"""Every loss the lessons train with, in one place: classification (05), masked LM (06), translation (07), the
next-token loss of a language model (08, 09), and lesson 11's response-only loss and DPO loss.

Each comes as ``loss_fn(model, batch) -> scalar`` for :func:`~course_utils.training.fit`, and — where the
distributed trainer needs it — as a ``*_sum`` over the batch's targets plus a ``*_target_count``: a token-level
loss is a *sum* over targets divided by the number of targets in the whole optimizer step (all micro-batches, all
processes), so a short batch's tokens do not weigh more than a long batch's.
"""
from __future__ import annotations

__all__ = ["classification_loss", "classification_loss_sum", "dpo_batch_loss_sum", "dpo_gradient_weight", "dpo_loss",
           "dpo_loss_sum", "lm_loss", "lm_loss_sum", "lm_target_count", "loss_per_position", "masked_lm_loss",
           "masked_lm_loss_sum", "response_logprobs", "response_loss", "response_loss_sum", "response_target_count",
           "sequence_logprobs", "shift_for_lm", "translation_loss", "translation_loss_sum", "translation_target_count"]

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
    check_real,
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


# ---------------------------------------------------------------------------------------------- lesson 11
def check_sequence_logprobs(logits: object, targets: object, mask: object) -> None:
    """Raise a course error unless ``logits (batch, seq, vocab)`` float, ``targets (batch, seq)`` integer ids of
    that vocabulary and ``mask (batch, seq)`` bool."""
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or not logits.dtype.is_floating_point:
        raise CourseTypeError(f"logits must be a float tensor (batch, seq, vocab_size), got {describe(logits)}; "
                              "pass the model's output")
    check_token_ids(targets, logits.size(-1), name="targets")
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise CourseTypeError(f"mask must be a bool tensor (batch, seq), True where a token is scored, got "
                              f"{describe(mask)}; build it with mask = ... == ... or .bool()")
    if targets.shape != logits.shape[:2] or mask.shape != targets.shape:
        raise CourseValueError(f"logits {tuple(logits.shape)}, targets {tuple(targets.shape)} and mask "
                               f"{tuple(mask.shape)} must agree: logits (batch, seq, vocab), the others (batch, seq)")


@checked_by(check_sequence_logprobs)
def sequence_logprobs(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log p(response | prompt) of each row: the sum of ``log softmax(logits)[target]`` over the positions where
    ``mask`` is True (padding and prompt positions count nothing). Float32 ``(batch,)``. Built in lesson 11."""
    token_logps = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
    return (token_logps * mask).sum(dim=-1)


def check_response_batch(model: object, batch: object) -> None:
    """Raise a course error unless ``batch`` is ``(ids, response_mask)``: ``(batch, seq)`` integer ids with
    ``seq >= 2`` and a bool mask of the same shape (what :func:`course_utils.instruct.chat_batch` returns)."""
    check_module("model", model)
    check_response_pair(batch)


def check_response_pair(batch: object) -> None:
    """The batch part of :func:`check_response_batch`."""
    if not isinstance(batch, (tuple, list)) or len(batch) < 2:
        raise CourseTypeError(f"batch must be a pair (ids, response_mask), got {describe(batch)}; build it with "
                              "course_utils.instruct.chat_batch")
    ids, mask = batch[0], batch[1]
    check_token_ids(ids, ANY_ID, name="ids")
    check_rank(ids, 2, "ids", "(batch, seq)")
    if ids.size(1) < 2:
        raise CourseValueError(f"ids need at least 2 tokens per row (a prompt and one to predict), got shape "
                               f"{tuple(ids.shape)}")
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != ids.shape:
        raise CourseTypeError(f"response_mask must be a bool tensor of the shape of ids {tuple(ids.shape)}, got "
                              f"{describe(mask)}; True marks the response tokens")


@checked_by(check_response_batch, trusts_callees=False)
def response_logprobs(model: nn.Module, batch) -> torch.Tensor:
    """``(batch,)`` log-probability of each row's response given its prompt: ``model`` reads ``ids[:, :-1]``,
    position ``t`` is scored on ``ids[:, t + 1]`` where ``response_mask[:, t + 1]`` is True."""
    ids, mask = batch[0], batch[1]
    logits = model(ids[:, :-1])
    check_vocabulary(ids[:, 1:], logits, PAD_ID, "response tokens")
    return sequence_logprobs(logits, ids[:, 1:], mask[:, 1:])


@checked_by(check_response_pair)
def response_target_count(batch) -> int:
    """Number of scored response tokens of ``(ids, response_mask)``: the True entries of ``response_mask[:, 1:]``."""
    return int(batch[1][:, 1:].sum())


def response_loss_sum(model: nn.Module, batch) -> torch.Tensor:
    """Summed next-token cross-entropy over the response tokens only of ``(ids, response_mask)`` (lesson 11's
    supervised fine-tuning; divide by :func:`response_target_count`)."""
    return -response_logprobs(model, batch).sum()


def response_loss(model: nn.Module, batch) -> torch.Tensor:
    """Mean cross-entropy per response token: the prompt tokens and the padding are read, never scored."""
    loss_sum = response_loss_sum(model, batch)
    count = response_target_count(batch)
    if count == 0:
        raise CourseValueError("no response token in the batch (response_mask[:, 1:] is all False): the mean "
                               "would be 0/0; every row needs an answer")
    return loss_sum / count


def check_dpo_loss(policy_chosen: object, policy_rejected: object, reference_chosen: object,
                   reference_rejected: object, beta: object = 0.1) -> None:
    """Raise a course error unless the four log-probabilities are float tensors of one shape and ``beta > 0``."""
    names = ("policy_chosen", "policy_rejected", "reference_chosen", "reference_rejected")
    values = (policy_chosen, policy_rejected, reference_chosen, reference_rejected)
    for name, value in zip(names, values):
        if not isinstance(value, torch.Tensor) or not value.dtype.is_floating_point or value.dim() != 1:
            raise CourseTypeError(f"{name} must be a float tensor (n_pairs,) of sequence log-probabilities, got "
                                  f"{describe(value)}")
    if len({v.shape for v in values}) != 1:
        raise CourseValueError(f"the four log-probabilities must have one shape (n_pairs,), got "
                               f"{[tuple(v.shape) for v in values]}")
    check_real("beta", beta, low=0.0, low_inclusive=False, hint="; 0.1 is a common value")


@checked_by(check_dpo_loss)
def dpo_loss_sum(policy_chosen: torch.Tensor, policy_rejected: torch.Tensor, reference_chosen: torch.Tensor,
                 reference_rejected: torch.Tensor, beta: float = 0.1) -> torch.Tensor:
    """Summed DPO loss over pairs: ``-log sigmoid(beta * ((pc - rc) - (pr - rr)))``, where ``pc``/``pr`` are the
    policy's and ``rc``/``rr`` the frozen reference's log-probabilities of the chosen / rejected responses
    (Rafailov et al. 2023, eq. 7). ``log sigmoid`` is computed stably (no log of a rounded 0)."""
    margin = (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected)
    return -F.logsigmoid(beta * margin).sum()


def dpo_loss(policy_chosen: torch.Tensor, policy_rejected: torch.Tensor, reference_chosen: torch.Tensor,
             reference_rejected: torch.Tensor, beta: float = 0.1) -> torch.Tensor:
    """Mean DPO loss over the pairs (see :func:`dpo_loss_sum`); each argument is ``(n_pairs,)``. Lesson 11."""
    total = dpo_loss_sum(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta)
    return total / policy_chosen.numel() if policy_chosen.numel() else total


@checked_by(check_dpo_loss)
def dpo_gradient_weight(policy_chosen: torch.Tensor, policy_rejected: torch.Tensor, reference_chosen: torch.Tensor,
                        reference_rejected: torch.Tensor, beta: float = 0.1) -> torch.Tensor:
    """``(n_pairs,)`` weight ``w`` of each pair in the gradient of the summed DPO loss:
    ``d loss / d policy_chosen = -beta * w`` and ``d loss / d policy_rejected = +beta * w``, with
    ``w = sigmoid(-beta * ((pc - rc) - (pr - rr)))`` — near 1 for a pair ranked wrong, near 0 for one ranked right
    by a wide margin (lesson 11, exercise 2)."""
    margin = (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected)
    return torch.sigmoid(-beta * margin)


def dpo_batch_loss_sum(model: nn.Module, batch, beta: float = 0.1) -> torch.Tensor:
    """Summed DPO loss of a preference batch ``(ids, response_mask, reference_logprobs)``: the first half of the
    rows are the chosen responses, the second half the rejected ones of the same prompts (one forward pass for
    both), ``reference_logprobs (rows,)`` the frozen reference's :func:`response_logprobs` of the same rows."""
    logps = response_logprobs(model, batch)
    if len(batch) != 3 or not isinstance(batch[2], torch.Tensor) or batch[2].shape != logps.shape:
        raise CourseValueError(f"a preference batch is (ids, response_mask, reference_logprobs) with one reference "
                               f"log-probability per row ({logps.numel()}), got {describe(batch)}")
    if logps.numel() % 2:
        raise CourseValueError(f"a preference batch holds chosen rows then rejected rows, an even number; got "
                               f"{logps.numel()} rows")
    chosen, rejected = logps.chunk(2)
    reference_chosen, reference_rejected = batch[2].chunk(2)
    return dpo_loss_sum(chosen, rejected, reference_chosen, reference_rejected, beta)
