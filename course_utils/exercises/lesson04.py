"""Exercises of notebook 04 (the encoder layer): exact parameter count, a Pre-LN residual block, LayerNorm by hand."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import count_parameters
from ..layers import EncoderLayer
from .asserts import close, compare_block, copy_weights, instantiate, own_module_class
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
        raise ExerciseFailure(f"differs from x + sublayer(norm(x)) by up to {(got - expected).abs().max():.3g}: "
                              "call the sublayer once on norm(x) and add x, unchanged.")


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
    biased = x.var(-1, unbiased=False, keepdim=True)
    if torch.allclose(got, (x - mean) / (biased.sqrt() + 1e-5), atol=1e-5):
        raise ExerciseFailure("eps is added outside the square root: (x - mean) / (sqrt(var) + eps). LayerNorm puts "
                              "it inside, (x - mean) / torch.sqrt(var + eps), which is what F.layer_norm and "
                              "nn.LayerNorm compute.")
    if torch.allclose(got, x - mean, atol=1e-4):
        raise ExerciseFailure("you centred the features but did not divide by the standard deviation.")
    raise ExerciseFailure(f"differs from F.layer_norm by up to {(got - expected).abs().max():.3g}: per token, "
                          "(x - mean) / torch.sqrt(var + 1e-5) with mean and biased variance over dim=-1.")


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


# ---------------------------------------------------------------------------- q4 (capstone): EncoderLayer
# Sizes with no two equal: batch 2, seq 5, d_model 24, heads 4, d_head 6, d_ff 40.
D_MODEL, N_HEADS, D_FF, BATCH, SEQ = 24, 4, 40, 2, 5
LAYER_SIGNATURE = "(d_model, n_heads, d_ff, dropout=0.1, norm='post')"
ENCODER_LAYER_LAYOUT = ("self_attn (a MultiHeadAttention with w_q, w_k, w_v, w_o), feed_forward.linear1 "
                        "(d_model → d_ff), feed_forward.linear2 (d_ff → d_model), attn_block.norm and ff_block.norm "
                        "(one nn.LayerNorm(d_model) per sublayer)")
FINAL_NORM_HINT = ("A layer has exactly one LayerNorm per sublayer; a Pre-LN stack's final LayerNorm is applied "
                   "once, after the last layer (Encoder.norm), not inside each layer. ")


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


def example_encoder_inputs(seed: int = 0) -> list[tuple[str, torch.Tensor, torch.Tensor | None]]:
    """``(description, x (2, 5, 24), mask)`` with no mask, a padding mask (2, 1, 1, 5) and a combined (2, 1, 5, 5)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, SEQ, D_MODEL, generator=generator) * 2 + 1
    padding = torch.tensor([[True] * SEQ, [True] * 3 + [False] * (SEQ - 3)])[:, None, None, :]
    combined = padding & torch.ones(SEQ, SEQ, dtype=torch.bool).tril()[None, None]
    return [(f"x {tuple(x.shape)}, no mask", x, None),
            (f"x {tuple(x.shape)}, padding mask {tuple(padding.shape)}", x, padding),
            (f"x {tuple(x.shape)}, combined mask {tuple(combined.shape)}", x, combined)]


def paired_layers(package_class: type, learner_class: type, name: str, norm: str, layout: str,
                  final_norm_hint: str = ""):
    """``(package, learner)``: the package's layer (seeded, LayerNorms randomised, dropout 0) and the learner's,
    built with the capstone's sizes and carrying the package's weights — ready for ``compare_block``."""
    torch.manual_seed(0)
    package = package_class(D_MODEL, N_HEADS, D_FF, dropout=0.0, norm=norm)
    randomise_norms(package)
    learner = instantiate(learner_class, name, LAYER_SIGNATURE, D_MODEL, N_HEADS, D_FF, dropout=0.0, norm=norm)
    copy_weights(package, learner, name, layout, final_norm_hint)
    return package, learner


def check_encoder_layer(ns) -> None:
    from ..layers import EncoderLayer as PackageLayer
    from .lesson03 import check_dropout

    learner_class = own_module_class(ns["EncoderLayer"], "EncoderLayer", "course_utils.layers.EncoderLayer")
    for norm in ("post", "pre"):
        package, learner = paired_layers(PackageLayer, learner_class, "EncoderLayer", norm, ENCODER_LAYER_LAYOUT,
                                         FINAL_NORM_HINT)
        for case, x, mask in example_encoder_inputs():
            def diagnose(got, package=package, x=x, mask=mask, norm=norm):
                return diagnose_encoder_layer(package, x, mask, norm, got)
            compare_block(package, learner, "EncoderLayer", f"norm={norm!r}, {case}", {"x": x, "mask": mask},
                          diagnose)
        check_dropout(learner_class, package, "EncoderLayer", LAYER_SIGNATURE, (D_MODEL, N_HEADS, D_FF),
                      lambda module, x: module(x, None), example_encoder_inputs()[0][1], norm=norm)


