"""Exercises of notebook 04 (the encoder layer): exact parameter count, a Pre-LN residual block, LayerNorm by hand,
and the capstones EncoderLayer and Encoder.

Every check draws fresh random sizes (:class:`~.asserts.Draw`; ``COURSE_CHECK_SEED`` fixes them) plus fixed edge
cases, ordered from the smallest input to the largest; the package is the reference, and a rejection names the
input it happened on and, where a typical mistake matches, the mistake.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import config as package_config
from ..attention import MultiHeadAttention as PackageAttention
from ..config import encoder_layer_parameter_count
from ..layers import EncoderLayer, ResidualSublayer
from .asserts import (
    Case,
    Draw,
    backpropagate_both,
    call_learner,
    check_dropout_placement,
    check_function,
    check_inputs_kept,
    close,
    compare_gradients,
    copy_weights,
    difference,
    first_output,
    gradients,
    instantiate,
    max_difference,
    own_module_class,
    randomise_norms,
    show,
    snapshot,
)
from .core import Exercise, ExerciseFailure, solution_of

# ---------------------------------------------------------------------------- q1: the exact parameter count
PARAMETER_FORBIDDEN = {  # the package's counts, or a layer built and counted: the point is the closed formula
    "the package's course_utils.config.encoder_layer_parameter_count": encoder_layer_parameter_count,
    "the package's course_utils.config.attention_parameter_count": package_config.attention_parameter_count,
    "the package's course_utils.config.feed_forward_parameter_count": package_config.feed_forward_parameter_count,
    "the package's course_utils.config.layer_norm_parameter_count": package_config.layer_norm_parameter_count,
    "the package's course_utils.config.count_parameters": package_config.count_parameters,
    "the package's course_utils.layers.EncoderLayer": EncoderLayer,
    "torch.nn.TransformerEncoderLayer": nn.TransformerEncoderLayer,
}


def known_counts(d_model: int, d_ff: int) -> list[tuple[int, str]]:
    """What the typical wrong formulas give for ``(d_model, d_ff)``, each with its diagnosis."""
    expected = encoder_layer_parameter_count(d_model, d_ff)
    no_bias = 4 * d_model * d_model + 2 * d_model * d_ff
    known = [
        (no_bias, "you counted only the weight matrices — the quick estimate 4·d² + 2·d·d_ff. Add the biases "
                  "(4·d_model in attention, d_ff + d_model in the FFN) and the two LayerNorms (2·d_model each)"),
        (expected - 4 * d_model, "biases are right, but the two LayerNorms are missing: each has a gain and a bias "
                                 "vector of d_model numbers, 4·d_model in total"),
        (expected - 2 * d_model, "one LayerNorm is missing (or half of each): the layer has two, one per sublayer, "
                                 "each with a gain and a bias of d_model numbers"),
        (no_bias + 4 * d_model, "LayerNorms counted, but the biases of the six linear layers are missing "
                                "(4·d_model in attention, d_ff + d_model in the FFN)"),
        (expected - d_model * d_model - d_model, "only three attention projections counted: W_q, W_k, W_v *and* "
                                                 "the output projection W_o, each d_model·d_model + d_model"),
        (encoder_layer_parameter_count(d_model, 4 * d_model), "you assumed d_ff = 4·d_model: use the d_ff you are "
                                                              "given (the checker draws sizes where it differs)"),
    ]
    if d_ff != d_model:
        known.append((encoder_layer_parameter_count(d_ff, d_model), "d_model and d_ff are swapped: the function is "
                                                                    "called as encoder_layer_parameters(d_model, "
                                                                    "d_ff)"))
    return known


def telling_sizes(draw: Draw, low: int, high: int) -> tuple[int, int]:
    """Two different sizes for which every typical wrong formula gives a count of its own (so the diagnosis is
    never ambiguous), d_ff ≠ 4·d_model."""
    for _ in range(200):
        d_model, d_ff = draw.distinct(2, low, high)
        counts = [count for count, _ in known_counts(d_model, d_ff)] + [encoder_layer_parameter_count(d_model, d_ff)]
        if d_ff != 4 * d_model and len(set(counts)) == len(counts):
            return d_model, d_ff
    raise AssertionError("no telling sizes found")  # pragma: no cover - the ranges hold plenty


def parameter_cases(draw: Draw) -> list[Case]:
    """``(d_model, d_ff)`` from small to huge; d_ff is never 4·d_model except in the paper's base model."""
    small = telling_sizes(draw, 3, 30)
    medium = telling_sizes(draw, 31, 1200)
    # ≈ 10^8 and 4·10^8, d_model odd and d_ff even: the count is odd and above 2^53, where every float is even —
    # so any answer that went through a float is off
    huge_model = 2 * draw.integer(2 ** 25, 2 ** 26) + 1
    huge_ff = 2 * draw.integer(2 ** 27, 2 ** 28)
    sizes = [small, medium, (512, 2048), (huge_model, huge_ff)]
    labels = ["", "", " (the paper's base model)", " (huge: the count is above 2⁵³)"]
    return [Case(f"d_model={m}, d_ff={f}{label}", (m, f)) for (m, f), label in zip(sizes, labels)]


def diagnose_parameter_count(d_model: int, d_ff: int, got: int, expected: int, earlier_right: bool) -> str:
    for count, message in known_counts(d_model, d_ff):
        if got == count:
            return f"{message} (you get {got:,}, the layer has {expected:,})"
    if earlier_right and expected > 2 ** 31:
        return (f"right on the smaller sizes, but here the layer has {expected:,} parameters and your answer is "
                f"{got:,} (off by {got - expected:+,}): the arithmetic lost digits — a float (a /, **0.5, "
                "math.pow, 1e…, float(...)) rounds whole numbers above 2⁵³, a fixed-width integer (np.int32, an "
                "int32 tensor) overflows. Compute with Python ints only: +, * (and // where a division is exact)")
    return f"the layer has {expected:,} parameters, your formula gives {got:,} (off by {got - expected:+,})"


def parameter_error_hint(error: BaseException) -> str | None:
    if isinstance(error, MemoryError) or "alloc" in str(error).lower():
        return ("Build no layer to count it — at these sizes it does not fit in memory: compute the number from "
                "d_model and d_ff with a formula")
    return None


