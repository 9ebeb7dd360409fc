"""Lesson 09's parts, each equal to its reference; the GPT with every switch causal and cache-exact; the ablation."""
import math
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.ablation import (
    BASELINE,
    VARIANTS,
    AblationConfig,
    mean_and_standard_error,
    run_variant,
    stored_results,
    summarise,
    train_and_score,
    verdict,
)
from course_utils.attention import MultiHeadAttention
from course_utils.config import TransformerConfig, check_kv_heads, count_parameters
from course_utils.data.lm_data import LMData
from course_utils.errors import CourseTypeError, CourseValueError
from course_utils.kv_cache import CachedMultiHeadAttention, KVCache
from course_utils.language_model import DecoderOnlyLM
from course_utils.layers import DecoderLayer, PositionwiseFeedForward
from course_utils.masks import causal_mask
from course_utils.modern import (
    MODERN_SWITCHES,
    GroupedQueryAttention,
    RMSNorm,
    SwiGLUFeedForward,
    apply_rotary,
    check_positions,
    kv_cache_bytes,
    make_attention,
    make_norm,
    modern_config,
    repeat_kv,
    rope_frequencies,
    rotary_embedding,
    rotate_half,
    swiglu_hidden_size,
)


# ---------------------------------------------------------------------------- RoPE
def complex_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Reference: pair i = (x_i, x_{i + d/2}) as the complex number x_i + i·x_{i+d/2}, times e^{i m θ_i}."""
    half = x.size(-1) // 2
    theta = base ** (-torch.arange(half, dtype=torch.float64) * 2 / x.size(-1))
    z = torch.complex(x[..., :half].double(), x[..., half:].double())
    rotated = z * torch.polar(torch.ones_like(theta), positions.double()[:, None] * theta)
    return torch.cat([rotated.real, rotated.imag], dim=-1).to(x.dtype)


@pytest.mark.parametrize("base", [10000.0, 500.0])
def test_rope_equals_the_complex_number_reference(base):
    q, k = torch.randn(2, 4, 9, 16), torch.randn(2, 2, 9, 16)     # fewer K/V heads, as under GQA
    positions = torch.arange(3, 12)
    q_rot, k_rot = apply_rotary(q, k, positions, base)
    torch.testing.assert_close(q_rot, complex_rope(q, positions, base))
    torch.testing.assert_close(k_rot, complex_rope(k, positions, base))


def test_rope_keeps_norms_and_position_zero_is_the_identity():
    q, k = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    q_rot, k_rot = apply_rotary(q, k, torch.arange(5))
    torch.testing.assert_close(q_rot.norm(dim=-1), q.norm(dim=-1))
    torch.testing.assert_close(k_rot.norm(dim=-1), k.norm(dim=-1))
    torch.testing.assert_close(q_rot[:, :, 0], q[:, :, 0])
    torch.testing.assert_close(k_rot[:, :, 0], k[:, :, 0])


def test_rope_score_depends_only_on_the_offset():
    q, k = torch.randn(1, 1, 1, 32), torch.randn(1, 1, 1, 32)

    def score(m, n):
        q_m, _ = apply_rotary(q, q, torch.tensor([m]))
        _, k_n = apply_rotary(k, k, torch.tensor([n]))
        return float((q_m * k_n).sum())

    for offset in (0, 3, -5, 17):
        scores = [score(m, m - offset) for m in range(max(offset, 0), max(offset, 0) + 40, 7)]
        assert max(scores) - min(scores) < 1e-4, (offset, scores)
    assert abs(score(10, 7) - score(10, 2)) > 1e-3     # a different offset gives a different score


def test_rope_frequencies_table_and_rotate_half():
    torch.testing.assert_close(rope_frequencies(4, 100.0), torch.tensor([1.0, 0.1]))
    cos, sin = rotary_embedding(torch.arange(3), 4)
    assert cos.shape == sin.shape == (3, 4)
    torch.testing.assert_close(cos[:, :2], cos[:, 2:])
    torch.testing.assert_close(cos[0], torch.ones(4))
    assert rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0])).tolist() == [-3.0, -4.0, 1.0, 2.0]


@pytest.mark.parametrize("call, error", [
    (lambda: rope_frequencies(7), CourseValueError),
    (lambda: rope_frequencies(8, 1.0), CourseValueError),
    (lambda: apply_rotary(torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.arange(5)), CourseValueError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 4, 8), torch.arange(5)), CourseValueError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.arange(4)), CourseValueError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.arange(5.0)), CourseTypeError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), [0, 1, 2, 3, 4]), CourseTypeError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.arange(-1, 4)), CourseValueError),
    (lambda: check_positions(torch.arange(6).view(2, 3)), CourseValueError),
    (lambda: check_positions(torch.ones(3, dtype=torch.bool)), CourseTypeError),
])
def test_rope_bad_input(call, error):
    with pytest.raises(error):
        call()


# ---------------------------------------------------------------------------- RMSNorm
@pytest.mark.parametrize("eps", [None, 1e-6, 0.5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rmsnorm_equals_torch(eps, dtype):
    ours, theirs = RMSNorm(12, eps=eps).to(dtype), nn.RMSNorm(12, eps=eps).to(dtype)
    with torch.no_grad():
        theirs.weight.copy_(torch.randn(12, dtype=dtype))
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(3, 5, 12, dtype=dtype) * torch.tensor([1e-4, 1.0, 30.0], dtype=dtype)[:, None, None]
    torch.testing.assert_close(ours(x), theirs(x))


def test_rmsnorm_bad_input():
    norm = RMSNorm(8)
    with pytest.raises(CourseValueError, match="d_model=8"):
        norm(torch.randn(2, 3, 7))
    with pytest.raises(CourseTypeError):
        norm(torch.ones(2, 8, dtype=torch.long))
    with pytest.raises(CourseTypeError):
        norm(torch.randn(2, 8, dtype=torch.float64))
    with pytest.raises(CourseValueError):
        RMSNorm(8, eps=-1.0)


def test_make_norm():
    assert isinstance(make_norm("rmsnorm", 8), RMSNorm)
    layer_norm = make_norm("layernorm", 8, bias=False)
    assert isinstance(layer_norm, nn.LayerNorm) and layer_norm.bias is None
    assert make_norm("layernorm", 8).bias is not None
    with pytest.raises(CourseValueError):
        make_norm("batchnorm", 8)


# ---------------------------------------------------------------------------- SwiGLU
def test_swiglu_matches_the_bias_free_relu_ffn_parameter_count_and_formula():
    for d_model, d_ff in ((64, 256), (48, 200), (128, 512)):
        relu = count_parameters(PositionwiseFeedForward(d_model, d_ff, bias=False))
        swiglu = count_parameters(SwiGLUFeedForward(d_model, swiglu_hidden_size(d_ff)))
        assert relu == 2 * d_model * d_ff
        assert abs(swiglu - relu) <= 1.5 * d_model      # rounding 2·d_ff/3 to an int costs at most 1.5 d_model
    assert SwiGLUFeedForward(16).gate.out_features == swiglu_hidden_size(64)
    assert all(m.bias is None for m in (SwiGLUFeedForward(6, 4).gate, SwiGLUFeedForward(6, 4).down))
    torch.manual_seed(0)
    ffn = SwiGLUFeedForward(6, 4)
    x = torch.randn(2, 3, 6)
    expected = (F.silu(x @ ffn.gate.weight.T) * (x @ ffn.up.weight.T)) @ ffn.down.weight.T
    torch.testing.assert_close(ffn(x), expected)
    with pytest.raises(CourseValueError):
        ffn(torch.randn(2, 3, 5))


# ---------------------------------------------------------------------------- grouped-query attention
def test_n_kv_heads_equal_to_n_heads_is_the_plain_multi_head_attention():
    plain = MultiHeadAttention(16, 4).eval()
    grouped = GroupedQueryAttention(16, 4, n_kv_heads=4).eval()
    assert {k: v.shape for k, v in plain.state_dict().items()} == {k: v.shape for k, v in grouped.state_dict().items()}
    grouped.load_state_dict(plain.state_dict())
    x = torch.randn(2, 6, 16)
    for mask in (None, causal_mask(6)):
        torch.testing.assert_close(grouped(x, x, x, mask)[0], plain(x, x, x, mask)[0])
        torch.testing.assert_close(grouped(x, x, x, mask, need_weights=True)[1], plain(x, x, x, mask)[1])


def test_grouped_query_attention_is_built_in_the_order_of_lesson_03s_block():
    """Same random draws as before the blocks were split by lesson: a seeded model keeps its initial weights."""
    for kwargs in ({}, {"n_kv_heads": 4}, {"rope_base": 100.0}):
        torch.manual_seed(0)
        grouped = GroupedQueryAttention(16, 4, **kwargs)
        torch.manual_seed(0)
        plain = MultiHeadAttention(16, 4)
        for name, tensor in plain.state_dict().items():
            torch.testing.assert_close(grouped.state_dict()[name], tensor, rtol=0, atol=0)
    assert type(make_attention(16, 4)) is CachedMultiHeadAttention
    assert type(make_attention(16, 4, n_kv_heads=4)) is CachedMultiHeadAttention
    assert type(make_attention(16, 4, n_kv_heads=2)) is GroupedQueryAttention
    assert type(make_attention(16, 4, rope_base=10000.0)) is GroupedQueryAttention


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_gqa_fast_path_math_path_sdpa_enable_gqa_and_repeated_heads_agree(n_kv_heads):
    attention = GroupedQueryAttention(32, 4, bias=False, n_kv_heads=n_kv_heads).eval()
    assert attention.w_k.out_features == attention.w_v.out_features == n_kv_heads * 8
    x = torch.randn(2, 7, 32)
    q = attention.split_heads(attention.w_q(x))
    k = attention.split_kv_heads(attention.w_k(x))
    v = attention.split_kv_heads(attention.w_v(x))
    assert q.shape == (2, 4, 7, 8) and k.shape == v.shape == (2, n_kv_heads, 7, 8)
    mask = causal_mask(7)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    groups = 4 // n_kv_heads
    repeated = F.scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups), attn_mask=mask)
    torch.testing.assert_close(fused, repeated)
    expected = attention.w_o(fused.transpose(1, 2).reshape(2, 7, 32))
    with torch.no_grad():
        fast, no_weights = attention(x, x, x, mask)
        math_out, weights = attention(x, x, x, mask, need_weights=True)
        attention.use_fast_path = False
        slow, _ = attention(x, x, x, mask)
    assert no_weights is None and weights.shape == (2, 4, 7, 7)
    for out in (fast, math_out, slow):
        torch.testing.assert_close(out, expected)


def test_repeat_kv_order():
    kv = torch.arange(2.0).view(1, 2, 1, 1)
    assert repeat_kv(kv, 3).flatten().tolist() == [0, 0, 0, 1, 1, 1]


def test_rope_attention_rotates_queries_and_keys_with_its_base():
    attention = GroupedQueryAttention(16, 2, bias=False, rope_base=500.0).eval()
    x = torch.randn(2, 6, 16)
    q = attention.split_heads(attention.w_q(x))
    k = attention.split_heads(attention.w_k(x))
    v = attention.split_heads(attention.w_v(x))
    q, k = apply_rotary(q, k, torch.arange(6), base=500.0)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(6))
    expected = attention.w_o(out.transpose(1, 2).reshape(2, 6, 16))
    with torch.no_grad():
        torch.testing.assert_close(attention(x, x, x, causal_mask(6))[0], expected)


def test_gqa_bad_input():
    with pytest.raises(CourseValueError, match="does not divide"):
        GroupedQueryAttention(32, 4, n_kv_heads=3)
    with pytest.raises(CourseValueError):
        GroupedQueryAttention(32, 4, n_kv_heads=0)
    with pytest.raises(CourseValueError, match="does not divide"):
        check_kv_heads(4, 3)
    with pytest.raises(CourseValueError, match="even"):
        GroupedQueryAttention(12, 4, rope_base=10000.0)
    with pytest.raises(CourseValueError, match="rope_base"):
        GroupedQueryAttention(16, 4, rope_base=0.5)
    attention = GroupedQueryAttention(16, 4, n_kv_heads=2)
    x = torch.randn(2, 5, 16)
    with pytest.raises(CourseValueError, match="d_model=16"):
        attention(torch.randn(2, 5, 12), x, x)
    with pytest.raises(CourseValueError, match="4-D"):
        attention(x, x, x, torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(CourseValueError, match="broadcast"):
        attention(x[:1], x[:1], x[:1], torch.ones(3, 1, 1, 5, dtype=torch.bool))
    with pytest.raises(CourseTypeError, match="bool"):
        attention(x[:1], x[:1], x[:1], torch.ones(1, 1, 5, 5))
    with pytest.raises(CourseValueError, match="with 8 in the last dimension"):
        attention.split_kv_heads(x)


def test_rope_attention_refuses_cross_attention():
    attention = GroupedQueryAttention(16, 4, rope_base=10000.0)
    query, memory = torch.randn(2, 3, 16), torch.randn(2, 5, 16)
    with pytest.raises(CourseValueError, match="self-attention only"):
        attention(query, memory, memory)
    with pytest.raises(CourseValueError, match="self-attention only"):
        attention(query, query, query, static_kv=True)


def test_decoder_layer_rotates_its_self_attention_only():
    layer = DecoderLayer(16, 4, 32, dropout=0.0, rope_base=500.0).eval()
    assert layer.self_attn.rope_base == 500.0
    assert type(layer.cross_attn) is CachedMultiHeadAttention                    # no RoPE, no grouped heads
    y, memory = torch.randn(2, 3, 16), torch.randn(2, 5, 16)     # different lengths: cross-attention must not rotate
    assert layer(y, memory, causal_mask(3)).shape == (2, 3, 16)


# ---------------------------------------------------------------------------- the GPT with lesson 09's switches
SMALL = AblationConfig(baseline=replace(BASELINE, d_model=16, n_heads=4, d_ff=32, n_layers=2, max_len=12))


def variant_model(name: str, vocab_size: int = 50, **changes) -> DecoderOnlyLM:
    torch.manual_seed(0)
    config = SMALL.model_config(name, vocab_size)
    return DecoderOnlyLM(replace(config, **changes) if changes else config).eval()


def random_ids(batch: int, seq: int, vocab_size: int = 50) -> torch.Tensor:
    return torch.randint(1, vocab_size, (batch, seq))            # no pad_id (0): a cache does not mask padding


def test_every_variant_differs_from_the_baseline_in_its_fields_only():
    baseline = SMALL.model_config("baseline", 50)
    assert (baseline.norm, baseline.positional, baseline.bias, baseline.dropout) == ("pre", "learned", False, 0.0)
    for name, changes in VARIANTS.items():
        config = SMALL.model_config(name, 50)
        assert replace(baseline, **changes) == config, name
    with pytest.raises(CourseValueError):
        SMALL.model_config("+ ALiBi", 50)


def test_swiglu_variant_keeps_the_parameter_budget():
    setup = AblationConfig()
    counts = {name: count_parameters(DecoderOnlyLM(setup.model_config(name, 512))) for name in VARIANTS}
    base = setup.baseline
    assert abs(counts["+ SwiGLU"] - counts["baseline"]) <= 1.5 * base.d_model * base.n_layers
    assert counts["+ RoPE"] == counts["baseline"] - base.max_len * base.d_model   # no position table
    assert counts["+ GQA (2 K/V heads)"] < counts["baseline"]


@pytest.mark.parametrize("name", VARIANTS)
def test_future_tokens_never_change_earlier_logits(name):
    model = variant_model(name)
    ids = random_ids(2, 12)
    changed = ids.clone()
    changed[:, 7:] = random_ids(2, 5)
    with torch.no_grad():
        before, after = model(ids), model(changed)
    torch.testing.assert_close(before[:, :7], after[:, :7], rtol=0, atol=0)
    assert not torch.allclose(before[:, 7:], after[:, 7:])


@pytest.mark.parametrize("name", VARIANTS)
def test_kv_cache_equals_full_recompute(name):
    model = variant_model(name)
    ids = random_ids(2, 10)
    cache = model.new_cache()
    assert isinstance(cache, KVCache) and cache.length == 0
    with torch.no_grad():
        full = model(ids)
        steps = [model(ids[:, :4], cache)] + [model(ids[:, t:t + 1], cache) for t in range(4, 10)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert cache.length == 10


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_modern_kv_cache_equals_full_recompute_and_its_size_formula(n_kv_heads):
    model = DecoderOnlyLM(modern_config(50, d_model=32, n_heads=4, d_ff=48, n_layers=2, max_len=20,
                                        dropout=0.0, n_kv_heads=n_kv_heads)).eval()
    ids = random_ids(3, 20)
    cache = model.new_cache()
    with torch.no_grad():
        full = model(ids)
        steps = [model(ids[:, :8], cache)] + [model(ids[:, t:t + 1], cache) for t in range(8, 20)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert cache.length == 20
    assert cache.self_attention[0].keys.shape == (3, n_kv_heads, 20, 8)
    assert cache.nbytes == kv_cache_bytes(3, 20, 2, n_kv_heads, 8)
    assert cache.nbytes * (4 // n_kv_heads) == kv_cache_bytes(3, 20, 2, 4, 8)   # MHA : GQA : MQA = 4 : 2 : 1


def test_config_switches_build_the_expected_modules():
    sizes = dict(d_model=16, n_heads=4, d_ff=24, norm="pre")
    base = DecoderOnlyLM(TransformerConfig(10, **sizes))
    block = base.blocks[0]
    assert isinstance(block.attn_block.norm, nn.LayerNorm) and isinstance(block.ff_block.norm, nn.LayerNorm)
    assert isinstance(base.norm, nn.LayerNorm)
    assert isinstance(block.feed_forward, PositionwiseFeedForward)
    assert base.embedding.positions is not None
    assert type(block.self_attn) is CachedMultiHeadAttention                     # no RoPE, every head its K/V

    rms = DecoderOnlyLM(TransformerConfig(10, **sizes, normalization="rmsnorm"))
    assert all(isinstance(b.attn_block.norm, RMSNorm) and isinstance(b.ff_block.norm, RMSNorm) for b in rms.blocks)
    assert isinstance(rms.norm, RMSNorm) and isinstance(rms.blocks[0].feed_forward, PositionwiseFeedForward)

    swiglu = DecoderOnlyLM(TransformerConfig(10, **sizes, activation="swiglu"))
    assert all(isinstance(b.feed_forward, SwiGLUFeedForward) for b in swiglu.blocks)
    assert swiglu.blocks[0].feed_forward.gate.out_features == 24
    assert isinstance(swiglu.blocks[0].attn_block.norm, nn.LayerNorm)

    rope = DecoderOnlyLM(TransformerConfig(10, **sizes, positional="rope"))
    assert rope.embedding.positions is None
    assert all(b.self_attn.rope_base == 10000.0 for b in rope.blocks)

    gqa = DecoderOnlyLM(TransformerConfig(10, **sizes, n_kv_heads=2))
    assert all(b.self_attn.n_kv_heads == 2 and b.self_attn.w_k.out_features == 8 for b in gqa.blocks)

    bias_free = DecoderOnlyLM(TransformerConfig(10, **sizes, bias=False))
    assert not [name for name, _ in bias_free.named_parameters() if name.endswith("bias")]


def test_modern_config_turns_every_switch_on_and_lets_any_field_be_overridden():
    config = modern_config(10)
    assert (config.norm, config.bias, config.positional, config.normalization, config.activation) == (
        "pre", False, "rope", "rmsnorm", "swiglu")
    assert config.n_kv_heads == config.n_heads // 2
    assert all(getattr(config, field) == value for field, value in MODERN_SWITCHES.items())
    assert modern_config(10, n_heads=8, d_model=64).n_kv_heads == 4
    assert modern_config(10, n_heads=1, d_model=16).n_kv_heads == 1
    assert modern_config(10, n_kv_heads=1).n_kv_heads == 1
    assert modern_config(10, normalization="layernorm").normalization == "layernorm"
    plain = TransformerConfig(10, d_model=16)                  # n_kv_heads None: as many K/V heads as heads
    assert type(DecoderOnlyLM(plain).blocks[0].self_attn) is CachedMultiHeadAttention
    model = DecoderOnlyLM(modern_config(10, d_model=16, max_len=8))
    assert isinstance(model.blocks[0].attn_block.norm, RMSNorm)
    assert isinstance(model.blocks[0].feed_forward, SwiGLUFeedForward)
    assert model.embedding.positions is None and model.blocks[0].self_attn.n_kv_heads == 2


def test_config_rope_base_reaches_every_block_and_changes_the_output():
    usual = DecoderOnlyLM(modern_config(30, d_model=16, d_ff=24, n_layers=3, max_len=16, dropout=0.0)).eval()
    other = DecoderOnlyLM(modern_config(30, d_model=16, d_ff=24, n_layers=3, max_len=16, dropout=0.0,
                                        rope_base=50.0)).eval()
    assert all(b.self_attn.rope_base == 10000.0 for b in usual.blocks)
    assert all(b.self_attn.rope_base == 50.0 for b in other.blocks)
    other.load_state_dict(usual.state_dict())                  # same weights: only the base differs
    ids = random_ids(2, 16, 30)
    with torch.no_grad():
        assert not torch.allclose(usual(ids), other(ids), atol=1e-4)
    # each block's base matters on its own: changing only the last block's changes the output too
    other.load_state_dict(usual.state_dict())
    for block in other.blocks:
        block.self_attn.rope_base = 10000.0
    with torch.no_grad():
        torch.testing.assert_close(other(ids), usual(ids))
        other.blocks[-1].self_attn.rope_base = 50.0
        assert not torch.allclose(usual(ids), other(ids), atol=1e-4)
    # without RoPE the base is not handed to the attention at all
    learned = DecoderOnlyLM(TransformerConfig(30, d_model=16, n_heads=4, norm="pre", positional="learned",
                                              rope_base=50.0))
    assert not any(isinstance(b.self_attn, GroupedQueryAttention) for b in learned.blocks)


def test_right_padding_never_changes_the_real_positions():
    """Lesson 08's batches are right-padded: causality protects the real tokens from the padding after them."""
    model = DecoderOnlyLM(modern_config(30, d_model=16, max_len=10, dropout=0.0)).eval()
    ids = torch.randint(7, 30, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(model(padded)[:, :6], model(ids))


@pytest.mark.parametrize("kwargs, error", [
    ({"positional": "alibi"}, CourseValueError), ({"normalization": "batchnorm"}, CourseValueError),
    ({"activation": "geglu"}, CourseValueError), ({"n_kv_heads": 3}, CourseValueError),
    ({"n_kv_heads": 0}, CourseValueError), ({"n_kv_heads": 2.0}, CourseTypeError),
    ({"d_model": 30, "n_heads": 4}, CourseValueError), ({"dropout": 1.0}, CourseValueError),
    ({"d_model": 64.0}, CourseTypeError), ({"bias": "no"}, CourseTypeError),
    ({"rope_base": 1.0}, CourseValueError), ({"rope_base": "10000"}, CourseTypeError),
    ({"positional": "rope", "d_model": 12, "n_heads": 4}, CourseValueError),   # odd d_head = 3
    ({"norm": "sandwich"}, CourseValueError),
])
def test_config_bad_input(kwargs, error):
    with pytest.raises(error):
        TransformerConfig(10, **kwargs)
    with pytest.raises(error):
        modern_config(10, **kwargs)


def test_model_bad_input():
    model = DecoderOnlyLM(modern_config(10, d_model=16, max_len=8))
    with pytest.raises(CourseValueError, match=r"\[0, 10\)"):
        model(torch.full((1, 3), 10))
    with pytest.raises(CourseTypeError):
        model(torch.zeros(1, 3))
    with pytest.raises(CourseValueError):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(CourseValueError, match="max_len=8"):
        model(torch.ones(1, 9, dtype=torch.long))
    with pytest.raises(CourseTypeError, match="KVCache"):
        model(torch.ones(1, 3, dtype=torch.long), cache={})
    with pytest.raises(CourseTypeError):
        DecoderOnlyLM({"vocab_size": 10})
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.ones(1, 6, dtype=torch.long), cache)
    with pytest.raises(CourseValueError, match="max_len=8"):
        model(torch.ones(1, 3, dtype=torch.long), cache)         # positions 6..8 run past the context
    with pytest.raises(CourseValueError):
        model(torch.ones(2, 1, dtype=torch.long), cache)         # a cache for 1 row, a batch of 2


