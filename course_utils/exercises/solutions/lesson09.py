"""Reference solutions of lesson 09's exercises: what `qN.solution()` shows (see core.solution_of)."""


import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.config import count_parameters
from course_utils.language_model import DecoderOnlyLM
from course_utils.modern import apply_rotary, modern_config

predicted_parameter_fraction = (2 * 2 * 64 * (8 - 1) * 8     # 2 layers · (W_K, W_V) · d_model · heads saved · d_head
                                / (100 * 64                   # of all: the embedding (shared with the output),
                                   + 2 * (4 * 64 * 64 + 3 * 64 * 512 + 2 * 64)   # 2 blocks: attention, SwiGLU, norms
                                   + 64))                     # and the final norm


def measure_gqa(n_kv_heads):
    torch.manual_seed(0)
    model = DecoderOnlyLM(modern_config(100, d_model=64, n_heads=8, n_kv_heads=n_kv_heads, d_ff=512, n_layers=2,
                                        max_len=64, dropout=0.0)).eval()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.randint(1, 100, (4, 50)), cache)
    return cache.nbytes, count_parameters(model)


cache_equals_weights_tokens = (14.7e9 * 2                   # the weights' bytes in bfloat16, over one token's cache:
                               / (2 * 48 * 8 * 128 * 2))    # (K, V) · layers · K/V heads · d_head · bytes: 149,536


prompt_positions = list(range(-12, 0))    # the colleague's: arange(0 - 12, 0); offsets inside the prompt are right
first_token_position = 11                 # arange(12 - 1, 12): its offsets to the cached keys 11 too large
prompt_offsets = list(range(12))          # -1 - (-12 ... -1): as in a full pass, so step 0 is exact


def rotate_new(q, k, cache_length, base=10000.0):
    positions = torch.arange(cache_length, cache_length + q.size(-2))    # right after the cached tokens
    return apply_rotary(q, k, positions, base)


class CachedAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, rope_base=10000.0):
        super().__init__()
        self.heads, self.kv_heads, self.d_head, self.rope_base = n_heads, n_kv_heads, d_model // n_heads, rope_base
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k, self.w_v = (nn.Linear(d_model, n_kv_heads * self.d_head, bias=False) for _ in range(2))
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def split(self, projected, heads):                      # (B, new, heads · d_head) -> (B, heads, new, d_head)
        return projected.unflatten(-1, (heads, self.d_head)).transpose(1, 2)

    def forward(self, x, cache):                            # x (B, new, d_model): the tokens not yet seen
        past, new = cache.length, x.size(1)
        q = self.split(self.w_q(x), self.heads)
        k, v = self.split(self.w_k(x), self.kv_heads), self.split(self.w_v(x), self.kv_heads)
        q, k = apply_rotary(q, k, torch.arange(past, past + new), self.rope_base)    # right after the cached tokens
        k, v = cache.append(k, v)                           # (B, h_kv, past + new, d_head): rotated, not repeated
        allowed = torch.ones(new, past + new, dtype=torch.bool).tril(past)   # every cached key, new ones up to itself
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)   # (B, h, new, d_head)
        return self.w_o(out.transpose(1, 2).flatten(2))
