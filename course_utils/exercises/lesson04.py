"""Exercises of notebook 04 (the encoder layer): exact parameter count, a Pre-LN residual block, LayerNorm by hand."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import count_parameters
from ..layers import EncoderLayer
from .core import Exercise, ExerciseFailure

CONFIGS = ((128, 512), (512, 2048), (48, 100))  # (d_model, d_ff); the last one has d_ff != 4·d_model


def check_encoder_layer_parameters(ns) -> None:
    count = ns["encoder_layer_parameters"]
    for d_model, d_ff in CONFIGS:
        got = count(d_model, d_ff)
        if not isinstance(got, int) or isinstance(got, bool):
            raise ExerciseFailure(f"return an int (a number of parameters), got {type(got).__name__} {got!r}.")
        expected = count_parameters(EncoderLayer(d_model, n_heads=4, d_ff=d_ff))
        if got == expected:
            continue
        attention, ffn_weights = 4 * d_model * d_model, 2 * d_model * d_ff
        no_bias = attention + ffn_weights
        if got == no_bias:
            raise ExerciseFailure(f"for d_model={d_model}, d_ff={d_ff} you counted only the weight matrices "
                                  f"({got:,}) — the quick estimate 4·d² + 2·d·d_ff. Add the biases (4·d_model in "
                                  "attention, d_ff + d_model in the FFN) and the two LayerNorms (2·d_model each).")
        if got == expected - 4 * d_model:
            raise ExerciseFailure("biases are right, but the two LayerNorms are missing: each has a gain and a "
                                  "bias vector of d_model numbers, 4·d_model in total.")
        if got == expected - 2 * d_model:
            raise ExerciseFailure("one LayerNorm is missing: the layer has two (one per sublayer), each with "
                                  "2·d_model parameters.")
        if got == no_bias + 4 * d_model:
            raise ExerciseFailure("LayerNorms counted, but the biases of the six linear layers are missing "
                                  "(4·d_model in attention, d_ff + d_model in the FFN).")
        raise ExerciseFailure(f"for d_model={d_model}, d_ff={d_ff} the layer has {expected:,} parameters, your "
                              f"formula gives {got:,} (off by {got - expected:+,}).")


def example_block(seed: int = 0) -> tuple[torch.Tensor, nn.Linear, nn.LayerNorm]:
    """x ``(2, 5, 8)`` with a large mean, a linear sublayer, and a LayerNorm whose gain/bias are not 1/0."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, 8, generator=generator) * 3 + 2
    sublayer = nn.Linear(8, 8)
    norm = nn.LayerNorm(8)
    with torch.no_grad():
        for p in (*sublayer.parameters(), *norm.parameters()):
            p.copy_(torch.randn(p.shape, generator=generator))
    return x, sublayer, norm


def check_pre_ln_sublayer(ns) -> None:
    x, sublayer, norm = example_block()
    with torch.no_grad():
        got = ns["pre_ln_sublayer"](x, sublayer, norm)
        if not isinstance(got, torch.Tensor):
            raise ExerciseFailure(f"return a tensor, got {type(got).__name__}.")
        if got.shape != x.shape:
            raise ExerciseFailure(f"the output must keep the shape (batch, seq, d_model) = {tuple(x.shape)} so "
                                  f"layers can stack, got {tuple(got.shape)}.")
        expected = x + sublayer(norm(x))
        if torch.allclose(got, expected, atol=1e-5):
            return
        if torch.allclose(got, norm(x + sublayer(x)), atol=1e-5):
            raise ExerciseFailure("that is Post-LN, norm(x + sublayer(x)). Pre-LN normalises the *input of the "
                                  "sublayer* and leaves the residual path alone: x + sublayer(norm(x)).")
        if torch.allclose(got, sublayer(norm(x)), atol=1e-5):
            raise ExerciseFailure("the residual is missing: add x back, x + sublayer(norm(x)).")
        if torch.allclose(got, x + norm(sublayer(x)), atol=1e-5):
            raise ExerciseFailure("you normalised the sublayer's output; Pre-LN normalises its input: "
                                  "x + sublayer(norm(x)).")
        if torch.allclose(got, norm(x) + sublayer(norm(x)), atol=1e-5):
            raise ExerciseFailure("the residual must carry the raw x, not norm(x): x + sublayer(norm(x)). "
                                  "Otherwise the identity path is no longer an identity.")
        raise ExerciseFailure(f"differs from x + sublayer(norm(x)) by up to {(got - expected).abs().max():.3g}.")


