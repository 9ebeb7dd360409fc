"""Exercises of notebook 03 (attention): scaled weights, masking without NaN, splitting and merging heads, and the
capstone — a whole ``MultiHeadAttention``.

Every check draws fresh random sizes (no two equal, so a swapped axis always shows) plus fixed edge cases (batch 1,
a single token, seq == d_head, a query that may see nothing, value ≠ key) and compares the learner's answer with the
package's (:mod:`course_utils.attention`), which is the reference.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..attention import MultiHeadAttention as PackageAttention
from ..attention import scaled_dot_product_attention
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
    snapshot,
)
from .core import Exercise, ExerciseFailure, solution_of

PACKAGE_SDPA = "the package's course_utils.attention.scaled_dot_product_attention"
PACKAGE_MHA = "the package's course_utils.attention.MultiHeadAttention"
# q1-q4 ask for one step of attention written by hand: the package's versions of it are not the answer.
OWN_STEPS = {PACKAGE_SDPA: scaled_dot_product_attention, PACKAGE_MHA: PackageAttention}


# ---------------------------------------------------------------------------------------------------------------
# Shared by the checkers: example tensors (the notebook's tests use them), the reference, messages
# ---------------------------------------------------------------------------------------------------------------

def example_query_key(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """query ``(2, 5, 16)`` and key ``(2, 7, 16)``: different lengths, so a missing transpose shows."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(2, 5, 16, generator=generator) * 2, torch.randn(2, 7, 16, generator=generator) * 2


def example_mask() -> torch.Tensor:
    """``(2, 5, 7)``: sequence 0 has 2 padded keys; sequence 1 is causal-like with query row 0 fully blocked."""
    mask = torch.ones(2, 5, 7, dtype=torch.bool)
    mask[0, :, 5:] = False
    mask[1] = torch.ones(5, 7, dtype=torch.bool).tril(diagonal=0)
    mask[1, 0] = False  # a query that may see nothing (e.g. a padding query under a combined mask)
    return mask


def example_padding_mask() -> torch.Tensor:
    """``(2, 1, 7)``: a padding mask that broadcasts over the queries (sequence 1 has 3 padded keys)."""
    return torch.tensor([[True] * 7, [True] * 4 + [False] * 3])[:, None, :]


def reference_weights(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The package's attention weights for ``(batch, len, d_k)`` inputs (the reference answer of q1 and q2).

    The package works on ``(batch, heads, len, d_k)`` with 4-D masks, so the exercise's tensors get a heads axis of 1.
    """
    heads_mask = None if mask is None else mask[:, None]
    return scaled_dot_product_attention(query[:, None], key[:, None], key[:, None], heads_mask)[1][:, 0]


def squeezed(got: Any, expected_shape: tuple[int, ...]) -> bool:
    """Whether ``got`` has ``expected_shape`` with its size-1 axes dropped (a ``.squeeze()`` on batch 1)."""
    shape = tuple(getattr(got, "shape", ()))
    return (isinstance(got, torch.Tensor) and 1 in expected_shape and shape != tuple(expected_shape)
            and shape == tuple(n for n in expected_shape if n != 1))


SQUEEZE_HINT = (".squeeze() dropped an axis of size 1 (batch 1, or a single token): squeeze nothing, or name the "
                "axis — every axis of the result is needed, whatever its size")


def permuted(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Whether ``got`` holds ``expected`` with its axes in another order."""
    return got.dim() == expected.dim() and got.dtype == expected.dtype and any(
        tuple(got.shape) == tuple(expected.permute(order).shape) and torch.equal(got.detach(), expected.permute(order))
        for order in itertools.permutations(range(expected.dim())))


def fixed_sizes_hint(error: BaseException) -> str | None:
    """Explains a view/reshape to sizes that fit only the example the code was written on, or mixed dtypes."""
    message = str(error)
    if "is invalid for input of size" in message:
        return ("The sizes in a view/reshape must come from the input (x.shape, n_heads, d_model), not fixed numbers "
                "— they change from one call to the next.")
    if "scalar type" in message or ("dtype" in message and "same" in message):
        return ("Keep every tensor in the dtype of the inputs (float32 here): no .double(), .float() or float64 "
                "constants.")
    return None


def fitted_divisor(weights: torch.Tensor, scores: torch.Tensor, allowed: torch.Tensor) -> float | None:
    """The ``c`` for which ``weights ≈ softmax(scores / c)`` over the ``allowed`` entries (least squares on the
    log-weights, row by row), or ``None`` when the weights are no softmax of the scores at all."""
    w, s = weights.detach().double(), scores.detach().double()
    use = allowed & (w > 1e-30) & torch.isfinite(w)
    if torch.isnan(w).any() or use.sum() < 3:
        return None
    count = use.sum(-1, keepdim=True).clamp(min=1)
    log_w = torch.where(use, w.clamp(min=1e-300).log(), torch.zeros_like(w))
    log_w = torch.where(use, log_w - log_w.sum(-1, keepdim=True) / count, torch.zeros_like(w))
    s = torch.where(use, s, torch.zeros_like(s))
    s = torch.where(use, s - s.sum(-1, keepdim=True) / count, torch.zeros_like(s))
    product = float((s * log_w).sum())
    return float((s * s).sum()) / product if product > 1e-12 else None


def sizes_of_one(**sizes: int) -> str:
    """A note for a "scale missing" diagnosis on an input where some sizes are 1 (dividing by their root changes
    nothing there): the learner may have divided by one of those."""
    ones = [f"√{name}" for name, size in sizes.items() if size == 1]
    if not ones:
        return ""
    return (f" (if you did divide: here {' and '.join(ones)} = 1, so dividing by {' or '.join(ones)} does nothing — "
            "the scale depends on the length of the vectors in each dot product, nothing else)")


def divisor_message(divisor: float, size: int, size_name: str, how: str) -> str:
    return (f"your scores are divided by {divisor:.4g}, but here {size_name} = {size}, so the divisor is "
            f"√{size_name} = {math.sqrt(size):.4g}: compute it from the input ({how}), not a fixed number")


# ---------------------------------------------------------------------------------------------------------------
# q1: scaled dot-product weights
# ---------------------------------------------------------------------------------------------------------------

AVOID_D_K = (1, 4, 8, 16, 64)  # sizes that a hard-coded scale (√16 = 4, d_model 8 or 64 of the notebook) fits
# Sizes of the notebook's and the old checker's examples: the first case of each check avoids them all, so that an
# answer with one of them hard-coded fails at once, and a size-named diagnosis cannot confuse it with a real size.
EXAMPLE_SIZES = (4, 6, 8, 16, 24, 64)


def query_key_case(draw: Draw, what: str, batch: int, q_len: int, k_len: int, d_k: int,
                   dtype: torch.dtype = torch.float32, mask: torch.Tensor | None = None) -> Case:
    query = draw.randn(batch, q_len, d_k, scale=1.5).to(dtype)
    key = draw.randn(batch, k_len, d_k, scale=1.5).to(dtype)
    sizes = f"batch {batch}, q_len {q_len}, k_len {k_len}, d_k {d_k}"
    args = (query, key) if mask is None else (query, key, mask)
    masked = "" if mask is None else f", mask {tuple(mask.shape)}"
    return Case(f"{what}{sizes}{masked}" + ("" if dtype == torch.float32 else f" ({dtype} inputs)"), args)


def weight_sizes(draw: Draw, first: bool = False) -> tuple[int, int, int, int]:
    """``(batch, q_len, k_len, d_k)``, no two equal; d_k is none of the sizes a hard-coded scale fits; the
    ``first`` case of a check uses none of the examples' sizes at all."""
    avoid = EXAMPLE_SIZES if first else ()
    d_k = draw.choice([n for n in range(5, 24) if n not in AVOID_D_K + avoid])
    batch, q_len, k_len = draw.distinct(3, 2, 9, avoid=(d_k,) + avoid)
    return batch, q_len, k_len, d_k


def weight_cases(draw: Draw) -> list[Case]:
    """Random sizes first (none of them 1, so a diagnosis cannot mistake one size for another), then the edge
    cases batch 1 and a single query, more random sizes, float64 inputs."""
    cases = [query_key_case(draw, "", *weight_sizes(draw, first=True))]
    _, q_len, k_len, d_k = weight_sizes(draw)
    cases.append(query_key_case(draw, "batch 1: ", 1, q_len, k_len, d_k))
    batch, _, k_len, d_k = weight_sizes(draw)
    cases.append(query_key_case(draw, "a single query: ", batch, 1, k_len, d_k))
    cases.append(query_key_case(draw, "", *weight_sizes(draw)))
    cases.append(query_key_case(draw, "", *weight_sizes(draw), dtype=torch.float64))
    return cases


def matmul_hint(error: BaseException) -> str | None:
    message = str(error)
    if any(phrase in message for phrase in ("cannot be multiplied", "Expected size", "mat1 and mat2",
                                            "must match the size")):
        return ("The matrix shapes do not fit: query is (batch, q_len, d_k) and key is (batch, k_len, d_k), so "
                "multiply by key.transpose(-2, -1), not by key.")
    return fixed_sizes_hint(error)


def weights_shape_message(got: Any, expected: torch.Tensor) -> str | None:
    """What a wrong shape of (batch, q_len, k_len) weights means, or ``None`` if the shape is right."""
    if not isinstance(got, torch.Tensor) or got.shape == expected.shape:
        return None
    batch, q_len, k_len = expected.shape
    if squeezed(got, tuple(expected.shape)):
        return f"the weights should have shape (batch, q_len, k_len) = {tuple(expected.shape)}: {SQUEEZE_HINT}"
    if tuple(got.shape) == (batch, k_len, q_len):
        return (f"the weights should have shape (batch, q_len, k_len) = {tuple(expected.shape)}, got "
                f"{tuple(got.shape)} = (batch, k_len, q_len): one row per query, so multiply query @ "
                "key.transpose(-2, -1), not key @ queryᵀ")
    return (f"the weights should have shape (batch, q_len, k_len) = {tuple(expected.shape)}, got "
            f"{tuple(got.shape)}")


def diagnose_weights(case: Case, got: Any) -> str | None:
    """The known mistake behind wrong weights on ``case`` (q1), or ``None`` (then the plain difference is shown)."""
    query, key = case.args[:2]
    expected = reference_weights(query, key)
    shape = weights_shape_message(got, expected)
    if shape or not isinstance(got, torch.Tensor) or got.dtype != expected.dtype:
        return shape
    got = got.detach()
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1)
    if close(got, scores.softmax(dim=-1)):
        return ("the √d_k scale is missing: divide the scores by math.sqrt(d_k) before the softmax (d_k = "
                "query.size(-1)). Without it the softmax saturates as d_k grows"
                + sizes_of_one(batch=query.size(0), q_len=query.size(-2), k_len=key.size(-2)))
    if close(got, (scores / d_k).softmax(dim=-1)):
        return "you divided by d_k; divide by its square root, math.sqrt(d_k)"
    if close(got, (scores / math.sqrt(d_k)).softmax(dim=-2)):
        return ("softmax over the wrong axis: each *query row* must sum to 1 over the keys, so use softmax(dim=-1). "
                "Your columns sum to 1 instead")
    for size, what in ((key.size(-2), "√k_len (the number of keys)"), (query.size(-2), "√q_len (the number of "
                       "queries)"), (query.size(0), "√batch")):
        if close(got, (scores / math.sqrt(size)).softmax(dim=-1)):
            return (f"you scaled by {what}; the scale is √d_k, the length of the vectors in each dot product: "
                    "math.sqrt(query.size(-1))")
    if close(got, scores / math.sqrt(d_k)):
        return "these are the scaled scores; turn them into weights with torch.softmax(…, dim=-1)"
    divisor = fitted_divisor(got, scores, torch.ones_like(got, dtype=torch.bool))
    if divisor and close(got, (scores / divisor).softmax(dim=-1)):
        return divisor_message(divisor, d_k, "d_k", "math.sqrt(query.size(-1))")
    row_sums = got.sum(dim=-1)
    if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-4):
        return (f"each query's weights should sum to 1, yours sum to {row_sums.flatten()[0].item():.4g} …: softmax "
                "over the keys (dim=-1)")
    return (f"the weights differ from softmax(Q Kᵀ / √d_k) by up to {max_difference(got, expected):.3g}: scores = "
            "query @ key.transpose(-2, -1), divided by math.sqrt(d_k), softmax over dim=-1")


