"""Lesson 09's blocks: each equal to its reference, causal, and refusing bad input with course errors."""
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.attention import MultiHeadAttention
from course_utils.errors import CourseTypeError, CourseValueError
from course_utils.masks import causal_mask
from course_utils.modern import (AblationConfig, GroupedQueryAttention, ModernBlock, ModernConfig,
                                 ModernDecoderLM, ReLUFeedForward, RMSNorm, SwiGLUFeedForward, apply_rotary,
                                 kv_cache_bytes, mean_and_standard_error, repeat_kv, rope_frequencies,
                                 rotary_embedding, summarise, swiglu_hidden_size, verdict)

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "ablation_results.json"


# ---------------------------------------------------------------------------- RoPE
def complex_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Reference: pair i = (x_i, x_{i + d/2}) as the complex number x_i + i·x_{i+d/2}, times e^{i m θ_i}."""
    half = x.size(-1) // 2
    theta = base ** (-torch.arange(half, dtype=torch.float64) * 2 / x.size(-1))
    z = torch.complex(x[..., :half].double(), x[..., half:].double())
    rotated = z * torch.polar(torch.ones_like(theta), positions.double()[:, None] * theta)
    return torch.cat([rotated.real, rotated.imag], dim=-1).to(x.dtype)


def test_rope_equals_the_complex_number_reference():
    torch.manual_seed(0)
    q, k = torch.randn(2, 4, 9, 16), torch.randn(2, 2, 9, 16)
    positions = torch.arange(3, 12)
    q_rot, k_rot = apply_rotary(q, k, positions)
    torch.testing.assert_close(q_rot, complex_rope(q, positions))
    torch.testing.assert_close(k_rot, complex_rope(k, positions))


def test_rope_keeps_norms_and_position_zero_is_the_identity():
    torch.manual_seed(0)
    q, k = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    q_rot, k_rot = apply_rotary(q, k, torch.arange(5))
    torch.testing.assert_close(q_rot.norm(dim=-1), q.norm(dim=-1))
    torch.testing.assert_close(q_rot[:, :, 0], q[:, :, 0])


def test_rope_score_depends_only_on_the_offset():
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 1, 32), torch.randn(1, 1, 1, 32)

    def score(m, n):
        q_m, _ = apply_rotary(q, q, torch.tensor([m]))
        _, k_n = apply_rotary(k, k, torch.tensor([n]))
        return float((q_m * k_n).sum())

    for offset in (0, 3, -5, 17):
        scores = [score(m, m - offset) for m in range(max(offset, 0), max(offset, 0) + 40, 7)]
        assert max(scores) - min(scores) < 1e-4, (offset, scores)
    assert abs(score(10, 7) - score(10, 2)) > 1e-3     # a different offset gives a different score


def test_rope_frequencies_and_table():
    torch.testing.assert_close(rope_frequencies(4, 100.0), torch.tensor([1.0, 0.1]))
    cos, sin = rotary_embedding(torch.arange(3), 4)
    assert cos.shape == sin.shape == (3, 4)
    torch.testing.assert_close(cos[:, :2], cos[:, 2:])


@pytest.mark.parametrize("call, error", [
    (lambda: rope_frequencies(7), CourseValueError),
    (lambda: apply_rotary(torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.arange(5)), CourseValueError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 4, 8), torch.arange(5)), CourseValueError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.arange(4)), CourseValueError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.arange(5.0)), CourseTypeError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), [0, 1, 2, 3, 4]), CourseTypeError),
    (lambda: apply_rotary(torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8), torch.arange(-1, 4)), CourseValueError),
])
def test_rope_bad_input(call, error):
    with pytest.raises(error):
        call()


# ---------------------------------------------------------------------------- RMSNorm
@pytest.mark.parametrize("eps", [None, 1e-6, 0.5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rmsnorm_equals_torch(eps, dtype):
    torch.manual_seed(0)
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


# ---------------------------------------------------------------------------- SwiGLU
def test_swiglu_matches_the_relu_ffn_parameter_count_and_formula():
    for d_model, d_ff in ((64, 256), (48, 200), (128, 512)):
        relu = sum(p.numel() for p in ReLUFeedForward(d_model, d_ff).parameters())
        swiglu = sum(p.numel() for p in SwiGLUFeedForward(d_model, swiglu_hidden_size(d_ff)).parameters())
        assert relu == 2 * d_model * d_ff
        assert abs(swiglu - relu) <= 1.5 * d_model      # rounding 2·d_ff/3 to an int costs at most 1.5 d_model
    torch.manual_seed(0)
    ffn = SwiGLUFeedForward(6, 4)
    x = torch.randn(2, 3, 6)
    expected = (F.silu(x @ ffn.gate.weight.T) * (x @ ffn.up.weight.T)) @ ffn.down.weight.T
    torch.testing.assert_close(ffn(x), expected)


# ---------------------------------------------------------------------------- grouped-query attention
def test_multi_head_case_equals_the_course_attention_with_copied_weights():
    torch.manual_seed(0)
    ours = GroupedQueryAttention(16, 4).eval()
    course = MultiHeadAttention(16, 4, bias=False).eval()
    course.load_state_dict(ours.state_dict())
    x = torch.randn(2, 6, 16)
    for mask in (None, causal_mask(6)):
        torch.testing.assert_close(ours(x, mask), course(x, x, x, mask)[0])


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_gqa_equals_sdpa_enable_gqa_and_repeated_heads(n_kv_heads):
    torch.manual_seed(0)
    attention = GroupedQueryAttention(32, 4, n_kv_heads).eval()
    x = torch.randn(2, 7, 32)
    q = attention.split(attention.w_q(x), 4)
    k = attention.split(attention.w_k(x), n_kv_heads)
    v = attention.split(attention.w_v(x), n_kv_heads)
    mask = causal_mask(7)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    groups = 4 // n_kv_heads
    repeated = F.scaled_dot_product_attention(q, k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1),
                                              attn_mask=mask)
    torch.testing.assert_close(fused, repeated)
    expected = attention.w_o(fused.transpose(1, 2).reshape(2, 7, 32))
    torch.testing.assert_close(attention(x, mask), expected)
    attention.use_fast_path = False
    torch.testing.assert_close(attention(x, mask), expected)


def test_repeat_kv_order():
    kv = torch.arange(2.0).view(1, 2, 1, 1)
    assert repeat_kv(kv, 3).flatten().tolist() == [0, 0, 0, 1, 1, 1]


def test_gqa_bad_input():
    with pytest.raises(CourseValueError, match="does not divide"):
        GroupedQueryAttention(32, 4, 3)
    with pytest.raises(CourseValueError, match="even"):
        GroupedQueryAttention(12, 4, rope=True)
    attention = GroupedQueryAttention(16, 4, 2)
    with pytest.raises(CourseValueError, match="d_model=16"):
        attention(torch.randn(2, 5, 12))
    with pytest.raises(CourseValueError, match="4-D"):
        attention(torch.randn(2, 5, 16), torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(CourseValueError, match="broadcast"):
        attention(torch.randn(1, 5, 16), torch.ones(3, 1, 1, 5, dtype=torch.bool))
    with pytest.raises(CourseTypeError, match="bool"):
        attention(torch.randn(1, 5, 16), torch.ones(1, 1, 5, 5))


# ---------------------------------------------------------------------------- the model: cache, leakage, config
CONFIGS = {"baseline": {}, "sinusoidal": {"position": "sinusoidal"}, "rope": {"position": "rope"},
           "all modern": {"position": "rope", "norm": "rmsnorm", "feed_forward": "swiglu", "n_kv_heads": 1}}


@pytest.mark.parametrize("name", CONFIGS)
def test_future_tokens_never_change_earlier_logits(name):
    torch.manual_seed(0)
    model = ModernDecoderLM(ModernConfig(50, d_model=16, n_heads=4, d_ff=32, max_len=12, **CONFIGS[name])).eval()
    ids = torch.randint(0, 50, (2, 12))
    changed = ids.clone()
    changed[:, 7:] = torch.randint(0, 50, (2, 5))
    with torch.no_grad():
        torch.testing.assert_close(model(ids)[:, :7], model(changed)[:, :7], rtol=0, atol=0)
        assert not torch.allclose(model(ids)[:, 7:], model(changed)[:, 7:])


@pytest.mark.parametrize("name", CONFIGS)
def test_kv_cache_equals_full_recompute(name):
    torch.manual_seed(0)
    model = ModernDecoderLM(ModernConfig(50, d_model=16, n_heads=4, d_ff=32, max_len=10, **CONFIGS[name])).eval()
    ids = torch.randint(0, 50, (2, 10))
    cache = model.new_cache()
    with torch.no_grad():
        full = model(ids)
        steps = [model(ids[:, :4], cache)] + [model(ids[:, t:t + 1], cache) for t in range(4, 10)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert cache.length == 10


def test_kv_cache_bytes_for_mha_gqa_mqa():
    torch.manual_seed(0)
    measured = {}
    for n_kv_heads in (4, 2, 1):
        model = ModernDecoderLM(ModernConfig(50, d_model=32, n_heads=4, n_kv_heads=n_kv_heads, max_len=20)).eval()
        cache = model.new_cache()
        with torch.no_grad():
            model(torch.randint(0, 50, (3, 20)), cache)
        measured[n_kv_heads] = cache.nbytes
        assert cache.nbytes == kv_cache_bytes(3, 20, 2, n_kv_heads, 8)
    assert measured[4] == 2 * measured[2] == 4 * measured[1]


def test_block_switches_change_only_their_part():
    base = ModernBlock(ModernConfig(10))
    assert isinstance(base.attn_norm, nn.LayerNorm) and isinstance(base.feed_forward, ReLUFeedForward)
    assert not base.attn.rope and base.attn.n_kv_heads == 4
    swapped = ModernBlock(ModernConfig(10, norm="rmsnorm"))
    assert isinstance(swapped.attn_norm, RMSNorm) and isinstance(swapped.feed_forward, ReLUFeedForward)
    modern = ModernConfig.modern(10)
    assert (modern.position, modern.norm, modern.feed_forward, modern.n_kv_heads) == ("rope", "rmsnorm", "swiglu", 2)


def test_learned_positions_refuse_positions_past_max_len_while_rope_does_not():
    learned = ModernDecoderLM(ModernConfig(20, d_model=16, max_len=8))
    with pytest.raises(CourseValueError, match="exceeds max_len=8"):
        learned(torch.zeros(1, 9, dtype=torch.long))
    rope = ModernDecoderLM(ModernConfig(20, d_model=16, max_len=8, position="rope"))
    assert rope(torch.zeros(1, 9, dtype=torch.long)).shape == (1, 9, 20)


@pytest.mark.parametrize("kwargs, error", [
    ({"position": "alibi"}, CourseValueError), ({"norm": "batchnorm"}, CourseValueError),
    ({"feed_forward": "geglu"}, CourseValueError), ({"n_kv_heads": 3}, CourseValueError),
    ({"n_kv_heads": 0}, CourseValueError), ({"d_model": 30, "n_heads": 4}, CourseValueError),
    ({"dropout": 1.0}, CourseValueError), ({"d_model": 64.0}, CourseTypeError),
])
def test_config_bad_input(kwargs, error):
    with pytest.raises(error):
        ModernConfig(10, **kwargs)


def test_model_bad_input():
    model = ModernDecoderLM(ModernConfig(10, d_model=16, max_len=8))
    with pytest.raises(CourseValueError, match=r"\[0, 10\)"):
        model(torch.full((1, 3), 10))
    with pytest.raises(CourseTypeError):
        model(torch.zeros(1, 3))
    with pytest.raises(CourseValueError):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(CourseTypeError, match="KVCache"):
        model(torch.zeros(1, 3, dtype=torch.long), cache={})
    with pytest.raises(CourseTypeError):
        ModernDecoderLM({"vocab_size": 10})


# ---------------------------------------------------------------------------- the ablation's statistics and file
def test_mean_and_standard_error():
    mean, error = mean_and_standard_error([1.0, 2.0, 3.0])
    assert mean == 2.0 and math.isclose(error, 1 / math.sqrt(3))


def test_verdict_needs_a_difference_beyond_noise():
    runs = [{"variant": v, "seed": s, "held_out_loss": loss, "parameters": 1}
            for v, losses in {"baseline": [4.0, 4.1, 4.2], "same": [4.01, 4.09, 4.21],
                              "better": [3.8, 3.9, 4.0], "worse": [4.5, 4.4, 4.6]}.items()
            for s, loss in enumerate(losses)]
    verdicts = {row["variant"]: verdict(row) for row in summarise(runs)}
    assert verdicts == {"baseline": "within noise", "same": "within noise", "better": "better", "worse": "worse"}


def test_committed_ablation_results_match_the_code_config():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert results["config_hash"] == AblationConfig().hash(), (
        "benchmarks/ablation_results.json was made with another AblationConfig: rerun "
        "`python -m course_utils.modern ablation --out benchmarks/ablation_results.json`")
    setup = AblationConfig()
    assert {(r["variant"], r["seed"]) for r in results["runs"]} == {(v, s) for v in setup.variants
                                                                    for s in setup.seeds}
    assert len(setup.seeds) >= 3
    assert results["summary"] == summarise(results["runs"])


def test_right_padding_never_changes_the_real_positions():
    """Lesson 08's batches are right-padded and the model has no padding mask: causality alone must protect them."""
    torch.manual_seed(0)
    model = ModernDecoderLM(ModernConfig.modern(30, d_model=16, max_len=10)).eval()
    ids = torch.randint(7, 30, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(model(padded)[:, :6], model(ids))


def test_training_on_lesson_08_sequences_is_repeatable():
    from types import SimpleNamespace

    from course_utils.modern import train_on_documents

    generator = torch.Generator().manual_seed(0)
    sequences = [[5] + torch.randint(7, 40, (int(n),), generator=generator).tolist() + [6]
                 for n in torch.randint(3, 12, (40,), generator=generator)]
    data = SimpleNamespace(train=sequences[:32], validation=sequences[32:])
    config = ModernConfig.modern(40, d_model=16, max_len=16)
    (_, first), (_, second) = (train_on_documents(config, data, steps=3, batch_size=8) for _ in range(2))
    assert math.isfinite(first) and first == second
