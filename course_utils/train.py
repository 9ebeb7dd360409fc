"""``python -m course_utils.train TASK``: a lesson's recipe as a command, on one process or many (lesson 10).

One process::

    python -m course_utils.train translator --threads 1

Data parallel, two processes on this machine (gloo on CPU, NCCL on GPUs)::

    torchrun --standalone --nproc_per_node=2 -m course_utils.train translator

Each optimizer step consumes ``world_size × accumulate`` batches of the task's batch list. Losses are sums
over targets divided by the number of targets in the whole step (all micro-batches, all processes), so one
process with ``--accumulate 2`` and two processes with ``--accumulate 1`` compute the same gradient and end
with the same weights (up to float rounding), and an interrupted run resumed with ``--resume`` ends with
exactly the weights of an uninterrupted one.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from .distributed import DEVICE_CHOICES, DistributedContext, batch_sampler, distributed_session
from .errors import CourseError, CourseValueError
from .memory import AMP_DTYPES, autocast_context, checkpoint_layers
from .runtime import seed_everything
from .tasks import SIZES, TASK_NAMES, Task, build_task
from .training import make_optimizer, make_scheduler, to_device

CHECKPOINT_NAME = "last.pt"
CHECKPOINT_FORMAT = 1

EPILOG = """\
distributed training:
  torchrun --standalone --nproc_per_node=N -m course_utils.train TASK [options]
      N processes on this machine; DistributedDataParallel with gloo on CPU, NCCL on CUDA (one GPU per process).
  several machines (run the same command on every node, node_rank 0 .. nnodes-1):
  torchrun --nnodes=2 --node_rank=0 --nproc_per_node=4 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \\
      --rdzv-id=my-run -m course_utils.train TASK [options]
      HOST:PORT is a machine every node can reach (usually node 0); the world size is nnodes x nproc_per_node.
  Every optimizer step uses world_size x accumulate batches: 2 processes with --accumulate 1 train exactly like
  1 process with --accumulate 2. Only rank 0 prints, evaluates and writes checkpoints.

examples:
  python -m course_utils.train translator --threads 1            lesson 07's run, its test exact match at the end
  python -m course_utils.train mlm --size tiny --max-steps 3 --checkpoint-dir run   stop after 3 steps...
  python -m course_utils.train mlm --size tiny --checkpoint-dir run --resume         ...and finish the run