# ---------------------------------------------------------------------------- the ablation
def test_mean_and_standard_error():
    mean, error = mean_and_standard_error([1.0, 2.0, 3.0])
    assert mean == 2.0 and math.isclose(error, 1 / math.sqrt(3))
    assert mean_and_standard_error([4.0]) == (4.0, 0.0)
    with pytest.raises(CourseValueError):
        mean_and_standard_error([])


def test_summarise_and_verdict_need_a_difference_beyond_noise():
    runs = [{"variant": v, "seed": s, "validation_loss": loss, "parameters": 1}
            for v, losses in {"baseline": [4.0, 4.1, 4.2], "same": [4.01, 4.09, 4.21],
                              "better": [3.8, 3.9, 4.0], "worse": [4.5, 4.4, 4.6]}.items()
            for s, loss in enumerate(losses)]
    rows = {row["variant"]: row for row in summarise(runs)}
    assert list(rows) == ["baseline", "same", "better", "worse"]
    assert math.isclose(rows["baseline"]["mean"], 4.1) and rows["baseline"]["seeds"] == 3
    assert rows["baseline"]["vs_baseline"] == 0.0 and rows["baseline"]["vs_baseline_standard_error"] == 0.0
    assert math.isclose(rows["better"]["vs_baseline"], -0.2)
    assert math.isclose(rows["better"]["vs_baseline_standard_error"], 0.0, abs_tol=1e-12)   # paired by seed
    verdicts = {name: verdict(row) for name, row in rows.items()}
    assert verdicts == {"baseline": "within noise", "same": "within noise", "better": "better", "worse": "worse"}


