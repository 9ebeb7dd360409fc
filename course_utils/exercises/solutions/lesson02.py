"""Reference solutions of lesson 02's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math

import torch

from course_utils.data.order import train_order_model

my_prediction = 0.5  # a sequence and its mirror hold the same tokens, so the model gives both the same answer


def accuracy_without_positions(seed):
    model, accuracy, losses = train_order_model(lambda: None, seed)   # make_positions builds nothing
    return accuracy


def to_halves(d_model):
    sines = torch.arange(0, d_model, 2)                        # the course's sine columns 0, 2, 4, …
    cosines = torch.arange(1, d_model, 2)                      # its cosine columns 1, 3, 5, …
    return torch.cat([sines, cosines])                          # (d_model,) int64: all sines, then all cosines


def shift_matrix(k, d_model):
    blocks = []
    for two_i in range(0, d_model, 2):
        angle = k / 10000 ** (two_i / d_model)
        c, s = math.cos(angle), math.sin(angle)
        blocks.append(torch.tensor([[c, s], [-s, c]]))          # rotates pair i by k·ω_i
    return torch.block_diag(*blocks)                            # (d_model, d_model) float32
