"""Exercises of notebook 03 (attention): scaled weights, masking without NaN, splitting and merging heads."""
from __future__ import annotations

import math

import torch

from ..attention import scaled_dot_product_attention
from .asserts import (
    as_tensor,
    backward,
    close,
    compare_gradients,
    copy_weights,
    first_output,
    gradients,
    instantiate,
    max_difference,
    own_module_class,
)
from .core import Exercise, ExerciseFailure


def example_query_key(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """query ``(2, 5, 16)`` and key ``(2, 7, 16)``: different lengths, so a missing transpose shows."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(2, 5, 16, generator=generator) * 2, torch.randn(2, 7, 16, generator=generator) * 2


def reference_weights(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The package's attention weights for ``(batch, len, d_k)`` inputs (the reference answer of q1 and q2).

    The package works on ``(batch, heads, len, d_k)`` with 4-D masks, so the exercise's tensors get a heads axis of 1.
    """
    heads_mask = None if mask is None else mask[:, None]
    return scaled_dot_product_attention(query[:, None], key[:, None], key[:, None], heads_mask)[1][:, 0]


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
    for size, what in ((key.size(-2), "√k_len (the number of keys)"), (query.size(0), "√batch")):
        if close(got, (scores / math.sqrt(size)).softmax(dim=-1)):
            raise ExerciseFailure(f"you scaled by {what}; the scale is √d_k, the length of the vectors in each "
                                  "dot product: math.sqrt(query.size(-1)).")
    if close(got, scores / math.sqrt(query.size(-1))):
        raise ExerciseFailure("these are the scaled scores; turn them into weights with torch.softmax(…, dim=-1).")
    row_sums = got.sum(dim=-1)
    if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-4):
        raise ExerciseFailure(f"each query's weights should sum to 1, yours sum to {row_sums[0, 0].item():.3f} …")
    raise ExerciseFailure(f"weights differ from softmax(Q Kᵀ / √d_k) by up to {(got - expected).abs().max():.3g}: "
                          "scores = query @ key.transpose(-2, -1), divided by math.sqrt(d_k), softmax over dim=-1.")


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


def check_masked_weights(ns) -> None:
    query, key = example_query_key(1)
    for mask in (example_mask(), example_padding_mask()):
        check_masked_weights_with(ns["masked_weights"], query, key, mask)


def check_masked_weights_with(masked_weights, query, key, mask) -> None:
    shape = f"mask of shape {tuple(mask.shape)}"
    try:
        got = call(masked_weights, "masked_weights", query, key, mask)
    except IndexError as error:
        raise ExerciseFailure(f"with a {shape} your code fails ({error}). Boolean indexing (scores[~mask] = …) needs "
                              "a mask of the scores' full shape; use scores.masked_fill(~mask, "
                              "torch.finfo(scores.dtype).min), which broadcasts the mask.") from None
    expected = reference_weights(query, key, mask)
    if got.shape != expected.shape:
        raise ExerciseFailure(f"with a {shape} the weights should have shape {tuple(expected.shape)}, "
                              f"got {tuple(got.shape)}.")
    if torch.isnan(got).any():
        raise ExerciseFailure("your weights contain NaN. A query whose every key is masked has a row of -inf "
                              "scores and softmax gives 0/0. Fill with torch.finfo(scores.dtype).min instead of "
                              "-inf, and set the masked weights to 0 after the softmax.")
    if close(got, expected):
        return
    full = mask.expand_as(got)
    blocked_weight = float(got[~full].abs().max())
    allowed_weight = float(got[full].abs().max())
    if blocked_weight > 1e-6 and allowed_weight < 1e-6:
        raise ExerciseFailure("the mask convention is inverted: in this course True means *may attend*. You "
                              "blocked the allowed keys; fill where the mask is False (scores.masked_fill(~mask, "
                              "…)).")
    if close(got, reference_weights(query, key, ~mask)):
        raise ExerciseFailure("the mask convention is inverted: True means *may attend*; use ~mask in masked_fill.")
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if blocked_weight > 1e-6:
        if close(got, scores.masked_fill(~mask, 0.0).softmax(-1)):
            raise ExerciseFailure("setting a blocked score to 0 does not block it (exp(0) = 1 still gets weight). "
                                  "Fill blocked scores with a very negative number: torch.finfo(scores.dtype).min.")
        if close(got.masked_fill(~mask, 0.0), expected):
            raise ExerciseFailure("every key allowed somewhere is right, but the fully masked query row gets "
                                  "non-zero weights (a uniform row). After the softmax, zero the masked entries: "
                                  "weights.masked_fill(~mask, 0.0).")
        raise ExerciseFailure(f"blocked keys still get weight (up to {blocked_weight:.3f}); they must get exactly 0: "
                              "scores.masked_fill(~mask, torch.finfo(scores.dtype).min) before the softmax.")
    if close(got, scores.softmax(-1).masked_fill(~mask, 0.0)):
        raise ExerciseFailure("you masked after the softmax without renormalising: the remaining weights of a row no "
                              "longer sum to 1. Fill the blocked *scores* before the softmax (and zero the blocked "
                              "weights after it).")
    if close(got, reference_weights(query * math.sqrt(16), key, mask)):
        raise ExerciseFailure("the √d_k scale is missing: divide the scores by math.sqrt(d_k).")
    raise ExerciseFailure(f"with a {shape} the weights differ from the masked softmax by up to "
                          f"{(got - expected).abs().max():.3g}: scale the scores, fill blocked ones with "
                          "torch.finfo(scores.dtype).min, softmax over dim=-1, zero the blocked weights.")