def check_attention_weights(ns) -> None:
    check_function(ns["attention_weights"], reference_weights, weight_cases(Draw()), "attention_weights",
                   forbidden=OWN_STEPS, diagnose=diagnose_weights, error_hint=matmul_hint)


# ---------------------------------------------------------------------------------------------------------------
# q2: masking without NaN
# ---------------------------------------------------------------------------------------------------------------

def padding_rows(draw: Draw, batch: int, length: int, left: bool = False) -> torch.Tensor:
    """``(batch, length)`` bool, True = a real token: row 0 has no padding, the others 1 … length-1 real tokens
    (so some rows are padded and some are not, each by its own amount); ``left`` pads at the start."""
    real = [length] + [draw.integer(1, length - 1) for _ in range(batch - 1)]
    positions = torch.arange(length)
    rows = [(positions >= length - n) if left else (positions < n) for n in real]
    return torch.stack(rows)


def causal_like(q_len: int, k_len: int) -> torch.Tensor:
    """``(q_len, k_len)``: query i may see the keys up to its own position, the last query sees every key."""
    return torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal=k_len - q_len)


def masked_cases(draw: Draw) -> list[Case]:
    """Random sizes with padding first, then the edge cases; the masks take every shape the task allows:
    (batch | 1, q_len | 1, k_len)."""
    batch, q_len, k_len, d_k = weight_sizes(draw, first=True)
    cases = [query_key_case(draw, "padding in some rows only: ", batch, q_len, k_len, d_k,
                            mask=padding_rows(draw, batch, k_len)[:, None, :])]
    _, q_len, k_len, d_k = weight_sizes(draw)
    cases.append(query_key_case(draw, "batch 1, padding mask: ", 1, q_len, k_len, d_k,
                                mask=padding_rows(draw, 2, k_len)[1:, None, :]))
    batch, _, k_len, d_k = weight_sizes(draw)
    cases.append(query_key_case(draw, "a single query, padding in some rows only: ", batch, 1, k_len, d_k,
                                mask=padding_rows(draw, batch, k_len)[:, None, :]))
    batch, q_len, k_len, d_k = weight_sizes(draw)
    cases.append(query_key_case(draw, "one causal mask for the whole batch: ", batch, q_len, k_len, d_k,
                                mask=causal_like(q_len, k_len)[None]))
    batch, q_len, k_len, d_k = weight_sizes(draw)
    mask = padding_rows(draw, batch, k_len)[:, None, :] & causal_like(q_len, k_len)
    mask[draw.integer(0, batch - 1), draw.integer(0, q_len - 1)] = False
    cases.append(query_key_case(draw, "padding and causal combined, one query may see nothing: ", batch, q_len,
                                k_len, d_k, mask=mask))
    batch, q_len, k_len, d_k = weight_sizes(draw)
    cases.append(query_key_case(draw, "padding in some rows only: ", batch, q_len, k_len, d_k, dtype=torch.float64,
                                mask=padding_rows(draw, batch, k_len)[:, None, :]))
    return cases


def masked_hint(error: BaseException) -> str | None:
    if isinstance(error, IndexError):
        return ("Boolean indexing (scores[~mask] = …) needs a mask of the scores' full shape; use "
                "scores.masked_fill(~mask, torch.finfo(scores.dtype).min), which broadcasts the mask.")
    if "must match the size" in str(error) or "broadcast" in str(error):
        return ("The mask (batch | 1, q_len | 1, k_len) already broadcasts to the scores (batch, q_len, k_len) as it "
                "comes: do not reshape, transpose or unsqueeze it.")
    return matmul_hint(error)


