"""Exercises of notebook 10 (scaling out): the loss each rank backpropagates, which batches a rank gets, the
memory of the training state with and without sharding, and the capstone: a data-parallel step written with
torch.distributed, run by the checker on two forked gloo processes and compared with one process.

Every check draws fresh inputs (:class:`~.asserts.Draw`) plus the edge cases (one process, token counts that do
not divide evenly across ranks, a rank without tokens, batches that do not divide evenly, as many batches as
ranks) and compares the learner's function with the package's rule: the loss scaling of
``course_utils.train`` (``loss_sum · world_size / tokens of the step``), PyTorch's ``DistributedSampler`` through
:func:`course_utils.distributed.batch_sampler`, and 16 bytes per parameter (float32 weight, gradient and AdamW's
two moments), sharded or not.
"""
from __future__ import annotations

import copy
import datetime
import faulthandler
import inspect
import math
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from ..distributed import DistributedContext, batch_sampler
from ..losses import lm_loss_sum, lm_target_count
from .asserts import (
    Case,
    Draw,
    OwnWork,
    call_learner,
    check_function,
    learner_function,
)
from .core import Exercise, ExerciseFailure, Mistake, NotAttempted, learner_frames, raised_by_the_learner, solution_of


# ---------------------------------------------------------------------------- q1: the loss each rank backpropagates
def scaled_loss_reference(loss_sum: torch.Tensor, local_tokens: int, global_tokens: int,
                          world_size: int) -> torch.Tensor:
    """What ``course_utils.train`` backpropagates on each rank: DDP averages the ranks' gradients, so × world_size
    turns that mean into the sum over all ranks; ÷ the step's token count makes it the mean over all tokens."""
    return loss_sum * (world_size / global_tokens)


def rank_token_counts(draw: Draw, world_size: int, zero_rank: bool = False) -> list[int]:
    """Token counts of the ranks of one step, all different (so they never divide evenly); one rank may have none."""
    counts = draw.distinct(world_size, 1, 300)
    if zero_rank and world_size > 1:
        counts[draw.integer(0, world_size - 1)] = 0
    return counts


def loss_cases(draw: Draw) -> list[Case]:
    """``Case(..., (loss_sum, local_tokens, global_tokens, world_size))``: one process, uneven token counts, a rank
    without target tokens, many ranks."""
    steps = [("one process", [draw.integer(5, 300)], 0)]
    for what, world_size in (("uneven token counts", draw.integer(2, 4)),
                             ("a rank with no target tokens (all padding)", draw.integer(2, 4)),
                             ("uneven token counts, many ranks", draw.integer(5, 8))):
        counts = rank_token_counts(draw, world_size, zero_rank="no target" in what)
        rank = counts.index(0) if "no target" in what else draw.integer(0, world_size - 1)
        steps.append((what, counts, rank))
    cases = []
    for what, counts, rank in steps:
        local, total = counts[rank], sum(counts)
        loss_sum = (draw.randn(local).abs() * 3).sum()  # this rank's summed token losses
        cases.append(Case(f"{what}: rank {rank} of world_size {len(counts)}, {local} tokens on this rank, {total} "
                          f"in the step ({' + '.join(map(str, counts))})", (loss_sum, local, total, len(counts))))
    return cases


def check_ddp_scaled_loss(ns) -> None:
    function = learner_function(ns, "ddp_scaled_loss")
    draw = Draw()
    cases = loss_cases(draw)
    check_function(function, scaled_loss_reference, cases, "ddp_scaled_loss", twins=loss_cases(draw.twin()),
                   probes=cases)
    for case in cases:  # the value is right: now the gradient that reaches the model through loss_sum
        loss_sum, local, total, world_size = case.args
        leaf = loss_sum.detach().clone().requires_grad_()
        got = call_learner(function, "ddp_scaled_loss", case.description, leaf * 1, local, total, world_size)
        if not got.requires_grad or got.grad_fn is None:
            raise ExerciseFailure(f"on {case.description}: the value is right but it carries no gradient: something "
                                  "cut the graph (.item(), float(...), .detach(), torch.tensor(...) of a number). "
                                  "backward() must reach the model through loss_sum: compute on the tensor.")
        call_learner(got.backward, "ddp_scaled_loss", case.description)
        if leaf.grad is None or not math.isclose(float(leaf.grad), world_size / total, rel_tol=1e-4):
            raise ExerciseFailure(f"on {case.description}: the value is right but the gradient that reaches "
                                  "loss_sum is not world_size / global_tokens: a detached factor changes it.")


R = scaled_loss_reference
MEANS = ("dividing by this rank's own token count gives each rank's mean; DDP then averages the means, which weights "
         "a rank with few tokens as much as one with many (and a rank without tokens gets 0 / 0). Use the token "
         "count of all ranks together")