def test_ablation_config_hash_is_stable_and_follows_every_setting():
    setup = AblationConfig()
    assert setup.hash() == AblationConfig().hash()
    assert len(setup.hash()) == 12 and int(setup.hash(), 16) >= 0
    changed = {replace(setup, steps=setup.steps + 1).hash(), replace(setup, seeds=(0, 1)).hash(),
               replace(setup, baseline=replace(setup.baseline, d_model=32)).hash(),
               replace(setup, learning_rates=(1e-3,)).hash(), replace(setup, window=16).hash(),
               replace(setup, variants={**VARIANTS, "+ RoPE": {"positional": "sinusoidal"}}).hash()}
    assert setup.hash() not in changed and len(changed) == 6
    assert len(setup.seeds) >= 3 and set(setup.variants) == set(VARIANTS) and len(setup.learning_rates) >= 3


@pytest.mark.parametrize("part", ["ablation", "windows"])
def test_committed_results_match_the_code_config(part):
    """Each variant's rate is the grid's best on validation for the tuning seed, and every seed ran at it."""
    results = stored_results()[part]
    rerun = f"rerun `python -m course_utils.ablation --part {part}`"
    setup = AblationConfig()
    variants = setup.variants if part == "ablation" else setup.window_variants
    assert results["config_hash"] == setup.hash(), f"the results were made with another AblationConfig: {rerun}"
    assert {(r["variant"], r["seed"]) for r in results["runs"]} == {(v, s) for v in variants for s in setup.seeds}
    assert {(t["variant"], t["lr"]) for t in results["tuning"]} == {(v, lr) for v in variants
                                                                    for lr in setup.learning_rates}
    for variant in variants:
        trials = [t for t in results["tuning"] if t["variant"] == variant]
        best = min(trials, key=lambda t: t["validation_loss"])["lr"]
        assert {r["lr"] for r in results["runs"] if r["variant"] == variant} == {best}, variant
    assert results["summary"] == summarise(results["runs"])


