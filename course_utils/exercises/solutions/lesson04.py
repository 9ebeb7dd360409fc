"""Reference solutions of lesson 04's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch
import torch.nn as nn

from course_utils.attention import MultiHeadAttention
from course_utils.layers import PositionwiseFeedForward


def encoder_parameters(n_layers, d_model, d_ff):
    attention = 4 * (d_model * d_model + d_model)              # W_q, W_k, W_v, W_o, each with its bias
    feed_forward = d_model * d_ff + d_ff + d_ff * d_model + d_model
    per_layer = attention + feed_forward + 2 * (2 * d_model)   # two LayerNorms: gain and bias each
    return n_layers * per_layer + 2 * d_model                  # the final LayerNorm, once


def masked_batch_norm(x, real, eps=1e-5):
    tokens = x[real]                                           # (number of real tokens, d_model)
    mean = tokens.mean(dim=0)                                  # one mean per feature, padding left out
    var = tokens.var(dim=0, unbiased=False)
    out = (x - mean) / torch.sqrt(var + eps)
    return torch.where(real[..., None], out, 0.0)              # padding positions come out as 0


def stream_norms(encoder, x, mask):
    real = mask[:, 0, 0, :]                                    # (batch, seq): True at real tokens
    norms = []
    with torch.no_grad():
        for layer in encoder.layers:                           # the final encoder.norm is left out
            x = layer(x, mask)
            norms.append(x[real].norm(dim=-1).mean())
    return torch.stack(norms)


class ParallelEncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)     # linear1, dropout, linear2
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        h = self.norm(x)                                       # one LayerNorm, read by both branches
        attended = self.self_attn(h, h, h, mask)[0]
        return x + self.dropout(attended) + self.dropout(self.feed_forward(h))

