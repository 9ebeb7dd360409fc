"""Turning a trained model into text: greedy decoding and beam search for the translator (lesson 07), sampling for
the GPT (lesson 08: temperature, top-k, top-p, repetition penalty, :func:`generate`).

The translator's functions work on batches of token ids and on any model with the
:class:`~course_utils.models.Seq2SeqTransformer` interface: ``encode(src_ids)``, ``decode(tgt_in_ids, memory,
src_ids, cache=None)`` and ``new_cache()``. Every decoding function checks its arguments once, before the first
step; the model calls inside the loop are not checked again.

Outputs are ``(batch, steps)`` long tensors of *generated* ids (no [BOS]); a row ends with its [EOS] and is padded
with ``pad_id`` after it. :func:`strip_after_eos` turns them into plain id lists. [PAD] and [BOS] are never
generated: they are not words, and a [PAD] inside a prefix would be hidden by the padding mask.
"""
from __future__ import annotations

__all__ = ["BeamSearchOutput", "apply_repetition_penalty", "apply_temperature", "beam_search", "check_decoding_inputs",
           "cross_attention_weights", "distinct_ngram_ratio", "forbid_special_tokens", "generate", "greedy_decode",
           "length_penalty", "next_token_logits", "repeated_ngram_tokens", "sample_perplexity", "strip_after_eos",
           "top_k_filter", "top_p_filter"]

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn as nn

from .attention import capture_attention
from .errors import CourseTypeError, CourseValueError
from .language_model import DecoderOnlyLM
from .tokenization import BOS_ID, PAD_ID
from .validation import (
    check_bool,
    check_id_lists,
    check_index,
    check_int,
    check_module,
    check_non_negative_int,
    check_positive_int,
    check_rank,
    check_real,
    check_same_batch,
    check_tensor,
    check_token_ids,
    checked_by,
    describe,
)


def check_special_tokens(logits: object, bos_id: object, pad_id: object) -> None:
    check_rank(logits, 2, "logits", "(rows, vocab)")
    if not logits.is_floating_point():
        raise CourseTypeError(f"logits must be floating point, got {logits.dtype}; pass the model's output scores")
    check_index("bos_id", bos_id, logits.size(-1), f"the {logits.size(-1)} logits")
    check_index("pad_id", pad_id, logits.size(-1), f"the {logits.size(-1)} logits")


@checked_by(check_special_tokens)
def forbid_special_tokens(logits: torch.Tensor, bos_id: int, pad_id: int) -> torch.Tensor:
    """``logits (rows, vocab)`` with the [BOS] and [PAD] entries set to ``-inf`` (never valid outputs)."""
    logits = logits.clone()
    logits[:, [bos_id, pad_id]] = float("-inf")
    return logits


def check_encoder_decoder(model: object) -> nn.Module:
    """``model`` if it is an ``nn.Module`` with the ``encode`` / ``decode`` / ``new_cache`` interface."""
    missing = [m for m in ("encode", "decode", "new_cache") if not callable(getattr(model, m, None))]
    if not isinstance(model, nn.Module) or missing:
        raise CourseTypeError(f"model must be an encoder–decoder nn.Module with encode/decode/new_cache methods "
                              f"(e.g. Seq2SeqTransformer), got {describe(model)}"
                              + (f" without .{', .'.join(missing)}" if missing else ""))
    return model


