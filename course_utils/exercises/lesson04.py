"""Exercises of notebook 04: an encoder's parameter count, a BatchNorm that should skip padding (find the bug), the
residual stream measured layer by layer, and the parallel block (capstone). Form: see ``core.py``."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..attention import MultiHeadAttention
from ..config import TransformerConfig, count_parameters, encoder_layer_parameter_count, layer_norm_parameter_count
from ..layers import EncoderLayer, PositionwiseFeedForward, ResidualSublayer
from ..masks import padding_mask
from ..models import Encoder
from .asserts import (
    Case,
    Draw,
    Raised,
    attempt,
    backpropagate_both,
    call_learner,
    check_block_scales,
    check_function,
    compare_gradients,
    copy_weights,
    difference,
    gradients,
    instantiate,
    learner_function,
    own_module_class,
    randomise_norms,
    same_output,
    scaled_case,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of

BLOCK_FORBIDDEN = {  # the wiring the learner writes; attention and the feed-forward network may be the package's
    "the package's course_utils.layers.EncoderLayer": EncoderLayer,
    "the package's course_utils.layers.ResidualSublayer": ResidualSublayer,
    "the package's course_utils.models.Encoder": Encoder,
    "torch.nn.TransformerEncoderLayer": nn.TransformerEncoderLayer,
    "torch.nn.TransformerEncoder": nn.TransformerEncoder,
}


# ---------------------------------------------------------------------------- q1: an encoder's parameters
def count_cases(draw: Draw) -> list[Case]:
    """Small to huge (odd and above 2^53: no float holds it); d_ff = 4·d_model only in the paper's base model."""
    n_small, d_small, f_small = draw.integer(2, 4), *draw.distinct(2, 3, 30)
    sizes = [(n_small, d_small, f_small if f_small != 4 * d_small else f_small + 1),
             (draw.integer(5, 12), *draw.distinct(2, 31, 1200)), (6, 512, 2048),
             (1, 2 * draw.integer(2 ** 25, 2 ** 26) + 1, 2 * draw.integer(2 ** 27, 2 ** 28))]
    labels = ["", "", " (the paper's base encoder)", " (huge: build nothing, count)"]
    return [Case(f"encoder_parameters({n}, {d}, {f}){label}", (n, d, f)) for (n, d, f), label in zip(sizes, labels)]


def count_without(n_layers: int, d: int, f: int, *, biases=True, norms=2, final=True, projections=4) -> int:
    """The count with a typical part left out."""
    layer = projections * (d * d + (d if biases else 0)) + 2 * d * f + ((f + d) if biases else 0) + norms * 2 * d
    return n_layers * layer + (2 * d if final else 0)


q1 = Exercise(
    name="An encoder's parameters, exactly",
    variables=("encoder_parameters",),
    checker=lambda ns: check_function(
        learner_function(ns, "encoder_parameters"),
        lambda n, d, f: n * encoder_layer_parameter_count(d, f) + layer_norm_parameter_count(d),  # the package's count
        count_cases(Draw()), "encoder_parameters",
        forbidden={"course_utils.config.count_parameters": count_parameters,
                   "course_utils.config.encoder_layer_parameter_count": encoder_layer_parameter_count,
                   "the package's course_utils.models.Encoder": Encoder,
                   "the package's course_utils.layers.EncoderLayer": EncoderLayer},
        probes=[Case("probe", (3, 10, 7)), Case("probe", (2, 16, 40))]),
    hints=("Go through section 5's __init__ methods: which nn.Linear and nn.LayerNorm does one layer create, and what "
           "does the Encoder add after its layers? n_heads only splits d_model; it adds no numbers.",
           "Per layer: attention 4·(d² + d); the FFN d·d_ff + d_ff + d_ff·d + d; two LayerNorms of 2·d each. Times "
           "n_layers, plus the final LayerNorm's 2·d. Use + and * only: an exact int at any size."),
    solution=solution_of("lesson04", "encoder_parameters"),
    success="Correct! Now compute, for the paper's base model, the fraction of one layer's parameters that sit in "
            "the FFN, compare it with `my_ffn_fraction`, then open the note below.",
    mistakes=(
        Mistake("a float", "return an int: a float (a /, a float constant, float(...)) cannot hold a count this "
                "large exactly. Use +, * and // only", variant=lambda n, d, f: float(count_without(n, d, f))),
        Mistake("final norm forgotten", "the layers are right, but the Encoder ends with one more LayerNorm, "
                "2·d_model numbers (gain and bias)", variant=lambda n, d, f: count_without(n, d, f, final=False)),
        Mistake("weights only", "you counted the weight matrices only: add every nn.Linear's bias and every "
                "LayerNorm's gain and bias",
                variant=lambda n, d, f: count_without(n, d, f, biases=False, norms=0, final=False)),
        Mistake("LayerNorms forgotten", "the two LayerNorms of each layer (2·d_model numbers each) are missing",
                variant=lambda n, d, f: count_without(n, d, f, norms=0)),
        Mistake("one LayerNorm per layer", "each layer has two LayerNorms, one per sublayer",
                variant=lambda n, d, f: count_without(n, d, f, norms=1)),
        Mistake("biases forgotten", "the biases of the six nn.Linear layers are missing (4·d_model in attention, "
                "d_ff + d_model in the FFN)", variant=lambda n, d, f: count_without(n, d, f, biases=False)),
        Mistake("output projection forgotten", "attention has four projections, W_q, W_k, W_v and the output W_o",
                variant=lambda n, d, f: count_without(n, d, f, projections=3)),
        Mistake("d_ff assumed 4·d_model", "use the d_ff you are given, not 4·d_model",
                variant=lambda n, d, f: count_without(n, d, 4 * d)),
    ),
)