def check_encoder_layer_parameters(ns) -> None:
    count = ns["encoder_layer_parameters"]
    earlier_right = False
    for case in parameter_cases(Draw()):
        d_model, d_ff = case.args
        got = call_learner(count, "encoder_layer_parameters", case.description, d_model, d_ff,
                           forbidden=PARAMETER_FORBIDDEN, error_hint=parameter_error_hint)
        expected = encoder_layer_parameter_count(d_model, d_ff)
        gap = difference(got, expected, "the count")
        if gap is None:
            earlier_right = True
            continue
        if "should be an int" in gap:  # the type first: a float count can be right by value and still be wrong
            floating = isinstance(got, float) or (isinstance(got, torch.Tensor) and got.is_floating_point())
            advice = (" — a float crept in (a /, a float constant, math.pow, float(...)): keep to whole-number "
                      "arithmetic, +, * and // only, so the count stays exact at any size" if floating else "")
            raise ExerciseFailure(f"on {case.description}: return an int (a number of parameters), got "
                                  f"{type(got).__name__} {show(got)}{advice}.")
        got = int(got)
        raise ExerciseFailure(f"on {case.description}: "
                              f"{diagnose_parameter_count(d_model, d_ff, got, expected, earlier_right)}.")


# ---------------------------------------------------------------------------- q2: one Pre-LN residual block
@dataclass
class SublayerCase:
    case: Case                                  # args: (x, sublayer, norm)
    parameters: dict[str, torch.Tensor]         # what gradients must reach: "the sublayer's …", "the norm's …"


def randomised(module: nn.Module, generator: torch.Generator, scale: float = 0.5) -> nn.Module:
    """``module`` with every parameter redrawn around its default (gains ≠ 1, biases ≠ 0), so a misplaced norm shows."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            base = 1.0 if name.endswith("weight") and p.dim() == 1 else 0.0
            p.copy_(base + scale * torch.randn(p.shape, generator=generator))
    return module


def sublayer_cases(draw: Draw) -> list[SublayerCase]:
    """x with a large mean (so a missing or misplaced norm shows), sublayers of three kinds, norms of two kinds."""
    cases = []
    d_model = draw.integer(3, 6)  # over 2 features a LayerNorm gives ±1 whatever comes in: too many answers agree
    generator = draw.generator()
    linear, norm = randomised(nn.Linear(d_model, d_model), generator), randomised(nn.LayerNorm(d_model), generator)
    x = draw.randn(1, 1, d_model, scale=3.0) + 2
    cases.append(SublayerCase(
        Case(f"x (1, 1, {d_model}) (batch 1, one token), sublayer nn.Linear({d_model}, {d_model}), "
             f"norm nn.LayerNorm({d_model}) with gain ≠ 1 and bias ≠ 0", (x, linear, norm)),
        {**{f"the sublayer's {k}": p for k, p in linear.named_parameters()},
         **{f"the norm's {k}": p for k, p in norm.named_parameters()}}))

    batch, seq = draw.distinct(2, 2, 8)
    d_model = draw.choice([n for n in range(3, 9) if n not in (batch, seq)])
    hidden = draw.choice([n for n in range(2, 12) if n not in (batch, seq, d_model)])
    w1 = draw.randn(d_model, hidden, scale=0.5).requires_grad_()
    w2 = draw.randn(hidden, d_model, scale=0.5).requires_grad_()

    def two_matrices(h):
        return torch.tanh(h @ w1) @ w2
    rms = randomised(nn.RMSNorm(d_model), generator)
    x = draw.randn(batch, seq, d_model, scale=3.0) - 1
    cases.append(SublayerCase(
        Case(f"x ({batch}, {seq}, {d_model}), sublayer a function (tanh(h @ W1) @ W2), norm nn.RMSNorm({d_model})",
             (x, two_matrices, rms)),
        {"the sublayer's W1": w1, "the sublayer's W2": w2,
         **{f"the norm's {k}": p for k, p in rms.named_parameters()}}))

    heads = draw.integer(1, 3)
    batch, seq = draw.distinct(2, 2, 7, avoid=(heads,))
    d_head = draw.choice([n for n in range(3, 9) if n not in (heads, batch, seq)])
    d_model = heads * d_head
    attention = randomised(PackageAttention(d_model, heads), generator)
    norm = randomised(nn.LayerNorm(d_model), generator)

    def self_attention(h):
        return attention(h, h, h)[0]
    x = draw.randn(batch, seq, d_model, scale=3.0) + 2
    cases.append(SublayerCase(
        Case(f"x ({batch}, {seq}, {d_model}), sublayer self-attention (it mixes the positions), "
             f"norm nn.LayerNorm({d_model}) with gain ≠ 1 and bias ≠ 0", (x, self_attention, norm)),
        {**{f"the sublayer's {k}": p for k, p in attention.named_parameters()},
         **{f"the norm's {k}": p for k, p in norm.named_parameters()}}))
    return cases


PRE_LN_FORBIDDEN = {"the package's course_utils.layers.ResidualSublayer": ResidualSublayer}


def package_pre_ln(x: torch.Tensor, sublayer: Callable, norm: nn.Module) -> torch.Tensor:
    """The package's Pre-LN residual block (course_utils.layers.ResidualSublayer) with the given norm, no dropout."""
    block = ResidualSublayer(x.size(-1), 0.0, "pre")
    block.norm = norm
    return block(x, sublayer)


def diagnose_pre_ln(case: Case, got: Any) -> str | None:
    x, sublayer, norm = case.args
    if not isinstance(got, torch.Tensor):
        return None
    if got.shape != x.shape:
        return (f"the output must keep the shape (batch, seq, d_model) = {tuple(x.shape)} so layers can stack, got "
                f"{tuple(got.shape)}")
    plain = F.layer_norm(x, x.shape[-1:])
    with torch.no_grad():
        if close(got.detach(), x + sublayer(norm(x))):
            return None  # right values: the contract (dtype, device) explains the difference
        variants = (
            (norm(x + sublayer(x)), "that is Post-LN, norm(x + sublayer(x)). Pre-LN normalises the *input of the "
                                    "sublayer* and leaves the residual path alone: x + sublayer(norm(x))"),
            (sublayer(norm(x)), "the residual is missing: add x back, x + sublayer(norm(x))"),
            (x + norm(sublayer(x)), "you normalised the sublayer's output; Pre-LN normalises its input: "
                                    "x + sublayer(norm(x))"),
            (norm(x) + sublayer(norm(x)), "the residual must carry the raw x, not norm(x): x + sublayer(norm(x)). "
                                          "Otherwise the identity path is no longer an identity"),
            (x + sublayer(x), "the norm is never applied: the sublayer must read norm(x), x + sublayer(norm(x))"),
            (norm(x + sublayer(norm(x))), "a norm after the addition too: Pre-LN normalises only the sublayer's "
                                          "input, x + sublayer(norm(x)), and the sum leaves unnormalised"),
            (x + sublayer(norm(norm(x))), "the norm is applied twice: once, to the sublayer's input, "
                                          "x + sublayer(norm(x))"),
            (x + sublayer(plain), "you normalised with a LayerNorm of your own (gain 1, bias 0); use the `norm` "
                                  "you are given — it has learnt parameters: x + sublayer(norm(x))"),
        )
        for value, message in variants:
            if close(got.detach(), value):
                return message
    return None