def check_decoding_inputs(src_ids: torch.Tensor, max_new_tokens: int, beam_size: int = 1,
                          model: nn.Module | None = None, special_ids: dict[str, int] | None = None) -> torch.Tensor:
    """Check the arguments of :func:`greedy_decode` / :func:`beam_search` before any work; return ``src_ids`` as long.

    With a ``model`` that has a :class:`~course_utils.config.TransformerConfig` as ``model.config``, also checks
    the source ids against its vocabulary, and that the source and the longest output fit in ``max_len`` — so a
    too-long request fails now, not after many decoding steps. ``special_ids`` (``{"bos_id": 5, ...}``) must be
    valid target ids.
    """
    if model is not None:
        check_encoder_decoder(model)
    if not isinstance(src_ids, torch.Tensor) or src_ids.dim() != 2:
        got = f"{src_ids.dtype} {tuple(src_ids.shape)}" if isinstance(src_ids, torch.Tensor) else type(src_ids).__name__
        raise CourseValueError(f"src_ids must be a long tensor of shape (batch, src_len), got {got}; "
                               "for one sentence use ids.unsqueeze(0)")
    if src_ids.dtype.is_floating_point or src_ids.dtype == torch.bool or src_ids.dtype.is_complex:
        raise CourseTypeError(f"src_ids must be a long tensor of token ids, got {src_ids.dtype}; convert with "
                              "ids.long() — and check you did not pass embeddings instead of ids")
    max_new_tokens = check_int("max_new_tokens", max_new_tokens)
    if max_new_tokens < 1:
        raise CourseValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    beam_size = check_int("beam_size", beam_size)
    if beam_size < 1:
        raise CourseValueError(f"beam_size must be >= 1, got {beam_size}")
    for name, value in (special_ids or {}).items():
        check_non_negative_int(name, value)
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "max_len"):
        return check_token_ids(src_ids, 2**63 - 1, name="src_ids")
    src_ids = check_token_ids(src_ids, config.vocab_size, config.max_len, name="src_ids")
    if max_new_tokens > config.max_len:
        raise CourseValueError(f"max_new_tokens={max_new_tokens} exceeds the model's max_len={config.max_len}: the "
                               f"decoder has no position for token {config.max_len + 1} onwards. Ask for at most "
                               f"{config.max_len} tokens or build the model with a larger max_len")
    for name, value in (special_ids or {}).items():
        check_index(name, value, config.tgt_vocab_size,
                    f"the target vocabulary (tgt_vocab_size={config.tgt_vocab_size})")
    return src_ids


def repeated_ngram_tokens(generated: list[int], n: int) -> list[int]:
    """Tokens that would complete an ``n``-gram already present in ``generated`` (``no_repeat_ngram_size`` rule).

    ``generated = [7, 8, 9, 7, 8]``, ``n = 3`` → ``[9]``: the last ``n - 1`` tokens ``(7, 8)`` were once followed
    by ``9``, so ``9`` now would repeat the 3-gram ``7 8 9``.
    """
    if not isinstance(generated, (list, tuple)) or not all(isinstance(t, int) and not isinstance(t, bool)
                                                       for t in generated):
        raise CourseTypeError(f"generated must be a list of int token ids, got {describe(generated)}; "
                              "for a tensor row use row.tolist()")
    check_non_negative_int("n", n)
    if n < 1 or len(generated) < n - 1:
        return []
    context = tuple(generated[len(generated) - (n - 1):])
    return [generated[i + n - 1] for i in range(len(generated) - n + 1) if tuple(generated[i:i + n - 1]) == context]


def check_greedy_arguments(model: object, src_ids: object, bos_id: object, eos_id: object, max_new_tokens: object,
                           pad_id: object = 0, use_cache: object = True, no_repeat_ngram_size: object = 0) -> None:
    """Raise a course error unless the arguments fit :func:`greedy_decode`."""
    check_encoder_decoder(model)
    check_decoding_inputs(src_ids, max_new_tokens, model=model,
                          special_ids={"bos_id": bos_id, "eos_id": eos_id, "pad_id": pad_id})
    check_bool("use_cache", use_cache)
    check_non_negative_int("no_repeat_ngram_size", no_repeat_ngram_size)


@torch.no_grad()
@checked_by(check_greedy_arguments)
def greedy_decode(model: nn.Module, src_ids: torch.Tensor, bos_id: int, eos_id: int, max_new_tokens: int,
                  pad_id: int = 0, use_cache: bool = True, no_repeat_ngram_size: int = 0) -> torch.Tensor:
    """Pick the most probable next token at every step until every row has produced [EOS].

    Args:
        model: an encoder–decoder in eval mode.
        src_ids: source ids ``(batch, src_len)``, right-padded with ``pad_id``.
        bos_id, eos_id: the start and end tokens of the target side.
        max_new_tokens: stop after this many tokens even without [EOS].
        use_cache: ``True`` feeds only the newest token and reuses the cached keys/values of earlier positions;
            ``False`` re-runs the decoder on the whole prefix at every step (same tokens, more work).
        no_repeat_ngram_size: ``n > 0`` forbids generating any ``n``-gram of tokens twice in a row's output (a
            blunt cure for loops such as "hundert hundert hundert"; it also forbids legitimate repeats).

    Returns:
        generated ids ``(batch, steps)``, ``steps <= max_new_tokens``; ``pad_id`` after each row's [EOS].
    """
    src_ids = src_ids.long()
    memory = model.encode(src_ids)  # (batch, src_len, d_model), computed once
    batch = src_ids.size(0)
    prefix = torch.full((batch, 1), bos_id, dtype=torch.long, device=src_ids.device)  # (batch, 1 + t)
    finished = torch.zeros(batch, dtype=torch.bool, device=src_ids.device)
    cache = model.new_cache() if use_cache else None
    for _ in range(max_new_tokens):
        step_input = prefix[:, -1:] if use_cache else prefix
        logits = model.decode(step_input, memory, src_ids, cache)[:, -1]  # (batch, tgt_vocab)
        logits = forbid_special_tokens(logits, bos_id, pad_id)
        if no_repeat_ngram_size > 0:
            for row, generated in enumerate(prefix[:, 1:].tolist()):
                logits[row, repeated_ngram_tokens(generated, no_repeat_ngram_size)] = float("-inf")
        next_token = logits.argmax(dim=-1).masked_fill(finished, pad_id)  # (batch,)
        prefix = torch.cat([prefix, next_token[:, None]], dim=1)
        finished |= next_token == eos_id
        if finished.all():
            break
    return prefix[:, 1:]


