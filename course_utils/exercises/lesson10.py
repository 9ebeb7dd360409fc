"""Exercises of notebook 10 (scaling out): what each rank sends in a ring all-reduce; the capstone, a bucketed
all-reduce from backward hooks checked against DDP on two processes; what one more checkpointed layer keeps."""
from __future__ import annotations

import copy
import datetime
import faulthandler
import functools
import inspect
import math
import multiprocessing
import os
import pathlib
import shutil
import socket
import sys
import tempfile
import textwrap
import time
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

from ..distributed import BucketedAllReduce
from ..losses import lm_loss
from .asserts import Case, Draw, check_function, learner_function
from .core import (
    PLANTED,
    Exercise,
    ExerciseFailure,
    Mismatch,
    Mistake,
    NotAttempted,
    learner_frames,
    raised_by_the_learner,
    solution_of,
)


# ---------------------------------------------------------------------------- q1: what each rank sends in a ring
def ring_sent_reference(n_elements: int, world_size: int) -> list[int]:
    """Numbers each rank sends: all but chunk (r+1) mod N, then all but (r+2) mod N (tensor_split's sizes)."""
    n, w = n_elements, world_size
    sizes = [n // w + (c < n % w) for c in range(w)]
    return [2 * n - sizes[(r + 1) % w] - sizes[(r + 2) % w] for r in range(w)]


def check_ring_sent(ns) -> None:
    draw = Draw()
    w, many = draw.integer(3, 5), draw.integer(6, 9)
    configs = [(draw.integer(5, 50), 1, "one rank"), (2 * draw.integer(5, 50) + 1, 2, "two ranks, an odd size"),
               (w * draw.integer(5, 50), w, "a size N divides"),
               (w * draw.integer(5, 50) + draw.integer(1, w - 1), w, "a size N does not divide"),
               (many * draw.integer(50, 500) + draw.integer(1, many - 1), many, "many ranks, uneven chunks"),
               (many - draw.integer(1, many - 2), many, "fewer numbers than ranks (empty chunks)"),
               (10**12 + draw.integer(1, 1023), 1024, "a size no simulation reaches: count the chunks, don't run "
                                                      "the ring"),
               (7 * 10**11 + draw.integer(1, 6), 7, "7 × 10¹¹ numbers on 7 ranks (too large to simulate)")]
    cases = [Case(f"{what}: n_elements={n}, world_size={size}", (n, size)) for n, size, what in configs]
    check_function(learner_function(ns, "ring_sent"), ring_sent_reference, cases, "ring_sent", probes=cases)


RING_MISTAKES = (
    Mistake("one number", "return a list, one count per rank (world_size ints): with uneven chunks the ranks "
            "send different amounts", variant=lambda n, w: sum(ring_sent_reference(n, w)) // max(w, 1),
            shows=lambda case, got, _: isinstance(got, (int, float)) or getattr(got, "ndim", None) == 0),
    Mistake("the even formula", "2·(N−1)/N × n holds only when N divides n: tensor_split makes the first n % N "
            "chunks one number larger, and in each phase each rank leaves out one particular chunk — count their "
            "sizes", variant=lambda n, w: [2 * (w - 1) * n // w] * w),
    Mistake("one phase only", "that is the reduce-scatter alone: the all-gather sends N − 1 more chunks per rank",
            variant=lambda n, w: [n - (n // w + ((r + 1) % w < n % w)) for r in range(w)]),
    Mistake("the whole gradient each step", "each of the 2(N−1) steps sends one chunk, not the whole gradient "
            "(2(N−1)·n is what all ranks send together)", variant=lambda n, w: [2 * (w - 1) * n] * w),
    Mistake("left-out chunks off by one", "in the reduce-scatter rank r first sends chunk r and leaves out chunk "
            "(r+1) mod N (it completes that one); in the all-gather it starts with that complete chunk and leaves "
            "out (r+2) mod N", variant=lambda n, w: [2 * n - (n // w + (r < n % w))
                                                     - (n // w + ((r + 1) % w < n % w)) for r in range(w)]),
)


# ---------------------------------------------------------------------------- q2 (capstone): bucketed all-reduce
WORLD_SIZE = 2
TIMEOUT = 60.0   # seconds for both processes together (a few on a laptop)
STEPS = 2


@dataclass
class SyncSetup:
    """One check: a tiny GPT every rank starts from, a bucket size, each rank's batch of each step."""

    model: nn.Module
    bucket_elements: int
    batches: list[list[torch.Tensor]]   # [step][rank]
    description: str


def sync_setup(draw: Draw) -> SyncSetup:
    from ..config import TransformerConfig
    from ..language_model import DecoderOnlyLM

    vocab, seq = draw.integer(20, 40), draw.integer(6, 9)
    config = TransformerConfig(vocab_size=vocab, d_model=8, n_heads=2, d_ff=draw.integer(10, 20), n_layers=2,
                               max_len=seq, dropout=0.0, norm="pre", positional="learned", pad_id=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(draw.integer(0, 2 ** 30))
        model = DecoderOnlyLM(config)
    sizes = sorted(p.numel() for p in model.parameters())
    bucket = draw.integer(sizes[-2] + 1, sizes[-1] + sizes[-2])   # several buckets; the embedding needs its own
    batches = [[draw.randint(1, vocab, (draw.integer(2, 4), seq)) for _ in range(WORLD_SIZE)] for _ in range(STEPS)]
    return SyncSetup(model, bucket, batches, f"2 processes, a GPT of {len(sizes)} parameter tensors ({sum(sizes)} "
                     f"numbers), bucket_elements={bucket}, {STEPS} steps with an SGD step between them")


class Borrowed(Exception):
    """The learner's class used the package's BucketedAllReduce or DistributedDataParallel."""


def grads_of(model: nn.Module) -> dict[str, torch.Tensor | None]:
    return {k: None if p.grad is None else p.grad.detach().clone() for k, p in model.named_parameters()}


def rank_worker(rank: int, answer: Any, source: str | None, setup: SyncSetup, folder: str) -> None:
    """One rank: per step DDP's gradients, its own, and the answer's with a log of its all-reduces."""
    result: dict[str, Any] = {"error": None, "steps": []}
    try:
        faulthandler.disable()   # a rank stopped in a collective is no crash to report
        log = os.open(os.path.join(folder, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        for stream in (1, 2):
            os.dup2(log, stream)
        torch.set_num_threads(1)
        try:   # gloo on the loopback interface (lo on Linux, lo0 on macOS)
            loopback = next((name for _, name in socket.if_nameindex() if name.startswith("lo")), None)
        except OSError:
            loopback = None
        if "GLOO_SOCKET_IFNAME" not in os.environ and loopback:
            os.environ["GLOO_SOCKET_IFNAME"] = loopback
        dist.init_process_group("gloo", init_method=pathlib.Path(folder, "rendezvous").as_uri(), rank=rank,
                                world_size=WORLD_SIZE, timeout=datetime.timedelta(seconds=TIMEOUT / 2))
        if source is not None:   # spawned: the learner's class arrives as its source
            scope = {"torch": torch, "nn": nn, "dist": dist, "math": math}
            exec(compile(source, "<your BucketedAllReduce>", "exec"), scope)
            answer = scope["BucketedAllReduce"]
        reference, mine, own = (copy.deepcopy(setup.model) for _ in range(3))
        ddp = DistributedDataParallel(reference)
        calls: list[tuple[int, bool, int]] = []
        remaining = [0]
        all_reduce, package_init = dist.all_reduce, BucketedAllReduce.__init__

        def logged(tensor, *args, **kwargs):
            calls.append((tensor.numel(), bool(kwargs.get("async_op", args[2] if len(args) > 2 else False)),
                          remaining[0]))
            return all_reduce(tensor, *args, **kwargs)

        def refuse_ddp(*args, **kwargs):
            raise Borrowed("torch.nn.parallel.DistributedDataParallel")

        def guarded(self, *args, **kwargs):
            if type(self) is BucketedAllReduce and sys._getframe(1).f_code not in PLANTED:
                raise Borrowed("the package's course_utils.distributed.BucketedAllReduce")
            package_init(self, *args, **kwargs)

        dist.all_reduce, DistributedDataParallel.__init__, BucketedAllReduce.__init__ = logged, refuse_ddp, guarded
        sync = answer(mine, setup.bucket_elements)
        names = [k for k, _ in mine.named_parameters()]

        def arrived(p):
            remaining[0] -= 1
        for p in mine.parameters():      # after the answer's hooks: counts the gradients still to come
            p.register_post_accumulate_grad_hook(arrived)
        reference_sgd = torch.optim.SGD(reference.parameters(), lr=1.0)
        for batches in setup.batches:
            batch = batches[rank]
            reference_sgd.zero_grad()
            lm_loss(ddp, batch, 0).backward()
            own.load_state_dict(reference.state_dict())
            own.zero_grad()
            lm_loss(own, batch, 0).backward()   # this rank's gradient alone (no all-reduce)
            mine.zero_grad()
            calls.clear()
            remaining[0] = len(names)
            lm_loss(mine, batch, 0).backward()
            during = list(calls)
            sync.wait()
            result["steps"].append({"expected": grads_of(reference), "own": grads_of(own), "got": grads_of(mine),
                                    "during": during, "after": calls[len(during):]})
            reference_sgd.step()
            mine.load_state_dict(reference.state_dict())   # the next step starts where DDP's did, right or not
        dist.barrier()
    except Borrowed as error:
        result["error"] = {"kind": "borrowed", "what": str(error)}
    except BaseException as error:  # noqa: BLE001 - report whatever stopped this process
        unwritten = isinstance(error, NotImplementedError) and raised_by_the_learner(error)
        result["error"] = {"kind": "not implemented" if unwritten else "raised", "type": type(error).__name__,
                                              "message": (str(error).strip().splitlines() or [""])[0],
                                              "learner": learner_frames(error)}
    finally:
        try:
            torch.save(result, os.path.join(folder, f"rank{rank}.pt"))
        finally:
            os._exit(0)


def class_source(answer: Any) -> str | None:
    """The learner's class as source (for spawned processes), rebuilt from its methods in a notebook; or None."""
    try:
        return textwrap.dedent(inspect.getsource(answer))
    except (OSError, TypeError):
        pass
    methods = [m for m in vars(answer).values() if inspect.isfunction(m)]
    try:
        helpers = {name: obj for m in methods for name in m.__code__.co_names
                   if inspect.isfunction(obj := m.__globals__.get(name)) and obj.__module__ == answer.__module__}
        parts = [textwrap.dedent(inspect.getsource(h)) for h in helpers.values()]
        body = "\n".join(textwrap.indent(textwrap.dedent(inspect.getsource(m)), "    ") for m in methods)
    except (OSError, TypeError):
        return None
    return "\n\n".join(parts + [f"class {answer.__name__}:\n{body or '    pass'}"])


def run_ranks(answer: Any, setup: SyncSetup) -> list[dict | None]:
    """One process per rank (forked, else spawned with the class as source); what each saved (None: stopped)."""
    importable = getattr(sys.modules.get(getattr(answer, "__module__", "")), getattr(answer, "__qualname__", ""),
                         None) is answer and answer.__module__ != "__main__"
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and not FORCE_SPAWN else "spawn"
    source = None
    if method == "spawn" and not importable:
        source = class_source(answer)
        if source is None:
            raise ExerciseFailure("the check sends your class to two new processes as its source text, and Python "
                                  "cannot read it: define `BucketedAllReduce` in a notebook cell of its own")
    context = multiprocessing.get_context(method)
    folder = tempfile.mkdtemp(prefix="course-buckets-")
    processes = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "fork in a multi-threaded process": the child only computes and exits
            sys.stdout.flush()
            sys.stderr.flush()
            for rank in range(WORLD_SIZE):
                process = context.Process(target=rank_worker, args=(rank, None if source else answer, source,
                                                                    setup, folder), daemon=True)
                process.start()
                processes.append(process)
        start, first_end = time.monotonic(), None
        while any(p.is_alive() for p in processes):
            now = time.monotonic()
            if first_end is None and any(not p.is_alive() for p in processes):
                first_end = now
            if now - start > TIMEOUT or (first_end and now - first_end > 5.0):
                for p in processes:
                    if p.is_alive():
                        p.kill()
                break
            time.sleep(0.01)
        for p in processes:
            p.join()
        paths = [os.path.join(folder, f"rank{rank}.pt") for rank in range(WORLD_SIZE)]
        return [torch.load(path, weights_only=False) if os.path.exists(path) else None for path in paths]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


FORCE_SPAWN = False   # the tests set it to run the spawn path on Linux too


def same_grads(a: dict, b: dict, factor: float = 1.0) -> bool:
    return all(a[k] is not None and b[k] is not None and torch.allclose(a[k], factor * b[k], atol=1e-6, rtol=1e-4)
               for k in b)


def sync_report(results: list[dict], setup: SyncSetup) -> dict:
    """What the answer did, in the terms the mistakes are told by."""
    steps = [r["steps"] for r in results]
    during = [s["during"] for s in steps[0]]
    sizes = [p.numel() for p in setup.model.parameters()]
    buckets = len(BucketedAllReduce(copy.deepcopy(setup.model), setup.bucket_elements).buckets)   # the package's
    return {
        "right": all(same_grads(s["got"], s["expected"]) for rank in steps for s in rank),
        "doubled": all(same_grads(s["got"], s["expected"], WORLD_SIZE) for rank in steps for s in rank),
        "own": all(same_grads(s["got"], s["own"]) for rank in steps for s in rank),
        "first step only": same_grads(steps[0][0]["got"], steps[0][0]["expected"])
        and not all(same_grads(s["got"], s["expected"]) for s in steps[0][1:]),
        "reduces during backward": [len(d) for d in during],
        "blocking": any(not is_async for d in during for _, is_async, _ in d),
        "overlap": all(any(to_come > 1 and is_async for _, is_async, to_come in d) for d in during),
        "largest reduce": max((n for d in during for n, _, _ in d), default=0),
        "limit": max(setup.bucket_elements, max(sizes)),
        "buckets": buckets,
        "sizes": sizes,
    }


def check_bucketed_all_reduce(ns) -> None:
    answer = ns["BucketedAllReduce"]
    if not isinstance(answer, type):
        raise ExerciseFailure(f"`BucketedAllReduce` should be a class, got {type(answer).__name__}")
    if issubclass(answer, BucketedAllReduce) and answer.__module__ != __name__:
        raise ExerciseFailure("your class inherits the package's course_utils.distributed.BucketedAllReduce: "
                              "write the buckets and hooks yourself")
    setup = sync_setup(Draw())
    where = setup.description
    results = run_ranks(answer, setup)
    errors = [r["error"] for r in results if r is not None and r["error"]]
    if any(e["kind"] == "not implemented" for e in errors):
        raise NotAttempted
    for error in errors:
        if error["kind"] == "borrowed":
            raise ExerciseFailure(f"your class uses {error['what']} to do the work: bucket the gradients and "
                                  "all-reduce them yourself — the point of the exercise")
    if any(e["kind"] == "raised" and "NoneType" in e["message"] for e in errors):
        raise Mismatch(f"on {where}: your class read a .grad that was still None ({errors[0]['message']})",
                       Case(where), {"none grad": True}, answer, run=no_rerun, same=lambda a, b: False)
    for error in errors:
        if error["kind"] == "raised" and not any(t in error["message"] for t in ("Connection", "imed out")):
            raise ExerciseFailure(f"on {where}: your class raised {error['type']}: {error['message']}")
    if errors or any(r is None for r in results):
        raise ExerciseFailure(f"on {where}: a rank was left waiting in a collective (stopped after a while): "
                              "every rank must start the same all-reduces, in the same order, and wait() for them")
    report = sync_report(results, setup)
    problem = None
    if not report["right"]:
        problem = "after backward() and wait(), the gradients are not DDP's (the average over the ranks)"
    elif report["blocking"] or not report["overlap"]:
        problem = "the gradients are right, but no bucket's all-reduce runs while backward goes on"
    elif max(report["reduces during backward"]) > report["buckets"] or report["largest reduce"] > report["limit"]:
        problem = (f"the gradients are right, but the buckets are not packed: {report['reduces during backward']} "
                   f"all-reduces per step where {report['buckets']} buckets of at most {setup.bucket_elements} "
                   "numbers do")
    if problem:
        raise Mismatch(problem, Case(where), report, answer, run=no_rerun, same=lambda a, b: False)


def no_rerun(answer, case):
    raise RuntimeError("the processes are not started again to compare a variant")


# The typical mistakes, each a variant of the package's class with one step changed.
class SummedNotAveraged(BucketedAllReduce):
    def wait(self):
        super().wait()
        for p in self.bucket_of:
            p.grad *= dist.get_world_size()


class AllAtTheEnd(BucketedAllReduce):
    def gradient_ready(self, p):
        pass

    def wait(self):
        for i, bucket in enumerate(self.buckets):
            buffer = torch.cat([q.grad.flatten() for q in bucket])
            self.in_flight.append((i, buffer, dist.all_reduce(buffer, async_op=True)))
        super().wait()


class Blocking(BucketedAllReduce):
    def gradient_ready(self, p):
        i = self.bucket_of[p]
        self.missing[i] -= 1
        if self.missing[i] == 0:
            buffer = torch.cat([q.grad.flatten() for q in self.buckets[i]])
            dist.all_reduce(buffer)
            self.in_flight.append((i, buffer, SimpleNamespace(wait=lambda: True)))   # already done


class LastListedSends(BucketedAllReduce):
    def gradient_ready(self, p):
        i = self.bucket_of[p]
        if p is self.buckets[i][-1]:   # trusts that the bucket's gradients arrive in its order
            buffer = torch.cat([q.grad.flatten() for q in self.buckets[i]])
            self.in_flight.append((i, buffer, dist.all_reduce(buffer, async_op=True)))


class OnePerParameter(BucketedAllReduce):
    def __init__(self, model, bucket_elements):
        super().__init__(model, 1)


class NotCopiedBack(BucketedAllReduce):
    def wait(self):
        for _, buffer, work in self.in_flight:
            work.wait()
            buffer /= dist.get_world_size()
        self.in_flight = []
        self.missing = [len(bucket) for bucket in self.buckets]


class NotReset(BucketedAllReduce):
    def wait(self):
        missing = self.missing
        super().wait()
        self.missing = missing


SYNC_MISTAKES = (
    Mistake("sent at its last-listed gradient", "a bucket was sent when the hook of its last parameter (in the "
            "bucket's own order) fired, but inside a block the gradients arrive in another order (section 6 "
            "counted it), so some were not there yet. Count the gradients each bucket still misses and send it "
            "when the count reaches 0 (real DDP even rebuilds its buckets in the observed order after the first step)",
            variant=LastListedSends, shows=lambda case, got, _: got.get("none grad")),
    Mistake("summed, not averaged", "every gradient is world_size times DDP's: DDP *averages* — divide each "
            "bucket by dist.get_world_size() after its all-reduce (a SUM)", variant=SummedNotAveraged,
            shows=lambda case, got, _: got["doubled"]),
    Mistake("not copied back", "the gradients are this rank's own, not the average: torch.cat makes a copy, so "
            "the all-reduced buffer never reaches .grad — copy each slice back into its parameter's .grad in wait()",
            variant=NotCopiedBack, shows=lambda case, got, _: got["own"]),
    Mistake("counters not reset", "the first step is right and the next is not: reset each bucket's count of "
            "missing gradients in wait(), so the hooks fire again at the next backward", variant=NotReset,
            shows=lambda case, got, _: got["first step only"]),
    Mistake("all-reduce after backward", "nothing overlaps: every all-reduce starts after backward has finished. "
            "Start a bucket's all-reduce from the hook of its last gradient (register_post_accumulate_grad_hook), "
            "with async_op=True", variant=AllAtTheEnd,
            shows=lambda case, got, _: got["right"] and not any(got["reduces during backward"])),
    Mistake("blocking all-reduce in the hook", "the hook waits for each all-reduce (async_op=False), so backward "
            "stops until the bucket has travelled: pass async_op=True, keep the work handle, and wait for it in "
            "wait()", variant=Blocking, shows=lambda case, got, _: got["right"] and got["blocking"]),
    Mistake("one all-reduce per parameter", "one all-reduce per parameter tensor pays the start-up cost of a "
            "message many times: group the parameters into buckets of up to bucket_elements numbers",
            variant=OnePerParameter,
            shows=lambda case, got, _: got["right"] and max(got["reduces during backward"]) >= len(got["sizes"])),
)


# ---------------------------------------------------------------------------- q3: what one more layer keeps
MIB = 2**20


@functools.lru_cache(maxsize=8)
def measured(batch_size: int, d_model: int) -> tuple[int, int, int, float]:
    """Section 7's checkpointed translator at this ``d_model`` and ``batch_size``: its first batch's rows, source
    and target lengths, and the MiB one more encoder and decoder layer add to what it keeps (depth 2 − depth 1)."""
    from .. import tasks
    from ..memory import checkpoint_layers, saved_activation_bytes

    task = tasks.build_task("translator", "tiny", d_model=d_model, n_heads=4, d_ff=256, n_layers=2,
                            batch_size=batch_size)
    batch = task.train_batches[0]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = task.build_model()
    checkpoint_layers(model)
    kept = []
    for depth in (2, 1):   # what is kept does not depend on the weights' values
        for stack in (model.encoder, model.decoder):
            stack.layers = stack.layers[:depth]
        kept.append(saved_activation_bytes(lambda: task.loss_sum(model, batch), model))
    return batch[0].shape[0], batch[0].shape[1], batch[1].shape[1], (kept[0] - kept[1]) / MIB


def layer_mib_reference(rows: int, source_len: int, target_len: int, d_model: int) -> float:
    return measured(rows, d_model)[3]   # the checker's cases are measured() shapes


def check_layer_mib(ns) -> None:
    draw = Draw()
    cases = []
    for batch_size, d_model in ((8 * draw.integer(2, 7), 4 * draw.integer(12, 30)),
                                (8 * draw.integer(9, 12), 4 * draw.integer(34, 48))):
        rows, source_len, target_len, _ = measured(batch_size, d_model)
        cases.append(Case(f"{rows} rows of {source_len} source and {target_len} target tokens, d_model={d_model} "
                          "(the check measures it)", (rows, source_len, target_len, d_model)))
    check_function(learner_function(ns, "layer_mib"), layer_mib_reference, cases, "layer_mib", probes=cases,
                   atol=1e-4, rtol=0.01)


def kept_per_layer(positions, bytes_each=4):   # a variant: rows × positions × d_model numbers per layer pair
    return lambda rows, src, tgt, d: rows * positions(src, tgt) * d * bytes_each / MIB


SAVED_MISTAKES = (
    Mistake("the encoder's input only", "a decoder layer keeps its input too: rows × (target tokens − 1) × "
            "d_model float32 numbers", variant=kept_per_layer(lambda src, tgt: src)),
    Mistake("the memory once per decoder layer", "every decoder layer reads the same encoder output: one tensor, "
            "kept once however deep the decoder", variant=kept_per_layer(lambda src, tgt: 2 * src + tgt - 1)),
    Mistake("all the target tokens", "the decoder reads the target without its last token (it is only predicted): "
            "target_len − 1 positions", variant=kept_per_layer(lambda src, tgt: src + tgt)),
    Mistake("2 bytes a number", "without autocast the layers' inputs are float32: 4 bytes a number",
            variant=kept_per_layer(lambda src, tgt: src + tgt - 1, 2)),
    Mistake("bytes, not MiB", "the answer is in MiB: divide the bytes by 2**20",
            variant=lambda rows, src, tgt, d: rows * (src + tgt - 1) * d * 4),
)


q1 = Exercise(
    name="What each rank sends in a ring",
    variables=("ring_sent",),
    checker=check_ring_sent,
    hints=("Follow one rank through section 2's steps: in the reduce-scatter it sends N − 1 of the N chunks, in "
           "the all-gather N − 1 again. Which chunk does it leave out in each phase, and how large is it?",
           "sizes[c] = n // N, plus 1 if c < n % N; rank r sends 2·n minus the sizes of chunks (r+1) % N and "
           "(r+2) % N."),
    solution=solution_of("lesson10", "ring_sent"),
    mistakes=RING_MISTAKES,
    success="Correct! The traffic stays under 2·n per rank for any N; what grows with N is the 2(N−1) steps, "
            "each paying a message's latency.",
)

q2 = Exercise(
    name="Capstone: a bucketed all-reduce that overlaps backward",
    variables=("BucketedAllReduce",),
    checker=check_bucketed_all_reduce,
    hints=("A gradient is final when its parameter's post-accumulate-grad hook fires; a bucket can travel once all "
           "of its gradients are final, in whatever order they came. What must the hook remember, and what must "
           "wait() undo for the next step? To debug, build it on copy.deepcopy(model) and run one backward in a "
           "group of one, as in section 6.",
           "Keep, per bucket, a count of the gradients it still misses (set in __init__); in gradient_ready(p) count "
           "down p's bucket; at zero, torch.cat the bucket's grads, "
           "keep (bucket, buffer, dist.all_reduce(buffer, async_op=True)). In wait(): .wait() each, divide by "
           "dist.get_world_size(), copy the slices back into each .grad, reset the counts."),
    solution=solution_of("lesson10", "BucketedAllReduce"),
    mistakes=SYNC_MISTAKES,
    success="Correct! Your buckets give DDP's gradients, and all but the last start while backward still runs.",
    task=(
        "### Exercise 2 · Capstone: overlap communication with backward (about 40 minutes)\n\n"
        "**Capstone.** Complete `BucketedAllReduce(model, bucket_elements)`, built once on every rank. After "
        "`loss.backward()` and `.wait()`, every `.grad` must hold that gradient averaged over the ranks (as DDP "
        "leaves it), at every step.\n\n"
        "The starter fills the buckets and hooks `gradient_ready(p)` to every parameter. Write it: start a bucket's "
        "all-reduce, without blocking, once *all* its gradients have arrived, in any order. Write `wait()`. Use "
        "`dist` alone (no DDP).\n\n"
        "Checked on two new processes against DDP. Stuck? `q2.hint()`, then `q2.solution()`; to move on, "
        "`from course_utils.distributed import BucketedAllReduce`."
    ),
    starter=("class BucketedAllReduce:\n    def __init__(self, model, bucket_elements):\n"
             "        self.buckets, size = [], 0\n"
             "        for p in reversed(list(model.parameters())):\n"
             "            if not self.buckets or size + p.numel() > bucket_elements:\n"
             "                self.buckets.append([])\n                size = 0\n"
             "            self.buckets[-1].append(p)\n            size += p.numel()\n"
             "        self.bucket_of = {p: i for i, bucket in enumerate(self.buckets) for p in bucket}\n"
             "        self.in_flight = []                                 # (bucket index, buffer, work) sent\n"
             "        for p in self.bucket_of:\n"
             "            p.register_post_accumulate_grad_hook(self.gradient_ready)\n\n"
             "    def gradient_ready(self, p):                            # inside backward: p.grad is final\n"
             "        raise NotImplementedError  # your code here\n\n"
             "    def wait(self):\n        raise NotImplementedError  # your code here\n"),
)

q3 = Exercise(
    name="What one more checkpointed layer keeps",
    variables=("layer_mib",),
    checker=check_layer_mib,
    hints=("A checkpointed layer keeps only its inputs. Which tensor enters an encoder layer, which a decoder layer, "
           "and which is the same tensor for every decoder layer? The decoder reads the target without its last "
           "token.",
           "rows × (source_len + target_len − 1) × d_model numbers × 4 bytes, divided by 2**20."),
    solution=solution_of("lesson10", "layer_mib"),
    mistakes=SAVED_MISTAKES,
    success="Correct! A checkpointed model keeps one input per layer, whatever the layer computes inside.",
)
