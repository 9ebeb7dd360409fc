"""Exercises of notebook 05 (a classifier): the token-99 base rate, masked mean pooling, a confusion matrix, and the
capstone training loop.

Every check draws fresh random inputs (:class:`~.asserts.Draw`; ``COURSE_CHECK_SEED`` fixes them) and compares the
learner's answer with the package's behaviour on each, edge cases first (a single position, batch 1, a row that is
all padding but one token, classes absent from the batch, one training batch).
"""
from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .asserts import (
    Case,
    Draw,
    call_learner,
    call_own,
    check_function,
    check_inputs_kept,
    close,
    difference,
    max_difference,
    own_function,
    snapshot,
)
from .core import Exercise, ExerciseFailure, solution_of

# ---------------------------------------------------------------------------- q1: P(token present)

def presence_probability(vocab_size: int, seq_len: int) -> float:
    """P(a given token occurs at least once in ``seq_len`` uniform draws from ``vocab_size`` tokens), to full
    precision even for huge vocabularies: 1 − (1 − 1/V)^n computed as −expm1(n · log1p(−1/V))."""
    return -math.expm1(seq_len * math.log1p(-1 / vocab_size))


def presence_cases(draw: Draw) -> list[Case]:
    """A position-free and a one-position sequence, then small, medium, "expected count above 1" and huge
    vocabularies/lengths (where float32 or a rounding shortcut shows)."""
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
    return [Case(f"vocab_size {vocab}, seq_len {length}" + (f" — {note}" if note else ""), (vocab, length))
            for vocab, length, note in sizes]


PRESENCE_PROBES = ((10, 3), (7, 20), (1000, 32), (3, 1))


def presence_mistakes(vocab_size: int, seq_len: int, got: float) -> list[tuple[object, str]]:
    """``(formula, diagnosis)`` of the typical wrong answers, for the case ``(vocab_size, seq_len)``."""
    note = ", more than 1" if got > 1 else ""
    return [
        (lambda v, n: n / v,
         f"seq_len / vocab_size is the *expected number* of occurrences, not the probability of at least one; for "
         f"vocab_size {vocab_size}, seq_len {seq_len} it is {got:.4g}{note}. Use the complement: 1 − P(no position "
         "holds the token)"),
        (lambda v, n: (1 - 1 / v) ** n,
         "that is the probability that the token is *absent* from every position; the question asks for present "
         "at least once: 1 − that"),
        (lambda v, n: (1 / v) ** n,
         "that is the chance of the token at every position at once; present at least once is the complement of "
         "absent everywhere"),
        (lambda v, n: 1 / v,
         "that is the chance of the token at one given position; with more positions the chance of seeing it "
         "somewhere grows"),
        (lambda v, n: 100 * presence_probability(v, n),
         "that is a percentage; return the probability itself, a number between 0 and 1"),
        (lambda v, n: 1 - math.exp(-n / v),
         "1 − exp(−seq_len/vocab_size) is only the large-vocabulary approximation; compute the exact probability "
         "from the chance that one position misses the token"),
        (lambda v, n: 1 - (1 - 1 / v) ** (n - 1),
         "the exponent is off by one: each of the seq_len positions contributes one factor"),
        (lambda v, n: 1 - (1 - 1 / v) ** (n + 1),
         "the exponent is off by one: each of the seq_len positions contributes one factor"),
    ]


def as_number(value) -> float | None:
    """``value`` as a float if it is a number (or a one-element tensor), else ``None``."""
    if isinstance(value, torch.Tensor):
        return float(value.detach().reshape(-1)[0]) if value.numel() == 1 else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def presence_behaviour(function, case: Case, value: float) -> str | None:
    """What the learner's function does wrong on ``case``, judged from its answers to other inputs: an argument it
    ignores, rounding, or precision lost only on huge inputs."""
    vocab_size, seq_len = case.args
    expected = presence_probability(vocab_size, seq_len)
    try:
        answers = {(v, n): as_number(function(v, n)) for v, n in ((10, 3), (10, 20), (1000, 3), (3, 1))}
        right_on_probes = all(a is not None and math.isclose(a, presence_probability(v, n), rel_tol=1e-4)
                              for (v, n), a in answers.items())
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus
        return None
    if answers[(10, 3)] is not None and answers[(10, 3)] == answers[(1000, 3)]:
        return "your result does not change with vocab_size: use the argument, not a fixed vocabulary size"
    if answers[(10, 3)] is not None and answers[(10, 3)] == answers[(10, 20)]:
        return "your result does not change with seq_len: use the argument, not a fixed length"
    probe = answers[(1000, 3)]
    if any(math.isclose(value, round(expected, digits), abs_tol=1e-15) and probe is not None
           and math.isclose(probe, round(presence_probability(1000, 3), digits), abs_tol=1e-15)
           for digits in range(1, 7)):
        return f"the exact probability is {expected:.6g}, yours {value:.6g} looks rounded: return it unrounded"
    if right_on_probes and vocab_size > 100:
        return (f"right on small inputs, but here the exact probability is {expected:.6g} and yours {value:.6g}: "
                "precision is lost in float32 (torch.tensor's default dtype, or np.float32), where 1 − 1/vocab_size "
                "is rounded; compute with Python floats (float64)")
    if value > 1 or value < 0:
        return f"a probability lies in [0, 1], got {value:.6g}"
    return None


