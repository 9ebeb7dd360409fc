"""Exercises of notebook 07 (translation): teacher-forcing shift, the cross-attention mask, the KV cache, and the
capstones: a DecoderLayer and a greedy decoder.

Every check draws fresh inputs (:class:`~.asserts.Draw`; ``COURSE_CHECK_SEED`` fixes them): sizes with no two
equal, special ids other than the course's defaults, batch 1, padding in some rows only — and compares the answer
with the package's function or block on each.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..masks import padding_mask
from .asserts import (
    Case,
    Draw,
    Raised,
    attempt,
    call_learner,
    check_dropout_placement,
    check_function,
    check_inputs_kept,
    check_same_in_both_modes,
    close,
    compare_block,
    copy_weights,
    difference,
    instantiate,
    max_difference,
    own_function,
    own_module_class,
    randomise_norms,
    same_content,
    snapshot,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of

DEFAULT_PAD, DEFAULT_BOS, DEFAULT_EOS = 0, 5, 6  # the course's ids (course_utils.tokenization); checks use others


def special_ids(draw: Draw, vocab: int) -> tuple[int, int, int]:
    """``(bos, eos, pad)``: three different ids of a ``vocab``-sized vocabulary, none of them the course's default
    for its role — so an answer with 5, 6 or 0 typed in shows."""
    while True:
        bos, eos, pad = draw.distinct(3, 0, vocab - 1)
        if (bos, eos, pad) != (DEFAULT_BOS, DEFAULT_EOS, DEFAULT_PAD) and bos != DEFAULT_BOS \
                and eos != DEFAULT_EOS and pad != DEFAULT_PAD:
            return bos, eos, pad


def content_ids(draw: Draw, vocab: int, avoid: tuple[int, ...], count: int) -> list[int]:
    """``count`` ids of ``[0, vocab)`` other than ``avoid`` (repeats allowed), spanning the whole vocabulary."""
    pool = [i for i in range(vocab) if i not in avoid]
    return [draw.choice(pool) for _ in range(count)]


# ---------------------------------------------------------------------------- q1: shift_targets
def target_batch(draw: Draw, lengths: list[int], tgt_len: int, vocab: int, bos: int, eos: int,
                 pad: int) -> torch.Tensor:
    """``(len(lengths), tgt_len)`` rows ``[BOS] pieces… [EOS] [PAD]…``; row ``i`` holds ``lengths[i]`` pieces."""
    rows = []
    for n in lengths:
        row = [bos] + content_ids(draw, vocab, (bos, eos, pad), n) + [eos]
        rows.append(row + [pad] * (tgt_len - len(row)))
    return torch.tensor(rows, dtype=torch.long)


def shift_cases(draw: Draw) -> list[Case]:
    """Batch 1 with a single piece, batch 1 without padding, then a batch with padding in some rows only."""
    vocab = draw.integer(300, 5000)  # ids above 255: no uint8, no byte-sized assumptions
    bos, eos, pad = special_ids(draw, vocab)
    ids = f"bos_id {bos}, eos_id {eos}, pad_id {pad}"
    cases = [Case(f"batch 1, tgt_len 3 ([BOS] one piece [EOS]), {ids}",
                  (target_batch(draw, [1], 3, vocab, bos, eos, pad),))]
    n = draw.integer(3, 6)
    cases.append(Case(f"batch 1, tgt_len {n + 2}, no padding, {ids}",
                      (target_batch(draw, [n], n + 2, vocab, bos, eos, pad),)))
    batch, longest = draw.distinct(2, 3, 6)
    lengths = [longest] + [draw.integer(1, longest - 1) for _ in range(batch - 1)]
    lengths[-1] = longest  # padding in some rows only: the first and last are full
    tgt = target_batch(draw, lengths, longest + 2, vocab, bos, eos, pad)
    tgt[0, 1:4] = torch.tensor([DEFAULT_PAD, DEFAULT_BOS, DEFAULT_EOS])  # the course's ids as ordinary pieces
    cases.append(Case(f"batch {batch}, tgt_len {longest + 2}, padding in some rows only, {ids} (ids 0, 5 and 6 are "
                      "ordinary pieces here)", (tgt,)))
    return cases


def package_shift(tgt_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The package's teacher-forcing split (``course_utils.losses.shift_for_lm``: the same slicing)."""
    from ..losses import shift_for_lm

    return tuple(shift_for_lm(tgt_ids))


def check_shift_targets(ns) -> None:
    draw = Draw()
    cases = shift_cases(draw)
    check_function(ns["shift_targets"], package_shift, cases, "shift_targets", twins=shift_cases(draw.twin()),
                   probes=cases)


def pair(got) -> bool:
    return isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)


BOTH_SHAPES = "both should have shape (batch, tgt_len - 1)"
SHIFT_MISTAKES = (
    Mistake("not a pair", "`shift_targets` should return a pair (decoder_input, labels) — two tensors",
            variant=lambda tgt: tgt[:, :-1], shows=lambda case, got, _: not (isinstance(got, (tuple, list))
                                                                            and len(got) == 2)),
    Mistake("no shift", "no shift: the decoder input and the labels are both the whole target, so position t is "
            "scored on the very token it is reading. The decoder learns to copy the token it is fed: the training "
            "loss falls far faster than a real translator's, while the model learns nothing usable. Feed "
            "decoder_input = tgt[:, :-1] and score against labels = tgt[:, 1:]",
            variant=lambda tgt: (tgt.clone(), tgt.clone())),
    Mistake("wrong direction", "shifted the wrong way: the decoder input must start with [BOS] (tgt[:, :-1]) and the "
            "labels are the next tokens (tgt[:, 1:])", variant=lambda tgt: package_shift(tgt)[::-1]),
    Mistake("batch axis", f"{BOTH_SHAPES}: you sliced the batch axis (dim 0); slice the sequence axis (dim 1): "
            "tgt[:, :-1], tgt[:, 1:]", variant=lambda tgt: (tgt[:-1], tgt[1:]),
            shows=lambda case, got, _: pair(got) and got[0].dim() == 2 and got[0].size(0) != case.args[0].size(0)),
    Mistake("shifted by two positions", f"{BOTH_SHAPES}: you shifted by more than one position. Each label is the "
            "*next* token, one step ahead: tgt[:, :-1] and tgt[:, 1:]", variant=lambda tgt: (tgt[:, :-2], tgt[:, 2:]),
            shows=lambda case, got, _: pair(got) and got[0].dim() == 2 and got[0].size(0) == case.args[0].size(0)
            and got[0].size(1) < case.args[0].size(1) - 1),
    Mistake("squeezed (breaks batch 1)", f"{BOTH_SHAPES} (with batch 1 too: no .squeeze()): decoder_input = "
            "tgt[:, :-1], labels = tgt[:, 1:]", variant=lambda tgt: tuple(t.squeeze() for t in package_shift(tgt)),
            shows=lambda case, got, _: pair(got) and (got[0].dim() != 2 or got[1].dim() != 2
                                                      or got[0].shape != got[1].shape)),
    Mistake("labels not shifted", "the labels are not shifted: they are the next tokens, labels = tgt[:, 1:] (ending "
            "with [EOS] or [PAD])", variant=lambda tgt: (tgt[:, :-1], tgt[:, :-1])),
    Mistake("decoder input not shifted", "the decoder input is not shifted: it is the target without its last "
            "column, tgt[:, :-1]", variant=lambda tgt: (tgt[:, 1:], tgt[:, 1:])),
    Mistake("padding labels replaced by -100 (pad id typed in)", "the labels are tgt[:, 1:] except that one id was "
            "replaced: return the ids unchanged — the loss skips [PAD] itself (ignore_index=pad_id), and the "
            "function is given no pad_id or eos_id to test against (a typed-in id is another vocabulary's)",
            variant=lambda tgt: (tgt[:, :-1], tgt[:, 1:].masked_fill(tgt[:, 1:] == DEFAULT_PAD, -100)),
            shows=lambda case, got, _: pair(got) and got[1].dtype == got[0].dtype == case.args[0].dtype
            and torch.equal(got[0], case.args[0][:, :-1])
            and got[1].shape == case.args[0][:, 1:].shape and len(got[1][got[1] != case.args[0][:, 1:]].unique()) == 1),
    Mistake("decoder input changed", "the labels are right but the decoder input is not tgt[:, :-1]: keep every id, "
            "[EOS] included (its label is [PAD], which the loss ignores), and add nothing — the targets already "
            "start with [BOS]", variant=lambda tgt: (torch.cat([tgt[:, :1], tgt[:, :-2]], 1), tgt[:, 1:]),
            shows=lambda case, got, _: pair(got) and got[1].dtype == got[0].dtype == case.args[0].dtype
            and torch.equal(got[1], case.args[0][:, 1:])
            and got[0].shape == case.args[0][:, :-1].shape),
)


# ---------------------------------------------------------------------------- q2: cross_attention_mask
def source_batch(draw: Draw, lengths: list[int], src_len: int, vocab: int, pad: int) -> torch.Tensor:
    """``(len(lengths), src_len)`` source ids, row ``i`` with ``lengths[i]`` real tokens then ``pad``."""
    rows = [content_ids(draw, vocab, (pad,), n) + [pad] * (src_len - n) for n in lengths]
    return torch.tensor(rows, dtype=torch.long)