def diagnose_masked(case: Case, got: Any) -> str | None:
    """The known mistake behind wrong masked weights on ``case`` (q2), or ``None``."""
    query, key, mask = case.args
    expected = reference_weights(query, key, mask)
    shape = weights_shape_message(got, expected)
    if shape or not isinstance(got, torch.Tensor) or got.dtype != expected.dtype:
        return shape
    got = got.detach()
    if torch.isnan(got).any():
        return ("your weights contain NaN. A query whose every key is masked has a row of -inf scores and softmax "
                "gives 0/0. Fill with torch.finfo(scores.dtype).min instead of -inf, and set the masked weights to 0 "
                "after the softmax")
    full = mask.expand_as(got)
    blocked_weight = float(got[~full].abs().max()) if (~full).any() else 0.0
    allowed_weight = float(got[full].abs().max()) if full.any() else 0.0
    if blocked_weight > 1e-6 and allowed_weight < 1e-6:
        return ("the mask convention is inverted: in this course True means *may attend*. You blocked the allowed "
                "keys; fill where the mask is False (scores.masked_fill(~mask, …))")
    if close(got, reference_weights(query, key, ~mask)):
        return "the mask convention is inverted: True means *may attend*; use ~mask in masked_fill"
    d_k = query.size(-1)
    raw = query @ key.transpose(-2, -1)
    scores = raw / math.sqrt(d_k)
    if blocked_weight > 1e-6:
        if close(got, scores.masked_fill(~mask, 0.0).softmax(-1)):
            return ("setting a blocked score to 0 does not block it (exp(0) = 1 still gets weight). Fill blocked "
                    "scores with a very negative number: torch.finfo(scores.dtype).min")
        if close(got.masked_fill(~mask, 0.0), expected):
            return ("every key allowed somewhere is right, but the fully masked query row gets non-zero weights (a "
                    "uniform row). After the softmax, zero the masked entries: weights.masked_fill(~mask, 0.0)")
        return (f"blocked keys still get weight (up to {blocked_weight:.3f}); they must get exactly 0: "
                "scores.masked_fill(~mask, torch.finfo(scores.dtype).min) before the softmax")
    if close(got, scores.masked_fill(~mask, 0.0).softmax(-1).masked_fill(~mask, 0.0)):
        return ("setting a blocked score to 0 does not block it (exp(0) = 1 still takes a share of the softmax, so "
                "the allowed weights no longer sum to 1). Fill blocked scores with a very negative number: "
                "torch.finfo(scores.dtype).min")
    if close(got, scores.softmax(-1).masked_fill(~mask, 0.0)):
        return ("you masked after the softmax without renormalising: the remaining weights of a row no longer sum "
                "to 1. Fill the blocked *scores* before the softmax (and zero the blocked weights after it)")
    if close(got, reference_weights(query * math.sqrt(d_k), key, mask)):
        return ("the √d_k scale is missing: divide the scores by math.sqrt(d_k)"
                + sizes_of_one(batch=query.size(0), q_len=query.size(-2), k_len=key.size(-2)))
    divisor = fitted_divisor(got, raw, expected > 0)
    if divisor and close(got, reference_weights(query * (math.sqrt(d_k) / divisor), key, mask)):
        return divisor_message(divisor, d_k, "d_k", "math.sqrt(query.size(-1))")
    return (f"the weights differ from the masked softmax by up to {max_difference(got, expected):.3g}: scale the "
            "scores, fill blocked ones with torch.finfo(scores.dtype).min, softmax over dim=-1, zero the blocked "
            "weights")


def check_masked_weights(ns) -> None:
    check_function(ns["masked_weights"], reference_weights, masked_cases(Draw()), "masked_weights",
                   forbidden=OWN_STEPS, diagnose=diagnose_masked, error_hint=masked_hint)


# ---------------------------------------------------------------------------------------------------------------
# q3, q4: splitting and merging heads
# ---------------------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=64)
def heads_block(d_model: int, n_heads: int, dtype: torch.dtype) -> PackageAttention:
    """The package's block whose split_heads / merge_heads are the reference of q3 and q4."""
    return PackageAttention(d_model, n_heads).to(dtype)


def head_sizes(draw: Draw, batch: int | None = None, seq: int | None = None, same: bool = False,
               first: bool = False) -> dict[str, int]:
    """``batch, seq, n_heads, d_head``, no two equal (unless fixed by the caller; ``same``: seq == d_head); the
    ``first`` case of a check uses none of the examples' sizes."""
    fixed = tuple(n for n in (batch, seq) if n is not None)
    avoid = fixed + (EXAMPLE_SIZES if first else ())
    n_heads, d_head = draw.distinct(2, 2, 7, avoid=avoid)
    rest = draw.distinct(2, 2, 9, avoid=avoid + (n_heads, d_head))
    sizes = {"batch": batch or rest[0], "seq": seq or rest[1], "n_heads": n_heads, "d_head": d_head}
    if same:
        sizes["seq"] = d_head
    return sizes


def describe_heads(sizes: dict[str, int], what: str = "") -> str:
    return (f"{what}batch {sizes['batch']}, seq {sizes['seq']}, {sizes['n_heads']} heads, d_head {sizes['d_head']} "
            f"(d_model {sizes['n_heads'] * sizes['d_head']})")


