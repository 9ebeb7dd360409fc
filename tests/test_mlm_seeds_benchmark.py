"""benchmarks/mlm_seeds.json, which lesson 06 reads for seeds 1 and 2 of its live run: every seed's row is
re-derived where no training is needed (the neighbour counts on the same probe), and seed 0 — the lesson's own
run — is retrained and matched exactly (slow)."""
import importlib.util
import json
from pathlib import Path

import pytest

from course_utils import mlm
from course_utils.data.batching import length_bucketed_batches
from course_utils.mlm_checkpoint import prepare_data

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("mlm_seeds", ROOT / "benchmarks" / "mlm_seeds.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
RESULT = json.loads((ROOT / "benchmarks" / "mlm_seeds.json").read_text())


@pytest.fixture(scope="module")
def data():
    _, _, train_ids, held_out_ids = prepare_data(bench.VOCAB_SIZE, bench.MAX_LEN)
    return train_ids, held_out_ids


def test_every_seed_has_every_view_and_its_paired_counts_add_up():
    assert sorted(RESULT["seeds"]) == ["0", "1", "2"]
    for run in RESULT["seeds"].values():
        assert list(run["probe"]) == list(bench.VIEWS)
        assert len(run["curve"]) == bench.EPOCHS
        for view in run["probe"].values():
            n = RESULT["n_probed"]
            # a - b = n * (model accuracy - counts accuracy): the paired counts agree with the two accuracies
            assert view["model_only"] - view["counts_only"] == round(n * (view["accuracy"] - view["counts"]))
            assert view["model_only"] + view["counts_only"] <= n


def test_the_counts_column_is_rederived(data):
    train_ids, held_out_ids = data
    ids, targets = mlm.probe_positions(held_out_ids, per_sentence=3, seed=0)
    assert len(targets) == RESULT["n_probed"]
    counts = mlm.NeighbourCountBaseline(train_ids, bench.VOCAB_SIZE)
    answers = ids[range(len(targets)), targets]
    for name, offsets in bench.VIEWS.items():
        got = (bench.guesses(counts, bench.hide(ids, targets, offsets), targets) == answers).float().mean().item()
        assert all(run["probe"][name]["counts"] == got for run in RESULT["seeds"].values())


@pytest.mark.slow
def test_seed_0_is_rederived(data):
    train_ids, held_out_ids = data
    bench.set_threads(1)
    model, history = bench.pretrain(0, train_ids, length_bucketed_batches(held_out_ids, 256, shuffle=False))
    ids, targets = mlm.probe_positions(held_out_ids, per_sentence=3, seed=0)
    counts = mlm.NeighbourCountBaseline(train_ids, bench.VOCAB_SIZE)
    assert bench.probe(model, counts, ids, targets) == RESULT["seeds"]["0"]["probe"]
    assert [[s, m["mask_accuracy"]] for s, m in history.evaluations] == RESULT["seeds"]["0"]["curve"]