"""


# ------------------------------------------------------------------------------------------------ arguments
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m course_utils.train", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train one of the course's models with its lesson's recipe: 'classifier' (lesson 05, "
                    "language ID), 'mlm' (lesson 06, masked language model), 'translator' (lesson 07, English "
                    "to German numbers), 'gpt' (lesson 08, decoder-only language model), 'sft' and 'dpo' (lesson "
                    "11, the shipped base GPT fine-tuned on questions, then on preferences). Prints a progress bar "
                    "and a final metrics line.", epilog=EPILOG)
    parser.add_argument("task", help=f"one of {', '.join(TASK_NAMES)}")
    parser.add_argument("--size", default="lesson",
                        help=f"recipe preset, one of {', '.join(SIZES)}: 'tiny' runs in seconds, 'lesson' is the "
                             "notebook's run, 'large' the notebooks' GPU cells (default: lesson)")
    parser.add_argument("--epochs", type=int, help="passes over the training batches (default: the recipe's)")
    parser.add_argument("--steps", type=int,
                        help="total optimizer steps instead of --epochs (the learning-rate schedule spans them)")
    parser.add_argument("--max-steps", type=int,
                        help="stop after this many optimizer steps, keeping the schedule of the full run, and "
                             "save a checkpoint (continue later with --resume)")
    parser.add_argument("--accumulate", type=int, default=1,
                        help="batches per process per optimizer step (gradient accumulation; default 1)")
    parser.add_argument("--lr", type=float, help="peak learning rate (default: the recipe's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data, initialisation, masks, dropout")
    parser.add_argument("--device", default="auto", help=f"one of {', '.join(DEVICE_CHOICES)} (default auto: "
                                                          "CUDA when available)")
    parser.add_argument("--amp", action="store_true",
                        help="mixed precision: autocast matrix products to --amp-dtype (CPU and CUDA)")
    parser.add_argument("--amp-dtype", default="bf16", help="bf16 (default) or fp16 (with loss scaling by "
                                                            "torch.amp.GradScaler); both on CPU and CUDA")
    parser.add_argument("--checkpoint-activations", action="store_true",
                        help="gradient checkpointing: recompute each layer's activations in the backward pass")
    parser.add_argument("--threads", type=int, help="CPU threads per process (torch.set_num_threads)")
    parser.add_argument("--checkpoint-dir", type=Path,
                        help=f"write {CHECKPOINT_NAME} (model, optimizer, scheduler, random generators, data "
                             "position) here at the end, every --save-every steps and at --max-steps")
    parser.add_argument("--save-every", type=int, help="also save every N optimizer steps")
    parser.add_argument("--resume", action="store_true",
                        help=f"continue from CHECKPOINT_DIR/{CHECKPOINT_NAME} (same task, size, seed, processes)")
    parser.add_argument("--no-eval", action="store_true", help="skip the final evaluation")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def check_arguments(args: argparse.Namespace) -> None:
    """Raise a :class:`~course_utils.errors.CourseValueError` that names the flag and the fix."""
    if args.task not in TASK_NAMES:
        raise CourseValueError(f"unknown task {args.task!r}; choose one of {', '.join(TASK_NAMES)}")
    if args.size not in SIZES:
        raise CourseValueError(f"--size must be one of {', '.join(SIZES)}, got {args.size!r}")
    if args.device not in DEVICE_CHOICES:
        raise CourseValueError(f"--device must be one of {', '.join(DEVICE_CHOICES)}, got {args.device!r}")
    if args.amp_dtype not in AMP_DTYPES:
        raise CourseValueError(f"--amp-dtype must be one of {', '.join(AMP_DTYPES)}, got {args.amp_dtype!r}")
    for flag in ("epochs", "steps", "max_steps", "accumulate", "threads", "save_every"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise CourseValueError(f"--{flag.replace('_', '-')} must be a positive integer, got {value}")
    if args.steps is not None and args.epochs is not None:
        raise CourseValueError("give either --epochs or --steps, not both (--steps sets the total directly)")
    if args.lr is not None and not args.lr > 0:
        raise CourseValueError(f"--lr must be positive, got {args.lr}")
    if args.resume and args.checkpoint_dir is None:
        raise CourseValueError("--resume needs --checkpoint-dir: the folder that holds the run's last.pt")
    if args.resume and not (args.checkpoint_dir / CHECKPOINT_NAME).is_file():
        raise CourseValueError(f"--resume: no checkpoint at {args.checkpoint_dir / CHECKPOINT_NAME}; start "
                               "the run without --resume first (with --checkpoint-dir)")


# ------------------------------------------------------------------------------------- random generator states
def random_state() -> dict:
    """Every global generator of this process, as tensors and plain containers (``weights_only``-loadable)."""
    numpy_state = np.random.get_state()
    state = {"torch": torch.get_rng_state(), "python": random.getstate(),
             "numpy": {"keys": torch.from_numpy(numpy_state[1].astype(np.int64)), "position": int(numpy_state[2]),
                       "has_gauss": int(numpy_state[3]), "gauss": float(numpy_state[4])}}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_random_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    numpy = state["numpy"]
    np.random.set_state(("MT19937", numpy["keys"].numpy().astype(np.uint32), numpy["position"],
                         numpy["has_gauss"], numpy["gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def batch_seed(seed: int, epoch: int, index: int) -> int:
    """Seed of the generator a task draws from for batch ``index`` in ``epoch`` (lesson 06: the BERT mask).

    It depends on the data position only — not on the process that handles the batch — so every world size
    and a resumed run draw the same masks.
    """
    return ((seed * 1_000_003 + epoch) * 1_000_003 + index) % 2**63


# ------------------------------------------------------------------------------------------------ checkpoints
def save_checkpoint(path: Path, state: dict) -> None:
    """``torch.save`` to a temporary file beside ``path``, then rename: a crash never leaves half a checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    torch.save(state, temporary)
    os.replace(temporary, path)


def load_checkpoint(path: Path) -> dict:
    """Load a checkpoint written by :func:`save_checkpoint` (tensors and plain containers only)."""
    return torch.load(path, map_location="cpu", weights_only=True)


def check_resumable(checkpoint: dict, expected: dict) -> None:
    if checkpoint.get("format") != CHECKPOINT_FORMAT:
        raise CourseValueError(f"the checkpoint has format {checkpoint.get('format')!r}, this command writes "
                               f"{CHECKPOINT_FORMAT}; start a fresh run")
    for key, value in expected.items():
        if checkpoint["run"][key] != value:
            raise CourseValueError(f"cannot resume: the checkpoint was written with {key}={checkpoint['run'][key]!r}, "
                                   f"this run has {key}={value!r}; use the same flags (and number of processes)")


