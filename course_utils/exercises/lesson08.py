"""Exercises of lesson 08 (a decoder-only GPT): training pairs cut from a token stream, found from their symptom (q1),
top-p filtering after the page's top-k (q2), and the capstone, sampling through a KV cache (q3).

Every check draws fresh inputs (:class:`~.asserts.Draw`) and compares the learner's function with the package's
(q1: :func:`course_utils.losses.shift_for_lm` on windows of the stream, :func:`course_utils.decoding.top_p_filter`,
:func:`course_utils.decoding.generate`), which is the reference; each exercise declares its typical mistakes once,
in its table (see :mod:`.core`).
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, replace
from typing import Any

import torch
import torch.nn as nn

from .. import decoding, losses
from .asserts import (
    Case,
    Draw,
    attempt,
    call_learner,
    check_function,
    check_generator_use,
    check_inputs_kept,
    close,
    difference,
    learner_function,
    own_function,
    show,
    snapshot,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of

NEG_INF = float("-inf")


# ---------------------------------------------------------------------------- q1: pairs from a token stream
def training_pairs_reference(stream: torch.Tensor, starts: torch.Tensor, block: int):
    """The package's shift (:func:`course_utils.losses.shift_for_lm`) on windows of ``block + 1`` ids of a 1-D
    ``stream``, one window per start: ``(inputs, targets)``, each ``(len(starts), block)``."""
    return losses.shift_for_lm(stream[starts[:, None] + torch.arange(block + 1)])


def stream_cases(draw: Draw) -> list[Case]:
    """A 1-D long stream of ids (all different, so every offset shows), starts that include 0 and the last valid
    one (``len(stream) - block - 1``), a block of random size; one case with a single start."""
    cases = []
    for rows in (1, draw.integer(2, 5), draw.integer(3, 6)):
        length, block, vocab = draw.integer(30, 60), draw.integer(3, 9), draw.integer(1_000, 60_000)
        stream = torch.randperm(vocab, generator=draw.generator())[:length]
        last = length - block - 1
        starts = torch.randint(1, last, (rows,), generator=draw.generator())
        if rows > 1:
            starts[0], starts[-1] = 0, last
        cases.append(Case(f"a stream of {length} ids, {rows} start(s) {starts.tolist()}, block {block}",
                          (stream, starts, block)))
    return cases


def check_training_pairs(ns) -> None:
    draw = Draw()
    cases = stream_cases(draw)
    check_function(learner_function(ns, "training_pairs"), training_pairs_reference, cases, "training_pairs",
                   probes=cases, twins=stream_cases(draw.twin()),
                   forbidden={"the package's course_utils.losses.shift_for_lm": losses.shift_for_lm})


PAIRS = training_pairs_reference
PAIRS_MISTAKES = (
    Mistake("not a pair", "`training_pairs` should return a pair (inputs, targets)",
            variant=lambda stream, starts, block: PAIRS(stream, starts, block)[0],
            shows=lambda case, got, _: not (isinstance(got, (tuple, list)) and len(got) == 2)),
    Mistake("previous token", "the colleague's bug: the targets are the tokens *before* the inputs, stream[i - 1], "
            "and with a causal mask a position sees the token before it, so the model copies it. The target of "
            "stream[i] is stream[i + 1]", variant=lambda stream, starts, block: (
                PAIRS(stream, starts, block)[0], stream[starts[:, None] + torch.arange(block) - 1])),
    Mistake("no shift", "no shift: with targets equal to the inputs, position t is asked for the token it reads — "
            "the model learns to copy. The target of stream[i] is stream[i + 1]",
            variant=lambda stream, starts, block: (PAIRS(stream, starts, block)[0],) * 2),
    Mistake("wrong direction", "inputs and targets swapped: that asks for the *previous* token. inputs = "
            "stream[s : s + block], targets one further on", variant=lambda stream, starts, block:
            PAIRS(stream, starts, block)[::-1]),
    Mistake("inputs shifted too", "the inputs moved one on like the targets: position t reads the very token it "
            "is asked for. inputs start at s, targets at s + 1",
            variant=lambda stream, starts, block: (PAIRS(stream, starts, block)[1],) * 2),
    Mistake("window too short", "both should have shape (len(starts), block): a window of block + 1 ids gives "
            "block inputs and block targets", variant=lambda stream, starts, block: PAIRS(stream, starts, block - 1),
            shows=lambda case, got, _: isinstance(got, (tuple, list)) and len(got) == 2
            and any(isinstance(t, torch.Tensor) and t.shape != (len(case.args[1]), case.args[2]) for t in got)),
)


# ---------------------------------------------------------------------------- q2: top-p, after the page's top-k
class KeptSet(str):
    """A filter's problem that lies in which tokens it kept (the table of mistakes may name it)."""


