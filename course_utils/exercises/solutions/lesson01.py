"""Reference solutions of lesson 01's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math
from collections import Counter

import torch
import torch.nn.functional as F


def count_pairs(ids):
    return Counter(zip(ids, ids[1:]))


def merge_pair(ids, pair, new_id):
    merged, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            merged.append(new_id)
            i += 2
        else:
            merged.append(ids[i])
            i += 1
    return merged


def pad_with_mask(sequences, pad_id=0):
    longest = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = torch.tensor(sequence)
    mask = (ids != pad_id)[:, None, None, :]
    return ids, mask


def scaled_one_hot_embedding(ids, weight):
    vocab_size, d_model = weight.shape
    one_hot = F.one_hot(ids, num_classes=vocab_size).float()   # (batch, seq, vocab)
    return one_hot @ weight * math.sqrt(d_model)                # (batch, seq, d_model)
