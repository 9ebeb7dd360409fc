"""Reference solutions of lesson 03's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math

import torch
import torch.nn as nn

my_prediction = [0, 1]   # the two [PAD] queries: each may see only keys at or before it, and those are [PAD]


def causal_mask(seq_len):
    allowed = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()   # query i sees keys 0..i
    return allowed[None, None]                                         # (1, 1, seq, seq)


def padded_self_attention(x, ids):
    mask = (ids != 0)[:, None, :]                       # (batch, 1, seq): hide the [PAD] keys, for every query
    scores = x @ x.transpose(-2, -1) / math.sqrt(x.size(-1))
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
    return weights @ x, weights


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)       # queries, keys and values from one product
        self.out = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        batch, seq, d_model = x.shape
        q, k, v = (t.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))                 # (batch, heads, seq, d_head) each
        allowed = torch.ones(seq, seq, dtype=torch.bool, device=x.device).tril()
        if mask is not None:
            allowed = allowed & mask                                         # (batch, 1, seq, seq)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)  # a query that sees nothing: zeros
        out = (self.dropout(weights) @ v).transpose(1, 2).reshape(batch, seq, d_model)
        return self.out(out), weights