def check_pre_ln_gradients(function: Callable, entry: SublayerCase) -> None:
    """Backpropagate through the learner's block and the package's: x and every parameter get the same gradient."""
    x, sublayer, norm = entry.case.args
    description = entry.case.description
    probe = torch.randn(x.shape, generator=torch.Generator().manual_seed(7))
    leaf = x.clone().requires_grad_()
    expected = package_pre_ln(leaf, sublayer, norm)
    targets = {**entry.parameters, "x": leaf}
    wanted = torch.autograd.grad((expected * probe).sum(), list(targets.values()), allow_unused=True)
    leaf = x.clone().requires_grad_()
    got = call_learner(function, "pre_ln_sublayer", description, leaf.clone(), sublayer, norm,
                       forbidden=PRE_LN_FORBIDDEN)
    if not (isinstance(got, torch.Tensor) and got.requires_grad):
        raise ExerciseFailure(f"on {description}: the result of your `pre_ln_sublayer` carries no gradient: something "
                              "cuts the graph (.detach(), .data, .item(), torch.no_grad(), or a new tensor built "
                              "from values). A residual block must let gradients reach x and the sublayer.")
    targets = {**entry.parameters, "x": leaf}
    received = torch.autograd.grad((got * probe).sum(), list(targets.values()), allow_unused=True)
    for key, reference, grad in zip(targets, wanted, received):
        if reference is None:
            continue
        if grad is None or (grad.abs().max() == 0 and reference.abs().max() > 0):
            raise ExerciseFailure(f"on {description}: the output is right but no gradient reaches {key}: a branch "
                                  "is cut from the graph (.detach(), .data, torch.no_grad()). Keep both the "
                                  "residual and the sublayer branch tensor operations.")
        if not close(grad, reference, atol=1e-4, rtol=1e-3):
            raise ExerciseFailure(f"on {description}: the output is right but the gradient of {key} differs (by up "
                                  f"to {max_difference(grad, reference):.3g}): part of the block is cut from the "
                                  "graph (a .detach() on x or on norm(x)), or an in-place change alters "
                                  "backpropagation.")


def check_pre_ln_sublayer(ns) -> None:
    function = ns["pre_ln_sublayer"]
    entries = sublayer_cases(Draw())
    check_function(function, package_pre_ln, [entry.case for entry in entries], "pre_ln_sublayer",
                   forbidden=PRE_LN_FORBIDDEN, diagnose=diagnose_pre_ln)
    for entry in entries:
        check_pre_ln_gradients(function, entry)


# ---------------------------------------------------------------------------- q3: LayerNorm by hand
EPS = 1e-5
LAYER_NORM_FORBIDDEN = {  # what the task has the learner rebuild, and the ready-made norms that compute it too
    **{f"torch.nn.functional.{n}": getattr(F, n) for n in ("layer_norm", "batch_norm", "group_norm", "instance_norm",
                                                           "rms_norm") if hasattr(F, n)},
    **{f"torch.nn.{n}": getattr(nn, n) for n in ("LayerNorm", "GroupNorm", "RMSNorm") if hasattr(nn, n)},
    **{f"torch.{n}": getattr(torch, n) for n in ("layer_norm", "native_layer_norm", "batch_norm", "native_batch_norm",
                                                 "group_norm", "native_group_norm", "instance_norm", "rms_norm")
       if hasattr(torch, n)},
}


def layer_norm_cases(draw: Draw, with_eps: bool) -> list[Case]:
    """x (batch, seq, d_model) from one token to many, a constant token (variance 0), a token whose variance is
    about ε (so where ε goes shows), tokens of very different scales, float64; and, where the learner's
    ``layer_norm`` takes ``eps``, random ε."""
    def tokens(batch: int, seq: int, d_model: int, scale: float, shift: float) -> torch.Tensor:
        """Random tokens whose variance is never tiny by chance (only where a case wants it): each token is
        standardised, then given a spread and a mean of its own."""
        z = draw.randn(batch, seq, d_model)
        z = (z - z.mean(-1, keepdim=True)) / z.std(-1, unbiased=False, keepdim=True).clamp_min(1e-3)
        spread = 0.5 + torch.rand(batch, seq, 1, generator=draw.generator())
        offset = torch.randn(batch, seq, 1, generator=draw.generator())
        return z * spread * scale + offset + shift

    cases = []
    seq, d_model = draw.distinct(2, 3, 8)
    x = tokens(1, seq, d_model, 2.0, 3.0)
    x[0, 0] = 5.0                                                  # all features equal: variance 0
    x[0, 1] = 0.01 + draw.randn(d_model, scale=3e-3)              # variance ≈ ε
    cases.append(Case(f"x (1, {seq}, {d_model}) with a constant token (variance 0) and one of variance ≈ ε",
                      (x,)))

    d_model = draw.integer(2, 7)  # after the case above: there the batch axis alone has size 1, so its diagnosis
    x = tokens(1, 1, d_model, 2.0, 1.0)  # is unambiguous; here batch and sequence both have size 1
    cases.append(Case(f"x (1, 1, {d_model}) (batch 1, one token)", (x,)))

    batch, seq, d_model = draw.distinct(3, 2, 9)
    scales = torch.tensor([draw.choice((0.5, 1.0, 10.0, 30.0)) for _ in range(batch * seq)])
    shifts = torch.tensor([float(draw.integer(-5, 5)) for _ in range(batch * seq)])
    x = tokens(batch, seq, d_model, 1.0, 0.0) * scales.view(batch, seq, 1) + shifts.view(batch, seq, 1)
    cases.append(Case(f"x ({batch}, {seq}, {d_model}), tokens of very different scales and means", (x,)))
    cases.append(Case(f"x ({batch}, {seq}, {d_model}) in float64 (the result must stay float64)", (x.double(),)))
    if with_eps:
        for case in (cases[0], cases[2]):
            eps = float(f"{10 ** (-3 * draw.rng.random() - 0.5):.3g}")  # between 3e-4 and 0.3
            cases.append(Case(f"{case.description}, eps={eps}", case.args, {"eps": eps}))
    return cases


def reference_layer_norm(x: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], eps=eps)


def standardise(x: torch.Tensor, dims, eps: float, unbiased: bool = False) -> torch.Tensor:
    return (x - x.mean(dims, keepdim=True)) / torch.sqrt(x.var(dims, unbiased=unbiased, keepdim=True) + eps)


