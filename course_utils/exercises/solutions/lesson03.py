"""Reference solutions of lesson 03's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math

import torch
import torch.nn as nn


def attention_weights(query, key):
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)   # (batch, q_len, k_len)
    return torch.softmax(scores, dim=-1)


def masked_weights(query, key, mask):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill(~mask, 0.0)


def split_heads(x, n_heads):
    batch, seq, d_model = x.shape
    return x.view(batch, seq, n_heads, d_model // n_heads).transpose(1, 2)


def merge_heads(x):
    batch, heads, seq, d_head = x.shape
    return x.transpose(1, 2).contiguous().view(batch, seq, heads * d_head)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def split(self, x):  # (batch, seq, d_model) -> (batch, heads, seq, d_head)
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)     # (batch, heads, q_len, k_len)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)  # a query that may see nothing: zeros, not NaN
        out = self.dropout(weights) @ v                                 # (batch, heads, q_len, d_head)
        batch, _, q_len, _ = out.shape
        out = out.transpose(1, 2).contiguous().view(batch, q_len, self.n_heads * self.d_head)
        return self.w_o(out), weights
