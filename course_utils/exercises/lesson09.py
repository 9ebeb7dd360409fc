"""Exercises of notebook 09 (the modern block): RMSNorm by hand, applying RoPE, repeating K/V heads, the KV-cache
size of grouped-query attention, and the capstone: the modern block assembled from them.

Every check draws fresh inputs (:class:`~.asserts.Draw`) — sizes with no two equal — plus the edge cases (a batch
of one, one token, eps that matters, positions that do not start at 0 or are not consecutive, another base,
seq == d_head, one K/V head, n_repeats = 1, a transposed view) and compares the learner's function with the
package's (:mod:`course_utils.modern`), which is the reference: same type, shape, dtype and values, the caller's
tensors left as they were, gradients that flow, and no call into the package's block or torch's ready-made one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import modern
from ..modern import RMSNorm, apply_rotary, kv_cache_bytes, repeat_kv, rotate_half
from .asserts import (
    Case,
    Draw,
    backpropagate_both,
    call_learner,
    check_function,
    check_input_gradients,
    check_inputs_kept,
    check_same_in_both_modes,
    close,
    compare_gradients,
    copy_weights,
    difference,
    first_output,
    gradients,
    instantiate,
    learner_function,
    own_module_class,
    snapshot,
)
from .core import Exercise, ExerciseFailure, Mistake, solution_of

EPS = 1e-6


# ---------------------------------------------------------------------------- q1: RMSNorm
RMS_FORBIDDEN = {"torch.nn.functional.rms_norm": F.rms_norm, "torch.rms_norm": torch.rms_norm,
                 "torch.nn.RMSNorm": nn.RMSNorm, "the package's course_utils.modern.RMSNorm": RMSNorm,
                 "the package's course_utils.modern.make_norm": modern.make_norm}


def rms_reference(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """The package's RMSNorm with the gain ``weight`` (gradients reach ``weight`` too)."""
    return torch.func.functional_call(RMSNorm(x.size(-1), eps=eps), {"weight": weight}, (x,))


def tokens_of_many_sizes(draw: Draw, batch: int, seq: int, d_model: int) -> torch.Tensor:
    """``(batch, seq, d_model)``: tokens whose root mean square ranges from 1e-3 (where eps matters) to ~40, most
    with a mean far from 0 (so centring shows)."""
    scales = torch.tensor([draw.choice((1e-3, 0.3, 1.0, 5.0, 40.0)) for _ in range(batch * seq)]).view(batch, seq, 1)
    if batch * seq > 1:
        scales.view(-1)[0] = 1e-3
    shifts = torch.tensor([draw.choice((0.0, 0.7, -1.3)) for _ in range(batch * seq)]).view(batch, seq, 1)
    return draw.randn(batch, seq, d_model) * scales + shifts * (scales > 1e-2)


def rms_cases(draw: Draw) -> list[Case]:
    batch, seq, d_model = draw.integer(2, 4), draw.integer(5, 8), draw.integer(9, 16)
    small = draw.integer(3, 7)
    big_eps = draw.choice((1e-2, 3e-3, 1e-4))
    cases = []
    for b, s, d, eps in ((1, 1, small, None), (1, seq, d_model, None), (batch, seq, d_model, None),
                         (batch, seq, d_model, big_eps)):
        x, weight = tokens_of_many_sizes(draw, b, s, d), draw.randn(d)
        setting = "eps left at its default" if eps is None else f"eps={eps} given"
        sizes = ", one token tiny (RMS 1e-3)" if b * s > 1 else ""
        cases.append(Case(f"x of batch {b}, seq {s}, d_model {d}{sizes}, a random weight, {setting}",
                          (x, weight) if eps is None else (x, weight, eps)))
    return cases


def check_rms_norm(ns) -> None:
    function = learner_function(ns, "rms_norm")
    draw = Draw()
    cases = rms_cases(draw)
    check_function(function, rms_reference, cases, "rms_norm", forbidden=RMS_FORBIDDEN, twins=rms_cases(draw.twin()),
                   probes=cases)
    check_input_gradients(function, rms_reference, cases[-2], "rms_norm", RMS_FORBIDDEN, ("x", "weight"))


def mean_square(x: torch.Tensor, dim=-1) -> torch.Tensor:
    return x.pow(2).mean(dim, keepdim=True) if dim is not None else x.pow(2).mean()


EACH_TOKEN = "each token is normalised on its own, over its d_model features: the mean over the last axis"
RMS_MISTAKES = (
    Mistake("mean subtracted (LayerNorm)", "you subtracted the mean first: that is LayerNorm. RMSNorm does not "
            "centre, it only divides by the root mean square of the raw features, sqrt(mean(x²) + eps)",
            variant=lambda x, w, eps=EPS: rms_reference(x - x.mean(-1, keepdim=True), w, eps)),
    Mistake("gain forgotten", "the gain is missing: multiply the normalised vector by `weight`, one factor per feature",
            variant=lambda x, w, eps=EPS: rms_reference(x, torch.ones_like(w), eps)),
    Mistake("no square root", "you divided by the mean square itself; divide by its square root, sqrt(mean(x²) + eps)",
            variant=lambda x, w, eps=EPS: x / (mean_square(x) + eps) * w),
    Mistake("eps outside the root", "eps is added outside the square root: x / (sqrt(mean(x²)) + eps). Put it inside, "
            "x / sqrt(mean(x²) + eps), as torch.nn.RMSNorm does",
            variant=lambda x, w, eps=EPS: x / (mean_square(x).sqrt() + eps) * w),
    Mistake("L2 norm instead of RMS", "you divided by the vector's length (the L2 norm); RMSNorm divides by the *root "
            "mean* square: the mean of x², not the sum",
            variant=lambda x, w, eps=EPS: x / x.norm(dim=-1, keepdim=True) * w),
    Mistake("sum of squares", "you took the sum of x² (the squared length); RMSNorm takes its *mean* over the d_model "
            "features", variant=lambda x, w, eps=EPS: rms_reference(x, w, eps / x.size(-1)) / x.size(-1) ** 0.5),
    Mistake("standard deviation", "you divided by the standard deviation (the variance, centred); RMSNorm divides by "
            "the root mean square of the raw features, no mean removed",
            variant=lambda x, w, eps=EPS: x / (x.var(-1, keepdim=True, unbiased=False) + eps).sqrt() * w),
    Mistake("one mean over everything", f"you took one mean square over the whole tensor; {EACH_TOKEN}",
            variant=lambda x, w, eps=EPS: x / (mean_square(x, None) + eps).sqrt() * w),
    Mistake("over the sequence", f"you took the mean square over the sequence; {EACH_TOKEN}",
            variant=lambda x, w, eps=EPS: x / (mean_square(x, 1) + eps).sqrt() * w),
    Mistake("over the batch", f"you took the mean square over the batch; {EACH_TOKEN}",
            variant=lambda x, w, eps=EPS: x / (mean_square(x, 0) + eps).sqrt() * w),
    Mistake("multiplied by the RMS", "you multiplied by the root mean square; divide by it",
            variant=lambda x, w, eps=EPS: x * (mean_square(x) + eps).sqrt() * w),
    Mistake("eps argument ignored", "you used another eps than the check passed: use the `eps` parameter (its default "
            "1e-6), inside the square root",
            variant=lambda x, w, eps=EPS: rms_reference(x, w, 1e-5 if eps == EPS else EPS),
            shows=lambda case, got, _: isinstance(got, torch.Tensor) and got.shape == case.args[0].shape
            and got.dtype == case.args[0].dtype and not close(got.detach(), rms_reference(*case.args), 1e-6, 1e-5)
            and any(close(got.detach(), rms_reference(*case.args[:2], other), 1e-6, 1e-5)
                    for other in (EPS, 1e-5, 1e-8, 0.0, 1.1920929e-07))),
)