def diagnose_layer_norm(case: Case, got: Any) -> str | None:
    x = case.args[0]
    eps = case.kwargs.get("eps", EPS)
    if not isinstance(got, torch.Tensor) or got.shape != x.shape:
        return None
    got = got.detach()
    expected = reference_layer_norm(x, eps)
    if close(got, expected, atol=1e-4):
        return None  # right values: the contract (dtype, device) explains the difference
    if not torch.isfinite(got).all():
        return ("your output has NaN/inf: a token whose features are all equal has variance 0. Add eps inside the "
                "square root: (x - mean) / sqrt(var + eps)")
    mean = x.mean(-1, keepdim=True)
    biased = x.var(-1, unbiased=False, keepdim=True)
    variants = [
        (standardise(x, -1, eps, unbiased=True), "you used the unbiased variance (divides by n − 1); LayerNorm "
                                                 "divides by n: x.var(-1, unbiased=False, keepdim=True)"),
        ((x - mean) / (biased.sqrt() + eps), "eps is added outside the square root: (x - mean) / (sqrt(var) + eps). "
                                             "LayerNorm puts it inside, (x - mean) / sqrt(var + eps), which is what "
                                             "F.layer_norm and nn.LayerNorm compute"),
        (x - mean, "you centred the features but did not divide by the standard deviation"),
        ((x - mean) / (biased + eps), "you divided by the variance; divide by its square root, sqrt(var + eps)"),
        (x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps), "you did not subtract the mean (that is RMSNorm): "
                                                               "LayerNorm centres each token first, x - mean"),
        (standardise(x, 0, eps), "you took the statistics over the batch (that is BatchNorm's axis). LayerNorm "
                                 "normalises each token on its own, over its d_model features: dim=-1 with "
                                 "keepdim=True"),
        (standardise(x, 1, eps), "you took the statistics over the sequence (or over batch and sequence). LayerNorm "
                                 "normalises each token on its own, over its d_model features: dim=-1 with "
                                 "keepdim=True"),
        (standardise(x, (0, 1), eps), "you took the statistics over batch and sequence (BatchNorm-style). "
                                      "LayerNorm normalises each token on its own, over its d_model features: "
                                      "dim=-1, keepdim=True"),
        (standardise(x, (0, 1, 2), eps), "you took one mean and variance over the whole tensor; LayerNorm takes "
                                         "them per token, over dim=-1 with keepdim=True"),
    ]
    for value, message in variants:
        if close(got, value, atol=1e-4):
            return message
    for fixed in range(1, 65):  # sums divided by a fixed number of features instead of this tensor's d_model
        if fixed != x.size(-1):
            centred = x - x.sum(-1, keepdim=True) / fixed
            if close(got, centred / torch.sqrt((centred * centred).sum(-1, keepdim=True) / fixed + eps), atol=1e-4):
                return (f"you divided by {fixed}, a fixed number, but these tokens have {x.size(-1)} features: take "
                        "the mean over the last dimension (or divide by x.size(-1))")
    for other in (EPS, 0.0, 1e-6, 1e-8, 1e-12, 1e-3, 1e-4):
        if other != eps and close(got, standardise(x, -1, other).nan_to_num(0.0), atol=1e-4):
            if "eps" in case.kwargs and other == EPS:
                return (f"your layer_norm takes eps but ignores it: called with eps={eps}, it still used 1e-05. "
                        "Use the argument inside the square root")
            return f"you used ε = {other:g}; the task's ε is {eps:g}, inside the square root: sqrt(var + eps)"
    return None


def check_layer_norm(ns) -> None:
    function = ns["layer_norm"]
    try:
        takes_eps = "eps" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        takes_eps = False
    check_function(function, reference_layer_norm, layer_norm_cases(Draw(), takes_eps), "layer_norm",
                   forbidden=LAYER_NORM_FORBIDDEN, diagnose=diagnose_layer_norm, atol=1e-4, rtol=1e-4)


q1 = Exercise(
    name="Encoder-layer parameters, exactly",
    variables=("encoder_layer_parameters",),
    checker=check_encoder_layer_parameters,
    hints=("Count layer by layer: a linear layer holds in × out weights plus one bias per output; a LayerNorm a "
           "gain and a bias per feature. Which linear layers and how many LayerNorms does one encoder layer have?",
           "Steps: (1) self-attention: four projections d_model → d_model (queries, keys, values, output), each "
           "with its weights and its d_model biases; (2) feed-forward: d_model → d_ff then d_ff → d_model, with "
           "d_ff and d_model biases; (3) two LayerNorms of 2·d_model numbers each. Add the three parts with whole "
           "numbers only (no /, no floats), so the answer is an int and exact for any size."),
    solution=solution_of("lesson04", "encoder_layer_parameters"),
)

q2 = Exercise(
    name="A Pre-LN residual block",
    variables=("pre_ln_sublayer",),
    checker=check_pre_ln_sublayer,
    hints=("In Pre-LN, which tensor goes through the norm, and which one travels untouched along the residual "
           "path?",
           "Steps: (1) normalise x with the `norm` you are given; (2) run the `sublayer` on that; (3) add the "
           "original, raw x to the sublayer's output — a new tensor, x itself stays unchanged — and return the "
           "sum, shape (batch, seq, d_model). No detach, no in-place +=."),
    solution=solution_of("lesson04", "pre_ln_sublayer"),
    success="Correct! x + sublayer(norm(x)): right values and gradients for every sublayer and norm tried, and x "
            "left unchanged.",
)

q3 = Exercise(
    name="LayerNorm by hand",
    variables=("layer_norm",),
    checker=check_layer_norm,
    hints=("Each token is standardised on its own, over its d_model features (the last dimension) — not over the "
           "batch or the sequence. Write the steps yourself: F.layer_norm and nn.LayerNorm are what you rebuild "
           "(and no other ready-made norm — batch, group, instance or RMS norm — may do it for you).",
           "Steps, per token: the mean over the last dimension, kept as a dimension of size 1 so it broadcasts; "
           "the biased variance over the same dimension (divide by n, not n − 1); subtract the mean and divide by "
           "the square root of (variance + ε), ε = 1e-5 inside the root (or the eps argument, if your function "
           "takes one). Return a new tensor of x's shape and dtype; never change x in place."),
    solution=solution_of("lesson04", "layer_norm"),
    success="Correct! The same as F.layer_norm without gain and bias, for every shape, scale and dtype tried — "
            "constant tokens included.",
)


# ---------------------------------------------------------------------------- q4 (capstone): EncoderLayer
# paired_layers' default sizes (no two equal): batch 2, seq 5, d_model 24, heads 4, d_head 6, d_ff 40. Lesson 04's
# checks draw their own sizes on every check.
D_MODEL, N_HEADS, D_FF, BATCH, SEQ = 24, 4, 40, 2, 5
LAYER_SIGNATURE = "(d_model, n_heads, d_ff, dropout=0.1, norm='post')"
ENCODER_LAYER_LAYOUT = ("self_attn (a MultiHeadAttention with w_q, w_k, w_v, w_o), feed_forward.linear1 "
                        "(d_model → d_ff), feed_forward.linear2 (d_ff → d_model), attn_block.norm and ff_block.norm "
                        "(one nn.LayerNorm(d_model) per sublayer)")
FINAL_NORM_HINT = ("A layer has exactly one LayerNorm per sublayer; a Pre-LN stack's final LayerNorm is applied "
                   "once, after the last layer (Encoder.norm), not inside each layer. ")
