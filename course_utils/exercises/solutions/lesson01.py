"""Reference solutions of lesson 01's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math
from collections import Counter

import regex
import torch.nn.functional as F

from course_utils.tokenization import WORD_SPLIT_PATTERN, split_words, tie_break_key


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


def train(texts, n_merges):
    word_counts = Counter(word for text in texts for word in split_words(text))
    words = {word: [7 + b for b in word.encode("utf-8")] for word in word_counts}  # byte b has id 7 + b
    merges = []
    for k in range(n_merges):
        totals = Counter()
        for word, ids in words.items():
            for pair, n in count_pairs(ids).items():
                totals[pair] += n * word_counts[word]
        if not totals:
            break
        best = min(totals, key=lambda pair: (-totals[pair], tie_break_key(pair)))
        if totals[best] < 2:
            break
        merges.append(best)
        words = {word: merge_pair(ids, best, 263 + k) for word, ids in words.items()}  # merge k -> id 263 + k
    return merges


def encode(text, merges):
    ids = []
    for word in split_words(text):
        word_ids = [7 + b for b in word.encode("utf-8")]
        for k, pair in enumerate(merges):
            word_ids = merge_pair(word_ids, pair, 263 + k)
        ids += word_ids
    return ids


def split_digits(text):
    pattern = WORD_SPLIT_PATTERN.replace(r" ?\p{N}+", r" ?\p{N}{1,3}")  # numbers: at most 3 digits a piece
    return regex.findall(pattern, text)


def embedding_grad(ids, grad_output, vocab_size):
    d_model = grad_output.size(-1)
    one_hot = F.one_hot(ids, num_classes=vocab_size).to(grad_output.dtype)      # (batch, seq, vocab)
    grad = one_hot.reshape(-1, vocab_size).T @ grad_output.reshape(-1, d_model)  # (vocab, d_model)
    return grad * math.sqrt(d_model)