def mask_cases(draw: Draw) -> list[Case]:
    """``Case(description, (src_ids, tgt_len[, pad_id]))``: the default pad_id 0 first, then drawn pad ids."""
    vocab = draw.integer(300, 5000)
    cases = []
    tgt_len, src_len = draw.distinct(2, 2, 6)
    src = source_batch(draw, [src_len - 1], src_len, vocab, DEFAULT_PAD)
    cases.append(Case(f"batch 1, src_len {src_len} (the last position padding), tgt_len {tgt_len}, pad_id left at "
                      "its default 0", (src, tgt_len)))
    batch, tgt_len, src_len = draw.distinct(3, 2, 7)
    lengths = [src_len] + [draw.integer(1, src_len - 1) for _ in range(batch - 1)]
    cases.append(Case(f"batch {batch}, src_len {src_len} (padding in some rows only), tgt_len {tgt_len}, pad_id "
                      "left at its default 0", (source_batch(draw, lengths, src_len, vocab, DEFAULT_PAD), tgt_len)))
    pad = draw.integer(1, vocab - 1)
    src_len = draw.integer(3, 6)
    cases.append(Case(f"batch 1, src_len {src_len} without padding, tgt_len 1, pad_id {pad}",
                      (source_batch(draw, [src_len], src_len, vocab, pad), 1, pad)))
    batch, tgt_len, src_len = draw.distinct(3, 2, 8)
    lengths = [draw.integer(1, src_len - 1) for _ in range(batch)]
    lengths[draw.integer(0, batch - 1)] = src_len
    src = source_batch(draw, lengths, src_len, vocab, pad)
    src[src == DEFAULT_PAD] = pad + 1 if pad + 1 < vocab else pad - 1  # id 0 occurs as a real token …
    src[0, 0] = DEFAULT_PAD                                              # … here, at least once
    cases.append(Case(f"batch {batch}, src_len {src_len} (padding in some rows only; id 0 is a real token here), "
                      f"tgt_len {tgt_len}, pad_id {pad}", (src, tgt_len, pad)))
    every = torch.tensor([list(range(12)), [pad - 1, pad + 1] + list(range(12, 22))])   # every small id, pad's
    every[1, 2:4] = DEFAULT_PAD                                                          # neighbours, 0 real
    cases.append(Case(f"batch 2, src_len 12 holding every id from 0 to 21 and pad_id's neighbours {pad - 1}, "
                      f"{pad + 1}, tgt_len 2, pad_id {pad}", (every.clamp(max=vocab - 1), 2, pad)))
    return cases


