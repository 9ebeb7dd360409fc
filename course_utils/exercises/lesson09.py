"""Exercises of lesson 09 (the modern block): what grouped-query attention saves (q1), RoPE positions after a KV
cache (q2), the capstone, a grouped-query attention step with a cache (q3); references: :mod:`..modern`."""
from __future__ import annotations

import functools
import numbers
from typing import Any

import torch
import torch.nn as nn

from ..config import count_parameters
from ..kv_cache import CachedMultiHeadAttention, LayerCache
from ..language_model import DecoderOnlyLM
from ..masks import causal_mask
from ..modern import GroupedQueryAttention, apply_rotary, modern_config, repeat_kv, rope_frequencies, rotate_half
from .asserts import (
    Case,
    Draw,
    Raised,
    attempt,
    check_function,
    difference,
    finite,
    instantiate,
    learner_function,
    load_weights_by_name,
    own_module_class,
    same_output,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of

# --------- q1: predict, then measure what grouped-query attention saves — the package's DecoderOnlyLM is the reference


@functools.lru_cache(maxsize=None)
def measured(n_kv_heads: int, prompts: int = 4, heads_used: int | None = None, cache_read_first: bool = False,
             swapped: bool = False) -> tuple[int, int]:
    """``(cache bytes, parameters)`` of the task's model after its prompts (the defaults give the reference)."""
    torch.manual_seed(0)
    model = DecoderOnlyLM(modern_config(100, d_model=64, n_heads=8, n_kv_heads=heads_used or n_kv_heads, d_ff=512,
                                        n_layers=2, max_len=64, dropout=0.0)).eval()
    cache = model.new_cache()
    size = cache.nbytes if cache_read_first else None
    with torch.no_grad():
        model(torch.randint(1, 100, (prompts, 50)), cache)
    result = (cache.nbytes if size is None else size, count_parameters(model))
    return result[::-1] if swapped else result


WEIGHT_BYTES, TOKEN_BYTES = 14.7e9 * 2, 2 * 48 * 8 * 128 * 2  # the transfer's model in bfloat16; K and V, 48 layers


def check_measure(ns) -> None:
    cases = [Case(f"measure_gqa({kv})", (kv,)) for kv in Draw().rng.sample([1, 2, 4, 8], 4)]
    check_function(learner_function(ns, "measure_gqa"), measured, cases, "measure_gqa", scales=())
    saved = {what: 1 - measured(1)[index] / measured(8)[index] for index, what in enumerate(("cache", "parameters"))}
    for name, truth, unit in (("predicted_parameter_fraction", saved["parameters"], None),
                              ("cache_equals_weights_tokens", WEIGHT_BYTES / TOKEN_BYTES, "tokens")):
        value = ns.get(name)
        value = value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value
        if not isinstance(value, numbers.Real) or isinstance(value, bool) or not (unit or 0 <= value <= 1):
            raise ExerciseFailure(f"your measure_gqa is right; now `{name}` should hold " + (
                "a fraction between 0 and 1: what you predicted, before measuring, that 1 K/V head instead of 8 "
                "saves of the parameters." if unit is None else "a number of tokens (batch × context), counted by "
                "hand: where the 48-layer model's cache weighs as much as its weights."))
        if unit is None and abs(value - truth) > 0.01:
            slip = ("that is the fraction kept; the task asks what is saved: 1 − kept"
                    if abs(value - (1 - truth)) < 0.01 else "that is the saving of the cache"
                    if abs(value - saved["cache"]) < 0.01 else "only W_K and W_V depend on the K/V heads; every "
                    "other matrix and the embedding (236,096 parameters in all at 8 heads) stay")
            raise ExerciseFailure(f"`{name}` = {value:.3f}, but measure_gqa(8) and measure_gqa(1) say 1 K/V head "
                                  f"saves {truth:.3f} of the parameters: {slip}. Recount, then correct the prediction.")
        if unit and abs(value / truth - 1) > 0.01:
            slips = ((truth / 5, "that counts the 40 query heads; only the 8 K/V heads are cached"),
                     (truth * 48, "that is one layer's cache; all 48 layers cache keys and values"),
                     (truth * 2, "count both keys and values, and 2 bytes a number on both sides"))
            slip = next((text for near, text in slips if abs(value / near - 1) < 0.01),
                        "recount one token's cache with section 4's formula (batch = seq = 1), and the weights' "
                        "bytes")
            raise ExerciseFailure(f"`{name}` = {value:,.0f}: {slip}.")


Q1_MISTAKES = (
    Mistake("n_kv_heads ignored", "the model is built with 8 K/V heads whatever n_kv_heads says: pass "
            "n_kv_heads=n_kv_heads to modern_config", lambda kv: measured(kv, heads_used=8)),
    Mistake("cache read before the forward", "the cache is read before the prompts went through it (it is empty "
            "then): run model(prompts, cache) first, then read cache.nbytes", lambda kv: measured(kv,
                                                                                                  cache_read_first=True)),
    Mistake("one prompt", "the batch holds 4 prompts of 50 tokens: torch.randint(1, 100, (4, 50))",
            lambda kv: measured(kv, prompts=1)),
    Mistake("pair swapped", "return (cache bytes, parameters), in that order", lambda kv: measured(kv, swapped=True)),
)


# ---------------- q2: RoPE for the new tokens after a cache — the package's apply_rotary at positions cache_length ...

def rotated_at(first: Any = None, keys: bool = True, base: float | None = None):
    """The reference with one step changed: ``first(cache_length, new)`` the first position, keys left, another base."""
    def variant(q, k, cache_length, base_given=10000.0):
        start = cache_length if first is None else first(cache_length, q.size(-2))
        angles = torch.arange(start, start + q.size(-2)).float()[:, None] * rope_frequencies(
            q.size(-1), base_given if base is None else base)
        cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()
        return q * cos + rotate_half(q) * sin, (k * cos + rotate_half(k) * sin if keys else k.clone())
    return variant


def cached_vs_full(model: nn.Module, prompt: torch.Tensor, steps: int, rotate_new):
    """Greedy generation from ``prompt (1, T)`` through a cache (new tokens rotated by ``rotate_new(q, k,
    cache_length, base)``) and by full passes: ``(cached ids, full-pass ids, largest logit gap per step)``."""
    layers = [block.self_attn for block in model.blocks]
    full_ids, ids, cached_logits = prompt, prompt, []
    with torch.no_grad():
        for _ in range(steps):
            full_ids = torch.cat([full_ids, model(full_ids)[:, -1].argmax(-1, keepdim=True)], dim=1)
        cache = model.new_cache()
        for layer in layers:         # each layer asks this method for the rotated q, k of its new tokens
            layer._rotate_by_position = (lambda q, k, past, base=layer.rope_base: rotate_new(q, k, past, base))
        try:
            cached_logits.append(model(prompt, cache)[:, -1])
            for _ in range(steps - 1):
                ids = torch.cat([ids, cached_logits[-1].argmax(-1, keepdim=True)], dim=1)
                cached_logits.append(model(ids[:, -1:], cache)[:, -1])
            ids = torch.cat([ids, cached_logits[-1].argmax(-1, keepdim=True)], dim=1)
        finally:
            for layer in layers:
                del layer._rotate_by_position
        gaps = [(logits - model(ids[:, :prompt.size(1) + step])[:, -1]).abs().max().item()
                for step, logits in enumerate(cached_logits)]
    return ids, full_ids, gaps


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
    twins = [Case(f"{case.description.split(': ')[0]}, 3 more tokens cached: the same shapes",
                  (*case.args[:2], case.args[2] + 3, *case.args[3:])) for case in rotate_cases(draw.twin())]
    check_function(learner_function(ns, "rotate_new"), rotated_at(), cases, "rotate_new", twins=twins, probes=cases)
    for name, truth in (("prompt_positions", list(range(-12, 0))), ("first_token_position", [11]),
                        ("prompt_offsets", list(range(12)))):   # the diagnosis: positions at steps 0, 1; offsets
        value = ns.get(name)
        value = value.tolist() if isinstance(value, torch.Tensor) else value
        value = list(value) if isinstance(value, (list, tuple, range, set)) else [value]
        if name == "prompt_offsets":
            slips = {tuple(range(-11, 1)): "holds n − m (key minus query); the offset is the query's position m "
                                           "minus the key's n",
                     tuple(range(-12, 0)): "holds the prompt's positions; the offsets are the last query's position "
                                           "m minus each visible key's n"}
            if ns.get(name, ...) is ... or ns.get(name) is None:
                raise ExerciseFailure("your positions are right; now set `prompt_offsets` to a list: the offsets "
                                      "m − n the prompt's last token sees in the colleague's code.")
            value = sorted(value) if all(isinstance(v, numbers.Real) for v in value) else value
            if value != truth:
                raise ExerciseFailure(f"your positions are right, but `prompt_offsets` = {ns.get(name)!r} " + slips.get(
                    tuple(value), "is not what the prompt's last token sees: its position m minus the position n of "
                                  "each key it attends to (itself included)") + ".")
        elif value != truth:
            raise ExerciseFailure(f"your rotate_new is right; now `{name}` = {ns.get(name)!r} is not what the "
                                  "colleague's code gives: print its positions, torch.arange(cache_length - new, "
                                  "cache_length), for the prompt (cache_length 0, 12 new tokens) and for the first "
                                  "generated token (cache_length 12, 1 new token).")


Q2_MISTAKES = (
    Mistake("the colleague's positions", "this is the colleague's code: its new tokens take the last positions below "
            "cache_length, as if the cache already held them; the cache holds cache_length tokens *before* the new "
            "ones (positions 0 … cache_length − 1)", rotated_at(lambda cached, new: cached - new)),
    Mistake("positions from 0", "the new tokens were rotated as positions 0, 1, …: after cache_length cached tokens "
            "they sit at cache_length, cache_length + 1, …", rotated_at(lambda cached, new: 0)),
    Mistake("one position too far", "off by one: with cache_length tokens cached (positions 0 … cache_length − 1) "
            "the first new token is at position cache_length", rotated_at(lambda cached, new: cached + 1)),
    Mistake("one position too early", "off by one: the first new token is at position cache_length, not "
            "cache_length − 1", rotated_at(lambda cached, new: cached - 1)),
    Mistake("keys not rotated", "only the queries were rotated: rotate the new keys too (the cache stores them "
            "rotated)", rotated_at(keys=False)),
    Mistake("base ignored", "you used base 10000 where the check passed another base: pass `base` on",
            rotated_at(base=10000.0)),
)


# ---- q3 (capstone): a grouped-query attention step with a KV cache — reference: the package's GroupedQueryAttention

NAME = "CachedAttention"
SIGNATURE = "(d_model, n_heads, n_kv_heads, rope_base=10000.0)"
LAYOUT = ("w_q (d_model → d_model), w_k and w_v (d_model → n_kv_heads·d_head), w_o (d_model → d_model), every "
          "nn.Linear with bias=False")
FORBIDDEN = {"the package's course_utils.modern.GroupedQueryAttention": GroupedQueryAttention,
             "the package's course_utils.kv_cache.CachedMultiHeadAttention": CachedMultiHeadAttention}


class Planted(nn.Module):
    """The capstone's contract around the package's parts, a bug planted by a knob (defaults: the package's)."""

    knobs: dict = {}

    def __init__(self, d_model, n_heads, n_kv_heads, rope_base=10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d_head, self.rope_base = n_heads, n_kv_heads, d_model // n_heads, rope_base
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache):
        knob = self.knobs.get
        batch, new, d_model = x.shape
        past, groups = cache.length, self.n_heads // self.n_kv_heads
        q, k, v = (w(x).view(batch, new, -1, self.d_head).transpose(1, 2) for w in (self.w_q, self.w_k, self.w_v))
        start = 0 if knob("positions") == "from 0" else past
        positions = torch.arange(start, start + new)
        if knob("cache") == "before rotation":          # raw keys cached, all rotated again at every step
            keys, values = cache.append(k, v)
            q = apply_rotary(q, q, positions, self.rope_base)[0]
            keys = apply_rotary(keys, keys, torch.arange(past + new), self.rope_base)[0]
        else:
            q, k = apply_rotary(q, k, positions, self.rope_base)
            if knob("rope") == "values too":
                v = apply_rotary(v, v, positions, self.rope_base)[0]
            if knob("cache") == "repeated":
                k, v = repeat_kv(k, groups), repeat_kv(v, groups)
            if knob("cache") == "not stored":
                keys, values = (k, v) if cache.keys is None else (torch.cat([cache.keys, k], 2),
                                                                   torch.cat([cache.values, v], 2))
            else:
                keys, values = cache.append(k, v)
        if knob("cache") != "repeated":
            tile = knob("repeat") == "tile"
            keys, values = ((t.repeat(1, groups, 1, 1) if tile else repeat_kv(t, groups)) for t in (keys, values))
        scores = q @ keys.transpose(-2, -1) * (d_model if knob("scale") == "d_model" else self.d_head) ** -0.5
        allowed = torch.ones(new, past + new, dtype=torch.bool)
        if knob("mask") != "none":
            allowed = allowed.tril(0 if knob("mask") == "not offset" else past)
        out = scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ values
        return self.w_o(out.transpose(1, 2).reshape(batch, new, d_model))


def variant(**knobs: Any) -> type[nn.Module]:
    """A class with the capstone's signature whose forward has the bug ``knobs`` describe."""
    return type(NAME, (Planted,), {"knobs": knobs})


def step_cases(draw: Draw) -> list[Case]:
    """``Case(description, (a package attention, inputs of four steps, options))``."""
    cases = []
    for kv, groups, options in ((draw.integer(2, 3), draw.integer(2, 3), {}),
                                (1, draw.integer(3, 4), {"rope_base": draw.choice((100.0, 500.0))})):
        heads, d_head, batch = kv * groups, draw.choice((4, 6, 8)), draw.integer(1, 3)
        torch.manual_seed(draw.integer(0, 2 ** 31))
        attention = GroupedQueryAttention(heads * d_head, heads, bias=False, n_kv_heads=kv,
                                          rope_base=options.get("rope_base", 10000.0)).eval()
        lengths = (draw.integer(3, 6), 1, draw.integer(2, 3), 1)   # one token twice: at two cache lengths
        inputs = [draw.randn(batch, n, heads * d_head) for n in lengths]
        given = ", ".join(f"{k}={v}" for k, v in options.items()) or "rope_base left at its default"
        cases.append(Case(f"{heads} query heads of {d_head}, {kv} K/V head{'s' * (kv > 1)}, batch {batch}, {given}; "
                          f"steps of {lengths[0]} (the prompt), {lengths[1]}, {lengths[2]} and {lengths[3]} tokens",
                          (attention, inputs, options)))
    return cases


def steps_of(answer: Any, case: Case) -> Any:
    """``answer``'s outputs at every step of ``case``, then its cache's keys and values (or what it raised)."""
    attention, inputs, options = case.args
    d_model, heads = attention.d_model, attention.n_heads
    if answer is None:                                   # the package's own, as lesson 07's model calls it
        module, call = attention, lambda x, cache: attention(x, x, x, causal_mask(x.size(1), past=cache.length),
                                                             cache=cache)[0]
    else:
        module = instantiate(answer, NAME, SIGNATURE, d_model, heads, attention.n_kv_heads, **options)
        expected = {k: v.detach() for k, v in attention.state_dict().items()}
        module, call = load_weights_by_name(module, expected, NAME, LAYOUT), None
    cache, got = LayerCache(), []
    for x in inputs:
        with torch.no_grad():
            out = call(x.clone(), cache) if call else attempt(module, NAME, (x.clone(), cache), {}, FORBIDDEN)
        if isinstance(out, Raised):
            return out
        got.append(out)
    return (*got, cache.keys, cache.values)


def check_cached_attention(ns) -> None:
    answer = ns[NAME]
    if answer not in {mistake.variant for mistake in Q3_MISTAKES}:   # a declared variant stands in for a learner's
        own_module_class(answer, NAME, "course_utils.modern.GroupedQueryAttention")
    cases = step_cases(Draw())
    for case in cases:
        expected, got = steps_of(None, case), steps_of(answer, case)
        if not same_output(got, expected):
            whats = [f"at step {step} your output" for step in range(1, len(expected) - 1)] + [
                "after the last step, the cached keys (batch, n_kv_heads, every position so far, d_head)",
                "after the last step, the cached values"]
            differs = (f"your `{NAME}` raised {got.kind}: {got.message}" if isinstance(got, Raised) else next(
                (gap for what, mine, theirs in zip(whats, got, expected) if (gap := difference(mine, theirs, what))),
                "your answer differs from the package's"))
            raise Mismatch(f"on {case.description}: {differs}.", case, got, answer, steps_of,
                           same_output, tuple(c for c in cases if c is not case), expected)
    large = cases[0]
    attention, inputs, options = large.args
    large = Case(f"{large.description}, inputs ×1000 (scores far beyond ±10⁴)", (attention, [x * 1e3 for x in inputs],
                                                                          options))
    expected, got = steps_of(None, large), steps_of(answer, large)
    if isinstance(got, Raised) or not all(finite(g) for g in got):
        raise ExerciseFailure(f"on {large.description}: your output holds inf or NaN where the package's is finite "
                              "(or it raised): the softmax overflows. Use torch.softmax or "
                              "F.scaled_dot_product_attention (they subtract the maximum first).")
    if not all(difference(g, e, "", atol=1e-2, rtol=1e-3) is None for g, e in zip(got, expected)):
        raise ExerciseFailure(f"on {large.description}: right on ordinary inputs, wrong on large ones: a constant "
                              "that only matters here — blocked scores filled with a value such as -1e4 that real "
                              "scores go below. Fill with float('-inf') or torch.finfo(scores.dtype).min (or pass "
                              "the boolean mask to F.scaled_dot_product_attention).")


Q3_MISTAKES = (
    Mistake("positions from 0", "the new tokens are rotated as positions 0, 1, … at every step: after cache.length "
            "cached tokens they sit at cache.length, cache.length + 1, …", variant(positions="from 0")),
    Mistake("causal mask not offset", "each new query must see every cached key and the new ones up to itself: "
            "a mask aligned top-left (is_causal=True, or .tril()) hides cached keys; shift it by the cache length, "
            "torch.ones(new, past + new, dtype=torch.bool).tril(past)", variant(mask="not offset")),
    Mistake("no mask", "with several new tokens the first one sees those after it: mask the scores with "
            "torch.ones(new, past + new, dtype=torch.bool).tril(past)", variant(mask="none")),
    Mistake("K/V heads repeated before caching", "the cache holds every query head's copy: cache the n_kv_heads "
            "heads and repeat them for the queries after reading the cache (that is what GQA saves)",
            variant(cache="repeated")),
    Mistake("keys cached before rotation", "the cache holds the keys before RoPE: rotate the new keys at their "
            "positions, then cache them, so no key is rotated twice or again at every step",
            variant(cache="before rotation")),
    Mistake("cache not updated", "the new keys and values never reach the cache: cache.append(k, v) stores them and "
            "returns every key and value so far", variant(cache="not stored")),
    Mistake("values rotated", "the values are rotated too: RoPE rotates the queries and the keys only",
            variant(rope="values too")),
    Mistake("K/V heads tiled", "the K/V heads are tiled (0, 1, 0, 1, …): query head h reads K/V head "
            "h // (n_heads // n_kv_heads) — repeat each K/V head in a row", variant(repeat="tile")),
    Mistake("scaled by sqrt(d_model)", "the scores are scaled by 1/√d_model; scale by 1/√d_head",
            variant(scale="d_model")),
)


# ------------------------------------------------------------------------------------------------------- The exercises

q1 = Exercise(
    name="What grouped-query attention saves",
    variables=("measure_gqa",),     # then the prediction and the transfer, read by the check
    checker=check_measure,
    hints=("For the prediction: which weight matrices have a shape that depends on n_kv_heads? Count every matrix "
           "of the model once. For the measurement: the cache is model.new_cache(), filled by one forward pass with "
           "it; its size is its nbytes.",
           "measure_gqa: 1. build the model with n_kv_heads; 2. a new cache; 3. the (4, 50) prompts through the "
           "model with that cache, under torch.no_grad(); 4. return the cache's nbytes and count_parameters of the "
           "model. Each fraction saved: 1 − (value with 1 head) / (value with 8 heads); print both. The transfer: the "
           "bytes one token adds to the cache (section 4's formula with batch = seq = 1), then weights' bytes / that."),
    solution=solution_of("lesson09", "predicted_parameter_fraction", "measure_gqa", "cache_equals_weights_tokens"),
    mistakes=Q1_MISTAKES,
    success="Correct! One K/V head instead of eight cuts the cache by 7/8 (87.5 %) "
            "but the parameters by only 6 %. Only W_K and W_V depend on h_kv (64 × 64 each at 8 heads, 64 × 8 at 1, "
            "in each of the 2 layers), while the cache is made of keys and values alone; the rest of the model (the "
            "embedding shared with the output, W_Q, W_O, the SwiGLU's three 64 × 512 matrices, the norms) does not "
            "change. GQA is a memory saving for generation, not a smaller model; and the 48-layer model's cache "
            "weighs as much as its weights only past about 150,000 cached tokens.",
)

q2 = Exercise(
    name="Cached generation that drifts",
    variables=("rotate_new",),                # and the diagnosis, read by the check
    checker=check_rotate_new,
    hints=("Print the positions the colleague's code gives for the prompt (cache_length 0, 12 new tokens) and for "
           "the first generated token (cache_length 12, 1 new token). Which offsets m − n does each step's "
           "attention then see, and which would a full pass see?",
           "The cache holds cache_length tokens at positions 0 … cache_length − 1 before the new ones arrive; the "
           "new ones follow them, one position each (q's sequence axis); rotate both q and k there, with `base`."),
    solution=solution_of("lesson09", "prompt_positions", "first_token_position", "prompt_offsets", "rotate_new"),
    mistakes=Q2_MISTAKES,
    success="Correct! The colleague's code put the page's 12-token prompt at positions −12 … −1: every offset inside "
            "the prompt was right, so step 0 was exact (RoPE sees only m − n). The first generated token then went "
            "to position 11 against cached keys at −12 … −1, every offset 11 too large, and the text drifted from "
            "there.",
)

q3 = Exercise(
    name="Capstone: grouped-query attention with a KV cache", variables=(NAME,), checker=check_cached_attention,
    hints=("Section 5's ModernAttention, with two changes: the new tokens' positions and the mask now depend on "
           "how many tokens are cached already, and the keys and values go through the cache before the heads "
           "are repeated.",
           "1. project x to q, k, v and split the heads (n_kv_heads for k and v); 2. rotate q and k at cache.length … "
           "cache.length + new − 1; 3. append k, v to the cache and take back every key and value; 4. repeat "
           "each K/V head in a row for its group; 5. scores with a causal mask offset by cache.length, softmax, "
           "values, merge the heads, w_o."),
    solution=solution_of("lesson09", NAME), mistakes=Q3_MISTAKES,
    success="Correct! Step by step, your cached attention gives what the package's gives on the whole text, and "
            "its cache holds n_kv_heads heads: the memory section 4 computed.",
    task=(
        "Write `CachedAttention(d_model, n_heads, n_kv_heads, rope_base=10000.0)` with the bias-free projections "
        "`w_q`, `w_k`, `w_v`, `w_o` of `ModernAttention`, and `forward(x, cache)`:\n\n"
        "* `x (batch, new, d_model)`: the tokens not yet seen; returns `(batch, new, d_model)`;\n"
        "* `cache`: one layer's part of lesson 07's KV cache, a `LayerCache` (`from course_utils.kv_cache import "
        "LayerCache`; `LayerCache()` is an empty one): `cache.length` tokens are cached; `cache.append(k, v)` "
        "stores the new keys and values, `(batch, n_kv_heads, new, d_head)`, already rotated, and returns all of "
        "them.\n\n"
        "Causal: each new token attends to every cached token and to the new ones up to itself, so a text fed in "
        "pieces gives what one full causal pass gives. Checked against the package's `GroupedQueryAttention` on "
        "random sizes over three steps, outputs and cache. Stuck? `q3.hint()`, then `q3.solution()`."
    ),
    starter=(
        "import torch.nn as nn  # used below\n\n\n"
        "class CachedAttention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, n_kv_heads, rope_base=10000.0):\n"
        "        super().__init__()\n"
        "        raise NotImplementedError  # w_q, w_k, w_v, w_o\n"
        "\n"
        "    def forward(self, x, cache):\n"
        "        raise NotImplementedError\n"
    ),
)
