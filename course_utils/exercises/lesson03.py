"""Exercises of notebook 03 (attention): scaled weights, masking without NaN, splitting and merging heads."""
from __future__ import annotations

import math

import torch

from .core import Exercise, ExerciseFailure


def example_query_key(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """query ``(2, 5, 16)`` and key ``(2, 7, 16)``: different lengths, so a missing transpose shows."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(2, 5, 16, generator=generator) * 2, torch.randn(2, 7, 16, generator=generator) * 2


def reference_weights(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is None:
        return scores.softmax(dim=-1)
    weights = scores.masked_fill(~mask, torch.finfo(scores.dtype).min).softmax(dim=-1)
    return weights.masked_fill(~mask, 0.0)


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=1e-5, rtol=1e-4))


def as_tensor(value, name: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise ExerciseFailure(f"`{name}` should return a torch.Tensor, got {type(value).__name__}.")
    return value.detach()


def call(function, name: str, *args) -> torch.Tensor:
    try:
        return as_tensor(function(*args), name)
    except RuntimeError as error:
        message = str(error)
        if any(phrase in message for phrase in ("cannot be multiplied", "must match", "Expected size")):
            raise ExerciseFailure(f"matrix shapes do not fit ({message.splitlines()[0]}). query is (batch, q_len, "
                                  "d_k) and key is (batch, k_len, d_k): multiply by key.transpose(-2, -1), "
                                  "not by key.") from None
        raise


def check_attention_weights(ns) -> None:
    query, key = example_query_key()
    got = call(ns["attention_weights"], "attention_weights", query, key)
    expected = reference_weights(query, key)
    if got.shape != expected.shape:
        raise ExerciseFailure(f"weights should have shape (batch, q_len, k_len) = {tuple(expected.shape)}, "
                              f"got {tuple(got.shape)}.")
    if close(got, expected):
        return
    scores = query @ key.transpose(-2, -1)
    if close(got, scores.softmax(dim=-1)):
        raise ExerciseFailure("the √d_k scale is missing: divide the scores by math.sqrt(d_k) before the softmax "
                              "(d_k = query.size(-1)). Without it the softmax saturates as d_k grows.")
    if close(got, (scores / query.size(-1)).softmax(dim=-1)):
        raise ExerciseFailure("you divided by d_k; divide by its square root, math.sqrt(d_k).")
    if close(got, (scores / math.sqrt(query.size(-1))).softmax(dim=-2)):
        raise ExerciseFailure("softmax over the wrong axis: each *query row* must sum to 1 over the keys, so use "
                              "softmax(dim=-1). Your columns sum to 1 instead.")
    if close(got, scores / math.sqrt(query.size(-1))):
        raise ExerciseFailure("these are the scaled scores; turn them into weights with torch.softmax(…, dim=-1).")
    row_sums = got.sum(dim=-1)
    if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-4):
        raise ExerciseFailure(f"each query's weights should sum to 1, yours sum to {row_sums[0, 0].item():.3f} …")
    raise ExerciseFailure(f"weights differ from softmax(Q Kᵀ / √d_k) by up to {(got - expected).abs().max():.3g}.")


def example_mask() -> torch.Tensor:
    """``(2, 5, 7)``: sequence 0 has 2 padded keys; sequence 1 is causal-like with query row 0 fully blocked."""
    mask = torch.ones(2, 5, 7, dtype=torch.bool)
    mask[0, :, 5:] = False
    mask[1] = torch.ones(5, 7, dtype=torch.bool).tril(diagonal=0)
    mask[1, 0] = False  # a query that may see nothing (e.g. a padding query under a combined mask)
    return mask


def check_masked_weights(ns) -> None:
    query, key = example_query_key(1)
    mask = example_mask()
    got = call(ns["masked_weights"], "masked_weights", query, key, mask)
    expected = reference_weights(query, key, mask)
    if got.shape != expected.shape:
        raise ExerciseFailure(f"weights should have shape {tuple(expected.shape)}, got {tuple(got.shape)}.")
    if torch.isnan(got).any():
        raise ExerciseFailure("your weights contain NaN. A query whose every key is masked has a row of -inf "
                              "scores and softmax gives 0/0. Fill with torch.finfo(scores.dtype).min instead of "
                              "-inf, and set the masked weights to 0 after the softmax.")
    if close(got, expected):
        return
    blocked_weight = float(got[~mask.expand_as(got)].abs().max())
    allowed_weight = float(got[mask.expand_as(got)].abs().max())
    if blocked_weight > 1e-6 and allowed_weight < 1e-6:
        raise ExerciseFailure("the mask convention is inverted: in this course True means *may attend*. You "
                              "blocked the allowed keys; fill where the mask is False (scores.masked_fill(~mask, "
                              "…)).")
    if close(got, reference_weights(query, key, ~mask)):
        raise ExerciseFailure("the mask convention is inverted: True means *may attend*; use ~mask in masked_fill.")
    if blocked_weight > 1e-6:
        scores = query @ key.transpose(-2, -1) / 4.0
        if close(got, scores.masked_fill(~mask, 0.0).softmax(-1)):
            raise ExerciseFailure("setting a blocked score to 0 does not block it (exp(0) = 1 still gets weight). "
                                  "Fill blocked scores with a very negative number: torch.finfo(scores.dtype).min.")
        if close(got.masked_fill(~mask, 0.0), expected):
            raise ExerciseFailure("every key allowed somewhere is right, but the fully masked query row gets "
                                  "non-zero weights (a uniform row). After the softmax, zero the masked entries: "
                                  "weights.masked_fill(~mask, 0.0).")
        raise ExerciseFailure(f"blocked keys still get weight (up to {blocked_weight:.3f}); they must get exactly 0.")
    if close(got, reference_weights(query * math.sqrt(16), key, mask)):
        raise ExerciseFailure("the √d_k scale is missing: divide the scores by math.sqrt(d_k).")
    raise ExerciseFailure(f"weights differ from the masked softmax by up to {(got - expected).abs().max():.3g}.")


def example_hidden() -> torch.Tensor:
    """``(2, 3, 12)`` whose entry value encodes (batch, seq, feature): wrong reshapes are easy to spot."""
    batch, seq, d_model = 2, 3, 12
    return torch.arange(batch * seq * d_model, dtype=torch.float32).view(batch, seq, d_model)


def check_split_heads(ns) -> None:
    x, n_heads = example_hidden(), 4
    got = call(ns["split_heads"], "split_heads", x, n_heads)
    expected = x.view(2, 3, n_heads, 3).transpose(1, 2)
    if got.shape == (2, 3, n_heads, 3) and torch.equal(got, x.view(2, 3, n_heads, 3)):
        raise ExerciseFailure("you stopped at (batch, seq, heads, d_head) = (2, 3, 4, 3): the view is right, now "
                              ".transpose(1, 2) to (batch, heads, seq, d_head), so each head holds a whole "
                              "sequence and attends over it.")
    if got.shape != expected.shape:
        raise ExerciseFailure(f"(batch, seq, d_model) = {tuple(x.shape)} with {n_heads} heads should become "
                              f"(batch, heads, seq, d_head) = {tuple(expected.shape)}, got {tuple(got.shape)}.")
    if torch.equal(got, expected):
        return
    if torch.equal(got, x.view(2, n_heads, 3, 3)):
        raise ExerciseFailure("the shape is right but the numbers are scrambled: viewing straight to (batch, heads, "
                              "seq, d_head) mixes positions into heads. View to (batch, seq, heads, d_head) first, "
                              "then .transpose(1, 2).")
    if torch.equal(got, x.view(2, 3, 3, n_heads).permute(0, 3, 1, 2)):
        raise ExerciseFailure("each head must own a contiguous block of d_head features (head 0 = features "
                              "0..d_head-1); you split them with a stride. View to (batch, seq, heads, d_head).")
    raise ExerciseFailure("the shape is right but the values are not where they belong: head h at position s "
                          "should hold x[:, s, h*d_head:(h+1)*d_head].")


def check_merge_heads(ns) -> None:
    x = example_hidden()
    heads = x.view(2, 3, 4, 3).transpose(1, 2).contiguous()  # (batch, heads, seq, d_head), as attention returns it
    try:
        got = as_tensor(ns["merge_heads"](heads), "merge_heads")
    except RuntimeError as error:
        if "view" in str(error) and "contiguous" in str(error):
            raise ExerciseFailure("after .transpose the tensor is not contiguous in memory, so .view fails. Call "
                                  ".contiguous() before .view (or use .reshape).") from None
        raise
    if got.shape != x.shape:
        raise ExerciseFailure(f"(batch, heads, seq, d_head) = {tuple(heads.shape)} should become (batch, seq, "
                              f"d_model) = {tuple(x.shape)}, got {tuple(got.shape)}.")
    if not torch.equal(got, x):
        raise ExerciseFailure("the shape is right but positions and heads are mixed up: transpose(1, 2) back to "
                              "(batch, seq, heads, d_head) before flattening the last two dimensions.")


q1 = Exercise(
    name="Scaled dot-product weights",
    variables=("attention_weights",),
    checker=check_attention_weights,
    hint="scores = query @ key.transpose(-2, -1) / math.sqrt(d_k), then torch.softmax(scores, dim=-1): "
         "every query row sums to 1.",
    solution=("import math\nimport torch\n\n"
              "def attention_weights(query, key):\n"
              "    d_k = query.size(-1)\n"
              "    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)   # (batch, q_len, k_len)\n"
              "    return torch.softmax(scores, dim=-1)\n"),
)

q2 = Exercise(
    name="Masking without NaN",
    variables=("masked_weights",),
    checker=check_masked_weights,
    hint="True = may attend. scores.masked_fill(~mask, torch.finfo(scores.dtype).min), softmax over the keys, "
         "then weights.masked_fill(~mask, 0.0) so a query that may see nothing gets zeros, not NaN.",
    solution=("import math\nimport torch\n\n"
              "def masked_weights(query, key, mask):\n"
              "    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))\n"
              "    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
              "    weights = torch.softmax(scores, dim=-1)\n"
              "    return weights.masked_fill(~mask, 0.0)\n"),
)

q3 = Exercise(
    name="Split into heads",
    variables=("split_heads",),
    checker=check_split_heads,
    hint="x.view(batch, seq, n_heads, d_model // n_heads).transpose(1, 2).",
    solution=("def split_heads(x, n_heads):\n"
              "    batch, seq, d_model = x.shape\n"
              "    return x.view(batch, seq, n_heads, d_model // n_heads).transpose(1, 2)\n"),
)

q4 = Exercise(
    name="Merge the heads back",
    variables=("merge_heads",),
    checker=check_merge_heads,
    hint="x.transpose(1, 2).contiguous().view(batch, seq, heads * d_head).",
    solution=("def merge_heads(x):\n"
              "    batch, heads, seq, d_head = x.shape\n"
              "    return x.transpose(1, 2).contiguous().view(batch, seq, heads * d_head)\n"),
)
