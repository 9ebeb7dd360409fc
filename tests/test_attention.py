"""Attention equals PyTorch's own, never produces NaN, and has correct gradients."""
import inspect

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.attention import (
    MultiHeadAttention,
    capture_attention,
    fused_attention,
    scaled_dot_product_attention,
)
from course_utils.errors import CourseError, CourseTypeError, CourseValueError
from course_utils.kv_cache import CachedMultiHeadAttention, LayerCache
from course_utils.masks import causal_mask, combine_masks, padding_mask
from course_utils.reference import copy_attention

IDS = torch.tensor([[5, 6, 7, 8, 9, 3], [4, 5, 6, 0, 0, 0]])  # second sequence padded with 0


def masks_to_test():
    return {
        "none": None,
        "padding": padding_mask(IDS),
        "causal": causal_mask(6),
        "causal+padding": combine_masks(padding_mask(IDS), causal_mask(6)),
    }


@pytest.mark.parametrize("mask_name", list(masks_to_test()))
def test_scaled_dot_product_matches_pytorch(mask_name):
    q, k, v = torch.randn(3, 2, 4, 6, 8).unbind(0)
    mask = masks_to_test()[mask_name]
    ours, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 6))


def test_scaled_dot_product_uses_sqrt_dk_scale():
    q = torch.ones(1, 2, 16)
    k = torch.tensor([[[1.0] * 16, [0.0] * 16]])
    _, weights = scaled_dot_product_attention(q, k, k)
    expected = torch.softmax(torch.tensor([16 / 4.0, 0.0]), -1)
    torch.testing.assert_close(weights[0, 0], expected)


def torch_attention(d_model=16, n_heads=4, block=CachedMultiHeadAttention):
    """``block`` (lesson 07's, with its fast path, unless given) holding the weights of PyTorch's own."""
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=True).eval()
    ours = block(d_model, n_heads).eval()
    copy_attention(ours, theirs)
    return ours, theirs


def test_lesson_03_block_is_short_and_always_returns_its_weights():
    source = inspect.getsource(MultiHeadAttention).splitlines()
    assert len([line for line in source if not line.strip().startswith("@")]) <= 60
    assert list(inspect.signature(MultiHeadAttention).parameters) == ["d_model", "n_heads", "dropout", "bias"]
    assert list(inspect.signature(MultiHeadAttention.forward).parameters) == ["self", "query", "key", "value", "mask"]
    ours, _ = torch_attention(block=MultiHeadAttention)
    x = torch.randn(2, 6, 16)
    out, weights = ours(x, x, x)
    assert out.shape == (2, 6, 16) and weights.shape == (2, 4, 6, 6)


@pytest.mark.parametrize("block, fast_path", [(MultiHeadAttention, None), (CachedMultiHeadAttention, False),
                                              (CachedMultiHeadAttention, True)])
def test_multi_head_self_attention_matches_pytorch(block, fast_path):
    ours, theirs = torch_attention(block=block)
    x = torch.randn(2, 6, 16)
    keep = combine_masks(padding_mask(IDS), causal_mask(6))
    expected, expected_weights = theirs(x, x, x, attn_mask=~causal_mask(6)[0, 0], key_padding_mask=IDS == 0,
                                        average_attn_weights=False)
    if fast_path is None:
        out, weights = ours(x, x, x, keep)
    else:
        ours.use_fast_path = fast_path
        out, none = ours(x, x, x, keep)
        assert (none is None) == fast_path                  # the fused kernel forms no weights
        weights = ours(x, x, x, keep, need_weights=True)[1]
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, expected_weights)


@pytest.mark.parametrize("block", [MultiHeadAttention, CachedMultiHeadAttention])
def test_multi_head_cross_attention_matches_pytorch(block):
    ours, theirs = torch_attention(block=block)
    queries, memory = torch.randn(2, 3, 16), torch.randn(2, 6, 16)
    expected, expected_weights = theirs(queries, memory, memory, key_padding_mask=IDS == 0,
                                        average_attn_weights=False)
    out, weights = ours(queries, memory, memory, padding_mask(IDS), **({} if block is MultiHeadAttention
                                                                        else {"need_weights": True}))
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, expected_weights)
    assert weights.shape == (2, 4, 3, 6)
    assert torch.all(weights[1, :, :, 3:] == 0), "padded memory positions must get zero weight"


