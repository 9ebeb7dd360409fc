"""Reference solutions of lesson 06's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch


def tie_weights(model):
    model.output.weight = model.embedding.weight
    return model


def accuracy_by_fate(logits, inputs, labels):
    predicted, selected = logits.argmax(dim=-1), labels != -100
    fates = {"[MASK]": inputs == 4,                                # 4 = [MASK]
             "random": (inputs != 4) & (inputs != labels),
             "unchanged": inputs == labels}
    return {fate: (predicted[selected & where] == labels[selected & where]).float().mean().item()
            for fate, where in fates.items()}


def whole_word_mask(ids, starts, vocab_size, generator, select_prob=0.15):
    real = ids >= 7                                                # ids 0-6 are [PAD], [CLS], [SEP], ...
    starts = starts & real
    picked = starts & (torch.rand(ids.shape, generator=generator) < select_prob)
    empty = starts.any(dim=1) & ~picked.any(dim=1)                 # rows with words but no word picked
    if empty.any():
        scores = torch.rand(ids.shape, generator=generator).masked_fill(~starts, -1.0)
        rows = empty.nonzero(as_tuple=True)[0]
        picked[rows, scores.argmax(dim=1)[rows]] = True
    word = starts.long().cumsum(dim=1)                             # each piece's word number (0: before any word)
    chosen_words = torch.zeros(ids.size(0), ids.size(1) + 1, dtype=torch.bool)
    chosen_words.scatter_(1, word.masked_fill(~picked, 0), picked)
    chosen_words[:, 0] = False
    selected = real & chosen_words.gather(1, word)

    labels = ids.masked_fill(~selected, -100)
    u = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)
    inputs = ids.masked_fill(selected & (u < 0.8), 4)             # 4 = [MASK]
    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)
    return inputs, labels