# ---------------------------------------------------------------------------- q2: BatchNorm that skips padding
def masked_standardised(x, real, eps=1e-5, *, over_padding=False, unbiased=False, zero_padding=True, dims=None,
                        moments=False):
    """The reference (statistics over the batch's real tokens, padding out 0), or a variant with one mistake; moments:
    the variance as E[x²] − E[x]² (exact algebra, but float32 loses it when every number is large)."""
    if dims is not None:                                               # a wrong axis: statistics per token or row
        out = (x - x.mean(dims, keepdim=True)) / torch.sqrt(x.var(dims, unbiased=unbiased, keepdim=True) + eps)
    else:
        tokens = x.reshape(-1, x.size(-1)) if over_padding else x[real]        # (n, d_model)
        var = (tokens ** 2).mean(0) - tokens.mean(0) ** 2 if moments else tokens.var(0, unbiased=unbiased)
        out = (x - tokens.mean(0)) / torch.sqrt(var + eps)
    return torch.where(real[..., None], out, torch.zeros((), dtype=x.dtype)) if zero_padding else out


def masked_batch_norm_cases(draw: Draw) -> list[Case]:
    cases = []
    for what, eps in (("", 1e-5), ("", 1e-5), (", eps=0.5", 0.5)):
        batch, seq, d_model = draw.distinct(3, 2, 8)
        x = draw.randn(batch, seq, d_model, scale=3.0) + 1
        lengths = torch.tensor([seq] + [draw.integer(1, seq - 1) for _ in range(batch - 1)])
        real = torch.arange(seq) < lengths[:, None]                    # (batch, seq), True at real tokens
        x[~real] = draw.randn(int((~real).sum()), d_model, scale=5.0) - 3   # padding far from the real tokens
        cases.append(Case(f"x {tuple(x.shape)}, real tokens per row {lengths.tolist()}{what}", (x, real),
                          {"eps": eps} if what else {}))
    return cases


def only_scale_differs(case: Case, got, answer) -> bool:
    """Centred like the reference at the real tokens, off by one scale per feature: the mean right, the variance not."""
    expected = masked_standardised(*case.args, **case.kwargs)[case.args[1]]
    got = got[case.args[1]]
    if torch.allclose(got, expected, atol=1e-4, rtol=1e-4) or not torch.allclose(got.mean(0), 0 * got[0], atol=1e-4):
        return False
    return torch.allclose(got, expected * (got.std(0) / expected.std(0)), atol=1e-4, rtol=1e-4)


def check_masked_batch_norm(ns) -> None:
    """The contract, then case 0 again + 1000 (a cancelling variance, or statistics kept from the last call, show)."""
    cases = masked_batch_norm_cases(Draw())
    check_function(learner_function(ns, "masked_batch_norm"), masked_standardised, cases, "masked_batch_norm",
                   forbidden={"torch.nn.functional.batch_norm": F.batch_norm, "torch.batch_norm": torch.batch_norm},
                   twins=[scaled_case(cases[0], 1.0, 1e3)], atol=1e-4, rtol=1e-4)