def length_penalty(length: torch.Tensor, alpha: float) -> torch.Tensor:
    """GNMT length penalty ``((5 + length) / 6) ** alpha``; beam scores are ``log P / length_penalty``.

    ``alpha = 0`` ranks by plain log-probability (which favours short outputs, since every token adds a negative
    log-probability); larger ``alpha`` gives long hypotheses a fairer chance.
    """
    check_tensor("length", length)
    if length.dtype.is_complex or length.dtype == torch.bool:
        raise CourseTypeError(f"length must hold numbers of tokens, got a {length.dtype} tensor")
    if length.numel() and bool((length < 0).any()):
        raise CourseValueError(f"length must be >= 0 (a number of tokens), got a smallest length of "
                               f"{float(length.min()):g}")
    check_real("alpha", alpha)
    return ((5.0 + length.float()) / 6.0) ** alpha


@dataclass
class BeamSearchOutput:
    """``sequences (batch, beam, steps)`` best first, their ``scores (batch, beam)`` (log-prob / length penalty)
    and raw ``log_probs (batch, beam)``."""

    sequences: torch.Tensor
    scores: torch.Tensor
    log_probs: torch.Tensor

    def __post_init__(self) -> None:
        check_rank(self.sequences, 3, "sequences", "(batch, beam, steps)")
        check_rank(self.scores, 2, "scores", "(batch, beam)")
        check_rank(self.log_probs, 2, "log_probs", "(batch, beam)")
        if not self.sequences.shape[:2] == self.scores.shape == self.log_probs.shape:
            raise CourseValueError(f"sequences {tuple(self.sequences.shape)}, scores {tuple(self.scores.shape)} and "
                                   f"log_probs {tuple(self.log_probs.shape)} must agree on (batch, beam)")

    @property
    def best(self) -> torch.Tensor:
        """The top hypothesis of every row, ``(batch, steps)``."""
        return self.sequences[:, 0]


def check_beam_arguments(model: object, src_ids: object, bos_id: object, eos_id: object, max_new_tokens: object,
                         beam_size: object = 4, alpha: object = 0.6, pad_id: object = 0) -> None:
    """Raise a course error unless the arguments fit :func:`beam_search`."""
    check_encoder_decoder(model)
    check_decoding_inputs(src_ids, max_new_tokens, beam_size, model=model,
                          special_ids={"bos_id": bos_id, "eos_id": eos_id, "pad_id": pad_id})
    check_real("alpha", alpha)


