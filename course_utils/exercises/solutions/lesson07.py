"""Reference solutions of lesson 07's exercises (what ``qN.solution()`` prints)."""
import torch

from course_utils.tokenization import BOS_ID, PAD_ID

my_ratio = 4_204_032 / 3_152_384   # a prediction: any ratio passes; the check prints the measured one (about 1.33)


def decoder_layer_parameters(d_model, d_ff):
    attention = 4 * (d_model * d_model + d_model)              # W_Q, W_K, W_V, W_O, each with a bias
    feed_forward = d_model * d_ff + d_ff + d_ff * d_model + d_model
    layer_norms = 3 * 2 * d_model                              # gain and bias, one per sublayer
    return 2 * attention + feed_forward + layer_norms          # self-attention and cross-attention


my_prediction = (10, 5)   # a prediction: any two counts pass; the next cell measures them


def beam_search_errors(model, src_ids, output_ids, reference_ids, alpha=0.6):
    # output_ids, reference_ids (batch, steps): pieces after [BOS], [EOS] included, [PAD] after it -> (batch,) bool
    def beam_score(ids):                                       # what beam search ranks finished hypotheses by
        tgt_in = torch.cat([torch.full_like(ids[:, :1], BOS_ID), ids[:, :-1]], dim=1)   # teacher forcing
        with torch.no_grad():
            logits = model(src_ids, tgt_in)
        logits[..., [BOS_ID, PAD_ID]] = float("-inf")        # never generated
        log_p = logits.log_softmax(-1).gather(-1, ids[..., None])[..., 0].masked_fill(ids == PAD_ID, 0.0).sum(1)
        length = (ids != PAD_ID).sum(1)                       # |y|: [EOS] counted, [BOS] and [PAD] not
        return log_p / ((5 + length) / 6) ** alpha

    wrong = (output_ids != reference_ids).any(1)
    return wrong & (beam_score(reference_ids) > beam_score(output_ids))


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