def example_hidden() -> torch.Tensor:
    """``(2, 5, 12)`` whose entry value encodes (batch, seq, feature); with 4 heads d_head = 3, so no two of
    batch, seq, heads and d_head are equal and a swapped axis always shows."""
    batch, seq, d_model = 2, 5, 12
    return torch.arange(batch * seq * d_model, dtype=torch.float32).view(batch, seq, d_model)


def check_split_heads(ns) -> None:
    x, n_heads = example_hidden(), 4
    got = call(ns["split_heads"], "split_heads", x, n_heads)
    expected = x.view(2, 5, n_heads, 3).transpose(1, 2)
    if got.shape == (2, 5, n_heads, 3) and torch.equal(got, x.view(2, 5, n_heads, 3)):
        raise ExerciseFailure("you stopped at (batch, seq, heads, d_head) = (2, 5, 4, 3): the view is right, now "
                              ".transpose(1, 2) to (batch, heads, seq, d_head), so each head holds a whole "
                              "sequence and attends over it.")
    if got.shape == (2, n_heads, 3, 5):
        raise ExerciseFailure(f"you swapped the seq and d_head axes: got (batch, heads, d_head, seq) = "
                              f"{tuple(got.shape)}. View to (batch, seq, heads, d_head), then .transpose(1, 2) "
                              "only — that gives (batch, heads, seq, d_head).")
    if got.shape != expected.shape:
        raise ExerciseFailure(f"(batch, seq, d_model) = {tuple(x.shape)} with {n_heads} heads should become "
                              f"(batch, heads, seq, d_head) = {tuple(expected.shape)}, got {tuple(got.shape)}.")
    if torch.equal(got, expected):
        return
    if torch.equal(got, x.view(2, n_heads, 5, 3)):
        raise ExerciseFailure("the shape is right but the numbers are scrambled: viewing straight to (batch, heads, "
                              "seq, d_head) mixes positions into heads. View to (batch, seq, heads, d_head) first, "
                              "then .transpose(1, 2).")
    if torch.equal(got, x.view(2, 5, 3, n_heads).permute(0, 3, 1, 2)):
        raise ExerciseFailure("each head must own a contiguous block of d_head features (head 0 = features "
                              "0..d_head-1); you split them with a stride. View to (batch, seq, heads, d_head).")
    raise ExerciseFailure("the shape is right but the values are not where they belong: head h at position s "
                          "should hold x[:, s, h*d_head:(h+1)*d_head].")


def check_merge_heads(ns) -> None:
    x = example_hidden()
    heads = x.view(2, 5, 4, 3).transpose(1, 2).contiguous()  # (batch, heads, seq, d_head), as attention returns it
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


