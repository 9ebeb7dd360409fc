"""Exercises of lesson 09 (the modern block): Gemma's GeGLU feed-forward (q1), RoPE for the new tokens after a KV
cache (q2), and the capstone, the modern block in a fused layout (q3).

Each check draws fresh random sizes and compares the learner's answer with the package (:mod:`course_utils.modern`,
:class:`~course_utils.language_model.DecoderOnlyBlock`); each exercise declares its typical mistakes once, in its
table (see :mod:`.core`): a variant built from the package with the bug planted, and the message that names it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..layers import _gelu_tanh
from ..modern import apply_rotary, repeat_kv
from .asserts import (
    Case,
    Draw,
    attempt,
    backpropagate_both,
    check_function,
    check_inputs_kept,
    close,
    compare_gradients,
    gradients,
    instantiate,
    learner_function,
    load_weights_by_name,
    max_difference,
    outcome,
    own_module_class,
    snapshot,
)
from .core import Exercise, Mismatch, Mistake, solution_of

# ---------------------------------------------------------------------------------------------------------------
# q1: GeGLU — the package's GELU (tanh approximation, GPT-2's `gelu_tanh`) in SwiGLU's place
# ---------------------------------------------------------------------------------------------------------------

def gated(activation=_gelu_tanh, swap: bool = False, after: bool = False, no_gate: bool = False):
    """``down(activation(gate x) ⊙ up x)`` with one step changed (the defaults give GeGLU)."""
    def variant(x, w_gate, w_up, w_down):
        gate, up = F.linear(x, w_gate), F.linear(x, w_up)
        if swap:
            gate, up = up, gate
        hidden = activation(up) if no_gate else activation(gate * up) if after else activation(gate) * up
        return F.linear(hidden, w_down)
    return variant


geglu_reference = gated()


def geglu_cases(draw: Draw) -> list[Case]:
    cases = []
    for shape, what in (((1, 1), "one token"), ((draw.integer(2, 4), draw.integer(3, 7)), "a batch"),
                        ((draw.integer(5, 9),), "a 2-D x (tokens, d_model)")):
        d_model, hidden = draw.distinct(2, 3, 12)
        x = draw.randn(*shape, d_model, scale=2.0)
        weights = (draw.randn(hidden, d_model), draw.randn(hidden, d_model), draw.randn(d_model, hidden))
        cases.append(Case(f"{what}: x {tuple(x.shape)}, hidden size {hidden}", (x, *weights)))
    return cases


def check_geglu(ns) -> None:
    draw = Draw()
    cases = geglu_cases(draw)
    check_function(learner_function(ns, "geglu"), geglu_reference, cases, "geglu", twins=geglu_cases(draw.twin()),
                   probes=cases, scales=(1e-3,))


Q1_MISTAKES = (
    Mistake("SiLU gate (SwiGLU)", "that is SwiGLU: Gemma's gate is GELU, F.gelu(gate, approximate=\"tanh\")",
            gated(F.silu)),
    Mistake("exact GELU", "close, but this is the exact GELU (with erf); Gemma uses its tanh approximation: "
            "F.gelu(z, approximate=\"tanh\")", gated(F.gelu)),
    Mistake("gate and up swapped", "GELU is applied to the `up` projection: the gate is W_gate x, "
            "down(gelu(W_gate x) * W_up x)", gated(swap=True)),
    Mistake("GELU after the product", "GELU is applied after the product: gelu(W_gate x) * W_up x, then down",
            gated(after=True)),
    Mistake("no gate", "the gate is missing: GeGLU multiplies gelu(W_gate x) by W_up x before down",
            gated(no_gate=True)),
    Mistake("sigmoid gate (GLU)", "a sigmoid gate is the original GLU; GeGLU gates with GELU", gated(torch.sigmoid)),
    Mistake("weights not transposed", "nn.Linear stores weights as (out_features, in_features) and computes x Wᵀ: "
            "use x @ w.T (or F.linear(x, w))",
            lambda x, w_gate, w_up, w_down: (_gelu_tanh(x @ w_gate) * (x @ w_up)) @ w_down),
)


# ---------------------------------------------------------------------------------------------------------------
# q2: RoPE for the new tokens after a cache — the package's apply_rotary at positions cache_length ...
# ---------------------------------------------------------------------------------------------------------------

def rotated_at(first: Any = None, keys: bool = True, base: float | None = None):
    """The reference with one step changed: ``first(cache_length)`` as the first position, the keys left alone, or
    another base (the defaults give the reference)."""
    def variant(q, k, cache_length, base_given=10000.0):
        start = cache_length if first is None else first(cache_length)
        positions = torch.arange(start, start + q.size(-2))
        q_rotated, k_rotated = apply_rotary(q, k, positions, base_given if base is None else base)
        return q_rotated, (k_rotated if keys else k.clone())
    return variant


rotate_new_reference = rotated_at()


def rotate_cases(draw: Draw) -> list[Case]:
    cases = []
    for new, cached, kind, base in ((draw.integer(4, 7), 0, "no cache yet (the prompt)", None),
                                    (1, draw.integer(5, 40), "one new token", None),
                                    (draw.integer(2, 4), draw.integer(5, 40), "several new tokens", None),
                                    (draw.integer(2, 4), draw.integer(5, 40), "several new tokens, another base",
                                     draw.choice((100.0, 500.0)))):
        batch, kv, d_head = draw.integer(1, 3), draw.choice((1, 2)), draw.choice((4, 6, 8))
        heads = kv * draw.integer(2, 3)
        args = (draw.randn(batch, heads, new, d_head), draw.randn(batch, kv, new, d_head), cached)
        description = (f"{kind}: q {tuple(args[0].shape)}, k {tuple(args[1].shape)}, cache_length {cached}"
                       + (f", base={base}" if base else ""))
        cases.append(Case(description, args + ((base,) if base else ())))
    return cases


def check_rotate_new(ns) -> None:
    draw = Draw()
    cases = rotate_cases(draw)
    check_function(learner_function(ns, "rotate_new"), rotate_new_reference, cases, "rotate_new",
                   twins=rotate_cases(draw.twin()), probes=cases)


Q2_MISTAKES = (
    Mistake("positions from 0", "the new tokens were rotated as positions 0, 1, …: after cache_length cached tokens "
            "they sit at cache_length, cache_length + 1, …", rotated_at(lambda cached: 0)),
    Mistake("one position too far", "off by one: with cache_length tokens cached (positions 0 … cache_length − 1) "
            "the first new token is at position cache_length", rotated_at(lambda cached: cached + 1)),
    Mistake("one position too early", "off by one: the first new token is at position cache_length, not "
            "cache_length − 1", rotated_at(lambda cached: cached - 1)),
    Mistake("keys not rotated", "only the queries were rotated: rotate the new keys too (the cache stores them "
            "rotated)", rotated_at(keys=False)),
    Mistake("base ignored", "you used base 10000 where the check passed another base: pass `base` on",
            rotated_at(base=10000.0)),
)


# ---------------------------------------------------------------------------------------------------------------
# q3 (capstone): the modern block in a fused layout — the package's DecoderOnlyBlock is the reference
# ---------------------------------------------------------------------------------------------------------------

NAME = "FusedModernBlock"
SIGNATURE = "(d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6)"
LAYOUT = ("input_layernorm.weight and post_attention_layernorm.weight (d_model,), self_attn.qkv_proj "
          "(d_model → (n_heads + 2·n_kv_heads)·d_head), self_attn.o_proj (d_model → d_model), mlp.gate_up_proj "
          "(d_model → 2·d_ff) and mlp.down_proj (d_ff → d_model), every nn.Linear with bias=False")


def forbidden() -> dict:
    from ..attention import MultiHeadAttention
    from ..language_model import DecoderOnlyBlock
    from ..modern import GroupedQueryAttention, SwiGLUFeedForward

    return {"the package's course_utils.language_model.DecoderOnlyBlock": DecoderOnlyBlock,
            "the package's course_utils.modern.GroupedQueryAttention": GroupedQueryAttention,
            "the package's course_utils.attention.MultiHeadAttention": MultiHeadAttention,
            "the package's course_utils.modern.SwiGLUFeedForward": SwiGLUFeedForward}


def fused_weights(block: nn.Module, grads: bool = False) -> dict[str, torch.Tensor | None]:
    """The package block's parameters (or gradients) in the capstone's layout."""
    get = (lambda p: p.grad) if grads else (lambda p: p.detach())
    attention, ffn = block.self_attn, block.feed_forward
    return {"input_layernorm.weight": get(block.attn_block.norm.weight),
            "post_attention_layernorm.weight": get(block.ff_block.norm.weight),
            "self_attn.qkv_proj.weight": torch.cat([get(attention.w_q.weight), get(attention.w_k.weight),
                                                    get(attention.w_v.weight)]),
            "self_attn.o_proj.weight": get(attention.w_o.weight),
            "mlp.gate_up_proj.weight": torch.cat([get(ffn.gate.weight), get(ffn.up.weight)]),
            "mlp.down_proj.weight": get(ffn.down.weight)}


class Planted(nn.Module):
    """The capstone's layout around the package's parts, with one bug planted by a knob (the defaults give the
    package block's result)."""

    knobs: dict = {}

    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.sizes, self.rope_base, self.eps = (n_heads, n_kv_heads, d_model // n_heads, d_ff), rope_base, eps
        self.input_layernorm, self.post_attention_layernorm = nn.Module(), nn.Module()
        self.input_layernorm.weight = nn.Parameter(torch.ones(d_model))
        self.post_attention_layernorm.weight = nn.Parameter(torch.ones(d_model))
        self.self_attn, self.mlp = nn.Module(), nn.Module()
        self.self_attn.qkv_proj = nn.Linear(d_model, (n_heads + 2 * n_kv_heads) * (d_model // n_heads), bias=False)
        self.self_attn.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.mlp.gate_up_proj = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.mlp.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def norm(self, x, weight):
        knob = self.knobs.get("norm")
        if knob == "centred":
            x = x - x.mean(-1, keepdim=True)
        ms = x.pow(2).mean(-1, keepdim=True)
        return (x / (ms.sqrt() + self.eps) if knob == "eps outside" else x * torch.rsqrt(ms + self.eps)) * weight

    def attention(self, h, mask):
        knob = self.knobs
        n_heads, kv, d_head, _ = self.sizes
        batch, seq, d_model = h.shape
        fused = self.self_attn.qkv_proj(h)
        if knob.get("split") == "kvq":
            k, v, q = fused.split([kv * d_head, kv * d_head, n_heads * d_head], dim=-1)
        else:
            q, k, v = fused.split([n_heads * d_head, kv * d_head, kv * d_head], dim=-1)
        if knob.get("split") == "v before k":
            k, v = v, k
        q = q.reshape(batch, seq, n_heads, d_head).transpose(1, 2)
        k = k.reshape(batch, seq, kv, d_head).transpose(1, 2)
        v = v.reshape(batch, seq, kv, d_head).transpose(1, 2)
        if knob.get("rope") != "none":
            positions = torch.arange(seq)
            q, k = apply_rotary(q, k, positions, self.rope_base)
            if knob.get("rope") == "values too":
                v = apply_rotary(v, v, positions, self.rope_base)[0]
        groups = n_heads // kv
        if knob.get("repeat") == "tile":
            k, v = k.repeat(1, groups, 1, 1), v.repeat(1, groups, 1, 1)
        else:
            k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        scale = d_model ** -0.5 if knob.get("scale") == "d_model" else d_head ** -0.5
        scores = (q @ k.transpose(-2, -1) * scale).masked_fill(~mask, torch.finfo(h.dtype).min)
        out = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(batch, seq, d_model)
        return self.self_attn.o_proj(out)

    def feed_forward(self, h):
        gate, up = self.mlp.gate_up_proj(h).chunk(2, dim=-1)
        if self.knobs.get("gate_up") == "swapped":
            gate, up = up, gate
        return self.mlp.down_proj(F.silu(gate) * up)

    def forward(self, x, mask):
        first, second = self.input_layernorm.weight, self.post_attention_layernorm.weight
        if self.knobs.get("norms") == "swapped":
            first, second = second, first
        if self.knobs.get("wiring") == "post":
            x = self.norm(x + self.attention(x, mask), first)
            return self.norm(x + self.feed_forward(x), second)
        x = x + self.attention(self.norm(x, first), mask)
        return x + self.feed_forward(self.norm(x, second))


def variant(**knobs: Any) -> type[nn.Module]:
    """A class with the capstone's signature whose forward has the bug ``knobs`` describe."""
    return type(NAME, (Planted,), {"knobs": knobs})


@dataclass
class BlockCase:
    description: str
    block: nn.Module            # the package's block with this case's random weights
    sizes: tuple                # (d_model, n_heads, n_kv_heads, d_ff)
    options: dict               # rope_base / eps where given
    x: torch.Tensor
    mask: torch.Tensor


def package_block(draw: Draw, d_model: int, n_heads: int, kv: int, d_ff: int, rope_base: float,
                  eps: float) -> nn.Module:
    from ..language_model import DecoderOnlyBlock

    block = DecoderOnlyBlock(d_model, n_heads, d_ff, 0.0, norm="pre", bias=False, activation="swiglu",
                             normalization="rmsnorm", n_kv_heads=kv, rope_base=rope_base, norm_eps=eps)
    with torch.no_grad():
        for name, p in block.named_parameters():
            p.copy_(1 + draw.randn(*p.shape, scale=0.5) if name.endswith("norm.weight")
                    else draw.randn(*p.shape, scale=p.shape[-1] ** -0.5))
    return block.eval()


def block_cases(draw: Draw) -> list[BlockCase]:
    """Multi-head with the defaults; multi-query with rope_base and eps given; grouped-query with a causal and
    right-padding mask; a longer sequence with another group size."""
    cases = []
    for kind, heads, kv, options, padded in (("multi-head", 2, 2, {}, False),
                                             ("multi-query", 3, 1, {"rope_base": draw.choice((100.0, 500.0)),
                                                                    "eps": draw.choice((1e-5, 1e-4))}, False),
                                             ("grouped-query", 4, 2, {}, True),
                                             ("grouped-query", 6, 3, {"eps": 1e-5}, False)):
        d_head = draw.choice((4, 6, 8))
        d_model = heads * d_head
        d_ff = draw.choice([n for n in range(d_model // 2 + 2, 2 * d_model) if n not in (d_model, heads, d_head)])
        batch, seq = draw.integer(1, 3) + padded, draw.choice((5, 7, 9))
        mask = torch.ones(seq, seq, dtype=torch.bool).tril()[None, None]
        what = "a causal mask"
        if padded:
            lengths = torch.tensor([seq] + [draw.integer(2, seq - 1) for _ in range(batch - 1)])
            mask = mask & (torch.arange(seq) < lengths[:, None])[:, None, None, :]
            what = "a causal mask and right padding in some rows"
        x = draw.randn(batch, seq, d_model, scale=1.5)
        given = ", ".join(f"{k}={v}" for k, v in options.items()) or "rope_base and eps left at their defaults"
        block = package_block(draw, d_model, heads, kv, d_ff, options.get("rope_base", 10000.0),
                              options.get("eps", 1e-6))
        cases.append(BlockCase(f"{kind}: batch {batch}, seq {seq}, d_model {d_model}, {heads} heads, {kv} K/V "
                               f"head{'s' * (kv > 1)}, d_ff {d_ff}, {what}, {given}", block,
                               (d_model, heads, kv, d_ff), options, x, mask))
    return cases


def build(answer: type[nn.Module], case: BlockCase) -> nn.Module:
    """The answer's block for ``case``, holding the package block's weights."""
    learner = instantiate(answer, NAME, SIGNATURE, *case.sizes, **case.options)
    return load_weights_by_name(learner, fused_weights(case.block), NAME, LAYOUT)


def run_block(answer: type[nn.Module], case: BlockCase) -> Any:
    """The output of ``answer`` on ``case`` without gradients (how a variant is compared)."""
    with torch.no_grad():
        return outcome(build(answer, case), NAME, Case(case.description, (case.x, case.mask)), forbidden())


def same_tensor(a: Any, b: Any) -> bool:
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and close(a.detach(), b.detach())


def compare_block(answer: type[nn.Module], case: BlockCase, probes: tuple) -> None:
    learner = build(answer, case)
    x_package, x_learner = case.x.clone().requires_grad_(True), case.x.clone().requires_grad_(True)
    expected = case.block(x_package, case.mask)
    before = {"x": snapshot(x_learner), "mask": snapshot(case.mask)}
    got = attempt(learner, NAME, (x_learner, case.mask), {}, forbidden())
    check_inputs_kept(before, {"x": x_learner, "mask": case.mask}, NAME, case.description)
    if not same_tensor(got, expected):
        what = (f"your `{NAME}` raised {got.kind}: {got.message}" if hasattr(got, "kind") else
                f"your output should have shape {tuple(expected.shape)}, got {tuple(got.shape)}"
                if isinstance(got, torch.Tensor) and got.shape != expected.shape else
                f"your output differs from the package's by up to {max_difference(got.detach(), expected.detach()):.3g}"
                if isinstance(got, torch.Tensor) else f"`forward` should return a tensor, got {type(got).__name__}")
        raise Mismatch(f"on {case.description}: {what}.", case, snapshot(got), answer, run_block, same_tensor, probes)
    backpropagate_both(case.block, expected, learner, got, NAME, case.description)
    expected_grads = {f"parameter `{k}`": v for k, v in fused_weights(case.block, grads=True).items()}
    expected_grads["input `x`"] = x_package.grad
    compare_gradients(expected_grads, gradients(learner, {"x": x_learner}), NAME, case.description)


def check_fused_block(ns) -> None:
    answer = ns[NAME]
    if answer not in {mistake.variant for mistake in Q3_MISTAKES}:   # a declared variant stands in for a learner's
        own_module_class(answer, NAME, "course_utils.language_model.DecoderOnlyBlock")
    cases = block_cases(Draw())
    for case in cases:
        compare_block(answer, case, probes=tuple(c for c in cases if c is not case))


Q3_MISTAKES = (
    Mistake("k, v before q", "qkv_proj's output holds the queries first, then the keys, then the values",
            variant(split="kvq")),
    Mistake("v before k", "the keys and values are swapped: qkv_proj's output is the queries, then the keys, then "
            "the values", variant(split="v before k")),
    Mistake("gate and up swapped", "gate_up_proj's output is the gate first, then up: down(silu(gate) * up)",
            variant(gate_up="swapped")),
    Mistake("values rotated", "the values are rotated too: RoPE rotates the queries and the keys only",
            variant(rope="values too")),
    Mistake("no RoPE", "no position reaches the attention: rotate the queries and keys at positions 0 … seq − 1 "
            "with rope_base", variant(rope="none")),
    Mistake("K/V heads tiled", "the K/V heads are tiled (0, 1, 0, 1, …): query head h reads K/V head "
            "h // (n_heads // n_kv_heads) — repeat each K/V head in a row", variant(repeat="tile")),
    Mistake("norms swapped", "the two norms are swapped: input_layernorm comes before the attention, "
            "post_attention_layernorm before the feed-forward network", variant(norms="swapped")),
    Mistake("LayerNorm's centring", "the norm subtracts the mean: RMSNorm only divides by the root mean square",
            variant(norm="centred")),
    Mistake("eps outside the root", "eps is added outside the square root: x / sqrt(mean(x²) + eps) · g",
            variant(norm="eps outside")),
    Mistake("Post-norm", "the block is wired Post-norm, norm(x + sublayer(x)); the modern block is Pre-norm: "
            "x + sublayer(norm(x))", variant(wiring="post")),
    Mistake("scaled by sqrt(d_model)", "the scores are scaled by 1/√d_model; scale by 1/√d_head",
            variant(scale="d_model")),
)


# ---------------------------------------------------------------------------------------------------------------
# The exercises
# ---------------------------------------------------------------------------------------------------------------

q1 = Exercise(
    name="Gemma's feed-forward (GeGLU)",
    variables=("geglu",),
    checker=check_geglu,
    hints=("Section 2's SwiGLU with one function changed. The weights are stored as nn.Linear stores them: which "
           "side of the product does x go on?",
           "1. the gate: x times the transpose of w_gate; 2. up: the same with w_up; 3. the tanh-approximated GELU "
           "of the gate, times up, unit by unit; 4. that times the transpose of w_down."),
    solution=solution_of("lesson09", "geglu"),
    mistakes=Q1_MISTAKES,
    success="Correct! silu(z) − gelu(z) is 0 at z = 0 and the same for z and −z; both gates pass large positive z "
            "and block large negative z alike, so the gap is largest in between, about 0.19 at |z| ≈ 2.",
)

q2 = Exercise(
    name="RoPE after a cache",
    variables=("rotate_new",),
    checker=check_rotate_new,
    hints=("The cached tokens held positions 0 … cache_length − 1. Where does the first new token sit?",
           "The new positions run from cache_length to cache_length + new − 1 (one per new token, the length of "
           "q's sequence axis); rotate both q and k at those positions, with `base` (section 3's rope, or the "
           "package's apply_rotary)."),
    solution=solution_of("lesson09", "rotate_new"),
    mistakes=Q2_MISTAKES,
    success="Correct! Rotated at positions 0 … new − 1, the new tokens would score against the cached keys as if "
            "they stood at the start of the text.",
)

q3 = Exercise(
    name="Capstone: the modern block, fused",
    variables=(NAME,),
    checker=check_fused_block,
    hints=("Section 5's ModernBlock with four matrices merged into two: cut each fused output at the right "
           "sizes, in the right order.",
           "q, k, v = self.self_attn.qkv_proj(h).split([n_heads * d_head, n_kv_heads * d_head, n_kv_heads * "
           "d_head], dim=-1); gate, up = self.mlp.gate_up_proj(h).chunk(2, dim=-1); the rest as in section 5."),
    solution=solution_of("lesson09", NAME),
    mistakes=Q3_MISTAKES,
    success="Correct! The same outputs and gradients as the package's block with the four matrices fused — the "
            "layout some published checkpoints use (Phi-3, for one).",
    task=(
        "**Capstone — the modern block, fused.** Some checkpoints store the modern block with fewer, wider "
        "matrices. Write `FusedModernBlock(d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6)` with "
        "`forward(x, mask)`: `x (batch, seq, d_model)` → the same shape, computing what section 5's `ModernBlock` "
        "computes, with these bias-free parameters:\n\n"
        "* `self_attn.qkv_proj`: d_model → (n_heads + 2·n_kv_heads)·d_head, the queries, then the keys, then the "
        "values; `self_attn.o_proj`: d_model → d_model;\n"
        "* `mlp.gate_up_proj`: d_model → 2·d_ff, the gate then up; `mlp.down_proj`: d_ff → d_model;\n"
        "* RMSNorm gains `input_layernorm.weight` (before the attention) and `post_attention_layernorm.weight`.\n\n"
        "`mask` is a bool `(batch or 1, 1, seq, seq)`, True = may attend. The package's blocks are refused; "
        "section 5's functions are yours to use. Checked against the package's block (weights fused into yours) "
        "on random sizes: outputs and gradients. Stuck? `q3.solution()`. To skip it, the same block unfused is "
        "`from course_utils.language_model import DecoderOnlyBlock` (not an answer: the check refuses it)."
    ),
    starter=(
        "import math\n\n"
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n\n\n"
        "class FusedModernBlock(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):\n"
        "        super().__init__()\n"
        "        raise NotImplementedError  # input_layernorm, post_attention_layernorm, self_attn, mlp\n"
        "\n"
        "    def forward(self, x, mask):\n"
        "        raise NotImplementedError\n"
    ),
)
