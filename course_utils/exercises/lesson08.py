"""Exercises of notebook 08 (a decoder-only GPT): the causal LM shift, temperature, top-k and top-p filters, and
the capstones: the GPT itself (against DecoderOnlyLM) and sampling with a KV cache (against decoding.generate).

Every check draws fresh inputs (:class:`~.asserts.Draw`) — sizes with no two equal — plus the edge cases (a batch
of one, the shortest sequence, k = vocab, ties, p = 1, logits already -inf, float64 logits) and compares the
learner's function with the package's (:func:`course_utils.losses.shift_for_lm`, :mod:`course_utils.decoding`),
which is the reference: same type, shape, dtype and values, and the caller's tensors left as they were.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import torch
import torch.nn as nn

from .. import decoding, losses
from ..masks import causal_mask, padding_mask
from .asserts import (
    Case,
    Draw,
    attempt,
    backpropagate_both,
    call_learner,
    check_block_dropout,
    check_function,
    check_generator_use,
    check_inputs_kept,
    close,
    compare_gradients,
    difference,
    instantiate,
    learner_function,
    own_function,
    own_module_class,
    randomise_norms,
    shared_parameters,
    show,
    snapshot,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of

NEG_INF = float("-inf")


def ids_listed(mask: torch.Tensor) -> str:
    """The token ids where ``mask`` (one row) is True, for a message."""
    return show(mask.nonzero().flatten().tolist())


# ---------------------------------------------------------------------------- q1: the causal shift
def token_ids(draw: Draw, batch: int, seq: int) -> tuple[torch.Tensor, int]:
    """``(batch, seq)`` long ids, all different, from a vocabulary of random size: its first and last ids and the
    course's special ids 1..6 occur (as many as fit), the rest drawn from the whole range, in random places."""
    vocab = draw.integer(1_000, 60_000)
    n = batch * seq
    special = torch.arange(1, min(7, n - 1))
    middle = torch.randperm(vocab - 8, generator=draw.generator())[:n - 2 - len(special)] + 7
    ids = torch.cat([torch.tensor([0, vocab - 1]), special, middle])
    return ids[torch.randperm(n, generator=draw.generator())].view(batch, seq), vocab


def shift_cases(draw: Draw) -> list[Case]:
    batch, seq = draw.integer(2, 5), draw.integer(6, 12)
    cases = []
    for b, s in ((1, 2), (batch, 2), (1, seq), (batch, seq)):
        ids, vocab = token_ids(draw, b, s)
        cases.append(Case(f"ids of batch {b}, seq {s} (ids 0..{vocab - 1})", (ids,)))
    return cases


def check_shift_for_lm(ns) -> None:
    draw = Draw()
    cases = shift_cases(draw)
    check_function(learner_function(ns, "shift_for_lm"), losses.shift_for_lm, cases, "shift_for_lm", probes=cases,
                   forbidden={"the package's course_utils.losses.shift_for_lm": losses.shift_for_lm},
                   twins=shift_cases(draw.twin()))


def pair(got) -> bool:
    return isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)


SHIFT = losses.shift_for_lm
SHIFT_MISTAKES = (
    Mistake("not a pair", "`shift_for_lm` should return a pair (inputs, targets)", variant=lambda ids: ids[:, :-1],
            shows=lambda case, got, _: not (isinstance(got, (tuple, list)) and len(got) == 2)),
    Mistake("no shift", "no shift: with targets equal to the inputs, position t is asked for the token it already "
            "reads — the model learns to copy and predicts nothing. The inputs drop the last token, the targets the "
            "first", variant=lambda ids: (ids.clone(), ids.clone())),
    Mistake("wrong direction", "shifted the wrong way: that asks for the *previous* token. The inputs start with "
            "[BOS] (drop the last token); the targets are the next tokens (drop the first)",
            variant=lambda ids: SHIFT(ids)[::-1]),
    Mistake("batch axis", "you sliced the batch axis (dim 0); slice the sequence axis (dim 1)",
            variant=lambda ids: (ids[:-1], ids[1:]), shows=lambda case, got, _: pair(got) and got[0].dim() == 2
            and got[0].size(0) != case.args[0].size(0)),
    Mistake("squeeze drops a batch of one", "keep both axes (batch, seq - 1) — e.g. no .squeeze(), which drops the "
            "batch axis of a batch of one", variant=lambda ids: tuple(t.squeeze() for t in SHIFT(ids)),
            shows=lambda case, got, _: pair(got) and (got[0].dim() != 2 or got[1].dim() != 2)),
    Mistake("targets not shifted", "the targets are not shifted: target t must be the token *after* input t (drop the "
            "first token)", variant=lambda ids: (ids[:, :-1], ids[:, :-1])),
    Mistake("inputs shifted too", "the inputs are shifted too: the inputs keep [BOS] and drop the last token",
            variant=lambda ids: (ids[:, 1:], ids[:, 1:])),
    Mistake("shifted by two", "both should have shape (batch, seq - 1): shift by exactly one position, whatever the "
            "sequence length", variant=lambda ids: (ids[:, :-2], ids[:, 2:]),
            shows=lambda case, got, _: pair(got) and any(t.shape != (case.args[0].size(0), case.args[0].size(1) - 1)
                                                         for t in got)),
)