def keys_of(src: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """A (batch, 1, 1, src_len) mask from a (batch, src_len) choice of visible keys."""
    return keep[:, None, None, :]


def expanded(answer, case: Case):
    """The answer's mask broadcast to (batch, 1, tgt_len, src_len), or what it returned or raised."""
    src, tgt_len = case.args[:2]
    out = attempt(answer, "cross_attention_mask", snapshot(case.args), {})
    try:
        return out.expand(src.size(0), 1, tgt_len, src.size(1)) if isinstance(out, torch.Tensor) else out
    except RuntimeError:
        return out


MASK_MISTAKES = (
    Mistake("real ids assumed above pad_id", "`src_ids > pad_id` assumes every real id lies above pad_id, but smaller "
            "ids are real tokens: hide exactly the padding, src_ids != pad_id",
            variant=lambda src, tgt_len, pad_id=DEFAULT_PAD: keys_of(src, src > pad_id)),
    Mistake("inverted", "inverted: in this course True means *may attend*, so real tokens are True and padding is "
            "False (src != pad_id)", variant=lambda src, tgt_len, pad_id=DEFAULT_PAD: ~padding_mask(src, pad_id)),
    Mistake("causal", "cross-attention is not causal: the whole source sentence is known before decoding starts, so "
            "every target position may see every real source word. Only hide source padding",
            variant=lambda src, tgt_len, pad_id=DEFAULT_PAD: padding_mask(src, pad_id) & torch.ones(
                tgt_len, src.size(1), dtype=torch.bool).tril()),
    Mistake("no mask", "nothing is masked: the decoder would attend to the source's [PAD] positions, and a translation "
            "would change with the amount of padding. Hide the keys where src == pad_id",
            variant=lambda src, tgt_len, pad_id=DEFAULT_PAD: keys_of(src, torch.ones_like(src, dtype=torch.bool)),
            shows=lambda case, got, _: isinstance(got, torch.Tensor) and bool(got.all())),
    Mistake("pad_id accepted but 0 compared", "you hid id 0, but this call's pad_id is another id: compare with the "
            "pad_id argument (src_ids != pad_id), not with a typed-in 0",
            variant=lambda src, tgt_len, pad_id=DEFAULT_PAD: padding_mask(src, DEFAULT_PAD)),
)


def mask_error_hint(error: BaseException) -> str | None:
    if isinstance(error, TypeError) and "positional argument" in str(error):
        return ("The function is cross_attention_mask(src_ids, tgt_len, pad_id=0): give it the pad_id parameter "
                "and hide the positions where src_ids == pad_id")
    return None


def check_cross_attention_mask(ns) -> None:
    function = ns["cross_attention_mask"]
    cases = mask_cases(Draw())
    for case in cases:
        src, tgt_len = case.args[:2]
        pad = case.args[2] if len(case.args) > 2 else DEFAULT_PAD
        before = {"src_ids": snapshot(src)}
        args = snapshot(case.args)
        got = call_learner(function, "cross_attention_mask", case.description, *args, error_hint=mask_error_hint)
        check_inputs_kept(before, {"src_ids": args[0]}, "cross_attention_mask", case.description)
        if not isinstance(got, torch.Tensor):
            raise ExerciseFailure(f"on {case.description}: return a tensor, got {type(got).__name__}.")
        if got.dtype != torch.bool:
            raise ExerciseFailure(f"on {case.description}: the course's masks are bool (True = may attend), got "
                                  f"{got.dtype}; compare ids with `!=` to get a bool tensor.")
        batch, src_len = src.shape
        target = (batch, 1, tgt_len, src_len)
        if got.dim() != 4:
            raise ExerciseFailure(
                f"on {case.description}: your mask has shape {tuple(got.shape)}; it does not broadcast the right way "
                f"to the cross-attention scores (batch, heads, tgt_len, src_len) = (batch, heads, {tgt_len}, "
                f"{src_len}) — broadcasting lines shapes up from the right, so a (batch, src_len) mask would meet "
                "tgt_len with its batch axis (the package's attention refuses it). Give it 4 dimensions: "
                "[:, None, None, :] → (batch, 1, 1, src_len).")
        if got.size(0) != batch or got.size(1) != 1 or got.size(2) not in (1, tgt_len) or got.size(3) != src_len:
            raise ExerciseFailure(
                f"on {case.description}: expected shape (batch, 1, 1, src_len) = {(batch, 1, 1, src_len)} (or "
                f"(batch, 1, tgt_len, src_len) = {target}), got {tuple(got.shape)}: one row per sentence, one "
                "column per source position (the keys, last axis); the head and query axes stay 1 — "
                "[:, None, None, :], not a mask on the query axis.")
        full = got.expand(target)
        expected = padding_mask(src, pad).expand(target)
        if not torch.equal(full, expected):
            wrong = (full != expected).nonzero()[0].tolist()
            raise Mismatch(f"on {case.description}: expected True exactly at real (non-padding) source tokens, for "
                           f"every target position; at (row {wrong[0]}, target position {wrong[2]}, source position "
                           f"{wrong[3]}) the source id is {int(src[wrong[0], wrong[3]])} (pad_id {pad}) and your "
                           f"mask says {bool(full[tuple(wrong)])}.", case, full, function, expanded,
                           lambda a, b: isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                           and a.shape == b.shape and bool(torch.equal(a, b)), probes=tuple(cases))


# ---------------------------------------------------------------------------- q3: append_to_cache
def cache_cases(draw: Draw) -> list[Case]:
    """``Case(description, (cached (batch, heads, steps, d_head), new (batch, heads, 1, d_head)))``."""
    cases = []

    def case(what: str, batch: int, heads: int, steps: int, d_head: int, dtype=torch.float32) -> None:
        cached = draw.randn(batch, heads, steps, d_head).to(dtype)
        new = draw.randn(batch, heads, 1, d_head).to(dtype)
        cases.append(Case(f"{what}: cached {tuple(cached.shape)} = (batch, heads, steps so far, d_head), new "
                          f"{tuple(new.shape)}" + ("" if dtype == torch.float32 else f", {dtype}"), (cached, new)))
    heads, d_head = draw.distinct(2, 2, 6)
    case("batch 1, one cached step", 1, heads, 1, d_head)
    batch, steps, d_head = draw.distinct(3, 2, 7)
    case("one head", batch, 1, steps, d_head)
    batch, heads, steps = draw.distinct(3, 2, 6)
    case("steps so far == d_head", batch, heads, steps, steps)
    batch, heads, steps, d_head = draw.distinct(4, 2, 9)
    case("a float64 cache", batch, heads, steps, d_head, torch.float64)
    return cases


def package_append(cached: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """What the package's :class:`~course_utils.kv_cache.LayerCache` does with ``new`` after ``cached``."""
    from ..kv_cache import LayerCache

    cache = LayerCache()
    cache.append(cached, cached)
    return cache.append(new, new)[0]


def check_append_to_cache(ns) -> None:
    draw = Draw()
    cases = cache_cases(draw)
    check_function(ns["append_to_cache"], package_append, cases, "append_to_cache", atol=0.0, rtol=0.0, probes=cases,
                   twins=cache_cases(draw.twin()))


WRONG_AXIS = ("concatenated along the wrong axis: the layout is (batch, heads, seq, d_head), so positions are dim 2")
APPEND_MISTAKES = (
    Mistake("replace", "you kept only the new step: the cache must hold the keys of *every* earlier position, or the "
            "new token cannot attend to them. Concatenate old and new", variant=lambda cached, new: new.clone()),
    Mistake("cache did not grow", "the cache did not grow: the result must keep every earlier position and add the "
            "new one",
            variant=lambda cached, new: cached.clone(), shows=lambda case, got, _: isinstance(got, torch.Tensor)
            and got.shape == case.args[0].shape),
    Mistake("new first", "the new step went first: positions must stay in order, old ones then the new one",
            variant=lambda cached, new: package_append(new, cached)),
    Mistake("heads axis", WRONG_AXIS, variant=lambda cached, new: torch.cat([cached, new], dim=1),
            shows=lambda case, got, _: isinstance(got, Raised) and ("Sizes of tensors must match" in got.message
                                                                    or "must match the size" in got.message)
            or isinstance(got, torch.Tensor) and got.shape != package_append(*case.args).shape
            and got.numel() >= package_append(*case.args).numel()),
)


q1 = Exercise(
    name="Teacher forcing: shift the targets",
    variables=("shift_targets",),
    checker=check_shift_targets,
    hints=("At position t the decoder has read [BOS] w1 … w(t-1) and must predict w(t): which column of the target "
           "should the decoder never read, and which column is never a label?",
           "Keep every row (the batch axis untouched). The decoder input is the target without its last column; "
           "the labels are the target without its first column; return both, as a pair, without changing the ids "
           "or the input."),
    solution=solution_of("lesson07", "shift_targets"),
    mistakes=SHIFT_MISTAKES,
)

q2 = Exercise(
    name="The cross-attention mask",
    variables=("cross_attention_mask",),
    checker=check_cross_attention_mask,
    hints=("The decoder may read the whole source sentence at every step — what, of the source, must it never "
           "see? And which way round is True in this course?",
           "Compare the source ids with the pad_id argument to get a bool (batch, src_len) tensor, True at real "
           "tokens; insert a head axis and a query axis of size 1 (positions 1 and 2) so it broadcasts to "
           "(batch, heads, tgt_len, src_len). tgt_len only fixes the shape — nothing causal here."),
    solution=solution_of("lesson07", "cross_attention_mask"),
    mistakes=MASK_MISTAKES,
)

q3 = Exercise(
    name="Grow the KV cache by one step",
    variables=("append_to_cache",),
    checker=check_append_to_cache,
    hints=("The cache is (batch, heads, steps so far, d_head); the new step adds one position. Which axis grows?",
           "Join the cached tensor and the new one, old first, along the positions axis (the third, dim 2) with "
           "torch.cat; build a new tensor — do not write into the cached one."),
    solution=solution_of("lesson07", "append_to_cache"),
    mistakes=APPEND_MISTAKES,
)


# ---------------------------------------------------------------------------- q4 (capstone): DecoderLayer
# The residual wirings of lesson 04 (connect) and their typical mistakes, which the decoder layer reuses.
def connect(kind: str, x: torch.Tensor, sublayer, norm: nn.Module) -> torch.Tensor:
    """One residual connection around ``sublayer`` with LayerNorm ``norm``, wired right or in a typical wrong way."""
    if kind == "post":
        return norm(x + sublayer(x))
    if kind == "pre":
        return x + sublayer(norm(x))
    if kind == "pre_residual_normed":  # the residual carries norm(x) instead of x
        h = norm(x)
        return h + sublayer(h)
    if kind == "norm_on_output":  # LayerNorm applied to the sublayer's output only
        return x + norm(sublayer(x))
    if kind == "post_no_residual":
        return norm(sublayer(x))
    if kind == "pre_no_residual":
        return sublayer(norm(x))
    raise ValueError(kind)


CONNECTION_MISTAKES = {  # requested norm -> {the wiring computed instead: message}
    "pre": {"post": "with norm='pre' you computed Post-LN, norm(x + sublayer(x)). Pre-LN normalises the input of "
                    "each sublayer and leaves the residual path alone: x + sublayer(norm(x))."},
    "post": {"pre": "with norm='post' you computed Pre-LN. Post-LN (the paper's Add & Norm) normalises after the "
                    "addition: norm(x + sublayer(x))."},
}
WIRING_MISTAKES = {
    "pre_residual_normed": "the residual carries norm(x) instead of x: in Pre-LN the identity path must stay raw, "
                           "x + sublayer(norm(x)).",
    "norm_on_output": "the LayerNorm is in the wrong place — you normalised the sublayer's output, "
                      "x + norm(sublayer(x)). Post-LN: norm(x + sublayer(x)); Pre-LN: x + sublayer(norm(x)).",
    "post_no_residual": "the residual connection is missing: add the sublayer's input back, norm(x + sublayer(x)).",
    "pre_no_residual": "the residual connection is missing: add the sublayer's input back, x + sublayer(norm(x)).",
}


SUBLAYER_STARTER = (
    "class FeedForward(nn.Module):\n"
    "    def __init__(self, d_model, d_ff, dropout):\n"
    "        super().__init__()\n"
    "        raise NotImplementedError  # linear1 (d_model -> d_ff), linear2 (d_ff -> d_model), a dropout\n"
    "\n"
    "    def forward(self, x):\n"
    "        raise NotImplementedError  # linear2(dropout(relu(linear1(x))))\n"
    "\n"
    "\n"
    "class Residual(nn.Module):\n"
    "    def __init__(self, d_model, dropout, norm):\n"
    "        super().__init__()\n"
    "        raise NotImplementedError  # self.norm = nn.LayerNorm(d_model), a dropout, remember post or pre\n"
    "\n"
    "    def forward(self, x, sublayer):\n"
    "        # post: norm(x + dropout(sublayer(x)));  pre: x + dropout(sublayer(norm(x)))\n"
    "        raise NotImplementedError\n"
)


LAYER_SIGNATURE = "(d_model, n_heads, d_ff, dropout=0.1, norm='post')"
DECODER_LAYER_LAYOUT = ("self_attn and cross_attn (MultiHeadAttentions with w_q, w_k, w_v, w_o), feed_forward.linear1 "
                        "and feed_forward.linear2, self_attn_block.norm, cross_attn_block.norm and ff_block.norm "
                        "(one nn.LayerNorm(d_model) per sublayer)")


def forbidden_layers() -> dict:
    """What the learner's layer must not call, however it is reached (an import, a wrapper, a subclass)."""
    from ..layers import DecoderLayer

    return {"the package's course_utils.layers.DecoderLayer": DecoderLayer,
            "torch.nn.TransformerDecoderLayer": nn.TransformerDecoderLayer}


def decoder_sizes(draw: Draw) -> dict[str, int]:
    """``n_heads``, ``d_head`` (``d_model = n_heads · d_head``) and ``d_ff``, no two of them (nor d_model) equal."""
    n_heads, d_head = draw.distinct(2, 2, 5)
    d_model = n_heads * d_head
    d_ff = draw.choice([n for n in range(d_model + 1, 2 * d_model + 8) if n not in (n_heads, d_head)])
    return {"d_model": d_model, "n_heads": n_heads, "d_ff": d_ff}


def decoder_cases(draw: Draw, sizes: dict[str, int]) -> list[tuple[str, dict[str, torch.Tensor | None]]]:
    """``(description, {"y", "memory", "tgt_mask", "memory_mask"})``, smallest first: memory longer and shorter
    than the target and as long, causal and target-padding masks, source padding in some rows only."""
    d_model = sizes["d_model"]

    def tensors(batch, tgt_len, src_len, causal, target_padding, source_padding):
        y = draw.randn(batch, tgt_len, d_model) * 2 + 1
        memory = draw.randn(batch, src_len, d_model)
        tgt_mask = memory_mask = None
        parts = []
        if causal:
            tgt_mask = torch.ones(tgt_len, tgt_len, dtype=torch.bool).tril()[None, None]
            parts.append("causal")
        if target_padding:
            keep = torch.ones(batch, tgt_len, dtype=torch.bool)
            keep[1:, draw.integer(2, tgt_len - 1):] = False  # the first row full, the others padded
            tgt_mask = (tgt_mask if tgt_mask is not None else True) & keep[:, None, None, :]
            parts.append("target padding")
        if source_padding:
            keep = torch.ones(batch, src_len, dtype=torch.bool)
            for row in range(1, batch, 2):  # padding in some rows only
                keep[row, draw.integer(1, src_len - 1):] = False
            memory_mask = keep[:, None, None, :]
        masks = (f"{' + '.join(parts)} tgt_mask {tuple(tgt_mask.shape)}" if tgt_mask is not None else "no tgt_mask")
        masks += (f", memory_mask {tuple(memory_mask.shape)} with source padding in some rows only"
                  if memory_mask is not None else ", no memory_mask")
        where = "longer than" if src_len > tgt_len else "shorter than" if src_len < tgt_len else "as long as"
        description = (f"batch {batch}, tgt_len {tgt_len}, memory {where} the target (src_len {src_len}), "
                       f"d_model {d_model}, {masks}")
        return description, {"y": y, "memory": memory, "tgt_mask": tgt_mask, "memory_mask": memory_mask}

    avoid = (sizes["n_heads"], sizes["d_model"] // sizes["n_heads"])  # no length equal to heads or d_head
    tgt_len, src_len = sorted(draw.distinct(2, 2, 8, avoid))  # batch 1: memory longer than the target
    batch, short, length, long_ = sorted(draw.distinct(4, 2, 9, avoid))
    return [tensors(1, tgt_len, src_len, False, False, False),
            tensors(batch, long_, short, True, False, True),
            tensors(batch, length, length, True, True, True),
            tensors(batch, short, long_, True, True, True)]


def decoder_layer_mistake(block, y, memory, tgt_mask, memory_mask, kind: str, *, use_tgt_mask: bool = True,
                          use_memory_mask: bool = True, cross_keys_from_y: bool = False, values_from_y: bool = False,
                          cross_first: bool = False, activation: str = "relu", final_norm: bool = False,
                          masks_swapped: bool = False, memory_normed: bool = False,
                          own_causal: bool = False) -> torch.Tensor:
    """The package decoder layer's weights wired as ``kind`` (see connect), or with another typical bug."""
    if masks_swapped:
        tgt_mask, memory_mask = memory_mask, tgt_mask
    if own_causal:  # a causal mask built inside the layer instead of the tgt_mask it is given
        tgt_mask = torch.ones(y.size(1), y.size(1), dtype=torch.bool).tril()[None, None]
    if memory_normed:
        memory = block.cross_attn_block.norm(memory)

    def self_attention(h):
        return block.self_attn(h, h, h, tgt_mask if use_tgt_mask else None)[0]

    def cross_attention(h):
        key = h if cross_keys_from_y else memory
        value = h if cross_keys_from_y or values_from_y else memory
        mask = memory_mask if use_memory_mask and not cross_keys_from_y else None
        return block.cross_attn(h, key, value, mask)[0]

    def feed_forward(h):
        hidden = block.feed_forward.linear1(h)
        hidden = {"relu": F.relu, "gelu": F.gelu, "none": lambda t: t}[activation](hidden)
        return block.feed_forward.linear2(hidden)
    steps = [(self_attention, block.self_attn_block.norm), (cross_attention, block.cross_attn_block.norm)]
    if cross_first:
        steps.reverse()
    for sublayer, norm in steps + [(feed_forward, block.ff_block.norm)]:
        y = connect(kind, y, sublayer, norm)
    return F.layer_norm(y, (y.size(-1),)) if final_norm else y


def diagnose_decoder_layer(block, y, memory, tgt_mask, memory_mask, norm: str, got: torch.Tensor) -> str | None:
    candidates = [({"kind": kind}, message) for kind, message in {**CONNECTION_MISTAKES[norm],
                                                                  **WIRING_MISTAKES}.items()]
    candidates += [
        ({"use_memory_mask": False}, "the memory mask is missing: cross-attention must hide the source's padding, "
                                     "self.cross_attn(h, memory, memory, memory_mask)."),
        ({"use_tgt_mask": False}, "self-attention ignores tgt_mask, so every position sees the future tokens it "
                                  "must predict: self.self_attn(h, h, h, tgt_mask)."),
        ({"masks_swapped": True}, "the masks are swapped: tgt_mask belongs to self-attention, memory_mask to "
                                  "cross-attention."),
        ({"cross_keys_from_y": True}, "cross-attention attends to the decoder's own states: its keys and values "
                                      "must come from the encoder memory, self.cross_attn(h, memory, memory, "
                                      "memory_mask)."),
        ({"values_from_y": True}, "cross-attention takes its values from the decoder side: the keys AND the "
                                  "values come from the encoder memory, self.cross_attn(h, memory, memory, "
                                  "memory_mask)."),
        ({"cross_first": True}, "the sublayers are in the wrong order: masked self-attention, then "
                                "cross-attention, then the feed-forward network."),
        ({"activation": "none"}, "the feed-forward has no ReLU between its two linear layers: "
                                 "linear2(dropout(relu(linear1(x))))."),
        ({"activation": "gelu"}, "the package's layer uses ReLU in the feed-forward (activation='relu'), not "
                                 "GELU."),
        ({"memory_normed": True}, "the memory went through the cross-attention block's LayerNorm too: only the "
                                  "decoder side h is normalised (Pre-LN); the keys and values are the memory as "
                                  "it comes, self.cross_attn(h, memory, memory, memory_mask)."),
        ({"own_causal": True}, "your layer builds its own causal mask instead of using the tgt_mask it is given "
                               "(which may hold target padding as well, or be None): pass tgt_mask to "
                               "self-attention as it is."),
        ({"final_norm": True}, "the layer ends with an extra LayerNorm: a layer has exactly one LayerNorm per "
                               "sublayer (a Pre-LN stack's final norm belongs to the Decoder, after the last "
                               "layer)."),
    ]
    with torch.no_grad():
        for knobs, message in candidates:
            try:
                wrong = decoder_layer_mistake(block, y, memory, tgt_mask, memory_mask, **{"kind": norm, **knobs})
            except (RuntimeError, ValueError, TypeError):
                continue
            if close(got, wrong):
                return message
    return None


def decoder_error_hint(tgt_len: int, src_len: int):
    def hint(message: str) -> str | None:
        lengths = f"({tgt_len})" in message and f"({src_len})" in message
        if lengths or "broadcast" in message or "same length" in message or "mask must" in message:
            return (f"target length ({tgt_len}) and source length ({src_len}) got mixed up: cross-attention takes its "
                    "queries from the decoder side and its keys and values from the memory — "
                    "self.cross_attn(h, memory, memory, memory_mask) — and tgt_mask belongs to self-attention, "
                    "memory_mask to cross-attention.")
        return None
    return hint


def manual_attention(module: nn.Module) -> nn.Module:
    """``module`` with every package attention inside on its plain path (the attention weights computed and dropped
    as lesson 03's block does), instead of the fused ``F.scaled_dot_product_attention``, which draws its dropout
    masks differently."""
    for m in module.modules():
        if isinstance(getattr(m, "use_fast_path", None), bool):
            m.use_fast_path = False
    return module


def build_learner_layer(learner_class, case: str, d_model: int, n_heads: int, d_ff: int, dropout: float,
                        norm: str) -> nn.Module:
    return call_learner(lambda: instantiate(learner_class, "DecoderLayer", LAYER_SIGNATURE, d_model, n_heads, d_ff,
                                            dropout=dropout, norm=norm),
                        "DecoderLayer", case, forbidden=forbidden_layers())


def check_layer_contract(package: nn.Module, learner: nn.Module, case: str, inputs: dict) -> None:
    """One call of the learner's layer (no gradients): no forbidden block, inputs unchanged, one float32 tensor of
    the target's shape."""
    before = snapshot(inputs)
    args = snapshot(inputs)
    with torch.no_grad():
        expected = package(*inputs.values())
        got = call_learner(lambda: learner(*args.values()), "DecoderLayer", case, forbidden=forbidden_layers(),
                           error_hint=lambda error: decoder_error_hint(inputs["y"].size(1),
                                                                       inputs["memory"].size(1))(str(error)))
    check_inputs_kept(before, args, "DecoderLayer", case)
    if isinstance(got, tuple):
        raise ExerciseFailure(f"on {case}: `DecoderLayer.forward` should return one tensor, got a tuple of "
                              f"{len(got)}: self_attn(...) and cross_attn(...) return (output, weights) — keep "
                              "only [0].")
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape) or got.dtype != expected.dtype:
        raise ExerciseFailure(f"on {case}: {difference(got, expected, 'the output of `DecoderLayer`')}.")


def check_layer_dropout(package_class, learner_class, sizes: dict, norm: str, case: str, inputs: dict,
                        p: float, seed: int) -> None:
    """With ``dropout=p``: eval mode equals the package's exactly; train mode drops exactly what the package's
    drops (same places, same order)."""
    torch.manual_seed(seed)
    package = package_class(**sizes, dropout=p, norm=norm)
    randomise_norms(package, torch.Generator().manual_seed(seed))
    learner = build_learner_layer(learner_class, case, **sizes, dropout=p, norm=norm)
    copy_weights(package, learner, "DecoderLayer", DECODER_LAYER_LAYOUT)
    package.eval()
    learner.eval()
    case = f"norm={norm!r}, dropout={p}, {case}"
    def run(block):  # the learner's layer is watched for the forbidden blocks in every mode
        if block is learner:
            return call_learner(lambda: block(*inputs.values()), "DecoderLayer", case, forbidden=forbidden_layers())
        return block(*inputs.values())
    with torch.no_grad():
        expected, first, second = run(package), run(learner), run(learner)
    if not torch.equal(first, second):
        raise ExerciseFailure(f"on {case}, in eval mode two calls of your `DecoderLayer` give different outputs: "
                              "dropout is still active. Use nn.Dropout modules (they follow .train()/.eval()) or "
                              "pass training=self.training to F.dropout.")
    if not close(first, expected):
        raise ExerciseFailure(f"on {case}, in eval mode your `DecoderLayer` differs from the package's (by up to "
                              f"{max_difference(first, expected):.3g}) although it agrees with dropout=0: in eval "
                              "mode dropout must do nothing — use nn.Dropout, not a hand-made scaling.")
    with torch.no_grad():
        try:  # the package's attention on its fused path (as a layer built on the package's attention runs) …
            check_dropout_placement(package, learner, run, "DecoderLayer", case)
        except ExerciseFailure as fused:
            try:  # … or on its plain path, which draws the dropout masks as an attention of lesson 03 does
                check_dropout_placement(manual_attention(package), learner, run, "DecoderLayer", case)
            except ExerciseFailure:
                raise fused from None


def check_decoder_layer(ns) -> None:
    from ..layers import DecoderLayer as PackageLayer

    learner_class = own_module_class(ns["DecoderLayer"], "DecoderLayer", "course_utils.layers.DecoderLayer")
    draw = Draw()
    sizes = decoder_sizes(draw)
    cases = decoder_cases(draw, sizes)
    seed = draw.integer(0, 2 ** 31 - 1)
    for norm in ("post", "pre"):
        torch.manual_seed(seed)
        package = PackageLayer(**sizes, dropout=0.0, norm=norm)
        randomise_norms(package, torch.Generator().manual_seed(seed))
        size_text = f"DecoderLayer({sizes['d_model']}, {sizes['n_heads']}, {sizes['d_ff']}, norm={norm!r})"
        learner = build_learner_layer(learner_class, size_text, **sizes, dropout=0.0, norm=norm)
        copy_weights(package, learner, "DecoderLayer", DECODER_LAYER_LAYOUT)
        for description, inputs in cases:
            case = f"norm={norm!r}, {description} ({sizes['n_heads']} heads, d_ff {sizes['d_ff']})"
            check_layer_contract(package, learner, case, inputs)

            def diagnose(got, package=package, inputs=inputs, norm=norm):
                return diagnose_decoder_layer(package, *inputs.values(), norm, got)
            compare_block(package, learner, "DecoderLayer", case, inputs, diagnose,
                          decoder_error_hint(inputs["y"].size(1), inputs["memory"].size(1)))
        check_same_in_both_modes(lambda block, inputs=inputs: block(*inputs.values()), learner, "DecoderLayer",
                                 f"norm={norm!r}, {description}, dropout=0")  # a step active in one mode only
        learner.eval()
        description, inputs = cases[-1]
        check_layer_dropout(PackageLayer, learner_class, sizes, norm, description, inputs,
                            draw.choice([0.2, 0.3, 0.4, 0.5]), seed + 1)


q4 = Exercise(
    name="Capstone: your own DecoderLayer",
    variables=("DecoderLayer",),
    checker=check_decoder_layer,
    hints=("Three residual blocks, each like lesson 04's: first the decoder looks at its own past, then at the "
           "source sentence, then each position thinks alone. Which mask goes where, and where do the keys and "
           "values of the second block come from? Stuck? `from course_utils.layers import DecoderLayer` and move "
           "on.",
           "__init__: two attention modules (self_attn, cross_attn), the feed-forward (linear1 → ReLU → dropout → "
           "linear2), and three residual wrappers, each with its own LayerNorm named norm and its own dropout. "
           "forward: block 1 runs self-attention on h with query = key = value = h and tgt_mask, keeping only the "
           "output of the (output, weights) pair; block 2 runs cross-attention with queries from h and keys AND "
           "values from memory, with memory_mask; block 3 runs the feed-forward. Each block is post: "
           "norm(y + dropout(f(y))) or pre: y + dropout(f(norm(y)))."),
    solution=solution_of("lesson07", "FeedForward", "Residual", "DecoderLayer"),
    success="Correct! Same outputs and gradients as course_utils.layers.DecoderLayer on random sizes, Post-LN and "
            "Pre-LN, memory shorter, longer and as long as the target, with causal, target-padding and source-"
            "padding masks; dropout in the same places in train mode, and none in eval mode.",
    task=(
        "**Capstone — your own `DecoderLayer`.** Write `DecoderLayer(d_model, n_heads, d_ff, dropout=0.1, "
        "norm=\"post\")` with `forward(y, memory, tgt_mask=None, memory_mask=None)`: `y (batch, tgt_len, d_model)` "
        "and the encoder output `memory (batch, src_len, d_model)` → `(batch, tgt_len, d_model)`. Three sublayers, "
        "each inside a residual connection with its own LayerNorm and dropout (Post-LN or Pre-LN, as in lesson "
        "04):\n\n"
        "1. masked self-attention over `y` with `tgt_mask` (causal, and target padding);\n"
        "2. cross-attention: queries from the decoder, keys and values from `memory`, with `memory_mask` (source "
        "padding, `(batch, 1, 1, src_len)`);\n"
        "3. the feed-forward network (`linear1` → ReLU → dropout → `linear2`).\n\n"
        "Attribute names — the package's: `self_attn`, `cross_attn` (two `MultiHeadAttention`s — yours from lesson "
        "03 or the package's), `feed_forward.linear1`, `feed_forward.linear2`, `self_attn_block.norm`, "
        "`cross_attn_block.norm`, `ff_block.norm`. The starter has the `FeedForward` and `Residual` skeletons "
        "of lesson 04: paste your versions in. Write the layer yourself: the package's `DecoderLayer` and "
        "`torch.nn.TransformerDecoderLayer` are not accepted, however they are reached.\n\n"
        "How it is checked: each check draws new sizes (heads, d_head, d_ff, batch, lengths — no two equal). For "
        "`norm=\"post\"` and `\"pre\"` the checker builds `course_utils.layers.DecoderLayer` with those sizes "
        "(LayerNorm gains and biases randomised), copies its parameters into yours, and compares outputs and "
        "gradients on batch 1 without masks, then on batches whose memory is shorter than, as long as and longer "
        "than the target, with a causal `tgt_mask (1, 1, tgt_len, tgt_len)` or causal + target padding `(batch, "
        "1, tgt_len, tgt_len)`, and a source-padding `memory_mask (batch, 1, 1, src_len)` with padding in some "
        "rows only; your layer must not change its inputs. Then, with dropout on, in eval mode your layer must "
        "equal the package's, and in train mode drop exactly what the package's drops (the same dropout layers, "
        "in the same places and order). `q4.hint()` and `q4.solution()` help; stuck? "
        "`from course_utils.layers import DecoderLayer` and move on."
    ),
    starter=(
        "import torch.nn as nn\n"
        "\n"
        "from course_utils.attention import MultiHeadAttention  # or paste yours from lesson 03\n"
        "\n"
        "\n"
        + SUBLAYER_STARTER +
        "\n"
        "\n"
        "class DecoderLayer(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm=\"post\"):\n"
        "        super().__init__()\n"
        "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
        "        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
        "        # feed_forward (.linear1, .linear2); self_attn_block, cross_attn_block, ff_block "
        "(each its own .norm)\n"
        "        raise NotImplementedError\n"
        "\n"
        "    def forward(self, y, memory, tgt_mask=None, memory_mask=None):\n"
        "        raise NotImplementedError  # masked self-attention, cross-attention to memory, feed-forward\n"
    ),
)


# ---------------------------------------------------------------------------- q5 (capstone): greedy_decode
class ScriptCache:
    """What the stand-in's ``new_cache()`` returns: it remembers the tokens fed so far, as a KV cache would."""

    def __init__(self) -> None:
        self.tokens: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.tokens is None else self.tokens.size(1)

    def reorder(self, rows: torch.Tensor) -> None:
        if self.tokens is not None:
            self.tokens = self.tokens[rows]


class ScriptedTranslator(nn.Module):
    """A stand-in encoder–decoder with the package's interface whose next token is fixed by a script.

    ``scripts`` maps a sentence's first source id to the tokens the model "wants" to produce, in order (it keeps
    talking after [EOS]). At position ``t`` it predicts ``script[t]`` if the decoder input up to ``t`` is what a
    correct greedy decoder feeds (``[BOS]`` then the scripted tokens) and ``off_script`` otherwise — so a decoder
    that does not start with [BOS], does not feed its choices back or mishandles the cache goes off script.
    ``tempt`` maps ``(first source id, t)`` to a special id (``[BOS]`` or ``[PAD]``) scored *above* the script
    there: the package never generates those. Works with and without ``cache`` (``model.new_cache()``), and
    records, for every call, whether it ran in training mode and with gradients enabled.
    """

    def __init__(self, scripts: dict[int, list[int]], vocab: int, bos: int, off_script: int,
                 tempt: dict[tuple[int, int], int] | None = None) -> None:
        super().__init__()
        self.scripts, self.vocab, self.bos, self.off_script = scripts, vocab, bos, off_script
        self.tempt = tempt or {}
        self.scale = nn.Parameter(torch.ones(()))
        self.calls: list[tuple[bool, bool]] = []

    def encode(self, src_ids: torch.Tensor) -> torch.Tensor:
        self.calls.append((any(m.training for m in self.modules()), torch.is_grad_enabled()))
        return src_ids.float()[..., None] * self.scale  # (batch, src_len, 1)

    def new_cache(self) -> ScriptCache:
        return ScriptCache()

    def decode(self, tgt_in_ids: torch.Tensor, memory: torch.Tensor, src_ids: torch.Tensor,
               cache: ScriptCache | None = None) -> torch.Tensor:
        self.calls.append((any(m.training for m in self.modules()), torch.is_grad_enabled()))
        if tgt_in_ids.dim() != 2 or memory.dim() != 3 or src_ids.dim() != 2 \
                or not tgt_in_ids.size(0) == memory.size(0) == src_ids.size(0):
            raise ValueError(f"model.decode(tgt_in_ids (batch, tgt_len), memory (batch, src_len, d_model), src_ids "
                             f"(batch, src_len)) got shapes {tuple(tgt_in_ids.shape)}, {tuple(memory.shape)}, "
                             f"{tuple(src_ids.shape)}")
        fed = tgt_in_ids.long()
        if cache is not None:
            fed = fed if cache.tokens is None else torch.cat([cache.tokens, fed], dim=1)
            cache.tokens = fed
        batch, new = tgt_in_ids.shape
        logits = torch.zeros(batch, new, self.vocab)
        tokens = torch.arange(self.vocab)
        for row in range(batch):
            key = int(src_ids[row, 0])
            script = self.scripts.get(key, [])  # a source changed in place: nothing is on script
            expected = [self.bos] + script
            for i, t in enumerate(range(fed.size(1) - new, fed.size(1))):
                # every other token gets a small score of its own, so the runner-up is well defined
                logits[row, i] = ((tokens * 7919 + t * 104729 + key * 1299709) % 997).float() / 997
                on_script = t < len(script) and fed[row, :t + 1].tolist() == expected[:t + 1]
                if on_script:
                    logits[row, i, self.off_script] = -5.0  # only a prefix gone wrong leads off script
                    logits[row, i, script[t]] = 5.0
                    if (key, t) in self.tempt:
                        logits[row, i, self.tempt[key, t]] = 6.0
                else:
                    logits[row, i, self.off_script] = 5.0
        return logits * self.scale + memory.mean() * 0.0

    def forward(self, src_ids: torch.Tensor, tgt_in_ids: torch.Tensor) -> torch.Tensor:
        return self.decode(tgt_in_ids, self.encode(src_ids), src_ids)


def recording_translator(config):
    """A :class:`~course_utils.models.Seq2SeqTransformer` that records, for every encode/decode call, whether it
    ran in training mode and with gradients enabled."""
    from ..models import Seq2SeqTransformer

    class RecordingTranslator(Seq2SeqTransformer):
        def __init__(self, config) -> None:
            super().__init__(config)
            self.calls: list[tuple[bool, bool]] = []

        def encode(self, src_ids):
            self.calls.append((any(m.training for m in self.modules()), torch.is_grad_enabled()))
            return super().encode(src_ids)

        def decode(self, tgt_in_ids, memory, src_ids, cache=None):
            self.calls.append((any(m.training for m in self.modules()), torch.is_grad_enabled()))
            return super().decode(tgt_in_ids, memory, src_ids, cache)

    return RecordingTranslator(config)


class DecodeCase:
    """One input of the greedy-decoding check: a model factory (a fresh model per call), the arguments, and the
    package's answer."""

    def __init__(self, description: str, make_model, src: torch.Tensor, bos: int, eos: int, max_new_tokens: int,
                 pad: int | None, scripted: bool) -> None:
        self.description, self.make_model, self.src = description, make_model, src
        self.bos, self.eos, self.max_new_tokens, self.pad, self.scripted = bos, eos, max_new_tokens, pad, scripted
        from ..decoding import greedy_decode

        pad_id = DEFAULT_PAD if pad is None else pad
        model = make_model().eval()
        self.expected = greedy_decode(model, src, bos, eos, max_new_tokens, pad_id=pad_id)
        uncached = greedy_decode(make_model().eval(), src, bos, eos, max_new_tokens, pad_id=pad_id, use_cache=False)
        if not torch.equal(self.expected, uncached):
            raise RuntimeError("checker bug: the model's tokens change with the KV cache")

    @property
    def pad_id(self) -> int:
        return DEFAULT_PAD if self.pad is None else self.pad

    def args(self) -> tuple:
        """What the learner's function is called with (pad_id left out where the case tests its default)."""
        args = (self.src.clone(), self.bos, self.eos, self.max_new_tokens)
        return args if self.pad is None else args + (self.pad,)


def scripted_case(draw: Draw, what: str, finish: list[int | None], max_new_tokens: int, *, default_pad: bool = False,
                  tempt: bool = False) -> DecodeCase:
    """A scripted batch: row ``i`` produces [EOS] at step ``finish[i]`` (1-based; ``None``: never)."""
    vocab = draw.integer(12, 40)
    bos, eos, pad = special_ids(draw, vocab)
    if default_pad:
        pad = DEFAULT_PAD
        while DEFAULT_PAD in (bos, eos):
            bos, eos, _ = special_ids(draw, vocab)
    off_script = draw.choice([i for i in range(vocab) if i not in (bos, eos, pad)])
    words = [i for i in range(vocab) if i not in (bos, eos, pad, off_script)]
    firsts = draw.distinct(len(finish), 0, vocab - 1, avoid=(pad,))
    length = max_new_tokens + 3
    scripts, temptations = {}, {}
    for first, end in zip(firsts, finish):
        script = [draw.choice(words) for _ in range(length)]  # it keeps talking after its [EOS]
        if end is not None:
            script[end - 1] = eos
        scripts[first] = script
    if tempt:  # [BOS] and [PAD] scored above the script, before the rows' [EOS]
        for row, (first, end) in enumerate(zip(firsts, finish)):
            last = (end or max_new_tokens) - 1
            if last >= 1:
                temptations[first, draw.integer(0, last - 1)] = bos if row % 2 == 0 else pad
    src_len = draw.integer(2, 5)
    rows = []
    for first in firsts:
        n = draw.integer(1, src_len - 1)
        rows.append([first] + [draw.choice(words) for _ in range(n)] + [pad] * (src_len - 1 - n))
    src = torch.tensor(rows, dtype=torch.long)
    ends = ", ".join("never" if end is None else f"step {end}" for end in finish)
    pad_text = "pad_id left at its default 0" if default_pad else f"pad_id {pad}"
    description = (f"a scripted model, {what}: batch {len(finish)}, max_new_tokens {max_new_tokens}, bos_id {bos}, "
                   f"eos_id {eos}, {pad_text}; [EOS] per row: {ends}"
                   + ("; [BOS]/[PAD] scored above the script at some steps" if temptations else ""))

    def make_model():
        return ScriptedTranslator(scripts, vocab, bos, off_script, temptations)

    return DecodeCase(description, make_model, src, bos, eos, max_new_tokens, None if default_pad else pad, True)


def real_model_case(draw: Draw, batch: int) -> DecodeCase:
    """A small random :class:`~course_utils.models.Seq2SeqTransformer` (dropout on, so train mode shows), source
    padding in some rows, special ids other than the defaults, and an [EOS] the model really produces."""
    from ..config import TransformerConfig
    from ..decoding import greedy_decode

    for _ in range(8):
        tgt_vocab, src_vocab = draw.distinct(2, 12, 30)
        n_heads, d_head = draw.distinct(2, 2, 4)
        max_new_tokens = draw.integer(5, 9)
        bos, _, pad = special_ids(draw, min(tgt_vocab, src_vocab))  # pad_id: an id of both vocabularies
        config = TransformerConfig(vocab_size=src_vocab, tgt_vocab_size=tgt_vocab, d_model=n_heads * d_head,
                                   n_heads=n_heads, d_ff=draw.integer(9, 20), n_layers=draw.integer(1, 2),
                                   max_len=16, dropout=draw.choice([0.2, 0.3, 0.4]), positional="learned",
                                   norm=draw.choice(["post", "pre"]), pad_id=pad)
        seed = draw.integer(0, 2 ** 31 - 1)

        def make_model(config=config, seed=seed):
            torch.manual_seed(seed)
            model = recording_translator(config)
            with torch.no_grad():  # larger embeddings: outputs that depend on the prefix, not one token repeated
                for name, p in model.named_parameters():
                    if "embedding" in name:
                        p.mul_(3.0)
            return model

        src_len = draw.integer(3, 7)
        words = [i for i in range(src_vocab) if i != pad]
        lengths = [src_len] + [draw.integer(1, src_len - 1) for _ in range(batch - 1)]
        src = torch.tensor([[draw.choice(words) for _ in range(n)] + [pad] * (src_len - n) for n in lengths])
        model = make_model().eval()
        free = greedy_decode(model, src, bos, bos, max_new_tokens, pad_id=pad)  # [BOS] is never generated
        eos = choose_eos(draw, free, (bos, pad))
        if eos is None or not clear_margins(model, src, bos, eos, max_new_tokens, pad):
            continue
        finish = [(row.tolist().index(eos) + 1) if eos in row.tolist() else None for row in free]
        ends = ", ".join("never" if end is None else f"step {end}" for end in finish)
        padded = ", ".join(str(i) for i, n in enumerate(lengths) if n < src_len)
        description = (f"a random Seq2SeqTransformer (d_model {config.d_model}, {n_heads} heads, {config.n_layers} "
                       f"layer{'s' * (config.n_layers > 1)}, {config.norm}-LN, dropout {config.dropout}, target "
                       f"vocabulary {tgt_vocab}) handed over in train mode: batch {batch}"
                       + (f" (source padding in rows {padded})" if padded else "")
                       + f", max_new_tokens {max_new_tokens}, bos_id {bos}, eos_id {eos}, pad_id {pad}; [EOS] per "
                       f"row: {ends}")
        return DecodeCase(description, make_model, src, bos, eos, max_new_tokens, pad, False)
    raise RuntimeError("checker bug: no random model with clear arg-max margins was found")


def choose_eos(draw: Draw, free: torch.Tensor, special: tuple[int, int]) -> int | None:
    """The id to call [EOS] so that rows finish at different steps (some never, the last row early if it can)."""
    scored = []
    for token in sorted(set(free.flatten().tolist()) - set(special)):
        finish = [(row.index(token) + 1) if token in row else None for row in free.tolist()]
        outcomes = len(set(finish))
        last_first = finish[-1] is not None and all(f is None or f >= finish[-1] for f in finish) and len(finish) > 1
        early = any(f is not None and f < free.size(1) for f in finish)
        late = all(f is None or f >= 2 for f in finish)  # at least one step before a row ends
        scored.append((outcomes + 2 * last_first + early + late, token))
    if not scored:
        return None
    best = max(score for score, _ in scored)
    return draw.choice([token for score, token in scored if score == best])


def clear_margins(model, src, bos: int, eos: int, max_new_tokens: int, pad: int, margin: float = 1e-3) -> bool:
    """Whether every arg-max of the package's greedy run wins by ``margin`` (so float noise — cache or no cache,
    softmax or not — cannot flip a token)."""
    from ..decoding import greedy_decode

    with torch.no_grad():
        out = greedy_decode(model, src, bos, eos, max_new_tokens, pad_id=pad)
        if not torch.equal(out, greedy_decode(model, src, bos, eos, max_new_tokens, pad_id=pad, use_cache=False)):
            return False
        prefix = torch.cat([torch.full((src.size(0), 1), bos), out[:, :-1]], dim=1)
        logits = model.decode(prefix, model.encode(src), src).clone()
        logits[..., [bos, pad]] = float("-inf")
        top = logits.topk(2, dim=-1).values
        gap = top[..., 0] - top[..., 1]
        live = torch.ones_like(out, dtype=torch.bool)
        live[:, 1:] = (out[:, :-1] != eos).cumprod(dim=1).bool()
    return bool((gap[live] > margin).all())


def decode_cases(draw: Draw) -> list[DecodeCase]:
    """Smallest first: scripted edge cases (one step, one row, the last row finishing first, a row that never
    finishes, the default pad_id, tempting specials), then two random real models."""
    n = draw.integer(3, 5)
    return [
        scripted_case(draw, "one step only", [None], 1),
        scripted_case(draw, "one row that ends before the limit", [n - 1], n + 1),
        scripted_case(draw, "the last row finishing first", [n, n - 2], n + 2, default_pad=True),
        scripted_case(draw, "the last row finishing first, the middle one never", [n - 1, None, 2], n + 1, tempt=True),
        scripted_case(draw, "every row ending before the limit, the first one first", [2, n + 1, n], n + 3),
        real_model_case(draw, 1),
        real_model_case(draw, draw.integer(3, 4)),
    ]


def forbidden_decoders() -> dict:
    from ..decoding import beam_search, generate, greedy_decode

    return {"the package's course_utils.decoding.greedy_decode": greedy_decode,
            "the package's course_utils.decoding.beam_search": beam_search,
            "the package's course_utils.decoding.generate": generate}


def decode_error_hint(error: BaseException) -> str | None:
    text = str(error)
    if isinstance(error, TypeError) and "positional argument" in text:
        return ("The function is greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0): give it "
                "exactly these parameters")
    if "Tensors must have same number of dimensions" in text or "zero-dim" in text or "too many indices" in text:
        return ("With batch 1 too, keep the batch axis: logits[:, -1] is (batch, vocab), argmax(dim=-1) gives "
                "(batch,), and next_token[:, None] is the column to append (no .squeeze())")
    return None


def kept_after_eos(case: DecodeCase, steps: int) -> torch.Tensor | None:
    """What a decoder that does not pad finished rows produces on a scripted case (the script goes on after
    [EOS]); ``None`` for a real model."""
    if not case.scripted:
        return None
    model = case.make_model()
    rows = [model.scripts[int(first)][:steps] for first in case.src[:, 0]]
    return torch.tensor(rows, dtype=torch.long) if all(len(r) == steps for r in rows) else None


def avoids_default_ids(decode) -> bool:
    """Whether the learner's ``decode`` never picks ids 5 and 0 (the course's [BOS] and [PAD]) even where they are
    ordinary words that a scripted model scores highest — the sign of special ids typed in."""
    words = [DEFAULT_BOS, DEFAULT_BOS, DEFAULT_PAD, DEFAULT_PAD]
    bos, eos, pad, off = 17, 18, 19, 16
    scripts = {first: [word, eos, 1, 2] for first, word in zip((11, 12, 13, 14), words)}
    src = torch.tensor([[first, 3] for first in scripts])
    model = ScriptedTranslator(scripts, 20, bos, off).eval()
    try:
        got = call_learner(decode, "greedy_decode", "a probe", model, src, bos, eos, 1, pad,
                           forbidden=forbidden_decoders())
    except ExerciseFailure:
        return False
    return isinstance(got, torch.Tensor) and got.shape == (4, 1) and not bool(torch.isin(got, torch.tensor(
        [DEFAULT_BOS, DEFAULT_PAD])).any())


def diagnose_decode(case: DecodeCase, got: torch.Tensor, decode) -> str:
    """Why ``got`` (a long tensor ``(batch, steps)``) differs from the package's tokens."""
    expected, bos, eos, pad = case.expected, case.bos, case.eos, case.pad_id
    steps = expected.size(1)
    if got.size(1) == steps + 1 and bool((got[:, 0] == bos).all()):
        return "your output starts with [BOS]; return only the generated tokens, without the first column"
    if got.size(1) > case.max_new_tokens:
        return (f"you returned {got.size(1)} steps, more than max_new_tokens={case.max_new_tokens}: run at most "
                "max_new_tokens steps")
    n = min(steps, got.size(1))
    head, reference = got[:, :n], expected[:, :n]
    if got.size(1) < steps and torch.equal(head, reference):
        finished_at = [(row.index(eos) + 1) if eos in row else None for row in expected.tolist()]
        when = ""
        if finished_at[-1] == got.size(1) and case.src.size(0) > 1:
            when = " — when the *last* row finished; the others were still going"
        elif any(f == got.size(1) for f in finished_at):
            when = " — when one row finished"
        if eos != DEFAULT_EOS and any(f is None or f > got.size(1) for f in finished_at) \
                and bool((got == DEFAULT_EOS).any()):
            when += (f" (a row produced id {DEFAULT_EOS}, an ordinary word in this call: compare with the eos_id "
                     f"argument, here {eos}; never type the special ids in)")
        return (f"you stopped after {got.size(1)} steps{when}; a row that has not produced [EOS] goes on (here "
                f"until step {steps}): stop only when *every* row is finished, or at max_new_tokens")
    alive = torch.ones_like(reference, dtype=torch.bool)
    alive[:, 1:] = (reference[:, :-1] != eos).cumprod(dim=1).bool()  # before and at each row's [EOS]
    going = torch.ones_like(head, dtype=torch.bool)  # the learner's rows before and at their own [EOS]
    going[:, 1:] = (head[:, :-1] != eos).cumprod(dim=1).bool()
    for special, name in ((bos, "[BOS]"), (pad, "[PAD]")):
        hits = ((head == special) & alive & going & (reference != special)).nonzero()
        if len(hits):
            row, step = hits[0].tolist()
            return (f"row {row} generated {name} (id {special}) at step {step + 1}, where the package's decoder "
                    f"picks {int(reference[row, step])}: [BOS] and [PAD] are never generated — they are not words, "
                    "and a [PAD] inside a prefix would be hidden by the padding mask. Set the logits of bos_id and "
                    "pad_id (the arguments) to -inf before the arg-max")
    if torch.equal(head[alive], reference[alive]):  # every word right: the trouble is after [EOS]
        longer = got.size(1) > steps
        fillers = torch.cat([head[~alive], got[:, steps:].flatten()])
        fillers = fillers[fillers != pad]
        stop = (f" — and stop as soon as every row is finished (here after {steps} steps, you ran {got.size(1)})"
                if longer else "")
        if fillers.numel():
            for row, tokens in enumerate(got.tolist()):
                ending = tokens.index(eos) + 1 if eos in tokens[:-1] else None
                rest = tokens[ending:] if ending is not None else []
                if rest and rest[0] == pad and any(t != pad for t in rest):
                    return (f"row {row} ended with [EOS], got [PAD] once, then went on generating ({tokens}): a "
                            "finished row must stay finished — update the flags with finished |= (token == eos_id), "
                            f"never un-finish a row{stop}")
            kept = kept_after_eos(case, got.size(1))
            if (kept is not None and torch.equal(got, kept)) or not bool((fillers == fillers[0]).all()):
                return ("after a row's [EOS] you kept its later tokens: [EOS] (the eos_id argument) ends a row, fill "
                        f"the rest of it with pad_id (here {pad}; keep a `finished` flag per row, and never un-finish "
                        f"a row){stop}")
            what = " — that is eos_id" if int(fillers[0]) == eos else ""
            return (f"after a row's [EOS] you filled it with {int(fillers[0])}{what}, not with pad_id (here {pad}): "
                    f"use the pad_id argument{stop}")
        if longer:
            return (f"you ran {got.size(1)} steps, but every row had produced [EOS] after {steps}: stop as soon as "
                    "all rows are finished")
    wrong = ((head != reference) & alive).nonzero()
    if not len(wrong):
        wrong = (head != reference).nonzero()
    row, step = wrong[wrong[:, 1].argmin()].tolist()  # the earliest step that differs
    mine, theirs = int(head[row, step]), int(reference[row, step])
    if case.scripted and mine == case.make_model().off_script:
        return (f"the model went off script (row {row}, step {step + 1}): the decoder input must start with bos_id "
                "and grow by the token chosen at each step — or, with model.new_cache(), hold only the newest token "
                "each step (the cache remembers the rest) — and each step reads the logits of the *last* position, "
                "logits[:, -1]")
    if got.size(1) > 1 and bool((got == got[:, :1]).all()):
        return (f"every step produced the first token again ({got[:, 0].tolist()}): the decoder input must grow by "
                "the token chosen at each step (torch.cat it to the prefix), and each step reads the logits of the "
                "*last* position, logits[:, -1]")
    if step and mine == pad and int(head[row, step - 1]) == DEFAULT_EOS and eos != DEFAULT_EOS:
        return (f"row {row} stopped after id {DEFAULT_EOS} at step {step}, but in this call eos_id is {eos} (id "
                f"{DEFAULT_EOS} is an ordinary word): compare with the eos_id argument; never type the special ids "
                "in")
    if theirs in (DEFAULT_BOS, DEFAULT_PAD) and theirs not in (bos, pad) and avoids_default_ids(decode):
        role = "eos_id" if theirs == eos else "an ordinary word"
        return (f"row {row}, step {step + 1}: the package's greedy decoder picks {theirs} — in this call {role} "
                f"(bos_id is {bos}, eos_id {eos}, pad_id {pad}) — yours {mine}: set the logits of "
                "bos_id and pad_id (the arguments) to -inf, not those of the course's default ids 5 and 0; never "
                "type the special ids in")
    return (f"row {row}, step {step + 1}: the package's greedy decoder picks {theirs}, yours {mine} (expected "
            f"{expected.tolist()}, got {got.tolist()}): at each step take the arg-max of the last position's logits "
            "(bos_id and pad_id excluded), give finished rows pad_id, append, and stop when every row is finished")


def check_greedy_decode(ns) -> None:
    decode = own_function(ns["greedy_decode"], "greedy_decode", "course_utils.decoding.greedy_decode")
    for case in decode_cases(Draw()):
        model = case.make_model().train()  # handed over in training mode, as right after fit
        args = case.args()
        got = call_learner(decode, "greedy_decode", case.description, model, *args, forbidden=forbidden_decoders(),
                           error_hint=decode_error_hint)
        if not same_content(snapshot(case.src), args[0]):
            raise ExerciseFailure(f"on {case.description}: your `greedy_decode` changed its input `src_ids` in "
                                  "place. The caller still needs it: work on new tensors.")
        if not model.calls:
            raise ExerciseFailure(f"on {case.description}: your `greedy_decode` never called model.encode / "
                                  "model.decode.")
        if any(training for training, _ in model.calls):
            raise ExerciseFailure(f"on {case.description}: the model (or one of its submodules) ran in training "
                                  "mode: call model.eval() first — assigning model.training = False switches the top "
                                  "module only — otherwise dropout changes every step's prediction.")
        if any(grad for _, grad in model.calls):
            raise ExerciseFailure(f"on {case.description}: the model ran with gradients enabled: decoding needs no "
                                  "backward pass, so run it under torch.no_grad() (or decorate the function with "
                                  "@torch.no_grad()) — otherwise every step's graph is kept in memory.")
        expected = case.expected
        if not isinstance(got, torch.Tensor):
            raise ExerciseFailure(f"on {case.description}: return the generated ids as a tensor (batch, steps), got "
                                  f"{type(got).__name__}.")
        if got.dim() != 2 or got.size(0) != expected.size(0):
            raise ExerciseFailure(f"on {case.description}: return generated ids of shape (batch, steps) = "
                                  f"{tuple(expected.shape)}, got {tuple(got.shape)}.")
        if got.dtype != torch.long:
            raise ExerciseFailure(f"on {case.description}: token ids are torch.long, got {got.dtype}.")
        if not torch.equal(got, expected):
            raise ExerciseFailure(f"on {case.description}: {diagnose_decode(case, got, decode)}.")


q5 = Exercise(
    name="Capstone: your own greedy decoder",
    variables=("greedy_decode",),
    checker=check_greedy_decode,
    hints=("Start every row from [BOS], and ask the model for one token at a time, always the most probable one "
           "that is a word. When is a row done, what does it get after that, and when is the whole batch done? "
           "How do you tell the model it is not training? Stuck? `from course_utils.decoding import greedy_decode`.",
           "Put the model in eval mode and switch gradients off. Encode the source once. The prefix starts as a "
           "(batch, 1) column of bos_id (long, on the source's device) and no row is finished. At each of at most "
           "max_new_tokens steps: decode the prefix, read the scores of the last position, exclude bos_id and "
           "pad_id (minus infinity), take the arg-max per row, replace it with pad_id in finished rows, append it "
           "as a new column, mark rows whose token is eos_id as finished, and leave the loop once all are "
           "finished. Return the prefix without its first column."),
    solution=solution_of("lesson07", "greedy_decode"),
    success="Correct! The same tokens as course_utils.decoding.greedy_decode — on scripted edge cases and on random "
            "Seq2SeqTransformers: a [BOS] start, [BOS] and [PAD] never generated, [PAD] after each row's [EOS], a "
            "stop once every row has finished, eval mode and no gradients.",
    task=(
        "**Capstone — your own greedy decoder.** Write `greedy_decode(model, src_ids, bos_id, eos_id, "
        "max_new_tokens, pad_id=0)` for a model with the package's interface (`model.encode(src_ids)` → memory, "
        "`model.decode(tgt_in_ids, memory, src_ids)` → logits `(batch, tgt_len, vocab)`; with `cache = "
        "model.new_cache()`, `model.decode(newest_ids, memory, src_ids, cache)` remembers the earlier positions). "
        "Return the generated ids `(batch, steps)`, `torch.long`, without the [BOS]:\n\n"
        "* the decoder input starts as a column of `bos_id` and grows by the token chosen at every step: the "
        "arg-max of the last position's logits, where `bos_id` and `pad_id` are never chosen (set their logits to "
        "`-inf` first — they are not words);\n"
        "* a row that has produced `eos_id` is finished: from then on it gets `pad_id`; stop as soon as every row "
        "is finished, or after `max_new_tokens`;\n"
        "* decode in eval mode (`model.eval()`) and without gradients (`torch.no_grad()`); leave `src_ids` "
        "unchanged.\n\n"
        "Write the loop yourself: the package's `greedy_decode`, `beam_search` and `generate` are not accepted, "
        "however they are reached.\n\n"
        "How it is checked: your tokens are compared with `course_utils.decoding.greedy_decode`'s, token for token "
        "— first on scripted stand-in models (one step only, one row, rows that finish at different steps with the "
        "last row finishing first, a row that never finishes, the default `pad_id`, [BOS]/[PAD] scored highest at "
        "some steps), then on two small random `Seq2SeqTransformer`s (batch 1, and a batch with source padding in "
        "some rows); the special ids are drawn anew at each check, never the course's 5/6/0. Every model is handed "
        "over in training mode with dropout on and records whether it ran in eval mode and without gradients. With "
        "or without the KV cache, a right answer gives the same tokens. `q5.hint()` and `q5.solution()` help; "
        "stuck? `from course_utils.decoding import greedy_decode` and move on."
    ),
    starter=(
        "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
        "    # eval mode, no gradients; start from [BOS]; pick logits[:, -1].argmax(-1) without [BOS]/[PAD];\n"
        "    # pad finished rows; stop when all are finished\n"
        "    raise NotImplementedError\n"
    ),
)
