"""Reference solutions of lesson 09's exercises: what `qN.solution()` shows (see core.solution_of)."""


import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.modern import apply_rotary


def geglu(x, w_gate, w_up, w_down):
    hidden = F.gelu(x @ w_gate.T, approximate="tanh") * (x @ w_up.T)      # GELU gate instead of SiLU
    return hidden @ w_down.T


def rotate_new(q, k, cache_length, base=10000.0):
    positions = torch.arange(cache_length, cache_length + q.size(-2))    # right after the cached tokens
    return apply_rotary(q, k, positions, base)


class FusedModernBlock(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.heads, self.kv_heads, self.d_head = n_heads, n_kv_heads, d_model // n_heads
        self.rope_base, self.eps = rope_base, eps
        self.input_layernorm, self.post_attention_layernorm = nn.Module(), nn.Module()
        self.input_layernorm.weight = nn.Parameter(torch.ones(d_model))
        self.post_attention_layernorm.weight = nn.Parameter(torch.ones(d_model))
        self.self_attn, self.mlp = nn.Module(), nn.Module()
        self.self_attn.qkv_proj = nn.Linear(d_model, (n_heads + 2 * n_kv_heads) * self.d_head, bias=False)
        self.self_attn.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.mlp.gate_up_proj = nn.Linear(d_model, 2 * d_ff, bias=False)
        self.mlp.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def rms(self, x, gain):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * gain

    def attend(self, h, mask):
        b, t, d = h.shape
        sizes = [self.heads * self.d_head, self.kv_heads * self.d_head, self.kv_heads * self.d_head]
        q, k, v = self.self_attn.qkv_proj(h).split(sizes, dim=-1)            # queries, keys, values
        q, k, v = (z.unflatten(-1, (-1, self.d_head)).transpose(1, 2) for z in (q, k, v))
        q, k = apply_rotary(q, k, torch.arange(t), self.rope_base)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.self_attn.o_proj(out.transpose(1, 2).reshape(b, t, d))

    def forward(self, x, mask):
        x = x + self.attend(self.rms(x, self.input_layernorm.weight), mask)
        gate, up = self.mlp.gate_up_proj(self.rms(x, self.post_attention_layernorm.weight)).chunk(2, dim=-1)
        return x + self.mlp.down_proj(F.silu(gate) * up)
