"""The shipped base GPT (``checkpoints/gpt``) and the recorded seed runs of its recipe agree."""
from course_utils.gpt_checkpoint import stored_kneser_ney, stored_seed_runs
from course_utils.instruct import load_base_gpt


def test_the_shipped_model_is_seed_0_of_the_recorded_runs():
    runs = stored_seed_runs()
    assert [run["seed"] for run in runs] == [0, 1, 2]
    _, _, meta = load_base_gpt()
    assert meta["run"]["seed"] == 0
    assert abs(runs[0]["test"] - meta["metrics"]["test perplexity"]) < 1e-9
    assert abs(runs[0]["validation"] - meta["metrics"]["validation perplexity"]) < 1e-9
    assert {run["steps"] for run in runs} == {meta["recipe"]["steps"]}


def test_the_shipped_models_baseline_is_the_recorded_kneser_ney():
    _, _, meta = load_base_gpt()
    assert abs(stored_kneser_ney()["test"] - meta["baseline"]["test perplexity"]) < 1e-9