def hidden(draw: Draw, sizes: dict[str, int], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``(batch, seq, d_model)`` with every entry different, so a value in the wrong place always shows."""
    shape = (sizes["batch"], sizes["seq"], sizes["n_heads"] * sizes["d_head"])
    return (torch.arange(math.prod(shape), dtype=dtype).view(shape) + draw.randn(*shape).to(dtype) * 0.01)


def head_size_list(draw: Draw) -> list[tuple[str, dict[str, int]]]:
    """Smallest first: batch 1, a single token, seq == d_head, one head, then random sizes."""
    one_head = head_sizes(draw)
    one_head["n_heads"] = 1
    return [("batch 1: ", head_sizes(draw, batch=1, first=True)),
            ("a single token: ", head_sizes(draw, seq=1)),
            ("seq == d_head: ", head_sizes(draw, same=True)),
            ("one head: ", one_head),
            ("", head_sizes(draw))]


def split_reference(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    return heads_block(x.size(-1), n_heads, x.dtype).split_heads(x)


def split_cases(draw: Draw) -> list[Case]:
    cases = [Case(describe_heads(sizes, what), (hidden(draw, sizes), sizes["n_heads"]))
             for what, sizes in head_size_list(draw)]
    sizes = head_sizes(draw)
    cases.append(Case(describe_heads(sizes) + " (float64)", (hidden(draw, sizes, torch.float64), sizes["n_heads"])))
    return cases


def diagnose_split(case: Case, got: Any) -> str | None:
    x, n_heads = case.args
    batch, seq, d_model = x.shape
    d_head = d_model // n_heads
    expected = split_reference(x, n_heads)
    if not isinstance(got, torch.Tensor):
        return None
    stopped = x.view(batch, seq, n_heads, d_head)
    known = (
        (stopped, f"you stopped at (batch, seq, heads, d_head) = {tuple(stopped.shape)}: the view is right, now "
                  ".transpose(1, 2) to (batch, heads, seq, d_head), so each head holds a whole sequence and attends "
                  "over it"),
        (stopped.permute(0, 2, 3, 1), f"you swapped the seq and d_head axes: got (batch, heads, d_head, seq) = "
                                      f"{tuple(got.shape)}. View to (batch, seq, heads, d_head), then "
                                      ".transpose(1, 2) only — that gives (batch, heads, seq, d_head)"),
        (x.reshape(batch, n_heads, seq, d_head), "the shape is right but the numbers are scrambled: viewing straight "
                                                 "to (batch, heads, seq, d_head) mixes positions into heads. View to "
                                                 "(batch, seq, heads, d_head) first, then .transpose(1, 2)"),
        (x.view(batch, seq, d_head, n_heads).permute(0, 3, 1, 2), "each head must own a contiguous block of d_head "
                                                                  "features (head 0 = features 0..d_head-1); you "
                                                                  "split them with a stride. View to (batch, seq, "
                                                                  "heads, d_head)"),
    )
    for wrong, message in known:
        if got.shape == wrong.shape and got.dtype == wrong.dtype and torch.equal(got.detach(), wrong):
            return message
    if squeezed(got, tuple(expected.shape)):
        return f"(batch, heads, seq, d_head) should be {tuple(expected.shape)}: {SQUEEZE_HINT}"
    if got.shape != expected.shape:
        return (f"(batch, seq, d_model) = {tuple(x.shape)} with {n_heads} heads should become (batch, heads, seq, "
                f"d_head) = {tuple(expected.shape)}, got {tuple(got.shape)}: "
                + ("the axes are in the wrong order — view to (batch, seq, heads, d_head), then swap axes 1 and 2 "
                   "only" if permuted(got, expected) else
                   "take every size from x.shape and n_heads, not fixed numbers"))
    if got.dtype != expected.dtype:
        return None
    return ("the shape is right but the values are not where they belong: head h at position s should hold "
            "x[:, s, h*d_head:(h+1)*d_head]")


def check_split_heads(ns) -> None:
    check_function(ns["split_heads"], split_reference, split_cases(Draw()), "split_heads", forbidden=OWN_STEPS,
                   diagnose=diagnose_split, error_hint=fixed_sizes_hint)


def merge_reference(x: torch.Tensor) -> torch.Tensor:
    return heads_block(x.size(1) * x.size(-1), x.size(1), x.dtype).merge_heads(x)


def merge_cases(draw: Draw) -> list[Case]:
    """The heads in three memory layouts: contiguous (as ``weights @ v`` returns them), as ``split_heads`` returns
    them (a transposed view), and transposed in the last two axes (another non-contiguous layout)."""
    cases = []
    layouts = ("contiguous", "non-contiguous", "split_heads' view", "non-contiguous", "split_heads' view")
    for (what, sizes), layout in zip(head_size_list(draw), layouts):
        b, s, h, d = sizes["batch"], sizes["seq"], sizes["n_heads"], sizes["d_head"]
        base = hidden(draw, sizes).view(b, s, h, d)
        if layout == "contiguous":
            heads = base.transpose(1, 2).contiguous()
        elif layout == "split_heads' view":
            heads = base.transpose(1, 2)
        else:
            heads = base.permute(0, 2, 3, 1).contiguous().transpose(-2, -1)
        cases.append(Case(describe_heads(sizes, what) + f", {layout} input", (heads,)))
    sizes = head_sizes(draw)
    heads = hidden(draw, sizes, torch.float64).view(sizes["batch"], sizes["seq"], sizes["n_heads"], -1)
    cases.append(Case(describe_heads(sizes) + " (float64)", (heads.transpose(1, 2).contiguous(),)))
    return cases


def merge_hint(error: BaseException) -> str | None:
    message = str(error)
    if "view" in message and ("contiguous" in message or "stride" in message):
        return ("After .transpose the tensor is not contiguous in memory, so .view fails. Call .contiguous() before "
                ".view (or use .reshape).")
    return fixed_sizes_hint(error)


def diagnose_merge(case: Case, got: Any) -> str | None:
    (x,) = case.args
    batch, heads, seq, d_head = x.shape
    expected = merge_reference(x)
    if not isinstance(got, torch.Tensor):
        return None
    if squeezed(got, tuple(expected.shape)):
        return f"(batch, seq, d_model) should be {tuple(expected.shape)}: {SQUEEZE_HINT}"
    if got.shape != expected.shape:
        return (f"(batch, heads, seq, d_head) = {tuple(x.shape)} should become (batch, seq, d_model) = "
                f"{tuple(expected.shape)}, got {tuple(got.shape)}: "
                + ("swap axes 1 and 2 back, then flatten the last two" if got.dim() == 4 else
                   "take every size from x.shape, not fixed numbers"))
    if got.dtype != expected.dtype:
        return None
    if torch.equal(got.detach(), x.reshape(batch, seq, heads * d_head)):
        return ("the shape is right but positions and heads are mixed up: transpose(1, 2) back to (batch, seq, "
                "heads, d_head) before flattening the last two dimensions")
    if torch.equal(got.detach(), x.permute(0, 2, 3, 1).reshape(batch, seq, heads * d_head)):
        return ("each head's d_head features must stay together (head 0 = features 0..d_head-1): move only the heads "
                "axis, transpose(1, 2), then flatten the last two dimensions")
    return ("the shape is right but the values are not where they belong: position s of head h should land at "
            "[:, s, h*d_head:(h+1)*d_head]")


def check_merge_heads(ns) -> None:
    check_function(ns["merge_heads"], merge_reference, merge_cases(Draw()), "merge_heads", forbidden=OWN_STEPS,
                   diagnose=diagnose_merge, error_hint=merge_hint)


q1 = Exercise(
    name="Scaled dot-product weights",
    variables=("attention_weights",),
    checker=check_attention_weights,
    hints=("Every query scores every key with a dot product. Before those scores become a distribution, they are "
           "divided by a number that depends on how long the vectors are — which number, and over which axis does "
           "each query's distribution run?",
           "1. d_k is the length of the vectors: the size of query's last axis (read it from the input, never a "
           "fixed number). 2. Scores: the batched matrix product of query with key whose last two axes are "
           "swapped → (batch, q_len, k_len). 3. Divide them by the square root of d_k. 4. Softmax over the last "
           "axis (the keys), so each query's row sums to 1. Write it yourself: the package's attention is not the "
           "answer here."),
    solution=solution_of("lesson03", "attention_weights"),
)

q2 = Exercise(
    name="Masking without NaN",
    variables=("masked_weights",),
    checker=check_masked_weights,
    hints=("True = may attend. A blocked key must get exactly zero weight; and think about a query whose every key "
           "is blocked: what does softmax do with a row that holds nothing but minus infinity?",
           "1. Scaled scores as in exercise 1. 2. Where the mask is False, replace the score by the most negative "
           "finite number of the scores' dtype (out of place: masked_fill, with the mask inverted; the mask "
           "broadcasts as it comes). 3. Softmax over the keys. 4. Set the weights of the blocked entries to zero "
           "again, so a query that may see nothing gets a row of zeros instead of a uniform row or NaN. Leave the "
           "mask itself unchanged, and write it yourself: the package's attention is refused here."),
    solution=solution_of("lesson03", "masked_weights"),
)

q3 = Exercise(
    name="Split into heads",
    variables=("split_heads",),
    checker=check_split_heads,
    hints=("Head h owns a contiguous block of d_head = d_model / n_heads features. First cut the last axis into "
           "(heads, d_head) without moving any data, then bring the heads axis in front of the positions.",
           "1. Read batch, seq and d_model from x's shape (nothing fixed: the checker tries many sizes, batch 1 "
           "included). 2. View x as (batch, seq, n_heads, d_model // n_heads). 3. Swap axes 1 and 2 → (batch, "
           "heads, seq, d_head). No squeeze, no copy needed — and no help from the package's block, which is refused "
           "here."),
    solution=solution_of("lesson03", "split_heads"),
)

q4 = Exercise(
    name="Merge the heads back",
    variables=("merge_heads",),
    checker=check_merge_heads,
    hints=("The inverse of split_heads, step by step backwards. Mind the memory layout: after swapping axes the "
           "tensor is no longer contiguous, and .view refuses such a tensor.",
           "1. Read batch, heads, seq and d_head from x's shape. 2. Swap axes 1 and 2 back → (batch, seq, heads, "
           "d_head). 3. Make it contiguous (or use reshape, which copies when it must). 4. Flatten the last two "
           "axes into heads × d_head. It must work whatever the input's memory layout (and without the package's "
           "block, which is refused here)."),
    solution=solution_of("lesson03", "merge_heads"),
)


# ---------------------------------------------------------------------------------------------------------------
# q5 (capstone): MultiHeadAttention
# ---------------------------------------------------------------------------------------------------------------

MHA_NAME = "MultiHeadAttention"
MHA_LAYOUT = ("w_q, w_k, w_v, w_o = nn.Linear(d_model, d_model) each (with bias), so the parameters are "
              "w_q.weight (d_model, d_model), w_q.bias (d_model,), and the same for w_k, w_v, w_o")
MHA_SIGNATURE = "(d_model, n_heads, dropout=0.0)"
MHA_FORBIDDEN = {
    PACKAGE_MHA: PackageAttention,
    PACKAGE_SDPA: scaled_dot_product_attention,
    "torch.nn.MultiheadAttention": nn.MultiheadAttention,
    "torch.nn.functional.multi_head_attention_forward": F.multi_head_attention_forward,
    "torch.nn.functional.scaled_dot_product_attention": F.scaled_dot_product_attention,
}


@dataclass
class AttentionCase:
    """One input of the capstone: the block's sizes, query/key/value (one tensor for self-attention), the mask."""

    description: str
    d_model: int
    n_heads: int
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    mask: torch.Tensor | None

    @property
    def self_attention(self) -> bool:
        return self.query is self.key is self.value


def block_sizes(draw: Draw, n_heads: int, avoid: tuple[int, ...] = ()) -> tuple[int, int]:
    """``(d_model, d_head)`` for ``n_heads``: d_head differs from n_heads, and neither it nor d_model is in
    ``avoid``."""
    d_head = draw.choice([n for n in range(2, 8) if n != n_heads and n not in avoid and n * n_heads not in avoid])
    return n_heads * d_head, d_head


def attention_cases(draw: Draw) -> list[AttentionCase]:
    """Random sizes without a mask first (none of them 1, none of the examples', so a diagnosis cannot mistake one
    size for another), then the edge cases, then masks of every shape the task allows. Every case has its own
    d_model and n_heads (the n_heads all differ); cross-attention always gets a value tensor other than the key."""
    heads = draw.distinct(7, 2, 8)
    heads.sort(key=lambda n: n in EXAMPLE_SIZES)  # the first case's n_heads is none of the examples'
    cases = []

    def sizes(n_heads: int, count: int, avoid: tuple[int, ...] = (), high: int = 9) -> tuple[int, int, list[int]]:
        d_model, d_head = block_sizes(draw, n_heads, avoid)
        # d_head ** 2 too: dividing by √(that size) would look like dividing by d_head
        return d_model, d_head, draw.distinct(count, 2, high, avoid=(n_heads, d_head, d_model, d_head ** 2) + avoid)

    def x(*shape: int) -> torch.Tensor:
        return draw.randn(*shape, scale=1.5)

    def add(what: str, d_model: int, n_heads: int, query, key, value, mask) -> None:
        d_head = d_model // n_heads
        kind = "self-attention" if query is key else "cross-attention (value ≠ key)"
        lengths = (f"seq {query.size(1)}" if query is key else f"q_len {query.size(1)}, k_len {key.size(1)}")
        masked = "no mask" if mask is None else f"mask {tuple(mask.shape)}"
        cases.append(AttentionCase(f"{what}{kind}, batch {query.size(0)}, {lengths}, d_model {d_model}, {n_heads} "
                                   f"heads (d_head {d_head}), {masked}", d_model, n_heads, query, key, value, mask))

    # cross-attention, no mask
    n_heads = heads.pop(0)
    d_model, _, (batch, q_len, k_len) = sizes(n_heads, 3, avoid=EXAMPLE_SIZES, high=11)
    add("", d_model, n_heads, x(batch, q_len, d_model), x(batch, k_len, d_model), x(batch, k_len, d_model), None)
    # a single query token, cross-attention, no mask
    d_model, _, (batch, k_len) = sizes(heads[0], 2)
    add("a single query: ", d_model, heads[0], x(batch, 1, d_model), x(batch, k_len, d_model),
        x(batch, k_len, d_model), None)
    # batch 1, self-attention, causal mask
    d_model, _, (seq,) = sizes(heads[1], 1)
    hidden_states = x(1, seq, d_model)
    add("batch 1: ", d_model, heads[1], hidden_states, hidden_states, hidden_states, causal_like(seq, seq)[None, None])
    # seq == d_head, self-attention, padding in some rows and none in others
    d_model, d_head, (batch,) = sizes(heads[2], 1)
    hidden_states = x(batch, d_head, d_model)
    add("seq == d_head: ", d_model, heads[2], hidden_states, hidden_states, hidden_states,
        padding_rows(draw, batch, d_head)[:, None, None, :])
    # cross-attention with a padding mask
    d_model, _, (batch, q_len, k_len) = sizes(heads[3], 3)
    add("", d_model, heads[3], x(batch, q_len, d_model), x(batch, k_len, d_model), x(batch, k_len, d_model),
        padding_rows(draw, batch, k_len)[:, None, None, :])
    # cross-attention, padding and causal combined, one query that may see nothing
    d_model, _, (batch, q_len, k_len) = sizes(heads[4], 3)
    mask = (padding_rows(draw, batch, k_len)[:, None, None, :] & causal_like(q_len, k_len)).clone()
    mask[draw.integer(0, batch - 1), 0, draw.integer(0, q_len - 1)] = False
    add("one query may see nothing: ", d_model, heads[4], x(batch, q_len, d_model), x(batch, k_len, d_model),
        x(batch, k_len, d_model), mask)
    # self-attention, left padding and causal combined: the padded queries may see nothing
    d_model, _, (batch, seq) = sizes(heads[5], 2)
    hidden_states = x(batch, seq, d_model)
    add("left padding + causal, padded queries see nothing: ", d_model, heads[5], hidden_states, hidden_states,
        hidden_states, padding_rows(draw, batch, seq, left=True)[:, None, None, :] & causal_like(seq, seq))
    return cases


def package_attention(draw: Draw, d_model: int, n_heads: int, dropout: float = 0.0) -> PackageAttention:
    """The reference block, its weights drawn from the check's seed."""
    block = PackageAttention(d_model, n_heads, dropout=dropout)
    with torch.no_grad():
        for parameter in block.parameters():
            parameter.copy_(draw.randn(*parameter.shape, scale=1 / math.sqrt(d_model)))
    return block


def attention_mistake(block, query, key, value, mask, *, scale: str | float = "d_head", softmax_dim=-1,
                      heads="split", mask_mode="right", merge="transpose", key_projection="w_k",
                      value_source="value", value_projection="w_v", output_projection=True):
    """A *wrong* multi-head attention with the package block's weights: what a typical bug computes.

    The checker compares the learner's weights and output with these to name the bug; the right answer is the
    package's. ``scale`` may also be the number the scores are divided by.
    """
    batch, q_len, d_model = query.shape
    n_heads = block.n_heads
    d_head = d_model // n_heads

    def split(x):
        if heads == "view":  # straight to (batch, heads, seq, d_head): positions mixed into heads
            return x.reshape(batch, n_heads, x.size(1), d_head)
        if heads == "seq_d_head_swapped":
            return x.reshape(batch, x.size(1), n_heads, d_head).permute(0, 2, 3, 1)
        if heads == "strided":
            return x.reshape(batch, x.size(1), d_head, n_heads).permute(0, 3, 1, 2)
        return x.reshape(batch, x.size(1), n_heads, d_head).transpose(1, 2)

    q = split(block.w_q(query))
    k = split(getattr(block, key_projection)(key))
    v = split(getattr(block, value_projection)({"value": value, "key": key, "query": query}[value_source]))
    divisor = scale if isinstance(scale, float) else {
        "d_head": d_head ** 0.5, "none": 1.0, "d_model": d_model ** 0.5, "d_head_linear": float(d_head),
        "k_len": key.size(1) ** 0.5, "q_len": q_len ** 0.5, "batch": batch ** 0.5, "n_heads": n_heads ** 0.5}[scale]
    scores = q @ k.transpose(-2, -1) / divisor
    allowed = mask
    if mask is not None and mask_mode != "ignored":
        allowed = ~mask if mask_mode == "inverted" else mask
        if mask_mode == "query_axis":
            allowed = mask.transpose(-2, -1)
        fill = 0.0 if mask_mode.startswith("zero_fill") else torch.finfo(scores.dtype).min
        if mask_mode != "after_softmax":
            scores = scores.masked_fill(~allowed, fill)
    weights = scores.softmax(dim=softmax_dim)
    if mask is not None and mask_mode not in ("no_zero_after", "zero_fill_only", "ignored"):
        weights = weights.masked_fill(~allowed, 0.0)
    out = weights @ v
    if merge == "transpose":
        merged = out.transpose(1, 2).reshape(batch, q_len, d_model)
    else:
        merged = out.reshape(batch, q_len, d_model)
    return (block.w_o(merged) if output_projection else merged), weights


ZERO_FILL_HINT = ("setting a blocked score to 0 does not block it (exp(0) = 1 still takes a share of the softmax): "
                  "fill with torch.finfo(scores.dtype).min.")
SPLIT_HINT = "View to (batch, seq, heads, d_head), then .transpose(1, 2)."

WEIGHT_MISTAKES = (
    ({"scale": "none"}, "the √d_head scale is missing: divide the scores by math.sqrt(d_head), d_head = d_model // "
                        "n_heads, before the softmax."),
    ({"scale": "d_model"}, "you scaled by √d_model; each head's dot products run over d_head = d_model // n_heads "
                           "features, so divide by math.sqrt(d_head)."),
    ({"scale": "d_head_linear"}, "you divided by d_head; divide by its square root, math.sqrt(d_head)."),
    ({"scale": "k_len"}, "you scaled by √k_len (the number of keys); the scale is √d_head, the length of the "
                         "vectors in each dot product: math.sqrt(d_model // n_heads)."),
    ({"scale": "q_len"}, "you scaled by √q_len (the number of queries); the scale is √d_head = "
                         "math.sqrt(d_model // n_heads)."),
    ({"scale": "batch"}, "you scaled by √batch; the scale is √d_head = math.sqrt(d_model // n_heads)."),
    ({"scale": "n_heads"}, "you scaled by √n_heads; the scale is √d_head = math.sqrt(d_model // n_heads)."),
    ({"softmax_dim": -2}, "softmax over the wrong axis: each query's weights must sum to 1 over the keys, "
                          "softmax(dim=-1)."),
    ({"heads": "view"}, "the heads are not split right: viewing straight to (batch, heads, seq, d_head) mixes "
                        "positions into heads (a transpose/reshape instead of a split). " + SPLIT_HINT),
    ({"heads": "seq_d_head_swapped"}, "the heads are not split right: your per-head tensors are (batch, heads, "
                                      "d_head, seq) — seq and d_head swapped. " + SPLIT_HINT),
    ({"heads": "strided"}, "the heads are not split right: each head must own a contiguous block of d_head "
                           "features, you split them with a stride. " + SPLIT_HINT),
    ({"mask_mode": "inverted"}, "the mask convention is inverted: True means *may attend*; hide the keys where the "
                                "mask is False: scores.masked_fill(~mask, …)."),
    ({"mask_mode": "query_axis"}, "the mask hides queries instead of keys (broadcast on the wrong axis): a mask is "
                                  "(batch, 1, q_len | 1, k_len), its last axis runs over the keys — use it as it "
                                  "comes, without transposing or re-shaping."),
    ({"mask_mode": "ignored"}, "the mask is not applied: blocked keys still get weight. Fill the blocked scores "
                               "(where the mask is False) with torch.finfo(scores.dtype).min before the softmax, and "
                               "zero those weights after it."),
    ({"mask_mode": "zero_fill"}, ZERO_FILL_HINT),
    ({"mask_mode": "zero_fill_only"}, ZERO_FILL_HINT),
    ({"mask_mode": "after_softmax"}, "you masked after the softmax without renormalising: the remaining weights "
                                     "no longer sum to 1. Fill the blocked *scores* before the softmax."),
    ({"mask_mode": "no_zero_after"}, "a query whose every key is masked gets a uniform row of weights (an average "
                                     "of padding); after the softmax, zero the masked weights: "
                                     "weights.masked_fill(~mask, 0.0)."),
    ({"key_projection": "w_q"}, "the keys are projected with w_q: key = self.w_k(key)."),
    ({"key_projection": "w_v"}, "the keys are projected with w_v: key = self.w_k(key)."),
)
OUTPUT_MISTAKES = (
    ({"value_source": "key"}, "the weights are right but the values are computed from `key`: project the `value` "
                              "argument, v = self.w_v(value). (Self-attention hides this bug, there query = key = "
                              "value; cross-attention does not.)"),
    ({"value_source": "query"}, "the weights are right but the values are computed from `query`: project the "
                                "`value` argument, v = self.w_v(value)."),
    ({"value_projection": "w_k"}, "the weights are right but the values are projected with w_k: v = "
                                  "self.w_v(value)."),
    ({"merge": "no_transpose"}, "the weights are right but merging the heads mixes positions and heads: "
                                "out.transpose(1, 2).contiguous().view(batch, q_len, d_model)."),
    ({"output_projection": False}, "the weights are right but the output projection is missing: return "
                                   "self.w_o(merged heads)."),
)


def attention_error_hint(case: AttentionCase):
    """Explains a crash of the learner's forward typical for the input of ``case``."""
    def hint(error: BaseException) -> str | None:
        message = str(error)
        if "in-place" in message or "inplace" in message:
            return ("Do not change the inputs (query, key, value, mask) in place: build new tensors with "
                    "out-of-place operations.")
        fixed = fixed_sizes_hint(error)
        if fixed:
            return fixed
        if case.mask is not None and isinstance(error, IndexError):
            return ("Boolean indexing (scores[~mask] = …) needs a mask of the scores' full shape; use "
                    "scores.masked_fill(~mask, torch.finfo(scores.dtype).min), which broadcasts the mask.")
        if case.mask is not None:
            return ("The mask is already 4-D and broadcasts to the scores (batch, heads, q_len, k_len) as it is: do "
                    "not unsqueeze or reshape it; use it in scores.masked_fill(~mask, …) and "
                    "weights.masked_fill(~mask, 0.0).")
        if isinstance(error, RuntimeError):
            return ("Check the shapes step by step: q from query, k from key, v from value (here k_len ≠ q_len and "
                    "value ≠ key), each split to (batch, heads, seq, d_head); scores = q @ k.transpose(-2, -1).")
        return None
    return hint


def shape_mismatch(got: torch.Tensor, expected: torch.Tensor, what: str, layout: str, case: AttentionCase) \
        -> str | None:
    if got.shape == expected.shape:
        return None
    n_heads, q_len, k_len = case.n_heads, case.query.size(1), case.key.size(1)
    if squeezed(got, tuple(expected.shape)):
        return f"the {what} should have shape {layout} = {tuple(expected.shape)}: {SQUEEZE_HINT}."
    if what == "weights" and got.shape[:-1] == expected.shape[:-1] and got.shape[-1] == q_len != k_len:
        return (f"the weights should have shape {layout} = {tuple(expected.shape)}, got {tuple(got.shape)}: one "
                "column per *query*, so your keys come from `query`. In cross-attention they differ: k = "
                "self.w_k(key), v = self.w_v(value).")
    if what == "weights" and got.dim() == 4 and got.shape[0] == expected.shape[0] and got.shape[2:] == \
            expected.shape[2:]:
        return (f"the weights should have shape {layout} = {tuple(expected.shape)}, got {tuple(got.shape)}: this "
                f"block was built with n_heads = {n_heads} — use the d_model and n_heads given to __init__, not "
                "fixed numbers.")
    return f"the {what} should have shape {layout} = {tuple(expected.shape)}, got {tuple(got.shape)}."


def diagnose_weights_mha(package, case: AttentionCase, got: torch.Tensor, expected: torch.Tensor) -> str:
    """The known mistake behind wrong attention weights on ``case``, or a plain description of the difference."""
    query, key, value, mask = case.query.detach(), case.key.detach(), case.value.detach(), case.mask
    with torch.no_grad():
        for knobs, message in WEIGHT_MISTAKES:
            try:
                _, wrong = attention_mistake(package, query, key, value, mask, **knobs)
            except RuntimeError:
                continue
            if wrong.shape == got.shape and close(got, wrong):
                if knobs == {"scale": "none"}:
                    message += sizes_of_one(batch=query.size(0), q_len=query.size(1), k_len=key.size(1))
                return message
        q = package.split_heads(package.w_q(query))
        k = package.split_heads(package.w_k(key))
        divisor = fitted_divisor(got, q @ k.transpose(-2, -1), expected > 0)
        if divisor and close(got, attention_mistake(package, query, key, value, mask, scale=divisor)[1]):
            return divisor_message(divisor, package.d_head, "d_head", "d_model // n_heads")
    return (f"your attention weights are not softmax(Q Kᵀ / √d_head) with the mask (off by up to "
            f"{max_difference(got, expected):.3g}). Check the order: project, split heads, scores, scale, mask, "
            "softmax over the keys.")


def diagnose_output_mha(package, case: AttentionCase, got: torch.Tensor, expected: torch.Tensor) -> str:
    query, key, value, mask = case.query.detach(), case.key.detach(), case.value.detach(), case.mask
    with torch.no_grad():
        for knobs, message in OUTPUT_MISTAKES:
            try:
                wrong, _ = attention_mistake(package, query, key, value, mask, **knobs)
            except RuntimeError:
                continue
            if wrong.shape == got.shape and close(got, wrong):
                return message
    return (f"the weights are right, the output is not (off by up to {max_difference(got, expected):.3g}): out = "
            "weights @ v with v = self.w_v(value), merge the heads back to (batch, q_len, d_model), then self.w_o.")


def new_block(learner_class, d_model: int, n_heads: int, dropout: float, case: str) -> nn.Module:
    """The learner's block, built under the "use your own" guard."""
    return call_learner(lambda: instantiate(learner_class, MHA_NAME, MHA_SIGNATURE, d_model, n_heads,
                                            dropout=dropout), MHA_NAME, case, forbidden=MHA_FORBIDDEN)


def compare_attention(package, learner, case: AttentionCase) -> None:
    """Outputs, weights and gradients of the learner's block against the package's on ``case``; no input changed."""
    def leaves():
        if case.self_attention:
            x = case.query.clone().requires_grad_()
            return {"x": x}, (x, x, x)
        inputs = {k: getattr(case, k).clone().requires_grad_() for k in ("query", "key", "value")}
        return inputs, tuple(inputs.values())

    named_p, (query_p, key_p, value_p) = leaves()
    named_l, (query_l, key_l, value_l) = leaves()
    mask_l = None if case.mask is None else case.mask.clone()
    before = snapshot({**named_l, "mask": mask_l})
    expected, expected_weights = package(query_p, key_p, value_p, case.mask, need_weights=True)
    result = call_learner(learner, MHA_NAME, case.description, query_l, key_l, value_l, mask_l,
                          forbidden=MHA_FORBIDDEN, error_hint=attention_error_hint(case))
    check_inputs_kept(before, {**named_l, "mask": mask_l}, MHA_NAME, case.description)
    got, got_weights = first_output(result, MHA_NAME, pair=True)
    for value, reference, what, layout in ((got_weights, expected_weights, "weights", "(batch, heads, q_len, k_len)"),
                                           (got, expected, "output", "(batch, q_len, d_model)")):
        if not isinstance(value, torch.Tensor):
            raise ExerciseFailure(f"on {case.description}: the {what} your forward returns should be a torch.Tensor "
                                  f"{layout}, got {type(value).__name__}.")
        wrong_shape = shape_mismatch(value, reference, what, layout, case)
        if wrong_shape:
            raise ExerciseFailure(f"on {case.description}: {wrong_shape}")
        if torch.isnan(value.detach()).any():
            raise ExerciseFailure(f"on {case.description}: your {what} contain NaN. A query whose every key is "
                                  "masked has only -inf scores and softmax gives 0/0: fill with "
                                  "torch.finfo(scores.dtype).min instead of -inf, and zero the masked weights after "
                                  "the softmax.")
    gaps = difference(got_weights, expected_weights, "x"), difference(got, expected, "x")
    if any(gaps) and all(isinstance(g, str) and "differs" in g for g in gaps if g):
        drops_anyway(learner, case, expected, expected_weights)
    gap = difference(got_weights, expected_weights, "your attention weights")
    if gap:
        specific = (diagnose_weights_mha(package, case, got_weights.detach(), expected_weights.detach())
                    if got_weights.dtype == expected_weights.dtype else None)
        raise ExerciseFailure(f"on {case.description}: {specific or gap + '.'}")
    gap = difference(got, expected, "your output")
    if gap:
        specific = (diagnose_output_mha(package, case, got.detach(), expected.detach())
                    if got.dtype == expected.dtype else None)
        raise ExerciseFailure(f"on {case.description}: {specific or gap + '.'}")
    backpropagate_both(package, expected, learner, got, MHA_NAME, f"on {case.description}")
    compare_gradients(gradients(package, named_p), gradients(learner, named_l), MHA_NAME, f"on {case.description}")


def drops_anyway(learner, case: AttentionCase, expected: torch.Tensor, expected_weights: torch.Tensor) -> None:
    """Raise if the learner's block, built with dropout=0.0, is right in eval mode but not in train mode: it drops
    with a probability of its own."""
    learner.eval()
    try:
        with torch.no_grad():
            result = learner(case.query, case.key, case.value, None if case.mask is None else case.mask.clone())
    except Exception:  # noqa: BLE001 - only a diagnosis: the caller reports the difference itself
        return
    finally:
        learner.train()
    if (isinstance(result, tuple) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)
            and result[0].shape == expected.shape and close(result[0], expected.detach())):
        raise ExerciseFailure(f"on {case.description}: your block was built with dropout=0.0 and is right in eval "
                              "mode, but in train mode it still drops: it uses a probability of its own. Pass the "
                              "`dropout` argument on: nn.Dropout(dropout).")