@torch.no_grad()
@checked_by(check_beam_arguments)
def beam_search(model: nn.Module, src_ids: torch.Tensor, bos_id: int, eos_id: int, max_new_tokens: int,
                beam_size: int = 4, alpha: float = 0.6, pad_id: int = 0) -> BeamSearchOutput:
    """Keep the ``beam_size`` most probable prefixes of every source sentence at each step (batched, KV-cached).

    Every step extends each of the ``beam_size`` prefixes by every token, scores the candidates by their summed
    log-probability and keeps the best ``beam_size``. A hypothesis that has produced [EOS] stays in the beam with
    its score frozen (it can only be extended by padding, at no cost). At the end the hypotheses are ranked by
    ``log P / length_penalty(length, alpha)`` (length counted up to and including [EOS]).

    Args:
        src_ids: ``(batch, src_len)``.
        beam_size: hypotheses kept per sentence; ``1`` is exactly greedy decoding.
        alpha: length-penalty exponent (see :func:`length_penalty`).

    Returns:
        a :class:`BeamSearchOutput`; ``.best`` has the same layout as :func:`greedy_decode`'s result.
    """
    src_ids = src_ids.long()
    batch, device = src_ids.size(0), src_ids.device
    src = src_ids.repeat_interleave(beam_size, dim=0)  # (batch·beam, src_len)
    memory = model.encode(src)  # (batch·beam, src_len, d_model)
    cache = model.new_cache()
    prefix = torch.full((batch * beam_size, 1), bos_id, dtype=torch.long, device=device)
    # only beam 0 is "alive" at the start, so the first step does not pick the same token beam_size times
    log_probs = torch.full((batch, beam_size), float("-inf"), device=device)
    log_probs[:, 0] = 0.0
    finished = torch.zeros(batch * beam_size, dtype=torch.bool, device=device)
    lengths = torch.zeros(batch * beam_size, dtype=torch.long, device=device)
    for _ in range(max_new_tokens):
        logits = model.decode(prefix[:, -1:], memory, src, cache)[:, -1]  # (batch·beam, vocab)
        step_log_probs = torch.log_softmax(forbid_special_tokens(logits.float(), bos_id, pad_id), dim=-1)
        vocab = step_log_probs.size(-1)
        # a finished hypothesis may only continue with padding, which costs nothing
        frozen = torch.full_like(step_log_probs, float("-inf"))
        frozen[:, pad_id] = 0.0
        step_log_probs = torch.where(finished[:, None], frozen, step_log_probs)
        candidates = (log_probs.view(-1, 1) + step_log_probs).view(batch, beam_size * vocab)
        log_probs, flat_index = candidates.topk(beam_size, dim=-1)  # (batch, beam)
        parent = flat_index // vocab + torch.arange(batch, device=device)[:, None] * beam_size  # rows to copy
        token = (flat_index % vocab).view(-1)  # (batch·beam,)
        parent = parent.view(-1)
        prefix = torch.cat([prefix[parent], token[:, None]], dim=1)
        lengths = lengths[parent] + (~finished[parent]).long()
        finished = finished[parent] | (token == eos_id)
        cache.reorder(parent)  # each hypothesis inherits its parent's keys and values
        if finished.all():
            break
    scores = log_probs / length_penalty(lengths.view(batch, beam_size), alpha)
    scores, order = scores.sort(dim=-1, descending=True)
    sequences = prefix[:, 1:].view(batch, beam_size, -1)
    sequences = sequences.gather(1, order[:, :, None].expand(-1, -1, sequences.size(-1)))
    return BeamSearchOutput(sequences, scores, log_probs.gather(1, order))


def strip_after_eos(generated: torch.Tensor, eos_id: int) -> list[list[int]]:
    """``(batch, steps)`` generated ids → one list per row with the tokens before its first [EOS]."""
    generated = check_token_ids(generated, 2**63 - 1, name="generated", allow_empty=True)
    check_int("eos_id", eos_id)
    rows = []
    for row in generated.tolist():
        rows.append(row[: row.index(eos_id)] if eos_id in row else row)
    return rows


@torch.no_grad()
def cross_attention_weights(model: nn.Module, src_ids: torch.Tensor, generated: torch.Tensor,
                            bos_id: int) -> dict[str, torch.Tensor]:
    """What the decoder looked at while producing ``generated``: cross-attention weights of every decoder layer.

    Runs one teacher-forced pass on ``[BOS] + generated[:, :-1]`` (the inputs that produced ``generated``).

    Returns:
        ``{"decoder.layers.<i>.cross_attn": (batch, heads, steps, src_len)}``; row ``t`` is the attention
        of the step that produced ``generated[:, t]``.
    """
    check_encoder_decoder(model)
    src_ids = check_decoding_inputs(src_ids, 1, model=model, special_ids={"bos_id": bos_id})
    config = getattr(model, "config", None)
    generated = check_token_ids(generated, config.tgt_vocab_size if config is not None else 2**63 - 1,
                                config.max_len if config is not None else None, name="generated")
    check_same_batch(("src_ids", src_ids), ("generated", generated))
    bos = torch.full((generated.size(0), 1), bos_id, dtype=torch.long, device=generated.device)
    tgt_in = torch.cat([bos, generated[:, :-1]], dim=1)
    with capture_attention(model) as maps:
        model(src_ids, tgt_in)
    return {name: weights for name, weights in maps.items() if name.endswith("cross_attn")}


