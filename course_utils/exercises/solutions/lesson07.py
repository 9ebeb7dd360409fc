"""Reference solutions of lesson 07's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.attention import MultiHeadAttention


def shift_targets(tgt_ids):
    return tgt_ids[:, :-1], tgt_ids[:, 1:]


def cross_attention_mask(src_ids, tgt_len, pad_id=0):
    return (src_ids != pad_id)[:, None, None, :]


def append_to_cache(cached, new):
    return torch.cat([cached, new], dim=2)


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


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm="post"):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.self_attn_block = Residual(d_model, dropout, norm)
        self.cross_attn_block = Residual(d_model, dropout, norm)
        self.ff_block = Residual(d_model, dropout, norm)

    def forward(self, y, memory, tgt_mask=None, memory_mask=None):
        y = self.self_attn_block(y, lambda h: self.self_attn(h, h, h, tgt_mask)[0])
        # queries from the decoder, keys and values from the encoder memory
        y = self.cross_attn_block(y, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0])
        return self.ff_block(y, self.feed_forward)


@torch.no_grad()
def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):
    model.eval()
    memory = model.encode(src_ids)                                    # once per sentence
    batch, device = src_ids.size(0), src_ids.device
    prefix = torch.full((batch, 1), bos_id, dtype=torch.long, device=device)  # (batch, 1 + steps)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    for _ in range(max_new_tokens):
        logits = model.decode(prefix, memory, src_ids)[:, -1]        # the next token's scores (batch, vocab)
        logits[:, [bos_id, pad_id]] = float("-inf")                   # [BOS] and [PAD] are not words
        next_token = logits.argmax(dim=-1).masked_fill(finished, pad_id)
        prefix = torch.cat([prefix, next_token[:, None]], dim=1)
        finished |= next_token == eos_id
        if finished.all():
            break
    return prefix[:, 1:]
