"""Exercises of lesson 03 (attention): a causal mask (q1), a padding bug found from its symptom (q2), the capstone,
causal self-attention (q3); references: :mod:`course_utils.masks`, :mod:`course_utils.attention`."""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..attention import MultiHeadAttention, scaled_dot_product_attention
from ..masks import causal_mask, combine_masks, padding_mask
from .asserts import (
    Case,
    Draw,
    Raised,
    attempt,
    backpropagate_both,
    check_function,
    check_inputs_kept,
    close,
    compare_gradients,
    flipped,
    gradients,
    instantiate,
    load_weights_by_name,
    max_difference,
    outcome,
    own_module_class,
    show,
    snapshot,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of


def has_nan(case: Any, got: Any, answer: Any = None) -> bool:
    """Whether the learner's result (a tensor, or a pair of them) holds a NaN."""
    parts = got if isinstance(got, tuple) else (got,)
    return any(isinstance(t, torch.Tensor) and bool(torch.isnan(t).any()) for t in parts)


# ------------------------------------------------ q1: a causal mask — the package's masks.causal_mask is the reference

Q1_FORBIDDEN = {"the package's course_utils.masks.causal_mask": causal_mask}   # the learner writes their own
LEFT_PADDED = torch.tensor([[0, 0, 8, 7, 9]])   # [PAD] [PAD] it was tired: the ids of the notebook's LEXICON


def check_prediction(prediction: Any) -> None:
    if prediction is None or prediction is Ellipsis:
        raise ExerciseFailure("your `causal_mask` is right; now record your prediction in its cell: `my_prediction` = "
                              "the list of rows (query positions 0-4) of `causal_mask(5) & padding_mask(left_ids)` "
                              "that may see no key at all.")
    try:
        rows = sorted(int(i) for i in prediction)
    except (TypeError, ValueError):
        raise ExerciseFailure(f"`my_prediction` should be a list of row numbers such as [3, 4], got "
                              f"{prediction!r}.") from None
    allowed = combine_masks(causal_mask(5), padding_mask(LEFT_PADDED))[0, 0]
    if rows != [i for i in range(5) if not allowed[i].any()]:     # the queries that may see no key
        raise ExerciseFailure(f"`my_prediction` = {rows} is not what the mask gives. Measure it with a line of your "
                              "own below your `causal_mask` (which rows of `causal_mask(5) & padding_mask(left_ids)` "
                              "are all False?), and work out why before you change it: which keys may each query "
                              "see?")


def check_causal_mask(ns) -> None:
    cases = [Case(f"seq_len {n}", (n,)) for n in Draw().distinct(3, 2, 12)] + [Case("seq_len 1", (1,))]
    check_function(ns["causal_mask"], causal_mask, cases, "causal_mask", forbidden=Q1_FORBIDDEN)
    check_prediction(ns.get("my_prediction"))


Q1_MISTAKES = (
    Mistake("future visible (triu)", "query i may see keys 0..i (the past), not i..end: use .tril(), not .triu()",
            lambda n: causal_mask(n).transpose(-2, -1)),
    Mistake("diagonal hidden", "a token may see itself: keep the diagonal (tril(), not tril(-1)); otherwise the "
            "first query sees nothing at all", lambda n: causal_mask(n) & ~torch.eye(n, dtype=torch.bool)),
    Mistake("convention inverted", "the convention is inverted: True means *may attend*, so the past and the "
            "diagonal are True", lambda n: ~causal_mask(n)),
    Mistake("2-D mask", "one dimension per score dimension: the scores are (batch, heads, seq, seq), so the mask is "
            "(1, 1, seq, seq) — add two axes with [None, None]", lambda n: causal_mask(n)[0, 0]),
    Mistake("3-D mask", "one dimension per score dimension: (1, 1, seq, seq), not (1, seq, seq)",
            lambda n: causal_mask(n)[0]),
    Mistake("float mask", "the mask must be bool (True = may attend), not 0/1 floats or an additive -inf mask",
            lambda n: causal_mask(n).float(),
            shows=lambda case, got, answer: isinstance(got, torch.Tensor) and got.is_floating_point()),
)


# ------------- q2: self-attention over padded sentences — the package's scaled_dot_product_attention with padding_mask

def padded_reference(x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return scaled_dot_product_attention(x, x, x, padding_mask(ids)[:, 0])      # mask (batch, 1, seq)


def padded_with(mask_of=lambda ids: padding_mask(ids)[:, 0], fill: float | None = None, zero_after: bool = True,
                scale: float | None = None, before: bool = True):
    """The reference with one step changed: the mask, the fill, blocked weights kept, the scale, or mask after."""
    def variant(x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        keep = mask_of(ids)
        s = scale or 1 / math.sqrt(x.size(-1))
        scores = x @ x.transpose(-2, -1) * s
        if before:
            scores = scores.masked_fill(~keep, torch.finfo(x.dtype).min if fill is None else fill)
        weights = torch.softmax(scores, dim=-1)
        if zero_after or not before:
            weights = weights.masked_fill(~keep, 0.0)
        return weights @ x, weights
    return variant


def padded_ids(draw: Draw, batch: int, seq: int, empty: bool = False) -> torch.Tensor:
    """Row 0 without padding, the others padded by their own amounts; ``empty``: the last row is all [PAD]."""
    real = [seq] + [draw.integer(1, seq - 1) for _ in range(batch - 1)]
    if empty:
        real[-1] = 0
    ids = torch.where(torch.arange(seq) < torch.tensor(real)[:, None], draw.randint(1, 30, (batch, seq)), 0)
    ids[0, -1] = 1   # [UNK], a real token: only [PAD] (0) is hidden
    return ids


def check_padded_self_attention(ns) -> None:
    draw, cases = Draw(), []
    for what, empty, dtype in (("", False, torch.float32), ("an all-[PAD] sentence in the batch: ", True,
                                                             torch.float32), ("", False, torch.float64)):
        batch, seq, d = draw.distinct(3, 2, 9)
        x = draw.randn(batch, seq, d, scale=1.5).to(dtype)
        note = "" if dtype == torch.float32 else f" ({dtype})"
        cases.append(Case(f"{what}batch {batch}, seq {seq}, d {d}{note}", (x, padded_ids(draw, batch, seq, empty))))
    check_function(ns["padded_self_attention"], padded_reference, cases, "padded_self_attention",
                   error_hint=padded_hint, twins=flipped(cases))   # the same shapes, other padding per row


def padded_hint(error: BaseException) -> str | None:
    if "must match the size" in str(error):
        return "The mask must broadcast to the scores (batch, seq, seq): give it the shape (batch, 1, seq)"
    return None


Q2_MISTAKES = (
    Mistake("-inf fill gives NaN", "your result contains NaN: a sentence that is all [PAD] has queries that may see "
            "no key, and a -inf fill makes their softmax 0/0. Fill with torch.finfo(scores.dtype).min and set the "
            "blocked weights to 0 after the softmax", padded_with(fill=-math.inf, zero_after=False), shows=has_nan),
    Mistake("4-D mask on 3-D scores", "the colleague's symptom is still there: for x of shape (batch, seq, d) your "
            "output has one dimension too many, (batch, batch, seq, d), and your weights are (batch, batch, seq, "
            "seq) — every sentence comes out once per sentence of the batch. Print the shapes of the scores and of "
            "the mask inside your function and line them up from the right", padded_with(padding_mask)),
    Mistake("mask on the query axis", "the mask hides [PAD] *queries* (rows) instead of [PAD] *keys* (columns) — "
            "the padding mask is (batch, 1, seq), True at the real keys",
            padded_with(lambda ids: (ids != 0)[:, :, None])),
    Mistake("convention inverted", "the mask convention is inverted: True = may attend, so the real tokens are True "
            "(ids != 0)", padded_with(lambda ids: (ids == 0)[:, None, :])),
    Mistake("(batch, seq) mask", "a (batch, seq) mask is read as (q_len, k_len) by broadcasting: give it the shape "
            "(batch, 1, seq)", padded_with(lambda ids: ids != 0)),
    Mistake("blocked score set to 0", "setting a blocked score to 0 does not block it (exp(0) = 1 still gets "
            "weight): fill with torch.finfo(scores.dtype).min", padded_with(fill=0.0)),
    Mistake("all-[PAD] row left uniform", "a sentence that is all [PAD] gets uniform weights: after the softmax, set "
            "the blocked weights to 0 (weights.masked_fill(~mask, 0.0))", padded_with(zero_after=False)),
    Mistake("mask after softmax, not renormalised", "zeroing the blocked weights after the softmax leaves rows that "
            "no longer sum to 1: fill the blocked *scores* before the softmax", padded_with(before=False)),
    Mistake("missing scale", "the √d scale is missing: divide the scores by math.sqrt(x.size(-1))",
            padded_with(scale=1.0)),
)


# ---- q3 (capstone): causal self-attention with one fused projection — reference: the package's MultiHeadAttention

NAME = "CausalSelfAttention"
LAYOUT = ("qkv = nn.Linear(d_model, 3 * d_model) (queries, keys, values in that order), "
          "out = nn.Linear(d_model, d_model)")
DROPOUT = 0.3
FORBIDDEN = {  # the capstone is written by hand: the package's attention and PyTorch's are refused
    "the package's course_utils.attention.MultiHeadAttention": MultiHeadAttention,
    "the package's course_utils.attention.scaled_dot_product_attention": scaled_dot_product_attention,
    "torch.nn.MultiheadAttention": nn.MultiheadAttention,
    "torch.nn.functional.multi_head_attention_forward": F.multi_head_attention_forward,
    "torch.nn.functional.scaled_dot_product_attention": F.scaled_dot_product_attention,
}


FORMULA = inspect.unwrap(scaled_dot_product_attention)   # the reference's formula, without its door check


class Planted(nn.Module):
    """The capstone's interface around the package's formula, a bug planted by a knob (defaults: the package's)."""

    knobs: dict = {}

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_heads, self.d_head, self.p = n_heads, d_model // n_heads, dropout
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        knob = {"scale": "d_head", "causal": 0, "order": (0, 1, 2), "pad": "key", "fill": "min", **self.knobs}
        batch, seq, d_model = x.shape
        parts = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (parts[i] for i in knob["order"])
        if knob.get("split") == "view":  # the right shape, the wrong numbers
            q, k, v = (t.reshape(batch, self.n_heads, seq, self.d_head) for t in (q, k, v))
        else:
            q, k, v = (t.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2) for t in (q, k, v))
        allowed = torch.ones(seq, seq, dtype=torch.bool)
        allowed = allowed.triu() if knob["causal"] == "triu" else allowed if knob["causal"] is None else \
            allowed.tril(knob["causal"])
        allowed = allowed[None, None]
        if mask is not None and knob["pad"] != "ignored":
            allowed = allowed & (mask.transpose(-2, -1) if knob["pad"] == "query" else mask)
        allowed = ~allowed if knob.get("invert") else allowed
        scale = {"d_head": 1 / math.sqrt(self.d_head), "d_model": 1 / math.sqrt(d_model), "k_len": 1 / math.sqrt(seq),
                 "d_head_linear": 1 / self.d_head, None: 1.0}[knob["scale"]]
        p = self.p if (self.training or knob.get("dropout_always")) else 0.0
        if knob.get("softmax_dim") == -2:  # columns sum to 1: the softmax of the transposed scores, transposed back
            weights = FORMULA(k, q, k, allowed.transpose(-2, -1), 0.0, scale)[1].transpose(-2, -1)
            out = F.dropout(weights, p) @ v
        else:
            out, weights = FORMULA(q, k, v, allowed, p, scale)
        if knob["fill"] == "-inf":  # what a -inf fill gives where a query may see no key
            blind = ~allowed.any(dim=-1, keepdim=True)
            out, weights = out.masked_fill(blind, math.nan), weights.masked_fill(blind, math.nan)
        return self.out(out.transpose(1, 2).reshape(batch, seq, d_model)), weights


def variant(**knobs: Any) -> type[nn.Module]:
    """A class with the capstone's signature whose forward has the bug ``knobs`` describe."""
    return type(NAME, (Planted,), {"knobs": knobs})


@dataclass
class BlockCase:
    description: str
    block: MultiHeadAttention   # the package's block with this case's random weights
    x: torch.Tensor
    mask: torch.Tensor | None


def package_block(draw: Draw, d_model: int, n_heads: int, dropout: float = 0.0) -> MultiHeadAttention:
    block = MultiHeadAttention(d_model, n_heads, dropout=dropout)
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(draw.randn(*p.shape, scale=0.5))
    return block


def block_cases(draw: Draw, dropout: float = 0.0) -> list[BlockCase]:
    """No mask, right padding, left padding (queries that see no key), batch 1, a single token."""
    cases = []
    for what, left, no_mask, batch_one, one_token in (("no padding mask: ", False, True, False, False),
                                                      ("right padding: ", False, False, False, False),
                                                      ("left padding (queries that see no key): ", True, False,
                                                       False, False),
                                                      ("batch 1: ", False, False, True, False),
                                                      ("a single token: ", False, False, False, True)):
        n_heads, d_head, batch, seq = draw.distinct(4, 2, 7)
        batch, seq = (1 if batch_one else batch), (1 if one_token else seq)
        real = torch.tensor([seq] + [draw.integer(1, max(1, seq - 1)) for _ in range(batch - 1)])
        positions = torch.arange(seq)
        keep = (positions >= seq - real[:, None]) if left else (positions < real[:, None])
        d_model = n_heads * d_head
        cases.append(BlockCase(f"{what}batch {batch}, seq {seq}, d_model {d_model}, {n_heads} heads",
                               package_block(draw, d_model, n_heads, dropout), draw.randn(batch, seq, d_model),
                               None if no_mask else keep[:, None, None, :]))
    return cases


def fused(block: MultiHeadAttention, grads: bool = False) -> dict[str, torch.Tensor | None]:
    """The package block's parameters (or their gradients) in the capstone's layout."""
    get = (lambda p: p.grad) if grads else (lambda p: p.detach())
    qkv = (block.w_q, block.w_k, block.w_v)
    return {"qkv.weight": torch.cat([get(m.weight) for m in qkv]), "qkv.bias": torch.cat([get(m.bias) for m in qkv]),
            "out.weight": get(block.w_o.weight), "out.bias": get(block.w_o.bias)}


def build(answer: type[nn.Module], case: BlockCase, dropout: float = 0.0) -> nn.Module:
    """The answer's block for ``case``, holding the package block's weights."""
    learner = instantiate(answer, NAME, "(d_model, n_heads, dropout=0.0)", case.block.d_model, case.block.n_heads,
                          dropout=dropout)
    return load_weights_by_name(learner, fused(case.block), NAME, LAYOUT)


def package_forward(block: MultiHeadAttention, x: torch.Tensor, mask: torch.Tensor | None):
    return block(x, x, x, combine_masks(causal_mask(x.size(1)), mask))


def run_block(answer: type[nn.Module], case: BlockCase) -> Any:
    """``(output, weights)`` of ``answer`` on ``case`` in eval mode, without gradients (how a variant is compared)."""
    with torch.no_grad():
        return outcome(build(answer, case), NAME, Case(case.description, (case.x, case.mask)), FORBIDDEN)


def same_pair(a: Any, b: Any) -> bool:
    if not (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 2):
        return a == b
    return all(isinstance(g, torch.Tensor) and isinstance(e, torch.Tensor) and g.shape == e.shape
               and close(g.detach(), e.detach()) for g, e in zip(a, b))


def compare_block(answer: type[nn.Module], case: BlockCase, probes: tuple) -> None:
    block, learner = case.block.eval(), build(answer, case)
    x_package, x_learner = case.x.clone().requires_grad_(True), case.x.clone().requires_grad_(True)
    expected = package_forward(block, x_package, case.mask)
    before = {"x": snapshot(x_learner), "mask": snapshot(case.mask)}
    got = attempt(learner, NAME, (x_learner, case.mask), {}, FORBIDDEN)
    if not isinstance(got, Raised) and not (isinstance(got, tuple) and len(got) == 2):
        raise ExerciseFailure(f"`{NAME}.forward` should return a pair (output, weights) like the package's block, got "
                              f"{type(got).__name__}; blocks built on it take [0].")
    check_inputs_kept(before, {"x": x_learner, "mask": case.mask}, NAME, case.description)
    if not same_pair(got, expected):
        what = next((f"your {part} should have shape {tuple(e.shape)}, got {tuple(g.shape)}" if g.shape != e.shape
                     else f"your {part} differ from the package's by up to "
                          f"{max_difference(g.detach(), e.detach()):.3g}")
                    for part, g, e in zip(("output", "weights"), got, expected)
                    if not (g.shape == e.shape and close(g.detach(), e.detach()))) if isinstance(got, tuple) \
            else f"your `{NAME}` raised {got.kind}: {got.message}"
        raise Mismatch(f"on {case.description}: {what}.", case, snapshot(got), answer, run_block, same_pair, probes)
    backpropagate_both(block, expected[0], learner, got[0], NAME, case.description)
    expected_grads = {f"parameter `{k}`": v for k, v in fused(block, grads=True).items()}
    expected_grads["input `x`"] = x_package.grad
    compare_gradients(expected_grads, gradients(learner, {"x": x_learner}), NAME, case.description)


def check_dropout(answer: type[nn.Module], draw: Draw) -> None:
    """Nothing dropped in eval mode; in train mode the weights dropped as the package's are, afresh on every call."""
    case = block_cases(draw, DROPOUT)[2]
    where = f"{case.description}, dropout={DROPOUT}"
    learner = build(answer, case, DROPOUT)
    with torch.no_grad():
        first = outcome(learner, NAME, Case(where, (case.x, case.mask)), FORBIDDEN)[0]
        if not torch.equal(first, learner(case.x, case.mask)[0]):
            raise ExerciseFailure(f"on {where}: {Q3_MISTAKES[-1].message}.")
        case.block.train()
        learner.train()
        state = torch.get_rng_state()
        expected = package_forward(case.block, case.x, case.mask)[0]
        torch.set_rng_state(state)
        got, again = learner(case.x, case.mask)[0], learner(case.x, case.mask)[0]
    if torch.equal(got, again):
        raise ExerciseFailure(f"on {where}, train mode: two calls drop the same entries, or none: apply "
                              "nn.Dropout(dropout) to the attention weights, drawn afresh on every call.")
    if not close(got, expected):
        raise ExerciseFailure(f"on {where}, train mode: from the same random state your block drops other entries "
                              f"than the package's (outputs differ by up to {max_difference(got, expected):.3g}): "
                              "apply dropout once, to the attention weights, just before multiplying by v.")


def check_causal_self_attention(ns) -> None:
    answer = ns[NAME]
    if answer not in {mistake.variant for mistake in Q3_MISTAKES}:   # a declared variant stands in for a learner's
        own_module_class(answer, NAME, "course_utils.attention.MultiHeadAttention")
    draw = Draw()
    cases = block_cases(draw)
    for case in cases:
        compare_block(answer, case, probes=tuple(c for c in cases if c is not case))
    padded = cases[1]   # right padding; then the same shapes with each sentence's padding moved to another row
    twin = BlockCase(f"{padded.description}, its sentences in reverse order", padded.block, padded.x.flip(0),
                     padded.mask.flip(0))
    try:
        compare_block(answer, twin, probes=())
    except Mismatch:
        raise ExerciseFailure(f"on {twin.description}: right on the first batch of this shape, wrong on a second "
                              "one of the same shape with other padding: something is kept across calls (a mask "
                              "remembered per shape?). Build the mask from this call's inputs.") from None
    check_large_scores(answer, draw)
    check_dropout(answer, draw)


def check_large_scores(answer: type[nn.Module], draw: Draw) -> None:
    """Scores near -10⁶ (keys that are minus the queries, inputs ×1000): query 0 sees only key 0, so all its weight
    stays there — unless blocked scores were filled with a finite value above them (-1e4, -1e9 is fine here), or the
    softmax overflows."""
    block = package_block(draw, 4, 2)
    with torch.no_grad():
        block.w_k.weight.copy_(-block.w_q.weight)
        block.w_k.bias.copy_(-block.w_q.bias)
    case = BlockCase("large scores: batch 1, seq 3, d_model 4, 2 heads, inputs ×1000 (keys = −queries, so each "
                     "query's own score is about −10⁶)", block.eval(), draw.randn(1, 3, 4, scale=1e3), None)
    expected = package_forward(block, case.x, None)
    got = run_block(answer, case)
    if isinstance(got, Raised) or not (isinstance(got, tuple) and len(got) == 2):
        raise ExerciseFailure(f"on {case.description}: your `{NAME}` returned {show(got)}.")
    weights = got[1]
    if not torch.isfinite(weights).all() or not torch.isfinite(got[0]).all():
        raise ExerciseFailure(f"on {case.description}: your weights or output hold inf or NaN where the package's are "
                              "finite: the softmax overflows. Use torch.softmax (it subtracts the maximum first).")
    if not close(weights, expected[1], atol=1e-4, rtol=1e-3):
        raise ExerciseFailure(f"on {case.description}: query 0 may only see key 0, so its weight there is 1; yours "
                              f"is {weights[0, 0, 0, 0].item():.3g}. The blocked scores were filled with a value above "
                              "these real scores (-1e4?): fill with torch.finfo(scores.dtype).min.")
    if not close(got[0], expected[0], atol=1e-2, rtol=1e-3):
        raise ExerciseFailure(f"on {case.description}: the weights are right but the output differs from the "
                              f"package's by up to {max_difference(got[0], expected[0]):.3g}.")


Q3_MISTAKES = (
    Mistake("missing scale", "the 1/√d_head scale is missing: divide the scores by math.sqrt(d_head)",
            variant(scale=None)),
    Mistake("scaled by sqrt(d_model)", "you scaled by √d_model; each head's dot products have d_head = d_model / "
            "n_heads terms, so divide by math.sqrt(d_head)", variant(scale="d_model")),
    Mistake("scaled by sqrt(k_len)", "you scaled by the square root of the number of keys; the scale is √d_head, "
            "the length of the vectors in each dot product", variant(scale="k_len")),
    Mistake("divided by d_k", "you divided by d_head; divide by its square root, math.sqrt(d_head)",
            variant(scale="d_head_linear")),
    Mistake("transpose instead of split", "the heads are scrambled: view the features as (batch, seq, heads, "
            "d_head), then .transpose(1, 2) — a view straight to (batch, heads, seq, d_head) mixes tokens",
            variant(split="view")),
    Mistake("qkv chunk order", "queries, keys and values come out of qkv in that order: q, k, v = "
            "self.qkv(x).chunk(3, dim=-1)", variant(order=(1, 0, 2))),
    Mistake("future visible", "the causal mask lets queries see the future: query i may see keys 0..i, a .tril() "
            "of ones", variant(causal="triu")),
    Mistake("causal mask missing", "there is no causal mask: a query must not see the keys after it (a tril of "
            "ones, combined with the padding mask by &)", variant(causal=None)),
    Mistake("diagonal hidden", "a query may see its own key: keep the diagonal of the causal mask (tril(), not "
            "tril(-1))", variant(causal=-1)),
    Mistake("padding mask ignored", "the padding mask is ignored: combine it with the causal mask (allowed = "
            "causal & mask)", variant(pad="ignored")),
    Mistake("mask broadcast on the query axis", "the padding mask is applied to the queries (rows): it is (batch, 1, "
            "1, seq) and hides keys — combine it as it comes, causal & mask", variant(pad="query")),
    Mistake("mask convention inverted", "the mask convention is inverted: True = may attend; fill where the "
            "combined mask is False (masked_fill(~allowed, ...))", variant(invert=True)),
    Mistake("softmax over the wrong axis", "softmax over the wrong axis: each query's weights sum to 1 over the "
            "keys, softmax(dim=-1)", variant(softmax_dim=-2)),
    Mistake("-inf fill gives NaN", "your result contains NaN: a left-padded query may see no key, and a -inf fill "
            "makes its softmax 0/0; fill with torch.finfo(scores.dtype).min and zero the blocked weights after",
            variant(fill="-inf"), shows=has_nan),
    Mistake("dropout active in eval", "in eval mode two calls give different outputs: dropout is still active — "
            "use nn.Dropout(dropout) (it follows .train()/.eval())", variant(dropout_always=True)),
)


# ------------------------------------------------------------------------------------------------------- The exercises

q1 = Exercise(
    name="A causal mask", variables=("causal_mask",), checker=check_causal_mask,
    hints=("Which keys may query i see: those before it, after it, or both? And how many dimensions do the scores "
           "have? For the prediction, list for each query the keys it may see, then strike the [PAD] ones.",
           "A (seq_len, seq_len) matrix of True; keep its lower triangle, diagonal included (torch.tril or "
           ".tril()); bool dtype; add two leading axes of size 1."),
    solution=solution_of("lesson03", "my_prediction", "causal_mask"), mistakes=Q1_MISTAKES,
    success="Correct, and your prediction matches the measurement.",)

q2 = Exercise(
    name="A padding bug, found from its symptom", variables=("padded_self_attention",),
    checker=check_padded_self_attention,
    hints=("Print the shape of what the colleague's function returns, then the shapes of the scores and of the "
           "mask inside it. Broadcasting lines shapes up from the right: what does it do with a dimension that only "
           "one of them has?",
           "Work out the shape section 5's rule asks of a mask for scores (batch, seq, seq); then: scores = x xᵀ / "
           "√d, blocked ← the most negative finite number, softmax over the keys, blocked weights ← 0, weights @ x."),
    solution=solution_of("lesson03", "padded_self_attention"), mistakes=Q2_MISTAKES,
    success="Correct! padding_mask(ids) is (batch, 1, 1, seq), made for scores with a heads axis; on 3-D scores "
            "broadcasting read its extra axis as a new batch axis, and every sentence was computed once per "
            "sentence's mask. Masks and scores need the same number of dimensions.",
)

q3 = Exercise(
    name="Capstone: causal self-attention", variables=(NAME,), checker=check_causal_self_attention,
    hints=("It is the block of section 7 with three changes: one projection for q, k and v; a causal mask built "
           "inside and combined with the padding mask; x given once.",
           "__init__: n_heads, d_head; qkv = nn.Linear(d_model, 3 * d_model); out = nn.Linear(d_model, d_model); "
           "nn.Dropout(dropout). forward: q, k, v = self.qkv(x).chunk(3, dim=-1); split each into heads (view, "
           "transpose(1, 2)); allowed = tril of ones (seq, seq), & mask if given; scores / √d_head; blocked ← most "
           "negative finite number; softmax over the keys; blocked weights ← 0; dropout; @ v; merge; out."),
    solution=solution_of("lesson03", NAME), mistakes=Q3_MISTAKES,
    success="Correct! Same outputs, weights and gradients as the package's block with a causal & padding mask, "
            "queries that see nothing included, and the same dropout.",
    task=(
        "**Capstone — causal self-attention.** A GPT (lesson 08) attends within one sequence, never to the future. "
        "Write `CausalSelfAttention(d_model, n_heads, dropout=0.0)` with `forward(x, mask=None)`:\n\n"
        "* `x`: `(batch, seq, d_model)`; `mask`: `None` or a padding mask `(batch, 1, 1, seq)`, True = may attend "
        "(`padding_mask(ids)`).\n"
        "* Returns `(output (batch, seq, d_model), weights (batch, n_heads, seq, seq))`.\n"
        "* Parameters: `qkv = nn.Linear(d_model, 3 * d_model)` — its output is the queries, keys and values side "
        "by side, in that order — and `out = nn.Linear(d_model, d_model)`; dropout on the attention weights.\n"
        "* Query $i$ may attend to key $j$ when $j \\le i$ and the mask allows $j$. A query that may see no key "
        "(left padding) gets zero weights, never NaN.\n"
        "* Split heads, scale by $\\sqrt{d_\\text{head}}$, and merge as in section 7. You may call section 6's "
        "`attention`; the package's attention and PyTorch's are refused.\n\n"
        "Checked against the package's `MultiHeadAttention` (weights copied into yours) on random sizes: outputs, "
        "weights, gradients, dropout. Stuck? `q3.solution()`, or move on with `from course_utils.attention import "
        "MultiHeadAttention`."
    ),
    starter=(
        "import torch.nn as nn  # so that this cell also runs on its own\n\n\n"
        "class CausalSelfAttention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, dropout=0.0):\n"
        "        super().__init__()\n"
        "        raise NotImplementedError  # qkv, out, dropout\n"
        "\n"
        "    def forward(self, x, mask=None):\n"
        "        raise NotImplementedError  # return output, weights\n"
    ),
)
