"""Reference solutions of lesson 00's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch
import torch.nn as nn


def pairwise_sq_distances(a, b):
    diff = a[:, None, :] - b[None, :, :]    # (n, 1, d) - (1, m, d) broadcasts to (n, m, d)
    return (diff ** 2).sum(dim=-1)          # (n, m)


def from_rows(rows, seq):
    batch, d = rows.size(0) // seq, rows.size(1)
    sentences = rows.view(batch, seq, d)       # the rows sit sentence by sentence: a view splits them
    return sentences.transpose(0, 1)           # (seq, batch, d)


class TinyMLP(nn.Module):
    def __init__(self, d_in, hidden_sizes, d_out):
        super().__init__()
        sizes = [d_in, *hidden_sizes, d_out]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))   # layers.0, layers.1, ...

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        return self.layers[-1](x)


def fixed_squared_error(predictions, targets):
    # (N, 1) - (N,) would broadcast to (N, N): pair prediction i with target i only
    return ((predictions[:, 0] - targets) ** 2).mean()