# ---------------------------------------------------------------------------- q5 (capstone): MultiHeadAttention
# Sizes with no two equal, so that swapping any two axes changes a shape or the numbers.
D_MODEL, N_HEADS, D_HEAD, BATCH = 24, 4, 6, 2
SELF_LEN, Q_LEN, K_LEN = 5, 3, 7
MHA_LAYOUT = ("w_q, w_k, w_v, w_o = nn.Linear(d_model, d_model) each (with bias), so the parameters are "
              "w_q.weight (d_model, d_model), w_q.bias (d_model,), and the same for w_k, w_v, w_o")
MHA_SIGNATURE = "(d_model, n_heads, dropout=0.0)"


def example_attention_cases(seed: int = 0) -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor | None]]:
    """``(description, query, key, mask)`` for self- and cross-attention with every mask shape the course allows.

    Masks are bool (True = may attend) and broadcast to ``(batch, heads, q_len, k_len)``: padding ``(batch, 1, 1,
    k_len)``, causal ``(1, 1, q_len, k_len)``, combined ``(batch, 1, q_len, k_len)`` — the combined one has a query
    that may see no key at all.
    """
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, SELF_LEN, D_MODEL, generator=generator)
    query = torch.randn(BATCH, Q_LEN, D_MODEL, generator=generator)
    memory = torch.randn(BATCH, K_LEN, D_MODEL, generator=generator)
    self_padding = torch.tensor([[True] * SELF_LEN, [True] * 3 + [False] * (SELF_LEN - 3)])[:, None, None, :]
    self_causal = torch.ones(SELF_LEN, SELF_LEN, dtype=torch.bool).tril()[None, None]
    self_combined = (self_padding & self_causal).clone()
    self_combined[1, 0, 0] = False  # a query that may attend to nothing
    cross_padding = torch.tensor([[True] * K_LEN, [True] * 4 + [False] * (K_LEN - 4)])[:, None, None, :]
    cross_causal = torch.ones(Q_LEN, K_LEN, dtype=torch.bool).tril(diagonal=K_LEN - Q_LEN)[None, None]
    cross_combined = (cross_padding & cross_causal).clone()
    cross_combined[0, 0, 1] = False
    return [
        (f"self-attention on (batch, seq, d_model) = {tuple(x.shape)}, no mask", x, x, None),
        (f"self-attention with a padding mask {tuple(self_padding.shape)}", x, x, self_padding),
        (f"self-attention with a causal mask {tuple(self_causal.shape)}", x, x, self_causal),
        (f"self-attention with a combined mask {tuple(self_combined.shape)} (one query may see nothing)",
         x, x, self_combined),
        (f"cross-attention, query {tuple(query.shape)}, key/value {tuple(memory.shape)}, no mask",
         query, memory, None),
        (f"cross-attention with a padding mask {tuple(cross_padding.shape)}", query, memory, cross_padding),
        (f"cross-attention with a causal mask {tuple(cross_causal.shape)}", query, memory, cross_causal),
        (f"cross-attention with a combined mask {tuple(cross_combined.shape)} (one query may see nothing)",
         query, memory, cross_combined),
    ]


def attention_mistake(block, query, key, mask, *, scale="d_head", softmax_dim=-1, heads="split", mask_mode="right",
                      merge="transpose", key_projection="w_k"):
    """A *wrong* multi-head attention with the package block's weights: what a typical bug computes.

    The checker compares the learner's weights with these to name the bug; the right answer is the package's.
    """
    batch, q_len, d_model = query.shape
    n_heads = block.n_heads
    d_head = d_model // n_heads

    def split(x):
        if heads == "view":  # straight to (batch, heads, seq, d_head): positions mixed into heads
            return x.reshape(batch, n_heads, x.size(1), d_head)
        return x.reshape(batch, x.size(1), n_heads, d_head).transpose(1, 2)

    q = split(block.w_q(query))
    k = split(getattr(block, key_projection)(key))
    v = split(block.w_v(key))
    divisor = {"d_head": d_head ** 0.5, "none": 1.0, "d_model": d_model ** 0.5, "d_head_linear": float(d_head),
               "k_len": key.size(1) ** 0.5, "batch": batch ** 0.5}[scale]
    scores = q @ k.transpose(-2, -1) / divisor
    if mask is not None:
        allowed = ~mask if mask_mode == "inverted" else mask
        if mask_mode == "query_axis":
            allowed = mask.transpose(-2, -1)
        fill = 0.0 if mask_mode.startswith("zero_fill") else torch.finfo(scores.dtype).min
        if mask_mode != "after_softmax":
            scores = scores.masked_fill(~allowed, fill)
    weights = scores.softmax(dim=softmax_dim)
    if mask is not None and mask_mode not in ("no_zero_after", "zero_fill_only"):
        weights = weights.masked_fill(~allowed, 0.0)
    out = weights @ v
    merged = (out.transpose(1, 2) if merge == "transpose" else out).reshape(batch, q_len, d_model)
    return block.w_o(merged), weights