ENCODER_LAYER_FORBIDDEN = {  # the block the learner writes; the package's attention and feed-forward may be used
    "the package's course_utils.layers.EncoderLayer": EncoderLayer,
    "the package's course_utils.layers.ResidualSublayer": ResidualSublayer,
    "torch.nn.TransformerEncoderLayer": nn.TransformerEncoderLayer,
    "torch.nn.TransformerEncoder": nn.TransformerEncoder,
}


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


def ffn_variant(block, activation: str):
    def run(h):
        hidden = block.feed_forward.linear1(h)
        hidden = {"relu": F.relu, "gelu": F.gelu, "none": lambda t: t}[activation](hidden)
        return block.feed_forward.linear2(hidden)
    return run


def encoder_layer_mistake(block, x, mask, kind: str, *, activation: str = "relu", use_mask: bool = True,
                          ffn_first: bool = False) -> torch.Tensor:
    """The package layer's weights wired as ``kind`` (see :func:`connect`), or with another typical bug."""
    def attention(h):
        return block.self_attn(h, h, h, mask if use_mask else None)[0]
    steps = [(attention, block.attn_block.norm), (ffn_variant(block, activation), block.ff_block.norm)]
    if ffn_first:
        steps.reverse()
    for sublayer, norm in steps:
        x = connect(kind, x, sublayer, norm)
    return x


def diagnose_encoder_layer(block, x, mask, norm: str, got: torch.Tensor) -> str | None:
    with torch.no_grad():
        for kind, message in {**CONNECTION_MISTAKES[norm], **WIRING_MISTAKES}.items():
            if close(got, encoder_layer_mistake(block, x, mask, kind)):
                return message
        if mask is not None and close(got, encoder_layer_mistake(block, x, mask, norm, use_mask=False)):
            return "the mask never reaches self-attention: pass it on, self.self_attn(h, h, h, mask)."
        if mask is not None and close(got, encoder_layer_mistake(block, x, ~mask, norm)):
            return ("the mask is inverted: True means *may attend* (the package's convention) — pass it on as it "
                    "is, self.self_attn(h, h, h, mask).")
        if close(got, encoder_layer_mistake(block, x, mask, norm, ffn_first=True)):
            return "the sublayers are in the wrong order: self-attention first, then the feed-forward network."
        for activation, message in (("none", "the feed-forward has no ReLU between its two linear layers: "
                                              "linear2(dropout(relu(linear1(x))))."),
                                    ("gelu", "the package's layer uses ReLU in the feed-forward "
                                             "(activation='relu'), not GELU.")):
            if close(got, encoder_layer_mistake(block, x, mask, norm, activation=activation)):
                return message
        if close(got, F.layer_norm(encoder_layer_mistake(block, x, mask, norm), (x.size(-1),))):
            return ("the layer ends with an extra LayerNorm: " + FINAL_NORM_HINT)
    return None


def paired_layers(package_class: type, learner_class: type, name: str, norm: str, layout: str,
                  final_norm_hint: str = "", *, sizes: tuple[int, int, int] | None = None, dropout: float = 0.0,
                  forbidden: dict[str, Any] | None = None, case: str = "", seed: int = 0):
    """``(package, learner)``: the package's layer (seeded, LayerNorms randomised) and the learner's, built with
    ``sizes = (d_model, n_heads, d_ff)`` (default: the constants above, which lesson 07 uses) and ``dropout``, the
    learner's carrying the package's weights. The learner's constructor runs under ``forbidden``."""
    d_model, n_heads, d_ff = sizes or (D_MODEL, N_HEADS, D_FF)
    with torch.random.fork_rng(devices=[]):  # the learner's global random state is left as it was
        torch.manual_seed(seed)
        package = package_class(d_model, n_heads, d_ff, dropout=dropout, norm=norm)
        randomise_norms(package, torch.Generator().manual_seed(seed + 3))
        learner = call_learner(instantiate, name, case or f"d_model={d_model}, n_heads={n_heads}, d_ff={d_ff}",
                               learner_class, name, LAYER_SIGNATURE, d_model, n_heads, d_ff, dropout=dropout,
                               norm=norm, forbidden=forbidden)
    if not isinstance(learner, nn.Module):
        raise ExerciseFailure(f"`{name}(...)` should build an nn.Module, got {type(learner).__name__}.")
    copy_weights(package, learner, name, layout, final_norm_hint)
    return package, learner


@dataclass
class BlockCase:
    """One input of a capstone check: the sizes to build the blocks with, x and the mask, and how to say it."""

    description: str
    d_model: int
    n_heads: int
    d_ff: int
    x: torch.Tensor
    mask: torch.Tensor | None
    n_layers: int = 1


def padding_rows(draw: Draw, batch: int, seq: int) -> tuple[torch.Tensor, list[int]]:
    """A key-padding mask (batch, 1, 1, seq): padding in some rows (never all of a row), none in at least one."""
    lengths = [seq] + [draw.integer(1, seq - 1) for _ in range(batch - 1)]
    draw.rng.shuffle(lengths)
    mask = torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]
    return mask[:, None, None, :], [row for row, length in enumerate(lengths) if length < seq]


