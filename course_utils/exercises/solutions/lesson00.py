"""Reference solutions of lesson 00's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch
import torch.nn as nn

from course_utils import seed_everything

token_batch = torch.randint(0, 1000, (4, 10))


def device_of(tensor):
    return tensor.device


def same_draws():
    seed_everything(0)
    first = torch.rand(3)
    seed_everything(0)
    second = torch.rand(3)
    return first, second


def pairwise_sq_distances(a, b):
    diff = a[:, None, :] - b[None, :, :]    # (n, 1, d) - (1, m, d) broadcasts to (n, m, d)
    return (diff ** 2).sum(dim=-1)          # (n, m)


def to_rows(x):
    seq, batch, d = x.shape
    batch_major = x.transpose(0, 1)                        # (batch, seq, d): a view, not contiguous
    return batch_major.contiguous().view(batch * seq, d)   # one row per token, sentence by sentence


def from_rows(rows, batch):
    d = rows.size(-1)
    return rows.view(batch, -1, d).transpose(0, 1)   # (batch, seq, d), then (seq, batch, d)


class TinyMLP(nn.Module):
    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.linear1 = nn.Linear(d_in, d_hidden)
        self.linear2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))