ZERO_FILL_HINT = ("setting a blocked score to 0 does not block it (exp(0) = 1 still takes a share of the softmax): "
                  "fill with torch.finfo(scores.dtype).min.")

WEIGHT_MISTAKES = (
    ({"scale": "none"}, "the √d_head scale is missing: divide the scores by math.sqrt(d_head), d_head = d_model // "
                        "n_heads, before the softmax."),
    ({"scale": "d_model"}, "you scaled by √d_model; each head's dot products run over d_head = d_model // n_heads "
                           "features, so divide by math.sqrt(d_head)."),
    ({"scale": "d_head_linear"}, "you divided by d_head; divide by its square root, math.sqrt(d_head)."),
    ({"scale": "k_len"}, "you scaled by √k_len (the number of keys); the scale is √d_head, the length of the "
                         "vectors in each dot product: math.sqrt(d_model // n_heads)."),
    ({"scale": "batch"}, "you scaled by √batch; the scale is √d_head = math.sqrt(d_model // n_heads)."),
    ({"softmax_dim": -2}, "softmax over the wrong axis: each query's weights must sum to 1 over the keys, "
                          "softmax(dim=-1)."),
    ({"heads": "view"}, "the heads are not split right: viewing straight to (batch, heads, seq, d_head) mixes "
                        "positions into heads (a transpose/reshape instead of a split). View to (batch, seq, heads, "
                        "d_head), then .transpose(1, 2)."),
    ({"mask_mode": "inverted"}, "the mask convention is inverted: True means *may attend*; hide the keys where the "
                                "mask is False: scores.masked_fill(~mask, …)."),
    ({"mask_mode": "query_axis"}, "the mask hides queries instead of keys (broadcast on the wrong axis): a mask is "
                                  "(batch, 1, q_len | 1, k_len), its last axis runs over the keys — use it as it "
                                  "comes, without transposing or re-shaping."),
    ({"mask_mode": "zero_fill"}, ZERO_FILL_HINT),
    ({"mask_mode": "zero_fill_only"}, ZERO_FILL_HINT),
    ({"mask_mode": "after_softmax"}, "you masked after the softmax without renormalising: the remaining weights "
                                     "no longer sum to 1. Fill the blocked *scores* before the softmax."),
    ({"mask_mode": "no_zero_after"}, "a query whose every key is masked gets a uniform row of weights (an average "
                                     "of padding); after the softmax, zero the masked weights: "
                                     "weights.masked_fill(~mask, 0.0)."),
    ({"key_projection": "w_q"}, "the keys are projected with w_q: key = self.w_k(key)."),
)
OUTPUT_MISTAKES = (
    ({"merge": "no_transpose"}, "the weights are right but merging the heads mixes positions and heads: "
                                "out.transpose(1, 2).contiguous().view(batch, q_len, d_model)."),
)


def _call_attention(module, case: str, query, key, mask):
    """The learner's forward; a crash that only a mask causes is explained in terms of masks."""
    try:
        return module(query, key, key, mask)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
        message = (str(error).splitlines() or [""])[0]
        if mask is not None and isinstance(error, IndexError):
            raise ExerciseFailure(f"{case}: your forward fails ({message}). Boolean indexing (scores[~mask] = …) "
                                  "needs a mask of the scores' full shape; use scores.masked_fill(~mask, "
                                  "torch.finfo(scores.dtype).min), which broadcasts the mask.") from None
        if mask is not None:
            raise ExerciseFailure(f"{case}: your forward fails ({type(error).__name__}: {message}). The mask is "
                                  "already 4-D and broadcasts to the scores (batch, heads, q_len, k_len) as it is: "
                                  "do not unsqueeze or reshape it; use it in scores.masked_fill(~mask, …) and "
                                  "weights.masked_fill(~mask, 0.0).") from None
        raise


