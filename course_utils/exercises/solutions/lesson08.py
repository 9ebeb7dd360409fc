"""Reference solutions of lesson 08's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math

import torch
import torch.nn as nn

from course_utils.layers import EncoderLayer
from course_utils.masks import causal_mask, padding_mask


def shift_for_lm(ids):
    return ids[:, :-1], ids[:, 1:]


def temperature_probs(logits, temperature):
    return torch.softmax(logits / temperature, dim=-1)


def top_k_filter(logits, k):
    kth_largest = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth_largest, float('-inf'))


def top_p_filter(logits, p):
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    keep_sorted = probs.cumsum(dim=-1) - probs < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float('-inf'))


class TokenTable(nn.Module):
    def __init__(self, vocab_size, d_model, pad_id):
        super().__init__()
        self.lookup = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)   # the [PAD] row gets no gradient


class PositionTable(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)                           # one learned vector per position


class Embedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.scale = math.sqrt(config.d_model)
        self.tokens = TokenTable(config.vocab_size, config.d_model, config.pad_id)
        self.positions = PositionTable(config.max_len, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, ids):                                                   # (batch, seq) -> (batch, seq, d_model)
        positions = torch.arange(ids.size(1), device=ids.device)              # 0 .. seq - 1
        return self.dropout(self.tokens.lookup(ids) * self.scale + self.positions.table(positions))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pad_id = config.pad_id
        self.embedding = Embedding(config)
        # a GPT block is lesson 04's encoder layer, Pre-LN, run under a causal mask (yours works the same)
        self.blocks = nn.ModuleList(EncoderLayer(config.d_model, config.n_heads, config.d_ff, config.dropout,
                                                 norm="pre") for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)                              # Pre-LN needs a final norm
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.embedding.tokens.lookup.weight              # tied: one matrix in and out

    def forward(self, ids):                                                   # (batch, seq) -> (batch, seq, vocab)
        mask = causal_mask(ids.size(1), device=ids.device) & padding_mask(ids, self.pad_id)
        x = self.embedding(ids)
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.norm(x))


@torch.no_grad()
def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None,
             forbidden_ids=()):
    model.eval()
    ids = prompt_ids.long()
    cache = model.new_cache()
    step_input = ids                                                          # the prompt once, then one token
    for _ in range(max_new_tokens):
        logits = model(step_input, cache)[:, -1].float()                      # (batch, vocab): the last position
        logits[:, list(forbidden_ids)] = float("-inf")                        # never generated
        if temperature == 0:
            token = logits.argmax(dim=-1)                                     # greedy
        else:
            logits = logits / temperature
            if top_k is not None:
                logits = top_k_filter(logits, top_k)                          # yours from exercise 3
            if top_p is not None:
                logits = top_p_filter(logits, top_p)                          # yours from exercise 4
            probs = torch.softmax(logits, dim=-1)
            token = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        ids = torch.cat([ids, token[:, None]], dim=1)
        step_input = token[:, None]                                           # the cache remembers the rest
    return ids