def test_fast_path_equals_math_path_with_padding():
    ours, _ = torch_attention()
    x = torch.randn(2, 6, 16)
    mask = padding_mask(IDS)
    fast, _ = ours(x, x, x, mask)
    math_path, _ = ours(x, x, x, mask, need_weights=True)
    torch.testing.assert_close(fast, math_path)
    torch.testing.assert_close(fast, torch_attention(block=MultiHeadAttention)[0](x, x, x, mask)[0])


def test_fused_attention_equals_the_step_by_step_function_with_fewer_key_value_heads():
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 8)
    mask = combine_masks(padding_mask(IDS), causal_mask(6))
    expected, _ = scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), mask)
    torch.testing.assert_close(fused_attention(q, k, v, mask), expected)
    with pytest.raises(CourseValueError, match="same leading"):
        fused_attention(q, torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("fast_path", [False, True])
def test_fully_masked_rows_are_finite_and_zero(dtype, fast_path):
    attention = CachedMultiHeadAttention(16, 4, use_fast_path=fast_path).to(dtype)
    x = torch.randn(2, 5, 16, dtype=dtype)
    mask = torch.zeros(2, 1, 1, 5, dtype=torch.bool)  # every key hidden
    out, _ = attention(x, x, x, mask)
    assert torch.isfinite(out).all()
    out, weights = MultiHeadAttention(16, 4).to(dtype)(x, x, x, mask)
    assert torch.isfinite(out).all() and torch.all(weights == 0)
    assert torch.isfinite(out).all()
    _, weights = scaled_dot_product_attention(x, x, x, mask[:, 0])
    assert torch.all(weights == 0)


def test_fully_masked_rows_have_finite_gradients():
    q = torch.randn(1, 3, 4, requires_grad=True)
    mask = torch.tensor([[[True, True, False], [False, False, False], [True, False, False]]])
    out, _ = scaled_dot_product_attention(q, q, q, mask)
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_attention_gradcheck():
    q, k, v = (torch.randn(1, 2, 3, 4, dtype=torch.double, requires_grad=True) for _ in range(3))
    mask = causal_mask(3)
    assert torch.autograd.gradcheck(lambda a, b, c: scaled_dot_product_attention(a, b, c, mask)[0], (q, k, v))


def test_capture_attention_records_every_module_and_cleans_up():
    model = nn.Sequential()
    model.add_module("first", MultiHeadAttention(8, 2))
    model.add_module("fused", CachedMultiHeadAttention(8, 2))
    x = torch.randn(1, 4, 8)
    with capture_attention(model) as maps:
        model.first(x, x, x)
        _, weights = model.fused(x, x, x, None, False)           # asked not to form them: formed while capturing
        model.fused(x, x, x)
    assert set(maps) == {"first", "fused"} and maps["first"].shape == maps["fused"].shape == (1, 2, 4, 4)
    assert weights is not None
    assert model.fused(x, x, x)[1] is None                          # and the hooks are gone
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_kv_cache_self_attention_matches_full_computation():
    ours, _ = torch_attention()
    x = torch.randn(2, 5, 16)
    full, _ = ours(x, x, x, causal_mask(5))
    cache = LayerCache()
    steps = [ours(x[:, t:t + 1], x[:, t:t + 1], x[:, t:t + 1], None, cache=cache)[0] for t in range(5)]
    assert cache.length == 5 and cache.batch_size == 2
    torch.testing.assert_close(torch.cat(steps, dim=1), full)


# --- masks that cannot be misread ----------------------------------------------------------------------------------

def attention_on_both_paths(mask, batch=2, seq=6):
    """Run the same block on its fast and its math path, and lesson 03's block; return what each raised (or None)."""
    ours, _ = torch_attention()
    x = torch.randn(batch, seq, 16)
    raised = {}
    for path, run in ((True, lambda: ours(x, x, x, mask)), (False, lambda: ours(x, x, x, mask, need_weights=True)),
                      ("lesson 03", lambda: torch_attention(block=MultiHeadAttention)[0](x, x, x, mask))):
        try:
            run()
            raised[path] = None
        except Exception as error:  # noqa: BLE001 - the test compares whatever comes out
            raised[path] = error
    return raised


BAD_MASKS = {
    "(batch, seq) when batch == seq": (torch.ones(6, 6, dtype=torch.bool), 6, "padding_mask"),
    "(batch, seq) when batch != seq": (torch.ones(2, 6, dtype=torch.bool), 2, "padding_mask"),
    "(batch, q, k) without heads": (torch.ones(2, 6, 6, dtype=torch.bool), 2, "unsqueeze"),
    "5-D": (torch.ones(2, 1, 1, 1, 6, dtype=torch.bool), 2, "one dimension per score dimension"),
    "bigger batch than the input": (torch.ones(3, 1, 1, 6, dtype=torch.bool), 1, "may not enlarge"),
    "more heads than the block": (torch.ones(2, 8, 6, 6, dtype=torch.bool), 2, "heads dimension is 8"),
    "wrong key length": (torch.ones(2, 1, 1, 5, dtype=torch.bool), 2, "k_len dimension is 5"),
    "float mask": (torch.zeros(2, 1, 1, 6), 2, "must be bool"),
}


@pytest.mark.parametrize("name", list(BAD_MASKS))
def test_a_mask_that_could_be_misread_raises_the_same_course_error_on_both_paths(name):
    mask, batch, fix = BAD_MASKS[name]
    raised = attention_on_both_paths(mask, batch=batch)
    fast, math_path, plain = raised[True], raised[False], raised["lesson 03"]
    assert isinstance(fast, CourseError), f"fast path: {fast!r}"
    assert type(fast) is type(math_path) is type(plain) and str(fast) == str(math_path) == str(plain)
    assert fix in str(fast)
    assert "expected" in str(fast) and str(tuple(mask.shape)) in str(fast)


def test_the_batch_equals_seq_padding_mask_names_the_padding_mask_fix():
    ours, _ = torch_attention(block=MultiHeadAttention)
    ids = IDS.repeat(3, 1)                                    # batch 6 == seq 6: `ids != 0` would broadcast
    x = torch.randn(6, 6, 16)
    fix = r"shape \(batch, 1, 1, seq\): use course_utils.masks.padding_mask\(ids\)"
    with pytest.raises(CourseValueError, match=fix):
        ours(x, x, x, ids != 0)
    ours(x, x, x, padding_mask(ids))


@pytest.mark.parametrize("need_weights", [False, True])
def test_a_mask_for_a_bigger_batch_never_enlarges_the_output(need_weights):
    ours, _ = torch_attention()
    x = torch.randn(1, 5, 16)
    with pytest.raises(CourseValueError, match=r"batch dimension is 3, expected 1 \("):
        ours(x, x, x, torch.ones(3, 1, 1, 5, dtype=torch.bool), need_weights=need_weights)
    with pytest.raises(CourseValueError), capture_attention(ours):
        ours(x, x, x, torch.ones(3, 1, 1, 5, dtype=torch.bool))


def test_scaled_dot_product_requires_one_mask_dimension_per_score_dimension():
    q = torch.randn(2, 4, 6, 8)
    with pytest.raises(CourseValueError, match="expected a 4-D bool mask"):
        scaled_dot_product_attention(q, q, q, torch.ones(6, 6, dtype=torch.bool))
    with pytest.raises(CourseValueError, match="expected a 3-D bool mask"):
        scaled_dot_product_attention(q[0], q[0], q[0], causal_mask(6))
    with pytest.raises(CourseValueError, match="may not enlarge"):
        scaled_dot_product_attention(q[:1], q[:1], q[:1], torch.ones(2, 1, 1, 6, dtype=torch.bool))


@pytest.mark.parametrize("mask", [padding_mask(IDS), causal_mask(6), combine_masks(padding_mask(IDS), causal_mask(6)),
                                  torch.ones(1, 4, 6, 6, dtype=torch.bool)])
def test_every_mask_builder_and_per_head_masks_are_accepted(mask):
    raised = attention_on_both_paths(mask)
    assert raised == {True: None, False: None, "lesson 03": None}


# --- numerics: the math path is as safe as the fused one ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("masked", [False, True])
def test_math_path_stays_finite_and_equals_fused_attention_for_large_inputs(dtype, masked):
    q, k, v = (torch.randn(3, 2, 4, 6, 64) * 60).to(dtype).unbind(0)   # Q Kᵀ reaches ~1e5 > float16 max 65504
    assert (q.float() @ k.float().transpose(-2, -1)).abs().max() > torch.finfo(torch.float16).max
    mask = combine_masks(padding_mask(IDS), causal_mask(6)) if masked else None
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.isfinite(expected).all()
    ours, weights = scaled_dot_product_attention(q, k, v, mask)
    assert ours.dtype == weights.dtype == dtype
    assert torch.isfinite(ours).all() and torch.isfinite(weights).all()
    torch.testing.assert_close(ours.float(), expected.float(), **({} if dtype == torch.float32 else
                                                                  {"atol": 0.5, "rtol": 0.02}))


def test_multi_head_attention_in_float16_matches_float32():
    ours, _ = torch_attention()
    x = torch.randn(2, 6, 16) * 20
    expected, expected_weights = ours(x, x, x, padding_mask(IDS), need_weights=True)
    half = ours.half()
    out, weights = half(x.half(), x.half(), x.half(), padding_mask(IDS), need_weights=True)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(weights.float(), expected_weights, atol=2e-2, rtol=0)


def test_input_dtype_must_match_the_weights():
    ours, _ = torch_attention()
    x = torch.randn(1, 3, 16, dtype=torch.float64)
    with pytest.raises(CourseTypeError, match=r"query.to\(torch.float32\)"):
        ours(x, x, x)


# --- the fast path zeroes queries that can see no key, even when a kernel returns NaN there ---------------------------

def test_fast_path_zeroes_fully_masked_rows_when_the_kernel_returns_nan(monkeypatch):
    """No CPU kernel yields NaN for a fully masked row today; some GPU kernels and older releases do."""
    fused = F.scaled_dot_product_attention

    def kernel_with_nan_rows(q, k, v, attn_mask=None, **kwargs):
        out = fused(q, k, v, attn_mask=attn_mask, **kwargs)
        return out.masked_fill(~attn_mask.any(dim=-1, keepdim=True), float("nan"))

    monkeypatch.setattr(F, "scaled_dot_product_attention", kernel_with_nan_rows)
    ours, _ = torch_attention()
    x = torch.randn(2, 6, 16)
    mask = padding_mask(IDS) & causal_mask(6)
    mask[1, :, 0] = False  # query 0 of sentence 1 may see nothing
    out, _ = ours(x, x, x, mask)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, ours(x, x, x, mask, need_weights=True)[0])