def check_multi_head_attention(ns) -> None:
    from ..attention import MultiHeadAttention as PackageAttention

    learner_class = own_module_class(ns["MultiHeadAttention"], "MultiHeadAttention",
                                     "course_utils.attention.MultiHeadAttention")
    torch.manual_seed(0)
    package = PackageAttention(D_MODEL, N_HEADS, dropout=0.0)
    learner = instantiate(learner_class, "MultiHeadAttention", MHA_SIGNATURE, D_MODEL, N_HEADS, dropout=0.0)
    copy_weights(package, learner, "MultiHeadAttention", MHA_LAYOUT)
    for case, query, key, mask in example_attention_cases():
        query_p, key_p = query.clone().requires_grad_(), key.clone().requires_grad_()
        query_l, key_l = query.clone().requires_grad_(), key.clone().requires_grad_()
        expected, expected_weights = package(query_p, key_p, key_p, mask, need_weights=True)
        got, got_weights = first_output(_call_attention(learner, case, query_l, key_l, mask),
                                        "MultiHeadAttention", pair=True)
        got_d = as_tensor(got, "MultiHeadAttention.forward", expected.shape, "(batch, q_len, d_model)")
        weights_d = as_tensor(got_weights, "MultiHeadAttention.forward (weights)", expected_weights.shape,
                              "(batch, heads, q_len, k_len)")
        if torch.isnan(got_d).any() or torch.isnan(weights_d).any():
            raise ExerciseFailure(f"{case}: your output contains NaN. A query whose every key is masked has only "
                                  "-inf scores and softmax gives 0/0: fill with torch.finfo(scores.dtype).min "
                                  "instead of -inf, and zero the masked weights after the softmax.")
        if not close(weights_d, expected_weights):
            with torch.no_grad():
                for knobs, message in WEIGHT_MISTAKES:
                    try:
                        _, wrong_weights = attention_mistake(package, query, key, mask, **knobs)
                    except RuntimeError:
                        continue
                    if close(weights_d, wrong_weights):
                        raise ExerciseFailure(f"{case}: {message}")
            raise ExerciseFailure(f"{case}: your attention weights are not softmax(Q Kᵀ / √d_head) with the mask "
                                  f"(off by up to {max_difference(weights_d, expected_weights):.3g}). Check the "
                                  "order: project, split heads, scores, scale, mask, softmax over the keys.")
        if not close(got_d, expected):
            with torch.no_grad():
                for knobs, message in OUTPUT_MISTAKES:
                    if close(got_d, attention_mistake(package, query, key, mask, **knobs)[0]):
                        raise ExerciseFailure(f"{case}: {message}")
                if close(got_d, (expected_weights @ package.split_heads(package.w_v(key))).transpose(1, 2)
                         .reshape(expected.shape)):
                    raise ExerciseFailure(f"{case}: the weights are right but the output projection is missing: "
                                          "return self.w_o(merged heads).")
            raise ExerciseFailure(f"{case}: the weights are right, the output is not (off by up to "
                                  f"{max_difference(got_d, expected):.3g}): out = weights @ v, merge the heads "
                                  "back to (batch, q_len, d_model), then self.w_o.")
        probe = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1))
        package.zero_grad()
        (expected * probe).sum().backward()
        learner.zero_grad()
        backward(got * probe, "MultiHeadAttention", case)
        compare_gradients(gradients(package, {"query": query_p, "key": key_p}),
                          gradients(learner, {"query": query_l, "key": key_l}), "MultiHeadAttention", case)
    check_dropout(learner_class, package, "MultiHeadAttention", MHA_SIGNATURE, (D_MODEL, N_HEADS),
                  lambda module, x: module(x, x, x, None)[0], example_attention_cases()[0][1])


