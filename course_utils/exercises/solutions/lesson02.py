"""Reference solutions of lesson 02's exercises: what `qN.solution()` shows (see core.solution_of)."""

import math

import torch
import torch.nn as nn

from course_utils.data.order import OrderModel, train_order_model
from course_utils.positional import SinusoidalPositionalEncoding

my_prediction = 0.5  # per_token becomes affine: the mean over the tokens splits into a token part and a position part


def make_model_without_relu():
    model = OrderModel(SinusoidalPositionalEncoding(d_model=32, max_len=16))
    model.per_token = nn.Sequential(nn.Linear(32, 64), nn.Linear(64, 64))    # the ReLU taken out
    return model


def accuracy_without_relu(seed):
    model, accuracy, losses = train_order_model(make_model_without_relu, seed)
    return accuracy


my_layout_prediction = 0.3  # chance or worse: each trained weight now reads another coordinate than it learned


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


def encode_after_prompt(encoding, prompt, new_tokens):        # prompt (batch, P, d_model), new (batch, N, d_model)
    steps = [encoding(prompt)]                                   # the prompt at once: positions 0 .. P - 1
    for t in range(new_tokens.size(1)):
        position = prompt.size(1) + t                            # new token t comes after the P prompt tokens
        steps.append(encoding(new_tokens[:, t:t + 1], offset=position))
    return torch.cat(steps, dim=1)                               # (batch, P + N, d_model)
