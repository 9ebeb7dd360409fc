"""Reference solutions of lesson 10's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch
import torch.distributed as dist


def ddp_scaled_loss(loss_sum, local_tokens, global_tokens, world_size):
    # DDP averages the ranks' gradients: x world_size turns that mean into their sum
    return loss_sum * world_size / global_tokens


def rank_batches(n_batches, rank, world_size):
    usable = n_batches - n_batches % world_size   # drop the tail that cannot give every rank one more
    return list(range(rank, usable, world_size))


def training_state_bytes(n_parameters, world_size, sharded):
    full = 16 * n_parameters          # weight + gradient + two Adam moments, float32
    return full // world_size if sharded else full    # FSDP: equal shards (parameters padded)


def data_parallel_step(model, optimizer, batch, loss_sum, target_count):
    optimizer.zero_grad()                                     # last step's gradients must not add up
    tokens = torch.tensor(float(target_count(batch)))
    dist.all_reduce(tokens)                                   # T: the target tokens of every rank's share
    (loss_sum(model, batch) / tokens).backward()               # this rank's part of the mean over all T tokens
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)                           # SUM over the ranks: the whole step's gradient
    optimizer.step()                                          # the same step on every rank: copies stay equal