DROPOUT = 0.3  # not 0.1, 0.2 or 0.5: a probability typed into the class instead of the argument shows


def dropout_case(draw: Draw) -> AttentionCase:
    """Cross-attention with a combined mask (kept, blocked and one fully blocked query row), value ≠ key, and fewer
    keys than d_head — so each head's output determines which weights were dropped (:func:`dropped_weights`)."""
    n_heads = draw.choice([2, 3])
    d_head = draw.integer(6, 8)
    k_len = draw.integer(3, d_head - 1)
    batch, q_len = draw.distinct(2, 2, 5, avoid=(n_heads, k_len))
    d_model = n_heads * d_head
    mask = (padding_rows(draw, batch, k_len)[:, None, None, :] & causal_like(q_len, k_len)).clone()
    mask[draw.integer(0, batch - 1), 0, draw.integer(0, q_len - 1)] = False
    query, key, value = (draw.randn(batch, n, d_model, scale=1.5) for n in (q_len, k_len, k_len))
    return AttentionCase(f"cross-attention (value ≠ key), batch {batch}, q_len {q_len}, k_len {k_len}, d_model "
                         f"{d_model}, {n_heads} heads (d_head {d_head}), mask {tuple(mask.shape)}, dropout={DROPOUT}",
                         d_model, n_heads, query, key, value, mask)