def filter_problem(got, expected: torch.Tensor, logits: torch.Tensor, name: str, setting: str) -> str | None:
    """What is wrong with a filter's result (``None`` if nothing): filtered logits, removed tokens ``-inf``, the
    package's kept set (a wrong set comes back as :class:`KeptSet`),
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
        if torch.equal(kept[row], finite[row]):
            continue
        listed = [show(ids[row].nonzero().flatten().tolist()) for ids in (finite, kept)]
        return KeptSet(f"with {setting}, row {row} should keep tokens {listed[0]}, yours keeps {listed[1]}")
    unchanged = torch.where(kept, got, 0.0), torch.where(kept, logits.to(got.dtype), 0.0)
    if not close(*unchanged):
        return (f"with {setting} the kept tokens are right but their logits changed (by up to "
                f"{float((unchanged[0] - unchanged[1]).abs().max()):.3g}): leave them as they are — only the "
                "removed ones become -inf — so their relative probabilities stay the same")
    return None


def check_top_p_filter(ns) -> None:
    """The learner's filter against the package's on every case (``case.args = (logits, p)``); a wrong kept set
    raises :class:`~.core.Mismatch` (the answer's kept set, ``torch.isfinite`` of its output)."""
    function, name, cases = learner_function(ns, "top_p_filter"), "top_p_filter", top_p_cases(Draw())
    forbidden = {"the package's course_utils.decoding.top_p_filter": decoding.top_p_filter}

    def kept(answer, case):
        out = attempt(answer, name, snapshot(case.args), {}, forbidden)
        return torch.isfinite(out) if isinstance(out, torch.Tensor) else out

    for case in cases:
        logits, p = case.args
        expected = decoding.top_p_filter(logits.clone(), p)
        args = snapshot(case.args)
        before = {"logits": snapshot(args[0]), "p": args[1]}
        got = call_learner(function, name, case.description, *args, forbidden=forbidden)
        check_inputs_kept(before, {"logits": args[0], "p": args[1]}, name, case.description)
        problem = filter_problem(got, expected, logits, name, f"p={p}")
        if isinstance(problem, KeptSet):
            raise Mismatch(f"on {case.description}: {problem}.", case, torch.isfinite(got.detach()), function, kept,
                           lambda a, b: isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                           and a.shape == b.shape and bool(torch.equal(a, b)), probes=tuple(cases))
        if problem:
            raise ExerciseFailure(f"on {case.description}: {problem}.")


def keep_only(logits: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~keep, NEG_INF)


def nucleus_p(draw: Draw, logits: torch.Tensor, low: float, high: float) -> float:
    """A ``p`` in ``[low, high]`` (two decimals) at least 2e-3 away from every row's cumulative sorted probabilities,
    so that every correct way of computing the nucleus (float32 or float64, any sort) keeps the same tokens."""
    options = [round(low + i * 0.01, 2) for i in range(int(round((high - low) / 0.01)) + 1)]
    draw.rng.shuffle(options)
    sums = torch.softmax(logits.double(), dim=-1).sort(dim=-1, descending=True).values.cumsum(dim=-1)
    return next((p for p in options if bool(((sums - p).abs() > 2e-3).all())), options[0])


def top_p_cases(draw: Draw) -> list[Case]:
    small, rows, vocab = draw.integer(5, 9), draw.integer(2, 4), draw.integer(12, 30)
    single = draw.randn(1, small, scale=2.0)
    largest = float(torch.softmax(single, dim=-1).max())
    below = nucleus_p(draw, single, 0.01, max(0.01, round(largest - 0.02, 2)))
    plain = draw.randn(rows, vocab, scale=2.0)
    spreads = draw.randn(rows + 1, vocab) * torch.tensor([0.3, 1.0, 3.0, 6.0, 2.0][:rows + 1])[:, None]
    n_forbidden = draw.integer(2, 4)
    forbidden = draw.randn(rows, vocab, scale=2.0)  # n_forbidden random tokens already -inf (e.g. [PAD], [BOS])
    forbidden[:, torch.randperm(vocab, generator=draw.generator())[:n_forbidden]] = NEG_INF
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


def nucleus_rules(logits: torch.Tensor, p: float) -> dict[str, torch.Tensor]:
    """The kept sets of typical wrong nucleus rules, for the diagnosis."""
    probs = torch.softmax(logits.double(), dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    before = sorted_probs.cumsum(dim=-1) - sorted_probs
    keep_sorted = before < p
    unsorted_before = probs.cumsum(dim=-1) - probs
    ascending, up = probs.sort(dim=-1)
    finite = torch.isfinite(logits)
    own, own_order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)  # in the logits' dtype
    return {  # "reaching": stops only once the mass before a token *exceeds* p
        "reaching": torch.zeros_like(finite).scatter(-1, own_order, own.cumsum(dim=-1) - own <= p) & finite,
        "including": torch.zeros_like(finite).scatter(-1, order, sorted_probs.cumsum(dim=-1) <= p) & finite,
        "unsorted": (unsorted_before < p) & finite,
        "not mapped back": keep_sorted & finite,
        "gathered": keep_sorted.gather(-1, order) & finite,
        "ascending": torch.zeros_like(finite).scatter(-1, up, ascending.cumsum(dim=-1) - ascending < p) & finite,
    }


def rule(name: str):
    """A top-p variant that keeps the tokens of the wrong nucleus rule ``name`` (see :func:`nucleus_rules`)."""
    return lambda logits, p: keep_only(logits, nucleus_rules(logits, p)[name])


TOP_P_MISTAKES = (
    Mistake("p=1.0 keeps every token", "p=1.0 must keep every token (the whole distribution): with float rounding the "
            "mass before the last tokens can reach 1, so keep a token while the mass before it is below p",
            variant=lambda logits, p: decoding.top_p_filter(logits, p) if p < 1 else keep_only(logits, torch.isfinite(
                decoding.top_k_filter(logits, int(torch.isfinite(logits).sum(-1).min()) - 1))),
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
    name="Training pairs from a token stream, found from their symptom",
    variables=("training_pairs",),
    checker=check_training_pairs,
    hints=("Print one row of the colleague's inputs and targets side by side as tokens: at position t, which token "
           "does the model read, and which is it asked for? Can a causal model see that token?",
           "Build the input positions, one row per start: start + 0, 1, …, block - 1 (broadcast a column of starts "
           "against a range). The inputs are the stream at those positions, the targets the stream one position "
           "further on; both (rows, block). Return the pair (inputs, targets)."),
    solution=solution_of("lesson08", "training_pairs"),
    mistakes=PAIRS_MISTAKES,
    success="Correct! Each position is now asked for the token after the one it reads. The colleague's targets were "
            "the tokens one *before* the inputs: with the causal mask a position sees its predecessor, so the model "
            "copied it and the loss fell towards 0. Rerun their loop with your function and compare its loss with "
            "your prediction.",
)

q2 = Exercise(
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


# ---------------------------------------------------------------------------- q3 (capstone): sampling with a KV cache
GENERATE_PARAMETERS = ("(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None, "
                       "forbidden_ids=())")


GENERATE_FORBIDDEN = {  # the package's decoders and logits pipeline (its filters, or the learner's, may be used)
    "the package's course_utils.decoding.generate": decoding.generate,
    "the package's course_utils.decoding.next_token_logits": decoding.next_token_logits,
    "the package's course_utils.decoding.greedy_decode": decoding.greedy_decode,
    "the package's course_utils.decoding.beam_search": decoding.beam_search}


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


@dataclass
class ModelCall:
    """What the stand-in model saw on one call of the learner's loop."""

    training: bool
    grad: bool
    length: int
    cache: Any


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

    def arguments(self) -> dict:
        """The keyword arguments of one call: the settings, and a fresh generator seeded with the case's seed."""
        arguments = dict(self.settings)
        if self.sampling:
            arguments["generator"] = torch.Generator().manual_seed(self.seed)
        return arguments


def lm_factory(config, seed: int, logit_scale: float):
    """Fresh models with one set of weights (the final norm's gain scaled, so the next-token distributions are
    neither flat nor one-hot), in train mode with dropout on; each :class:`~course_utils.language_model.DecoderOnlyLM`
    records every call: its mode, whether gradients were on, how many tokens it was fed and the cache it was given."""
    from ..language_model import DecoderOnlyLM

    class RecordingLM(DecoderOnlyLM):
        def forward(self, ids, cache=None):
            length = ids.size(-1) if isinstance(ids, torch.Tensor) and ids.dim() else 0
            self.calls.append(ModelCall(any(m.training for m in self.modules()), torch.is_grad_enabled(), length,
                                        cache))  # every submodule: model.training = False is not eval()
            return super().forward(ids, cache)

    def make() -> nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = RecordingLM(config)
        model.calls = []
        with torch.no_grad():
            model.norm.weight.mul_(logit_scale)
        return model.train()
    return make


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
        with torch.no_grad():  # the most probable first token of every row (what greedy would pick)
            firsts = make_model().eval()(prompt)[:, -1].argmax(dim=-1).tolist()
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


def run_generate(answer, case: GenerateCase) -> tuple:
    """An answer's tokens on ``case`` — the learner's or a declared variant's, on a fresh model — as a key
    (``("crash",)`` if it raised)."""
    try:
        return as_key(call_learner(lambda: answer(case.make_model(), case.prompt.clone(), case.max_new_tokens,
                                                  **case.arguments()), "generate", case.description,
                                   forbidden=GENERATE_FORBIDDEN))
    except ExerciseFailure:
        return ("crash",)


def telling_seed(draw: Draw, case: GenerateCase, tries: int = 4) -> int:
    """A generator seed under which as many declared mistakes as a few tries find draw other tokens than the
    package (so each is rejected) and other tokens than one another (so each is named without ambiguity)."""
    def planted_key(variant) -> tuple:  # a variant's tokens on the checker's own model (eval mode)
        try:
            return as_key(variant(case.reference_model(), case.prompt.clone(), case.max_new_tokens,
                                  **case.arguments()))
        except RuntimeError:  # every token of a row removed: the multinomial draw fails, as the learner's would
            return ("crash",)

    best, best_score = 0, (-1, -1)
    for _ in range(tries):
        case.seed = draw.integer(0, 2 ** 30)
        right = as_key(package_generate(case))
        outcomes = [planted_key(mistake.variant) for mistake in Q3_MISTAKES]
        score = (sum(outcome != right for outcome in outcomes), len(set(outcomes + [right])))
        if score > best_score:
            best, best_score = case.seed, score
    return best


def package_generate(case: GenerateCase) -> torch.Tensor:
    """What :func:`course_utils.decoding.generate` returns for ``case`` (no repetition penalty, no [EOS] stop, the
    case's forbidden ids)."""
    arguments = case.arguments()
    forbidden = tuple(arguments.pop("forbidden_ids", ()))
    return decoding.generate(case.make_model(), case.prompt.clone(), case.max_new_tokens, forbidden_ids=forbidden,
                             **arguments)


def planted(order=("forbid", "temperature", "top_k", "top_p"), position: int = -1, sampler: str = "multinomial",
            temperature_op: str = "divide"):
    """The capstone's loop with one typical change (the order of the steps, the position read, the sampler, the
    temperature's operation): the variants of the table below. With the defaults it gives the package's tokens."""
    def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None,
                 forbidden_ids=()):
        model.eval()
        ids, cache = prompt_ids.clone(), model.new_cache()
        step, forbidden = ids, torch.tensor(list(forbidden_ids), dtype=torch.long)
        with torch.no_grad():
            for _ in range(max_new_tokens):
                logits = model(step, cache)[:, position].float()
                for operation in order:
                    if operation == "forbid" and len(forbidden):
                        logits = logits.index_fill(-1, forbidden, NEG_INF)
                    elif temperature == 0 or operation == "forbid":
                        continue
                    elif operation == "temperature":
                        logits = logits / temperature if temperature_op == "divide" else logits * temperature
                    elif operation == "top_k" and top_k is not None:
                        logits = decoding.top_k_filter(logits, top_k)
                    elif operation == "top_p" and top_p is not None:
                        logits = decoding.top_p_filter(logits, top_p)
                if temperature == 0 or sampler == "argmax":
                    token = logits.argmax(dim=-1)
                else:
                    token = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(1)
                ids = torch.cat([ids, token[:, None]], dim=1)
                step = token[:, None]
        return ids
    return generate


Q3_MISTAKES = (
    Mistake("forbidden ids ignored", "a forbidden id was generated: set the logits of forbidden_ids to -inf at every "
            "step, before anything else", planted(order=("temperature", "top_k", "top_p"))),
    Mistake("temperature ignored", "the temperature changed nothing: divide the logits by it (after the forbidden "
            "ids, before the filters)", planted(order=("forbid", "top_k", "top_p"))),
    Mistake("top_k ignored", "top_k was ignored: keep only the k largest logits (after the temperature, before "
            "top-p)", planted(order=("forbid", "temperature", "top_p"))),
    Mistake("top_p ignored", "top_p was ignored: keep only the nucleus (after top-k)",
            planted(order=("forbid", "temperature", "top_k"))),
    Mistake("forbidden ids set last", "the forbidden ids were set to -inf after the temperature and the filters: "
            "set them first, so top-k and top-p choose among the allowed tokens only (a forbidden id among the top "
            "k leaves fewer than k)", planted(order=("temperature", "top_k", "top_p", "forbid"))),
    Mistake("temperature after the filters", "the temperature was applied after the filters: divide by it first "
            "(after the forbidden ids) — top-p measures the nucleus of the distribution the temperature reshaped",
            planted(order=("forbid", "top_k", "top_p", "temperature"))),
    Mistake("top-p before top-k", "top-p ran before top-k: the order is top-k first, then top-p on what top-k kept",
            planted(order=("forbid", "temperature", "top_p", "top_k"))),
    Mistake("temperature multiplied", "you multiplied the logits by the temperature: divide them (below 1 "
            "sharpens, above 1 flattens)", planted(temperature_op="multiply")),
    Mistake("first position read", "the first step read the logits of the prompt's *first* position: the next "
            "token is scored at the last position, logits[:, -1]", planted(position=0)),
    Mistake("arg-max instead of a draw", "you took the arg-max although the temperature is not 0: sample, "
            "torch.multinomial(probs, 1, generator=generator)", planted(sampler="argmax")),
)


def cache_problem(calls: list[ModelCall], case: GenerateCase) -> str | None:
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


def mismatch_message(case: GenerateCase, got: torch.Tensor) -> str:
    """The contract's own message where the learner's tokens differ from the package's (no declared mistake)."""
    expected, prompt_len = case.expected, case.prompt.size(1)
    if not case.sampling:
        return (f"greedy decoding (temperature=0) picks the arg-max of the last position's logits, the forbidden ids "
                f"excluded: expected {expected.tolist()}, got {got.tolist()}")
    row, step = (got != expected).nonzero()[0].tolist()
    return (f"row {row}, new token {step - prompt_len + 1}: the package draws {int(expected[row, step])}, yours "
            f"{int(got[row, step])} (expected {expected.tolist()}, got {got.tolist()}). Each step: the last "
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
                               forbidden=GENERATE_FORBIDDEN, error_hint=generate_error_hint, **case.arguments())
        except ExerciseFailure as failure:
            problem = cache_problem(model.calls, case)
            if problem:
                raise ExerciseFailure(f"on {where}: {problem}.") from None
            forbid_last = next(m for m in Q3_MISTAKES if m.name == "forbidden ids set last")
            if "probability tensor" in str(failure) and run_generate(forbid_last.variant, case) == ("crash",):
                raise ExerciseFailure(f"on {where}: your `generate` crashed where every token the filters kept "
                                      f"was forbidden: {forbid_last.message}.") from None
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
            failure = Mismatch(f"on {where}: {mismatch_message(case, got)}.", case, as_key(got), function,
                               run_generate, operator.eq, probes=tuple(probes(case)) if case.sampling else (),
                               expected=as_key(expected))
            if case.sampling and not any(mistake.names(failure) for mistake in Q3_MISTAKES):
                # the generator's use, tried where every draw counts: the case's model at temperature 1, four
                # prompts (same seed: same tokens whatever the global random state; another seed: other tokens)
                hot = replace(probes(case)[1], settings={**case.settings, "temperature": 1.0})
                check_generator_use(lambda generator, hot=hot: function(hot.make_model(), hot.prompt.clone(),
                                                                        hot.max_new_tokens,
                                                                        **{**hot.arguments(), "generator": generator}),
                                    "generate", f"{where}, and the same model at temperature 1 with "
                                                f"{hot.prompt.size(0)} prompts")
            raise failure


q3 = Exercise(
    name="Capstone: sampling with a KV cache",
    variables=("generate",),
    checker=check_generate,
    mistakes=Q3_MISTAKES,
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
    solution=solution_of("lesson08", "top_k_filter", "generate"),
    success="Correct! The same tokens as course_utils.decoding.generate for greedy decoding and for sampling with "
            "temperature, top-k and top-p, forbidden ids excluded — through the KV cache, one token per call, in "
            "eval mode without gradients, drawn from the generator you were given.",
    task=(
        "## Capstone · Sampling with a KV cache (about 30 minutes)\n\n"
        "`generate_simple` feeds the whole row to the model for every new token. Write `generate(model, "
        "prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None, forbidden_ids=())` "
        "that feeds each token once, through `cache = model.new_cache()` (section 3: `model(ids, cache)` reads only "
        "the new tokens). It returns what `generate_simple` returns without penalty or [EOS] stop: `(batch, "
        "prompt_len + max_new_tokens)` long ids, the same tokens for the same seeded `generator` — a cache changes "
        "the work, never the result. Top-p: yours or `decoding.top_p_filter`. The model arrives in training mode: "
        "call `model.eval()` and generate under `torch.no_grad()`.\n\n"
        "Checked: your tokens equal `decoding.generate`'s, seeded alike, on small random GPTs, one model call per "
        "new token. Stuck? `q3.solution()`, or move on with `from course_utils.decoding import generate`."
    ),
    starter=(
        "def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None,\n"
        "             forbidden_ids=()):\n"
        "    raise NotImplementedError  # your code here\n"
    ),
)