q2 = Exercise(
    name="BatchNorm that skips padding",
    variables=("masked_batch_norm",),
    checker=check_masked_batch_norm,
    hints=("Setting padding to 0 does not take it out of a mean: how many vectors does x.mean(dim=(0, 1)) average?",
           "x[real] holds the real tokens' vectors: mean and variance (unbiased=False) over its dim 0; standardise "
           "all of x with them; then torch.where(real[..., None], out, 0.0)."),
    solution=solution_of("lesson04", "masked_batch_norm"),
    success="Correct! Now step 3: predict, measure, then open the note below.",
    mistakes=(
        Mistake("the function as given", "this still behaves like the function you were given (step 1's symptom)",
                variant=lambda x, r, eps=1e-5: masked_standardised(x * r[..., None], r, eps, over_padding=True)),
        Mistake("padding included", "your statistics include the padding positions: take them over x[real] only",
                variant=lambda x, real, eps=1e-5: masked_standardised(x, real, eps, over_padding=True)),
        Mistake("padding not zeroed", "the real tokens are right; the padding positions must come out as 0: "
                "torch.where(real[..., None], out, 0.0)",
                variant=lambda x, real, eps=1e-5: masked_standardised(x, real, eps, zero_padding=False)),
        Mistake("LayerNorm's axis", "those are LayerNorm's statistics, each token over its features; BatchNorm "
                "takes each feature over the real tokens of the whole batch",
                variant=lambda x, real, eps=1e-5: masked_standardised(x, real, eps, dims=-1)),
        Mistake("unbiased variance", "that variance divides by N − 1; BatchNorm's divides by N (unbiased=False)",
                variant=lambda x, real, eps=1e-5: masked_standardised(x, real, eps, unbiased=True)),
        Mistake("eps ignored", "your function takes eps but always uses 1e-5: use the argument",
                variant=lambda x, real, eps=1e-5: masked_standardised(x, real, 1e-5)),
        Mistake("variance as E[x²] − E[x]²", "right on ordinary inputs, wrong once 1000 is added to every number: "
                "E[x²] − E[x]² subtracts two large, nearly equal numbers (catastrophic cancellation in float32). Take "
                "the variance as ((x − mean)²).mean(0), or tokens.var(dim=0, unbiased=False)",
                variant=lambda x, real, eps=1e-5: masked_standardised(x, real, eps, moments=True)),
        Mistake("only the mean fixed", "the mean now skips the padding, but the variance still averages over it: "
                "take the variance over the real tokens too, x[real].var(dim=0, unbiased=False)",
                variant=lambda x, real, eps=1e-5: (lambda z: (z - z.sum((0, 1)) / real.sum()) / torch.sqrt(
                    z.var(dim=(0, 1), unbiased=False) + eps) * real[..., None])(x * real[..., None]),
                shows=only_scale_differs),
    ),
)


# ---------------------------------------------------------------------------- q3: the residual stream
def stream_cases(draw: Draw) -> list[Case]:
    """Pre-LN and Post-LN Encoders of 2-5 layers, then a Pre-LN one of 12 (sorted as text, '10' runs before '2')."""
    cases = []
    for placement, layers in (("pre", None), ("post", None), ("pre", 12)):
        heads = draw.integer(1, 3)
        d_model = heads * draw.integer(3, 6)
        config = TransformerConfig(vocab_size=2, d_model=d_model, n_heads=heads, d_ff=draw.integer(5, 30),
                                   n_layers=layers or draw.integer(2, 5), dropout=0.0, norm=placement)
        torch.manual_seed(draw.integer(0, 10 ** 6))
        encoder = Encoder(config).eval()
        randomise_norms(encoder, draw.generator())
        batch, seq = draw.distinct(2, 2, 7)
        lengths = torch.tensor([seq] + [draw.integer(1, seq - 1) for _ in range(batch - 1)])
        mask = padding_mask((torch.arange(seq) < lengths[:, None]).long())
        x = draw.randn(batch, seq, d_model, scale=3.0)
        cases.append(Case(f"a {placement}-LN Encoder of {config.n_layers} layers, d_model={d_model}, x "
                          f"{tuple(x.shape)} with padding", (encoder, x, mask)))
    return cases


def stream_variant(measure=lambda x, real, encoder: x[real].norm(dim=-1).mean(), with_mask=True, with_input=False,
                   by_name=False):
    """The reference (after each layer, before the final norm, the mean ‖x_t‖ over real tokens), or a mistake."""
    def variant(encoder, x, mask):
        real = mask[:, 0, 0, :]
        norms = [measure(x, real, encoder)] if with_input else []
        layers = [layer for _, layer in sorted(encoder.layers.named_children())] if by_name else encoder.layers
        with torch.no_grad():
            for layer in layers:
                x = layer(x, mask) if with_mask else layer(x)
                norms.append(measure(x, real, encoder))
        return torch.stack(norms)
    return variant


