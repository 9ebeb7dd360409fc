"""Exercises of notebook 10 (scaling out): the loss each rank backpropagates, which batches a rank gets, and the
memory of the training state with and without sharding."""
from __future__ import annotations

import torch

from ..distributed import DistributedContext, batch_sampler
from .core import Exercise, ExerciseFailure

# (sum of token losses on this rank, tokens on this rank, tokens on all ranks, world size)
LOSS_CASES = ((12.0, 30, 100, 4), (5.0, 10, 10, 1), (7.5, 25, 60, 2))


def check_ddp_scaled_loss(ns) -> None:
    scaled = ns["ddp_scaled_loss"]
    for loss_sum, local_tokens, global_tokens, world_size in LOSS_CASES:
        got = scaled(torch.tensor(loss_sum), local_tokens, global_tokens, world_size)
        if not isinstance(got, torch.Tensor):
            raise ExerciseFailure(f"return a tensor (backward() needs one), got {type(got).__name__} {got!r}.")
        expected = loss_sum * world_size / global_tokens
        if abs(got.item() - expected) <= 1e-6 * max(1.0, abs(expected)):
            continue
        if abs(got.item() - loss_sum / global_tokens) < 1e-6:
            raise ExerciseFailure("DDP *averages* the gradients of the ranks: it divides by world_size after "
                                  "summing. Divide by the global token count and multiply by world_size, so "
                                  "the average becomes the sum over all tokens / all tokens.")
        if abs(got.item() - loss_sum / local_tokens) < 1e-6:
            raise ExerciseFailure("dividing by this rank's own token count gives each rank's mean; DDP then "
                                  "averages the means, which weights a rank with few tokens as much as one "
                                  "with many. Use the token count of all ranks together.")
        if abs(got.item() - loss_sum) < 1e-6:
            raise ExerciseFailure("the sum alone makes the gradient grow with the batch size; divide by the "
                                  "global token count (and multiply by world_size).")
        raise ExerciseFailure(f"for loss_sum={loss_sum}, {global_tokens} tokens on all ranks and world_size="
                              f"{world_size} expected {expected:.4f}, got {got.item():.4f}.")


def check_rank_batches(ns) -> None:
    rank_batches = ns["rank_batches"]
    for n_batches, world_size in ((10, 2), (10, 3), (7, 4), (8, 1)):
        for rank in range(world_size):
            got = rank_batches(n_batches, rank, world_size)
            if not isinstance(got, (list, tuple, range)):
                raise ExerciseFailure(f"return a list of batch indices, got {type(got).__name__}.")
            got = [int(i) for i in got]
            sampler = batch_sampler(n_batches, DistributedContext(rank, world_size, rank, torch.device("cpu"),
                                                                  "gloo"), shuffle=False)
            expected = list(sampler)
            if got == expected:
                continue
            per_rank = n_batches // world_size
            if got == list(range(rank * per_rank, (rank + 1) * per_rank)):
                raise ExerciseFailure("contiguous blocks split the batches fairly, but a step's batches would come "
                                      "from far apart in the epoch. DistributedSampler interleaves: rank r takes "
                                      "r, r + world_size, r + 2·world_size, …, so one step of all ranks uses "
                                      "neighbouring batches — as one process accumulating them would.")
            if got == list(range(rank, n_batches, world_size)):
                raise ExerciseFailure(f"with {n_batches} batches and {world_size} ranks some ranks get one batch "
                                      "more than others: they make an extra step and wait forever for the "
                                      "others in the all-reduce. Drop the tail: stop at n_batches − n_batches % "
                                      "world_size.")
            raise ExerciseFailure(f"rank {rank} of {world_size} with {n_batches} batches should get {expected}, "
                                  f"got {got}.")


STATE_CASES = ((1_000_000, 1), (125_000_000, 8), (7_000_000_000, 64))


def check_training_state_bytes(ns) -> None:
    state_bytes = ns["training_state_bytes"]
    for n_parameters, world_size in STATE_CASES:
        for sharded in (False, True):
            got = state_bytes(n_parameters, world_size, sharded)
            if not isinstance(got, (int, float)) or isinstance(got, bool):
                raise ExerciseFailure(f"return a number of bytes, got {type(got).__name__} {got!r}.")
            full = 16 * n_parameters
            expected = full / world_size if sharded else full
            if abs(got - expected) <= 1e-6 * expected:
                continue
            per_parameter = got * (world_size if sharded else 1) / n_parameters
            if abs(per_parameter - 8) < 1e-9:
                raise ExerciseFailure("8 bytes per parameter counts weights and gradients; AdamW also keeps two "
                                      "float32 moments per parameter (exp_avg and exp_avg_sq): 16 bytes in all.")
            if abs(per_parameter - 12) < 1e-9:
                raise ExerciseFailure("12 bytes per parameter: one of weights, gradients or the two Adam moments "
                                      "is missing (4 + 4 + 8 = 16 bytes in float32).")
            if sharded and abs(got - full) <= 1e-6 * full:
                raise ExerciseFailure("with sharding every rank keeps only its 1/world_size share of weights, "
                                      "gradients and optimizer state: divide by world_size.")
            if not sharded and abs(got - full / world_size) <= 1e-6 * full:
                raise ExerciseFailure("without sharding (plain data parallelism, DDP) every rank holds a full "
                                      "copy: do not divide by world_size.")
            raise ExerciseFailure(f"{n_parameters:,} parameters, world_size={world_size}, sharded={sharded}: "
                                  f"expected {expected:,.0f} bytes, got {got:,.0f}.")


q1 = Exercise(
    name="The loss each rank backpropagates",
    variables=("ddp_scaled_loss",),
    checker=check_ddp_scaled_loss,
    hint="DDP sums the ranks' gradients and divides by world_size. You want the sum over all tokens divided by "
         "all tokens: multiply by world_size, divide by the global count.",
    solution=(
        "def ddp_scaled_loss(loss_sum, local_tokens, global_tokens, world_size):\n"
        "    return loss_sum * world_size / global_tokens\n"
    ),
)

q2 = Exercise(
    name="Which batches does a rank get?",
    variables=("rank_batches",),
    checker=check_rank_batches,
    hint="Interleave (rank, rank + world_size, …) and stop before the tail that cannot give every rank one more "
         "batch.",
    solution=(
        "def rank_batches(n_batches, rank, world_size):\n"
        "    usable = n_batches - n_batches % world_size\n"
        "    return list(range(rank, usable, world_size))\n"
    ),
)

q3 = Exercise(
    name="Training-state memory, replicated or sharded",
    variables=("training_state_bytes",),
    checker=check_training_state_bytes,
    hint="float32: 4 bytes of weight, 4 of gradient, 4 + 4 of Adam moments per parameter. Sharding (FSDP) "
         "divides all of it by world_size; DDP does not.",
    solution=(
        "def training_state_bytes(n_parameters, world_size, sharded):\n"
        "    full = 16 * n_parameters          # weight + gradient + two Adam moments, float32\n"
        "    return full / world_size if sharded else full\n"
    ),
)
