"""Reference solutions of lesson 02's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math

import torch


def pair_frequencies(d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)   # the even dimensions 0, 2, 4, … (d_model/2,)
    return torch.exp(-two_i * math.log(10000.0) / d_model)     # 1 / 10000^(2i/d_model), from 1 down


def sinusoidal_pe(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]              # (max_len, 1)
    frequency = torch.exp(-torch.arange(0, d_model, 2, dtype=torch.float32)
                          * math.log(10000.0) / d_model)                      # (d_model/2,)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


def shift_matrix(k, d_model):
    blocks = []
    for two_i in range(0, d_model, 2):
        angle = k / 10000 ** (two_i / d_model)
        c, s = math.cos(angle), math.sin(angle)
        blocks.append(torch.tensor([[c, s], [-s, c]]))          # rotates pair i by k·ω_i
    return torch.block_diag(*blocks)                            # (d_model, d_model) float32