LOSS_MISTAKES = (
    Mistake("returns a float", "return a tensor (backward() needs one): keep computing on loss_sum, no .item() or "
            "float(...)", variant=lambda s, local, total, w: float(R(s, local, total, w)),
            shows=lambda case, got, _: isinstance(got, (int, float, np.number))),
    Mistake("mean of per-rank means", MEANS, variant=lambda s, local, total, w: s / local),
    Mistake("guarded mean of means", MEANS, variant=lambda s, local, total, w: s / max(local, 1)),
    Mistake("forgot DDP divides by world_size", "DDP *averages* the gradients of the ranks: it divides by world_size "
            "after summing. Divide by the global token count and multiply by world_size, so the average becomes "
            "the sum over all tokens / all tokens", variant=lambda s, local, total, w: R(s, local, total, w) / w),
    Mistake("no normalisation", "the sum alone makes the gradient grow with the batch size; divide by the global "
            "token count (and multiply by world_size)", variant=lambda s, local, total, w: s),
    Mistake("divided by world_size", "you divided by world_size; DDP already does that when it averages the "
            "gradients — multiply by world_size instead",
            variant=lambda s, local, total, w: R(s, local, total, w) / w / w),
)


# ---------------------------------------------------------------------------- q2: which batches a rank gets
def rank_batches_reference(n_batches: int, rank: int, world_size: int) -> list[int]:
    context = DistributedContext(rank, world_size, rank, torch.device("cpu"), "gloo")
    return list(batch_sampler(n_batches, context, shuffle=False))


def batch_cases(draw: Draw) -> list[Case]:
    world = draw.integer(3, 4)
    many = draw.integer(5, 8)
    configs = [
        (draw.integer(3, 9), 1, "one process"),
        (world, world, "as many batches as ranks"),
        (world * draw.integer(2, 4), world, "batches divide evenly"),
        (world * draw.integer(2, 4) + draw.integer(2, world - 1), world, "batches do not divide evenly"),
        (many * draw.integer(2, 4) + draw.integer(1, many - 1), many, "batches do not divide evenly, many ranks"),
    ]
    return [Case(f"{what}: {n} batches, rank {rank} of world_size {size}", (n, rank, size))
            for n, size, what in configs for rank in range(size)]


def as_index_list(function):
    """The learner's function with any other ordered iterable of indices (a generator, a sampler …) turned into a
    list; lists, ranges, tensors and arrays stay as they are (:func:`difference` accepts them), unordered or text
    results too (it rejects them)."""
    def run(*args):
        got = function(*args)
        if isinstance(got, (list, tuple, range, torch.Tensor, np.ndarray, str, bytes, dict, set, frozenset)):
            return got
        return list(got) if hasattr(got, "__iter__") else got
    return run


def indices(got) -> list[int] | None:
    """``got`` as a list of ints, or ``None`` when it is not an ordered sequence of ints."""
    if isinstance(got, (torch.Tensor, np.ndarray)):
        got = got.tolist()
    if not isinstance(got, (list, tuple, range)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in got):
        return None
    return [int(i) for i in got]