# --- weight copy from PyTorch's variants -----------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kdim, vdim", [(None, None), (12, 20)])
def test_copy_attention_handles_bias_free_and_kdim_vdim_modules(bias, kdim, vdim):
    theirs = nn.MultiheadAttention(16, 4, bias=bias, kdim=kdim, vdim=vdim, batch_first=True).eval()
    ours = CachedMultiHeadAttention(16, 4, bias=bias, kdim=kdim, vdim=vdim).eval()
    copy_attention(ours, theirs)
    query, key, value = torch.randn(2, 3, 16), torch.randn(2, 6, kdim or 16), torch.randn(2, 6, vdim or 16)
    expected, _ = theirs(query, key, value, key_padding_mask=IDS == 0)
    torch.testing.assert_close(ours(query, key, value, padding_mask(IDS))[0], expected)


@pytest.mark.parametrize("theirs_kwargs, ours_kwargs, message", [
    ({"bias": False}, {}, "whether W_q.weight exists|whether the bias of W_q exists"),
    ({}, {"bias": False}, "whether the bias of W_q exists"),
    ({"kdim": 12}, {}, "kdim differs"),
    ({"num_heads": 2}, {}, "number of heads"),
    ({"add_bias_kv": True}, {}, "add_bias_kv"),
    ({"add_zero_attn": True}, {}, "add_zero_attn"),
])
def test_copy_attention_refuses_modules_that_compute_something_else(theirs_kwargs, ours_kwargs, message):
    theirs = nn.MultiheadAttention(**{"embed_dim": 16, "num_heads": 4, "batch_first": True, **theirs_kwargs})
    ours = (CachedMultiHeadAttention if "kdim" in theirs_kwargs else MultiHeadAttention)(16, 4, **ours_kwargs)
    with pytest.raises(CourseValueError, match=message):
        copy_attention(ours, theirs)