def block_cases(draw: Draw, n_layers: tuple[int, int, int] = (1, 1, 1)) -> list[BlockCase]:
    """From the smallest input to the largest: one token in a batch of one without a mask; a sequence as long as
    d_head with padding in some rows only; a combined causal and padding mask. Sizes drawn with no two alike
    (except seq == d_head on purpose)."""
    def sizes(low: int, high: int, avoid: tuple[int, ...] = ()) -> tuple[int, int, int, int]:
        heads, d_head = draw.distinct(2, low, high, avoid)
        d_model = heads * d_head
        d_ff = draw.choice([n for n in range(2, 3 * d_model)
                            if n not in (heads, d_head, d_model, 4 * d_model) + avoid])
        return heads, d_head, d_model, d_ff

    def label(batch, seq, d_model, heads, d_ff, layers):
        stack = f"{layers} layer{'s' if layers > 1 else ''}, " if layers != 1 or n_layers != (1, 1, 1) else ""
        return f"{stack}batch {batch}, seq {seq}, d_model {d_model}, {heads} heads, d_ff {d_ff}"

    cases = []
    heads, d_head, d_model, d_ff = sizes(2, 4)
    x = draw.randn(1, 1, d_model, scale=2.0) + 1
    cases.append(BlockCase(f"{label(1, 1, d_model, heads, d_ff, n_layers[0])} (one token), no mask",
                           d_model, heads, d_ff, x, None, n_layers[0]))

    batch = draw.integer(2, 3)
    heads, d_head, d_model, d_ff = sizes(2, 5, avoid=(batch,))
    seq = d_head
    x = draw.randn(batch, seq, d_model, scale=2.0) + 1
    mask, padded = padding_rows(draw, batch, seq)
    rows = ", ".join(map(str, padded))
    cases.append(BlockCase(f"{label(batch, seq, d_model, heads, d_ff, n_layers[1])} (seq = d_head), padding mask "
                           f"{tuple(mask.shape)} with padding in row{'s' if len(padded) > 1 else ''} {rows} only",
                           d_model, heads, d_ff, x, mask, n_layers[1]))

    batch, seq = draw.distinct(2, 3, 6)
    pool = [n for n in range(2, 8) if n not in (batch, seq)]
    # heads and d_model other than the earlier cases' (and d_ff below), so that no fixed number passes them all
    pairs = [(h, dh) for h in pool for dh in pool if h != dh and h not in [c.n_heads for c in cases]
             and h * dh not in [c.d_model for c in cases]]
    heads, d_head = draw.choice(pairs or [(h, dh) for h in pool for dh in pool
                                          if h != dh and h != cases[-1].n_heads])
    d_model = heads * d_head
    d_ff = draw.choice([n for n in range(2, 3 * d_model) if n not in (heads, d_head, d_model, 4 * d_model, batch,
                                                                     seq, *[c.d_ff for c in cases])])
    x = draw.randn(batch, seq, d_model, scale=2.0) + 1
    padding, padded = padding_rows(draw, batch, seq)
    mask = padding & torch.ones(seq, seq, dtype=torch.bool).tril()[None, None]
    rows = ", ".join(map(str, padded))
    cases.append(BlockCase(f"{label(batch, seq, d_model, heads, d_ff, n_layers[2])}, combined causal and padding "
                           f"mask {tuple(mask.shape)} (padding in row{'s' if len(padded) > 1 else ''} {rows} only)",
                           d_model, heads, d_ff, x, mask, n_layers[2]))
    return cases


def layer_error_hint(error: BaseException) -> str | None:
    message = str(error)
    if "tuple" in message:
        return ("The attention module returns a pair (output, weights): take [0], e.g. self.self_attn(h, h, h, "
                "mask)[0]")
    if "shape" in message or "size" in message:
        return "Sizes differ on every check: take them from the arguments and the input, never a fixed number"
    return None


def check_eval_is_deterministic(learner: nn.Module, name: str, case: BlockCase, forbidden) -> None:
    """Eval mode: two calls on one input agree (an input of 3 × 5 tokens, so that a dropout left on always shows).
    A crash here is left to the comparison on ``case`` itself, which names a smaller input."""
    learner.eval()
    x = torch.randn(3, 5, case.d_model, generator=torch.Generator().manual_seed(5))
    where = (f"{case.description.split(', batch')[0]}, d_model {case.d_model}, {case.n_heads} heads, d_ff {case.d_ff}, "
             f"x {tuple(x.shape)} in eval mode")
    try:
        with torch.no_grad():
            first, second = (call_learner(learner, name, where, x.clone(), forbidden=forbidden) for _ in range(2))
    except ExerciseFailure:
        return
    first = first[0] if isinstance(first, tuple) else first
    second = second[0] if isinstance(second, tuple) else second
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape \
            and not torch.equal(first, second):
        raise ExerciseFailure(f"on {where}: two calls of your `{name}` give different outputs: dropout is still "
                              "active. Use nn.Dropout modules (they follow .train()/.eval()) or pass "
                              "training=self.training to F.dropout.")


def compare_blocks(package: nn.Module, learner: nn.Module, name: str, case: BlockCase, diagnose, forbidden) -> None:
    """Outputs and gradients (x and every parameter) of the learner's block against the package's on ``case``; the
    inputs must come back unchanged, and the learner's code runs under ``forbidden``."""
    where = case.description
    leaf_p, leaf_l = case.x.clone().requires_grad_(), case.x.clone().requires_grad_()
    expected = package(leaf_p, case.mask)
    x_in, mask_in = leaf_l.clone(), snapshot(case.mask)  # x as a layer sees it: the output of earlier layers
    before = {"x": snapshot(x_in), "mask": snapshot(mask_in)}
    result = call_learner(learner, name, where, x_in, mask_in, forbidden=forbidden, error_hint=layer_error_hint)
    check_inputs_kept(before, {"x": x_in, "mask": mask_in}, name, where)
    got, _ = first_output(result, name, pair=False)
    gap = difference(got, expected, f"the output of your `{name}`")
    if gap:
        specific = diagnose(got.detach()) if isinstance(got, torch.Tensor) and got.shape == expected.shape else None
        if specific is None and isinstance(got, torch.Tensor) and got.shape == expected.shape:
            heads = getattr(getattr(learner, "self_attn", None), "n_heads", case.n_heads)
            if heads != case.n_heads:
                specific = (f"your self_attn has {heads} heads, but the layer was built with n_heads="
                            f"{case.n_heads}: pass n_heads on, MultiHeadAttention(d_model, n_heads, dropout)")
        raise ExerciseFailure(f"on {where}: {specific or gap}.")
    backpropagate_both(package, expected, learner, got, name, f"on {where}")
    compare_gradients(*gradients_that_matter(gradients(package, {"x": leaf_p}), gradients(learner, {"x": leaf_l})),
                      name, f"on {where}")


def gradients_that_matter(expected: dict[str, torch.Tensor | None], got: dict[str, torch.Tensor | None]):
    """The gradients to compare: where both are (almost) zero — the queries' and keys' with a single token, whose
    softmax weight is 1 whatever they are — float noise in the package's kernel must not read as a cut graph."""
    keep = {key for key, reference in expected.items()
            if not (reference is not None and reference.abs().max() < 1e-6 and got.get(key) is not None
                    and got[key].abs().max() < 1e-6)}
    return ({k: v for k, v in expected.items() if k in keep}, {k: v for k, v in got.items() if k in keep})


def self_attention_modules(block: nn.Module) -> list[nn.Module]:
    return [m for key, m in block.named_modules() if key.split(".")[-1] == "self_attn"]


