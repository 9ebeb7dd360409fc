"""Reference solutions of lesson 09's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(x, weight, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def apply_rope(x, positions, base=10000.0):
    d = x.size(-1)
    theta = base ** (-torch.arange(0, d, 2).float() / d)             # (d/2,)
    angles = positions.float()[:, None] * theta                      # (seq, d/2)
    angles = torch.cat([angles, angles], dim=-1)                     # (seq, d): both halves
    first, second = x.chunk(2, dim=-1)
    rotated_half = torch.cat([-second, first], dim=-1)
    return x * angles.cos() + rotated_half * angles.sin()


def repeat_kv_heads(kv, n_repeats):
    return kv.repeat_interleave(n_repeats, dim=1)


def cache_bytes(batch, seq, layers, n_heads, n_kv_heads, d_head):
    return 2 * batch * seq * layers * n_kv_heads * d_head * 2


class RMSNormLayer(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))                      # the gain g

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)                            # yours from exercise 1


class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=False)
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))                  # the gate decides what passes


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, rope_base=10000.0):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d_head = n_heads, n_kv_heads, d_model // n_heads
        self.rope_base = rope_base
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)   # fewer K/V heads
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):                                         # (batch, seq, d_model) -> same
        batch, seq, d_model = x.shape
        q = self.w_q(x).view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)
        k = self.w_k(x).view(batch, seq, self.n_kv_heads, self.d_head).transpose(1, 2)
        v = self.w_v(x).view(batch, seq, self.n_kv_heads, self.d_head).transpose(1, 2)
        positions = torch.arange(seq, device=x.device)
        q = apply_rope(q, positions, self.rope_base)                          # yours from exercise 2:
        k = apply_rope(k, positions, self.rope_base)                          # queries and keys, not values
        groups = self.n_heads // self.n_kv_heads
        k, v = repeat_kv_heads(k, groups), repeat_kv_heads(v, groups)         # yours from exercise 3
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)            # (batch, heads, seq, seq)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v                              # (batch, heads, seq, d_head)
        return self.w_o(out.transpose(1, 2).reshape(batch, seq, d_model))


class PreNorm(nn.Module):
    def __init__(self, d_model, eps):
        super().__init__()
        self.norm = RMSNormLayer(d_model, eps)

    def forward(self, x, sublayer):
        return x + sublayer(self.norm(x))                                    # Pre-norm: the residual stays raw


class ModernBlock(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base=10000.0, eps=1e-6):
        super().__init__()
        self.self_attn = GroupedQueryAttention(d_model, n_heads, n_kv_heads, rope_base)
        self.feed_forward = SwiGLU(d_model, d_ff)
        self.attn_block = PreNorm(d_model, eps)
        self.ff_block = PreNorm(d_model, eps)

    def forward(self, x, mask=None):
        x = self.attn_block(x, lambda h: self.self_attn(h, mask))
        return self.ff_block(x, self.feed_forward)