RB = rank_batches_reference
BATCH_MISTAKES = (
    Mistake("hard-coded two ranks", "these are the batches of another world_size: use the world_size you are given",
            variant=lambda n, rank, size: RB(n, rank, size + 1),
            shows=lambda case, got, _: indices(got) in [RB(case.args[0], case.args[1], other) for other in
                                                        range(case.args[1] + 1, min(case.args[0], 8) + 1)
                                                        if other != case.args[2]]),
    Mistake("contiguous blocks", "contiguous blocks split the batches fairly, but a step's batches would come from "
            "far apart in the epoch. DistributedSampler interleaves: rank r takes r, r + world_size, r + "
            "2·world_size, …, so one step of all ranks uses neighbouring batches — as one process accumulating them "
            "would", variant=lambda n, rank, size: list(range(rank * (n // size), (rank + 1) * (n // size)))),
    Mistake("tail not dropped", "some ranks get one batch more than others: they make an extra step and wait forever "
            "for the others in the all-reduce. Drop the tail: stop at n_batches − n_batches % world_size",
            variant=lambda n, rank, size: list(range(rank, n, size))),
    Mistake("one batch too many dropped", "you dropped more than the tail — only the last n_batches % world_size "
            "batches are left out", variant=lambda n, rank, size: RB(n, rank, size)[:-1],
            shows=lambda case, got, _: indices(got) is not None and len(indices(got)) < len(RB(*case.args))
            and indices(got) == RB(*case.args)[:len(indices(got))]),
    Mistake("wrong order", "the right batches in the wrong order: rank r takes r, r + world_size, … in increasing "
            "order", variant=lambda n, rank, size: RB(n, rank, size)[::-1],
            shows=lambda case, got, _: indices(got) is not None and sorted(indices(got)) == RB(*case.args)),
)


def check_rank_batches(ns) -> None:
    check_function(learner_function(ns, "rank_batches"), rank_batches_reference, batch_cases(Draw()),
                   "rank_batches", prepare=as_index_list,
                   forbidden={"the package's course_utils.distributed.batch_sampler": batch_sampler})


# ---------------------------------------------------------------------------- q3: training-state memory
BYTES_PER_PARAMETER = 4 + 4 + 4 + 4
"""float32 weight, gradient, and AdamW's two moments (exp_avg, exp_avg_sq)."""


def state_reference(n_parameters: int, world_size: int, sharded: bool) -> int:
    full = BYTES_PER_PARAMETER * n_parameters
    return full // world_size if sharded else full


def state_cases(draw: Draw) -> list[Case]:
    cases = []
    for world_size, scale, what in ((1, 10 ** 6, "one GPU"), (draw.integer(2, 6), 10 ** 8, "a few GPUs"),
                                    (draw.choice((8, 16, 32, 64)), 10 ** 10, "many GPUs, a large model")):
        n_parameters = world_size * draw.integer(scale // 20, scale)  # FSDP pads to a multiple of world_size
        for sharded in (False, True):
            mode = "sharded (FSDP)" if sharded else "replicated (DDP)"
            cases.append(Case(f"{what}: {n_parameters:,} parameters, world_size={world_size}, sharded={sharded} "
                              f"({mode})", (n_parameters, world_size, sharded)))
    return cases


def check_training_state_bytes(ns) -> None:
    cases = state_cases(Draw())
    check_function(learner_function(ns, "training_state_bytes"), state_reference, cases, "training_state_bytes",
                   probes=cases)


S = state_reference
STATE_MISTAKES = (
    Mistake("a float", "return an int (a number of bytes): the count is whole — divide with // (the shards are equal: "
            "FSDP pads the parameters to a multiple of world_size)",
            variant=lambda n, w, sharded: float(S(n, w, sharded)),
            shows=lambda case, got, _: isinstance(got, (float, np.floating)) and got == S(*case.args)),
    Mistake("sharding does not divide", "with sharding every rank keeps only its 1/world_size share of weights, "
            "gradients and optimizer state: divide by world_size", variant=lambda n, w, sharded: S(n, w, False)),
    Mistake("DDP divided too", "without sharding (plain data parallelism, DDP) every rank holds a full copy: do not "
            "divide by world_size", variant=lambda n, w, sharded: S(n, w, True)),
    Mistake("Adam moments forgotten", "8 bytes per parameter counts weights and gradients; AdamW also keeps two "
            "float32 moments per parameter (exp_avg and exp_avg_sq): 16 bytes in all",
            variant=lambda n, w, sharded: S(n, w, sharded) // 2),
    Mistake("one part missing", "12 bytes per parameter: one of weights, gradients or the two Adam moments is "
            "missing (4 + 4 + 8 = 16 bytes in float32)", variant=lambda n, w, sharded: S(n, w, sharded) * 3 // 4),
    Mistake("only the optimizer state sharded (ZeRO-1)", "only the optimizer state is sharded there (ZeRO-1); FSDP "
            "shards the weights and the gradients too: all 16 bytes per parameter are divided by world_size",
            variant=lambda n, w, sharded: 8 * n + 8 * n // w if sharded else S(n, w, sharded)),
    Mistake("weights kept whole (ZeRO-2)", "the weights are kept whole there (ZeRO-2); FSDP shards the weights too: "
            "all 16 bytes per parameter are divided by world_size",
            variant=lambda n, w, sharded: 4 * n + 12 * n // w if sharded else S(n, w, sharded)),
    Mistake("multiplied by world_size", "you multiplied by world_size; each rank holds 1/world_size of the state: "
            "divide", variant=lambda n, w, sharded: S(n, w, False) * w if sharded else S(n, w, sharded)),
)


q1 = Exercise(
    name="The loss each rank backpropagates",
    variables=("ddp_scaled_loss",),
    checker=check_ddp_scaled_loss,
    hints=("DDP sums the ranks' gradients and then divides by world_size. You want the sum over all the tokens of "
           "the step divided by all those tokens — whatever each rank holds, even none.",
           "Start from loss_sum (keep it a tensor, so backward() reaches the model); divide by the token count of "
           "the whole step, global_tokens (not this rank's); multiply by world_size to undo DDP's average. "
           "local_tokens is not needed."),
    solution=solution_of("lesson10", "ddp_scaled_loss"),
    mistakes=LOSS_MISTAKES,
    success="Correct! The averaged gradient is now the gradient of the mean over every token of the step.",
)

q2 = Exercise(
    name="Which batches does a rank get?",
    variables=("rank_batches",),
    checker=check_rank_batches,
    hints=("Deal the batches out like cards — one to each rank in turn — and stop before a round that cannot give "
           "every rank one more.",
           "usable = the largest multiple of world_size that is at most n_batches; rank r takes r, r + world_size, "
           "r + 2·world_size, … while below usable. Return them in increasing order (a list, a range or a 1-D "
           "tensor)."),
    solution=solution_of("lesson10", "rank_batches"),
    mistakes=BATCH_MISTAKES,
    success="Correct! Every rank makes the same number of steps, and one step uses neighbouring batches.",
)

q3 = Exercise(
    name="Training-state memory, replicated or sharded",
    variables=("training_state_bytes",),
    checker=check_training_state_bytes,
    hints=("Count the float32 numbers AdamW training keeps per parameter, and ask which of them each GPU stores "
           "under DDP and under FSDP.",
           "Per parameter: 4 bytes of weight + 4 of gradient + 4 + 4 of Adam's two moments = 16. Replicated: the "
           "full 16 · n_parameters on every GPU. Sharded: that divided by world_size. Return a whole number, an "
           "int (integer division)."),
    solution=solution_of("lesson10", "training_state_bytes"),
    mistakes=STATE_MISTAKES,
    success="Correct! DDP saves time, not memory per GPU; FSDP divides the state by the number of GPUs.",
)


# ---------------------------------------------------------------------------- q4 (capstone): a data-parallel step
WORLD_SIZE = 2
STEP_TIMEOUT = 30.0   # seconds for the whole run of both processes (a few on a laptop)
COLLECTIVES = ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
               "reduce_scatter_tensor", "barrier", "all_reduce_coalesced")


@dataclass
class StepSetup:
    """One check of the data-parallel step: the model every rank starts from, the learning rate, and for each
    optimizer step the batch of every rank (uneven token counts; one rank without targets at the last step)."""

    model: nn.Module
    lr: float
    pad_id: int
    steps: list[list[torch.Tensor]]
    description: str

    def loss_sum(self, model: nn.Module, batch: torch.Tensor) -> torch.Tensor:
        return lm_loss_sum(model, batch, self.pad_id)

    def target_count(self, batch: torch.Tensor) -> int:
        return lm_target_count(batch, self.pad_id)

    def counts(self, step: int) -> list[int]:
        return [self.target_count(batch) for batch in self.steps[step]]


def step_setup(draw: Draw) -> StepSetup:
    """A tiny GPT (no dropout), SGD, and three steps: rank 0 with few targets and rank 1 with many, then the other
    way round, then a rank whose batch is all padding."""
    from ..config import TransformerConfig
    from ..language_model import DecoderOnlyLM

    vocab = draw.integer(20, 40)
    pad_id = draw.integer(1, vocab - 1)
    seq = draw.integer(6, 9)
    config = TransformerConfig(vocab_size=vocab, d_model=8, n_heads=2, d_ff=draw.integer(10, 20), n_layers=1,
                               max_len=seq, dropout=0.0, norm="pre", positional="learned", pad_id=pad_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(draw.integer(0, 2 ** 30))
        model = DecoderOnlyLM(config)
    pool = torch.tensor([i for i in range(vocab) if i != pad_id])

    def batch(rows: int, lengths: list[int]) -> torch.Tensor:
        ids = pool[torch.randint(len(pool), (rows, seq), generator=draw.generator())]
        for row, length in enumerate(lengths):
            ids[row, length:] = pad_id
        return ids

    few, many = draw.integer(1, 2), draw.integer(3, 4)
    steps = [[batch(few, [draw.integer(2, seq - 2) for _ in range(few)]), batch(many, [seq] * many)],
             [batch(many, [draw.integer(seq - 2, seq) for _ in range(many)]), batch(few, [2] * few)],
             [batch(2, [seq, draw.integer(2, seq)]), batch(2, [1, 1])]]
    setup = StepSetup(model, draw.choice((0.5, 1.0, 2.0)), pad_id, steps, "")
    counts = "; ".join(f"step {s + 1}: {' and '.join(map(str, setup.counts(s)))}" for s in range(len(steps)))
    setup.description = (f"2 gloo processes, a GPT of vocab {vocab} (pad_id {pad_id}), SGD with lr={setup.lr}, "
                         f"3 steps; target tokens on rank 0 and rank 1 — {counts}")
    return setup


def reference_states(setup: StepSetup) -> list[dict[str, torch.Tensor]]:
    """One process on the same global batches: the loss summed over every rank's batch, divided by all their
    target tokens, one SGD step per global batch."""
    model = copy.deepcopy(setup.model)
    optimizer = torch.optim.SGD(model.parameters(), lr=setup.lr)
    states = []
    for batches in setup.steps:
        optimizer.zero_grad()
        tokens = sum(setup.target_count(b) for b in batches)
        (sum(setup.loss_sum(model, b) for b in batches) / tokens).backward()
        optimizer.step()
        states.append({k: v.detach().clone() for k, v in model.named_parameters()})
    return states


class RankRecorder:
    """In a rank's process, while the learner's step runs: any call into ``forbidden`` (as :class:`OwnWork`), and
    every collective of ``torch.distributed`` with the size of the tensor it was given."""

    def __init__(self, forbidden: dict) -> None:
        self.guard = OwnWork(forbidden)
        self.codes = {}
        for name in COLLECTIVES:
            function = getattr(dist, name, None)
            code = getattr(inspect.unwrap(function), "__code__", None) if function is not None else None
            if code is not None:
                self.codes[code] = name
        self.collectives: list[tuple[str, int | None]] = []

    def _profile(self, frame, event, arg) -> None:
        self.guard._profile(frame, event, arg)
        if event == "call" and frame.f_code in self.codes:
            tensor = frame.f_locals.get("tensor")
            self.collectives.append((self.codes[frame.f_code],
                                     tensor.numel() if isinstance(tensor, torch.Tensor) else None))

    def __enter__(self) -> "RankRecorder":
        self.guard.used = None
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(self._previous)


def loopback_interface() -> str | None:
    """The loopback network interface (``lo`` on Linux, ``lo0`` on macOS) for gloo, if one is found."""
    try:
        return next((name for _, name in socket.if_nameindex() if name.startswith("lo")), None)
    except OSError:
        return None


def run_rank(rank: int, function, setup: StepSetup, folder: str) -> None:
    """A rank's process (forked): join the gloo group, run the learner's step on this rank's batch of every step,
    save what happened, leave. Never returns."""
    result: dict[str, Any] = {"rank": rank, "states": [], "collectives": [], "error": None, "changed_batch": None}
    try:
        faulthandler.disable()  # a rank stopped in a collective is no crash to report
        log = os.open(os.path.join(folder, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.stdout = sys.stderr = open(os.devnull, "w")
        torch.set_num_threads(1)
        if "GLOO_SOCKET_IFNAME" not in os.environ and loopback_interface():
            os.environ["GLOO_SOCKET_IFNAME"] = loopback_interface()
        dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "rendezvous"), rank=rank,
                                world_size=WORLD_SIZE, timeout=datetime.timedelta(seconds=STEP_TIMEOUT / 2))
        model = setup.model
        optimizer = torch.optim.SGD(model.parameters(), lr=setup.lr)
        for step, batches in enumerate(setup.steps):
            batch = batches[rank].clone()
            recorder = RankRecorder({"torch.nn.parallel.DistributedDataParallel": DistributedDataParallel})
            try:
                with recorder:
                    function(model, optimizer, batch, setup.loss_sum, setup.target_count)
            except NotImplementedError as error:
                if raised_by_the_learner(error):
                    result["error"] = {"kind": "not implemented", "step": step}
                    break
                result["error"] = {"kind": "raised", "step": step, "type": "NotImplementedError",
                                   "message": (str(error).strip().splitlines() or [""])[0], "learner": True,
                                   "forbidden": recorder.guard.used}
                break
            except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
                result["error"] = {"kind": "raised", "step": step, "type": type(error).__name__,
                                   "message": (str(error).strip().splitlines() or [""])[0],
                                   "learner": learner_frames(error), "forbidden": recorder.guard.used}
                break
            finally:
                result["collectives"].append(recorder.collectives)
            if recorder.guard.used:
                result["error"] = {"kind": "forbidden", "step": step, "what": recorder.guard.used}
                break
            if not torch.equal(batch, batches[rank]) and result["changed_batch"] is None:
                result["changed_batch"] = step
            result["states"].append({k: v.detach().clone() for k, v in model.named_parameters()})
        else:
            dist.barrier()
    except BaseException as error:  # noqa: BLE001 - report whatever stopped this process
        result["error"] = result["error"] or {"kind": "setup", "type": type(error).__name__,
                                              "message": (str(error).strip().splitlines() or [""])[0]}
    finally:
        try:
            torch.save(result, os.path.join(folder, f"rank{rank}.pt"))
        finally:
            os._exit(0)


def run_ranks(function, setup: StepSetup) -> list[dict | None]:
    """Fork one process per rank, wait for them (a rank left waiting in a collective after the other ended is
    stopped), and return what each saved (``None``: stopped or timed out)."""
    if not hasattr(os, "fork"):
        raise ExerciseFailure("this check starts two processes with os.fork, which this system does not have (it "
                              "runs on Linux and macOS); `q4.solution()` shows a right answer.")
    folder = tempfile.mkdtemp(prefix="course-ddp-")
    pids = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "fork in a multi-threaded process": the child only computes and exits
            for rank in range(WORLD_SIZE):
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    run_rank(rank, function, setup, folder)
                pids.append(pid)
        results: list[dict | None] = [None] * WORLD_SIZE
        running = dict(enumerate(pids))
        start, first_end = time.monotonic(), None
        while running:
            for rank, pid in list(running.items()):
                if os.waitpid(pid, os.WNOHANG)[0]:
                    del running[rank]
                    path = os.path.join(folder, f"rank{rank}.pt")
                    results[rank] = torch.load(path, weights_only=False) if os.path.exists(path) else None
                    first_end = first_end or time.monotonic()
            now = time.monotonic()
            if running and (now - start > STEP_TIMEOUT or (first_end and now - first_end > 3.0)):
                for pid in running.values():
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        return results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def step_gradients(setup: StepSetup, step: int, state: dict[str, torch.Tensor]):
    """``(g_r for each rank, T_r for each rank)``: the gradient of each rank's *summed* loss at ``state``."""
    model = copy.deepcopy(setup.model)
    with torch.no_grad():
        for key, p in model.named_parameters():
            p.copy_(state[key])
    grads = []
    for batch in setup.steps[step]:
        model.zero_grad()
        setup.loss_sum(model, batch).backward()
        grads.append({k: p.grad.detach().clone() for k, p in model.named_parameters()})
    return grads, setup.counts(step)


def gradient_mistakes(grads, counts) -> list[tuple[str, list[dict[str, torch.Tensor]]]]:
    """The per-rank gradients that typical wrong steps apply, each with its diagnosis."""
    total, world = sum(counts), len(counts)
    keys = list(grads[0])

    def combine(weights):  # one gradient for every rank: Σ_r weight_r · g_r
        return {k: sum(w * g[k] for w, g in zip(weights, grads)) for k in keys}

    def each(weight_of):   # each rank its own: weight_r · g_r
        return [{k: weight_of(r) * grads[r][k] for k in keys} for r in range(world)]
    means = [1 / c if c else float("nan") for c in counts]
    return [
        ("the ranks stepped with different gradients: no gradient was all-reduced, so each rank followed its own "
         "share of the batch and the copies drift apart. After backward(), dist.all_reduce every parameter's .grad "
         "(a SUM), before optimizer.step()", each(lambda r: 1 / total)),
        ("the ranks stepped with different gradients: each one its own mean, and no gradient was all-reduced. "
         "All-reduce the token count first (T over all ranks), backpropagate loss_sum / T, then dist.all_reduce "
         "every .grad", each(lambda r: means[r])),
        ("that is the mean of the ranks' means: each rank divided by its own token count, so a token of a short "
         "batch weighs more than one of a long batch. All-reduce the token count and divide every rank's loss_sum "
         "by that same global T", [combine([m / world for m in means])] * world),
        ("each rank divided by its own token count: all-reduce the token count and divide by the global T (the "
         "sum of the per-rank means is not the mean over all tokens)", [combine(means)] * world),
        ("the step is world_size times too small: with loss_sum / T (T over all ranks) and a SUM all-reduce of "
         "the gradients nothing is left to divide — you divided by world_size once more",
         [combine([1 / (total * world)] * world)] * world),
        ("the step is world_size² times too small: you divided by world_size twice (the loss and again the "
         "gradients); with loss_sum / T and a SUM all-reduce there is nothing to divide",
         [combine([1 / (total * world * world)] * world)] * world),
        ("the step is world_size times too large: × world_size undoes DDP's average, but your dist.all_reduce "
         "sums — with a SUM all-reduce backpropagate loss_sum / T as it is",
         [combine([world / total] * world)] * world),
    ]


def applied_gradients(before: dict, after: dict, lr: float) -> dict[str, torch.Tensor]:
    """The gradient an SGD step applied: (before - after) / lr."""
    return {k: (before[k] - after[k]) / lr for k in before}


def same_states(a: dict, b: dict, atol: float = 1e-6, rtol: float = 1e-5) -> bool:
    return all(torch.allclose(a[k], b[k], atol=atol, rtol=rtol) for k in a)


def largest_gap(a: dict, b: dict) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def diagnose_step(setup: StepSetup, step: int, history: list[dict], before: list[dict], after: list[dict],
                  reference: dict, collectives: list[list[tuple[str, int | None]]]) -> str:
    """Why the ranks' weights after ``step`` (started from ``before``, per rank) are not one process's;
    ``history`` holds the right weights before each step so far."""
    if any(not torch.isfinite(v).all() for state in after for v in state.values()):
        return ("the weights became NaN: a rank without target tokens divided 0 by 0 — its own mean. Divide every "
                "rank's loss_sum by the token count of *all* ranks (all-reduced), which is never 0 here")
    if all(same_states(b, a, atol=0.0, rtol=0.0) for b, a in zip(before, after)):
        return ("the weights did not change: no optimizer.step(), or the gradients were cleared between "
                "backward() and step() — zero_grad() comes first, step() last")
    applied = [applied_gradients(b, a, setup.lr) for b, a in zip(before, after)]
    ranks_differ = not same_states(after[0], after[1])
    sizes = [n for name, n in collectives[0] if name == "all_reduce"]
    if ranks_differ and all(n == 1 for n in sizes):
        return ("the ranks ended with different weights: no gradient was all-reduced"
                + (" — you all-reduced only single numbers (the token count, the loss), and backward() runs on each "
                   "rank's own graph" if sizes else "") +
                ". After backward(), sum every parameter's .grad over the ranks with dist.all_reduce, before "
                "optimizer.step()")
    if step > 0:
        grads, counts = step_gradients(setup, step - 1, history[step - 1])
        earlier = {k: sum(g[k] for g in grads) / sum(counts) for k in grads[0]}
        grads, counts = step_gradients(setup, step, history[step])
        now = {k: sum(g[k] for g in grads) / sum(counts) for k in grads[0]}
        for factor in (1, WORLD_SIZE):  # the old gradient left in .grad, all-reduced again or not
            if all(same_states(applied[r], {k: factor * earlier[k] + now[k] for k in now}, atol=1e-5, rtol=1e-3)
                   for r in range(WORLD_SIZE)):
                return (f"at step {step + 1} the gradient of step {step} was still there: backward() adds into "
                        ".grad, so zero_grad is forgotten — call optimizer.zero_grad() at the start of every step")
    grads, counts = step_gradients(setup, step, before[0])
    for message, wrong in gradient_mistakes(grads, counts):
        if all(same_states(applied[r], wrong[r], atol=1e-5, rtol=1e-3) for r in range(WORLD_SIZE)):
            return message
    if ranks_differ:
        return ("the ranks ended with different weights: every rank must apply the same gradient — all-reduce "
                "(SUM) every parameter's .grad after backward(), before optimizer.step()")
    return (f"after step {step + 1} your weights differ from one process's on the same global batch (by up to "
            f"{largest_gap(after[0], reference):.3g}): zero the gradients, all-reduce the token count, backpropagate "
            "loss_sum / T, all-reduce (SUM) every .grad, optimizer.step()")


def check_data_parallel_step(ns) -> None:
    function = learner_function(ns, "data_parallel_step")
    setup = step_setup(Draw())
    where = setup.description
    reference = reference_states(setup)  # first: the processes forked next find torch's optimizer code loaded
    results = run_ranks(function, setup)
    errors = [(rank, r["error"]) for rank, r in enumerate(results) if r is not None and r["error"]]
    if any(error["kind"] == "not implemented" for _, error in errors):
        raise NotAttempted
    for _, error in errors:
        if error["kind"] == "forbidden" or (error["kind"] == "raised" and error.get("forbidden")):
            raise ExerciseFailure(f"your `data_parallel_step` calls {error.get('what') or error['forbidden']} to do "
                                  "the work: all-reduce the gradients yourself with dist.all_reduce — the point of "
                                  "the exercise.")
    broken = ("Connection reset", "Connection closed", "Timed out", "timed out", "Timeout", "timeout")
    learner_errors = [(rank, e) for rank, e in errors if e["kind"] == "raised" and e["learner"]
                      and not any(text in e["message"] for text in broken)]
    if not learner_errors and (any(r is None for r in results)
                               or any(any(text in e.get("message", "") for text in broken) for _, e in errors)):
        raise ExerciseFailure(f"on {where}: a rank was left waiting in a collective (stopped after "
                              f"{STEP_TIMEOUT:.0f} s or once the other rank had ended): every rank must call the "
                              "same collectives, in the same order — the same number of dist.all_reduce on each.")
    for rank, error in learner_errors + errors:
        if error["kind"] in ("raised", "setup"):
            step = f", step {error['step'] + 1}" if "step" in error else ""
            hint = step_error_hint(error["message"])
            origin = "your `data_parallel_step` raised" if error.get("learner") else "the process stopped with"
            raise ExerciseFailure(f"on {where}, rank {rank}{step}: {origin} {error['type']}: {error['message']}"
                                  + (f". {hint}" if hint else "") + ".")
    if any(r is None for r in results):
        raise ExerciseFailure(f"on {where}: a rank was left waiting in a collective (stopped after "
                              f"{STEP_TIMEOUT:.0f} s or once the other rank had ended): every rank must call the "
                              "same collectives, in the same order — the same number of dist.all_reduce on each.")
    for rank, result in enumerate(results):
        if result["changed_batch"] is not None:
            raise ExerciseFailure(f"on {where}, rank {rank}, step {result['changed_batch'] + 1}: your "
                                  "`data_parallel_step` changed the batch it was given in place; leave it as it is.")
    start = {k: v.detach().clone() for k, v in setup.model.named_parameters()}
    for step, expected in enumerate(reference):
        after = [result["states"][step] for result in results]
        if all(same_states(state, expected) for state in after):
            continue
        before = [start] * WORLD_SIZE if step == 0 else [result["states"][step - 1] for result in results]
        raise ExerciseFailure(f"on {where}: "
                              + diagnose_step(setup, step, [start] + reference, before, after, expected,
                                              [r["collectives"][step] for r in results]) + ".")


def step_error_hint(message: str) -> str | None:
    if "not been initialized" in message or "init_process_group" in message:
        return ("The checker starts the processes and joins the group before calling your step: use "
                "dist.all_reduce, dist.get_rank() and dist.get_world_size(), never init_process_group")
    if "does not require grad" in message or "element 0 of tensors" in message:
        return "backward() needs the loss as a tensor in the graph: keep loss_sum(model, batch) a tensor"
    return None


q4 = Exercise(
    name="Capstone: a data-parallel training step",
    variables=("data_parallel_step",),
    checker=check_data_parallel_step,
    hints=("Every rank holds the same model and its own share of the batch. What must the ranks agree on before "
           "the backward pass, and what after it, so that every copy takes exactly the step one process would "
           "take on the whole batch? Stuck? the package's training command does this with DDP (`from course_utils "
           "import train`); `q4.solution()` shows the manual version.",
           "1. clear the old gradients through the optimizer; 2. count this rank's target tokens, make that a "
           "tensor and sum it over the ranks with dist.all_reduce — that is T; 3. backpropagate this rank's "
           "summed loss divided by T; 4. for every parameter, sum its .grad over the ranks with dist.all_reduce "
           "(no division afterwards: the sum of the ranks' parts is the gradient of the mean over all T tokens); "
           "5. one optimizer step. Every rank runs the same collectives in the same order."),
    solution=solution_of("lesson10", "data_parallel_step"),
    success="Correct! Two processes that each see their share of every batch end with exactly the weights of one "
            "process on the whole batch — uneven token counts and a rank without targets included.",
    task=(
        "**Capstone — a data-parallel training step, by hand.** Write `data_parallel_step(model, optimizer, batch, "
        "loss_sum, target_count)`: one optimizer step of data parallelism, run by every rank at the same time "
        "inside a `torch.distributed` process group (the checker starts the processes and the group). `batch` is "
        "this rank's share of the step's global batch; `loss_sum(model, batch)` gives its summed token loss (a "
        "tensor in the graph) and `target_count(batch)` its number of target tokens (an int, 0 for a batch of "
        "padding). The step must move every rank's model exactly as one process would on the whole global "
        "batch, with the mean over all $T = \\sum_r T_r$ target tokens of the step:\n\n"
        "$$g = \\frac{1}{T} \\sum_{r} \\nabla \\text{loss\\_sum}_r, \\qquad \\text{i.e. each rank backpropagates } "
        "\\text{loss\\_sum}_r / T \\text{ and the gradients are summed over the ranks.}$$\n\n"
        "So: clear the old gradients (`optimizer.zero_grad()`), sum the token count over the ranks "
        "(`dist.all_reduce`, whose default is a SUM), backpropagate `loss_sum / T`, sum every "
        "parameter's `.grad` over the ranks with `dist.all_reduce`, then `optimizer.step()`. Write the all-reduce "
        "of the gradients yourself: `DistributedDataParallel` is not accepted here (section 3 lets it do the work "
        "for `course_utils.train`). Leave `batch` unchanged; what the function returns is ignored.\n\n"
        "How it is checked: the checker forks 2 processes (the `fork` start method, so a function defined in "
        "this notebook works; Linux and macOS), joins them in a gloo group on the CPU, and runs three steps of "
        "your function on a tiny random GPT with SGD, each rank on its own batches: first rank 0 with few target "
        "tokens and rank 1 with many, then the other way round, then one rank whose batch is all padding. After "
        "every step both ranks' weights must equal those of one process that takes the same steps on both "
        "batches together (divided by all their tokens), to float rounding. It takes a few seconds; a rank left "
        "waiting in a collective is stopped. `q4.hint()` and `q4.solution()` help; stuck? the package trains "
        "this way with DDP: `from course_utils import train` (section 3)."
    ),
    starter=(
        "import torch\n"
        "import torch.distributed as dist\n"
        "\n"
        "\n"
        "def data_parallel_step(model, optimizer, batch, loss_sum, target_count):\n"
        "    assert dist.is_initialized()  # it runs inside a process group: dist.get_rank(), dist.get_world_size()\n"
        "    # zero_grad; T = target_count(batch) summed over the ranks (dist.all_reduce);\n"
        "    # (loss_sum(model, batch) / T).backward(); dist.all_reduce every p.grad; optimizer.step()\n"
        "    raise NotImplementedError\n"
    ),
)
