"""Lesson 11's commands (``python -m course_utils.train sft`` and ``... dpo``) alone and under torchrun, and the
stored three-seed results of ``benchmarks/instruct_seeds.py`` re-derived for seed 0."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course_utils import tasks, train

ROOT = Path(__file__).resolve().parents[1]
SFT_TINY = ["sft", "--size", "tiny", "--threads", "1", "--no-progress"]
DPO_TINY = ["dpo", "--size", "tiny", "--threads", "1", "--no-progress"]


def environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", TQDM_DISABLE="1")
    return env


def test_sft_command_trains_on_the_response_and_reports_both_choice_tests(tmp_path):
    metrics = train.main(SFT_TINY + ["--checkpoint-dir", str(tmp_path)])
    assert metrics["step"] == 4 and 0 <= metrics["form choice accuracy %"] <= 100
    assert "knowledge choice accuracy %" in metrics
    task = tasks.build_task("sft", "tiny")
    batch = task.train_batches[0]
    assert task.target_count(batch) == int(batch[1][:, 1:].sum()) < int((batch[0][:, 1:] != 0).sum())


def test_dpo_command_keeps_its_reference_frozen(tmp_path):
    task = tasks.build_task("dpo", "tiny")
    reference = {k: v.clone() for k, v in task.extras["reference"].state_dict().items()}
    assert all(torch.equal(v, task.extras["sft_state"][k]) for k, v in reference.items())
    metrics = train.main(DPO_TINY + ["--checkpoint-dir", str(tmp_path)])
    assert metrics["step"] == 4 and abs(metrics["train loss"] - 0.69) < 0.2
    assert {"preference accuracy %", "reward margin", "KL per token"} <= set(metrics)
    prepared = task.prepare(task.train_batches[0], torch.Generator())
    assert len(prepared) == 3 and prepared[2].shape == (prepared[0].size(0),)
    # at the start the policy is the reference: every pair's loss is log 2
    model = task.build_model()
    torch.testing.assert_close(task.loss(model, prepared), torch.tensor(0.6931472), atol=1e-5, rtol=0)


@pytest.mark.parametrize("command", [SFT_TINY, DPO_TINY], ids=["sft", "dpo"])
def test_two_processes_train_like_one_accumulating(tmp_path, command):
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
              "-m", "course_utils.train", *command, "--no-eval", "--checkpoint-dir", str(tmp_path / "ddp")]
    finished = subprocess.run(launch, env=environment(), capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    train.main(command + ["--no-eval", "--accumulate", "2", "--checkpoint-dir", str(tmp_path / "one")])
    ddp = train.load_checkpoint(tmp_path / "ddp" / train.CHECKPOINT_NAME)
    one = train.load_checkpoint(tmp_path / "one" / train.CHECKPOINT_NAME)
    assert ddp["step"] == one["step"] == 2
    for name, weight in one["model"].items():
        torch.testing.assert_close(ddp["model"][name], weight, atol=1e-5, rtol=1e-4)


def test_stored_seeds_hold_every_run_of_the_page():
    runs = json.loads((ROOT / "benchmarks" / "instruct_seeds.json").read_text())
    assert sorted(runs["seeds"]) == ["0", "1", "2"]
    for seed in runs["seeds"].values():
        assert {"sft", "sft, loss on every token", "dpo beta 0.1"} <= set(seed)
        for result in seed.values():
            assert 0 <= result["form choice"] <= 1 and result["preference kl"] >= 0


@pytest.mark.slow  # about 3 minutes on a quiet core: COURSE_SLOW_TESTS=1
def test_seed_0_is_re_derived():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import instruct_seeds

    torch.set_num_threads(1)
    base, tokenizer, data, evaluation = instruct_seeds.setup()
    fresh = instruct_seeds.run_seed(0, base, tokenizer, data, evaluation, betas=(0.1,), log=lambda *a: None)
    stored = json.loads((ROOT / "benchmarks" / "instruct_seeds.json").read_text())["seeds"]["0"]
    for name, result in fresh.items():
        for key, value in result.items():
            if key != "seconds":
                assert value == pytest.approx(stored[name][key], abs=1e-6), (name, key)