def dropped_weights(package, case: AttentionCase, output: torch.Tensor) -> torch.Tensor | None:
    """The factors ``d`` (per weight) for which ``output`` = w_o(merge((d ⊙ weights) @ v)), the weights and
    values being the package's (same parameters, no dropout), or ``None`` if no such factors explain it.

    With fewer keys than d_head, each query's output in a head is a unique combination of that head's values, so
    the factors can be read back whatever random stream the learner's dropout drew them from."""
    with torch.no_grad():
        package.eval()
        weights = package(case.query, case.key, case.value, case.mask, need_weights=True)[1].double()
        values = package.split_heads(package.w_v(case.value)).double()             # (batch, heads, k_len, d_head)
        w_o = package.w_o.weight.double()
        merged = (output.double() - package.w_o.bias.double()) @ torch.linalg.inv(w_o).T
        heads = merged.view(*merged.shape[:2], case.n_heads, -1).transpose(1, 2)   # (batch, heads, q_len, d_head)
        # heads = combination @ values, for each (batch, head): solve for combination (q_len, k_len)
        solution = torch.linalg.lstsq(values.transpose(-2, -1), heads.transpose(-2, -1)).solution.transpose(-2, -1)
        if not torch.allclose(solution @ values, heads, atol=1e-3, rtol=1e-3):
            return None
        visible = weights > 5e-3  # the factor of a tiny weight cannot be read back; it may only be small
        if (solution[~visible].abs() > 2 * weights[~visible] / (1 - DROPOUT) + 1e-4).any():
            return None
        return torch.where(visible, solution / weights.clamp(min=5e-3), torch.zeros_like(weights))


