"""The shipped lesson 06 checkpoint (course_utils/checkpoints/mlm): small, weights-only, and its stored metrics are
what it scores on the held-out sentences of this Python's corpus (so the notebook's numbers cannot drift)."""
import json

import pytest
import torch

from course_utils import mlm_checkpoint
from course_utils.data.pydoc_corpus import load_pydoc_corpus

FOLDER = mlm_checkpoint.CHECKPOINT_DIR


def meta():
    return json.loads((FOLDER / "meta.json").read_text(encoding="utf-8"))


def test_checkpoint_files_are_shipped_small_and_load_weights_only():
    sizes = {name: (FOLDER / name).stat().st_size for name in ("model.pt", "tokenizer.json", "meta.json")}
    assert sum(sizes.values()) <= 10 * 1024 * 1024, sizes
    state = torch.load(FOLDER / "model.pt", weights_only=True)
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    assert {"corpus_fingerprint", "python_version", "config", "recipe", "metrics", "train_seconds"} <= set(meta())


@pytest.fixture(scope="module")
def same_corpus():
    if load_pydoc_corpus().fingerprint != meta()["corpus_fingerprint"]:
        pytest.skip("this Python's documentation corpus differs from the one the checkpoint was trained on")


def test_checkpoint_reproduces_its_stored_held_out_metrics(same_corpus):
    model, tokenizer, stored = mlm_checkpoint.load_mlm_checkpoint()
    assert stored["matches_corpus"]
    config = stored["config"]
    _, retrained_tokenizer, train_ids, held_out_ids = mlm_checkpoint.prepare_data(config["vocab_size"],
                                                                                  config["max_len"])
    assert retrained_tokenizer.merges == tokenizer.merges        # the shipped tokenizer is the one the data gives
    measured = mlm_checkpoint.held_out_metrics(model, tokenizer, train_ids, held_out_ids)
    for name, value in stored["metrics"].items():
        assert measured[name] == pytest.approx(value, rel=1e-4, abs=1e-4), name
