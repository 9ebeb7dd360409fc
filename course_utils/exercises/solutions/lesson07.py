"""Reference solutions of lesson 07's exercises (what ``qN.solution()`` prints)."""
import torch

my_bytes_per_piece = 12_288   # a prediction: any positive number passes; the check prints the measured growth


def kv_cache_bytes(d_model, n_layers, n_heads, src_len, positions, bytes_per_number):
    per_position = 2 * n_layers * d_model          # keys and values, every layer; the heads split d_model
    return per_position * (positions + src_len) * bytes_per_number   # self-attention's + cross-attention's


my_prediction = "self"   # one sentence's k rows of cross-attention keys are equal: reordering them changes nothing


def reorder_kv(layers, parents):
    # layers: [(keys, values)], each (rows, heads, length, d_head); parents (rows,) long -> the same, rows = parents
    return [(keys[parents], values[parents]) for keys, values in layers]


def cached_greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):
    model.eval()
    with torch.no_grad():
        memory = model.encode(src_ids)                         # (batch, src_len, d_model), once
        cache = model.new_cache()
        prefix = torch.full((src_ids.size(0), 1), bos_id, dtype=torch.long, device=src_ids.device)
        finished = torch.zeros(src_ids.size(0), dtype=torch.bool, device=src_ids.device)
        for _ in range(max_new_tokens):
            logits = model.decode(prefix[:, -1:], memory, src_ids, cache)[:, -1]   # (batch, vocab)
            logits = logits.clone()
            logits[:, [bos_id, pad_id]] = float("-inf")        # not words
            next_token = logits.argmax(dim=-1).masked_fill(finished, pad_id)
            prefix = torch.cat([prefix, next_token[:, None]], dim=1)
            finished = finished | (next_token == eos_id)
            if finished.all():
                break
    return prefix[:, 1:]
