"""Lesson 08's exercises: training pairs from a token stream (q1), top-p (q2), generating past the context (q3)."""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

from .. import decoding, losses, seed_everything
from ..config import TransformerConfig
from ..language_model import DecoderOnlyLM
from .asserts import (
    Case,
    Draw,
    attempt,
    call_learner,
    check_function,
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
    """The package's shift on windows of ``block + 1`` ids: ``(inputs, targets)``, each ``(len(starts), block)``."""
    return losses.shift_for_lm(stream[starts[:, None] + torch.arange(block + 1)])


def stream_cases(draw: Draw) -> list[Case]:
    """A stream of distinct ids (every offset shows), starts including 0 and the last valid one, random blocks."""
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
    """The bug named first (``colleague_target_offset``, read when written), then the pairs on random streams."""
    offset = ns.get("colleague_target_offset")
    if isinstance(offset, torch.Tensor) and offset.numel() == 1:
        offset = offset.item()
    if offset is not None and offset != COLLEAGUE_OFFSET:
        raise ExerciseFailure(OFFSET_MISTAKES.get(offset, f"`colleague_target_offset` is {offset!r}: print one row "
                                                          "of their pairs as tokens and compare targets with inputs."))
    cases = stream_cases(draw := Draw())
    check_function(learner_function(ns, "training_pairs"), training_pairs_reference, cases, "training_pairs",
                   probes=cases, twins=stream_cases(draw.twin()),
                   forbidden={"the package's course_utils.losses.shift_for_lm": losses.shift_for_lm})
    if offset is None:
        raise ExerciseFailure("your pairs are right; now name the colleague's bug in `colleague_target_offset`: their "
                              "target at position t is stream[start + t + offset] for which offset?")


def colleague_pairs(stream: torch.Tensor, starts: torch.Tensor, block: int):
    """The colleague's pairs of exercise 1 (what is wrong with them is the exercise; see ``PAIRS_MISTAKES``)."""
    idx = starts[:, None] + torch.arange(block)
    return stream[idx], stream[idx - 1]


def colleague_train(make_pairs, stream: torch.Tensor, config, steps: int = 100, block: int = 32) -> float:
    """Exercise 1's loop (seed 0, AdamW at 1e-2, 32 windows a step); prints the loss every 25 steps, returns it."""
    seed_everything(0)
    model = DecoderOnlyLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    draw = torch.Generator().manual_seed(0)
    for step in range(1, steps + 1):
        starts = torch.randint(1, len(stream) - block - 1, (32,), generator=draw)
        inputs, targets = make_pairs(stream, starts, block)
        loss = nn.functional.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 25 == 0:
            print(f"step {step}: loss {loss.item():.3f}")
    return loss.item()


COLLEAGUE_OFFSET = -1   # the colleague's target at position t: stream[start + t - 1]
OFFSET_MISTAKES = {     # wrong names of their bug (a number the check reads, so declared here, not as variants)
    1: "`colleague_target_offset` is 1: that is the right target (the next token). Look at their printed row again: "
       "each of their targets appears among the inputs one position *earlier*, not later",
    0: "`colleague_target_offset` is 0: then every target would equal its input. In their printed row each target "
       "is the input one position before",
}
PAIRS = training_pairs_reference  # the table's variants are built from it
PAIRS_MISTAKES = (
    Mistake("not a pair", "`training_pairs` should return a pair (inputs, targets)",
            variant=lambda stream, starts, block: PAIRS(stream, starts, block)[0],
            shows=lambda case, got, _: not (isinstance(got, (tuple, list)) and len(got) == 2)),
    Mistake("previous token", "the colleague's bug: targets stream[i - 1], the token *before* the input, which a "
            "causal position sees, so the model copies it. The target of stream[i] is stream[i + 1]",
            variant=colleague_pairs),
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
KEPT = "should keep tokens"  # the phrase of a wrong kept set (a Mismatch the table of mistakes may name)


def filter_problem(got, expected: torch.Tensor, logits: torch.Tensor, name: str, setting: str) -> str | None:
    """What is wrong with a filter's result, or ``None``."""
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
        return f"with {setting}, row {row} {KEPT} {listed[0]}, yours keeps {listed[1]}"
    unchanged = torch.where(kept, got, 0.0), torch.where(kept, logits.to(got.dtype), 0.0)
    if not close(*unchanged):
        return (f"with {setting} the kept tokens are right but their logits changed (by up to "
                f"{float((unchanged[0] - unchanged[1]).abs().max()):.3g}): leave them as they are — only the "
                "removed ones become -inf — so their relative probabilities stay the same")
    return None


def check_top_p_filter(ns) -> None:
    function, name, cases = learner_function(ns, "top_p_filter"), "top_p_filter", top_p_cases(Draw())
    forbidden = {"the package's course_utils.decoding.top_p_filter": decoding.top_p_filter}

    def kept(answer, case):
        out = attempt(answer, name, snapshot(case.args), {}, forbidden)
        return torch.isfinite(out) if isinstance(out, torch.Tensor) else out

    for case in cases:
        logits, p = case.args
        expected = decoding.top_p_filter(logits.clone(), p)
        args = snapshot(case.args)
        got = call_learner(function, name, case.description, *args, forbidden=forbidden)
        check_inputs_kept({"logits": logits, "p": p}, {"logits": args[0], "p": args[1]}, name, case.description)
        problem = filter_problem(got, expected, logits, name, f"p={p}")
        if problem and KEPT in problem:
            raise Mismatch(f"on {case.description}: {problem}.", case, torch.isfinite(got.detach()), function, kept,
                           lambda a, b: isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                           and a.shape == b.shape and bool(torch.equal(a, b)), probes=tuple(cases))
        if problem:
            raise ExerciseFailure(f"on {case.description}: {problem}.")


def keep_only(logits: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~keep, NEG_INF)


def nucleus_p(draw: Draw, logits: torch.Tensor, low: float, high: float) -> float:
    """A ``p`` in ``[low, high]`` 2e-3 away from every cumulative sorted probability (every right rule agrees)."""
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
    n_forbidden, forbidden = draw.integer(2, 4), draw.randn(rows, vocab, scale=2.0)  # some ids -inf ([PAD], [BOS])
    forbidden[:, torch.randperm(vocab, generator=draw.generator())[:n_forbidden]] = NEG_INF
    wide = draw.randn(rows, vocab, scale=2.0).double()
    p_plain, p_spreads = nucleus_p(draw, plain, 0.5, 0.9), nucleus_p(draw, spreads, 0.3, 0.95)
    p_forbidden, p_wide = nucleus_p(draw, forbidden, 0.4, 0.9), nucleus_p(draw, wide, 0.4, 0.9)
    p_large = nucleus_p(draw, plain * 100, 0.5, 0.9)
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
        Case(f"{rows} rows of {vocab} logits in the hundreds, p={p_large} (a softmax without its maximum subtracted "
             "overflows)", (plain * 100, p_large)),
    ]


def exact_mass_case(draw: Draw, p: float) -> Case:
    """Probabilities 1/2, 1/4, 1/8, 1/16, 1/16 (exact in float32) among forbidden ids, a ``p`` they reach exactly."""
    vocab = draw.integer(7, 11)
    logits = torch.full((2, vocab), NEG_INF)
    for row in range(2):
        columns = torch.randperm(vocab, generator=draw.generator())[:5]
        logits[row, columns] = torch.tensor([-1.0, -2.0, -3.0, -4.0, -4.0]) * math.log(2)
    return Case(f"2 rows of {vocab} logits with probabilities 1/2, 1/4, 1/8, 1/16, 1/16 (the rest forbidden), p={p} — "
                "the most probable tokens reach p exactly", (logits, p))


def nucleus_rules(logits: torch.Tensor, p: float) -> dict[str, torch.Tensor]:
    probs = torch.softmax(logits.double(), dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    keep_sorted = sorted_probs.cumsum(dim=-1) - sorted_probs < p
    ascending, up = probs.sort(dim=-1)
    finite = torch.isfinite(logits)
    own, own_order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)  # in the logits' dtype
    return {  # "reaching": stops only once the mass before a token *exceeds* p
        "reaching": torch.zeros_like(finite).scatter(-1, own_order, own.cumsum(dim=-1) - own <= p) & finite,
        "including": torch.zeros_like(finite).scatter(-1, order, sorted_probs.cumsum(dim=-1) <= p) & finite,
        "unsorted": (probs.cumsum(dim=-1) - probs < p) & finite,
        "not mapped back": keep_sorted & finite,
        "gathered": keep_sorted.gather(-1, order) & finite,
        "ascending": torch.zeros_like(finite).scatter(-1, up, ascending.cumsum(dim=-1) - ascending < p) & finite,
    }


def rule(name: str):
    return lambda logits, p: keep_only(logits, nucleus_rules(logits, p)[name])


def overflowing_top_p(logits: torch.Tensor, p: float) -> torch.Tensor:
    exp = logits.exp()
    return keep_only(logits, decoding.top_p_filter((exp / exp.sum(dim=-1, keepdim=True)).log(), p).isfinite())


TOP_P_MISTAKES = (
    Mistake("softmax overflows", "your softmax overflowed on large logits: exp of a few hundred is inf in float32, "
            "and inf / inf is NaN. Subtract each row's largest logit first, or use torch.softmax",
            variant=overflowing_top_p),
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
    hints=("Look at the printed row of the colleague's pairs: at position t, which token does the model read, and "
           "which is it asked for? Can a causal model see that token?",
           "Input positions, one row per start: start + 0 … block - 1 (a column of starts plus a range). Inputs: the "
           "stream there; targets: one position further on; both (rows, block). Return (inputs, targets)."),
    solution=solution_of("lesson08", "colleague_target_offset", "training_pairs"),
    mistakes=PAIRS_MISTAKES,
    success="Correct! The colleague's targets were the tokens *before* the inputs, which a causal position sees: the "
            "model copied them. Rerun their loop with your function and compare its loss with your prediction.",
)

q2 = Exercise(
    name="Top-p (nucleus) filtering",
    variables=("top_p_filter",),
    checker=check_top_p_filter,
    hints=("Walk the tokens from the most to the least probable and add up their probabilities: when do you stop? "
           "Remember that the tokens were reordered on the way.",
           "1. softmax; 2. sort descending, keeping the indices; 3. the mass *before* each sorted token = cumsum minus "
           "its own probability: keep it while that mass is below p (the top token always stays, p = 1 keeps all); "
           "4. scatter the decision back to the token ids; 5. return a new tensor, removed logits float('-inf')."),
    solution=solution_of("lesson08", "top_p_filter"),
    mistakes=TOP_P_MISTAKES,
    success="Correct! The nucleus grows where the model is unsure and shrinks where it is confident.",
)


# ---------------------------------------------------------------------------- q3 (capstone): past the context
LONG_FORBIDDEN = {f"the package's course_utils.decoding.{f.__name__}": f for f in (decoding.generate,
                                                                                      decoding.greedy_decode)}


@dataclass
class LongCase:
    """A factory of fresh recording models (one set of weights, train mode), a prompt (<= max_len), a count."""

    description: str
    make_model: Any
    prompt: torch.Tensor
    max_new_tokens: int

    @property
    def fewest_positions(self) -> int:
        """Positions the task's rule feeds (prompt length <= max_len): cached while the row fits, then max_len each."""
        max_len, prompt_len = self.make_model.max_len, self.prompt.size(1)
        fitting = max_len - prompt_len + 1                   # tokens scored from a row of at most max_len
        return prompt_len + min(self.max_new_tokens, fitting) - 1 + max_len * max(0, self.max_new_tokens - fitting)


def lm_factory(config, seed: int):
    class RecordingLM(DecoderOnlyLM):
        def forward(self, ids, cache=None):
            self.calls.append((ids.size(-1) if isinstance(ids, torch.Tensor) and ids.dim() else 0,
                               any(m.training for m in self.modules()) or torch.is_grad_enabled()))
            return super().forward(ids, cache)

    def make() -> nn.Module:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = RecordingLM(config)
        model.calls = []
        with torch.no_grad():  # positions that weigh (so a shifted window shows) and few near-ties for the arg-max
            model.embedding.positions.table.weight.mul_(4.0)
            model.norm.weight.mul_(3.0)
        return model.train()
    make.max_len = config.max_len
    return make


def long_cases(draw: Draw) -> list[LongCase]:
    """Prompts of 1 and max_len tokens and a random batch, run past the context; the last again with another prompt."""
    cases = []
    for index in range(3):
        max_len, (heads, d_head) = draw.integer(5, 9), draw.distinct(2, 2, 6)   # a lesson-08 GPT, no padding id
        config = TransformerConfig(vocab_size=draw.integer(20, 60), d_model=heads * d_head, n_heads=heads,
                                   d_ff=draw.integer(8, 40), n_layers=draw.integer(1, 2), max_len=max_len,
                                   dropout=0.3, norm="pre", positional="learned", pad_id=None)
        batch = 1 if index < 2 else draw.integer(2, 3)
        prompt_len = (1, max_len, draw.integer(2, max_len - 1))[index]
        prompt = torch.randint(config.vocab_size, (batch, prompt_len), generator=draw.generator())
        n = max_len - prompt_len + draw.integer(4, 8)
        description = (f"a random GPT (vocab {config.vocab_size}, max_len {max_len}, {config.n_layers} block(s), "
                       f"handed over in train mode), prompt {batch} × {prompt_len}, max_new_tokens={n}")
        for _ in range(20):  # weights under which every declared mistake gives other tokens than the rule
            case = LongCase(description, lm_factory(config, draw.integer(0, 2 ** 30)), prompt, n)
            right = generate_long_reference(case.make_model(), prompt, n)
            if all(not torch.equal(m.variant(case.make_model(), prompt, n), right) for m in Q3_MISTAKES):
                break
        cases.append(case)
    vocab = case.make_model().config.vocab_size
    other = case.prompt
    while torch.equal(other, case.prompt):
        other = torch.randint(vocab, case.prompt.shape, generator=draw.generator())
    cases.append(LongCase(case.description.replace("prompt", "another prompt", 1), case.make_model, other,
                          case.max_new_tokens))
    return cases


@torch.no_grad()
def generate_long_reference(model, prompt_ids, max_new_tokens):
    """Greedy tokens, each scored from the row's last ``max_len`` tokens; no cache (the positions are counted apart)."""
    model.eval()
    ids = prompt_ids.long()
    for _ in range(max_new_tokens):
        token = model(ids[:, -model.config.max_len:])[:, -1].argmax(dim=-1)
        ids = torch.cat([ids, token[:, None]], dim=1)
    return ids


def slid_cache(short_window: bool = False):
    """The task's loop with the cache slid past max_len (or, ``short_window``, the window re-read one token short)."""
    def generate_long(model, prompt_ids, max_new_tokens):
        model.eval()
        max_len, ids, cache = model.config.max_len, prompt_ids.long(), model.new_cache()
        step = ids
        with torch.no_grad():
            for _ in range(max_new_tokens):
                if short_window and ids.size(1) > max_len:
                    logits = model(ids[:, 1 - max_len:])
                else:
                    if cache.length == max_len:
                        for layer in cache.self_attention:
                            layer.keys, layer.values = layer.keys[:, :, 1:], layer.values[:, :, 1:]
                    logits = model(step, cache)
                token = logits[:, -1].argmax(dim=-1)
                ids, step = torch.cat([ids, token[:, None]], dim=1), token[:, None]
        return ids
    return generate_long


Q3_MISTAKES = (
    Mistake("cache slid", "the cache was kept once the row passed max_len (its oldest position dropped): its keys "
            "and values were computed with each token's *old* position added, and from tokens that have left the "
            "window. When the window slides, every token's position changes, so nothing cached is valid: re-read "
            "the last max_len tokens", slid_cache()),
    Mistake("window one short", "past the context you scored from the last max_len - 1 tokens: the window holds "
            "max_len tokens, ids[:, -max_len:]", slid_cache(short_window=True)),
)


def run_long(answer, case: LongCase) -> tuple:
    try:
        got = call_learner(lambda: answer(case.make_model(), case.prompt.clone(), case.max_new_tokens),
                           "generate_long", case.description, forbidden=LONG_FORBIDDEN)
    except ExerciseFailure:
        return ("crash",)
    return tuple(got.flatten().tolist()) if isinstance(got, torch.Tensor) else ("not a tensor",)


PAST_CONTEXT = ("The model was fed more positions than its context holds: a cache cannot grow past max_len, and it "
                "cannot slide either — once the row is longer, feed the last max_len tokens without it")


def check_generate_long(ns) -> None:
    function = own_function(ns["generate_long"], "generate_long", "course_utils.decoding.generate")
    cases, runs = long_cases(Draw()), []
    for case in cases:  # the tokens on every case first, so that a declared mistake is named where it shows
        where, model, prompt = case.description, case.make_model(), snapshot(case.prompt)
        got = call_learner(function, "generate_long", where, model, prompt, case.max_new_tokens,
                           forbidden=LONG_FORBIDDEN,
                           error_hint=lambda error: PAST_CONTEXT if "max_len" in str(error) or "context" in str(error)
                           else None)
        check_inputs_kept({"prompt_ids": case.prompt}, {"prompt_ids": prompt}, "generate_long", where)
        if any(flag for _, flag in model.calls):
            raise ExerciseFailure(f"on {where}: the model ran in training mode or with gradients on: call "
                                  "model.eval() and generate under torch.no_grad() (dropout would change the tokens).")
        expected = generate_long_reference(case.make_model(), case.prompt, case.max_new_tokens)
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape or got.dtype != torch.long:
            raise ExerciseFailure(f"on {where}: return long ids of shape (batch, prompt_len + max_new_tokens) = "
                                  f"{tuple(expected.shape)}, the prompt first, got {show(got)}.")
        if not torch.equal(got, expected):
            row, step = (got != expected).nonzero()[0].tolist()
            raise Mismatch(f"on {where}: row {row}, token {step}: expected {int(expected[row, step])}, got "
                           f"{int(got[row, step])} (expected {expected.tolist()}, got {got.tolist()}). Greedy: the "
                           "arg-max of the last position's logits; past max_len, from the last max_len tokens.",
                           case, tuple(got.flatten().tolist()), function, run_long, operator.eq,
                           probes=tuple(c for c in cases if c is not case), expected=tuple(expected.flatten().tolist()))
        runs.append((case, model.calls))
    for case, calls in runs:
        fed, fewest = sum(length for length, _ in calls), case.fewest_positions
        if fed != fewest:
            per_call = ", ".join(str(length) for length, _ in calls[:10])
            raise ExerciseFailure(f"on {case.description}: your tokens are right, but the model was fed {fed} "
                                  f"positions in all (per call: {per_call} …) where the rule needs {fewest}: while "
                                  "the row fits (at most max_len tokens) feed each token once through a KV cache; "
                                  "past that, one full window of max_len per new token.")


q3 = Exercise(
    name="Capstone: generating past the context",
    variables=("generate_long",),
    checker=check_generate_long,
    mistakes=Q3_MISTAKES,
    hints=("Two phases. While the row holds at most max_len tokens, it is section 5's loop through a cache. After "
           "that: a cached key was computed from its token *plus its position*; where are they after one slide?",
           "Keep `cache = model.new_cache()` and feed the newest token while ids.size(1) <= max_len. Once the row "
           "is longer, call model(ids[:, -max_len:]) without a cache and take the last position's arg-max."),
    solution=solution_of("lesson08", "generate_long"),
    success="Correct! Past max_len every token of the window moves to a new position, so each new token costs a "
            "full window. Run the next cell to compare your prediction.",
    task=(
        "## Capstone · Generating past the context (about 30 minutes)\n\n"
        "The model has positions 0 … max_len − 1 (64 here), so `decoding.generate` refuses to go past them. Write "
        "`generate_long(model, prompt_ids, max_new_tokens)`: greedy decoding from a `(batch, P)` prompt without "
        "padding, P ≤ max_len, for any `max_new_tokens`, returning `(batch, P + max_new_tokens)` long ids. Each "
        "next token is the arg-max of the last position's logits, scored from the whole row while it holds at most "
        "max_len tokens, then from its last max_len tokens read as positions 0 … max_len − 1 (a sliding window). "
        "Feed the model as few positions as this rule allows: a KV cache while the row fits; past that, decide "
        "what the cache can keep. Call `model.eval()`; work under `torch.no_grad()`.\n\n"
        "First predict how many positions it feeds for `The default value of the` (7 tokens with `[BOS]`) and 150 "
        "new tokens.\n\n"
        "Checked: your tokens and positions fed, on small random GPTs. Stuck? `q3.hint()`, `q3.solution()`, or "
        "`from course_utils.exercises.lesson08 import generate_long_reference`."
    ),
    starter=(
        "def generate_long(model, prompt_ids, max_new_tokens):\n"
        "    raise NotImplementedError  # your code here\n"
    ),
)