def check_dropout_mha(learner_class, draw: Draw) -> None:
    """``dropout=DROPOUT``: in eval mode nothing is dropped (deterministic, equal to the package's); in train mode
    dropout acts on the attention weights, once, with the given probability — the same draws as the package's, or
    (drawn in another order, e.g. head by head) factors of 0 and 1 / (1 - p) on the weights."""
    case = dropout_case(draw)
    package = package_attention(draw, case.d_model, case.n_heads, dropout=DROPOUT)
    with torch.no_grad():  # an orthogonal output projection: reading the factors back loses no precision
        package.w_o.weight.copy_(torch.linalg.qr(draw.randn(case.d_model, case.d_model).double())[0].float())
    learner = new_block(learner_class, case.d_model, case.n_heads, DROPOUT, case.description)
    copy_weights(package, learner, MHA_NAME, MHA_LAYOUT)
    where = f"on {case.description}"

    def run_learner() -> Any:
        output = first_output(call_learner(learner, MHA_NAME, where, case.query, case.key, case.value, case.mask),
                              MHA_NAME, pair=True)[0]
        if not isinstance(output, torch.Tensor):
            raise ExerciseFailure(f"{where}: your forward should return (output, weights) tensors.")
        return output

    package.eval()
    learner.eval()
    with torch.no_grad():
        expected = package(case.query, case.key, case.value, case.mask, need_weights=True)[0]
        first, second = run_learner(), run_learner()
    if not torch.equal(first, second):
        raise ExerciseFailure(f"{where}: in eval mode two calls of your `{MHA_NAME}` give different outputs: dropout "
                              "is still active. Use an nn.Dropout module (it follows .train()/.eval()) or pass "
                              "training=self.training to F.dropout.")
    if first.shape != expected.shape or not close(first, expected):
        by = f" (by up to {max_difference(first, expected):.3g})" if first.shape == expected.shape else ""
        raise ExerciseFailure(f"{where}: in eval mode your `{MHA_NAME}` differs from the package's{by} although it "
                              "agrees with dropout=0: in eval mode dropout must do nothing — use nn.Dropout, not a "
                              "hand-made scaling.")
    learner.train()
    with torch.no_grad():
        once, again = run_learner(), run_learner()
    if torch.equal(once, again) and not close(once, expected):
        raise ExerciseFailure(f"{where}, train mode: two calls drop exactly the same entries: your forward seeds the "
                              "random generator itself (torch.manual_seed inside?) or reuses one mask. Let dropout "
                              "draw afresh on every call: nn.Dropout(dropout) applied to the weights.")

    def run(block):
        if block is package:
            return block(case.query, case.key, case.value, case.mask, need_weights=True)
        return block(case.query, case.key, case.value, case.mask)
    try:
        with torch.no_grad():
            check_dropout_placement(package, learner, run, MHA_NAME, case.description + ", train mode")
    except ExerciseFailure as failure:
        if "different place" not in str(failure):
            raise
        learner.train()
        with torch.no_grad():
            output = run_learner()
        try:
            factors = dropped_weights(package, case, output)
        except (RuntimeError, ValueError):  # a singular solve: nothing can be read back, keep the first verdict
            factors = None
        if factors is None:
            raise
        kept = factors[factors.abs() > 1e-2]
        scale = 1 / (1 - DROPOUT)
        if kept.numel() and torch.allclose(kept, torch.full_like(kept, scale), rtol=2e-2, atol=2e-2):
            return  # dropout on the weights, once, with the given probability — drawn in another order
        if kept.numel() and torch.allclose(kept, kept.median().expand_as(kept), rtol=2e-2, atol=2e-2):
            raise ExerciseFailure(f"{where}, train mode: your dropout acts on the attention weights, but the kept "
                                  f"ones are multiplied by {float(kept.median()):.4g} instead of 1 / (1 - p) = "
                                  f"{scale:.4g}: use the `dropout` argument as the probability "
                                  "(nn.Dropout(dropout)), applied once.") from None
        raise