q3 = Exercise(
    name="The residual stream, measured",
    variables=("stream_norms",),
    checker=lambda ns: check_function(learner_function(ns, "stream_norms"), stream_variant(),
                                      stream_cases(Draw()), "stream_norms", atol=1e-4, rtol=1e-4),
    hints=("Run the layers yourself, as Encoder.forward does, measuring after each, but stop before encoder.norm.",
           "The real tokens: mask[:, 0, 0, :] (batch, seq). Run each of encoder.layers on x with the mask; after "
           "each, take the mean of x[real].norm(dim=-1); stack the n_layers numbers into a tensor."),
    solution=solution_of("lesson04", "stream_norms"),
    success="Correct! Now measure both placements with 8 layers, then compare with `my_growth` and the note below.",
    mistakes=(
        Mistake("final norm applied", "you measured after the final LayerNorm; measure the stream each layer hands "
                "on, before encoder.norm",
                variant=stream_variant(lambda x, real, e: e.norm(x)[real].norm(dim=-1).mean())),
        Mistake("padding included", "the mean includes padding positions; average over the real tokens only, "
                "x[mask[:, 0, 0, :]]", variant=stream_variant(lambda x, real, e: x.norm(dim=-1).mean())),
        Mistake("mask not passed", "the layers ran without the mask, so real tokens attended to padding: "
                "layer(x, mask)", variant=stream_variant(with_mask=False)),
        Mistake("the input counted", "return one number per layer (n_layers of them), not the input's too",
                variant=stream_variant(with_input=True)),
        Mistake("sum instead of mean", "you summed the norms; take their mean over the real tokens",
                variant=stream_variant(lambda x, real, e: x[real].norm(dim=-1).sum())),
        Mistake("layers in name order", "right with fewer than 10 layers, wrong with 12: names sorted as text run "
                "'10' and '11' before '2'. Loop over encoder.layers itself", variant=stream_variant(by_name=True)),
    ),
)


# ---------------------------------------------------------------------------- q4 (capstone): the parallel block
class ParallelReference(nn.Module):
    """The parallel block (GPT-J, PaLM): ``x + dropout(attn(h)) + dropout(ffn(h))``, ``h = norm(x)``."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def attend(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return self.self_attn(h, h, h, mask)[0]

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.norm(x)
        return x + self.dropout(self.attend(h, mask)) + self.dropout(self.feed_forward(h))


def parallel_variant(wiring):
    """A class with the learner's signature whose forward is ``wiring(block, x, mask)``."""
    return type("ParallelVariant", (ParallelReference,), {"forward": lambda self, x, mask=None: wiring(self, x, mask)})


def parallel_built(change):
    """A class with the learner's signature whose ``__init__`` builds the reference, then ``change(block)``."""
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1):
        ParallelReference.__init__(self, d_model, n_heads, d_ff, dropout)
        change(self)
    return type("ParallelVariant", (ParallelReference,), {"__init__": __init__})


def parallel_cases(draw: Draw) -> list[Case]:
    cases = []
    for what in ("one token", "padding in some rows", "a padding mask, larger"):
        heads = draw.integer(1, 3)
        d_model, d_ff = heads * draw.integer(3, 6), draw.integer(5, 40)
        batch, seq = (1, 1) if what == "one token" else draw.distinct(2, 2, 8)
        lengths = torch.tensor([seq] + [draw.integer(1, seq) for _ in range(batch - 1)])
        mask = padding_mask((torch.arange(seq) < lengths[:, None]).long())
        sizes = (d_model, heads, d_ff, round(draw.integer(5, 40) / 100, 2))
        cases.append(Case(f"ParallelEncoderLayer{sizes}, x ({batch}, {seq}, {d_model}), {what}",
                          (sizes, draw.randn(batch, seq, d_model, scale=2.0) + 1, mask)))
    return cases


