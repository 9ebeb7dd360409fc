"""Attention equals PyTorch's own, never produces NaN, and has correct gradients."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.attention import MultiHeadAttention, capture_attention, scaled_dot_product_attention
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
    torch.manual_seed(0)
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


def torch_attention(d_model=16, n_heads=4):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=True).eval()
    ours = MultiHeadAttention(d_model, n_heads).eval()
    copy_attention(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("fast_path", [False, True])
def test_multi_head_self_attention_matches_pytorch(fast_path):
    ours, theirs = torch_attention()
    ours.use_fast_path = fast_path
    x = torch.randn(2, 6, 16)
    keep = combine_masks(padding_mask(IDS), causal_mask(6))
    expected, expected_weights = theirs(x, x, x, attn_mask=~causal_mask(6)[0, 0], key_padding_mask=IDS == 0,
                                        average_attn_weights=False)
    out, _ = ours(x, x, x, keep)
    torch.testing.assert_close(out, expected)
    _, weights = ours(x, x, x, keep, need_weights=True)
    torch.testing.assert_close(weights, expected_weights)


def test_multi_head_cross_attention_matches_pytorch():
    ours, theirs = torch_attention()
    queries, memory = torch.randn(2, 3, 16), torch.randn(2, 6, 16)
    expected, expected_weights = theirs(queries, memory, memory, key_padding_mask=IDS == 0,
                                        average_attn_weights=False)
    out, weights = ours(queries, memory, memory, padding_mask(IDS), need_weights=True)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, expected_weights)
    assert weights.shape == (2, 4, 3, 6)
    assert torch.all(weights[1, :, :, 3:] == 0), "padded memory positions must get zero weight"


def test_fast_path_equals_math_path_with_padding():
    ours, _ = torch_attention()
    x = torch.randn(2, 6, 16)
    mask = padding_mask(IDS)
    ours.use_fast_path = True
    fast, _ = ours(x, x, x, mask)
    ours.use_fast_path = False
    math_path, _ = ours(x, x, x, mask)
    torch.testing.assert_close(fast, math_path)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("fast_path", [False, True])
def test_fully_masked_rows_are_finite_and_zero(dtype, fast_path):
    attention = MultiHeadAttention(16, 4, use_fast_path=fast_path).to(dtype)
    x = torch.randn(2, 5, 16, dtype=dtype)
    mask = torch.zeros(2, 1, 1, 5, dtype=torch.bool)  # every key hidden
    out, _ = attention(x, x, x, mask)
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
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 3, 4, dtype=torch.double, requires_grad=True) for _ in range(3))
    mask = causal_mask(3)
    assert torch.autograd.gradcheck(lambda a, b, c: scaled_dot_product_attention(a, b, c, mask)[0], (q, k, v))


def test_capture_attention_records_every_module_and_cleans_up():
    model = nn.Sequential()
    model.add_module("first", MultiHeadAttention(8, 2))
    x = torch.randn(1, 4, 8)
    with capture_attention(model) as maps:
        model.first(x, x, x)
    assert set(maps) == {"first"} and maps["first"].shape == (1, 2, 4, 4)
    assert model.first.capture is False


def test_kv_cache_self_attention_matches_full_computation():
    ours, _ = torch_attention()
    x = torch.randn(2, 5, 16)
    full, _ = ours(x, x, x, causal_mask(5))
    cache = {}
    steps = [ours(x[:, t:t + 1], x[:, t:t + 1], x[:, t:t + 1], None, cache=cache)[0] for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