def check_dropout(learner_class, package_block, name: str, signature: str, args: tuple, run, x, **kwargs) -> None:
    """With ``dropout=0.5``: eval mode must equal the package exactly; train mode must be random."""
    learner = instantiate(learner_class, name, signature, *args, dropout=0.5, **kwargs)
    learner.load_state_dict(package_block.state_dict())
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
    hint="__init__: store d_model, n_heads, d_head = d_model // n_heads; four nn.Linear(d_model, d_model) named "
         "w_q, w_k, w_v, w_o; nn.Dropout(dropout). forward: project, view (batch, seq, heads, d_head) then "
         "transpose(1, 2); scores = q @ k.transpose(-2, -1) / math.sqrt(d_head); masked_fill(~mask, "
         "torch.finfo(scores.dtype).min); softmax(dim=-1); masked_fill(~mask, 0.0); dropout; weights @ v; merge; "
         "w_o. Return (output, weights). Stuck? `from course_utils.attention import MultiHeadAttention` to move on.",
    solution=(
        "import math\n"
        "import torch\n"
        "import torch.nn as nn\n"
        "\n"
        "\n"
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, dropout=0.0):\n"
        "        super().__init__()\n"
        "        self.n_heads, self.d_head = n_heads, d_model // n_heads\n"
        "        self.w_q = nn.Linear(d_model, d_model)\n"
        "        self.w_k = nn.Linear(d_model, d_model)\n"
        "        self.w_v = nn.Linear(d_model, d_model)\n"
        "        self.w_o = nn.Linear(d_model, d_model)\n"
        "        self.dropout = nn.Dropout(dropout)\n"
        "\n"
        "    def split(self, x):  # (batch, seq, d_model) -> (batch, heads, seq, d_head)\n"
        "        batch, seq, _ = x.shape\n"
        "        return x.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)\n"
        "\n"
        "    def forward(self, query, key, value, mask=None):\n"
        "        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))\n"
        "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)     # (batch, heads, q_len, k_len)\n"
        "        if mask is not None:\n"
        "            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
        "        weights = torch.softmax(scores, dim=-1)\n"
        "        if mask is not None:\n"
        "            weights = weights.masked_fill(~mask, 0.0)  # a query that may see nothing: zeros, not NaN\n"
        "        out = self.dropout(weights) @ v                                 # (batch, heads, q_len, d_head)\n"
        "        batch, _, q_len, _ = out.shape\n"
        "        out = out.transpose(1, 2).contiguous().view(batch, q_len, self.n_heads * self.d_head)\n"
        "        return self.w_o(out), weights\n"
    ),
    success="Correct! Same outputs, weights and gradients as course_utils.attention.MultiHeadAttention, for "
            "self- and cross-attention with every mask shape, in train and eval mode.",
    task=(
        "**Capstone — your own `MultiHeadAttention`.** Write the whole module: `MultiHeadAttention(d_model, n_heads, "
        "dropout=0.0)` with `forward(query, key, value, mask=None)` for `query (batch, q_len, d_model)` and "
        "`key`, `value (batch, k_len, d_model)`, returning the pair `(output (batch, q_len, d_model), weights "
        "(batch, heads, q_len, k_len))` — the same interface as the package's block.\n\n"
        "* Parameters — the package's names, so its weights load into yours: `w_q`, `w_k`, `w_v`, `w_o`, each "
        "`nn.Linear(d_model, d_model)` with bias; dropout on the attention weights (`nn.Dropout(dropout)`).\n"
        "* Formula, per head $h$ with $d_\\text{head} = d_\\text{model} / n_\\text{heads}$: "
        "$\\text{softmax}\\big(Q_h K_h^\\top / \\sqrt{d_\\text{head}}\\big)\\, V_h$, heads split as "
        "`(batch, seq, heads, d_head)` → `transpose(1, 2)`, merged back, then `w_o`.\n"
        "* `mask` is bool, True = may attend, shaped to broadcast to `(batch, heads, q_len, k_len)`: padding "
        "`(batch, 1, 1, k_len)`, causal `(1, 1, q_len, k_len)` or both `(batch, 1, q_len, k_len)`. A query that may "
        "see no key gets all-zero weights, never NaN.\n\n"
        "How it is checked: the checker builds `course_utils.attention.MultiHeadAttention(24, 4)`, copies its "
        "weights into yours with `load_state_dict`, and compares outputs, weights and gradients on self- and "
        "cross-attention (batch 2, lengths 5, 3 and 7) with every mask shape, in train mode and — with "
        "`dropout=0.5` — in eval mode. `q5.hint()` and `q5.solution()` help; stuck? "
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