@pytest.mark.parametrize("call, error, message", [
    (lambda: CachedMultiHeadAttention(16, 4, kdim=0), CourseValueError, "kdim must be an int >= 1"),
    (lambda: MultiHeadAttention(16, 4, dropout=1.0), CourseValueError, "dropout"),
    (lambda: MultiHeadAttention(16, 5), CourseValueError, "not divisible by n_heads=5"),
    (lambda: MultiHeadAttention(16, 4, bias="no"), CourseTypeError, "bias"),
    (lambda: CachedMultiHeadAttention(16, 4, use_fast_path="yes"), CourseTypeError, "use_fast_path"),
    (lambda: scaled_dot_product_attention([[1.0]], torch.ones(1, 1), torch.ones(1, 1)), CourseTypeError, "query"),
    (lambda: scaled_dot_product_attention(torch.ones(4), torch.ones(4), torch.ones(4)), CourseValueError,
     r"\(at least 2\)"),
    (lambda: MultiHeadAttention(16, 4)(torch.randn(2, 3, 16), torch.randn(3, 3, 16), torch.randn(3, 3, 16)),
     CourseValueError, "batch sizes disagree"),
    (lambda: MultiHeadAttention(16, 4)(torch.randn(2, 3, 16), torch.randn(2, 3, 8), torch.randn(2, 3, 16)),
     CourseValueError, r"key must have shape \(batch, seq, d_model=16\)"),
    (lambda: CachedMultiHeadAttention(16, 4)(*[torch.randn(1, 3, 16)] * 3, cache=[]), CourseTypeError,
     "cache must be a LayerCache"),
    (lambda: CachedMultiHeadAttention(16, 4)(*[torch.randn(1, 3, 16)] * 3, need_weights=1), CourseTypeError,
     "need_weights"),
    (lambda: MultiHeadAttention(16, 4).split_heads(torch.randn(1, 3, 12)), CourseValueError, "with 16 in the last"),
    (lambda: MultiHeadAttention(16, 4).merge_heads(torch.randn(1, 2, 3, 4)), CourseValueError, "heads=4"),
])
def test_attention_arguments_are_checked_with_a_fix(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_cache_from_another_batch_is_refused():
    attention = CachedMultiHeadAttention(16, 4)
    cache = LayerCache()
    attention(*[torch.randn(2, 1, 16)] * 3, cache=cache)
    with pytest.raises(CourseValueError, match="holds keys for 2 rows"):
        attention(*[torch.randn(3, 1, 16)] * 3, cache=cache)



@pytest.mark.parametrize("poison", [float("nan"), float("inf")])
@pytest.mark.parametrize("fast", [True, False])
def test_a_padded_key_or_value_contributes_nothing_even_when_it_holds_nan(poison, fast):
    """Padding is hidden from every query, so whatever a padded position holds — NaN, inf — never reaches a real
    output (0 × NaN would be NaN): on both paths, and in the step-by-step function."""
    torch.manual_seed(0)
    attention = CachedMultiHeadAttention(16, 4, use_fast_path=fast).eval()
    x = torch.randn(2, 5, 16)
    ids = torch.tensor([[7, 8, 9, 0, 0], [7, 8, 9, 10, 11]])
    mask = padding_mask(ids)
    clean, _ = attention(x, x, x, mask)
    poisoned = x.clone()
    poisoned[0, 3:] = poison                                    # only padded positions of row 0
    with torch.no_grad():
        out, _ = attention(poisoned, poisoned, poisoned, mask)
    torch.testing.assert_close(out[0, :3], clean[0, :3])        # the real queries of the poisoned row
    torch.testing.assert_close(out[1], clean[1])
    q, k, v = torch.randn(3, 1, 2, 5, 8).unbind(0)
    k[..., 3:, :], v[..., 3:, :] = poison, poison
    weights_mask = torch.tensor([True, True, True, False, False])[None, None, None]
    output, weights = scaled_dot_product_attention(q, k, v, weights_mask)
    assert torch.isfinite(output).all() and torch.isfinite(weights).all()


def test_cross_attention_projects_the_memory_once_and_reuses_it_from_the_cache():
    ours, _ = torch_attention()
    queries, memory = torch.randn(2, 4, 16), torch.randn(2, 6, 16)
    full, _ = ours(queries, memory, memory, padding_mask(IDS))
    cache = LayerCache()
    steps = []
    for t in range(4):
        given = memory if t == 0 else torch.zeros_like(memory)          # later steps read the cached projection
        steps.append(ours(queries[:, t:t + 1], given, given, padding_mask(IDS), cache=cache, static_kv=True)[0])
        assert cache.length == 6
    torch.testing.assert_close(torch.cat(steps, dim=1), full)


@pytest.mark.parametrize("block", [MultiHeadAttention, CachedMultiHeadAttention])
def test_attention_dropout_acts_in_training_only(block):
    torch.manual_seed(0)
    dropping, plain = block(16, 4, dropout=0.5), block(16, 4)
    plain.load_state_dict(dropping.state_dict())
    x = torch.randn(2, 6, 16)
    dropping.eval(), plain.eval()
    torch.testing.assert_close(dropping(x, x, x)[0], plain(x, x, x)[0])
    torch.testing.assert_close(dropping(x, x, x)[0], dropping(x, x, x)[0])
    dropping.train()
    out, weights = dropping(x, x, x, **({} if block is MultiHeadAttention else {"need_weights": True}))
    assert not torch.allclose(out, plain(x, x, x)[0])
    assert set(weights.unique().tolist()) >= {0.0} and (weights == 0).float().mean() > 0.3   # about half dropped