# ---------------------------------------------------------------------------- q2: temperature
def temperature_reference(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    return torch.softmax(decoding.apply_temperature(logits, temperature), dim=-1)


def temperature_cases(draw: Draw) -> list[Case]:
    small, rows, vocab = draw.integer(5, 9), draw.integer(2, 4), draw.integer(11, 30)
    low, high = draw.choice((0.25, 0.4, 0.5, 0.6, 0.75)), draw.choice((1.5, 2.5, 3.0, 4.0))
    other = draw.choice((0.3, 0.7, 1.5, 2.5))
    return [
        Case(f"1 row of {small} logits, temperature {low}", (draw.randn(1, small, scale=2.0), low)),
        Case(f"{rows} rows of {vocab} logits, temperature {high}", (draw.randn(rows, vocab, scale=2.0), high)),
        Case(f"{rows} rows of {vocab} logits, temperature 2 (an int)", (draw.randn(rows, vocab, scale=2.0), 2)),
        Case(f"{rows} rows of {vocab} float64 logits, temperature {other}",
             (draw.randn(rows, vocab, scale=2.0).double(), other)),
    ]


def check_temperature_probs(ns) -> None:
    draw = Draw()
    cases = temperature_cases(draw)
    check_function(learner_function(ns, "temperature_probs"), temperature_reference, cases, "temperature_probs",
                   forbidden={"the package's course_utils.decoding.apply_temperature": decoding.apply_temperature},
                   twins=temperature_cases(draw.twin()), probes=cases)


def rows_sum_to_one(got) -> bool:
    return isinstance(got, torch.Tensor) and got.is_floating_point() and bool(torch.allclose(
        got.detach().double().sum(-1), torch.ones(got.shape[:-1], dtype=torch.float64), atol=1e-4))


TEMPERATURE_MISTAKES = (
    Mistake("multiplied", "you multiplied the logits by the temperature: divide them, so a temperature below 1 "
            "sharpens the distribution and above 1 flattens it",
            variant=lambda logits, t: temperature_reference(logits, 1 / t)),
    Mistake("power without renormalising", "the probabilities do not sum to 1: raising probabilities to a power needs "
            "a renormalisation — simpler, divide the *logits* and take the softmax",
            variant=lambda logits, t: temperature_reference(logits, 1) ** (1 / t)),
    Mistake("wrong axis", "softmax over the wrong axis: each row (one position) is a distribution over the "
            "vocabulary, so normalise over the last axis (dim=-1)",
            variant=lambda logits, t: temperature_reference(logits.T, t).T),
    Mistake("logits returned", "return probabilities, not scaled logits: apply the softmax over the vocabulary",
            variant=lambda logits, t: decoding.apply_temperature(logits, t)),
    Mistake("log-probabilities", "these are log-probabilities (log_softmax): return the probabilities themselves",
            variant=lambda logits, t: temperature_reference(logits, t).log()),
    Mistake("temperature ignored", "the temperature changed nothing: divide the logits by it before the softmax",
            variant=lambda logits, t: temperature_reference(logits, 1)),
    Mistake("probabilities divided", "you divided the probabilities, after the softmax: divide the logits, before it",
            variant=lambda logits, t: temperature_reference(logits, 1) / t),
    Mistake("rows do not sum to 1", "each row should sum to 1 (a distribution over the vocabulary)",
            variant=lambda logits, t: temperature_reference(logits, t) * 2,
            shows=lambda case, got, _: isinstance(got, torch.Tensor) and got.shape == case.args[0].shape
            and not rows_sum_to_one(got)),
)


# ---------------------------------------------------------------------------- q3 and q4: the filters
def logits_with_forbidden(draw: Draw, rows: int, vocab: int, n_forbidden: int) -> torch.Tensor:
    """``(rows, vocab)`` logits whose ``n_forbidden`` random tokens are already ``-inf`` (e.g. [PAD] and [BOS])."""
    logits = draw.randn(rows, vocab, scale=2.0)
    forbidden = torch.randperm(vocab, generator=draw.generator())[:n_forbidden]
    logits[:, forbidden] = NEG_INF
    return logits


def tie_tolerant_top_k(logits: torch.Tensor, k: int, kept: torch.Tensor) -> bool:
    """Whether ``kept`` (one row) is a right top-k set when ties sit at the k-th largest logit: every logit above
    the k-th largest kept, none below it, and either exactly k kept or every tied one (both conventions exist)."""
    k = min(k, logits.numel())
    kth = logits.sort(descending=True).values[k - 1]
    above, at_least = logits > kth, logits >= kth
    if (above & ~kept).any() or (kept & ~at_least).any():
        return False
    return int(kept.sum()) == k or bool(torch.equal(kept, at_least))


class KeptSet(str):
    """A filter's problem that lies in which tokens it kept (the table of mistakes may name it)."""


def filter_problem(got, expected: torch.Tensor, logits: torch.Tensor, name: str, setting: str,
                   tie_rule=None) -> str | None:
    """What is wrong with a filter's result (``None`` if nothing): filtered logits, removed tokens ``-inf``, the
    package's kept set (``tie_rule(row, kept)`` may accept another set; a wrong set comes back as :class:`KeptSet`),
    the kept logits unchanged."""
    gap = difference(got, expected, f"the result of `{name}`")
    if gap is None:
        return None
    mask = (f"`{name}` should return the filtered *logits* (removed tokens set to float('-inf')), not a 0/1 or "
            "bool mask")
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and got.dtype == torch.bool:
        return mask
    if not (isinstance(got, torch.Tensor) and got.shape == expected.shape and got.dtype == expected.dtype
            and got.device == expected.device):
        return gap
    got = got.detach()
    if torch.isnan(got).any():
        return f"`{name}` returned NaN; set the removed logits to float('-inf')"
    finite = torch.isfinite(expected)
    if close(got, torch.softmax(expected.double(), dim=-1).to(got.dtype)):
        return (f"with {setting} you returned probabilities: return the filtered logits themselves (the sampler "
                "takes the softmax later)")
    if bool(((got == 0) | (got == 1)).all()):
        return mask
    finite_fill = ~finite & torch.isfinite(got) & torch.isfinite(logits) & (got != logits)
    if finite_fill.any():
        values = sorted({float(v) for v in got[finite_fill].tolist()})
        value = f"{values[0]:.6g}" if len(values) == 1 else "finite values"
        return (f"with {setting} the removed tokens got {value}, not float('-inf'): a finite logit keeps a "
                "probability above zero (or depends on rounding to reach it). Set them to float('-inf')")
    wrong_fill = ~torch.isfinite(got) & (got != NEG_INF)
    if wrong_fill.any():
        return (f"with {setting} some removed tokens got {show(float(got[wrong_fill][0]))}: a removed token's logit "
                "is float('-inf'), so its probability is exactly 0")
    kept = torch.isfinite(got)
    for row in range(got.size(0)):
        if torch.equal(kept[row], finite[row]) or (tie_rule is not None and tie_rule(row, kept[row])):
            continue
        return KeptSet(f"with {setting}, row {row} should keep tokens {ids_listed(finite[row])}, yours keeps "
                       f"{ids_listed(kept[row])}")
    unchanged = torch.where(kept, got, 0.0), torch.where(kept, logits.to(got.dtype), 0.0)
    if not close(*unchanged):
        return (f"with {setting} the kept tokens are right but their logits changed (by up to "
                f"{float((unchanged[0] - unchanged[1]).abs().max()):.3g}): leave them as they are — only the "
                "removed ones become -inf — so their relative probabilities stay the same")
    return None  # another right set where logits tie at the threshold


def tie_tolerance(tie_rule, logits: torch.Tensor, setting, row: int, kept: torch.Tensor) -> bool:
    """``tie_rule`` applied to one row of ``logits``."""
    return tie_rule(logits[row], setting, kept)


def check_filter(function, reference, cases: list[Case], name: str, argument: str, forbidden: dict,
                 tie_rule=None) -> None:
    """The learner's filter against the package's ``reference`` on every case (``case.args = (logits, setting)``);
    a wrong kept set raises :class:`~.core.Mismatch` (the answer's kept set, ``torch.isfinite`` of its output)."""
    def kept(answer, case):
        out = attempt(answer, name, snapshot(case.args), {}, forbidden)
        return torch.isfinite(out) if isinstance(out, torch.Tensor) else out

    for case in cases:
        logits, setting = case.args
        expected = reference(logits.clone(), setting)
        args = snapshot(case.args)
        before = {"logits": snapshot(args[0]), argument: args[1]}
        got = call_learner(function, name, case.description, *args, forbidden=forbidden)
        check_inputs_kept(before, {"logits": args[0], argument: args[1]}, name, case.description)
        problem = filter_problem(got, expected, logits, name, f"{argument}={setting}",
                                 tie_rule=partial(tie_tolerance, tie_rule, logits, setting) if tie_rule else None)
        if isinstance(problem, KeptSet):
            raise Mismatch(f"on {case.description}: {problem}.", case, torch.isfinite(got.detach()), function, kept,
                           lambda a, b: isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                           and a.shape == b.shape and bool(torch.equal(a, b)), probes=tuple(cases))
        if problem:
            raise ExerciseFailure(f"on {case.description}: {problem}.")


def keep_only(logits: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~keep, NEG_INF)


def top_k_cases(draw: Draw) -> list[Case]:
    small, rows, vocab = draw.integer(5, 9), draw.integer(2, 4), draw.integer(12, 30)
    k = draw.choice([n for n in range(2, vocab - 1) if n not in (rows, small)])
    tie_vocab = draw.integer(10, 16)
    tie_k = draw.choice([n for n in range(2, tie_vocab - 2) if n != rows])
    n_forbidden = draw.integer(2, 4)
    forbidden_k = draw.choice([n for n in range(2, vocab - n_forbidden) if n != rows])
    ties = draw.randint(-3, 4, (rows + 1, tie_vocab)).float()  # whole numbers: many logits equal
    return [
        Case(f"1 row of {small} logits, k=1", (draw.randn(1, small, scale=2.0), 1)),
        Case(f"{rows} rows of {vocab} logits, k={k}", (draw.randn(rows, vocab, scale=2.0), k)),
        Case(f"{rows} rows of {vocab} logits, k={vocab} = vocab (every token stays)",
             (draw.randn(rows, vocab, scale=2.0), vocab)),
        Case(f"{rows + 1} rows of {tie_vocab} whole-number logits (ties at the k-th largest), k={tie_k}",
             (ties, tie_k)),
        Case(f"{rows} rows of {vocab} logits, {n_forbidden} tokens already -inf (forbidden ids), k={forbidden_k}",
             (logits_with_forbidden(draw, rows, vocab, n_forbidden), forbidden_k)),
        Case(f"{rows} rows of {vocab} float64 logits, k={k}", (draw.randn(rows, vocab, scale=2.0).double(), k)),
    ]


def check_top_k_filter(ns) -> None:
    check_filter(learner_function(ns, "top_k_filter"), decoding.top_k_filter, top_k_cases(Draw()), "top_k_filter",
                 "k", {"the package's course_utils.decoding.top_k_filter": decoding.top_k_filter},
                 tie_rule=tie_tolerant_top_k)


def top(logits: torch.Tensor, k: int) -> torch.Tensor:
    return torch.isfinite(decoding.top_k_filter(logits, k))


def kth_largest(logits: torch.Tensor, k: int) -> torch.Tensor:
    return logits.sort(dim=-1, descending=True).values[:, k - 1:k]


TOP_K_MISTAKES = (
    Mistake("removed the top k", "you removed the k most probable tokens and kept the rest: keep the k *largest* "
            "logits, remove the others", variant=lambda logits, k: keep_only(logits, ~top(logits, k))),
    Mistake("k smallest kept", "you kept the k *smallest* logits: rank in descending order (largest first)",
            variant=lambda logits, k: keep_only(logits, top(torch.where(torch.isfinite(logits), -logits, NEG_INF), k)
                                                & torch.isfinite(logits))),
    Mistake("wrong axis", "ranked along the wrong axis: every row is one position's distribution over the vocabulary, "
            "so rank each row over dim=-1", variant=lambda logits, k: keep_only(logits, top(logits.T.contiguous(),
                                                                                           k).T)),
    Mistake("off by one (strictly greater)", "you kept only the logits *above* the k-th largest: keep k of them — "
            "every logit greater than or *equal to* the k-th largest",
            variant=lambda logits, k: keep_only(logits, logits > kth_largest(logits, k)),
            shows=lambda case, got, _: bool((got.sum(-1) < case.args[1]).all()) and not (
                got & ~top(*case.args)).any()),
    Mistake("hard-coded k", "you kept the same number of largest logits in every row, not k: use the k you are given, "
            "not a fixed number", variant=lambda logits, k: decoding.top_k_filter(logits, min(3, logits.size(-1))),
            shows=lambda case, got, _: bool((got.sum(-1) == got.sum(-1)[0]).all()) and int(got.sum(-1)[0]) not in (
                0, case.args[1]) and torch.equal(got, top(case.args[0], int(got.sum(-1)[0])))),
)


def far_from_boundaries(logits: torch.Tensor, p: float, margin: float = 2e-3) -> bool:
    """Whether ``p`` is at least ``margin`` away from every row's cumulative sorted probabilities, so that every
    correct way of computing the nucleus (float32 or float64, any sort) keeps the same tokens."""
    sums = torch.softmax(logits.double(), dim=-1).sort(dim=-1, descending=True).values.cumsum(dim=-1)
    return bool(((sums - p).abs() > margin).all())


def nucleus_p(draw: Draw, logits: torch.Tensor, low: float, high: float) -> float:
    """A ``p`` in ``[low, high]`` (two decimals) far from the boundaries of ``logits``."""
    options = [round(low + i * 0.01, 2) for i in range(int(round((high - low) / 0.01)) + 1)]
    draw.rng.shuffle(options)
    return next((p for p in options if far_from_boundaries(logits, p)), options[0])


def top_p_cases(draw: Draw) -> list[Case]:
    small, rows, vocab = draw.integer(5, 9), draw.integer(2, 4), draw.integer(12, 30)
    single = draw.randn(1, small, scale=2.0)
    largest = float(torch.softmax(single, dim=-1).max())
    below = nucleus_p(draw, single, 0.01, max(0.01, round(largest - 0.02, 2)))
    plain = draw.randn(rows, vocab, scale=2.0)
    spreads = draw.randn(rows + 1, vocab) * torch.tensor([0.3, 1.0, 3.0, 6.0, 2.0][:rows + 1])[:, None]
    n_forbidden = draw.integer(2, 4)
    forbidden = logits_with_forbidden(draw, rows, vocab, n_forbidden)
    wide = draw.randn(rows, vocab, scale=2.0).double()
    p_plain, p_spreads = nucleus_p(draw, plain, 0.5, 0.9), nucleus_p(draw, spreads, 0.3, 0.95)
    p_forbidden, p_wide = nucleus_p(draw, forbidden, 0.4, 0.9), nucleus_p(draw, wide, 0.4, 0.9)
    return [
        Case(f"1 row of {small} logits, p={below} (below its largest probability {largest:.3f}: only the most "
             "probable token stays)", (single, below)),
        Case(f"{rows} rows of {vocab} logits, p={p_plain}", (plain, p_plain)),
        Case(f"{rows} rows of {vocab} logits, p=1.0 (every token stays)", (draw.randn(rows, vocab), 1.0)),
        Case(f"{rows + 1} rows of {vocab} logits from peaked to flat, p={p_spreads}", (spreads, p_spreads)),
        Case(f"{rows} rows of {vocab} logits, {n_forbidden} tokens already -inf (forbidden ids), p={p_forbidden}",
             (forbidden, p_forbidden)),
        Case(f"{rows} rows of {vocab} float64 logits, p={p_wide}", (wide, p_wide)),
        exact_mass_case(draw, 0.75), exact_mass_case(draw, 0.5),
    ]


def exact_mass_case(draw: Draw, p: float) -> Case:
    """Probabilities 1/2, 1/4, 1/8, 1/16, 1/16 (exact in float32), in a random order among forbidden ids, and a ``p``
    that the most probable tokens reach *exactly*: they are the nucleus, the next token is not (a rule that stops only
    once the mass *exceeds* p keeps one token too many)."""
    vocab = draw.integer(7, 11)
    logits = torch.full((2, vocab), NEG_INF)
    for row in range(2):
        columns = torch.randperm(vocab, generator=draw.generator())[:5]
        logits[row, columns] = torch.tensor([-1.0, -2.0, -3.0, -4.0, -4.0]) * math.log(2)
    return Case(f"2 rows of {vocab} logits with probabilities 1/2, 1/4, 1/8, 1/16, 1/16 (the rest forbidden), p={p} — "
                "the most probable tokens reach p exactly", (logits, p))


def reaching(logits: torch.Tensor, p: float) -> torch.Tensor:
    """The kept set of a nucleus that stops only once the mass before a token *exceeds* p (in the logits' dtype)."""
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    return torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, probs.cumsum(dim=-1) - probs <= p)


