"""Two processes under torchrun (gloo, CPU) train exactly like one process that accumulates the same global batch.

The global batch of a step is world_size × accumulate batches of the task's list; the token-level loss is divided
by the all-reduced token count. Without that (DDP's mean of per-process means) the weights would differ.
"""
import os
import subprocess
import sys
from pathlib import Path

import torch

from course_utils import train
from course_utils.distributed import DistributedContext, batch_sampler

ROOT = Path(__file__).resolve().parents[1]
TINY = ["translator", "--size", "tiny", "--threads", "1", "--no-progress", "--no-eval", "--epochs", "2"]


def subprocess_environment() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))  # this checkout's package
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", TQDM_DISABLE="1")
    return env


def test_two_gloo_processes_equal_one_process_with_the_same_global_batch(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               "-m", "course_utils.train", *TINY, "--checkpoint-dir", str(tmp_path / "ddp")]
    finished = subprocess.run(command, env=subprocess_environment(), capture_output=True, text=True, timeout=240)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.count("final metrics:") == 1, finished.stdout   # rank 0 alone prints
    train.main(TINY + ["--accumulate", "2", "--checkpoint-dir", str(tmp_path / "one")])

    ddp = train.load_checkpoint(tmp_path / "ddp" / train.CHECKPOINT_NAME)
    one = train.load_checkpoint(tmp_path / "one" / train.CHECKPOINT_NAME)
    assert ddp["run"]["world_size"] == 2 and one["run"]["world_size"] == 1
    assert ddp["step"] == one["step"] > 2
    initial = train.build_task("translator", "tiny").build_model().state_dict()
    for name, weight in one["model"].items():
        torch.testing.assert_close(ddp["model"][name], weight, atol=1e-6, rtol=0)
    assert any(not torch.equal(initial[name], weight) for name, weight in one["model"].items())
    assert len(ddp["random"]) == 2   # both ranks' generators are in the checkpoint
    torch.testing.assert_close(torch.tensor(ddp["train_loss"]), torch.tensor(one["train_loss"]), atol=1e-6, rtol=0)


def test_batch_sampler_splits_one_permutation_between_ranks():
    ranks = [batch_sampler(9, DistributedContext(r, 2, r, torch.device("cpu"), "gloo"), seed=3) for r in (0, 1)]
    single = batch_sampler(9, DistributedContext(0, 1, 0, torch.device("cpu"), None), seed=3)
    orders = []
    for epoch in (0, 1):
        for sampler in (*ranks, single):
            sampler.set_epoch(epoch)
        rank0, rank1, alone = (list(s) for s in (*ranks, single))
        assert len(rank0) == len(rank1) == 4              # drop_last: 9 batches give 4 steps of 2
        assert [i for pair in zip(rank0, rank1) for i in pair] == alone[:8]
        orders.append(alone)
    assert orders[0] != orders[1]                         # set_epoch reshuffles


def test_bucketed_all_reduce_gives_ddp_gradients_and_overlaps_backward():
    """The package's BucketedAllReduce (lesson 10's capstone reference) on two forked gloo processes: every
    gradient equals DistributedDataParallel's, and every bucket but the last starts before backward ends."""
    from course_utils.distributed import BucketedAllReduce
    from course_utils.exercises import lesson10
    from course_utils.exercises.asserts import Draw

    class Same(BucketedAllReduce):   # the checker refuses the package's own class by name, not a subclass
        pass

    setup = lesson10.sync_setup(Draw(3))
    report = lesson10.sync_report(lesson10.run_ranks(Same, setup), setup)
    assert report["right"] and report["overlap"] and not report["blocking"], report
    assert report["reduces during backward"] == [report["buckets"]] * lesson10.STEPS and report["buckets"] > 2


def test_capstone_check_runs_where_fork_is_missing(tmp_path, monkeypatch):
    """Spawned processes (Windows has no fork) receive a notebook class as its methods' source."""
    import importlib.util

    from course_utils.exercises import lesson10

    path = tmp_path / "answer_cell.py"
    path.write_text(lesson10.q2.solution)
    spec = importlib.util.spec_from_file_location("answer_cell", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    answer = module.BucketedAllReduce
    answer.__module__ = "__main__"   # as a notebook cell defines it: not importable by the new processes
    monkeypatch.setattr(lesson10, "FORCE_SPAWN", True)
    assert lesson10.class_source(answer).startswith("class BucketedAllReduce:")
    result = lesson10.q2.evaluate({"BucketedAllReduce": answer})
    assert result.status == "correct", result.message
