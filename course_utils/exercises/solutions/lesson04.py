"""Reference solutions of lesson 04's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import course_utils.layers as package_layers
from course_utils.attention import MultiHeadAttention


def encoder_layer_parameters(d_model, d_ff):
    attention = 4 * (d_model * d_model + d_model)              # W_q, W_k, W_v, W_o with biases
    feed_forward = d_model * d_ff + d_ff + d_ff * d_model + d_model
    layer_norms = 2 * (2 * d_model)                            # gain and bias, twice
    return attention + feed_forward + layer_norms


def pre_ln_sublayer(x, sublayer, norm):
    return x + sublayer(norm(x))


def layer_norm(x, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):  # (batch, seq, d_model) -> same shape, every position on its own
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class Residual(nn.Module):
    def __init__(self, d_model, dropout, norm):
        super().__init__()
        self.pre = norm == "pre"
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        if self.pre:
            return x + self.dropout(sublayer(self.norm(x)))   # Pre-LN
        return self.norm(x + self.dropout(sublayer(x)))        # Post-LN


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm="post"):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.attn_block = Residual(d_model, dropout, norm)
        self.ff_block = Residual(d_model, dropout, norm)

    def forward(self, x, mask=None):
        x = self.attn_block(x, lambda h: self.self_attn(h, h, h, mask)[0])
        return self.ff_block(x, self.feed_forward)


class Encoder(nn.Module):
    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm="post"):
        super().__init__()
        # the package's layer here; yours from q4 works the same
        self.layers = nn.ModuleList(package_layers.EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm=norm)
                                    for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)   # once, after the stack
