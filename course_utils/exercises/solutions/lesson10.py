"""Reference solutions of lesson 10's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch
import torch.distributed as dist


def ring_sent(n_elements, world_size):
    # tensor_split: the first n_elements % world_size chunks hold one number more
    sizes = [n_elements // world_size + (c < n_elements % world_size) for c in range(world_size)]
    # rank r leaves out chunk r+1 in the reduce-scatter (it completes it) and chunk r+2 in the all-gather
    return [2 * n_elements - sizes[(r + 1) % world_size] - sizes[(r + 2) % world_size] for r in range(world_size)]


class BucketedAllReduce:
    def __init__(self, model, bucket_elements):
        self.buckets, size = [], 0
        for p in reversed(list(model.parameters())):          # gradients arrive in another order
            if not self.buckets or size + p.numel() > bucket_elements:
                self.buckets.append([])
                size = 0
            self.buckets[-1].append(p)
            size += p.numel()
        self.bucket_of = {p: i for i, bucket in enumerate(self.buckets) for p in bucket}
        self.missing = [len(bucket) for bucket in self.buckets]
        self.in_flight = []
        for p in self.bucket_of:
            p.register_post_accumulate_grad_hook(self.gradient_ready)

    def gradient_ready(self, p):                               # p.grad is final
        i = self.bucket_of[p]
        self.missing[i] -= 1
        if self.missing[i] == 0:                               # the bucket is complete: send it now
            buffer = torch.cat([q.grad.flatten() for q in self.buckets[i]])
            self.in_flight.append((i, buffer, dist.all_reduce(buffer, async_op=True)))

    def wait(self):
        for i, buffer, work in self.in_flight:
            work.wait()
            buffer /= dist.get_world_size()                    # DDP averages
            offset = 0
            for q in self.buckets[i]:
                q.grad.copy_(buffer[offset:offset + q.numel()].view_as(q))
                offset += q.numel()
        self.in_flight = []
        self.missing = [len(bucket) for bucket in self.buckets]   # ready for the next backward


def layer_mib(rows, source_len, target_len, d_model):
    # a checkpointed layer keeps its input: an encoder layer rows × source_len × d_model numbers, a decoder layer
    # rows × (target_len − 1) × d_model (the target without its last token); every decoder layer reads the same
    # encoder output, kept once whatever the depth. float32: 4 bytes a number.
    return rows * (source_len + target_len - 1) * d_model * 4 / 2**20
