"""Reference solutions of lesson 06's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch


def corrupt_selected(ids, selected, vocab_size, generator):
    labels = ids.masked_fill(~selected, -100)
    u = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)
    inputs = ids.masked_fill(selected & (u < 0.8), 4)  # 4 = [MASK]
    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)
    return inputs, labels


def masked_accuracy(logits, labels):
    selected = labels != -100
    return (logits.argmax(dim=-1)[selected] == labels[selected]).float().mean().item()


def tie_weights(model):
    model.output.weight = model.embedding.weight
    return model


def mask_tokens(ids, vocab_size, generator, select_prob=0.15):
    real = ids >= 7                                                # ids 0-6 are [PAD], [CLS], [SEP], ...
    selected = real & (torch.rand(ids.shape, generator=generator) < select_prob)
    empty = real.any(dim=1) & ~selected.any(dim=1)                 # rows with text but nothing selected
    if empty.any():                                                # then, and only then, a second draw
        scores = torch.rand(ids.shape, generator=generator).masked_fill(~real, -1.0)
        best = torch.arange(ids.size(1)) == scores.argmax(dim=1, keepdim=True)   # (batch, seq)
        selected = selected | (empty[:, None] & best)
    labels = ids.masked_fill(~selected, -100)
    u = torch.rand(ids.shape, generator=generator)                 # one number decides 80/10/10
    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)
    inputs = ids.masked_fill(selected & (u < 0.8), 4)              # 4 = [MASK]
    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)
    return inputs, labels


def mlm_loss(logits, labels):
    selected = labels != -100                                      # (batch, seq)
    log_probs = torch.log_softmax(logits[selected], dim=-1)        # (n_selected, vocab_size)
    picked = log_probs.gather(1, labels[selected].unsqueeze(1))    # log p(original token)
    return -picked.mean()                                          # one mean over all selected positions