def check_p_token_present(ns) -> None:
    function = ns["p_token_present"]

    def diagnose(case: Case, got) -> str | None:
        value = as_number(got)
        if value is None or isinstance(got, torch.Tensor):
            return None
        vocab_size, seq_len = case.args
        for formula, message in presence_mistakes(vocab_size, seq_len, value):
            try:
                if not math.isclose(value, formula(vocab_size, seq_len), rel_tol=1e-6, abs_tol=1e-12):
                    continue
                probes = [as_number(function(v, n)) for v, n in PRESENCE_PROBES]
            except Exception:  # noqa: BLE001 - a diagnosis is a bonus: the plain difference is reported instead
                continue
            if all(p is not None and math.isclose(p, formula(v, n), rel_tol=1e-6, abs_tol=1e-12)
                   for p, (v, n) in zip(probes, PRESENCE_PROBES)):
                return message
        return presence_behaviour(function, case, value)

    check_function(function, presence_probability, presence_cases(Draw()), "p_token_present", diagnose=diagnose,
                   atol=1e-12, rtol=1e-6)


# ---------------------------------------------------------------------------- q2: masked mean pooling

def package_mean_pool(hidden: torch.Tensor, ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """The package classifier's mean pooling (``TransformerClassifier(pooling="mean")``) on given vectors, with
    gradients to ``hidden``; in the dtype of ``hidden``."""
    from ..config import TransformerConfig
    from ..models import TransformerClassifier

    d_model = hidden.size(-1)
    config = TransformerConfig(vocab_size=max(int(ids.max()), pad_id) + 1, d_model=d_model, n_heads=1, d_ff=4,
                               n_layers=1, max_len=ids.size(1), pad_id=pad_id, positional="learned")
    classifier = TransformerClassifier(config, n_classes=d_model, pooling="mean").to(hidden.dtype)
    with torch.no_grad():  # an identity head and an encoder that returns the given vectors: only pooling is left
        classifier.head.weight.copy_(torch.eye(d_model, dtype=hidden.dtype))
        classifier.head.bias.zero_()
    classifier.head.requires_grad_(False)
    classifier.text_encoder.forward = lambda ids, mask_padding=True: hidden
    return classifier(ids)


def padded_ids(draw: Draw, lengths: list[int], seq: int, pad_id: int, vocab: int = 30) -> torch.Tensor:
    """``(len(lengths), seq)`` ids: row ``i`` holds ``lengths[i]`` real tokens (any id but ``pad_id``, 0 included
    when it is not the pad id), then ``pad_id`` up to ``seq``."""
    ids = draw.randint(0, vocab - 1, (len(lengths), seq))
    ids = ids + (ids >= pad_id).long()                               # every id but pad_id
    for row, length in enumerate(lengths):
        if pad_id != 0:
            ids[row, draw.integer(0, length - 1)] = 0                # 0 is an ordinary token here
        ids[row, length:] = pad_id
    return ids


def pool_case(draw: Draw, lengths: list[int], seq: int, d_model: int, pad_id: int,
              dtype: torch.dtype = torch.float32, note: str = "") -> Case:
    ids = padded_ids(draw, lengths, seq, pad_id)
    hidden = draw.randn(len(lengths), seq, d_model).to(dtype)
    hidden = torch.where((ids == pad_id)[..., None], hidden + 20.0, hidden)  # padding vectors stand out
    shown = ", ".join(str(n) for n in lengths)
    description = (f"batch {len(lengths)}, seq {seq}, d_model {d_model}, pad_id {pad_id} (real tokens per row: "
                   f"{shown}){' — ' + note if note else ''}")
    return Case(description, (hidden, ids), {"pad_id": pad_id})


def pool_cases(draw: Draw) -> list[Case]:
    """Batch 1 without padding, batch 1 all padding but one token, then batches whose rows have no padding, all
    padding but one token and anything between — with pad id 0, another pad id (0 then an ordinary token), and
    float64 vectors."""
    batch, seq, d_model = draw.distinct(3, 3, 10)
    other_pad = draw.integer(1, 9)

    def lengths() -> list[int]:
        rows = [seq, 1] + [draw.integer(1, seq) for _ in range(batch - 2)]
        draw.rng.shuffle(rows)
        return rows

    return [
        pool_case(draw, [seq], seq, d_model, 0, note="no padding"),
        pool_case(draw, [1], seq, d_model, 0, note="all padding but one token"),
        pool_case(draw, lengths(), seq, d_model, 0),
        pool_case(draw, lengths(), seq, d_model, other_pad, note="0 is an ordinary token here"),
        pool_case(draw, lengths(), seq, d_model, other_pad, torch.float64, note="float64 vectors"),
    ]


def pool_diagnosis(case: Case, got) -> str | None:
    """Name the mistake behind a wrong pooled tensor on ``case``."""
    hidden, ids = case.args
    pad_id = case.kwargs["pad_id"]
    batch, _, d_model = hidden.shape
    if not isinstance(got, torch.Tensor):
        return None
    if tuple(got.shape) != (batch, d_model):
        return (f"pooling turns hidden (batch, seq, d_model) = {tuple(hidden.shape)} into (batch, d_model) = "
                f"{(batch, d_model)}, got {tuple(got.shape)}" +
                (" (.squeeze() also drops the batch axis when batch is 1: index or sum over dim 1 instead)"
                 if got.dim() == 1 and batch == 1 else ""))
    if not got.is_floating_point():
        return None
    got = got.detach().to(hidden.dtype)
    real = (ids != pad_id).to(hidden.dtype)

    def masked_mean(weights: torch.Tensor) -> torch.Tensor:
        return (hidden * weights[..., None]).sum(1) / weights.sum(1, keepdim=True).clamp(min=1)

    if pad_id != 0 and close(got, masked_mean((ids != 0).to(hidden.dtype))):
        return (f"with pad_id={pad_id} you still treated id 0 as padding: use the pad_id argument, never a "
                "hard-coded 0")
    if close(got, hidden.mean(1)):
        return ("a plain mean over the sequence averages the padding vectors in too. Weight by the mask of real "
                "tokens and divide by the number of real tokens")
    if close(got, hidden.sum(1) / real.sum(1, keepdim=True).clamp(min=1)):
        return ("you divide by the number of real tokens, but the sum still includes the padding vectors: zero them "
                "(multiply by the mask) before summing")
    if close(got, (hidden * real[..., None]).sum(1) / ids.size(1)):
        return ("padding is zeroed, but you divided by the full length; divide by the number of real tokens in "
                "each row")
    if close(got, hidden[:, 0]):
        return "that is [CLS] pooling (position 0); this exercise asks for the mean of the real tokens"
    no_first = real.clone()
    no_first[:, 0] = 0
    if close(got, masked_mean(no_first)):
        return ("you left out position 0 ([CLS]); it is a real token, and the package's mean pooling averages every "
                "non-padding position, [CLS] counts too")
    if close(got, masked_mean(1 - real)):
        return "you averaged the padding and skipped the real tokens: real tokens are ids != pad_id"
    return None


def pool_error_hint(error: BaseException) -> str | None:
    if "must match the size" in str(error):
        return ("The count of real tokens per row has shape (batch,): keep it as a (batch, 1) column "
                "(keepdim=True) so that it divides each row of the (batch, d_model) sum")
    return None


def check_pool_gradient(pool, case: Case) -> None:
    """The pooled vectors must carry the gradient back to ``hidden``, as the package's pooling does."""
    hidden, ids = case.args
    probe = torch.randn(hidden.size(0), hidden.size(2), generator=torch.Generator().manual_seed(5)).to(hidden.dtype)
    reference_leaf = hidden.clone().requires_grad_()
    (package_mean_pool(reference_leaf, ids, case.kwargs["pad_id"]) * probe).sum().backward()
    leaf = hidden.clone().requires_grad_()
    got = call_learner(pool, "masked_mean_pool", case.description, leaf, ids.clone(), **case.kwargs)
    if not isinstance(got, torch.Tensor) or not got.requires_grad:
        raise ExerciseFailure(f"on {case.description} with hidden.requires_grad=True: the pooled vectors carry no "
                              "gradient, so training could not reach the encoder. Keep every step a tensor "
                              "operation (no .detach(), .item(), .tolist(), torch.no_grad() or numpy).")
    (got * probe).sum().backward()
    if leaf.grad is None or not close(leaf.grad, reference_leaf.grad):
        gap = ("none arrived" if leaf.grad is None
               else f"off by up to {max_difference(leaf.grad, reference_leaf.grad):.3g}")
        raise ExerciseFailure(f"on {case.description}: the values are right but the gradient reaching `hidden` is "
                              f"wrong ({gap}): a detached or in-place step in between.")


def check_masked_mean_pool(ns) -> None:
    pool = ns["masked_mean_pool"]
    cases = pool_cases(Draw())
    check_function(pool, package_mean_pool, cases, "masked_mean_pool", diagnose=pool_diagnosis,
                   error_hint=pool_error_hint)
    for case in cases[2:4]:
        check_pool_gradient(pool, case)


# ---------------------------------------------------------------------------- q3: confusion matrix

def reference_confusion(predictions: torch.Tensor, labels: torch.Tensor, n_classes: int) -> torch.Tensor:
    """``(n_classes, n_classes)`` int64 counts: entry ``[t, p]`` = examples of true class t predicted as p."""
    matrix = torch.zeros(n_classes, n_classes, dtype=torch.long)
    matrix.index_put_((labels.long(), predictions.long()), torch.ones(len(labels), dtype=torch.long),
                      accumulate=True)
    return matrix


def confusion_case(draw: Draw, n_examples: int, n_classes: int, note: str, used: int | None = None,
                   skewed: bool = False) -> Case:
    """``n_examples`` predictions and labels in ``[0, used)`` (default: every class)."""
    used = n_classes if used is None else used
    labels = draw.randint(0, used, (n_examples,))
    right = draw.randint(0, 10, (n_examples,)) < (8 if skewed else 5)   # a useful classifier: many right answers
    predictions = torch.where(right, labels, draw.randint(0, used, (n_examples,)))
    if skewed:
        labels[: n_examples * 3 // 4] = 0
        predictions[: n_examples * 3 // 4] = 0
    description = (f"{n_examples} example{'s' if n_examples > 1 else ''}, n_classes {n_classes}"
                   + (f" — {note}" if note else ""))
    return Case(description, (predictions, labels, n_classes))


def confusion_cases(draw: Draw) -> list[Case]:
    """One example; classes absent from the batch (the last ones, then one never predicted and one never true);
    a random batch; a big one with a cell above 255 (too much for 8-bit counts)."""
    n_classes, n_examples = draw.distinct(2, 3, 9)
    absent_case = confusion_case(draw, draw.integer(6, 20), n_classes, "one class never true, another never "
                                                                       "predicted")
    predictions, labels, _ = absent_case.args
    never_true, never_predicted = draw.distinct(2, 0, n_classes - 1)
    labels[labels == never_true] = never_predicted
    predictions[predictions == never_predicted] = never_true
    top = draw.integer(2, 4)
    return [
        confusion_case(draw, 1, 2, "a single example"),
        confusion_case(draw, draw.integer(4, 12), top + draw.integer(2, 3),
                       f"only classes 0…{top - 1} occur, the last classes are absent", used=top),
        absent_case,
        confusion_case(draw, n_examples * 3 + 1, n_classes, ""),
        confusion_case(draw, draw.integer(500, 700), 3, "one cell holds more than 255", skewed=True),
    ]


def integer_counts(function):
    """The learner's function with an integer result of any integer dtype turned into int64 (the task asks for an
    integer tensor, not for one particular integer dtype); anything else is returned as it came."""
    def run(predictions, labels, n_classes):
        result = function(predictions, labels, n_classes)
        if isinstance(result, torch.Tensor) and not (result.is_floating_point() or result.is_complex()
                                                     or result.dtype == torch.bool):
            return result.long()
        return result
    return run


def confusion_diagnosis(case: Case, got) -> str | None:
    predictions, labels, n_classes = case.args
    expected = reference_confusion(predictions, labels, n_classes)
    if not isinstance(got, torch.Tensor):
        return None
    if tuple(got.shape) != (n_classes, n_classes):
        from_data = int(max(labels.max(), predictions.max())) + 1
        if got.dim() == 2 and got.shape[0] == got.shape[1] == from_data:
            return (f"the matrix is {tuple(got.shape)}: sized from the largest class in the data, but n_classes is "
                    f"{n_classes} — classes can be absent from a batch; use the n_classes argument for the size")
        return (f"the matrix is (n_classes, n_classes) = {(n_classes, n_classes)}, got {tuple(got.shape)}" +
                (" — reshape the flat counts to (n_classes, n_classes)" if got.dim() == 1 else ""))
    if got.is_floating_point():
        counts = expected.double()
        rates = [counts / counts.sum(1, keepdim=True).clamp(min=1), counts / counts.sum(0, keepdim=True).clamp(min=1),
                 counts / counts.sum()]
        if torch.equal(got.detach().round(), got.detach()):
            return (f"return an integer tensor of counts (torch.long), got {got.dtype}: float counts are not what "
                    "was asked (start from zeros with dtype=torch.long)")
        if any(close(got.detach().double().nan_to_num(0.0), r) for r in rates):
            return "return counts (integers); normalise later, when you plot or report rates"
        return None
    if torch.equal(got, expected.T):
        return "rows and columns are swapped: row = true class, column = predicted class"
    if torch.equal(got, expected % 256) or torch.equal(got, (expected + 128) % 256 - 128):
        return "a count above 255 wrapped around: an 8-bit dtype is too small, count in torch.long"
    if int(got.sum()) != len(labels):
        if torch.equal(got, torch.diag(torch.diag(expected))):
            return (f"only the correct predictions are counted: the entries should add up to the number of examples "
                    f"({len(labels)}), got {int(got.sum())}")
        return f"the entries should add up to the number of examples ({len(labels)}), got {int(got.sum())}"
    return None


def check_confusion_matrix(ns) -> None:
    function = ns["confusion_matrix"]
    check_function(integer_counts(function), reference_confusion, confusion_cases(Draw()), "confusion_matrix",
                   diagnose=confusion_diagnosis, error_hint=confusion_error_hint)


def confusion_error_hint(error: BaseException) -> str | None:
    message = str(error)
    if "is invalid for input of size" in message:
        return ("torch.bincount only counts up to the largest value present; when the last classes are absent "
                "from the batch, pass minlength=n_classes * n_classes")
    if "out of bounds" in message or "out of range" in message:
        return "the matrix must be (n_classes, n_classes), sized from the n_classes argument"
    return None


q1 = Exercise(
    name="How often does token 99 occur?",
    variables=("p_token_present",),
    checker=check_p_token_present,
    hints=("Turn the question around: what is the chance that one position does *not* hold the token, and that "
           "none of the seq_len independent positions does?",
           "miss = 1 minus the chance of the token at one position; absent = miss to the power seq_len; the answer "
           "is 1 minus absent — returned as a Python float (checked on huge vocabularies too, so no float32)."),
    solution=solution_of("lesson05", "p_token_present"),
)

q2 = Exercise(
    name="Masked mean pooling",
    variables=("masked_mean_pool",),
    checker=check_masked_mean_pool,
    hints=("Only the real tokens (ids different from pad_id) may count: zero the others out of the sum, and count "
           "only the real ones in the denominator.",
           "1) a (batch, seq) mask of real tokens, in the dtype of hidden; 2) multiply hidden by the mask with a "
           "trailing axis added, sum over the sequence axis; 3) divide by the number of real tokens per row, kept "
           "as a (batch, 1) column. Use the pad_id argument, keep the graph (no .item()), change no input."),
    solution=solution_of("lesson05", "masked_mean_pool"),
)

q3 = Exercise(
    name="A confusion matrix",
    variables=("confusion_matrix",),
    checker=check_confusion_matrix,
    hints=("The matrix has one row per true class and one column per predicted class — n_classes of each, even "
           "when some class does not occur in this batch.",
           "Start from an (n_classes, n_classes) integer zero matrix and add 1 at [true, predicted] for each "
           "example (a loop, index_put_ with accumulate, or a bincount of true·n_classes + predicted reshaped). "
           "Return integer counts, not rates."),
    solution=solution_of("lesson05", "confusion_matrix"),
)


# ---------------------------------------------------------------------------- q4 (capstone): train_one_epoch

@dataclass
class TrainingCase:
    """One training run: a tiny classifier, its batches, the schedule and the clipping the loop is called with."""

    description: str
    model: nn.Module
    batches: list
    peak_lr: float
    warmup: int
    total_steps: int
    clip: tuple             # () = leave clip_norm at its default; (value,) = pass it
    loss_scale: float


DEFAULT_CLIP = 1.0          # the task's default clip_norm


def training_case(draw: Draw, n_batches: int, clip: tuple, note: str) -> TrainingCase:
    """A random tiny ``TransformerClassifier`` (dropout 0, sizes drawn) and ``n_batches`` padded batches."""
    from ..config import TransformerConfig
    from ..models import TransformerClassifier
    from ..tokenization import N_SPECIAL_TOKENS, PAD_ID

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
    description = (f"{n_batches} batch{'es' if n_batches > 1 else ''} of (batch {batch}, seq {seq}), d_model "
                   f"{d_model}, {n_classes} classes, {clip_text}, warmup {warmup}" + (f" — {note}" if note else ""))
    return TrainingCase(description, model, batches, peak_lr=draw.choice([3e-3, 5e-3, 1e-2, 2e-2]), warmup=warmup,
                        total_steps=3 * n_batches + 2, clip=clip, loss_scale=10.0)


def training_cases(draw: Draw) -> list[TrainingCase]:
    """One batch without clipping, then a few batches with a drawn clip_norm, without clipping, and with the
    default clip_norm (6 or 7 batches: a loop that stops after a fixed number of steps shows)."""
    return [
        training_case(draw, 1, (None,), "a single step"),
        training_case(draw, draw.integer(2, 3), (round(draw.integer(5, 50) / 100, 2),), ""),
        training_case(draw, draw.integer(3, 5), (None,), "no clipping"),
        training_case(draw, draw.integer(6, 7), (), ""),
    ]


class _BackwardProbe(torch.autograd.Function):
    """Identity on the loss; its backward runs first and records whether old gradients are still there."""

    @staticmethod
    def forward(ctx, loss, record):
        ctx.record = record
        return loss.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.record()
        return grad, None


class TrainingRecorder:
    """Wraps a model's optimizer, scheduler and loss to record what a training loop did, step by step."""

    def __init__(self, model: nn.Module, case: TrainingCase) -> None:
        from ..training import make_optimizer, make_scheduler

        self.model = model
        self.loss_scale = case.loss_scale
        self.parameters = list(model.parameters())
        self.optimizer = make_optimizer(model, lr=case.peak_lr)
        self.scheduler = make_scheduler(self.optimizer, case.warmup, case.total_steps, "cosine")
        self.events: list[str] = []
        self.training_flags: list[bool] = []
        self.stale_gradients: list[bool] = []
        self.learning_rates: list[float] = []
        self.gradient_norms: list[float] = []
        self.parameter_norms: list[list[float]] = []
        self.largest_entries: list[float] = []
        self.snapshots: list[list[torch.Tensor]] = []
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
        self.training_flags.append(model.training)
        loss = self.loss_scale * F.cross_entropy(model(ids), labels)   # scaled: the gradients exceed clip_norm
        return _BackwardProbe.apply(loss, self._at_backward)

    def _at_backward(self) -> None:
        self.stale_gradients.append(any(p.grad is not None and bool(p.grad.abs().sum() > 0)
                                        for p in self.parameters))

    def _before_step(self, optimizer, args, kwargs) -> None:
        self.events.append("step")
        self.learning_rates.append(optimizer.param_groups[0]["lr"])
        grads = [p.grad for p in self.parameters if p.grad is not None]
        self.gradient_norms.append(float(torch.linalg.vector_norm(torch.stack(
            [torch.linalg.vector_norm(g) for g in grads]))) if grads else 0.0)
        self.parameter_norms.append([float(torch.linalg.vector_norm(g)) for g in grads])
        self.largest_entries.append(max(float(g.abs().max()) for g in grads) if grads else 0.0)

    def _after_step(self, optimizer, args, kwargs) -> None:
        self.snapshots.append([p.detach().clone() for p in self.parameters])


def forbidden_loops() -> dict[str, object]:
    from ..training import fit, train_one_epoch

    return {"the package's course_utils.training.train_one_epoch": train_one_epoch,
            "the package's course_utils.training.fit": fit}


def training_error_hint(case: TrainingCase):
    def hint(error: BaseException) -> str | None:
        if case.clip == (None,) and "NoneType" in str(error):
            return "clip_norm=None means no clipping: clip only when clip_norm is not None"
        return None
    return hint


def check_training_case(learner_loop, case: TrainingCase) -> None:
    """Train two copies of ``case.model`` — the package's loop and the learner's — and compare step by step."""
    from ..training import lr_multiplier
    from ..training import train_one_epoch as package_loop

    where = f"on {case.description}"
    n = len(case.batches)
    reference, learner = TrainingRecorder(copy.deepcopy(case.model), case), TrainingRecorder(copy.deepcopy(case.model),
                                                                                              case)
    reference.model.eval()
    expected_losses = package_loop(reference.model, list(case.batches), reference.loss_fn, reference.optimizer,
                                   reference.scheduler, *case.clip)
    learner.model.eval()  # a loop must switch the model to training mode itself
    batches = list(case.batches)
    before = snapshot(batches)
    with warnings.catch_warnings():  # PyTorch's own warnings about step order: the feedback below names them
        warnings.simplefilter("ignore")
        losses = call_own(learner_loop, "train_one_epoch", case.description, learner.model, batches,
                          learner.loss_fn, learner.optimizer, learner.scheduler, *case.clip,
                          forbidden=forbidden_loops(), error_hint=training_error_hint(case))
    check_inputs_kept({"batches": before}, {"batches": batches}, "train_one_epoch", case.description)
    n_losses, n_steps = learner.events.count("loss"), learner.events.count("step")
    if n_losses != n:
        raise ExerciseFailure(f"{where}: loss_fn was called {n_losses} times for {n} batches: call "
                              "loss_fn(model, batch) once for every batch (and keep that loss for the list).")
    if not all(learner.training_flags):
        raise ExerciseFailure(f"{where}: the model was in eval mode while you trained it (the checker hands it over "
                              "in eval mode, as after an evaluation): call model.train() at the start of the epoch.")
    if n_steps == 0:
        raise ExerciseFailure(f"{where}: optimizer.step() is never called, so the parameters never change: after "
                              "loss.backward() (and clipping), call optimizer.step().")
    if n_steps != n:
        raise ExerciseFailure(f"{where}: optimizer.step() ran {n_steps} times for {n} batches: once per batch.")
    if any(learner.stale_gradients):
        step = learner.stale_gradients.index(True)
        raise ExerciseFailure(f"{where}: at step {step} loss.backward() added to the gradients left from the "
                              "previous step: zero_grad is forgotten (or skipped), so gradients accumulate across "
                              "batches. Call "
                              "optimizer.zero_grad() before loss.backward() in every iteration.")
    if len(learner.stale_gradients) != n or any(norm == 0.0 for norm in learner.gradient_norms):
        raise ExerciseFailure(f"{where}: optimizer.step() found no gradients: call loss.backward() before it, and "
                              "optimizer.zero_grad() before backward — not between backward and step.")
    schedule_steps = learner.events.count("schedule")
    if schedule_steps == 0:
        raise ExerciseFailure(f"{where}: scheduler.step() is never called, so the learning rate stays at its first "
                              "warmup value. Call it after every optimizer.step().")
    if schedule_steps != n:
        raise ExerciseFailure(f"{where}: scheduler.step() ran {schedule_steps} time(s) in an epoch of {n} steps"
                              + (" — stepped per epoch instead of per step" if schedule_steps < n else "") +
                              ": the warmup and decay count optimizer steps, so call scheduler.step() right after "
                              "every optimizer.step(), once.")
    clip = case.clip[0] if case.clip else DEFAULT_CLIP
    for step in range(n):
        got_norm, norm = learner.gradient_norms[step], reference.gradient_norms[step]
        if not math.isclose(got_norm, norm, rel_tol=1e-3, abs_tol=1e-6):
            clipped_to = learner.gradient_norms
            if clip is not None and all(norm <= clip * 1.001 for norm in learner.parameter_norms[step]) and \
                    sum(norm > clip * 0.999 for norm in learner.parameter_norms[step]) > 1:
                detail = ("each parameter's gradient was clipped to clip_norm on its own: clip the global norm of "
                          "all gradients together, clip_grad_norm_(model.parameters(), clip_norm)")
            elif clip is not None and math.isclose(learner.largest_entries[step], clip, rel_tol=1e-4):
                detail = ("every gradient entry was clipped to ±clip_norm (clip_grad_value_): clip the global norm "
                          "of all gradients together, clip_grad_norm_(model.parameters(), clip_norm)")
            elif clip is not None and len(clipped_to) > 1 and max(clipped_to) - min(clipped_to) < 1e-4 * got_norm:
                detail = (f"every step's gradients were clipped to {got_norm:.4g} instead of clip_norm={clip}: clip "
                          "to the clip_norm argument, not a fixed number")
            elif clip is not None and got_norm > clip * 1.001:
                detail = ("clip between backward and step, torch.nn.utils.clip_grad_norm_(model.parameters(), "
                          "clip_norm)" + (" — clip_norm defaults to 1.0" if not case.clip else ""))
            elif clip is None:
                detail = "clip_norm=None means no clipping at all: clip only when clip_norm is given"
            else:
                detail = ("clip the global norm of all gradients together to clip_norm (not each parameter or "
                          "each value separately), between backward and step")
            raise ExerciseFailure(f"{where}: at step {step} the gradients reach optimizer.step() with a norm of "
                                  f"{got_norm:.4g}, the package's loop {norm:.4g}: {detail}.")
        if not math.isclose(learner.learning_rates[step], reference.learning_rates[step], rel_tol=1e-6):
            following = case.peak_lr * lr_multiplier(step + 1, case.warmup, case.total_steps, "cosine")
            if math.isclose(learner.learning_rates[step], following, rel_tol=1e-6):
                raise ExerciseFailure(f"{where}: scheduler.step() runs before optimizer.step(), so every step uses "
                                      "the next step's learning rate (the first warmup value is skipped): step the "
                                      "optimizer first, then the scheduler.")
            raise ExerciseFailure(f"{where}: the learning rates of your steps are "
                                  f"{[f'{lr:.3g}' for lr in learner.learning_rates]}, the package's "
                                  f"{[f'{lr:.3g}' for lr in reference.learning_rates]}: one scheduler.step() after "
                                  "each optimizer.step().")
        error = max(float((g - e).abs().max()) for g, e in zip(learner.snapshots[step], reference.snapshots[step]))
        if error > 1e-5:
            raise ExerciseFailure(f"{where}: after step {step} your parameters differ from the package's loop by up "
                                  f"to {error:.3g}: per batch, zero_grad → loss → backward → clip → optimizer.step → "
                                  "scheduler.step.")
    if losses is None:
        raise ExerciseFailure(f"{where}: your loop returned None: return the list of the {n} per-step losses.")
    if isinstance(losses, (list, tuple)) and any(isinstance(loss, torch.Tensor) for loss in losses):
        raise ExerciseFailure(f"{where}: return the losses as Python floats (loss.item()): a list of loss tensors "
                              "keeps every step's graph alive in memory.")
    gap = difference(losses, expected_losses, "the returned list of per-step losses", atol=1e-6, rtol=1e-5)
    if gap:
        raise ExerciseFailure(f"{where}: {gap} — return the list of the {n} per-step losses, loss.item() appended "
                              "once per batch.")


def check_train_one_epoch(ns) -> None:
    learner_loop = own_function(ns["train_one_epoch"], "train_one_epoch", "course_utils.training.train_one_epoch")
    for case in training_cases(Draw()):
        check_training_case(learner_loop, case)


q4 = Exercise(
    name="Capstone: your own training loop",
    variables=("train_one_epoch",),
    checker=check_train_one_epoch,
    hints=("An epoch repeats one recipe per batch; the order matters: old gradients out, new ones in, clipped, "
           "then the two step() calls. And the model may arrive in eval mode. Stuck? "
           "`from course_utils.training import train_one_epoch` to move on.",
           "Training mode on; an empty list. For each batch: clear the optimizer's gradients → loss from loss_fn → "
           "backpropagate → if clip_norm is not None, clip the global gradient norm to clip_norm → optimizer step → "
           "scheduler step → append the loss as a Python float (.item()). Return the list."),
    solution=solution_of("lesson05", "train_one_epoch"),
    success="Correct! Step for step, your gradients, learning rates and parameters match the package's loop.",
    task=(
        "**Capstone — your own training loop.** Write `train_one_epoch(model, batches, loss_fn, optimizer, "
        "scheduler, clip_norm=1.0)`: one pass over `batches` that returns the list of per-step losses as Python "
        "floats. For every batch: clear the old gradients, compute `loss = loss_fn(model, batch)`, backpropagate, "
        "clip the global gradient norm to `clip_norm` (`None`: no clipping), step the optimizer, then step the "
        "learning-rate schedule (it counts optimizer steps). The model may come in eval mode (after an "
        "evaluation): put it in training mode first. Write the loop yourself: a loop that hands the work to the "
        "package's `train_one_epoch` or `fit` is refused.\n\n"
        "How it is checked: on each check, tiny classifiers of random sizes (dropout 0) are trained twice from the "
        "same weights — by your loop and by `course_utils.training.train_one_epoch` — on random padded batches: a "
        "single batch without clipping, a few batches with a random `clip_norm`, a few with `clip_norm=None`, and "
        "six or seven with `clip_norm` left at its default; AdamW and a warmup + cosine schedule come from "
        "`make_optimizer` and `make_scheduler` (the ones `fit` uses). Each model is handed over in eval mode. "
        "After every step the gradient norm that reached the optimizer, the learning rate and the parameters must "
        "agree, `loss_fn` must run once per batch, and the returned losses must be the per-step losses as Python "
        "floats. "
        "`q4.hint()` and `q4.solution()` help; stuck? `from course_utils.training import train_one_epoch` and "
        "move on."
    ),
    starter=(
        "def train_one_epoch(model, batches, loss_fn, optimizer, scheduler, clip_norm=1.0):\n"
        "    # model.train(); per batch: zero_grad, loss, backward, clip, optimizer step, scheduler step\n"
        "    raise NotImplementedError\n"
    ),
)