def parallel_pair(answer: type, sizes: tuple) -> tuple[nn.Module, nn.Module]:
    """The reference (random LayerNorm gain and bias) and ``answer`` with its weights, both in eval mode."""
    torch.manual_seed(0)
    reference = ParallelReference(*sizes).eval()
    randomise_norms(reference, torch.Generator().manual_seed(1))
    block = instantiate(answer, "ParallelEncoderLayer", "(d_model, n_heads, d_ff, dropout=0.1)", *sizes).eval()
    copy_weights(reference, block, "ParallelEncoderLayer", "self_attn (MultiHeadAttention), feed_forward.linear1 "
                 "(d_model → d_ff), feed_forward.linear2 (d_ff → d_model), norm (one nn.LayerNorm(d_model))")
    return reference, block


SCALES = ((1e3, 1.0), (1e-3, 1.0), (1.0, 10.0))   # check_block_scales' runs: x ×1000, x ×0.001, every weight ×10


def run_scaled(answer: type, case: Case) -> tuple:
    """``answer``'s outputs on ``case`` in check_block_scales' three runs (to name a mistake its check refused)."""
    sizes, x, mask = case.args
    block = parallel_pair(answer, sizes)[1]
    outputs = []
    for scale, weights in SCALES:
        with torch.no_grad():
            for p in block.parameters():
                p.mul_(weights)
            got = attempt(lambda x: block(x, mask), "ParallelEncoderLayer", (x * scale,), {})
            for p in block.parameters():
                p.div_(weights)
        outputs.append(got if isinstance(got, Raised) else got.detach())
    return tuple(outputs)


def check_parallel(ns) -> None:
    answer = own_module_class(ns["ParallelEncoderLayer"], "ParallelEncoderLayer", "course_utils.exercises")
    cases = parallel_cases(Draw())
    for case in cases:
        sizes, x, mask = case.args
        reference, block = parallel_pair(answer, sizes)
        x_ref, x_own = x.clone().requires_grad_(), x.clone().requires_grad_()
        expected = reference(x_ref, mask)
        got = call_learner(block, "ParallelEncoderLayer", case.description, x_own, mask, forbidden=BLOCK_FORBIDDEN)
        gap = difference(got, expected, "the output of your `ParallelEncoderLayer`")
        if gap:
            rerun = lambda a, c: call_learner(parallel_pair(a, c.args[0])[1], "ParallelEncoderLayer",  # noqa: E731
                                              c.description, *(t.clone() for t in c.args[1:]),
                                              forbidden=BLOCK_FORBIDDEN).detach()
            raise Mismatch(f"on {case.description}: {gap}.", case, got.detach() if isinstance(got, torch.Tensor)
                           else got, answer, rerun, lambda a, b: difference(a, b, "", 1e-5, 1e-4) is None,
                           probes=tuple(cases))
        if not torch.equal(x_own.detach(), x) or not torch.equal(mask, case.args[2]):
            raise ExerciseFailure(f"on {case.description}: your block changed its input x or mask in place.")
        backpropagate_both(reference, expected, block, got, "ParallelEncoderLayer", case.description)
        compare_gradients(gradients(reference, {"x": x_ref}), gradients(block, {"x": x_own}), "ParallelEncoderLayer",
                          case.description)
    (sizes, x, mask), case = cases[0].args, cases[0]
    reference, block = parallel_pair(answer, sizes)
    try:
        check_block_scales(lambda x: block(x, mask), lambda x: reference(x, mask), x, "ParallelEncoderLayer",
                           case.description, weights=(block, reference))
    except ExerciseFailure as failure:   # the table names the constant (a LayerNorm eps, a clipped activation)
        scaled = Case(f"{case.description}, x ×1000, x ×0.001 and every weight ×10", case.args)
        raise Mismatch(str(failure), scaled, run_scaled(answer, scaled), answer, run_scaled, lambda a, b: all(
            same_output(p, q, 1e-5 * max(s, w), 1e-3) for p, q, (s, w) in zip(a, b, SCALES))) from None
    sizes, x, mask = cases[-1].args
    block = instantiate(answer, "ParallelEncoderLayer", "(d_model, n_heads, d_ff, dropout)", *sizes[:3], 0.5).train()
    torch.manual_seed(0)
    first = block(x, mask).detach()
    torch.manual_seed(1)
    if torch.equal(first, block(x, mask).detach()):
        raise ExerciseFailure("in training mode with dropout=0.5 your block gives the same output for two random "
                              "seeds: it drops nothing. Apply nn.Dropout(dropout) to each branch's output.")