def randomise_norms(module: nn.Module) -> None:
    """Give every LayerNorm a gain and bias other than 1 and 0, so a misplaced or missing norm always shows."""
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=generator))
                m.bias.copy_(0.5 * torch.randn(m.bias.shape, generator=generator))


SUBLAYER_SOLUTION = (  # the FeedForward and Residual of the capstone solutions here and in lesson 07
    "import torch.nn as nn\n"
    "import torch.nn.functional as F\n"
    "\n"
    "from course_utils.attention import MultiHeadAttention  # or yours, from lesson 03's capstone\n"
    "\n"
    "\n"
    "class FeedForward(nn.Module):\n"
    "    def __init__(self, d_model, d_ff, dropout):\n"
    "        super().__init__()\n"
    "        self.linear1 = nn.Linear(d_model, d_ff)\n"
    "        self.linear2 = nn.Linear(d_ff, d_model)\n"
    "        self.dropout = nn.Dropout(dropout)\n"
    "\n"
    "    def forward(self, x):  # (batch, seq, d_model) -> same shape, every position on its own\n"
    "        return self.linear2(self.dropout(F.relu(self.linear1(x))))\n"
    "\n"
    "\n"
    "class Residual(nn.Module):\n"
    "    def __init__(self, d_model, dropout, norm):\n"
    "        super().__init__()\n"
    "        self.pre = norm == \"pre\"\n"
    "        self.norm = nn.LayerNorm(d_model)\n"
    "        self.dropout = nn.Dropout(dropout)\n"
    "\n"
    "    def forward(self, x, sublayer):\n"
    "        if self.pre:\n"
    "            return x + self.dropout(sublayer(self.norm(x)))   # Pre-LN\n"
    "        return self.norm(x + self.dropout(sublayer(x)))        # Post-LN\n"
)

