"""Reference solutions of lesson 08's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch

from course_utils import decoding


def training_pairs(stream, starts, block):
    idx = starts[:, None] + torch.arange(block)                # (rows, block): positions of the inputs
    return stream[idx], stream[idx + 1]                        # each target is the token after its input


def top_k_filter(logits, k):
    kth_largest = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth_largest, float('-inf'))


def top_p_filter(logits, p):
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    keep_sorted = probs.cumsum(dim=-1) - probs < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float('-inf'))


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
                logits = top_k_filter(logits, top_k)                          # the page's top-k
            if top_p is not None:
                logits = decoding.top_p_filter(logits, top_p)                 # exercise 2, the package's copy
            probs = torch.softmax(logits, dim=-1)
            token = torch.multinomial(probs, 1, generator=generator).squeeze(1)
        ids = torch.cat([ids, token[:, None]], dim=1)
        step_input = token[:, None]                                           # the cache remembers the rest
    return ids
