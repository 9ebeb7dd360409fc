"""Exercises of notebook 05: the token-99 rule at 8 ids, masked max pooling, the capstone (gradient accumulation)."""
from __future__ import annotations

import copy
import functools
import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import TransformerConfig
from ..models import TransformerClassifier
from ..small_loop import train_steps
from ..tokenization import N_SPECIAL_TOKENS, PAD_ID
from ..training import make_optimizer, make_scheduler
from .asserts import (
    Case,
    Draw,
    Planted,
    Raised,
    attempt,
    check_function,
    check_input_gradients,
    check_inputs_kept,
    close,
    difference,
    max_difference,
    own_function,
    snapshot,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of

# ---------------------------------------------------------------------------- q1: P(token present)

def presence_probability(vocab_size: int, seq_len: int) -> float:
    """P(a given token in ``seq_len`` uniform draws from ``vocab_size``): 1 − (1 − 1/V)^n, precise for huge V."""
    return -math.expm1(seq_len * math.log1p(-1 / vocab_size))


def as_number(value) -> float | None:   # a tensor is no number: the task asks for a float
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


P = presence_probability
PRESENCE_PROBES = [Case(f"vocab_size {v}, seq_len {n}", (v, n)) for v, n in ((10, 3), (7, 20), (1000, 32), (3, 1))]


def prediction(ns, name: str, kind: type, what: str):
    value = ns.get(name)
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ExerciseFailure(f"your function is right; now write your prediction in `{name}` ({what}), before "
                              "the check measures it.")
    return value


LAST_STEP = 150


@functools.lru_cache(maxsize=1)
def rule_runs_8_tokens() -> tuple[int, tuple[tuple[int, int | None, int], ...]]:
    """Section 2's run at 8 ids: held-out positives; per seed 0-2 (seed, first step with recall > 0, positives seen)."""
    def sequences(n, generator):
        ids = torch.randint(7, 1000, (n, 8), generator=generator)
        return torch.cat([torch.full((n, 1), 2), ids], 1), (ids == 99).any(1).long()

    generator = torch.Generator().manual_seed(0)
    batches = [sequences(32, generator) for _ in range(LAST_STEP)]
    held_out, truth = sequences(1000, torch.Generator().manual_seed(1))
    config = TransformerConfig(vocab_size=1000, d_model=128, n_heads=4, d_ff=512, n_layers=2, max_len=64, dropout=0.1)
    runs = []
    with torch.random.fork_rng(devices=[]):   # lesson 00's loop at a constant rate, one pass over the batches
        for seed in range(3):
            torch.manual_seed(seed)
            model = TransformerClassifier(config, n_classes=2)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
            stream, first = iter(batches), None
            for step in range(15, LAST_STEP + 1, 15):
                train_steps(model, stream.__next__, F.cross_entropy, optimizer, 15)
                with torch.no_grad():
                    if bool((model.eval()(held_out).argmax(-1)[truth == 1] == 1).any()):
                        first = step
                        break
            seen = sum(int(labels.sum()) for _, labels in batches[:first or LAST_STEP])
            runs.append((seed, first, seen))
    return int(truth.sum()), tuple(runs)


def check_p_token_present(ns) -> None:
    # no position, one position, small, medium, "expected count above 1", huge (where float32 or rounding shows)
    draw = Draw()
    small_vocab, small_len = draw.distinct(2, 3, 12)
    count_vocab = draw.integer(5, 40)
    sizes = [
        (draw.integer(2, 60), 0, "seq_len 0 (no position at all)"),
        (draw.integer(2, 60), 1, "seq_len 1 (a single position)"),
        (small_vocab, small_len, ""),
        (draw.integer(200, 5000), draw.integer(10, 150), ""),
        (count_vocab, draw.integer(2 * count_vocab, 10 * count_vocab), "seq_len > vocab_size"),
        (draw.integer(10 ** 6, 10 ** 9), draw.integer(10 ** 5, 10 ** 6), "a huge vocabulary and length"),
    ]
    cases = [Case(f"vocab_size {vocab}, seq_len {length}" + (f" — {note}" if note else ""), (vocab, length))
             for vocab, length, note in sizes]
    check_function(ns["p_token_present"], presence_probability, cases, "p_token_present",
                   probes=PRESENCE_PROBES, atol=1e-12, rtol=1e-6)
    steps = f"a step: 15, 30, ..., {LAST_STEP}, or {LAST_STEP + 15} for 'still 0 at step {LAST_STEP}'"
    guess = prediction(ns, "recall_leaves_0_at", int, steps)
    if not 0 < guess <= LAST_STEP + 15:
        raise ExerciseFailure(f"`recall_leaves_0_at` is {guess}: write {steps}.")
    share, (positives, runs) = presence_probability(993, 8), rule_runs_8_tokens()
    print(f"8 ids per sequence: token 99 in {share:.2%} of them, {32 * share:.2f} per batch of 32 on average (32 ids: "
          f"{presence_probability(993, 32):.2%}, {32 * presence_probability(993, 32):.2f}). Section 2's model and "
          f"recipe, evaluated every 15 steps on 1,000 held-out sequences; only {positives} contain token 99, so "
          f"'recall leaves 0' means the model catches at least one of those {positives}:")
    for seed, first, seen in runs:
        off = abs(guess - (first or LAST_STEP + 15)) > 15
        print(f"  model seed {seed}: recall of class 1 leaves 0 at step {first or f'> {LAST_STEP}'}, after "
              f"{seen} token-99 training sequences" + ("  <- your prediction is off by more than 15 steps" if off
                                                       else "  (your prediction: within 15 steps)"))
    print(f"You predicted step {guess}; at 32 ids (section 2, seed 0) recall left 0 at step 90, after about "
          f"{round(90 * 32 * presence_probability(993, 32))} token-99 sequences. Read the steps against the number "
          "of token-99 sequences each model had seen by then.")


PRESENCE_MISTAKES = (
    Mistake("expected count", "seq_len / vocab_size is the *expected number* of occurrences, not the probability of "
            "at least one (it exceeds 1 for long sequences). Use the complement: 1 − P(no position holds the token)",
            variant=lambda v, n: n / v),
    Mistake("absent", "that is the probability that the token is *absent* from every position; the question asks "
            "for present at least once: 1 − that", variant=lambda v, n: 1 - P(v, n)),
    Mistake("every position", "that is the chance of the token at every position at once; present at least once is "
            "the complement of absent everywhere", variant=lambda v, n: (1 / v) ** n),
    Mistake("one position", "that is the chance of the token at one given position; with more positions the chance "
            "of seeing it somewhere grows", variant=lambda v, n: 1 / v),
    Mistake("percentage", "that is a percentage; return the probability itself, a number between 0 and 1",
            variant=lambda v, n: 100 * P(v, n)),
    Mistake("Poisson approximation", "1 − exp(−seq_len/vocab_size) is only the large-vocabulary approximation; "
            "compute the exact probability from the chance that one position misses the token",
            variant=lambda v, n: -math.expm1(-n / v)),
    Mistake("off by one", "the exponent is off by one: each of the seq_len positions contributes one factor",
            variant=lambda v, n: P(v, n - 1),
            shows=lambda case, got, _: as_number(got) is not None and any(
                math.isclose(got, P(case.args[0], case.args[1] + k), rel_tol=1e-6, abs_tol=1e-12) for k in (-1, 1))),
    Mistake("vocabulary size hard-coded", "your result does not change with vocab_size: use the argument, not a fixed "
            "vocabulary size", variant=lambda v, n: P(1000, n),
            shows=lambda case, got, answer: as_number(answer(10, 3)) == as_number(answer(1000, 3)) is not None),
    Mistake("length hard-coded", "your result does not change with seq_len: use the argument, not a fixed length",
            variant=lambda v, n: P(v, 10),
            shows=lambda case, got, answer: as_number(answer(10, 3)) == as_number(answer(10, 20)) is not None),
    Mistake("float32 arithmetic", "right on small inputs, but on a huge vocabulary precision is lost in float32 "
            "(torch.tensor's default dtype, or np.float32), where 1 − 1/vocab_size is rounded; compute with Python "
            "floats (float64)", variant=lambda v, n: float(1 - (1 - 1 / torch.tensor(float(v))) ** n),
            shows=lambda case, got, answer: as_number(got) is not None and case.args[0] > 100 and all(
                math.isclose(answer(*probe.args), P(*probe.args), rel_tol=1e-5) for probe in PRESENCE_PROBES[:2])),
    Mistake("rounded", "your probability looks rounded: return it unrounded",
            variant=lambda v, n: round(P(v, n), 3),
            shows=lambda case, got, _: as_number(got) is not None and any(
                math.isclose(got, round(P(*case.args), d), abs_tol=1e-15) for d in range(1, 7))),
)


# ---------------------------------------------------------------------------- q2: masked max pooling

def masked_max_pool_reference(hidden: torch.Tensor, ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """``hidden (batch, seq, d_model)``, ``ids (batch, seq)`` → ``(batch, d_model)``: each feature's max over the
    real tokens (``[CLS]`` included); ``[PAD]`` never wins. The exercise's own reference."""
    return hidden.masked_fill((ids == pad_id)[..., None], float("-inf")).amax(dim=1)


def pool_case(draw: Draw, lengths: list[int], seq: int, d_model: int, pad_id: int,
              dtype: torch.dtype = torch.float32, note: str = "") -> Case:
    """Row ``i``: ``lengths[i]`` real tokens (0 among them when it is not the pad id), then ``pad_id``; [PAD] +20."""
    ids = draw.randint(0, 29, (len(lengths), seq))
    ids = ids + (ids >= pad_id).long()                               # every id but pad_id
    for row, length in enumerate(lengths):
        if pad_id != 0:
            ids[row, draw.integer(0, length - 1)] = 0                # 0 is an ordinary token here
        ids[row, length:] = pad_id
    hidden = draw.randn(len(lengths), seq, d_model).to(dtype)
    hidden = torch.where((ids == pad_id)[..., None], hidden + 20.0, hidden)
    return Case(f"batch {len(lengths)}, seq {seq}, d_model {d_model}, pad_id {pad_id} (real tokens per row: "
                f"{', '.join(map(str, lengths))}){' — ' + note if note else ''}", (hidden, ids), {"pad_id": pad_id})


def max_pool_cases(draw: Draw) -> list[Case]:
    """Edge rows first (no padding, one real token); pad id 0, another pad id, float64; all real values negative."""
    batch, seq, d_model = draw.distinct(3, 3, 10)
    other_pad = draw.integer(1, 9)

    def lengths() -> list[int]:
        rows = [seq, 1] + [draw.integer(1, seq) for _ in range(batch - 2)]
        draw.rng.shuffle(rows)
        return rows

    cases = [
        pool_case(draw, [seq], seq, d_model, 0, note="no padding"),
        pool_case(draw, [1], seq, d_model, 0, note="all padding but one token"),
        pool_case(draw, lengths(), seq, d_model, 0),
        pool_case(draw, lengths(), seq, d_model, other_pad, note="0 is an ordinary token here"),
        pool_case(draw, lengths(), seq, d_model, other_pad, torch.float64, note="float64 vectors"),
    ]
    hidden, ids = cases[2].args
    negative = torch.where((ids != 0)[..., None], -hidden.abs() - 0.1, hidden)
    return cases + [Case(cases[2].description + " — every real value negative", (negative, ids), dict(cases[2].kwargs))]


def check_masked_max_pool(ns) -> None:
    pool = ns["masked_max_pool"]
    draw = Draw()
    cases = max_pool_cases(draw)
    check_function(pool, masked_max_pool_reference, cases, "masked_max_pool", twins=max_pool_cases(draw.twin()),
                   scales=(1e3, 1e-3, 1e6))      # ×1e6: real values below a finite fill such as -1e4
    for case in (cases[2], cases[3], cases[-1]):
        check_input_gradients(pool, masked_max_pool_reference, case, "masked_max_pool", labels=("hidden",))


def padding(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    return (ids == pad_id)[..., None]


MAX = masked_max_pool_reference
MAX_POOL_MISTAKES = (
    Mistake(".squeeze() drops the batch axis", "pooling turns hidden (batch, seq, d_model) into (batch, d_model); "
            ".squeeze() also drops the batch axis when batch is 1: take the max over dim 1 instead",
            variant=lambda hidden, ids, pad_id=0: MAX(hidden, ids, pad_id).squeeze(),
            shows=lambda case, got, _: isinstance(got, torch.Tensor) and got.dim() == 1),
    Mistake("values and indices returned", "a max along a dimension returns two tensors, (values, indices): return "
            "only the values (`.values`, or use `amax`)",
            variant=lambda hidden, ids, pad_id=0: hidden.masked_fill(padding(ids, pad_id), float("-inf")).max(dim=1),
            shows=lambda case, got, _: isinstance(got, tuple)),
    Mistake("max over the feature axis", "you took the max over d_model, one number per token; pooling takes, for "
            "each feature, the max over the sequence axis (dim 1)",
            variant=lambda hidden, ids, pad_id=0: hidden.masked_fill(padding(ids, pad_id), float("-inf")).amax(-1),
            shows=lambda case, got, _: isinstance(got, torch.Tensor) and got.shape == case.args[1].shape),
    Mistake("pad_id ignored (hard-coded 0)", "you treated id 0 as padding although pad_id is another id: use the "
            "pad_id argument, never a hard-coded 0",
            variant=lambda hidden, ids, pad_id=0: MAX(hidden, ids, 0)),
    Mistake("padding not masked", "the max also runs over the [PAD] positions, so a padding vector can win: leave "
            "every position whose id is pad_id out of the max",
            variant=lambda hidden, ids, pad_id=0: hidden.amax(dim=1)),
    Mistake("padding filled with 0", "on a padded row whose real values of a feature are all negative, you "
            "return 0.0 for that feature: a value none of its real tokens has",
            variant=lambda hidden, ids, pad_id=0: hidden.masked_fill(padding(ids, pad_id), 0.0).amax(dim=1)),
    Mistake("padding filled with -1e4", "a finite fill such as -1e4 wins once every real value of a feature is "
            "below it (large activations): fill the padding with float('-inf')",
            variant=lambda hidden, ids, pad_id=0: hidden.masked_fill(padding(ids, pad_id), -1e4).amax(dim=1)),
    Mistake("mean instead of max", "that is mean pooling (the lesson's); this exercise asks, for each feature, the "
            "largest value over the real tokens",
            variant=lambda hidden, ids, pad_id=0: (hidden * ~padding(ids, pad_id)).sum(1)
            / (ids != pad_id).sum(1)[:, None]),
    Mistake("cls", "that is [CLS] pooling (position 0); this exercise asks for the max over the real tokens",
            variant=lambda hidden, ids, pad_id=0: hidden[:, 0]),
    Mistake("[CLS] excluded from the max", "you left out position 0 ([CLS]); it is a real token and counts like the "
            "others", variant=lambda hidden, ids, pad_id=0: MAX(hidden[:, 1:], ids[:, 1:], pad_id)),
    Mistake("inverted mask", "you took the max over the padding and skipped the real tokens: real tokens are "
            "ids != pad_id",
            variant=lambda hidden, ids, pad_id=0: MAX(hidden, torch.where(ids == pad_id, pad_id + 1, pad_id), pad_id)),
)


q1 = Exercise(
    name="Token 99 at 8 ids per sequence",
    variables=("p_token_present",),             # and the prediction, read by the check
    checker=check_p_token_present,
    hints=("Turn the question around: what is the chance that one position does *not* hold the token, and that "
           "none of the seq_len independent positions does?",
           "miss = 1 minus the chance of the token at one position; absent = miss to the power seq_len; the answer "
           "is 1 minus absent — returned as a Python float (checked on huge vocabularies too, so no float32).",
           "The prediction: at 8 ids, how many token-99 sequences does a batch of 32 hold on average? Write the step "
           "you expect, then let the check measure it."),
    solution=solution_of("lesson05", "p_token_present", "recall_leaves_0_at"),
    mistakes=PRESENCE_MISTAKES,
    success="Your probability is right. The reading of the steps above: at 8 ids each batch holds about a quarter as "
            "many token-99 sequences, yet recall left 0 near the step it did at 32 ids. Here the number of updates, "
            "not the number of token-99 sequences seen, sets the moment, on thin evidence: three seeds at 8 ids, one "
            "at 32, and a handful of held-out positives deciding each step.",
)

q2 = Exercise(
    name="Masked max pooling",
    variables=("masked_max_pool",),
    checker=check_masked_max_pool,
    hints=("Max pooling keeps, for each feature, the largest value along the sequence. A [PAD] position must never "
           "be that largest value — whatever the real values are, negative ones included.",
           "1) a (batch, seq, 1) boolean mask of the padding positions (ids equal to pad_id); 2) give those positions "
           "a value no real number can lose to (minus infinity), without changing hidden in place; 3) the max over "
           "the sequence axis, values only. Use the pad_id argument and keep the graph (no .item())."),
    solution=solution_of("lesson05", "masked_max_pool"),
    mistakes=MAX_POOL_MISTAKES,
)


# ---------------------------------------------------------------------------- q3 (capstone): gradient accumulation

@dataclass
class TrainingCase:   # one run: a tiny classifier, its batches, schedule and clipping
    description: str
    model: nn.Module
    batches: list
    peak_lr: float
    warmup: int
    total_steps: int
    clip: tuple             # () = leave clip_norm at its default; (value,) = pass it
    accumulate: int = 1     # batches per optimizer step


def training_case(draw: Draw, n_batches: int, clip: tuple, note: str, accumulate: int = 1) -> TrainingCase:
    """A random tiny ``TransformerClassifier`` (dropout 0, sizes drawn) and ``n_batches`` padded batches."""
    n_heads = draw.choice([1, 2])
    d_model = n_heads * draw.choice([4, 6, 8, 10])
    vocab, n_classes = draw.integer(12, 40), draw.integer(2, 5)
    batch, seq = draw.distinct(2, 2, 8, avoid=(d_model, n_classes))
    config = TransformerConfig(vocab_size=vocab, d_model=d_model, n_heads=n_heads, d_ff=draw.integer(5, 24),
                               n_layers=1, max_len=seq, dropout=0.0, positional="learned",
                               bias=False)  # a key bias has a zero gradient up to float noise, which AdamW magnifies
    with torch.random.fork_rng(devices=[]):            # the learner's global random state stays as it was
        torch.manual_seed(draw.rng.randrange(2 ** 31))
        model = TransformerClassifier(config, n_classes=n_classes, pooling=draw.choice(["cls", "mean"]))
    batches = []
    for _ in range(n_batches):
        ids = draw.randint(N_SPECIAL_TOKENS, vocab, (batch, seq))
        for row in range(1, batch):                       # row 0 full, the others padded at random lengths
            ids[row, draw.integer(1, seq):] = PAD_ID
        batches.append((ids, draw.randint(0, n_classes, (batch,))))
    warmup = draw.integer(1, n_batches)
    clip_text = "clip_norm left at its default" if not clip else f"clip_norm={clip[0]}"
    description = (f"{n_batches} batch{'es' if n_batches > 1 else ''} of (batch {batch}, seq {seq}), "
                   f"accumulate={accumulate}, d_model {d_model}, {n_classes} classes, {clip_text}, warmup {warmup}"
                   + (f" — {note}" if note else ""))
    return TrainingCase(description, model, batches, peak_lr=draw.choice([3e-3, 5e-3, 1e-2, 2e-2]), warmup=warmup,
                        total_steps=3 * n_batches + 2, clip=clip, accumulate=accumulate)


class TrainingRecorder:
    """Wraps a model's optimizer, scheduler and loss to record what a training loop did, step by step."""

    def __init__(self, model: nn.Module, case: TrainingCase) -> None:
        self.model = model
        self.parameters = list(model.parameters())
        self.optimizer = make_optimizer(model, lr=case.peak_lr)
        self.scheduler = make_scheduler(self.optimizer, case.warmup, case.total_steps, "cosine")
        self.events, self.training_flags, self.stale_gradients = [], [], []             # str, bool, bool
        self.learning_rates, self.gradient_norms, self.snapshots = [], [], []         # per optimizer step
        self.optimizer.register_step_pre_hook(self._before_step)
        self.optimizer.register_step_post_hook(self._after_step)
        scheduler_step = self.scheduler.step

        def counted_step(*args, **kwargs):
            self.events.append("schedule")
            return scheduler_step(*args, **kwargs)
        self.scheduler.step = counted_step

    def loss_fn(self, model, batch):
        ids, labels = batch
        self.events.append("loss")
        self.training_flags.append(all(m.training for m in model.modules()))   # every submodule
        loss = 10.0 * F.cross_entropy(model(ids), labels)   # scaled: the gradients exceed clip_norm
        loss.register_hook(lambda grad: self.stale_gradients.append(any(   # first in its backward: old gradients?
            p.grad is not None and bool(p.grad.abs().sum() > 0) for p in self.parameters)))
        return loss

    def _before_step(self, optimizer, args, kwargs) -> None:
        self.events.append("step")
        self.learning_rates.append(optimizer.param_groups[0]["lr"])
        grads = [p.grad for p in self.parameters if p.grad is not None]
        self.gradient_norms.append(float(torch.linalg.vector_norm(torch.stack(
            [torch.linalg.vector_norm(g) for g in grads]))) if grads else 0.0)

    def _after_step(self, optimizer, args, kwargs) -> None:
        self.snapshots.append([p.detach().clone() for p in self.parameters])


def train(loop, case: TrainingCase, forbidden: bool = True) -> TrainingRecorder:
    """Train a copy of ``case.model`` (in eval mode, as after an evaluation) with ``loop``; record what happened."""
    from ..training import fit, train_one_epoch

    recorder = TrainingRecorder(copy.deepcopy(case.model).eval(), case)
    forbidden = {"the package's course_utils.training.train_one_epoch": train_one_epoch,
                 "the package's course_utils.training.fit": fit} if forbidden else None
    batches = list(case.batches)
    before = snapshot(batches)
    with warnings.catch_warnings():  # PyTorch's own warnings about step order: the feedback names them
        warnings.simplefilter("ignore")
        recorder.returned = attempt(loop, "train_accumulated", (recorder.model, batches, recorder.loss_fn,
                                    recorder.optimizer, recorder.scheduler, case.accumulate, *case.clip), {},
                                    forbidden)
    check_inputs_kept({"batches": before}, {"batches": batches}, "train_accumulated", case.description)
    return recorder


def same_run(a: TrainingRecorder, b: TrainingRecorder) -> bool:
    def near(x, y, rel):
        return len(x) == len(y) and all(math.isclose(u, v, rel_tol=rel, abs_tol=1e-6) for u, v in zip(x, y))
    returned = (a.returned == b.returned if isinstance(a.returned, Raised) or isinstance(b.returned, Raised)
                else difference(a.returned, b.returned) is None)
    return (a.events == b.events and a.training_flags == b.training_flags and a.stale_gradients == b.stale_gradients
            and near(a.gradient_norms, b.gradient_norms, 1e-3) and near(a.learning_rates, b.learning_rates, 1e-6)
            and all(close(x, y) for s, t in zip(a.snapshots, b.snapshots) for x, y in zip(s, t)) and returned)


def check_training_case(learner_loop, case: TrainingCase) -> None:
    """Train two copies of ``case.model`` — the package's loop and the learner's — and compare step by step."""
    reference, got, n = train(planted_loop(), case, forbidden=False), train(learner_loop, case), len(case.batches)
    steps = math.ceil(n / case.accumulate)

    def fail(message: str) -> None:
        raise Mismatch(f"on {case.description}: {message}", case, got, learner_loop, train, same_run)

    if isinstance(got.returned, Raised):
        fail(f"your `train_accumulated` raised {got.returned.kind}: {got.returned.message}")
    counts = {event: got.events.count(event) for event in ("loss", "step", "schedule")}
    if counts["loss"] != n:
        fail(f"loss_fn was called {counts['loss']} times for {n} batches: call loss_fn(model, batch) once for every "
             "batch (and keep that loss for the list).")
    if not all(got.training_flags):
        fail("the model (or one of its submodules) was in eval mode while you trained it (the checker hands it over "
             "in eval mode, as after an evaluation): call model.train() at the start of the epoch.")
    if counts["step"] != steps:
        fail(f"optimizer.step() ran {counts['step']} times for {n} batches in groups of {case.accumulate}: once per "
             f"group, {steps} times (a shorter last group steps too).")
    if counts["schedule"] != steps:
        fail(f"scheduler.step() ran {counts['schedule']} time(s) for {steps} optimizer steps: the schedule counts "
             "optimizer steps, so call it right after every optimizer.step(), once.")
    if got.stale_gradients != reference.stale_gradients:
        fail("the gradients were cleared at the wrong moments: once per group, before its first backward — the "
             "batches of one group must add up in .grad, and nothing may be left from the previous group.")
    for step in range(steps):
        norm, expected = got.gradient_norms[step], reference.gradient_norms[step]
        if not math.isclose(norm, expected, rel_tol=1e-3, abs_tol=1e-6):
            fail(f"at optimizer step {step} the gradients reach optimizer.step() with a norm of {norm:.4g}, the "
                 f"package's loop {expected:.4g}: the step must follow the mean of its batches' gradients, clipped.")
        if not math.isclose(got.learning_rates[step], reference.learning_rates[step], rel_tol=1e-6):
            fail(f"the learning rates of your steps are {[f'{lr:.3g}' for lr in got.learning_rates]}, the package's "
                 f"{[f'{lr:.3g}' for lr in reference.learning_rates]}: one scheduler.step() after each "
                 "optimizer.step().")
        error = max(max_difference(a, b) for a, b in zip(got.snapshots[step], reference.snapshots[step]))
        if error > 1e-5:
            fail(f"after optimizer step {step} your parameters differ from the package's loop by up to {error:.3g}.")
    losses = got.returned
    if losses is None:
        fail(f"your loop returned None: return the list of the {n} per-batch losses.")
    if isinstance(losses, (list, tuple)) and any(isinstance(loss, torch.Tensor) for loss in losses):
        fail("return the losses as Python floats (loss.item()): a list of loss tensors keeps every step's graph "
             "alive in memory.")
    gap = difference(losses, reference.returned, "the returned list of per-batch losses", atol=1e-6, rtol=1e-5)
    if gap:
        fail(f"{gap} — return the {n} per-batch losses as computed by loss_fn, before any division.")


def check_train_accumulated(ns) -> None:
    learner_loop = own_function(ns["train_accumulated"], "train_accumulated", "course_utils.training.train_one_epoch")
    draw = Draw()   # accumulate=1 on one batch, groups that divide the batches, a shorter last group without
    for case in (   # clipping, a drawn clip_norm, the default clip_norm on 6 or 7 batches
            training_case(draw, 1, (None,), "a single step", accumulate=1),
            training_case(draw, 4, (None,), "no clipping, two full groups", accumulate=2),
            training_case(draw, draw.choice([5, 7]), (None,), "no clipping, a shorter last group", accumulate=3),
            training_case(draw, draw.integer(3, 4), (round(draw.integer(5, 50) / 100, 2),), "", accumulate=2),
            training_case(draw, draw.integer(6, 7), (), "", accumulate=draw.choice([2, 4]))):
        check_training_case(learner_loop, case)
    said = [prediction(ns, name, bool, "True or False") for name in ("same_update_4x16", "same_update_8_8_16_32")]
    config = TransformerConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=9, dropout=0.0)
    generator = torch.Generator().manual_seed(0)
    ids, labels = torch.randint(7, 30, (64, 9), generator=generator), torch.randint(0, 3, (64,), generator=generator)
    loss_fn = lambda model, batch: F.cross_entropy(model(batch[0]), batch[1])    # noqa: E731
    print("One batch of 64 strings against your loop over the same strings (plain SGD, one group):")
    for sizes, guess in zip(((16,) * 4, (8, 8, 16, 32)), said):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            models = [TransformerClassifier(config, n_classes=3)]
        models.append(copy.deepcopy(models[0]))
        for model, batch_sizes, run in ((models[0], sizes, learner_loop), (models[1], (64,), planted_loop())):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
            scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
            batches = list(zip(ids.split(list(batch_sizes)), labels.split(list(batch_sizes))))
            run(model, batches, loss_fn, optimizer, scheduler, len(batches), None)
        gap = max(max_difference(a.detach(), b.detach()) for a, b in zip(*(m.parameters() for m in models)))
        print(f"  batches of {', '.join(map(str, sizes)):14} you predicted {'identical' if guess else 'different':9}  "
              f"measured: largest weight difference {gap:.1e} ({'identical' if gap < 1e-5 else 'different'})"
              f"{'' if guess == (gap < 1e-5) else '  <- your prediction was wrong'}")


def planted_loop(optimizer=None, clip=lambda clip_norm: clip_norm, loss=None,
                 groups=lambda accumulate: accumulate, returned=None, batches=None):
    """The package's loop (the reference, with no argument), a bug planted in its optimizer methods (see
    :class:`~.asserts.Planted`), clip_norm, loss function, group size, batches or returned losses."""
    def loop(model, batch_list, loss_fn, opt, sched, accumulate, clip_norm=1.0):
        from ..training import train_one_epoch  # local: a global of this module would count as the learner's

        planted_opt = Planted(opt, **optimizer) if optimizer else opt
        losses = train_one_epoch(model, batches(batch_list, accumulate) if batches else batch_list,
                                 loss(loss_fn, accumulate) if loss else loss_fn, planted_opt, sched,
                                 clip(clip_norm), accumulate=groups(accumulate))
        return returned(losses, accumulate) if returned else losses
    return loop


LOOP_MISTAKES = (
    Mistake("a step per batch", "optimizer.step() ran after every batch: with accumulation the gradients of "
            "`accumulate` batches add up first, then one step (and one scheduler step) per group",
            variant=planted_loop(groups=lambda k: 1)),
    Mistake("zero_grad per batch", "the gradients were cleared before every batch, so each step saw only the last "
            "batch of its group: call optimizer.zero_grad() once per group, before its first backward",
            variant=planted_loop(loss=lambda fn, k: lambda m, b: (m.zero_grad(set_to_none=True), fn(m, b))[1])),
    Mistake("zero_grad forgotten", "optimizer.zero_grad() is never called: each group's gradients are added to "
            "all the previous ones. Clear them once per group",
            variant=planted_loop(optimizer={"zero_grad": lambda original, *args, **kwargs: None})),
    Mistake("loss not divided", "each batch's loss went into backward undivided, so the step follows the *sum* of "
            "the group's gradients, `accumulate` times the mean: divide each loss by the size of its group before "
            "backward (clipping hides this only when it clips)",
            variant=planted_loop(loss=lambda loss_fn, k: lambda m, b: loss_fn(m, b) * k)),
    Mistake("last group dropped", "the batches of the shorter last group were never used: when the number of "
            "batches is not a multiple of accumulate, the last group still makes one step",
            variant=planted_loop(batches=lambda batches, k: batches[:len(batches) - len(batches) % k])),
    Mistake("divided losses returned", "the returned losses are the divided ones: return each batch's loss as "
            "loss_fn computed it (the list should read like the training loss)",
            variant=planted_loop(returned=lambda losses, k: [loss / k for loss in losses])),
    Mistake("no clipping", "the gradients are not clipped: clip the accumulated gradients once per group, between "
            "the last backward and the step, torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)",
            variant=planted_loop(clip=lambda c: None)),
    Mistake("clipped although clip_norm is None", "clip_norm=None means no clipping: clip only when clip_norm is not "
            "None", variant=planted_loop(clip=lambda c: c or 1.0)),
)
q3 = Exercise(
    name="Capstone: gradient accumulation",
    variables=("train_accumulated",),
    checker=check_train_accumulated,
    hints=("Gradients add up in .grad until you clear them — that is the whole trick. Divide each loss by the size "
           "of its group so that the sum of the gradients is their mean.",
           "Walk the list in slices of `accumulate` batches. Per slice: clear the gradients once; for each batch "
           "compute its loss, divide it by the slice's length, backpropagate, and record the undivided loss as a "
           "float; then, once for the slice: clip if clip_norm is given, the optimizer step, the scheduler step."),
    solution=solution_of("lesson05", "same_update_4x16", "same_update_8_8_16_32", "train_accumulated"),
    mistakes=LOOP_MISTAKES,
    success="Your loop is correct: step for step, its gradients, learning rates and parameters match the package's "
            "loop (your predictions are scored in the lines above). Equal "
            "batches: the mean of the 4 batch means is the mean over the 64 strings, the same update up to float "
            "rounding. Unequal ones: the mean of means gives each batch the same weight, so each string of a batch of "
            "8 counts 4 times as much as one of a batch of 32 — another update.",
    task=(
        "**Capstone — gradient accumulation (about 30 minutes).** Why: a batch too big for memory is fed as several "
        "small ones before one optimizer step. Write `train_accumulated(model, batches, loss_fn, optimizer, scheduler, "
        "accumulate, clip_norm=1.0)`:\n\n"
        "* one pass over `batches` (a list), **one optimizer step per `accumulate` consecutive batches**; a shorter "
        "last group steps too;\n"
        "* each update equals one step on the **mean of its batches' gradients**, clipped to `clip_norm` (none when "
        "`None`), with one scheduler step per optimizer step; the model may arrive in eval mode;\n"
        "* it returns the per-batch losses as `loss_fn` computed them (undivided), as Python floats.\n\n"
        "First **predict**, in `same_update_4x16` and `same_update_8_8_16_32` (True or False): with dropout 0, plain "
        "SGD and no clipping, do 4 accumulated batches of 16 give the update of one batch of the same 64 strings? "
        "Batches of 8, 8, 16, 32? The check measures both.\n\n"
        "Checked step for step against the course's own accumulation, on random batches. Stuck? `q3.solution()`, or "
        "move on with `from course_utils.training import train_one_epoch`."
    ),
    starter=(
        "same_update_4x16 = ...       # True or False: 4 batches of 16 accumulated = one batch of 64?\n"
        "same_update_8_8_16_32 = ...  # True or False: batches of 8, 8, 16, 32 accumulated = one batch of 64?\n"
        "\n\n"
        "def train_accumulated(model, batches, loss_fn, optimizer, scheduler, accumulate, clip_norm=1.0):\n"
        "    raise NotImplementedError  # your code here\n"
    ),
)