def tiny_lm_data(vocab_size: int = 40) -> LMData:
    generator = torch.Generator().manual_seed(0)
    documents = [[1] + torch.randint(7, vocab_size, (int(n),), generator=generator).tolist() + [2]
                 for n in torch.randint(3, 12, (48,), generator=generator)]
    return LMData(SimpleNamespace(vocab_size=vocab_size),
                  {"train": documents[:32], "validation": documents[32:40], "test": documents[40:]}, max_len=16)


def test_train_and_score_is_repeatable():
    data = tiny_lm_data()
    assert data.windows("validation", 8).shape[1] == 9
    config = modern_config(40, d_model=16, n_heads=4, d_ff=24, n_layers=1, max_len=16, dropout=0.0)
    runs = [train_and_score(config, data, steps=3, batch_size=8, warmup_steps=1, seed=seed) for seed in (0, 0, 1)]
    (model, first), (_, second), (_, other_seed) = runs
    assert isinstance(model, DecoderOnlyLM) and not model.training
    assert math.isfinite(first) and first == second
    assert other_seed != first


def test_run_variant_reports_the_validation_loss():
    setup = replace(SMALL, baseline=replace(SMALL.baseline, max_len=16), steps=2, batch_size=8, warmup_steps=1)
    run = run_variant(setup, "all modern", 0, tiny_lm_data())
    assert run["variant"] == "all modern" and run["seed"] == 0
    assert math.isfinite(run["validation_loss"]) and "held_out_loss" not in run
    assert run["parameters"] == count_parameters(DecoderOnlyLM(setup.model_config("all modern", 40)))


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_eval_mode_switches_attention_dropout_off_on_both_paths(n_kv_heads):
    """With dropout > 0, eval mode gives the deterministic output of the same weights without dropout."""
    config = modern_config(40, d_model=32, n_heads=4, n_kv_heads=n_kv_heads, max_len=16, dropout=0.5)
    torch.manual_seed(0)
    model = DecoderOnlyLM(config).eval()
    plain = DecoderOnlyLM(replace(config, dropout=0.0)).eval()
    plain.load_state_dict(model.state_dict())
    ids = torch.randint(1, 40, (2, 9))
    with torch.no_grad():
        for fast in (True, False):
            for module in (*model.modules(), *plain.modules()):
                if isinstance(module, CachedMultiHeadAttention):
                    module.use_fast_path = fast
            torch.testing.assert_close(model(ids), plain(ids))
            torch.testing.assert_close(model(ids), model(ids))
        model.train()
        assert not torch.allclose(model(ids), plain(ids))                # and in training it is on