# ------------------------------------------------------------------------------------- sampling (lesson 08)
def check_logits(logits: object) -> torch.Tensor:
    """``logits`` if it is a floating ``(rows, vocab)`` tensor."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() != 2:
        raise CourseValueError(f"expected next-token logits as a float tensor (rows, vocab), got {describe(logits)}; "
                               "take the last position: model(ids)[:, -1]")
    return logits


def check_top_k(top_k: object) -> int | None:
    if top_k is None:
        return None
    return check_positive_int("top_k", top_k, hint="; None keeps every token")


def check_top_p(top_p: object) -> float | None:
    if top_p is None:
        return None
    return check_real("top_p", top_p, 0.0, 1.0, low_inclusive=False, hint="; 1.0 (or None) keeps every token")


def check_temperature(logits: object, temperature: object) -> None:
    check_logits(logits)
    check_real("temperature", temperature, 0.0, low_inclusive=False,
               hint="; temperature 0 means greedy decoding: use generate(..., temperature=0)")


@checked_by(check_temperature)
def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``logits / temperature`` (``temperature > 0``): below 1 sharpens the distribution, above 1 flattens it."""
    return logits / temperature


@checked_by(lambda logits, top_k: (check_logits(logits), check_top_k(top_k)))
def top_k_filter(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """Keep the ``top_k`` largest logits of every row (exactly ``top_k``, ties broken by index); the others
    become ``-inf``."""
    top_k = min(top_k, logits.size(-1))
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(top_k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))


