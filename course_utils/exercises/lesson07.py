"""Exercises of notebook 07 (translation): teacher-forcing shift, the cross-attention mask, the KV cache."""
from __future__ import annotations

import torch

from .core import Exercise, ExerciseFailure

PAD, BOS, EOS = 0, 5, 6


def example_targets() -> torch.Tensor:
    """``(2, 6)`` target ids ``[BOS] pieces [EOS] [PAD]…`` of different lengths."""
    return torch.tensor([[BOS, 40, 41, 42, EOS, PAD],
                         [BOS, 50, 51, 52, 53, EOS]])


def check_shift_targets(ns) -> None:
    tgt = example_targets()
    result = ns["shift_targets"](tgt.clone())
    if not isinstance(result, tuple) or len(result) != 2:
        raise ExerciseFailure("`shift_targets` should return a pair (decoder_input, labels).")
    decoder_input, labels = result
    for name, value in (("decoder_input", decoder_input), ("labels", labels)):
        if not isinstance(value, torch.Tensor):
            raise ExerciseFailure(f"{name} should be a tensor, got {type(value).__name__}.")
    if torch.equal(decoder_input, tgt) and torch.equal(labels, tgt):
        raise ExerciseFailure("no shift: with labels equal to the input, position t sees the very token it must "
                              "predict — the model learns to copy, and the loss drops to ~0 while the model "
                              "translates nothing. Feed tgt[:, :-1] and score against tgt[:, 1:].")
    if torch.equal(decoder_input, tgt[:, 1:]) and torch.equal(labels, tgt[:, :-1]):
        raise ExerciseFailure("shifted the wrong way: the decoder input must start with [BOS] (tgt[:, :-1]) and "
                              "the labels are the next tokens (tgt[:, 1:]).")
    if decoder_input.shape != (2, 5) or labels.shape != (2, 5):
        shapes = f"got {tuple(decoder_input.shape)} and {tuple(labels.shape)}"
        if decoder_input.dim() == 2 and decoder_input.size(0) == 2 and decoder_input.size(1) < 5:
            raise ExerciseFailure(f"both should have shape (batch, tgt_len - 1) = (2, 5), {shapes}: you shifted by "
                                  "more than one position. Each label is the *next* token, one step ahead: "
                                  "tgt[:, :-1] and tgt[:, 1:].")
        if decoder_input.dim() == 2 and decoder_input.size(0) != 2:
            raise ExerciseFailure(f"both should have shape (batch, tgt_len - 1) = (2, 5), {shapes}: you sliced the "
                                  "batch axis (dim 0); slice the sequence axis (dim 1): tgt[:, :-1], tgt[:, 1:].")
        raise ExerciseFailure(f"both should have shape (batch, tgt_len - 1) = (2, 5), {shapes}: "
                              "decoder_input = tgt[:, :-1], labels = tgt[:, 1:].")
    if not (torch.equal(decoder_input, tgt[:, :-1]) and torch.equal(labels, tgt[:, 1:])):
        raise ExerciseFailure("expected decoder_input = tgt[:, :-1] (starts with [BOS]) and labels = tgt[:, 1:] "
                              "(ends with [EOS] or padding).")


