"""Reference solutions of lesson 08's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch

colleague_target_offset = -1   # their row: each target is the input one position before


def training_pairs(stream, starts, block):
    idx = starts[:, None] + torch.arange(block)                # (rows, block): positions of the inputs
    return stream[idx], stream[idx + 1]                        # each target is the token after its input


def top_p_filter(logits, p):
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    keep_sorted = probs.cumsum(dim=-1) - probs < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float('-inf'))


@torch.no_grad()
def generate_long(model, prompt_ids, max_new_tokens):
    model.eval()
    max_len, ids, cache = model.config.max_len, prompt_ids.long(), model.new_cache()
    step = ids                                                 # the first call reads the whole prompt
    for _ in range(max_new_tokens):
        if ids.size(1) <= max_len:                             # the row fits: through the cache
            logits = model(step, cache)
        else:                                                  # every position moved: the cache holds nothing valid
            logits = model(ids[:, -max_len:])
        token = logits[:, -1].argmax(dim=-1)
        ids = torch.cat([ids, token[:, None]], dim=1)
        step = token[:, None]
    return ids