def nucleus_rules(logits: torch.Tensor, p: float) -> dict[str, torch.Tensor]:
    """The kept sets of typical wrong nucleus rules, for the diagnosis."""
    probs = torch.softmax(logits.double(), dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs
    keep_sorted = before < p
    unsorted_before = probs.cumsum(dim=-1) - probs
    ascending, up = probs.sort(dim=-1)
    finite = torch.isfinite(logits)
    return {
        "reaching": reaching(logits, p) & finite,
        "including": torch.zeros_like(finite).scatter(-1, order, sorted_probs.cumsum(dim=-1) <= p) & finite,
        "unsorted": (unsorted_before < p) & finite,
        "not mapped back": keep_sorted & finite,
        "gathered": keep_sorted.gather(-1, order) & finite,
        "ascending": torch.zeros_like(finite).scatter(-1, up, ascending.cumsum(dim=-1) - ascending < p) & finite,
    }


def check_top_p_filter(ns) -> None:
    check_filter(learner_function(ns, "top_p_filter"), decoding.top_p_filter, top_p_cases(Draw()), "top_p_filter",
                 "p", {"the package's course_utils.decoding.top_p_filter": decoding.top_p_filter})


def rule(name: str):
    """A top-p variant that keeps the tokens of the wrong nucleus rule ``name`` (see :func:`nucleus_rules`)."""
    return lambda logits, p: keep_only(logits, nucleus_rules(logits, p)[name])


TOP_P_MISTAKES = (
    Mistake("p=1.0 keeps every token", "p=1.0 must keep every token (the whole distribution): with float rounding the "
            "mass before the last tokens can reach 1, so keep a token while the mass before it is below p",
            variant=lambda logits, p: decoding.top_p_filter(logits, p) if p < 1 else keep_only(
                logits, top(logits, int(torch.isfinite(logits).sum(-1).min()) - 1)),
            shows=lambda case, got, _: case.args[1] >= 1.0),
    Mistake("stops once the mass exceeds p instead of reaching it", "the tokens above already reach p exactly, yet "
            "you keep one more: keep a token while the mass *before* it is below p (<, not <=) — the nucleus is the "
            "smallest set that reaches p", variant=rule("reaching")),
    Mistake("cumulative mass including the token", "you kept only the tokens whose cumulative probability *including "
            "themselves* stays <= p, so the set can fall short of p (or be empty): keep a token while the mass "
            "*before* it is below p; the most probable token always stays", variant=rule("including"),
            shows=lambda case, got, _: bool((~got.any(-1)).any()) or torch.equal(
                got, nucleus_rules(*case.args)["including"])),
    Mistake("not sorted", "the cumulative sum must run over the tokens sorted from most to least probable, then the "
            "decision goes back to the original token ids; yours runs in vocabulary order", variant=rule("unsorted")),
    Mistake("sorted decision not mapped back", "your keep/remove decision is in *sorted* order but was applied to the "
            "logits in vocabulary order: map the decision back to the original token ids (scatter it with the "
            "sort's indices)", variant=rule("not mapped back")),
    Mistake("gathered instead of scattered", "the decision went back with the wrong permutation: gather with the "
            "sort's indices applies the inverse; scatter the sorted decision to the positions the sort's indices "
            "name", variant=rule("gathered")),
    Mistake("sorted ascending", "you accumulated from the *least* probable token: sort in descending order, so the "
            "nucleus holds the most probable tokens", variant=rule("ascending")),
)


q1 = Exercise(
    name="The causal LM shift",
    variables=("shift_for_lm",),
    checker=check_shift_for_lm,
    hints=("The model reads [BOS] w1 w2 … and must predict w1 w2 … [EOS]: which token does each copy of the batch "
           "lose, and along which axis?",
           "inputs: every row without its last token; targets: every row without its first token. Slice the "
           "sequence axis (dim 1), never the batch axis, so a batch of one keeps its shape (batch, seq - 1); "
           "return the two as a pair (inputs, targets)."),
    solution=solution_of("lesson08", "shift_for_lm"),
    mistakes=SHIFT_MISTAKES,
)

q2 = Exercise(
    name="Temperature",
    variables=("temperature_probs",),
    checker=check_temperature_probs,
    hints=("The temperature rescales the logits *before* they become probabilities; which axis holds one "
           "distribution?",
           "1. scaled = the logits divided by the temperature (a new tensor: the caller's logits stay as they "
           "are); 2. the softmax of scaled over the last axis, the vocabulary; 3. return it — (rows, vocab), the "
           "logits' dtype, every row summing to 1."),
    solution=solution_of("lesson08", "temperature_probs"),
    mistakes=TEMPERATURE_MISTAKES,
    success="Correct! Below 1 the distribution sharpens, above 1 it flattens.",
)

q3 = Exercise(
    name="Top-k filtering",
    variables=("top_k_filter",),
    checker=check_top_k_filter,
    hints=("Each row needs one threshold: its k-th largest logit. What happens to everything below it?",
           "1. per row, the k largest logits (topk over the last axis); the smallest of them is the threshold; "
           "2. the tokens below the threshold are removed; 3. return a *new* tensor where the removed entries are "
           "float('-inf') and the kept ones keep their logit (an out-of-place fill, not an in-place one that "
           "changes the caller's logits). k may equal the vocabulary size: then every token stays."),
    solution=solution_of("lesson08", "top_k_filter"),
    mistakes=TOP_K_MISTAKES,
    success="Correct! Only the k most probable tokens can still be sampled.",
)

q4 = Exercise(
    name="Top-p (nucleus) filtering",
    variables=("top_p_filter",),
    checker=check_top_p_filter,
    hints=("Walk the tokens from the most to the least probable and add up their probabilities: when do you stop? "
           "Remember that the tokens were reordered on the way.",
           "1. probabilities = softmax over the vocabulary; 2. sort them in descending order, keeping the sort's "
           "indices; 3. for each sorted token, the mass *before* it = cumulative sum minus its own probability; "
           "keep it while that mass is below p (so the most probable token always stays, and p = 1 keeps all); "
           "4. scatter the keep decision back to the original token ids with the indices; 5. return a new tensor "
           "with the removed logits float('-inf'), the kept ones unchanged."),
    solution=solution_of("lesson08", "top_p_filter"),
    mistakes=TOP_P_MISTAKES,
    success="Correct! The nucleus grows where the model is unsure and shrinks where it is confident.",
)


# ---------------------------------------------------------------------------- q5 (capstone): the GPT itself
GPT_SIGNATURE = "(config)"
GPT_LAYOUT = ("embedding.tokens.lookup (nn.Embedding(vocab_size, d_model, padding_idx=pad_id)), "
              "embedding.positions.table (nn.Embedding(max_len, d_model)), blocks (an nn.ModuleList of n_layers "
              "separate Pre-LN blocks, each with self_attn.w_q/w_k/w_v/w_o, feed_forward.linear1/linear2, "
              "attn_block.norm and ff_block.norm), norm (the final nn.LayerNorm(d_model)) and lm_head "
              "(nn.Linear(d_model, vocab_size, bias=False), its weight tied to embedding.tokens.lookup.weight)")
TIED = ("embedding.tokens.lookup.weight", "lm_head.weight")


def gpt_forbidden() -> dict:
    """What the learner's GPT must not call, however it is reached: the package's model, its block and its input
    embedding (the assembly is the exercise), and torch's ready-made stacks."""
    from ..language_model import DecoderOnlyBlock, DecoderOnlyLM
    from ..models import InputEmbedding, make_input_embedding

    return {"the package's course_utils.language_model.DecoderOnlyLM": DecoderOnlyLM,
            "the package's course_utils.language_model.DecoderOnlyBlock": DecoderOnlyBlock,
            "the package's course_utils.models.InputEmbedding": InputEmbedding,
            "the package's course_utils.models.make_input_embedding": make_input_embedding,
            "torch.nn.TransformerEncoderLayer": torch.nn.TransformerEncoderLayer,
            "torch.nn.TransformerEncoder": torch.nn.TransformerEncoder,
            "torch.nn.TransformerDecoderLayer": torch.nn.TransformerDecoderLayer,
            "torch.nn.TransformerDecoder": torch.nn.TransformerDecoder}


@dataclass
class GPTCase:
    """One input of the GPT check: the config both models are built from, the ids, and how to say it."""

    description: str
    config: Any
    ids: torch.Tensor
    padded: bool


def gpt_config(draw: Draw, n_layers: int, max_len: int, dropout: float, avoid: tuple[int, ...] = ()):
    """A lesson-08 config (Pre-LN, learned positions, tied head) of random sizes: heads, d_head, d_ff, vocab and
    max_len all different, and a pad_id other than the course's 0."""
    from ..config import TransformerConfig

    heads, d_head = draw.distinct(2, 2, 6, avoid=avoid)
    d_model = heads * d_head
    d_ff = draw.choice([n for n in range(d_model + 1, 3 * d_model + 3)
                        if n not in (heads, d_head, max_len, 4 * d_model) + avoid])
    vocab = draw.choice([n for n in range(20, 61) if n not in (d_model, d_ff, max_len) + avoid])
    pad_id = draw.integer(1, vocab - 1)
    return TransformerConfig(vocab_size=vocab, d_model=d_model, n_heads=heads, d_ff=d_ff, n_layers=n_layers,
                             max_len=max_len, dropout=dropout, norm="pre", positional="learned", pad_id=pad_id)


def real_ids(draw: Draw, config, batch: int, seq: int) -> torch.Tensor:
    """``(batch, seq)`` ids of real tokens (never pad_id) spanning the vocabulary: 0 (the course's usual pad id,
    an ordinary token here) and vocab - 1 occur where they fit."""
    pool = torch.tensor([i for i in range(config.vocab_size) if i != config.pad_id])
    ids = pool[torch.randint(len(pool), (batch, seq), generator=draw.generator())]
    flat = ids.view(-1)
    for position, token in zip(torch.randperm(flat.numel(), generator=draw.generator()).tolist(),
                               [t for t in (0, config.vocab_size - 1) if t != config.pad_id]):
        flat[position] = token
    return ids


def gpt_cases(draw: Draw, dropout: float) -> list[GPTCase]:
    """From the smallest input to the largest: one token in a batch of one; a batch of one filling the whole
    context (seq == max_len); batches with right padding in some rows only, with 2 and 3 blocks."""
    def label(config, batch, seq, extra):
        return (f"{config.n_layers} block{'s' if config.n_layers > 1 else ''}, vocab {config.vocab_size}, d_model "
                f"{config.d_model}, {config.n_heads} heads, d_ff {config.d_ff}, max_len {config.max_len}, pad_id "
                f"{config.pad_id}; ids of batch {batch}, seq {seq}{extra}")

    cases = []
    config = gpt_config(draw, 1, draw.integer(5, 9), dropout)
    cases.append(GPTCase(label(config, 1, 1, " (one token)"), config, real_ids(draw, config, 1, 1), False))

    max_len = draw.integer(4, 8)
    config = gpt_config(draw, 2, max_len, dropout)
    cases.append(GPTCase(label(config, 1, max_len, " (seq == max_len: the whole context), no padding"), config,
                         real_ids(draw, config, 1, max_len), False))

    for n_layers in (2, 3):
        batch, seq = draw.distinct(2, 2, 4) if n_layers == 2 else draw.distinct(2, 3, 7)
        config = gpt_config(draw, n_layers, seq + draw.integer(1, 4), dropout, avoid=(batch, seq))
        ids = real_ids(draw, config, batch, seq)
        lengths = [seq] + [draw.integer(1, seq - 1) for _ in range(batch - 1)]
        draw.rng.shuffle(lengths)
        for row, length in enumerate(lengths):
            ids[row, length:] = config.pad_id
        padded = [str(row) for row, length in enumerate(lengths) if length < seq]
        cases.append(GPTCase(label(config, batch, seq, f", right padding (pad_id {config.pad_id}) in row"
                                                       f"{'s' if len(padded) > 1 else ''} {', '.join(padded)} "
                                                       "only"), config, ids, True))
    config = gpt_config(draw, draw.integer(11, 12), draw.integer(3, 5), dropout)  # block "10" sorts before "2"
    cases.append(GPTCase(label(config, 2, config.max_len, " (more than 10 blocks: their order shows)"), config,
                         real_ids(draw, config, 2, config.max_len), False))
    return cases


def copy_gpt_weights(package: nn.Module, learner: nn.Module) -> None:
    """The package's parameters into the learner's GPT, by name (buffers stay the learner's); the output layer must
    be tied to the token embedding, as in the package's model."""
    expected = dict(package.named_parameters(remove_duplicate=False))
    got = dict(learner.named_parameters(remove_duplicate=False))
    missing = [key for key in expected if key not in got]
    extra = [key for key in got if key not in expected]
    if missing:
        shapes = ", ".join(f"`{key}` {tuple(expected[key].shape)}" for key in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        found = ", ".join(f"`{key}`" for key in list(got)[:6]) or "none"
        raise ExerciseFailure(f"your `GPT` has no parameter {shapes}{more} (its first ones: {found}). The checker "
                              "loads the package's DecoderOnlyLM weights into yours by name, so use the package's "
                              f"attribute names: {GPT_LAYOUT}.")
    if extra:
        shapes = ", ".join(f"`{key}` {tuple(got[key].shape)}" for key in extra[:5])
        hint = (" An output layer has no bias here (bias=False)." if any(k.startswith("lm_head") for k in extra)
                else " A Pre-LN block has exactly one LayerNorm per sublayer; the final norm comes once, after "
                     "the last block." if any("norm" in k for k in extra) else "")
        raise ExerciseFailure(f"your `GPT` has parameters the package's DecoderOnlyLM does not: {shapes}.{hint} "
                              f"Expected exactly: {GPT_LAYOUT}.")
    for key, value in expected.items():
        if tuple(got[key].shape) != tuple(value.shape):
            raise ExerciseFailure(f"your `GPT.{key}` has shape {tuple(got[key].shape)}, the package's "
                                  f"{tuple(value.shape)}: {GPT_LAYOUT}. (nn.Linear(in, out).weight is stored as "
                                  "(out, in).)")
        if got[key].dtype != value.dtype:
            raise ExerciseFailure(f"your `GPT.{key}` is {got[key].dtype}, the package's {value.dtype}: create "
                                  "parameters in the default float32.")
    if got[TIED[1]] is not got[TIED[0]]:
        raise ExerciseFailure("your output layer is not tied to the token embedding: the package's GPT uses one "
                              "matrix for both (tie_weights=True), so set self.lm_head.weight = "
                              "self.embedding.tokens.lookup.weight after building both.")
    shared = [pair for pair in shared_parameters(learner) if set(pair) != set(TIED)]
    if shared:
        first, second = shared[0]
        raise ExerciseFailure(f"in your `GPT`, `{first}` and `{second}` are one and the same parameter: a module "
                              "was reused where a new one was meant (e.g. [block] * n_layers, or one LayerNorm for "
                              "two places). Create a separate module for each block and each norm.")
    with torch.no_grad():
        for key, value in expected.items():
            got[key].copy_(value)


def paired_gpts(config, learner_class, where: str, seed: int):
    """``(package, learner)``: the package's DecoderOnlyLM (seeded; norms and positions randomised so a missing or
    misplaced one shows) and the learner's GPT built from the same config, carrying the package's weights."""
    from ..language_model import DecoderOnlyLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        package = DecoderOnlyLM(config)
        generator = torch.Generator().manual_seed(seed + 1)
        randomise_norms(package, generator)
        with torch.no_grad():
            package.embedding.positions.table.weight.normal_(0.0, 0.7, generator=generator)
        learner = call_learner(lambda: instantiate(learner_class, "GPT", GPT_SIGNATURE, config), "GPT", where,
                               forbidden=gpt_forbidden())
    if not isinstance(learner, nn.Module):
        raise ExerciseFailure(f"`GPT(config)` should build an nn.Module, got {type(learner).__name__}.")
    copy_gpt_weights(package, learner)
    return package, learner


def run_block(block: nn.Module, x: torch.Tensor, mask, wiring: str) -> torch.Tensor:
    """One block of the package's model (eval mode), wired Pre-LN (``"pre"``) or Post-LN (``"post"``)."""
    def attention(h):
        return block.self_attn(h, h, h, mask)[0]
    for sublayer, norm in ((attention, block.attn_block.norm), (block.feed_forward, block.ff_block.norm)):
        x = x + sublayer(norm(x)) if wiring == "pre" else norm(x + sublayer(x))
    return x


def gpt_variant(model: nn.Module, ids: torch.Tensor, *, scale: bool = True, positions: str = "from 0",
                causal: bool = True, padding: str = "pad_id", final_norm: str = "end", wiring: str = "pre",
                chain: bool = True, output: str = "logits") -> torch.Tensor | None:
    """The package GPT's weights (eval mode) assembled right or with one typical bug; ``None`` where the variant
    does not apply to this input."""
    config = model.config
    seq = ids.size(1)
    tokens = model.embedding.tokens.lookup(ids)
    table = model.embedding.positions.table.weight
    root = math.sqrt(config.d_model)
    if positions == "scaled":
        x = (tokens + table[:seq]) * root
    else:
        x = tokens * root if scale else tokens
        if positions == "from 0":
            x = x + table[:seq]
        elif positions == "from 1":
            if seq + 1 > config.max_len:
                return None
            x = x + table[1:seq + 1]
    mask = causal_mask(seq) if causal else None
    pad = {"pad_id": config.pad_id, "zero": 0, "none": None}[padding]
    if pad is not None:
        keys = padding_mask(ids, pad)
        mask = keys if mask is None else mask & keys
    first = x
    for block in model.blocks:
        x = run_block(block, x if chain else first, mask, wiring)
        if final_norm == "every":
            x = model.norm(x)
    if final_norm == "end":
        x = model.norm(x)
    logits = model.lm_head(x)
    if output == "probs":
        return torch.softmax(logits, dim=-1)
    return torch.log_softmax(logits, dim=-1) if output == "log_probs" else logits


GPT_MISTAKES = (
    ({"scale": False}, "the token embeddings are not multiplied by √d_model: the package's embedding (lessons 01 "
                       "and 02) computes tokens · √d_model + positions, then dropout"),
    ({"positions": "none"}, "no positions are added: every token gets embedding.positions.table's vector for its "
                            "position 0 .. seq - 1 — without it the model cannot tell 'a b' from 'b a'"),
    ({"positions": "scaled"}, "the positions were multiplied by √d_model too: only the token embeddings are "
                              "scaled, tokens · √d_model + positions"),
    ({"positions": "from 1"}, "the positions start at 1: the first token sits at position 0, so add "
                              "table rows 0 .. seq - 1"),
    ({"padding": "none"}, "the padding mask is missing: the blocks need causal_mask(seq) AND padding_mask(ids, "
                          "pad_id), so no position attends to a [PAD] key (the [PAD] positions' own logits show "
                          "it)"),
    ({"padding": "zero"}, "you hid id 0, but this config's pad_id is another id (0 is an ordinary token here): "
                          "build the padding mask with config.pad_id"),
    ({"final_norm": "none"}, "the final LayerNorm is missing: with Pre-LN blocks nothing normalises the residual "
                             "stream that leaves the last block; apply self.norm once, after the loop, before "
                             "lm_head"),
    ({"final_norm": "every"}, "the final LayerNorm is applied after every block: apply it once, after the loop"),
    ({"wiring": "post"}, "your blocks are wired Post-LN, norm(x + sublayer(x)); the GPT's blocks are Pre-LN, "
                         "x + sublayer(norm(x)) (norm='pre')"),
    ({"chain": False}, "every block reads the embedding instead of the previous block's output: x = block(x, "
                       "mask) inside the loop"),
    ({"output": "probs"}, "you returned probabilities (a softmax): return the logits, lm_head's output as it is"),
    ({"output": "log_probs"}, "you returned log-probabilities (log_softmax): return the logits, lm_head's output "
                              "as it is"),
)


def diagnose_gpt(package: nn.Module, ids: torch.Tensor, got: torch.Tensor) -> str | None:
    with torch.no_grad():
        for knobs, message in GPT_MISTAKES:
            wrong = gpt_variant(package, ids, **knobs)
            if wrong is not None and wrong.shape == got.shape and close(got, wrong, atol=1e-4):
                return message
    return None


def gpt_error_hint(error: BaseException) -> str | None:
    text = str(error)
    if "index out of range" in text:
        return ("An index ran past a table: token ids index embedding.tokens.lookup (vocab_size rows), positions "
                "0 .. seq - 1 index embedding.positions.table (max_len rows)")
    if "tuple" in text:
        return "An attention module returns a pair (output, weights): keep [0]"
    if "size" in text or "shape" in text:
        return "Sizes differ on every check: take them from config and from ids, never a fixed number"
    return None


def check_gpt_logits(package: nn.Module, learner: nn.Module, case: GPTCase) -> None:
    """Eval mode: the learner's logits and gradients against the package's on ``case``; ids unchanged, no
    dropout left on, and no position that sees the future."""
    where = case.description
    forbidden = gpt_forbidden()
    package.eval()
    learner.eval()
    ids = snapshot(case.ids)
    got = call_learner(learner, "GPT", where, ids, forbidden=forbidden, error_hint=gpt_error_hint)
    check_inputs_kept({"ids": case.ids}, {"ids": ids}, "GPT", where)
    expected = package(case.ids)
    if isinstance(got, tuple):
        raise ExerciseFailure(f"on {where}: `GPT.forward` should return the logits tensor, got a tuple of "
                              f"{len(got)}.")
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape or got.dtype != expected.dtype:
        gap = difference(got, expected, "the output of your `GPT`")
        if isinstance(got, torch.Tensor) and got.dim() == 2 and got.shape == expected[:, -1].shape:
            gap = ("you returned the last position's logits only: return the logits of every position, (batch, "
                   f"seq, vocab) = {tuple(expected.shape)}")
        raise ExerciseFailure(f"on {where}: {gap}.")
    check_eval_is_deterministic(learner, case)
    check_no_future(learner, case, got.detach())
    gap = difference(got, expected, "the output of your `GPT`", atol=1e-5, rtol=1e-4)
    if gap:
        raise ExerciseFailure(f"on {where}: {diagnose_gpt(package, case.ids, got.detach()) or gap}.")
    backpropagate_both(package, expected, learner, got, "GPT", f"on {where}")
    names = [key for key, _ in package.named_parameters()]
    params = dict(learner.named_parameters(remove_duplicate=False))
    expected_grads = {f"parameter `{key}`": p.grad for key, p in package.named_parameters()}
    got_grads = {f"parameter `{key}`": params[key].grad for key in names}
    token_key = f"parameter `{TIED[0]}`"
    reference, grad = expected_grads[token_key], got_grads[token_key]
    if reference is not None and grad is not None and not close(grad, reference, atol=1e-4, rtol=1e-3):
        rows = (grad - reference).abs().amax(dim=-1) > 1e-4 * (1 + reference.abs().max())
        if rows.nonzero().flatten().tolist() == [case.config.pad_id]:
            raise ExerciseFailure(f"on {where}: the logits are right but the gradient of the token embedding's "
                                  f"[PAD] row (id {case.config.pad_id}) differs: build the table with "
                                  "nn.Embedding(vocab_size, d_model, padding_idx=config.pad_id), so the [PAD] "
                                  "tokens of a batch do not train it.")
    compare_gradients(expected_grads, got_grads, "GPT", f"on {where}")


def check_eval_is_deterministic(learner: nn.Module, case: GPTCase) -> None:
    """Eval mode: two calls on one input agree (3 rows of up to 5 tokens, so that a dropout left on always
    shows)."""
    config = case.config
    pool = torch.tensor([i for i in range(config.vocab_size) if i != config.pad_id])
    seq = max(1, min(5, config.max_len - 1))  # short of the full context (its own case)
    ids = pool[torch.randint(len(pool), (3, seq), generator=torch.Generator().manual_seed(5))]
    where = f"{case.description.split('; ids')[0]}; ids {tuple(ids.shape)}, eval mode"
    with torch.no_grad():
        first, second = (call_learner(learner, "GPT", where, ids.clone(), forbidden=gpt_forbidden(),
                                      error_hint=gpt_error_hint) for _ in range(2))
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape \
            and not torch.equal(first, second):
        raise ExerciseFailure(f"on {where}: two calls of your `GPT` give different logits: dropout is still "
                              "active. Use nn.Dropout modules (they follow .train()/.eval()).")


def check_no_future(learner: nn.Module, case: GPTCase, logits: torch.Tensor) -> None:
    """Changing every token after position t must leave the logits at positions 0 .. t as they were."""
    seq = case.ids.size(1)
    if seq < 2:
        return
    t = seq // 2 - 1 if seq > 2 else 0
    changed = case.ids.clone()
    generator = torch.Generator().manual_seed(seq)
    pool = torch.tensor([i for i in range(case.config.vocab_size) if i != case.config.pad_id])
    changed[:, t + 1:] = pool[torch.randint(len(pool), changed[:, t + 1:].shape, generator=generator)]
    with torch.no_grad():
        other = call_learner(learner, "GPT", case.description, changed, forbidden=gpt_forbidden())
    if isinstance(other, torch.Tensor) and other.shape == logits.shape:
        moved = (other[:, :t + 1] - logits[:, :t + 1]).abs().max().item()
        if moved > 1e-5:
            raise ExerciseFailure(f"on {case.description}: changing the tokens after position {t} changed your "
                                  f"logits at positions 0 .. {t} (by up to {moved:.3g}): a position sees the "
                                  "future. Every block needs the causal mask — causal_mask(seq) AND "
                                  "padding_mask(ids, pad_id) — so position t attends only to 0 .. t.")


def check_gpt_dropout(package: nn.Module, learner: nn.Module, case: GPTCase) -> None:
    """Train mode: the learner's GPT drops exactly what the package's drops (the embedding's dropout and each
    block's), the attention's own dropout aside; then every attention must drop something too."""
    h = torch.randn(2, 3, case.config.d_model, generator=torch.Generator().manual_seed(2))
    check_block_dropout(package, learner, lambda model: model(snapshot(case.ids)), "GPT",
                        f"{case.description}, dropout={case.config.dropout}", case.config.dropout, h)


def check_gpt(ns) -> None:
    learner_class = own_module_class(ns["GPT"], "GPT", "course_utils.language_model.DecoderOnlyLM")
    draw = Draw()
    dropout = draw.choice((0.2, 0.25, 0.3, 0.4))
    cases = gpt_cases(draw, dropout)
    for index, case in enumerate(cases):
        package, learner = paired_gpts(case.config, learner_class, case.description, draw.integer(0, 2 ** 30))
        check_gpt_logits(package, learner, case)
        if index == len(cases) - 1:
            check_gpt_dropout(package, learner, case)


# ---------------------------------------------------------------------------- q6 (capstone): sampling with a KV cache
GENERATE_PARAMETERS = ("(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None, "
                       "forbidden_ids=())")


def generate_forbidden() -> dict:
    """The package's decoders and its whole logits pipeline: the loop and the order of operations are the
    exercise (the filters of exercises 3 and 4 — the learner's or the package's — may be used)."""
    return {"the package's course_utils.decoding.generate": decoding.generate,
            "the package's course_utils.decoding.next_token_logits": decoding.next_token_logits,
            "the package's course_utils.decoding.greedy_decode": decoding.greedy_decode,
            "the package's course_utils.decoding.beam_search": decoding.beam_search}


@dataclass
class ModelCall:
    """What the stand-in model saw on one call of the learner's loop."""

    training: bool
    grad: bool
    length: int
    cache: Any


def recording_lm(config) -> nn.Module:
    """A :class:`~course_utils.language_model.DecoderOnlyLM` that records each call: its mode, whether gradients
    were on, how many tokens it was fed and the cache it was given."""
    from ..language_model import DecoderOnlyLM

    class RecordingLM(DecoderOnlyLM):
        def __init__(self, config) -> None:
            super().__init__(config)
            self.calls: list[ModelCall] = []

        def forward(self, ids, cache=None):
            length = ids.size(-1) if isinstance(ids, torch.Tensor) and ids.dim() else 0
            self.calls.append(ModelCall(any(m.training for m in self.modules()), torch.is_grad_enabled(), length,
                                        cache))  # every submodule: model.training = False is not eval()
            return super().forward(ids, cache)

    return RecordingLM(config)


@dataclass
class GenerateCase:
    """One input of the sampling check: a factory of fresh models (the same weights, handed over in train mode),
    the prompt, the settings given to the learner's function, the generator's seed and the package's tokens."""

    description: str
    make_model: Any
    prompt: torch.Tensor
    max_new_tokens: int
    settings: dict
    seed: int
    expected: torch.Tensor = None
    _reference: Any = None

    def reference_model(self) -> nn.Module:
        """One model of the case in eval mode, for the checker's own runs (the learner always gets a fresh one)."""
        if self._reference is None:
            self._reference = self.make_model().eval()
        return self._reference

    @property
    def sampling(self) -> bool:
        return self.settings.get("temperature", 1.0) != 0

    def arguments(self, seed: int | None = None) -> dict:
        """The keyword arguments of one call: the settings, and a fresh generator seeded with ``seed``."""
        arguments = dict(self.settings)
        if self.sampling:
            arguments["generator"] = torch.Generator().manual_seed(self.seed if seed is None else seed)
        return arguments


def lm_factory(config, seed: int, logit_scale: float):
    """Fresh recording models with one set of weights (the final norm's gain scaled, so the next-token
    distributions are neither flat nor one-hot), in train mode with dropout on."""
    def make() -> nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = recording_lm(config)
        with torch.no_grad():
            model.norm.weight.mul_(logit_scale)
        return model.train()
    return make


def first_choices(make_model, prompt: torch.Tensor) -> torch.Tensor:
    """The most probable first token of every row (what the model would pick greedily)."""
    with torch.no_grad():
        return make_model().eval()(prompt)[:, -1].argmax(dim=-1)


def generate_cases(draw: Draw) -> list[GenerateCase]:
    """From the smallest input to the largest: greedy with a forbidden first choice (batch 1, a one-token prompt);
    plain sampling (batch 1, the defaults); top-k; top-p; top-k and top-p together with a prompt that leaves room
    for exactly max_new_tokens. Sizes, ids and settings drawn per check; the forbidden ids include a token the
    model ranks first, and the generator's seed is one under which every typical mistake draws other tokens."""
    cases = []
    for index in range(5):
        batch = 1 if index < 2 else draw.integer(2, 4)
        prompt_len = 1 if index == 0 else draw.integer(2, 5)
        n = draw.integer(6, 8) if batch == 1 else draw.integer(4, 6)
        max_len = prompt_len + n if index == 4 else prompt_len + n + draw.integer(1, 4)
        config = gpt_config(draw, 2 if index == 0 else 1, max_len, draw.choice((0.2, 0.3, 0.4)), avoid=(batch,))
        scale = draw.choice((2.5, 3.0)) if index == 0 else draw.choice((1.0, 1.2, 1.4))
        make_model = lm_factory(config, draw.integer(0, 2 ** 30), scale)
        prompt = real_ids(draw, config, batch, prompt_len)
        others = [i for i in range(config.vocab_size) if i != config.pad_id]
        firsts = first_choices(make_model, prompt).tolist()
        top = firsts[0]
        if index == 0:
            settings = {"temperature": 0, "forbidden_ids": [top, draw.choice([i for i in others if i != top])]}
            text = (f"greedy (temperature=0), forbidden_ids={settings['forbidden_ids']} ({top} is the model's first "
                    "choice)")
        elif index == 1:
            settings = {"temperature": draw.choice((0.7, 1.3, 1.6))}
            text = f"temperature={settings['temperature']}, no filter, top_k/top_p/forbidden_ids left at their defaults"
        elif index == 2:
            k = draw.integer(2, 4)
            favourites = tuple(dict.fromkeys(firsts))
            settings = {"temperature": draw.choice((1.4, 1.7, 2)), "top_k": k,
                        "forbidden_ids": favourites + (config.pad_id,)}
            text = (f"temperature={settings['temperature']}, top_k={k}, forbidden_ids={settings['forbidden_ids']} "
                    f"(a tuple: the rows' first choices and pad_id)")
        elif index == 3:
            settings = {"temperature": draw.choice((1.3, 1.5, 1.8)), "top_p": draw.choice((0.5, 0.6, 0.7))}
            text = f"temperature={settings['temperature']}, top_p={settings['top_p']}"
        else:
            k = draw.integer(3, 5)
            settings = {"temperature": draw.choice((1.0, 1.25, 1.5)), "top_k": k,
                        "top_p": draw.choice((0.5, 0.6, 0.7)), "forbidden_ids": [top]}
            text = (f"temperature={settings['temperature']}, top_k={k} then top_p={settings['top_p']}, "
                    f"forbidden_ids=[{top}] (row 0's first choice); prompt + new tokens = max_len {max_len}")
        description = (f"a random GPT (vocab {config.vocab_size}, pad_id {config.pad_id}, {config.n_layers} "
                       f"block{'s' if config.n_layers > 1 else ''}, max_len {max_len}, handed over in train mode), "
                       f"prompt of batch {batch} × {prompt_len} token{'s' if prompt_len > 1 else ''}, "
                       f"max_new_tokens={n}, {text}")
        case = GenerateCase(description, make_model, prompt, n, settings, 0)
        case.seed = telling_seed(draw, case)
        case.expected = package_generate(case)
        cases.append(case)
    return cases


def as_key(tokens: torch.Tensor | None) -> tuple:
    """Tokens as a hashable key (``("crash",)`` where a loop could not go on)."""
    return ("crash",) if tokens is None else tuple(tokens.flatten().tolist())


def telling_seed(draw: Draw, case: GenerateCase, tries: int = 4) -> int:
    """A generator seed under which the tokens of every typical mistake that applies to ``case`` differ from the
    package's (so each is rejected) and, as far as a few tries find, from one another (so each is named without
    ambiguity)."""
    mistakes = [knobs for knobs, applies, _ in SAMPLING_MISTAKES if applies(case.settings, case.prompt.size(1))]
    best, best_score = 0, (-1, -1)
    for _ in range(tries):
        case.seed = draw.integer(0, 2 ** 30)
        right = tuple(sample_variant(case).flatten().tolist())
        outcomes = [as_key(sample_variant(case, **knobs)) for knobs in mistakes]
        score = (sum(outcome != right for outcome in outcomes), len(set(outcomes + [right])))
        if score > best_score:
            best, best_score = case.seed, score
        if best_score == (len(mistakes), len(mistakes) + 1):
            break
    return best


def package_generate(case: GenerateCase, generator_seed: int | None = None) -> torch.Tensor:
    """What :func:`course_utils.decoding.generate` returns for ``case`` (no repetition penalty, no [EOS] stop, the
    case's forbidden ids)."""
    arguments = case.arguments(generator_seed)
    forbidden = tuple(arguments.pop("forbidden_ids", ()))
    return decoding.generate(case.make_model(), case.prompt.clone(), case.max_new_tokens, forbidden_ids=forbidden,
                             **arguments)


def sample_variant(case: GenerateCase, *, order=("forbid", "temperature", "top_k", "top_p"), position: int = -1,
                   sampler: str = "multinomial", temperature_op: str = "divide",
                   seed: int | None = None) -> torch.Tensor | None:
    """The case's tokens from a loop with one typical change (the order of operations, the position read, the
    sampler); with the defaults it gives the package's tokens. ``None`` where that loop cannot go on (every token
    of a row removed: a learner's loop with this mistake crashes there)."""
    settings = case.settings
    temperature = settings.get("temperature", 1.0)
    top_k, top_p = settings.get("top_k"), settings.get("top_p")
    forbidden = torch.tensor(list(settings.get("forbidden_ids", ())), dtype=torch.long)
    generator = torch.Generator().manual_seed(case.seed if seed is None else seed)
    model = case.reference_model()
    ids = case.prompt.clone()
    cache = model.new_cache()
    step = ids
    with torch.no_grad():
        for _ in range(case.max_new_tokens):
            logits = model(step, cache)[:, position].float()
            for operation in order:
                if operation == "forbid" and len(forbidden):
                    logits = logits.index_fill(-1, forbidden, float("-inf"))
                elif operation == "temperature" and temperature != 0:
                    logits = logits / temperature if temperature_op == "divide" else logits * temperature
                elif operation == "top_k" and top_k is not None and temperature != 0:
                    logits = decoding.top_k_filter(logits, top_k)
                elif operation == "top_p" and top_p is not None and temperature != 0:
                    logits = decoding.top_p_filter(logits, top_p)
            if temperature == 0 or sampler == "argmax":
                token = logits.argmax(dim=-1)
            elif bool(torch.isinf(logits).all(dim=-1).any()):
                return None
            else:
                token = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(1)
            ids = torch.cat([ids, token[:, None]], dim=1)
            step = token[:, None]
    return ids


def _setting(settings: dict, name: str, default=None):
    return settings.get(name, default)


def _sampling(settings: dict) -> bool:
    return _setting(settings, "temperature", 1.0) != 0


def _scaled(settings: dict) -> bool:
    return _setting(settings, "temperature", 1.0) not in (0, 1)


SAMPLING_MISTAKES = (  # (knobs of sample_variant, applies to (settings, prompt_len), the diagnosis)
    ({"order": ("temperature", "top_k", "top_p")}, lambda s, n: bool(_setting(s, "forbidden_ids", ())),
     "a forbidden id was generated: set the logits of forbidden_ids to -inf at every step, before anything else"),
    ({"order": ("forbid", "top_k", "top_p")}, lambda s, n: _scaled(s),
     "the temperature changed nothing: divide the logits by it (after the forbidden ids, before the filters)"),
    ({"order": ("forbid", "temperature", "top_p")}, lambda s, n: _sampling(s) and _setting(s, "top_k") is not None,
     "top_k was ignored: keep only the k largest logits (after the temperature, before top-p)"),
    ({"order": ("forbid", "temperature", "top_k")}, lambda s, n: _sampling(s) and _setting(s, "top_p") is not None,
     "top_p was ignored: keep only the nucleus (after top-k)"),
    ({"order": ("temperature", "top_k", "top_p", "forbid")},
     lambda s, n: bool(_setting(s, "forbidden_ids", ())) and _sampling(s)
     and (_setting(s, "top_k") is not None or _setting(s, "top_p") is not None),
     "the forbidden ids were set to -inf after the temperature and the filters: set them first, so top-k and top-p "
     "choose among the allowed tokens only (here a forbidden id was among the top k, so fewer than k stayed)"),
    ({"order": ("forbid", "top_k", "top_p", "temperature")},
     lambda s, n: _scaled(s) and _setting(s, "top_p") is not None,
     "the temperature was applied after the filters: divide by it first (after the forbidden ids) — top-p "
     "measures the nucleus on the distribution the temperature has reshaped"),
    ({"order": ("forbid", "temperature", "top_p", "top_k")},
     lambda s, n: _sampling(s) and _setting(s, "top_k") is not None and _setting(s, "top_p") is not None,
     "top-p ran before top-k: the order is top-k first, then top-p on what top-k kept"),
    ({"temperature_op": "multiply"}, lambda s, n: _scaled(s),
     "you multiplied the logits by the temperature: divide them (below 1 sharpens, above 1 flattens)"),
    ({"position": 0}, lambda s, n: n > 1,
     "the first step read the logits of the prompt's *first* position: the next token is scored at the last "
     "position, logits[:, -1]"),
    ({"sampler": "argmax"}, lambda s, n: _sampling(s),
     "you took the arg-max although the temperature is not 0: sample, torch.multinomial(probs, 1, "
     "generator=generator)"),
)
SAMPLING_MESSAGES = {"argmax": next(m for knobs, _, m in SAMPLING_MISTAKES if knobs.get("sampler") == "argmax"),
                     "forbid last": next(m for knobs, _, m in SAMPLING_MISTAKES
                                         if knobs.get("order", ("",))[-1] == "forbid")}


def cache_problem(calls: list[ModelCall], case: GenerateCase, steps_done: int | None = None) -> str | None:
    """What is wrong with the way the learner's loop fed the model (``None``: each token once, through one cache)."""
    if not calls:
        return None
    prompt_len = case.prompt.size(1)
    if any(call.cache is None for call in calls):
        fed = ", ".join(str(call.length) for call in calls[:6]) + (" …" if len(calls) > 6 else "")
        return ("your loop calls the model without a KV cache (tokens fed per call: "
                f"{fed}): create cache = model.new_cache() once, pass it at every call, and after the prompt feed "
                "only the newest token (batch, 1) — the cache remembers the rest")
    if len({id(call.cache) for call in calls}) > 1:
        return ("your loop makes a new cache at every step, so the model forgets the earlier tokens: create "
                "cache = model.new_cache() once, before the loop, and pass the same object at every call")
    fed = sum(call.length for call in calls)
    if fed > prompt_len + case.max_new_tokens:
        lengths = ", ".join(str(call.length) for call in calls[:6]) + (" …" if len(calls) > 6 else "")
        return (f"your loop feeds tokens the cache already holds (tokens fed per call: {lengths}; the prompt has "
                f"{prompt_len}): with a KV cache each token passes through the model once — the prompt at the "
                "first call, then only the newest token, token[:, None]")
    return None


def generate_error_hint(error: BaseException) -> str | None:
    text = str(error)
    if isinstance(error, TypeError) and ("positional argument" in text or "keyword argument" in text):
        return f"The function is generate{GENERATE_PARAMETERS}: give it exactly these parameters"
    if ("exceeds" in text and "max_len" in text) or "context" in text:
        return ("The model was fed more positions than its context holds: with the KV cache, feed only the newest "
                "token after the prompt")
    if "probability tensor contains" in text or "invalid multinomial" in text:
        return ("torch.multinomial needs probabilities (≥ 0, not all 0): take the softmax of the filtered logits "
                "— and temperature 0 means greedy, the arg-max, with no division")
    if "zero-dim" in text or "same number of dimensions" in text or "dimension 0" in text:
        return "Keep the batch axis, with batch 1 too: token[:, None] is the column to append (no .squeeze())"
    return None


def probes(case: GenerateCase) -> list[GenerateCase]:
    """Other inputs that tell apart mistakes which give the same tokens on ``case``: other seeds, another
    temperature, a wide nucleus at a high temperature, and — with both filters — a top-k that cuts every nucleus
    and one that cuts none (four prompts where the case has fewer, so that every draw counts)."""
    config = case.reference_model().config
    pool = torch.tensor([i for i in range(config.vocab_size) if i != config.pad_id])
    others = pool[torch.randint(len(pool), (4 - min(case.prompt.size(0), 3), case.prompt.size(1)),
                                generator=torch.Generator().manual_seed(7))]
    wide = torch.cat([case.prompt, others])
    temperature = case.settings.get("temperature", 1.0)
    other = 2.2 if temperature < 1.5 else 0.6
    found = [replace(case, seed=101),
             replace(case, seed=202, prompt=wide, settings={**case.settings, "temperature": other})]
    if "top_p" in case.settings:
        found.append(replace(case, seed=505, prompt=wide,
                             settings={**case.settings, "temperature": 3.0, "top_p": 0.95}))
    if "top_k" in case.settings and "top_p" in case.settings:
        found += [replace(case, seed=303, prompt=wide, settings={**case.settings, "top_k": 2, "top_p": 0.95}),
                  replace(case, seed=404, prompt=wide,
                          settings={**case.settings, "top_k": config.vocab_size // 2, "top_p": 0.3})]
    return found


def learner_key(function, case: GenerateCase) -> tuple:
    """The learner's tokens on ``case`` as a key (``("crash",)`` if its function raised)."""
    try:
        return as_key(call_learner(lambda: function(case.make_model(), case.prompt.clone(), case.max_new_tokens,
                                                    **case.arguments()), "generate", case.description))
    except ExerciseFailure:
        return ("crash",)


def diagnose_generate(function, case: GenerateCase, got: torch.Tensor) -> str:
    """Why the learner's tokens differ from the package's on ``case``: the typical mistake whose tokens the
    learner's function reproduces — on this case and on probes that tell mistakes apart — or else the generator
    misused."""
    expected = case.expected
    prompt_len = case.prompt.size(1)
    candidates = [(knobs, message) for knobs, applies, message in SAMPLING_MISTAKES
                  if applies(case.settings, prompt_len) and as_key(sample_variant(case, **knobs)) == as_key(got)]
    if candidates and case.sampling:
        for probe in probes(case):
            mine = learner_key(function, probe)
            candidates = [(knobs, message) for knobs, message in candidates
                          if as_key(sample_variant(probe, **knobs)) == mine]
            if not candidates:
                break
    if candidates:
        return candidates[0][1]
    if case.sampling:  # the generator: tried where every draw counts, at temperature 1 on four prompts
        hot = probes(case)[1]
        hot = replace(hot, settings={**case.settings, "temperature": 1.0})
        where = f"{case.description}, and the same model at temperature 1 with {hot.prompt.size(0)} prompts"
        check_generator_use(lambda generator: function(hot.make_model(), hot.prompt.clone(), hot.max_new_tokens,
                                                       **{**hot.arguments(), "generator": generator}),
                            "generate", where)
    if case.settings.get("temperature") == 0:
        return (f"greedy decoding (temperature=0) picks the arg-max of the last position's logits, the forbidden ids "
                f"excluded: expected {expected.tolist()}, got {got.tolist()}")
    rows, steps = (got != expected).nonzero()[0].tolist() if (got != expected).any() else (0, prompt_len)
    return (f"row {rows}, new token {steps - prompt_len + 1}: the package draws {int(expected[rows, steps])}, yours "
            f"{int(got[rows, steps])} (expected {expected.tolist()}, got {got.tolist()}). Each step: the last "
            "position's logits as float32 → forbidden ids to -inf → ÷ temperature → top-k → top-p → softmax → "
            "one torch.multinomial(probs, 1, generator=generator) draw per row")


def check_generate(ns) -> None:
    function = own_function(ns["generate"], "generate", "course_utils.decoding.generate")
    for case in generate_cases(Draw()):
        where = case.description
        model = case.make_model()
        prompt = snapshot(case.prompt)
        try:
            got = call_learner(function, "generate", where, model, prompt, case.max_new_tokens,
                               forbidden=generate_forbidden(), error_hint=generate_error_hint, **case.arguments())
        except ExerciseFailure as failure:
            problem = cache_problem(model.calls, case)
            if problem:
                raise ExerciseFailure(f"on {where}: {problem}.") from None
            forbid_last = next(knobs for knobs, _, message in SAMPLING_MISTAKES
                               if knobs.get("order", ("",))[-1] == "forbid")
            if "probability tensor" in str(failure) and sample_variant(case, **forbid_last) is None:
                raise ExerciseFailure(f"on {where}: your `generate` crashed where every token the filters kept "
                                      f"was forbidden: {SAMPLING_MESSAGES['forbid last']}.") from None
            raise failure from None
        check_inputs_kept({"prompt_ids": case.prompt}, {"prompt_ids": prompt}, "generate", where)
        if not model.calls:
            raise ExerciseFailure(f"on {where}: your `generate` never called the model.")
        if any(call.training for call in model.calls):
            raise ExerciseFailure(f"on {where}: the model (or one of its submodules) ran in training mode: "
                                  "call model.eval() first — assigning model.training = False switches the top module "
                                  "only — otherwise dropout changes every step's distribution.")
        if any(call.grad for call in model.calls):
            raise ExerciseFailure(f"on {where}: the model ran with gradients enabled: sampling needs no backward "
                                  "pass, so run it under torch.no_grad() (or decorate the function with "
                                  "@torch.no_grad()).")
        problem = cache_problem(model.calls, case)
        if problem:
            raise ExerciseFailure(f"on {where}: {problem}.")
        expected = case.expected
        if not isinstance(got, torch.Tensor):
            raise ExerciseFailure(f"on {where}: return the ids as a tensor (batch, prompt_len + max_new_tokens), "
                                  f"got {type(got).__name__}.")
        if got.dim() == 2 and got.shape == (expected.size(0), case.max_new_tokens):
            raise ExerciseFailure(f"on {where}: you returned only the {case.max_new_tokens} new tokens: return the "
                                  "prompt followed by them, (batch, prompt_len + max_new_tokens) = "
                                  f"{tuple(expected.shape)}.")
        if got.shape != expected.shape:
            raise ExerciseFailure(f"on {where}: return ids of shape (batch, prompt_len + max_new_tokens) = "
                                  f"{tuple(expected.shape)}, got {tuple(got.shape)}: exactly max_new_tokens new "
                                  "tokens, no stop.")
        if got.dtype != torch.long:
            raise ExerciseFailure(f"on {where}: token ids are torch.long, got {got.dtype}.")
        if not torch.equal(got[:, :case.prompt.size(1)], case.prompt):
            raise ExerciseFailure(f"on {where}: the result must start with the prompt itself, then the new tokens.")
        if not torch.equal(got, expected):
            raise ExerciseFailure(f"on {where}: {diagnose_generate(function, case, got)}.")


q5 = Exercise(
    name="Capstone: the GPT itself",
    variables=("GPT",),
    checker=check_gpt,
    hints=("Four stages: embed (tokens scaled by √d_model, plus a learned vector per position, then dropout); a "
           "mask under which a position sees itself and its past but no [PAD]; the Pre-LN blocks one after the "
           "other; a final LayerNorm, then an output layer that shares the token table. Which of them does the "
           "future leak through if you forget one? Stuck? `from course_utils.language_model import DecoderOnlyLM` "
           "and move on.",
           "__init__: an `embedding` module holding `tokens.lookup` (vocab_size × d_model, padding row pad_id), "
           "`positions.table` (max_len × d_model) and a dropout of config.dropout; an nn.ModuleList `blocks` of "
           "n_layers *new* encoder layers built with d_model, n_heads, d_ff, dropout and norm 'pre'; a LayerNorm "
           "`norm`; a bias-free linear `lm_head` from d_model to vocab_size, then assign the token table's weight "
           "to lm_head's weight (one matrix, tied). forward: the mask is the causal mask of length seq AND the "
           "padding mask of ids with config.pad_id; embed = dropout(token rows × sqrt(d_model) + position rows "
           "0 … seq − 1); run the blocks in turn, each on the previous output with the mask; return the head of "
           "the final norm. Stuck? `from course_utils.language_model import DecoderOnlyLM` and move on."),
    solution=solution_of("lesson08", "TokenTable", "PositionTable", "Embedding", "GPT"),
    success="Correct! Your GPT computes what course_utils.language_model.DecoderOnlyLM computes: the same logits "
            "and gradients on every config tried (one token, a full context, padding in some rows), no position "
            "sees the future, and the same dropout in train mode.",
    task=(
        "**Capstone — the GPT itself.** Write `GPT(config)`, a decoder-only language model in GPT-2's layout for a "
        "`TransformerConfig` with these settings (`norm=\"pre\"`, `positional=\"learned\"`, a ReLU feed-forward, "
        "LayerNorm) — the model of section 4 with learned positions and a ReLU feed-forward where it has RoPE and "
        "SwiGLU, which lesson 09 builds — with `forward(ids)`: `(batch, seq)` token ids → next-token logits "
        "`(batch, seq, vocab_size)`, float32. In order:\n\n"
        "1. embed: $\\text{tokens}\\cdot\\sqrt{d_\\text{model}} + \\text{positions}$, then dropout — the token "
        "table `embedding.tokens.lookup` is `nn.Embedding(vocab_size, d_model, padding_idx=config.pad_id)`, the "
        "learned vectors of positions 0 … seq − 1 come from `embedding.positions.table`, an "
        "`nn.Embedding(max_len, d_model)`;\n"
        "2. the mask `causal_mask(seq) & padding_mask(ids, config.pad_id)` (`course_utils.masks`): position $t$ "
        "attends to the non-[PAD] tokens $0 \\dots t$;\n"
        "3. `n_layers` Pre-LN blocks in turn, each called with that mask — lesson 04's encoder layer with "
        "`norm=\"pre\"` (yours, or the package's `course_utils.layers.EncoderLayer`);\n"
        "4. the final `norm` (`nn.LayerNorm(d_model)`), then `lm_head` (`nn.Linear(d_model, vocab_size, "
        "bias=False)`) whose weight *is* the token table: `self.lm_head.weight = "
        "self.embedding.tokens.lookup.weight`.\n\n"
        "The attribute names are the package's, so `DecoderOnlyLM`'s weights load into yours: "
        "`embedding.tokens.lookup`, `embedding.positions.table`, `blocks` (each with `self_attn`, "
        "`feed_forward.linear1`/`linear2`, `attn_block.norm`, `ff_block.norm`), `norm`, `lm_head` (an "
        "`nn.Module()` can hold a sub-module, e.g. `self.tokens = nn.Module(); self.tokens.lookup = ...`; the "
        "package's `course_utils.embedding.TokenEmbedding` and `course_utils.positional.LearnedPositionalEncoding` "
        "have exactly these names). Take every size from `config` (`vocab_size`, `d_model`, `n_heads`, `d_ff`, "
        "`n_layers`, `max_len`, `dropout`, `pad_id`). The package's attention, layers, embeddings and masks may "
        "be used; the assembly is yours: the package's `DecoderOnlyLM`, `DecoderOnlyBlock`, `InputEmbedding` and "
        "torch's `nn.Transformer…` stacks are not accepted, however they are reached.\n\n"
        "How it is checked: every check draws four configs of fresh sizes (vocab, d_model, heads, d_ff, max_len "
        "and a pad_id other than 0, no two alike) and tries, from the smallest input to the largest: one token in "
        "a batch of one with one block; a batch of one that fills the whole context (seq == max_len) with two "
        "blocks; batches with right padding in some rows only, with two and three blocks (ids 0 and vocab − 1 "
        "occur as ordinary tokens). For each, `course_utils.language_model.DecoderOnlyLM(config)` is built (norm "
        "gains and position vectors randomised) and its parameters are copied into your `GPT` by name (the head "
        "must be tied). In eval mode your logits — at every position, the [PAD] ones too — and the gradients of "
        "every parameter must equal the package's; `ids` must come back unchanged, two calls must agree, and "
        "changing the tokens after a position must not move the logits up to it. On the largest case, in train "
        "mode, your model must drop exactly what the package's drops (after the embedding, and in each block), "
        "and its attention must drop too. `q5.hint()` and `q5.solution()` help; stuck? "
        "`from course_utils.language_model import DecoderOnlyLM` and move on."
    ),
    starter=(
        "import math\n"
        "\n"
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "from course_utils.layers import EncoderLayer  # or yours from lesson 04 (norm=\"pre\")\n"
        "from course_utils.masks import causal_mask, padding_mask\n"
        "\n"
        "\n"
        "class Embedding(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        # self.tokens.lookup: nn.Embedding(vocab_size, d_model, padding_idx=pad_id)\n"
        "        # self.positions.table: nn.Embedding(max_len, d_model); a dropout\n"
        "        raise NotImplementedError\n"
        "\n"
        "    def forward(self, ids):\n"
        "        raise NotImplementedError  # tokens · √d_model + the vectors of positions 0..seq-1, then dropout\n"
        "\n"
        "\n"
        "class GPT(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        # embedding; blocks: n_layers Pre-LN blocks; norm; lm_head tied to embedding.tokens.lookup.weight\n"
        "        raise NotImplementedError\n"
        "\n"
        "    def forward(self, ids):\n"
        "        # causal AND padding mask; embed; every block in turn; final norm; lm_head -> (batch, seq, vocab)\n"
        "        raise NotImplementedError\n"
    ),
)

q6 = Exercise(
    name="Capstone: sampling with a KV cache",
    variables=("generate",),
    checker=check_generate,
    hints=("One model call per new token: the cache remembers everything fed before, so after the prompt only the "
           "newest token goes in. Within a step the order is fixed — forbidden ids first, then the temperature "
           "(0 means greedy), then top-k, then top-p, then one multinomial draw from the generator you are given. "
           "Stuck? `from course_utils.decoding import generate` and move on.",
           "Put the model in eval mode and switch gradients off; make one cache; the first input is the whole "
           "prompt. For each of max_new_tokens steps: run the model on the current input with the cache; keep the "
           "last position's scores as float32; fill the forbidden ids' scores with minus infinity; if the "
           "temperature is 0 take the arg-max of every row; otherwise divide the scores by the temperature, apply "
           "top-k if it is given, then top-p if it is given, turn the scores into probabilities (softmax over the "
           "vocabulary) and draw one token per row with multinomial and the generator. Append the tokens as a new "
           "column of the ids; that column, (batch, 1), is the next input. Return all the ids, prompt included."),
    solution=solution_of("lesson08", "top_k_filter", "top_p_filter", "generate"),
    success="Correct! The same tokens as course_utils.decoding.generate for greedy decoding and for sampling with "
            "temperature, top-k and top-p, forbidden ids excluded — through the KV cache, one token per call, in "
            "eval mode without gradients, drawn from the generator you were given.",
    task=(
        "**Capstone — sampling with a KV cache.** Write `generate(model, prompt_ids, max_new_tokens, "
        "temperature=1.0, top_k=None, top_p=None, generator=None, forbidden_ids=())` for a GPT with the package's "
        "interface: `model(ids, cache)` → logits `(batch, seq, vocab)`, where `cache = model.new_cache()` keeps "
        "the keys and values of every token already fed (the positions of new tokens continue after them). "
        "Return `(batch, prompt_len + max_new_tokens)` long ids: the prompt, then exactly `max_new_tokens` new "
        "tokens (no stop at [EOS], no repetition penalty). Every step does, in this order:\n\n"
        "1. take the last position's logits, `[:, -1]`, as float32;\n"
        "2. set the logits of `forbidden_ids` (a list or a tuple of ids) to `-inf`;\n"
        "3. if `temperature == 0`, the next token is the arg-max (greedy: no filter, no draw); otherwise divide "
        "by `temperature`, keep the `top_k` largest (when `top_k` is not None), then the nucleus of mass `top_p` "
        "(when not None), and draw `torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)` — "
        "one draw per row;\n"
        "4. append the new tokens.\n\n"
        "The model runs in eval mode and without gradients, through the KV cache: the first call reads the "
        "prompt, every later call only the newest token `(batch, 1)`, so each token passes through the model "
        "once. Use your `top_k_filter` and `top_p_filter` from exercises 3 and 4 (or the package's "
        "`decoding.top_k_filter` and `decoding.top_p_filter`); the loop is yours: the package's `generate`, "
        "`next_token_logits`, `greedy_decode` and `beam_search` are not accepted, however they are reached.\n\n"
        "How it is checked: your tokens must equal those of `course_utils.decoding.generate(model, prompt_ids, "
        "max_new_tokens, temperature, top_k, top_p, generator=…, forbidden_ids=…)`, token for token with "
        "generators seeded alike, on five small random GPTs drawn per check (fresh sizes and ids, a pad_id other "
        "than 0), from the smallest to the largest: greedy from a one-token prompt with the model's favourite "
        "first token forbidden; plain sampling with the defaults (batch 1); top-k with the rows' favourite first "
        "tokens and `pad_id` forbidden (a tuple); top-p; top-k then top-p with a forbidden favourite and a prompt "
        "that leaves room for exactly `max_new_tokens` in the context. The seed is one under which the typical "
        "mistakes (a step out of order, a setting ignored, the first position read, an arg-max) all draw other "
        "tokens than the package. "
        "Every model is handed over in train mode with dropout on and records each call: eval mode, no "
        "gradients, one cache, each token fed once. The prompt must come back unchanged; where tokens differ, the "
        "checker also tries your function with other generators (same seed: same tokens whatever the global "
        "random state; another seed: other tokens). `q6.hint()` and `q6.solution()` help; stuck? "
        "`from course_utils.decoding import generate` and move on."
    ),
    starter=(
        "def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None,\n"
        "             forbidden_ids=()):\n"
        "    # eval mode, no gradients; one cache = model.new_cache(); the prompt first, then one token per call\n"
        "    # each step: logits[:, -1] -> forbidden ids to -inf -> arg-max if temperature == 0, else\n"
        "    # / temperature -> top-k -> top-p -> softmax -> torch.multinomial(probs, 1, generator=generator)\n"
        "    raise NotImplementedError\n"
    ),
)
