"""Does overlapping the all-reduce with backward pay on two CPU processes? DDP against one flat all-reduce.

    OMP_NUM_THREADS=1 torchrun --nproc-per-node 2 benchmarks/ddp_overlap.py

Lesson 10's section 6 predicts a 2-process step as a plain sum, t_half,both + t_sync. This script asks whether DDP's
overlap (buckets all-reduced from backward hooks) hides any of t_sync. Model: a lesson-08-sized GPT (vocabulary
32,768, d_model 64, 2 layers) with *untied* embeddings, so most gradients are final before backward ends; one
thread per process, gloo. Per round and case (4 rows of 64 tokens, 1 row of 8 per rank), the mean of 3 steps of:
``overlapped`` (DDP, bucket_cap_mb=1), ``at_end`` (backward under no_sync, then one all-reduce of all gradients
flattened), ``compute_only`` (backward under no_sync, no communication). 5 rounds; prints median (min-max) and
writes ``benchmarks/ddp_overlap.json``.
"""
from __future__ import annotations

import copy
import json
import platform
import statistics
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from course_utils.config import TransformerConfig
from course_utils.language_model import DecoderOnlyLM
from course_utils.losses import lm_loss

RESULTS = Path(__file__).resolve().parent / "ddp_overlap.json"
ROUNDS, REPEAT = 5, 3


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=32768, d_model=64, n_heads=4, d_ff=256, n_layers=2, max_len=64,
                               dropout=0.0, norm="pre", positional="learned")
    solo = DecoderOnlyLM(config, tie_weights=False)
    ddp = DistributedDataParallel(copy.deepcopy(solo), bucket_cap_mb=1)
    ddp_end = DistributedDataParallel(copy.deepcopy(solo), bucket_cap_mb=1)
    tokens = torch.randint(1, 32768, (8, 64), generator=torch.Generator().manual_seed(1 + rank))

    def overlapped(batch):
        lm_loss(ddp, batch).backward()
        ddp.zero_grad()

    def at_end(batch):
        with ddp_end.no_sync():
            lm_loss(ddp_end, batch).backward()
        dist.all_reduce(torch.cat([p.grad.flatten() for p in ddp_end.parameters()]))
        ddp_end.zero_grad()

    def compute_only(batch):
        with ddp_end.no_sync():
            lm_loss(ddp_end, batch).backward()
        ddp_end.zero_grad()

    def timed(step, batch):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(REPEAT):
            step(batch)
        dist.barrier()
        return (time.perf_counter() - start) / REPEAT * 1000

    for step in (overlapped, at_end, compute_only):   # warm-up
        step(tokens[:1, :8])
    results: dict[str, list[float]] = {}
    for case, batch in (("4x64", tokens[:4]), ("1x8", tokens[:1, :8])):
        for _ in range(ROUNDS):
            for step in (overlapped, at_end, compute_only):
                results.setdefault(f"{case} {step.__name__}", []).append(timed(step, batch))
    if rank == 0:
        for name, values in results.items():
            print(f"{name:>22}: {statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f}) ms")
        RESULTS.write_text(json.dumps({
            "setup": {"weights": sum(p.numel() for p in solo.parameters()), "bucket_cap_mb": 1, "rounds": ROUNDS,
                      "steps_per_round": REPEAT, "torch": torch.__version__, "python": platform.python_version()},
            "ms_per_step": {name: [round(v, 2) for v in values] for name, values in results.items()},
        }, indent=1) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
