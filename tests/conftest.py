"""Fixtures every unit test shares (the root ``conftest.py`` sets up the session: network guard, threads, slow tests).

* Every test starts from one random state (``seed_everything(0)``): a test that needs other randomness seeds it
  itself, and a rerun of any test reproduces. The exercise checkers' inputs are seeded from the test's id.
* ``tiny_config(**changes)``: a :class:`~course_utils.config.TransformerConfig` small enough for a unit test.
* ``padded_ids(batch, seq)``: random real-token ids with right padding in some rows and none in others.
"""
import zlib

import pytest
import torch

from course_utils.config import TransformerConfig
from course_utils.runtime import seed_everything
from course_utils.tokenization import N_SPECIAL_TOKENS, PAD_ID

TINY = dict(vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=24, dropout=0.0)


@pytest.fixture(autouse=True)
def seeded(request, monkeypatch):
    seed_everything(0)
    # the exercise checkers draw fresh random inputs per check; under test each test draws its own, reproducibly
    monkeypatch.setenv("COURSE_CHECK_SEED", str(zlib.crc32(request.node.nodeid.encode())))


@pytest.fixture
def tiny_config():
    def make(**changes) -> TransformerConfig:
        return TransformerConfig(**{**TINY, **changes})
    return make


@pytest.fixture
def padded_ids():
    def make(batch: int = 3, seq: int = 7, vocab_size: int = TINY["vocab_size"], seed: int = 0) -> torch.Tensor:
        generator = torch.Generator().manual_seed(seed)
        ids = torch.randint(N_SPECIAL_TOKENS, vocab_size, (batch, seq), generator=generator)
        for row in range(1, batch):                                  # row 0 keeps every position
            length = int(torch.randint(1, seq, (1,), generator=generator))
            ids[row, length:] = PAD_ID
        return ids
    return make