def check_dropout(package: nn.Module, learner: nn.Module, name: str, case: BlockCase, dropout: float) -> None:
    """Train mode: the learner's block drops exactly what the package's drops (the same stream of random numbers),
    the attention's own dropout aside (lesson 03's business, and the package's fused kernel draws differently);
    then the attention must drop something too."""
    def run(block):
        for attention in self_attention_modules(block):
            attention.eval()
        return block(case.x.clone(), snapshot(case.mask))
    where = f"{case.description}, dropout={dropout}"
    try:
        check_dropout_placement(package, learner, run, name, where)
    except ExerciseFailure as failure:
        wrong = [(key, m.p) for key, m in learner.named_modules() if isinstance(m, nn.Dropout) and m.p != dropout]
        if wrong:
            key, p = wrong[0]
            raise ExerciseFailure(f"on {where}: your `{name}.{key}` drops with p={p}, but the block was built with "
                                  f"dropout={dropout}: pass the dropout argument on to every nn.Dropout "
                                  "(and to the attention).") from None
        raise failure from None
    learner.train()
    for key, attention in ((k, m) for k, m in learner.named_modules() if k.split(".")[-1] == "self_attn"):
        if isinstance(attention, PackageAttention):
            if attention.dropout != dropout:
                raise ExerciseFailure(f"your `{name}.{key}` was built with dropout={attention.dropout}, the block "
                                      f"with dropout={dropout}: pass it on, MultiHeadAttention(d_model, n_heads, "
                                      "dropout).")
            continue
        h = case.x.clone()
        with torch.no_grad():
            first, second = (call_learner(attention, name, where, h, h, h, snapshot(case.mask)) for _ in range(2))
        first = first[0] if isinstance(first, tuple) else first
        second = second[0] if isinstance(second, tuple) else second
        if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and torch.equal(first, second):
            raise ExerciseFailure(f"on {where}: in train mode your `{name}.{key}` never drops anything: build the "
                                  "attention with the block's dropout, MultiHeadAttention(d_model, n_heads, "
                                  "dropout).")


def check_encoder_layer(ns) -> None:
    learner_class = own_module_class(ns["EncoderLayer"], "EncoderLayer", "course_utils.layers.EncoderLayer")
    draw = Draw()
    dropout = draw.choice((0.2, 0.25, 0.3, 0.4, 0.5))
    cases = block_cases(draw)
    for index, case in enumerate(cases):
        for norm in ("post", "pre"):
            labelled = BlockCase(f"norm={norm!r}, {case.description}", case.d_model, case.n_heads, case.d_ff,
                                 case.x, case.mask)
            package, learner = paired_layers(EncoderLayer, learner_class, "EncoderLayer", norm, ENCODER_LAYER_LAYOUT,
                                             FINAL_NORM_HINT, sizes=(case.d_model, case.n_heads, case.d_ff),
                                             dropout=dropout, forbidden=ENCODER_LAYER_FORBIDDEN,
                                             case=labelled.description, seed=draw.integer(0, 2 ** 30))
            package.eval()
            check_eval_is_deterministic(learner, "EncoderLayer", labelled, ENCODER_LAYER_FORBIDDEN)

            def diagnose(got, package=package, case=case, norm=norm):
                return diagnose_encoder_layer(package, case.x, case.mask, norm, got)
            compare_blocks(package, learner, "EncoderLayer", labelled, diagnose, ENCODER_LAYER_FORBIDDEN)
            if index == len(cases) - 1:
                check_dropout(package, learner, "EncoderLayer", labelled, dropout)


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

q4 = Exercise(
    name="Capstone: your own EncoderLayer",
    variables=("EncoderLayer",),
    checker=check_encoder_layer,
    hints=("Two residual blocks in a row — self-attention, then the feed-forward network — each with a LayerNorm "
           "of its own: Post-LN normalises after the addition, Pre-LN before the sublayer, and dropout sits on "
           "the sublayer's output. Stuck? `from course_utils.layers import EncoderLayer` and move on.",
           "Two residual blocks: x = block1(x, self-attention), then block2(x, feed-forward). A block is "
           "post: norm(x + dropout(f(x))), pre: x + dropout(f(norm(x))). Give each block its own LayerNorm named "
           "`norm`; the FFN is linear1 → ReLU → dropout → linear2; the attention is called as (h, h, h, mask) and "
           "returns a pair — keep the output. Pass d_model, n_heads, d_ff and dropout on everywhere, never a fixed "
           "number. Stuck? `from course_utils.layers import EncoderLayer` and move on."),
    solution=solution_of("lesson04", "FeedForward", "Residual", "EncoderLayer"),
    success="Correct! Same outputs and gradients as course_utils.layers.EncoderLayer for every size and mask tried, "
            "Post-LN and Pre-LN, and the same dropout in train mode.",
    task=(
        "**Capstone — your own `EncoderLayer`.** Write `EncoderLayer(d_model, n_heads, d_ff, dropout=0.1, "
        "norm=\"post\")` with `forward(x, mask=None)`: `x (batch, seq, d_model)` → same shape. Self-attention, then "
        "the feed-forward network, each inside a residual connection with its own LayerNorm:\n\n"
        "* `norm=\"post\"` (the paper): $x \\leftarrow \\text{LayerNorm}(x + \\text{dropout}(F(x)))$;\n"
        "* `norm=\"pre\"`: $x \\leftarrow x + \\text{dropout}(F(\\text{LayerNorm}(x)))$.\n\n"
        "Attribute names — the package's, so its weights load into yours: `self_attn` (a `MultiHeadAttention`: yours "
        "from lesson 03 or the package's), `feed_forward.linear1` (d_model → d_ff) and `feed_forward.linear2` "
        "(d_ff → d_model) with a ReLU and a dropout between, `attn_block.norm` and `ff_block.norm` (one "
        "`nn.LayerNorm(d_model)` each). The starter below suggests small `FeedForward` and `Residual` modules that "
        "give exactly these names; the residual wiring is yours to write (the package's `EncoderLayer`, "
        "`ResidualSublayer` or `nn.TransformerEncoderLayer` inside your layer fail the check).\n\n"
        "How it is checked: every check draws fresh sizes — d_model, heads, d_ff, batch and length, no two alike "
        "— and tries, from the smallest to the largest, one token in a batch of one, a sequence as long as d_head "
        "with padding in some rows only, and a combined causal and padding mask. For each, with `norm=\"post\"` and "
        "`\"pre\"`, it builds `course_utils.layers.EncoderLayer` with those sizes and a random dropout, copies its "
        "parameters into yours (buffers stay yours), and compares outputs and gradients in eval mode; your layer "
        "must leave `x` and `mask` unchanged. In train mode yours must drop exactly what the package's drops "
        "(after each sublayer and inside the feed-forward), and its attention must drop too. `q4.hint()` and "
        "`q4.solution()` help; stuck? `from course_utils.layers import EncoderLayer` and move on."
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
        "class EncoderLayer(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm=\"post\"):\n"
        "        super().__init__()\n"
        "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
        "        raise NotImplementedError  # feed_forward, attn_block, ff_block\n"
        "\n"
        "    def forward(self, x, mask=None):\n"
        "        raise NotImplementedError  # attention block, then feed-forward block\n"
    ),
)


# ---------------------------------------------------------------------------- q5 (capstone): Encoder
N_LAYERS = 3
ENCODER_SIGNATURE = "(n_layers, d_model, n_heads, d_ff, dropout=0.1, norm='post')"
ENCODER_LAYOUT = ("layers (an nn.ModuleList of n_layers separate EncoderLayers, each with the names of q4) and "
                  "norm (the final nn.LayerNorm(d_model))")


def _package_encoder_class():
    from ..models import Encoder
    return Encoder