def check_cross_attention_mask(ns) -> None:
    src = torch.tensor([[20, 21, 22, PAD, PAD], [23, 24, 25, 26, 27]])
    tgt_len = 4
    got = ns["cross_attention_mask"](src, tgt_len)
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return a tensor, got {type(got).__name__}.")
    if got.dtype != torch.bool:
        raise ExerciseFailure(f"the course's masks are bool (True = may attend), got {got.dtype}; compare ids with "
                              "`!=` to get a bool tensor.")
    target_shape = (2, 1, tgt_len, 5)
    try:
        full = torch.broadcast_to(got, target_shape)
    except RuntimeError:
        raise ExerciseFailure(f"shape {tuple(got.shape)} does not broadcast to the cross-attention scores "
                              "(batch, heads, tgt_len, src_len); a (batch, src_len) padding mask needs "
                              "[:, None, None, :] → (batch, 1, 1, src_len).") from None
    expected = (src != PAD)[:, None, None, :].expand(target_shape)
    if torch.equal(full, expected):
        return
    if torch.equal(full, ~expected):
        raise ExerciseFailure("inverted: in this course True means *may attend*, so real tokens are True and "
                              "padding is False (src != pad_id).")
    if torch.equal(full, expected & torch.ones(tgt_len, 5, dtype=torch.bool).tril()):
        raise ExerciseFailure("cross-attention is not causal: the whole source sentence is known before decoding "
                              "starts, so every target position may see every real source word. Only hide "
                              "source padding.")
    if full.all():
        raise ExerciseFailure("nothing is masked: the decoder would attend to the source's [PAD] positions, and "
                              "a translation would change with the amount of padding. Hide the keys where "
                              "src == pad_id.")
    raise ExerciseFailure("expected True exactly at real (non-padding) source tokens, for every target position.")


def example_cache(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """cached keys ``(2, 4, 3, 8)`` = (batch, heads, steps so far, d_head) and the new step's ``(2, 4, 1, 8)``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(2, 4, 3, 8, generator=generator), torch.randn(2, 4, 1, 8, generator=generator)


def check_append_to_cache(ns) -> None:
    cached, new = example_cache()
    try:
        got = ns["append_to_cache"](cached.clone(), new.clone())
    except RuntimeError as error:
        if "Sizes of tensors must match" not in str(error):
            raise
        raise ExerciseFailure("concatenated along the wrong axis (the other axes do not match): the layout is "
                              "(batch, heads, seq, d_head), so positions are dim 2.") from None
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return the grown cache as a tensor, got {type(got).__name__}.")
    expected = torch.cat([cached, new], dim=2)
    if got.shape == expected.shape and torch.equal(got, expected):
        return
    if got.shape == new.shape:
        raise ExerciseFailure("you kept only the new step: the cache must hold the keys of *every* earlier "
                              "position, or the new token cannot attend to them. Concatenate old and new.")
    if got.shape == expected.shape and torch.equal(got, torch.cat([new, cached], dim=2)):
        raise ExerciseFailure("the new step went first: positions must stay in order, old ones then the new one.")
    if got.shape != expected.shape and got.numel() >= expected.numel():
        raise ExerciseFailure(f"concatenated along the wrong axis (got {tuple(got.shape)}): the layout is "
                              "(batch, heads, seq, d_head), so positions are dim 2.")
    raise ExerciseFailure(f"expected shape {tuple(expected.shape)} = cached positions + 1, got {tuple(got.shape)}.")


q1 = Exercise(
    name="Teacher forcing: shift the targets",
    variables=("shift_targets",),
    checker=check_shift_targets,
    hint="The decoder reads [BOS] w1 w2 … and must predict w1 w2 … [EOS]: drop the last column for the input and "
         "the first column for the labels.",
    solution="def shift_targets(tgt_ids):\n    return tgt_ids[:, :-1], tgt_ids[:, 1:]\n",
)

q2 = Exercise(
    name="The cross-attention mask",
    variables=("cross_attention_mask",),
    checker=check_cross_attention_mask,
    hint="Only the source's padding is hidden; (src_ids != pad_id) with two new axes gives (batch, 1, 1, src_len).",
    solution=("def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n"
              "    return (src_ids != pad_id)[:, None, None, :]\n"),
)

q3 = Exercise(
    name="Grow the KV cache by one step",
    variables=("append_to_cache",),
    checker=check_append_to_cache,
    hint="torch.cat([...], dim=2): the cache is (batch, heads, seq, d_head) and the new step adds one position.",
    solution="import torch\n\ndef append_to_cache(cached, new):\n    return torch.cat([cached, new], dim=2)\n",
)