@checked_by(lambda logits, top_p: (check_logits(logits), check_top_p(top_p)))
def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus filter: keep the smallest set of most probable tokens whose probabilities sum to at least
    ``top_p``; the others become ``-inf``. The most probable token is always kept, and ``top_p = 1`` keeps every
    token (even those whose probability is below float32 resolution)."""
    if top_p >= 1.0:
        return logits
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above each one
    keep_sorted = mass_before < top_p
    keep_sorted[:, 0] = True
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))


def check_repetition_penalty(logits: object, previous_ids: object, penalty: object) -> None:
    check_logits(logits)
    previous_ids = check_token_ids(previous_ids, logits.size(-1), name="previous_ids")
    if previous_ids.size(0) != logits.size(0):
        raise CourseValueError(f"previous_ids has {previous_ids.size(0)} rows but logits has {logits.size(0)}; pass "
                               "the ids generated so far for the same rows")
    check_real("repetition_penalty", penalty, 1.0, hint="; 1.0 switches the penalty off")


@checked_by(check_repetition_penalty)
def apply_repetition_penalty(logits: torch.Tensor, previous_ids: torch.Tensor, penalty: float) -> torch.Tensor:
    """Make every token already in ``previous_ids (rows, seq)`` less likely: its logit is divided by ``penalty``
    if positive, multiplied if negative (``penalty = 1`` changes nothing)."""
    seen = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, previous_ids.long(), True)
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalised, logits)


def check_sampling(logits: object, previous_ids: object, temperature: object = 1.0, top_k: object = None,
                   top_p: object = None, repetition_penalty: object = 1.0) -> None:
    """Raise a course error unless the arguments fit :func:`next_token_logits`."""
    check_repetition_penalty(logits, previous_ids, repetition_penalty)
    check_real("temperature", temperature, 0.0, hint="; 0 is greedy, 1 samples from the model's distribution")
    check_top_k(top_k)
    check_top_p(top_p)


@checked_by(check_sampling)
def next_token_logits(logits: torch.Tensor, previous_ids: torch.Tensor, temperature: float = 1.0,
                      top_k: int | None = None, top_p: float | None = None,
                      repetition_penalty: float = 1.0) -> torch.Tensor:
    """The logits :func:`generate` samples from: repetition penalty → temperature → top-k → top-p.

    ``temperature == 0`` returns the penalised logits unchanged (greedy decoding takes their argmax).
    """
    logits = apply_repetition_penalty(logits, previous_ids, repetition_penalty)
    if temperature == 0:
        return logits
    logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None and top_p < 1.0:
        logits = top_p_filter(logits, top_p)
    return logits


def distinct_ngram_ratio(sequences: Sequence[Sequence[int]], n: int = 2) -> float:
    """Distinct ``n``-grams / all ``n``-grams over ``sequences`` (1.0 = no ``n``-gram repeats; low = loops)."""
    sequences = check_id_lists("sequences", sequences)
    check_positive_int("n", n)
    grams = [tuple(seq[i:i + n]) for seq in sequences for i in range(len(seq) - n + 1)]
    if not grams:
        raise CourseValueError(f"no {n}-grams: every sequence is shorter than {n} tokens")
    return len(set(grams)) / len(grams)


def check_sample_perplexity(model: object, ids: object, prompt_len: object, pad_id: object = PAD_ID) -> None:
    """Raise a course error unless the arguments fit :func:`sample_perplexity`: ids of the model's vocabulary (when it
    has a ``config``), a prompt shorter than the rows, a valid ``pad_id``, and a generated token that is not padding."""
    check_module("model", model)
    vocab_size = getattr(getattr(model, "config", None), "vocab_size", None)
    ids = check_token_ids(ids, vocab_size or torch.iinfo(torch.long).max, name="ids")
    check_int("prompt_len", prompt_len, 1)
    if prompt_len >= ids.size(1):
        raise CourseValueError(f"prompt_len={prompt_len} leaves no generated token to score in ids of shape "
                               f"{tuple(ids.shape)}; pass the prompt's length, below the sequence length")
    if vocab_size is None:
        check_non_negative_int("pad_id", pad_id)
    else:
        check_index("pad_id", pad_id, vocab_size, f"the vocabulary (vocab_size={vocab_size})")
    if not bool((ids[:, prompt_len:] != pad_id).any()):
        raise CourseValueError(f"every generated position of ids is padding (pad_id={pad_id}): nothing to score; "
                               "pass the output of generate, whose rows hold the new tokens after the prompt")


@torch.no_grad()
@checked_by(check_sample_perplexity, trusts_callees=False)  # your model checks its own input
def sample_perplexity(model: nn.Module, ids: torch.Tensor, prompt_len: int, pad_id: int = PAD_ID) -> float:
    """Perplexity the model itself (temperature 1, no filter) assigns to the generated part of ``ids (batch, seq)``
    — every position from ``prompt_len`` on that is not padding. Low = the model finds its samples predictable."""
    ids = ids.long()
    was_training = model.training
    model.eval()
    log_probs = torch.log_softmax(model(ids[:, :-1]).float(), dim=-1)
    targets = ids[:, 1:]
    chosen = log_probs.gather(-1, targets[..., None]).squeeze(-1)[:, prompt_len - 1:]
    keep = targets[:, prompt_len - 1:] != pad_id
    model.train(was_training)
    return math.exp(-chosen[keep].mean().item())


def check_generate_arguments(model: object, prompt_ids: object, max_new_tokens: object, temperature: object = 1.0,
                             top_k: object = None, top_p: object = None, repetition_penalty: object = 1.0,
                             generator: object = None, use_cache: object = True, eos_id: object = None,
                             forbidden_ids: object = None) -> None:
    """Raise a course error unless the arguments fit :func:`generate` — all of it before the first step."""
    check_module("model", model, DecoderOnlyLM)
    config = model.config
    prompt_ids = check_token_ids(prompt_ids, config.vocab_size, config.max_len, name="prompt_ids")
    if config.pad_id is not None and bool((prompt_ids == config.pad_id).any()):
        raise CourseValueError(f"prompt_ids contain the padding id {config.pad_id}; generate from prompts of equal "
                               "length without padding (one prompt per call, or prompts cut to the same length)")
    check_positive_int("max_new_tokens", max_new_tokens)
    check_real("temperature", temperature, 0.0, hint="; 0 is greedy, 1 samples from the model's distribution")
    check_top_k(top_k)
    check_top_p(top_p)
    check_real("repetition_penalty", repetition_penalty, 1.0, hint="; 1.0 switches the penalty off")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise CourseTypeError(f"generator must be a torch.Generator, got {describe(generator)}; "
                              "use torch.Generator().manual_seed(0)")
    check_bool("use_cache", use_cache)
    if eos_id is not None:
        check_index("eos_id", eos_id, config.vocab_size, f"the vocabulary (vocab_size={config.vocab_size})")
    if forbidden_ids is not None:
        if isinstance(forbidden_ids, (str, bytes, torch.Tensor)) or not isinstance(forbidden_ids, (list, tuple)):
            raise CourseTypeError(f"forbidden_ids must be a list or tuple of token ids (or None for [PAD] and [BOS]), "
                                  f"got {describe(forbidden_ids)}; pass () to allow every token")
        for index, token in enumerate(forbidden_ids):
            check_index(f"forbidden_ids[{index}]", token, config.vocab_size,
                        f"the vocabulary (vocab_size={config.vocab_size})")
        if len(set(forbidden_ids)) >= config.vocab_size:
            raise CourseValueError(f"forbidden_ids forbid all {config.vocab_size} tokens: nothing could be generated")
    if prompt_ids.size(1) + max_new_tokens > config.max_len:
        raise CourseValueError(f"prompt of {prompt_ids.size(1)} tokens + max_new_tokens={max_new_tokens} exceeds "
                               f"the context max_len={config.max_len}; ask for at most "
                               f"{config.max_len - prompt_ids.size(1)} new tokens")


@torch.no_grad()
@checked_by(check_generate_arguments)
def generate(model: DecoderOnlyLM, prompt_ids: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, repetition_penalty: float = 1.0,
             generator: torch.Generator | None = None, use_cache: bool = True,
             eos_id: int | None = None, forbidden_ids: Sequence[int] | None = None) -> torch.Tensor:
    """Continue ``prompt_ids (batch, prompt_len)`` by up to ``max_new_tokens`` tokens (lesson 08).

    Args:
        temperature: ``0`` = greedy (always the most probable token); otherwise sample from
            ``softmax(logits / temperature)``.
        top_k: sample only among the ``top_k`` most probable tokens. top_p: only from the nucleus (smallest set
            with probability ≥ ``top_p``). repetition_penalty: ``≥ 1``; > 1 discourages tokens already present.
        generator: a seeded ``torch.Generator`` makes sampling reproducible.
        use_cache: feed only the newest token and reuse the cached keys/values (same tokens, less work).
        eos_id: stop a row once it has produced this id; later positions are filled with the model's ``pad_id``
            (with ``eos_id`` itself when the model has no padding token, ``pad_id=None``, as ``transformers`` does).
        forbidden_ids: ids never generated; ``None`` forbids the model's ``pad_id`` and [BOS] — not words, and a
            generated [PAD] would be hidden by the padding mask of a full recomputation but not by the cache. A
            model whose vocabulary is not the course's (GPT-2, Llama) should pass ``()``: id 5 is not its [BOS].

    The logits each token is drawn from: forbidden ids removed → repetition penalty → temperature → top-k → top-p
    (:func:`next_token_logits`).

    Every argument is checked once, before the first step; the steps themselves run unchecked (their inputs are
    the model's own outputs), so validation adds no host synchronisation per generated token.

    Returns:
        ``(batch, prompt_len + steps)``: the prompt followed by the new tokens, ``steps <= max_new_tokens``.
    """
    was_training = model.training
    model.eval()
    ids = prompt_ids.long()
    if forbidden_ids is None:
        forbidden_ids = sorted({model.config.pad_id, BOS_ID} & set(range(model.config.vocab_size)))  # pad_id None: out
    forbidden = torch.tensor(list(forbidden_ids), dtype=torch.long, device=ids.device)
    finished = torch.zeros(ids.size(0), dtype=torch.bool, device=ids.device)
    cache = model.new_cache() if use_cache else None
    # what follows a row's [EOS]: [PAD], or the [EOS] again for a vocabulary without padding (rows end only at eos_id)
    filler = next(i for i in (model.config.pad_id, eos_id, 0) if i is not None)
    step_input = ids
    for _ in range(max_new_tokens):
        logits = model(step_input if use_cache else ids, cache)[:, -1].float()  # (batch, vocab)
        logits = logits.index_fill(-1, forbidden, float("-inf"))
        logits = next_token_logits(logits, ids, temperature, top_k, top_p, repetition_penalty)
        if temperature == 0:
            token = logits.argmax(dim=-1)
        else:
            token = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(1)
        token = token.masked_fill(finished, filler)
        ids = torch.cat([ids, token[:, None]], dim=1)
        step_input = token[:, None]
        if eos_id is not None:
            finished |= token == eos_id
            if finished.all():
                break
    model.train(was_training)
    return ids