# --------------------------------------------------------------------------------------------------- training
def train(task: Task, args: argparse.Namespace, context: DistributedContext) -> dict:
    """Run the training loop of the module docstring; returns the metrics (evaluation on rank 0 only)."""
    recipe = task.recipe
    device = context.device
    sampler = batch_sampler(len(task.train_batches), context, shuffle=task.shuffle_batches, seed=args.seed)
    steps_per_epoch = len(sampler) // args.accumulate
    if steps_per_epoch == 0:
        raise CourseValueError(f"--accumulate {args.accumulate} is more than the {len(sampler)} batches each "
                               "process gets per epoch; lower it")
    total_steps = args.steps or (args.epochs or recipe.epochs) * steps_per_epoch
    stop_at = min(total_steps, args.max_steps or total_steps)
    warmup = recipe.warmup_for(total_steps)

    model = task.build_model()
    if args.checkpoint_activations:
        checkpoint_layers(model)
    model.to(device)
    optimizer = make_optimizer(model, lr=args.lr or recipe.lr, weight_decay=recipe.weight_decay)
    scheduler = make_scheduler(optimizer, warmup, total_steps, recipe.schedule)
    fp16 = args.amp and args.amp_dtype == "fp16"
    scaler = torch.amp.GradScaler(device.type, enabled=fp16)
    seed_everything(args.seed + context.rank)  # dropout: a different stream on every rank, replayed on resume
    run = {"task": task.name, "size": args.size, "seed": args.seed, "world_size": context.world_size,
           "accumulate": args.accumulate, "total_steps": total_steps,
           "amp": args.amp_dtype if args.amp else None}
    step, losses = 0, []
    if args.resume:
        checkpoint = load_checkpoint(args.checkpoint_dir / CHECKPOINT_NAME)
        check_resumable(checkpoint, run)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        if fp16:
            scaler.load_state_dict(checkpoint["scaler"])
        set_random_state(checkpoint["random"][context.rank])
        step, losses = checkpoint["step"], list(checkpoint["train_loss"])
    ddp = context.is_distributed
    net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None) if ddp else model

    def save() -> None:
        states = context.gather_objects(random_state())  # every rank's generators (a collective: all ranks call)
        if context.is_main and args.checkpoint_dir is not None:
            save_checkpoint(args.checkpoint_dir / CHECKPOINT_NAME, {
                "format": CHECKPOINT_FORMAT, "run": run, "step": step, "train_loss": losses,
                "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict() if fp16 else {},
                "random": states, "recipe": asdict(recipe)})

    bar = tqdm(total=stop_at, initial=step, disable=args.no_progress or not context.is_main,
               desc=f"{task.name} ×{context.world_size}")
    start = time.perf_counter()
    net.train()
    batches_of = {}  # epoch -> (that epoch's batch list, this rank's order of it)
    while step < stop_at:
        epoch, position = divmod(step, steps_per_epoch)
        if epoch not in batches_of:
            sampler.set_epoch(epoch)
            batches_of = {epoch: (task.epoch_batches(epoch), list(sampler))}
        batches, epoch_order = batches_of[epoch]
        order = epoch_order[position * args.accumulate:(position + 1) * args.accumulate]
        micro_batches = [to_device(task.prepare(batches[i],
                                                torch.Generator().manual_seed(batch_seed(args.seed, epoch, i))),
                                   device) for i in order]
        counts = torch.tensor([float(sum(task.target_count(b) for b in micro_batches))], dtype=torch.float64,
                              device=device)
        n_targets = context.all_reduce_sum(counts).item()     # targets in the whole step, all processes
        if n_targets == 0:
            raise CourseValueError(f"step {step} has no targets to score; check the task's batches")
        step_loss = torch.zeros(1, dtype=torch.float64, device=device)
        for k, batch in enumerate(micro_batches):
            last = k == len(micro_batches) - 1
            with (net.no_sync() if ddp and not last else nullcontext()):
                with autocast_context(device, args.amp_dtype if args.amp else None):
                    loss_sum = task.loss_sum(net, batch)
                # DDP averages gradients over processes: × world_size turns that mean into the sum over all
                scaler.scale(loss_sum * (context.world_size / n_targets)).backward()
            step_loss += loss_sum.detach().double()
        mean_loss = context.all_reduce_sum(step_loss).item() / n_targets
        if not math.isfinite(mean_loss):
            raise FloatingPointError(f"loss became {mean_loss} at step {step}: lower the learning rate, add "
                                     "warmup, or train without --amp fp16")
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip_norm or float("inf"))
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        losses.append(mean_loss)
        bar.update(1)
        bar.set_postfix(loss=f"{mean_loss:.3f}")
        if args.save_every and step % args.save_every == 0 and step < stop_at:
            save()
    bar.close()
    seconds = time.perf_counter() - start
    save()
    metrics = {"task": task.name, "size": args.size, "processes": context.world_size, "step": step,
               "total_steps": total_steps, "train loss": losses[-1] if losses else float("nan"),
               "seconds": round(seconds, 2)}
    if step == total_steps and not args.no_eval and context.is_main:
        model.eval()  # evaluated in float32, also after --amp training
        metrics.update(task.evaluate(model))
    return metrics


def main(argv: list[str] | None = None) -> dict:
    """Parse ``argv``, train, print the final metrics line on rank 0 and return the metrics."""
    args = build_parser().parse_args(argv)
    check_arguments(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    with distributed_session(args.device) as context:
        seed_everything(args.seed)  # the same data and initial weights on every rank
        task = build_task(args.task, args.size, seed=args.seed)
        metrics = train(task, args, context)
        if context.is_main:
            print("final metrics: " + json.dumps(metrics), flush=True)
            if args.checkpoint_dir is not None:
                (args.checkpoint_dir / "metrics.json").write_text(json.dumps(metrics, indent=1))
    return metrics


if __name__ == "__main__":
    try:
        main()
    except CourseError as error:
        print(f"python -m course_utils.train: error: {error}", file=sys.stderr)
        sys.exit(2)