ENCODER_LAYER_SOLUTION = (
    SUBLAYER_SOLUTION +
    "\n"
    "\n"
    "class EncoderLayer(nn.Module):\n"
    "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm=\"post\"):\n"
    "        super().__init__()\n"
    "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
    "        self.feed_forward = FeedForward(d_model, d_ff, dropout)\n"
    "        self.attn_block = Residual(d_model, dropout, norm)\n"
    "        self.ff_block = Residual(d_model, dropout, norm)\n"
    "\n"
    "    def forward(self, x, mask=None):\n"
    "        x = self.attn_block(x, lambda h: self.self_attn(h, h, h, mask)[0])\n"
    "        return self.ff_block(x, self.feed_forward)\n"
)

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
    hint="Two residual blocks: x = block1(x, self-attention), then block2(x, feed-forward). A block is "
         "post: norm(x + dropout(f(x))), pre: x + dropout(f(norm(x))). Give each block its own LayerNorm named "
         "`norm`; the FFN is linear1 → ReLU → dropout → linear2. Stuck? "
         "`from course_utils.layers import EncoderLayer` and move on.",
    solution=ENCODER_LAYER_SOLUTION,
    success="Correct! Same outputs and gradients as course_utils.layers.EncoderLayer, Post-LN and Pre-LN, with "
            "and without masks, in train and eval mode.",
    task=(
        "**Capstone — your own `EncoderLayer`.** Write `EncoderLayer(d_model, n_heads, d_ff, dropout=0.1, "
        "norm=\"post\")` with `forward(x, mask=None)`: `x (batch, seq, d_model)` → same shape. Self-attention, then "
        "the feed-forward network, each inside a residual connection with its own LayerNorm:\n\n"
        "* `norm=\"post\"` (the paper): $x \\leftarrow \\text{LayerNorm}(x + \\text{dropout}(F(x)))$;\n"
        "* `norm=\"pre\"`: $x \\leftarrow x + \\text{dropout}(F(\\text{LayerNorm}(x)))$.\n\n"
        "Attribute names — the package's, so its weights load into yours: `self_attn` (a `MultiHeadAttention`: yours "
        "from lesson 03 or the package's), `feed_forward.linear1` (d_model → d_ff) and `feed_forward.linear2` "
        "(d_ff → d_model) with a ReLU between, `attn_block.norm` and `ff_block.norm` (one `nn.LayerNorm(d_model)` "
        "each). The starter below suggests small `FeedForward` and `Residual` modules that give exactly these "
        "names.\n\n"
        "How it is checked: for `norm=\"post\"` and `\"pre\"` the checker builds "
        "`course_utils.layers.EncoderLayer(24, 4, 40)`, copies its weights into yours, and compares outputs and "
        "gradients for `x (2, 5, 24)` without a mask, with a padding mask `(2, 1, 1, 5)` and a combined mask "
        "`(2, 1, 5, 5)`, in train mode and — with `dropout=0.5` — in eval mode. `q4.hint()` and `q4.solution()` "
        "help; stuck? `from course_utils.layers import EncoderLayer` and move on."
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


def encoder_mistake(encoder, x, mask, *, final_norm: str = "end", chain: bool = True,
                    use_mask: bool = True) -> torch.Tensor:
    """The package encoder's weights with a typical stacking bug."""
    h = x
    for layer in encoder.layers:
        h = layer(h if chain else x, mask if use_mask else None)
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
    from ..models import Encoder as PackageEncoder
    from .lesson03 import check_dropout

    learner_class = own_module_class(ns["Encoder"], "Encoder", "course_utils.models.Encoder")
    for norm in ("post", "pre"):
        torch.manual_seed(0)
        package = PackageEncoder(TransformerConfig(vocab_size=10, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF,
                                                   n_layers=N_LAYERS, dropout=0.0, norm=norm))
        randomise_norms(package)
        learner = instantiate(learner_class, "Encoder", ENCODER_SIGNATURE, N_LAYERS, D_MODEL, N_HEADS, D_FF,
                              dropout=0.0, norm=norm)
        copy_weights(package, learner, "Encoder", ENCODER_LAYOUT)
        for case, x, mask in example_encoder_inputs(1):
            def diagnose(got, package=package, x=x, mask=mask):
                with torch.no_grad():
                    for knobs, message in ENCODER_MISTAKES:
                        if close(got, encoder_mistake(package, x, mask, **knobs)):
                            return message
                return None
            compare_block(package, learner, "Encoder", f"norm={norm!r}, {case}", {"x": x, "mask": mask}, diagnose)
        check_dropout(learner_class, package, "Encoder", ENCODER_SIGNATURE, (N_LAYERS, D_MODEL, N_HEADS, D_FF),
                      lambda module, x: module(x, None), example_encoder_inputs()[0][1], norm=norm)


q5 = Exercise(
    name="Capstone: stack the layers into an Encoder",
    variables=("Encoder",),
    checker=check_encoder,
    hint="self.layers = nn.ModuleList(EncoderLayer(...) for _ in range(n_layers)) — a new layer each time; "
         "self.norm = nn.LayerNorm(d_model). forward: x = layer(x, mask) for every layer, then return self.norm(x). "
         "Stuck? `from course_utils.models import Encoder` (it takes a TransformerConfig) and move on.",
    solution=(
        "import torch.nn as nn\n"
        "\n"
        "from course_utils.layers import EncoderLayer  # or yours, from the capstone above\n"
        "\n"
        "\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm=\"post\"):\n"
        "        super().__init__()\n"
        "        self.layers = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm=norm)\n"
        "                                    for _ in range(n_layers))\n"
        "        self.norm = nn.LayerNorm(d_model)\n"
        "\n"
        "    def forward(self, x, mask=None):\n"
        "        for layer in self.layers:\n"
        "            x = layer(x, mask)\n"
        "        return self.norm(x)   # once, after the stack\n"
    ),
    success="Correct! Same outputs and gradients as course_utils.models.Encoder, Post-LN and Pre-LN.",
    task=(
        "**Capstone — stack the layers.** Write `Encoder(n_layers, d_model, n_heads, d_ff, dropout=0.1, "
        "norm=\"post\")` with `forward(x, mask=None)`: `n_layers` encoder layers one after the other, then one "
        "final LayerNorm. For Pre-LN that final norm is essential: nothing else normalises the residual stream "
        "that leaves the last layer.\n\n"
        "Attribute names — the package's: `layers` (an `nn.ModuleList` of separate `EncoderLayer`s — yours from "
        "the capstone above, or the package's) and `norm` (`nn.LayerNorm(d_model)`).\n\n"
        "How it is checked: against `course_utils.models.Encoder` with 3 layers (weights copied into yours), "
        "Post-LN and Pre-LN, with and without masks, in train and eval mode. `q5.hint()` and `q5.solution()` "
        "help; stuck? `from course_utils.models import Encoder` and move on."
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