def check_multi_head_attention(ns) -> None:
    learner_class = own_module_class(ns["MultiHeadAttention"], MHA_NAME, "course_utils.attention.MultiHeadAttention")
    draw = Draw()
    for case in attention_cases(draw):
        package = package_attention(draw, case.d_model, case.n_heads)
        learner = new_block(learner_class, case.d_model, case.n_heads, 0.0, case.description)
        copy_weights(package, learner, MHA_NAME, MHA_LAYOUT)
        compare_attention(package, learner, case)
    check_dropout_mha(learner_class, draw)


def check_dropout(learner_class, package_block, name: str, signature: str, args: tuple, run, x, **kwargs) -> None:
    """With ``dropout=0.5``: eval mode must equal the package exactly; train mode must be random (lessons 04, 07).

    The package's parameters are loaded into the learner's block; buffers (a scale, a table) are the learner's own.
    """
    learner = instantiate(learner_class, name, signature, *args, dropout=0.5, **kwargs)
    learner.load_state_dict(package_block.state_dict(), strict=False)
    learner.eval()
    package_block.eval()
    with torch.no_grad():
        first, second, expected = run(learner, x), run(learner, x), run(package_block, x)
        if not torch.equal(first, second):
            raise ExerciseFailure(f"in eval mode two calls of your `{name}` give different outputs: dropout is "
                                  "still active. Use an nn.Dropout module (it follows .train()/.eval()) or pass "
                                  "training=self.training to F.dropout.")
        if not close(first, expected):
            raise ExerciseFailure(f"with dropout=0.5 in eval mode your `{name}` differs from the package's (by up "
                                  f"to {max_difference(first, expected):.3g}): in eval mode dropout must do "
                                  "nothing — use nn.Dropout, not a hand-made scaling.")
        learner.train()
        if torch.equal(run(learner, x), run(learner, x)):
            raise ExerciseFailure(f"in train mode with dropout=0.5 your `{name}` is deterministic: the dropout "
                                  "argument is never used. Store nn.Dropout(dropout) and apply it where the "
                                  "package does.")
    package_block.train()


q5 = Exercise(
    name="Capstone: your own MultiHeadAttention",
    variables=("MultiHeadAttention",),
    checker=check_multi_head_attention,
    hints=("Four projections with the package's names, a dropout module, and a forward that reads top to bottom: "
           "project, split into heads, score, scale, mask, softmax, drop, mix the values, merge, project out. Which "
           "input does each of q, k and v come from? Which length does the scale depend on? Stuck? "
           "`from course_utils.attention import MultiHeadAttention` to move on.",
           "__init__: remember n_heads and d_head = d_model // n_heads; four linear layers d_model → d_model (with "
           "bias) named w_q, w_k, w_v, w_o; a dropout module with probability dropout. forward: 1. project query "
           "with w_q, key with w_k, value with w_v; 2. split each into heads: view (batch, seq, heads, d_head), "
           "then swap axes 1 and 2; 3. scores = q times k with its last two axes swapped, divided by the square root "
           "of d_head; 4. if there is a mask: blocked scores ← the most negative finite number, softmax over the "
           "keys, blocked weights ← 0 (never change the mask itself); 5. apply dropout to the weights and multiply "
           "by v; 6. swap axes 1 and 2 back, make contiguous, view (batch, q_len, d_model); 7. w_o. Return the "
           "output and the weights (before dropout). No size is fixed: read them from the inputs and __init__'s "
           "arguments."),
    solution=solution_of("lesson03", "MultiHeadAttention"),
    success="Correct! Same outputs, weights and gradients as course_utils.attention.MultiHeadAttention on random "
            "sizes — self- and cross-attention (value ≠ key), every mask shape — and the same dropout, in train and "
            "eval mode.",
    task=(
        "**Capstone — your own `MultiHeadAttention`.** Write the whole module: `MultiHeadAttention(d_model, n_heads, "
        "dropout=0.0)` with `forward(query, key, value, mask=None)` for `query (batch, q_len, d_model)` and "
        "`key`, `value (batch, k_len, d_model)`, returning the pair `(output (batch, q_len, d_model), weights "
        "(batch, heads, q_len, k_len))` — the same interface as the package's block.\n\n"
        "* Parameters — the package's names, so its weights load into yours: `w_q`, `w_k`, `w_v`, `w_o`, each "
        "`nn.Linear(d_model, d_model)` with bias (float32); dropout on the attention weights "
        "(`nn.Dropout(dropout)`).\n"
        "* Formula, per head $h$ with $d_\\text{head} = d_\\text{model} / n_\\text{heads}$: "
        "$\\text{softmax}\\big(Q_h K_h^\\top / \\sqrt{d_\\text{head}}\\big)\\, V_h$, heads split as "
        "`(batch, seq, heads, d_head)` → `transpose(1, 2)`, merged back, then `w_o`.\n"
        "* `mask` is bool, True = may attend, shaped to broadcast to `(batch, heads, q_len, k_len)`: padding "
        "`(batch, 1, 1, k_len)`, causal `(1, 1, q_len, k_len)` or both `(batch, 1, q_len, k_len)`. A query that may "
        "see no key gets all-zero weights, never NaN. Leave the inputs and the mask unchanged.\n"
        "* Write the attention yourself: the package's `MultiHeadAttention` and `scaled_dot_product_attention`, "
        "`torch.nn.MultiheadAttention`, `F.multi_head_attention_forward` and `F.scaled_dot_product_attention` are "
        "refused, however they are reached.\n\n"
        "How it is checked: every check draws seven configurations at random — each with its own `d_model`, "
        "`n_heads` and lengths, no two sizes equal — covering the edge cases a single query token, batch 1, "
        "seq == d_head, padding in some rows and none in others, and a query that may see no key; cross-attention "
        "always gets a `value` other than its `key`. For each, the checker builds "
        "`course_utils.attention.MultiHeadAttention(d_model, n_heads)`, copies its parameters into yours by name "
        "(buffers such as a stored scale stay yours), and compares weights, outputs and gradients (with respect to "
        "the parameters and the inputs); your inputs and mask must come back unchanged. Then, with `dropout=0.3`: "
        "in eval mode nothing may be dropped, and in train mode your block must drop the attention weights, once, "
        "with that probability — the same entries as the package's from the same random state (or, drawn in "
        "another order, still only weights, each kept one scaled by 1 / (1 - p)). `q5.hint()` and "
        "`q5.solution()` help; stuck? "
        "`from course_utils.attention import MultiHeadAttention` and move on."
    ),
    starter=(
        "import torch.nn as nn\n"
        "\n"
        "\n"
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, dropout=0.0):\n"
        "        super().__init__()\n"
        "        # w_q, w_k, w_v, w_o: nn.Linear(d_model, d_model) each; an nn.Dropout(dropout) for the weights\n"
        "        raise NotImplementedError\n"
        "\n"
        "    def forward(self, query, key, value, mask=None):\n"
        "        # project, split heads, scores / sqrt(d_head), mask, softmax over the keys, weights @ v, merge, w_o\n"
        "        # return output (batch, q_len, d_model), weights (batch, heads, q_len, k_len)\n"
        "        raise NotImplementedError\n"
    ),
)