# ---------------------------------------------------------------------------- q2: RoPE
ROPE_FORBIDDEN = {"the package's course_utils.modern.apply_rotary": apply_rotary,
                  "the package's course_utils.modern.rotary_embedding": modern.rotary_embedding,
                  "the package's course_utils.modern._rotate": modern._rotate}


def rope_reference(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    return apply_rotary(x, x, positions, base)[0]


def rope_cases(draw: Draw) -> list[Case]:
    batch, heads = draw.integer(2, 3), draw.integer(4, 5)
    seq, d_head = draw.choice((6, 7, 9)), draw.choice((8, 10, 12, 16))
    offset = draw.integer(3, 40)
    scattered = sorted(draw.distinct(seq, 1, 60))
    base = draw.choice((100.0, 500.0, 2000.0))
    square = draw.choice((4, 6, 8))
    cases = [
        Case(f"x of batch 1, 1 head, 1 token, d_head 2, position {offset}",
             (draw.randn(1, 1, 1, 2), torch.tensor([offset]))),
        Case(f"x of batch 1, {heads} heads, seq {seq}, d_head {d_head}, positions {offset}..{offset + seq - 1}",
             (draw.randn(1, heads, seq, d_head), torch.arange(offset, offset + seq))),
        Case(f"x of batch {batch}, {heads} heads, seq {square} == d_head {square}, positions 0..{square - 1}",
             (draw.randn(batch, heads, square, square), torch.arange(square))),
        Case(f"x of batch {batch}, {heads} heads, seq {seq}, d_head {d_head}, positions {scattered} (not "
             "consecutive)", (draw.randn(batch, heads, seq, d_head), torch.tensor(scattered))),
        Case(f"x of batch {batch}, {heads} heads, seq {seq}, d_head {d_head}, positions {offset}..{offset + seq - 1}"
             f", base={base} given", (draw.randn(batch, heads, seq, d_head), torch.arange(offset, offset + seq), base)),
    ]
    return cases


def interleaved_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """RoPE with adjacent pairs ``(0, 1), (2, 3), …`` (the original paper's layout) instead of halves."""
    d = x.size(-1)
    angles = positions.float()[:, None] * base ** (-torch.arange(0, d, 2).float() / d)
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([even * angles.cos() - odd * angles.sin(), even * angles.sin() + odd * angles.cos()], -1)
    return rotated.flatten(-2)


def halves_rope(x: torch.Tensor, positions: torch.Tensor, frequencies: torch.Tensor, sign: float = 1.0) -> torch.Tensor:
    angles = positions.float()[:, None] * frequencies
    angles = torch.cat([angles, angles], dim=-1)
    return x * angles.cos() + sign * rotate_half(x) * angles.sin()


def check_apply_rope(ns) -> None:
    function = learner_function(ns, "apply_rope")
    draw = Draw()
    cases = rope_cases(draw)
    check_function(function, rope_reference, cases, "apply_rope", forbidden=ROPE_FORBIDDEN, atol=1e-4, rtol=1e-4,
                   twins=rope_cases(draw.twin()), probes=cases)
    check_input_gradients(function, rope_reference, cases[3], "apply_rope", ROPE_FORBIDDEN, ("x",))


def theta(base: float, d: int) -> torch.Tensor:
    return base ** (-torch.arange(0, d, 2).float() / d)


def angle_halves(positions: torch.Tensor, frequencies: torch.Tensor) -> torch.Tensor:
    return torch.cat([positions.float()[:, None] * frequencies] * 2, dim=-1)


ROPE_MISTAKES = (
    Mistake("adjacent pairs instead of halves", "you rotated adjacent pairs (0, 1), (2, 3), …; the course (like "
            "GPT-NeoX and Llama) pairs dimension i with i + d_head/2 — the two halves. Both layouts work if q and k "
            "use the same one, but a model trained with one breaks with the other", variant=interleaved_rope),
    Mistake("sin with the wrong sign", "the rotation goes backwards (sin has the wrong sign): the half-rotation maps "
            "the halves (x1, x2) to (-x2, x1), and the formula is x·cos + rotate_half(x)·sin",
            variant=lambda x, positions, base=10000.0: halves_rope(x, positions, theta(base, x.size(-1)), -1.0)),
    Mistake("positions ignored", "you used positions 0..seq-1 instead of the `positions` given: with a KV cache the "
            "new tokens do not start at 0", variant=lambda x, positions, base=10000.0: rope_reference(
                x, torch.arange(x.size(-2)), base)),
    Mistake("no rotation at all", "nothing was rotated: the output equals the input (or every token sat at position "
            "0). Multiply by cos and add the half-rotated x times sin, with angles positions · θ",
            variant=lambda x, positions, base=10000.0: x.clone(),
            shows=lambda case, got, _: isinstance(got, torch.Tensor) and got.shape == case.args[0].shape
            and close(got.detach(), case.args[0], atol=1e-4)),
    Mistake("positions counted up from the first", "you counted positions up from the first one; use the "
            "`positions` given — they need not be consecutive", variant=lambda x, positions, base=10000.0:
            rope_reference(x, torch.arange(x.size(-2)) + positions[0], base)),
    Mistake("exponent without the 2", "the frequencies are off: θ_j = base^(-2j / d_head) for j = 0 .. d_head/2 - 1 "
            "(the even numbers 0, 2, … below d_head, divided by d_head, in the exponent)",
            variant=lambda x, positions, base=10000.0: halves_rope(x, positions, base ** (
                -torch.arange(x.size(-1) // 2).float() / x.size(-1)))),
    Mistake("exponent sign missing", "the exponent's sign is missing: θ_j = base^(-2j / d_head) is 1 for the first "
            "pair and small for the last; yours grow",
            variant=lambda x, positions, base=10000.0: halves_rope(
                x, positions, base ** (torch.arange(0, x.size(-1), 2).float() / x.size(-1)))),
    Mistake("base ignored", "you used base 10000 where the check passed another base: use the `base` parameter",
            variant=lambda x, positions, base=10000.0: rope_reference(x, positions, 10000.0)),
    Mistake("angles interleaved, halves rotated", "the angles are laid out for adjacent pairs (each repeated twice in "
            "a row) while the rotation uses the halves: repeat the d_head/2 angles as two halves",
            variant=lambda x, positions, base=10000.0: x * (positions.float()[:, None] * theta(base, x.size(-1)))
            .repeat_interleave(2, dim=-1).cos() + rotate_half(x) * (positions.float()[:, None] * theta(
                base, x.size(-1))).repeat_interleave(2, dim=-1).sin()),
    Mistake("cos and sin swapped", "cos and sin are swapped: x is multiplied by cos(angles), its half-rotation by "
            "sin(angles)", variant=lambda x, positions, base=10000.0: x * angle_halves(
                positions, theta(base, x.size(-1))).sin() + rotate_half(x) * angle_halves(
                positions, theta(base, x.size(-1))).cos()),
    Mistake("frequencies reversed", "the frequencies run the wrong way round: the first pair turns fastest (θ_0 = 1), "
            "the last slowest", variant=lambda x, positions, base=10000.0: halves_rope(
                x, positions, theta(base, x.size(-1)).flip(0))),
)


# ---------------------------------------------------------------------------- q3: repeat K/V heads
REPEAT_FORBIDDEN = {"the package's course_utils.modern.repeat_kv": repeat_kv}


def transposed(draw: Draw, batch: int, heads: int, seq: int, d_head: int) -> torch.Tensor:
    """``(batch, heads, seq, d_head)`` as attention makes it: a transposed view of ``(batch, seq, heads, d_head)``."""
    return draw.randn(batch, seq, heads, d_head).transpose(1, 2)


def repeat_cases(draw: Draw) -> list[Case]:
    batch, kv_heads, seq, d_head = draw.integer(2, 3), draw.integer(4, 5), draw.integer(6, 8), draw.integer(9, 12)
    n_repeats = draw.choice((2, 3))
    return [
        Case(f"kv of batch 1, 1 K/V head (multi-query), seq {seq}, d_head {d_head}, n_repeats {n_repeats + 4}",
             (draw.randn(1, 1, seq, d_head), n_repeats + 4)),
        Case(f"kv of batch {batch}, {kv_heads} K/V heads, seq {seq}, d_head {d_head}, n_repeats 1 (multi-head: "
             "unchanged)", (draw.randn(batch, kv_heads, seq, d_head), 1)),
        Case(f"kv of batch {batch}, {kv_heads} K/V heads, seq {seq}, d_head {d_head}, n_repeats {n_repeats}",
             (draw.randn(batch, kv_heads, seq, d_head), n_repeats)),
        Case(f"kv of batch {batch}, {kv_heads} K/V heads, seq {seq}, d_head {d_head} as attention makes it (a "
             f"transposed view, not contiguous), n_repeats {n_repeats}",
             (transposed(draw, batch, kv_heads, seq, d_head), n_repeats)),
    ]


def check_repeat_kv_heads(ns) -> None:
    function = learner_function(ns, "repeat_kv_heads")
    draw = Draw()
    cases = repeat_cases(draw)
    check_function(function, repeat_kv, cases, "repeat_kv_heads", forbidden=REPEAT_FORBIDDEN,
                   twins=repeat_cases(draw.twin()), probes=cases)
    check_input_gradients(function, repeat_kv, cases[-1], "repeat_kv_heads", REPEAT_FORBIDDEN, ("kv",))


def heads_shaped(case: Case, got) -> bool:
    return isinstance(got, torch.Tensor) and got.shape == repeat_kv(*case.args).shape


REPEAT_MISTAKES = (
    Mistake("not repeated", "expected shape (batch, kv_heads · n_repeats, seq, d_head): the heads were not repeated",
            variant=lambda kv, n: kv.clone(), shows=lambda case, got, _: isinstance(got, torch.Tensor)
            and got.shape == case.args[0].shape != repeat_kv(*case.args).shape),
    Mistake("wrong axis", "expected shape (batch, kv_heads · n_repeats, seq, d_head): repeat along the heads axis, "
            "dim 1", variant=lambda kv, n: repeat_kv(kv.transpose(1, 2), n).transpose(1, 2),
            shows=lambda case, got, _: isinstance(got, torch.Tensor) and not heads_shaped(case, got)),
    Mistake("tiled instead of interleaved", "the heads are tiled (0, 1, 0, 1, …); a group of query heads shares one "
            "K/V head, so the order must be 0, 0, …, 1, 1, … — what enable_gqa=True assumes. Repeat each head "
            "n_repeats times in a row", variant=lambda kv, n: kv.repeat(1, n, 1, 1)),
    Mistake("heads reversed", "expected each K/V head repeated n_repeats times in a row (head h at positions "
            "h·n_repeats … h·n_repeats + n_repeats - 1), got another arrangement",
            variant=lambda kv, n: repeat_kv(kv.flip(1), n), shows=lambda case, got, _: heads_shaped(case, got)),
)


# ---------------------------------------------------------------------------- q4: KV-cache bytes
def cache_reference(batch: int, seq: int, layers: int, n_heads: int, n_kv_heads: int, d_head: int) -> int:
    return kv_cache_bytes(batch, seq, layers, n_kv_heads, d_head, 2)


def cache_cases(draw: Draw) -> list[Case]:
    """Four configurations, smallest first; within each, the sizes not fixed by its kind all differ (so an answer
    that uses one size for another shows)."""
    cases = []
    for kind in ("batch 1, multi-query (1 K/V head)", "grouped-query", "multi-head (as many K/V heads as query "
                 "heads)", "grouped-query, long context"):
        one_batch, multi_query, multi_head = "batch 1" in kind, "multi-query" in kind, "multi-head" in kind
        while True:
            n_kv = 1 if multi_query else draw.integer(2, 8)
            n_heads = n_kv * (1 if multi_head else draw.integer(3, 8))
            batch = 1 if one_batch else draw.choice([n for n in range(3, 65) if n != 4])
            seq = draw.integer(1_000, 200_000) if "long" in kind else draw.integer(10, 4096)
            values = (batch, seq, draw.integer(5, 80), n_heads, n_kv, draw.choice((72, 80, 96, 112)))
            fixed = (one_batch, False, False, multi_head, multi_query, False)
            free = [value for value, forced in zip(values, fixed) if not forced]
            if len(set(free)) == len(free):
                break
        names = ("batch", "seq", "layers", "n_heads", "n_kv_heads", "d_head")
        cases.append(Case(f"{kind}: " + ", ".join(f"{n}={v}" for n, v in zip(names, values)), values))
    return cases


def check_cache_bytes(ns) -> None:
    cases = cache_cases(Draw())
    check_function(learner_function(ns, "cache_bytes"), cache_reference, cases, "cache_bytes", probes=cases,
                   forbidden={"the package's course_utils.modern.kv_cache_bytes": kv_cache_bytes})


C = cache_reference
CACHE_MISTAKES = (
    Mistake("a float", "return an int (a number of bytes): the count is whole — compute it with integers only (*, and "
            "// if you divide)", variant=lambda b, s, layers, h, kv, d: float(C(b, s, layers, h, kv, d)),
            shows=lambda case, got, _: isinstance(got, (float, np.floating))
            or isinstance(got, torch.Tensor) and got.is_floating_point()),
    Mistake("all query heads cached", "you counted n_heads key/value heads; the cache stores only the n_kv_heads K/V "
            "heads — that is the whole saving of GQA and MQA", variant=lambda b, s, layers, h, kv, d: C(
                b, s, layers, h, h, d)),
    Mistake("group size instead of K/V heads", "you counted n_heads // n_kv_heads heads (the group size); the cache "
            "stores the n_kv_heads K/V heads", variant=lambda b, s, layers, h, kv, d: C(b, s, layers, h, h // kv, d)),
    Mistake("keys only", "half the answer — the cache holds keys *and* values (a factor 2), and each bfloat16 number "
            "takes 2 bytes (another factor 2)", variant=lambda b, s, layers, h, kv, d: C(b, s, layers, h, kv, d) // 2),
    Mistake("float32 bytes", "you counted 4 bytes per number (float32); this cache is bfloat16, 2 bytes",
            variant=lambda b, s, layers, h, kv, d: C(b, s, layers, h, kv, d) * 2),
    Mistake("one layer only", "every layer has its own cache: multiply by the number of layers",
            variant=lambda b, s, layers, h, kv, d: C(b, s, 1, h, kv, d)),
    Mistake("batch forgotten", "every sequence of the batch has its own cache: multiply by the batch size",
            variant=lambda b, s, layers, h, kv, d: C(1, s, layers, h, kv, d)),
)


q1 = Exercise(
    name="RMSNorm by hand",
    variables=("rms_norm",),
    checker=check_rms_norm,
    hints=("What does RMSNorm keep of LayerNorm, and what does it drop? Where does eps go, and which axis is one "
           "token's features? Write it with tensor operations, not nn.RMSNorm or F.rms_norm.",
           "1. the mean of x² over the last axis (d_model), keeping that axis for broadcasting; 2. add eps (the "
           "parameter, default 1e-6) and take the square root; 3. divide x by it — no mean subtracted; 4. "
           "multiply by weight, one factor per feature. Out-of-place steps only, so gradients reach x and weight."),
    solution=solution_of("lesson09", "rms_norm"),
    mistakes=RMS_MISTAKES,
    success="Correct! Equal to torch.nn.RMSNorm, eps inside the root, tiny tokens included.",
)

q2 = Exercise(
    name="Apply RoPE",
    variables=("apply_rope",),
    checker=check_apply_rope,
    hints=("Pair dimension i with i + d_head/2, turn each pair by position · θ_j — and take the positions and the "
           "base you are given, not 0..seq-1 and not a constant.",
           "1. θ_j = base^(-2j / d_head) for j = 0 .. d_head/2 - 1; 2. angles = every position times every θ: "
           "(seq, d_head/2), then the same angles again for the second half → (seq, d_head); 3. the half-rotation "
           "of x: split the last axis into halves (x1, x2) and join (-x2, x1); 4. return x·cos(angles) + "
           "half-rotation·sin(angles), in x's dtype."),
    solution=solution_of("lesson09", "apply_rope"),
    mistakes=ROPE_MISTAKES,
    success="Correct! The score q_m·k_n now depends only on m − n.",
)

q3 = Exercise(
    name="Repeat K/V heads for grouped-query attention",
    variables=("repeat_kv_heads",),
    checker=check_repeat_kv_heads,
    hints=("Query heads h·n_repeats … (h+1)·n_repeats − 1 share K/V head h: in which order must the copies come "
           "— 0, 0, 1, 1 or 0, 1, 0, 1?",
           "Repeat each K/V head n_repeats times *in a row* along the heads axis (dim 1) — PyTorch has an "
           "'interleaving' repeat for exactly this; or add an axis after the heads, expand it to n_repeats and "
           "merge it into the heads axis with reshape. n_repeats = 1 gives the heads back unchanged."),
    solution=solution_of("lesson09", "repeat_kv_heads"),
    mistakes=REPEAT_MISTAKES,
    success="Correct! Query head h reads K/V head h // n_repeats, as enable_gqa=True assumes.",
)

q4 = Exercise(
    name="KV-cache size under GQA",
    variables=("cache_bytes",),
    checker=check_cache_bytes,
    hints=("What is cached per token and per layer: the query heads, or the K/V heads? And how many bytes is one "
           "bfloat16 number?",
           "Multiply: 2 (one key and one value) × batch × seq × layers × n_kv_heads × d_head × 2 bytes. n_heads "
           "does not appear. Return a whole number, an int (integer arithmetic only)."),
    solution=solution_of("lesson09", "cache_bytes"),
    mistakes=CACHE_MISTAKES,
    success="Correct! Fewer K/V heads, proportionally smaller cache.",
)


# ---------------------------------------------------------------------------- q5 (capstone): the modern block
# ---------------------------------------------------------------------------- q5 (capstone): the modern block
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


def layer_error_hint(error: BaseException) -> str | None:
    message = str(error)
    if "tuple" in message:
        return ("The attention module returns a pair (output, weights): take [0], e.g. self.self_attn(h, h, h, "
                "mask)[0]")
    if "shape" in message or "size" in message:
        return "Sizes differ on every check: take them from the arguments and the input, never a fixed number"
    return None


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
    compare_gradients(gradients(package, {"x": leaf_p}), gradients(learner, {"x": leaf_l}), name, f"on {where}")


BLOCK_SIGNATURE = "(d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6)"
BLOCK_LAYOUT = ("self_attn.w_q and self_attn.w_o (d_model → d_model), self_attn.w_k and self_attn.w_v (d_model → "
                "n_kv_heads · d_head), feed_forward.gate and feed_forward.up (d_model → d_ff), feed_forward.down "
                "(d_ff → d_model) — every nn.Linear with bias=False — and the RMSNorm gains attn_block.norm.weight "
                "and ff_block.norm.weight (d_model,)")
BLOCK_EXTRA = ("The modern block has no biases (bias=False in every nn.Linear; RMSNorm has a gain and no bias), no "
               "position table (RoPE rotates q and k) and no final norm (that belongs to the model). ")


def block_forbidden() -> dict:
    """The package's blocks and the parts the learner rebuilt in exercises 1–3 (and torch's ready-made ones): the
    block must be assembled from the learner's own RMSNorm, RoPE and K/V repetition. F.scaled_dot_product_attention
    may compute softmax(q kᵀ / √d_head) v."""
    from ..attention import MultiHeadAttention
    from ..language_model import DecoderOnlyBlock
    from ..layers import DecoderLayer, EncoderLayer, make_feed_forward

    return {"the package's course_utils.language_model.DecoderOnlyBlock": DecoderOnlyBlock,
            "the package's course_utils.layers.EncoderLayer": EncoderLayer,
            "the package's course_utils.layers.DecoderLayer": DecoderLayer,
            "the package's course_utils.attention.MultiHeadAttention": MultiHeadAttention,
            "the package's course_utils.modern.GroupedQueryAttention": modern.GroupedQueryAttention,
            "the package's course_utils.layers.make_feed_forward": make_feed_forward,
            "the package's course_utils.modern.SwiGLUFeedForward": modern.SwiGLUFeedForward,
            **RMS_FORBIDDEN, **ROPE_FORBIDDEN, **REPEAT_FORBIDDEN,
            "torch.nn.MultiheadAttention": nn.MultiheadAttention,
            "torch.nn.TransformerEncoderLayer": nn.TransformerEncoderLayer,
            "torch.nn.TransformerDecoderLayer": nn.TransformerDecoderLayer}


def package_block(d_model: int, n_heads: int, n_kv_heads: int, d_ff: int, rope_base: float, eps: float,
                  seed: int) -> nn.Module:
    """Lesson 08's block with lesson 09's switches — RoPE, RMSNorm, SwiGLU, grouped-query attention, no bias, no
    dropout — seeded, its RMSNorm gains randomised (so a missing or misplaced norm shows)."""
    from ..language_model import DecoderOnlyBlock

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = DecoderOnlyBlock(d_model, n_heads, d_ff, 0.0, activation="swiglu", norm="pre", bias=False,
                                 normalization="rmsnorm", n_kv_heads=n_kv_heads, rope_base=rope_base, norm_eps=eps)
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for norm in (block.attn_block.norm, block.ff_block.norm):
            norm.weight.copy_(1 + 0.5 * torch.randn(norm.weight.shape, generator=generator))
    return block.eval()


def block_cases(draw: Draw):
    """From the smallest input to the largest: one token, multi-head (as many K/V heads as query heads), no mask,
    the defaults; batch 1, multi-query (one K/V head), an odd length, a causal mask, rope_base and eps given;
    grouped-query with a causal mask AND padding in some rows only, another rope_base; a longer odd sequence
    without a mask (every position sees every other), another group size, eps given. All but the first hold a
    tiny token (where eps matters); d_head ≥ 4 there, so that rope_base shows."""

    cases = []
    used: set[int] = set()

    def sizes(kind: str, avoid: tuple[int, ...]):
        for attempt in range(400):  # a d_model of its own when one is found, so no typed-in size passes twice
            n_heads = draw.choice((2, 3, 4, 6)) if kind != "gqa" else draw.choice((4, 6, 8))
            kv = {"mha": n_heads, "mqa": 1}.get(kind) or draw.choice([d for d in range(2, n_heads) if n_heads % d == 0])
            d_head = draw.choice((2, 4, 6, 8) if kind == "mha" else (4, 6, 8))  # ≥ 2 pairs: rope_base shows
            d_model = n_heads * d_head
            d_ff = draw.choice([n for n in range(d_model // 2 + 1, 3 * d_model)
                                if n not in (n_heads, kv, d_head, d_model) + avoid])
            distinct = {n_heads, d_head, d_model, d_ff} | ({kv} if kind == "gqa" else set())
            if len(distinct) == (5 if kind == "gqa" else 4) and not {n_heads, d_head, d_model} & set(avoid) \
                    and (d_model not in used or attempt > 200):
                used.add(d_model)
                return n_heads, kv, d_head, d_model, d_ff
        raise AssertionError("no sizes found")  # pragma: no cover - the ranges hold plenty

    def tokens(batch: int, seq: int, d_model: int, tiny: bool) -> torch.Tensor:
        x = draw.randn(batch, seq, d_model, scale=1.5) + draw.randn(batch, seq, 1)
        if tiny:
            x[-1, draw.integer(0, seq - 1)] = draw.randn(d_model, scale=1e-3)
        return x

    def label(batch, seq, n_heads, kv, d_head, d_model, d_ff, extra):
        kind = ("multi-head" if kv == n_heads else "multi-query" if kv == 1 else "grouped-query")
        return (f"batch {batch}, seq {seq}, d_model {d_model}, {n_heads} heads of d_head {d_head}, {kv} K/V "
                f"head{'s' if kv > 1 else ''} ({kind}), d_ff {d_ff}, {extra}")

    def add(batch, seq, kind, mask_kind, options, tiny=False):
        n_heads, kv, d_head, d_model, d_ff = sizes(kind, (batch, seq))
        x = tokens(batch, seq, d_model, tiny)
        mask, masks = None, "no mask (every position sees every other)"
        if mask_kind in ("causal", "causal+padding"):
            mask = torch.ones(seq, seq, dtype=torch.bool).tril()[None, None]
            masks = f"a causal mask {tuple(mask.shape)}"
        if mask_kind == "causal+padding":
            lengths = [seq] + [draw.integer(2, seq - 1) for _ in range(batch - 1)]
            draw.rng.shuffle(lengths)
            padding = (torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]
            mask = mask & padding
            rows = [str(r) for r, n in enumerate(lengths) if n < seq]
            masks = (f"a causal AND padding mask {tuple(mask.shape)} (padding in row{'s' if len(rows) > 1 else ''} "
                     f"{', '.join(rows)} only)")
        given = ", ".join(f"{k}={v}" for k, v in options.items()) or "rope_base and eps left at their defaults"
        extra = f"{masks}, {given}" + (", one token tiny (RMS ~1e-3, where eps matters)" if tiny else "")
        description = label(batch, seq, n_heads, kv, d_head, d_model, d_ff, extra)
        cases.append((BlockCase(description, d_model, n_heads, d_ff, x, mask), kv, options))

    add(1, 1, "mha", None, {})
    add(1, draw.choice((5, 7)), "mqa", "causal", {"rope_base": draw.choice((100.0, 500.0, 2000.0)),
                                                   "eps": draw.choice((1e-5, 1e-4))}, tiny=True)
    batch = draw.integer(2, 3)
    add(batch, draw.choice((5, 7)), "gqa", "causal+padding", {"rope_base": draw.choice((50.0, 300.0, 1000.0))},
        tiny=True)
    add(draw.integer(2, 3), draw.choice((9, 11)), "gqa", None, {"eps": draw.choice((1e-5, 1e-4)),
                                                               "rope_base": 10000.0}, tiny=True)
    return cases


def rope_rotate(x: torch.Tensor, base: float, layout: str) -> torch.Tensor:
    """``x (batch, heads, seq, d_head)`` rotated by positions 0 .. seq - 1, halves (right) or adjacent pairs."""
    positions = torch.arange(x.size(-2))
    if layout == "pairs":
        return interleaved_rope(x, positions, base)
    return apply_rotary(x, x, positions, base)[0]


def modern_variant(block: nn.Module, x: torch.Tensor, mask, base: float, eps: float, *, rope: str = "halves",
                   rotate_values: bool = False, repeat: str = "interleave", norm: str = "rms", ffn: str = "swiglu",
                   wiring: str = "pre", scale: str = "d_head", use_mask: bool = True) -> torch.Tensor:
    """The package block's weights assembled right or with one typical bug (written out, no package block)."""
    attention = block.self_attn
    n_heads, kv, d_head = attention.n_heads, attention.n_kv_heads, attention.d_head
    batch, seq, d_model = x.shape

    def normalise(h, module):
        gain = module.weight
        if norm == "centred":
            h = h - h.mean(-1, keepdim=True)
        ms = h.pow(2).mean(-1, keepdim=True)
        if norm == "eps outside":
            return h / (ms.sqrt() + eps) * gain
        value = h * torch.rsqrt(ms + (norm if isinstance(norm, float) else eps))
        return value if norm == "no gain" else value * gain

    def attend(h):
        q = attention.w_q(h).view(batch, seq, n_heads, d_head).transpose(1, 2)
        k = attention.w_k(h).view(batch, seq, kv, d_head).transpose(1, 2)
        v = attention.w_v(h).view(batch, seq, kv, d_head).transpose(1, 2)
        if rope != "none":
            q = rope_rotate(q, base, rope if rope in ("halves", "pairs") else "halves") if rope != "k only" else q
            k = rope_rotate(k, base, rope if rope in ("halves", "pairs") else "halves") if rope != "q only" else k
        if rotate_values:
            v = rope_rotate(v, base, "halves")
        groups = n_heads // kv
        if repeat == "tile":
            k, v = k.repeat(1, groups, 1, 1), v.repeat(1, groups, 1, 1)
        else:
            k, v = repeat_kv(k, groups), repeat_kv(v, groups)
        factor = {"d_head": d_head ** -0.5, "d_model": d_model ** -0.5, "none": 1.0}[scale]
        scores = (q @ k.transpose(-2, -1)) * factor
        if mask is not None and use_mask:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        out = torch.softmax(scores, dim=-1) @ v
        return attention.w_o(out.transpose(1, 2).reshape(batch, seq, d_model))

    def feed_forward(h):
        f = block.feed_forward
        gate, up = f.gate(h), f.up(h)
        hidden = {"swiglu": lambda: F.silu(gate) * up, "swapped": lambda: F.silu(up) * gate,
                  "gelu": lambda: F.gelu(gate) * up, "relu": lambda: F.relu(gate) * up,
                  "no gate": lambda: F.silu(up), "silu after": lambda: F.silu(gate * up),
                  "sigmoid": lambda: torch.sigmoid(gate) * up}[ffn]()
        return f.down(hidden)

    for sublayer, module in ((attend, block.attn_block.norm), (feed_forward, block.ff_block.norm)):
        if wiring == "pre":
            x = x + sublayer(normalise(x, module))
        elif wiring == "post":
            x = normalise(x + sublayer(x), module)
        else:
            x = sublayer(normalise(x, module))
    return x


BLOCK_MISTAKES = (
    ({"rotate_values": True}, "the values are rotated too: RoPE rotates the queries and the keys only — positions "
                              "decide where to look, not what is read"),
    ({"rope": "pairs"}, "RoPE pairs adjacent dimensions (0, 1), (2, 3), … here; the package (and exercise 2) pairs "
                        "dimension i with i + d_head/2, the two halves"),
    ({"rope": "none"}, "no position reaches the attention: rotate the queries and the keys with RoPE, positions "
                       "0 .. seq - 1"),
    ({"rope": "q only"}, "only the queries are rotated: rotate the keys too (with the same positions), so the "
                         "score depends on m − n"),
    ({"rope": "k only"}, "only the keys are rotated: rotate the queries too (with the same positions), so the "
                         "score depends on m − n"),
    ({"repeat": "tile"}, "the K/V heads are tiled (0, 1, 0, 1, …): query head h must read K/V head h // (n_heads "
                         "// n_kv_heads) — repeat each K/V head in a row (your repeat_kv_heads)"),
    ({"norm": "centred"}, "the norm subtracts the mean: that is LayerNorm; RMSNorm only divides by the root mean "
                          "square"),
    ({"norm": "eps outside"}, "eps is added outside the square root: RMSNorm is x / sqrt(mean(x²) + eps) · g"),
    ({"norm": "no gain"}, "the RMSNorm gain is missing: multiply by the norm's weight"),
    ({"ffn": "swapped"}, "SiLU is applied to `up` instead of `gate`: down(silu(gate(x)) · up(x))"),
    ({"ffn": "gelu"}, "the gate uses GELU; SwiGLU's gate is SiLU (x · sigmoid(x)): down(silu(gate(x)) · up(x))"),
    ({"ffn": "relu"}, "the gate uses ReLU; SwiGLU's gate is SiLU: down(silu(gate(x)) · up(x))"),
    ({"ffn": "sigmoid"}, "the gate is a sigmoid (that is GLU); SwiGLU uses SiLU, x · sigmoid(x)"),
    ({"ffn": "no gate"}, "the gate is missing: SwiGLU multiplies silu(gate(x)) by up(x) before down"),
    ({"ffn": "silu after"}, "SiLU is applied after the product: down(silu(gate(x)) · up(x))"),
    ({"wiring": "post"}, "the block is wired Post-norm, norm(x + sublayer(x)); the modern block is Pre-norm: "
                         "x + sublayer(norm(x))"),
    ({"wiring": "none"}, "the residual connection is missing: x + sublayer(norm(x))"),
    ({"scale": "d_model"}, "the scores are scaled by 1/√d_model; scale by 1/√d_head (each head's size)"),
    ({"scale": "none"}, "the scores are not scaled: divide q·kᵀ by √d_head"),
    ({"use_mask": False}, "the mask is ignored: pass it to the attention scores (True = may attend)"),
)


def diagnose_block(block: nn.Module, case, base: float, eps: float, got: torch.Tensor) -> str | None:
    """The typical mistake whose output the learner's block reproduces on ``case`` (mistakes that change nothing
    on this input — tiling one K/V head, say — are skipped)."""
    with torch.no_grad():
        right = modern_variant(block, case.x, case.mask, base, eps)

        def matches(wrong: torch.Tensor) -> bool:
            return not close(wrong, right, atol=1e-6, rtol=1e-6) and close(got, wrong, atol=1e-5, rtol=1e-4)
        for knobs, message in BLOCK_MISTAKES:
            if matches(modern_variant(block, case.x, case.mask, base, eps, **knobs)):
                return message
        for other in (1e-6, 1e-5, torch.finfo(torch.float32).eps, 1e-8, 0.0):
            if other != eps and matches(modern_variant(block, case.x, case.mask, base, eps, norm=float(other))):
                return (f"the RMSNorm used eps={other:g} where the block was built with eps={eps:g}: pass eps on to "
                        "both norms (inside the square root)")
        if base != 10000.0 and matches(modern_variant(block, case.x, case.mask, 10000.0, eps)):
            return (f"RoPE used base 10000 where the block was built with rope_base={base}: pass rope_base on to "
                    "the rotation")
        if case.mask is not None and bool(case.mask.all(dim=1, keepdim=True).logical_not().any()):
            causal = torch.ones(case.x.size(1), case.x.size(1), dtype=torch.bool).tril()[None, None]
            if matches(modern_variant(block, case.x, causal, base, eps)):
                return ("the padding part of the mask is ignored (a causal mask of your own, or is_causal=True): "
                        "use the mask you are given")
        if case.mask is None and case.x.size(1) > 1:
            causal = torch.ones(case.x.size(1), case.x.size(1), dtype=torch.bool).tril()[None, None]
            if matches(modern_variant(block, case.x, causal, base, eps)):
                return ("with mask=None every position sees every other; yours is causal anyway (a mask of your "
                        "own, or is_causal=True): apply only the mask you are given")
    return None


def check_modern_block(ns) -> None:
    learner_class = own_module_class(ns["ModernBlock"], "ModernBlock",
                                     "course_utils.language_model.DecoderOnlyBlock")
    draw = Draw()
    forbidden = block_forbidden()
    for case, kv, options in block_cases(draw):
        base, eps = options.get("rope_base", 10000.0), options.get("eps", EPS)
        package = package_block(case.d_model, case.n_heads, kv, case.d_ff, base, eps, draw.integer(0, 2 ** 30))
        sizes = (case.d_model, case.n_heads, kv, case.d_ff)
        with torch.random.fork_rng(devices=[]):
            learner = call_learner(instantiate, "ModernBlock", case.description, learner_class, "ModernBlock",
                                   BLOCK_SIGNATURE, *sizes, forbidden=forbidden, **options)
        if not isinstance(learner, nn.Module):
            raise ExerciseFailure(f"`ModernBlock(...)` should build an nn.Module, got {type(learner).__name__}.")
        copy_weights(package, learner, "ModernBlock", BLOCK_LAYOUT, BLOCK_EXTRA)
        learner.eval()
        compare_blocks(package, learner, "ModernBlock", case,
                       lambda got, package=package, case=case, base=base, eps=eps:
                       diagnose_block(package, case, base, eps, got), forbidden)
        check_same_in_both_modes(lambda block, case=case: block(case.x.clone(), snapshot(case.mask)), learner,
                                 "ModernBlock", case.description)  # no dropout here: train and eval agree


q5 = Exercise(
    name="Capstone: the modern block",
    variables=("ModernBlock",),
    checker=check_modern_block,
    hints=("Lesson 08's Pre-norm block with four parts swapped: RMSNorm for LayerNorm, RoPE on the queries and keys "
           "instead of a position table, SwiGLU for the ReLU network, and fewer K/V heads shared by groups of query "
           "heads. Your exercises 1–3 are the tools. Stuck? `from course_utils.language_model import "
           "DecoderOnlyBlock` (with activation='swiglu', normalization='rmsnorm', n_kv_heads, rope_base, bias=False) "
           "and move on.",
           "RMSNorm module: a gain of ones, forward = your rms_norm with the block's eps. SwiGLU: three bias-free "
           "linears gate, up (d_model → d_ff) and down (d_ff → d_model); down of silu(gate) times up. Attention: "
           "bias-free w_q and w_o (d_model → d_model), w_k and w_v (d_model → n_kv_heads · d_head); split q into "
           "n_heads heads and k, v into n_kv_heads; rotate q and k (not v) with your apply_rope at positions "
           "0 … seq − 1 and rope_base; repeat each K/V head n_heads // n_kv_heads times in a row; scores over "
           "√d_head; the mask (True = may attend) before the softmax; weights times v; merge the heads; w_o. "
           "Block: x plus attention of norm(x), then x plus SwiGLU of norm(x), each sublayer with its own RMSNorm, "
           "named attn_block.norm and ff_block.norm."),
    solution=solution_of("lesson09", "rms_norm", "apply_rope", "repeat_kv_heads", "RMSNormLayer", "SwiGLU",
                         "GroupedQueryAttention", "PreNorm", "ModernBlock"),
    success="Correct! Your block computes what lesson 08's block computes with lesson 09's switches on — the same "
            "outputs and gradients for multi-head, grouped-query and multi-query attention, with and without masks, "
            "eps and rope_base as given.",
    task=(
        "**Capstone — the modern block.** Assemble the Llama-style block from your exercises 1–3: "
        "`ModernBlock(d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6)` with `forward(x, "
        "mask=None)`: `x (batch, seq, d_model)` → same shape. Two Pre-norm sublayers, $x \\leftarrow x + "
        "\\text{sublayer}(\\text{RMSNorm}(x))$, each with its own RMSNorm (a gain, no bias; `eps` inside the "
        "square root):\n\n"
        "1. grouped-query self-attention: bias-free projections `w_q`, `w_o` (d_model → d_model) and `w_k`, `w_v` "
        "(d_model → n_kv_heads · d_head, d_head = d_model / n_heads); queries and keys — not values — rotated by "
        "RoPE at positions 0 … seq − 1 with `rope_base` (your `apply_rope`, the halves layout); each K/V head "
        "shared by n_heads / n_kv_heads query heads in a row (your `repeat_kv_heads`); $\\text{softmax}(q k^\\top "
        "/ \\sqrt{d_\\text{head}})\\,v$ where `mask` (4-D bool, True = may attend; `None` = every position sees "
        "every other) allows;\n"
        "2. SwiGLU: $W_\\text{down}\\big(\\text{silu}(W_\\text{gate} x) \\odot W_\\text{up} x\\big)$, bias-free, "
        "hidden size `d_ff`.\n\n"
        "No dropout, no bias anywhere. The attribute names are the package's: `self_attn.w_q`, `self_attn.w_k`, "
        "`self_attn.w_v`, `self_attn.w_o`, `feed_forward.gate`, `feed_forward.up`, `feed_forward.down`, "
        "`attn_block.norm.weight`, `ff_block.norm.weight`. Write it with your own `rms_norm`, `apply_rope` and "
        "`repeat_kv_heads` (exercises 1–3; run those cells first): the package's `DecoderOnlyBlock`, "
        "`EncoderLayer`, `MultiHeadAttention`, `RMSNorm`, `SwiGLUFeedForward`, `apply_rotary` and `repeat_kv`, "
        "and torch's `nn.RMSNorm`, `F.rms_norm`, `nn.MultiheadAttention`, are not accepted, however they are "
        "reached. For the attention core, $\\text{softmax}(qk^\\top/\\sqrt{d_\\text{head}})v$, writing it out and "
        "`F.scaled_dot_product_attention` (even with `enable_gqa=True`) are both fine.\n\n"
        "How it is checked: every check draws four configurations with fresh sizes (heads, d_head, d_ff, batch "
        "and length, no two alike) and tries, from the smallest to the largest: one token with as many K/V heads "
        "as query heads and no mask, the defaults; batch 1, one K/V head (multi-query), an odd length, a causal "
        "mask, `rope_base` and `eps` given; grouped-query attention with a causal AND padding mask (padding in "
        "some rows only) and another `rope_base`; a longer odd sequence without a mask, another group size, `eps` "
        "given — each but the first with a tiny token (RMS ~1e-3), where eps matters. For each, "
        "`course_utils.language_model.DecoderOnlyBlock` is built with lesson 09's switches "
        "(`activation=\"swiglu\"`, `normalization=\"rmsnorm\"`, `n_kv_heads`, `rope_base`, `norm_eps`, "
        "`bias=False`, Pre-norm, no dropout; RMSNorm gains randomised), its parameters are copied into yours, and "
        "outputs and gradients (of `x` and of every parameter) must agree; `x` and `mask` must come back "
        "unchanged. `q5.hint()` and `q5.solution()` help; stuck? "
        "`from course_utils.language_model import DecoderOnlyBlock` and move on."
    ),
    starter=(
        "import math\n"
        "\n"
        "import torch\n"
        "import torch.nn as nn\n"
        "import torch.nn.functional as F\n"
        "\n"
        "# uses your rms_norm, apply_rope and repeat_kv_heads from exercises 1-3 (run those cells first)\n"
        "\n"
        "\n"
        "class RMSNormLayer(nn.Module):\n"
        "    def __init__(self, d_model, eps=1e-6):\n"
        "        super().__init__()\n"
        "        raise NotImplementedError  # a gain `weight` of d_model ones; keep eps\n"
        "\n"
        "    def forward(self, x):\n"
        "        raise NotImplementedError  # your rms_norm\n"
        "\n"
        "\n"
        "class SwiGLU(nn.Module):\n"
        "    def __init__(self, d_model, d_ff):\n"
        "        super().__init__()\n"
        "        raise NotImplementedError  # gate, up: d_model -> d_ff; down: d_ff -> d_model; no biases\n"
        "\n"
        "    def forward(self, x):\n"
        "        raise NotImplementedError  # down(silu(gate(x)) * up(x))\n"
        "\n"
        "\n"
        "class GroupedQueryAttention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, n_kv_heads, rope_base=10000.0):\n"
        "        super().__init__()\n"
        "        raise NotImplementedError  # w_q, w_o: d_model -> d_model; w_k, w_v: d_model -> n_kv_heads * d_head\n"
        "\n"
        "    def forward(self, x, mask=None):\n"
        "        # heads; RoPE on q and k; repeat the K/V heads; softmax(q k^T / sqrt(d_head)) v; merge; w_o\n"
        "        raise NotImplementedError\n"
        "\n"
        "\n"
        "class ModernBlock(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):\n"
        "        super().__init__()\n"
        "        # self_attn, feed_forward, and attn_block.norm / ff_block.norm (one RMSNorm each)\n"
        "        raise NotImplementedError\n"
        "\n"
        "    def forward(self, x, mask=None):\n"
        "        raise NotImplementedError  # x + attention(norm(x)), then x + swiglu(norm(x))\n"
    ),
)