q4 = Exercise(
    name="Capstone: the parallel block",
    variables=("ParallelEncoderLayer",),
    checker=check_parallel,
    hints=("One LayerNorm, used once: both branches read h = norm(x); both outputs are added to the raw x.",
           "Create the three attributes the task names, in that order, then one nn.Dropout(dropout) for each "
           "branch's output; forward normalises x once."),
    solution=solution_of("lesson04", "ParallelEncoderLayer"),
    task=("**Capstone — Exercise 4, the parallel block (about 20 minutes).** GPT-J and PaLM run attention and the "
          "FFN side by side on one normalised input, so their input matrix multiplications fuse:\n\n"
          "$$x \\leftarrow x + \\mathrm{dropout}\\big(\\mathrm{Attn}(h)\\big) + \\mathrm{dropout}\\big(\\mathrm{FFN}"
          "(h)\\big),\\qquad h = \\mathrm{LN}(x).$$\n\n"
          "Write `ParallelEncoderLayer(d_model, n_heads, d_ff, dropout=0.1)`, `forward(x, mask=None)` as for "
          "`EncoderLayer`, with attributes `self_attn` (a `MultiHeadAttention`, created first), `feed_forward` "
          "(section 1's `FeedForward`) and `norm` (one `nn.LayerNorm(d_model)`).\n\n"
          "Predict, then measure: (a) how many parameters fewer than `EncoderLayer(32, 4, 128)` has "
          "`ParallelEncoderLayer(32, 4, 128)`? (b) Does a stack of 8 grow from layer 1 to 8 (`stream_norms` on `x3`, "
          "`mask3`, seeds 0–2) faster than, as fast as, or slower than the 8-layer Pre-LN `Encoder`? Why? After "
          "`torch.manual_seed(seed)`, `stack = nn.Module(); stack.layers = nn.ModuleList(ParallelEncoderLayer(32, 4, "
          "128) for _ in range(8))` gets the Encoder's weights too; call `stack.eval()` before measuring.\n\n"
          "Stuck? `q4.solution()`; lesson 03's block: `from course_utils.attention import MultiHeadAttention`."),
    starter=("import torch.nn as nn\n\n\n"
             "class ParallelEncoderLayer(nn.Module):\n    def __init__(self, d_model, n_heads, d_ff, dropout=0.1):\n"
             "        super().__init__()\n        raise NotImplementedError  # your code"
             "\n\n    def forward(self, x, mask=None):\n        raise NotImplementedError  # your code\n"),
    mistakes=(
        Mistake("residual around the normalised input", "the stream that leaves is h + …, the normalised copy: add "
                "the branches to the raw x",
                variant=parallel_variant(lambda b, x, m: (lambda h: h + b.dropout(b.attend(h, m))
                                                          + b.dropout(b.feed_forward(h)))(b.norm(x)))),
        Mistake("LayerNorm on the sublayer output", "you normalised the branches' outputs; normalise their input, "
                "h = norm(x), and add the raw outputs",
                variant=parallel_variant(lambda b, x, m: x + b.norm(b.attend(x, m) + b.feed_forward(x)))),
        Mistake("Post-LN placement", "you normalised after the sum, norm(x + …): the norm comes first, h = norm(x)",
                variant=parallel_variant(lambda b, x, m: b.norm(x + b.attend(x, m) + b.feed_forward(x)))),
        Mistake("sequential, not parallel", "your FFN reads the stream after attention was added; both branches read "
                "the same h = norm(x)",
                variant=parallel_variant(lambda b, x, m: (lambda y: y + b.feed_forward(b.norm(y)))(
                    x + b.attend(b.norm(x), m)))),
        Mistake("feed-forward on the raw stream", "the feed-forward branch must read h = norm(x) too, not x",
                variant=parallel_variant(lambda b, x, m: x + b.attend(b.norm(x), m) + b.feed_forward(x))),
        Mistake("mask ignored", "the attention branch ignores the mask: pass it, self_attn(h, h, h, mask)",
                variant=parallel_variant(lambda b, x, m: (lambda h: x + b.attend(h, None) + b.feed_forward(h))(
                    b.norm(x)))),
        Mistake("LayerNorm eps changed", "right on ordinary inputs, wrong on tiny ones (x ×0.001): your LayerNorm's "
                "eps is not the default 1e-5", variant=parallel_built(lambda b: setattr(b.norm, "eps", 1e-12))),
        Mistake("clipped activation", "right on ordinary activations, wrong on large ones (every weight ×10): your "
                "FFN clips them (ReLU6, hardtanh, clamp?); its ReLU is unbounded above",
                variant=parallel_built(lambda b: setattr(b.feed_forward, "activation", nn.ReLU6()))),
    ),
)