def example_tokens() -> torch.Tensor:
    """``(3, 4, 6)``: tokens of very different scales, and one constant token (variance 0)."""
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, 6, generator=generator) * torch.tensor([1.0, 10.0, 0.1])[:, None, None]
    x[1, 2] = 5.0
    return x


def check_layer_norm(ns) -> None:
    x = example_tokens()
    got = ns["layer_norm"](x)
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return a tensor, got {type(got).__name__}.")
    if got.shape != x.shape:
        raise ExerciseFailure(f"LayerNorm keeps the shape {tuple(x.shape)}, got {tuple(got.shape)}.")
    expected = F.layer_norm(x, (x.size(-1),), eps=1e-5)
    if not torch.isfinite(got).all():
        raise ExerciseFailure("your output has NaN/inf: a token whose features are all equal has variance 0. "
                              "Add eps inside the square root: (x - mean) / torch.sqrt(var + eps).")
    if torch.allclose(got, expected, atol=1e-4):
        return
    mean = x.mean(-1, keepdim=True)
    if torch.allclose(got, (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5), atol=1e-4):
        raise ExerciseFailure("you used the unbiased variance (divides by n − 1); LayerNorm divides by n: "
                              "x.var(-1, unbiased=False, keepdim=True).")
    for dims, what in (((0,), "over the batch (that is BatchNorm's axis)"), ((1,), "over the sequence"),
                       ((0, 1), "over batch and sequence (BatchNorm-style)")):
        other = (x - x.mean(dims, keepdim=True)) / torch.sqrt(x.var(dims, unbiased=False, keepdim=True) + 1e-5)
        if torch.allclose(got, other, atol=1e-4):
            raise ExerciseFailure(f"you took the statistics {what}. LayerNorm normalises each token on its own, "
                                  "over its d_model features: mean and variance over dim=-1 with keepdim=True.")
    if torch.allclose(got, x - mean, atol=1e-4):
        raise ExerciseFailure("you centred the features but did not divide by the standard deviation.")
    raise ExerciseFailure(f"differs from F.layer_norm by up to {(got - expected).abs().max():.3g}.")


q1 = Exercise(
    name="Encoder-layer parameters, exactly",
    variables=("encoder_layer_parameters",),
    checker=check_encoder_layer_parameters,
    hint="Count each linear layer as in×out weights + out biases: four d_model→d_model projections, then "
         "d_model→d_ff and d_ff→d_model. Each of the two LayerNorms adds a gain and a bias of d_model numbers.",
    solution=(
        "def encoder_layer_parameters(d_model, d_ff):\n"
        "    attention = 4 * (d_model * d_model + d_model)              # W_q, W_k, W_v, W_o with biases\n"
        "    feed_forward = d_model * d_ff + d_ff + d_ff * d_model + d_model\n"
        "    layer_norms = 2 * (2 * d_model)                            # gain and bias, twice\n"
        "    return attention + feed_forward + layer_norms\n"
    ),
)

q2 = Exercise(
    name="A Pre-LN residual block",
    variables=("pre_ln_sublayer",),
    checker=check_pre_ln_sublayer,
    hint="Normalise what goes *into* the sublayer; add the untouched x to what comes out.",
    solution="def pre_ln_sublayer(x, sublayer, norm):\n    return x + sublayer(norm(x))\n",
)

q3 = Exercise(
    name="LayerNorm by hand",
    variables=("layer_norm",),
    checker=check_layer_norm,
    hint="Per token: mean and (biased) variance over the last dimension, keepdim=True; "
         "(x - mean) / sqrt(var + 1e-5).",
    solution=(
        "import torch\n\n"
        "def layer_norm(x, eps=1e-5):\n"
        "    mean = x.mean(dim=-1, keepdim=True)\n"
        "    var = x.var(dim=-1, unbiased=False, keepdim=True)\n"
        "    return (x - mean) / torch.sqrt(var + eps)\n"
    ),
)