def encoder_forbidden() -> dict[str, Any]:
    return {"the package's course_utils.models.Encoder": _package_encoder_class(),
            "torch.nn.TransformerEncoder": nn.TransformerEncoder,
            "torch.nn.TransformerEncoderLayer": nn.TransformerEncoderLayer}


def encoder_mistake(encoder, x, mask, *, final_norm: str = "end", chain: bool = True,
                    use_mask: bool = True, layer_norm: str | None = None) -> torch.Tensor:
    """The package encoder's weights with a typical stacking bug (``layer_norm``: the layers wired Post-/Pre-LN
    whatever the encoder was asked for)."""
    h = x
    for layer in encoder.layers:
        inputs = h if chain else x
        if layer_norm is None:
            h = layer(inputs, mask if use_mask else None)
        else:
            h = encoder_layer_mistake(layer, inputs, mask if use_mask else None, layer_norm)
        if final_norm == "every_layer":
            h = encoder.norm(h)
    return encoder.norm(h) if final_norm == "end" else h


ENCODER_MISTAKES = (
    ({"final_norm": "none"}, "the final LayerNorm is missing: after the last layer return self.norm(x). With "
                             "Pre-LN the residual stream is never normalised otherwise — its scale grows with "
                             "depth; the package applies it in both modes."),
    ({"final_norm": "every_layer"}, "the final LayerNorm is applied after every layer; apply it once, after the "
                                    "loop."),
    ({"chain": False}, "every layer reads the encoder's input instead of the previous layer's output: "
                       "x = layer(x, mask) inside the loop."),
    ({"use_mask": False}, "the mask is not passed on to the layers: x = layer(x, mask)."),
)


def check_encoder(ns) -> None:
    from ..config import TransformerConfig

    package_class = _package_encoder_class()
    forbidden = encoder_forbidden()
    learner_class = own_module_class(ns["Encoder"], "Encoder", "course_utils.models.Encoder")
    draw = Draw()
    dropout = draw.choice((0.2, 0.25, 0.3, 0.4, 0.5))
    cases = block_cases(draw, n_layers=(1, 2, 3))
    for index, case in enumerate(cases):
        for norm in ("post", "pre"):
            where = f"norm={norm!r}, {case.description}"
            labelled = BlockCase(where, case.d_model, case.n_heads, case.d_ff, case.x, case.mask, case.n_layers)
            sizes = (case.n_layers, case.d_model, case.n_heads, case.d_ff)
            seed = draw.integer(0, 2 ** 30)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                package = package_class(TransformerConfig(vocab_size=10, d_model=case.d_model, n_heads=case.n_heads,
                                                          d_ff=case.d_ff, n_layers=case.n_layers, dropout=dropout,
                                                          norm=norm))
                randomise_norms(package, torch.Generator().manual_seed(seed + 3))
                learner = call_learner(instantiate, "Encoder", where, learner_class, "Encoder", ENCODER_SIGNATURE,
                                       *sizes, dropout=dropout, norm=norm, forbidden=forbidden)
            if not isinstance(learner, nn.Module):
                raise ExerciseFailure(f"`Encoder(...)` should build an nn.Module, got {type(learner).__name__}.")
            copy_weights(package, learner, "Encoder", ENCODER_LAYOUT)
            package.eval()
            check_eval_is_deterministic(learner, "Encoder", labelled, forbidden)

            def diagnose(got, package=package, case=case, norm=norm):
                with torch.no_grad():
                    for knobs, message in ENCODER_MISTAKES:
                        if close(got, encoder_mistake(package, case.x, case.mask, **knobs)):
                            return message
                    other = "pre" if norm == "post" else "post"
                    if close(got, encoder_mistake(package, case.x, case.mask, layer_norm=other)):
                        return (f"with norm={norm!r} your layers are wired {other.capitalize()}-LN: pass norm on to "
                                "every EncoderLayer.")
                return None
            compare_blocks(package, learner, "Encoder", labelled, diagnose, forbidden)
            if index == len(cases) - 1:
                check_dropout(package, learner, "Encoder", labelled, dropout)


q5 = Exercise(
    name="Capstone: stack the layers into an Encoder",
    variables=("Encoder",),
    checker=check_encoder,
    hints=("A stack: n_layers separate layers, each reading the previous one's output, then one final LayerNorm "
           "— in both Post-LN and Pre-LN. Stuck? `from course_utils.models import Encoder` (it takes a "
           "TransformerConfig) and move on.",
           "__init__: an nn.ModuleList holding a *new* EncoderLayer per layer (built with d_model, n_heads, d_ff, "
           "dropout and norm), and an nn.LayerNorm(d_model) named norm. forward: run every layer in turn on the "
           "previous layer's output, with the mask, then return the final norm of x — once, after the loop. Stuck? "
           "`from course_utils.models import Encoder` (it takes a TransformerConfig) and move on."),
    solution=solution_of("lesson04", "Encoder"),
    success="Correct! Same outputs and gradients as course_utils.models.Encoder for every depth, size and mask "
            "tried, Post-LN and Pre-LN, and the same dropout in train mode.",
    task=(
        "**Capstone — stack the layers.** Write `Encoder(n_layers, d_model, n_heads, d_ff, dropout=0.1, "
        "norm=\"post\")` with `forward(x, mask=None)`: `n_layers` encoder layers one after the other, then one "
        "final LayerNorm. For Pre-LN that final norm is essential: nothing else normalises the residual stream "
        "that leaves the last layer.\n\n"
        "Attribute names — the package's: `layers` (an `nn.ModuleList` of separate `EncoderLayer`s — yours from "
        "the capstone above, or the package's) and `norm` (`nn.LayerNorm(d_model)`). The stack is yours to write: "
        "the package's `Encoder`, `nn.TransformerEncoder` or `nn.TransformerEncoderLayer` inside it fail the "
        "check.\n\n"
        "How it is checked: against `course_utils.models.Encoder` with 1, 2 and 3 layers and fresh random sizes on "
        "every check (one token in a batch of one; padding in some rows only; a combined causal and padding mask), "
        "Post-LN and Pre-LN: its parameters are copied into yours, outputs and gradients are compared in eval mode "
        "with a random dropout, `x` and `mask` must come back unchanged, and in train mode yours must drop exactly "
        "what the package's drops. `q5.hint()` and `q5.solution()` help; stuck? `from course_utils.models import "
        "Encoder` and move on."
    ),
    starter=(
        "import torch.nn as nn\n"
        "\n"
        "\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm=\"post\"):\n"
        "        super().__init__()\n"
        "        raise NotImplementedError  # self.layers = nn.ModuleList(...), self.norm = nn.LayerNorm(d_model)\n"
        "\n"
        "    def forward(self, x, mask=None):\n"
        "        raise NotImplementedError  # every layer in turn, then the final norm\n"
    ),
)
