"""Data parallelism with ``torch.distributed``: who am I, a batch sampler per rank, sums across ranks (lesson 10).

``torchrun`` starts one process per rank and tells each one ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` through
environment variables. :func:`distributed_session` reads them, joins the process group (gloo on CPU, NCCL on
CUDA) and always leaves it again, also when training raises. Started without ``torchrun`` it is a world of one
process, so the same training code runs both ways.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

from .errors import CourseValueError

DEVICE_CHOICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class DistributedContext:
    """This process's place in the job: ``rank`` in ``0 .. world_size - 1`` and the device it computes on."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str | None  # None when there is no process group (one process)

    @property
    def is_main(self) -> bool:
        """Rank 0 logs, evaluates and writes checkpoints; the other ranks only compute gradients."""
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        return self.backend is not None

    def all_reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """The sum of ``tensor`` over all ranks (in place, returned); unchanged in a world of one process."""
        if self.is_distributed:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def gather_objects(self, obj) -> list:
        """``[obj of rank 0, obj of rank 1, ...]`` on every rank (``[obj]`` in a world of one process)."""
        if not self.is_distributed:
            return [obj]
        gathered = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered

    def barrier(self) -> None:
        """Wait until every rank arrives here (no-op for one process)."""
        if self.is_distributed:
            dist.barrier()


def resolve_device(choice: str, local_rank: int = 0) -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; ``"cuda"`` → ``cuda:local_rank`` (one GPU per process)."""
    if choice not in DEVICE_CHOICES:
        raise CourseValueError(f"device must be one of {DEVICE_CHOICES}, got {choice!r}")
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda":
        if not torch.cuda.is_available():
            raise CourseValueError("device 'cuda' was asked for, but torch.cuda.is_available() is False here; "
                                   "use --device cpu (or auto), or install the CUDA build of PyTorch")
        if local_rank >= torch.cuda.device_count():
            raise CourseValueError(f"local rank {local_rank} has no GPU: this machine has "
                                   f"{torch.cuda.device_count()}; start at most that many processes per node")
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def launched_by_torchrun() -> bool:
    """True inside a process started by ``torchrun`` (it sets ``WORLD_SIZE`` and ``RANK``)."""
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


@contextmanager
def distributed_session(device: str = "auto") -> Iterator[DistributedContext]:
    """Join the process group for the duration of a ``with`` block and always leave it.

    Under ``torchrun``: ``init_process_group`` with gloo (CPU) or NCCL (CUDA); on exit a barrier (so no rank tears
    the group down while another still talks) and ``destroy_process_group`` — on an exception only the latter,
    because the other ranks may never reach the barrier. Without ``torchrun``: a world of one process.
    """
    if not launched_by_torchrun():
        yield DistributedContext(0, 1, 0, resolve_device(device), None)
        return
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    target = resolve_device(device, local_rank)
    backend = "nccl" if target.type == "cuda" else "gloo"
    if target.type == "cuda":
        torch.cuda.set_device(target)
    dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
    context = DistributedContext(rank, world_size, local_rank, target, backend)
    try:
        yield context
        dist.barrier()
    finally:
        dist.destroy_process_group()


def batch_sampler(n_batches: int, context: DistributedContext, shuffle: bool = True,
                  seed: int = 0) -> DistributedSampler:
    """PyTorch's :class:`~torch.utils.data.DistributedSampler` over the *indices* of a list of ready batches.

    Every epoch (call ``set_epoch(epoch)`` first) all ranks draw the same permutation, seeded with
    ``seed + epoch``; rank ``r`` takes positions ``r, r + world_size, ...``. ``drop_last=True``: the tail that
    does not fill one batch per rank is skipped, so every rank makes the same number of steps — and a world of
    one process that accumulates ``world_size`` batches per step sees exactly the same batches per step.
    """
    if n_batches < context.world_size:
        raise CourseValueError(f"{n_batches} batches cannot feed {context.world_size} processes (each needs at "
                               "least one per step); use a smaller batch size or fewer processes")
    return DistributedSampler(range(n_batches), num_replicas=context.world_size, rank=context.rank,
                              shuffle=shuffle, seed=seed, drop_last=True)


class BucketedAllReduce:
    """What :class:`~torch.nn.parallel.DistributedDataParallel` does to the gradients, written out (lesson 10).

    Build it once per model on every rank, then each step: ``loss.backward()``, then :meth:`wait`. Afterwards every
    parameter's ``.grad`` is the *average* of that gradient over the ranks. The parameters are grouped into buckets
    of at most ``bucket_elements`` numbers (a larger parameter gets a bucket of its own), in the order of
    ``model.parameters()`` reversed — close to the order backward produces the gradients, but not equal to it (real
    DDP rebuilds its buckets in the observed order after the first step). A hook on every parameter
    (``register_post_accumulate_grad_hook``) counts the gradients of its bucket, whatever their order; when all have
    arrived, it
    flattens them into one buffer and starts ``dist.all_reduce(buffer, async_op=True)``, while backward goes on with
    the layers below. :meth:`wait` waits for each bucket, divides by the world size and copies the buffer back.
    """

    def __init__(self, model: torch.nn.Module, bucket_elements: int) -> None:
        if not isinstance(bucket_elements, int) or bucket_elements < 1:
            raise CourseValueError(f"bucket_elements must be a positive int, got {bucket_elements!r}")
        self.buckets: list[list[torch.nn.Parameter]] = []
        size = 0
        for p in reversed([p for p in model.parameters() if p.requires_grad]):
            if not self.buckets or size + p.numel() > bucket_elements:
                self.buckets.append([])
                size = 0
            self.buckets[-1].append(p)
            size += p.numel()
        self.bucket_of = {p: i for i, bucket in enumerate(self.buckets) for p in bucket}
        self.missing = [len(bucket) for bucket in self.buckets]   # gradients each bucket still waits for
        self.in_flight: list[tuple[int, torch.Tensor, dist.Work]] = []
        self.hooks = [p.register_post_accumulate_grad_hook(self.gradient_ready) for p in self.bucket_of]

    def gradient_ready(self, p: torch.nn.Parameter) -> None:
        i = self.bucket_of[p]
        self.missing[i] -= 1
        if self.missing[i] == 0:      # the bucket's last gradient: send it while backward goes on
            buffer = torch.cat([q.grad.flatten() for q in self.buckets[i]])
            self.in_flight.append((i, buffer, dist.all_reduce(buffer, async_op=True)))

    def wait(self) -> None:
        for i, buffer, work in self.in_flight:
            work.wait()
            buffer /= dist.get_world_size()
            offset = 0
            for q in self.buckets[i]:
                q.grad.copy_(buffer[offset:offset + q.numel()].view_as(q))
                offset += q.numel()
        self.in_flight = []
        self.missing = [len(bucket) for bucket in self.buckets]   # ready for the next step

    def remove(self) -> None:
        """Take the hooks off the parameters."""
        for hook in self.hooks:
            hook.remove()
