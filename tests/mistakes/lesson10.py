"""Typical wrong answers to the exercises of notebook 10 (scaling out), each with the phrase its feedback must
contain, and right answers written differently (which must be accepted)."""
from . import Alternative, Mistake

PRELUDE = "import math\nimport numpy as np\nimport torch\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson10", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson10", exercise, name, code, PRELUDE)


LOSS = "def ddp_scaled_loss(loss_mean, local_tokens, global_tokens, world_size):\n"
RING = "def ring_sent(n_elements, world_size):\n"

MISTAKES = [
    # q1: the loss each rank backpropagates
    q("q1", "tokens assumed to divide evenly",
      LOSS + "    return loss_mean * world_size / world_size\n", "average the means"),
    q("q1", "hard-coded two ranks", LOSS + "    return loss_mean * local_tokens * 2 / global_tokens\n", "expected"),
    q("q1", "a new tensor without a graph",
      LOSS + "    return torch.tensor(loss_mean.item() * local_tokens * world_size / global_tokens)\n",
      "carries no gradient"),
    q("q1", "scaled in place",
      LOSS + "    loss_mean *= world_size\n    return loss_mean * local_tokens / global_tokens\n", "in place"),
    q("q1", "float64 result",
      LOSS + "    return loss_mean.double() * local_tokens * world_size / global_tokens\n", "torch.float32"),
    q("q1", "the factor detached",
      LOSS + "    scale = (loss_mean / loss_mean.detach()) * local_tokens * world_size / global_tokens\n"
      "    return scale.detach() * loss_mean.detach() + 0 * loss_mean\n", "NaN"),
    # q2: what each rank sends in a ring
    q("q2", "torch.chunk's sizes", RING + "    size = -(-n_elements // world_size)   # chunk(): ceil-sized chunks\n"
      "    sizes = [max(0, min(size, n_elements - c * size)) for c in range(world_size)]\n"
      "    return [2 * n_elements - sizes[(r + 1) % world_size] - sizes[(r + 2) % world_size]\n"
      "            for r in range(world_size)]\n", "should"),
    q("q2", "floats from the fraction",
      RING + "    return [2 * (world_size - 1) / world_size * n_elements] * world_size\n", "should be an int"),
    q("q2", "a tuple of the right counts for divisible sizes only",
      RING + "    return tuple(2 * (world_size - 1) * (n_elements // world_size) for _ in range(world_size))\n",
      "should"),
]

ALTERNATIVES = [
    # q1
    right("q1", "divide by the mean tokens per rank",
          LOSS + "    return loss_mean * local_tokens / (global_tokens / world_size)\n"),
    right("q1", "torch.mul and div",
          LOSS + "    return torch.mul(loss_mean, local_tokens * world_size).div(global_tokens)\n"),
    right("q1", "a scale factor first", LOSS + "    scale = local_tokens * world_size / float(global_tokens)\n"
          "    return scale * loss_mean\n"),
    # q2
    right("q2", "simulated step by step", RING
          + "    base, extra = divmod(n_elements, world_size)\n"
          "    sizes = [base + 1] * extra + [base] * (world_size - extra)\n"
          "    sent = [0] * world_size\n"
          "    for step in range(world_size - 1):\n"
          "        for r in range(world_size):\n"
          "            sent[r] += sizes[(r - step) % world_size] + sizes[(r + 1 - step) % world_size]\n"
          "    return sent\n"),
    right("q2", "a tensor", RING
          + "    sizes = n_elements // world_size + (torch.arange(world_size) < n_elements % world_size).long()\n"
          "    return 2 * n_elements - sizes.roll(-1) - sizes.roll(-2)\n"),
]

# ---------------------------------------------------------------------------- q3 (capstone): bucketed all-reduce
SYNC_PRELUDE = PRELUDE + "import torch.distributed as dist\n"
SOLUTION = """class BucketedAllReduce:
    def __init__(self, model, bucket_elements):
        self.buckets, size = [], 0
        for p in reversed(list(model.parameters())):
            if not self.buckets or size + p.numel() > bucket_elements:
                self.buckets.append([])
                size = 0
            self.buckets[-1].append(p)
            size += p.numel()
        self.bucket_of = {p: i for i, bucket in enumerate(self.buckets) for p in bucket}
        self.missing = [len(bucket) for bucket in self.buckets]
        self.in_flight = []
        for p in self.bucket_of:
            p.register_post_accumulate_grad_hook(self.ready)

    def ready(self, p):
        i = self.bucket_of[p]
        self.missing[i] -= 1
        if self.missing[i] == 0:
            buffer = torch.cat([q.grad.flatten() for q in self.buckets[i]])
            self.in_flight.append((i, buffer, dist.all_reduce(buffer, async_op=True)))

    def wait(self):
        for i, buffer, work in self.in_flight:
            work.wait()
            buffer /= dist.get_world_size()
            offset = 0
            for q in self.buckets[i]:
                q.grad.copy_(buffer[offset:offset + q.numel()].view_as(q))
                offset += q.numel()
        self.in_flight = []
        self.missing = [len(bucket) for bucket in self.buckets]
"""


def sync(name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson10", "q3", name, code, message, SYNC_PRELUDE)


def sync_right(name: str, code: str) -> Alternative:
    return Alternative("lesson10", "q3", name, code, SYNC_PRELUDE)


def planted(old: str, new: str) -> str:
    if old not in SOLUTION:
        raise ValueError(old)
    return SOLUTION.replace(old, new)


MISTAKES += [
    sync("DDP does the work", "from torch.nn.parallel import DistributedDataParallel\n\n" + planted(
        "        self.in_flight = []\n        for p", "        self.ddp = DistributedDataParallel(model)\n"
        "        self.in_flight = []\n        for p"), "DistributedDataParallel"),
]

ALTERNATIVES += [
    sync_right("ReduceOp.AVG and a flat buffer per bucket kept between steps", planted(
        "            buffer = torch.cat([q.grad.flatten() for q in self.buckets[i]])\n"
        "            self.in_flight.append((i, buffer, dist.all_reduce(buffer, async_op=True)))\n",
        "            buffer = torch.cat([q.grad.flatten() for q in self.buckets[i]])\n"
        "            self.in_flight.append((i, buffer, dist.all_reduce(buffer, op=dist.ReduceOp.AVG, "
        "async_op=True)))\n").replace("            buffer /= dist.get_world_size()\n", "")),
    sync_right("grads replaced by views of the buffer", planted(
        "            for q in self.buckets[i]:\n"
        "                q.grad.copy_(buffer[offset:offset + q.numel()].view_as(q))\n"
        "                offset += q.numel()\n",
        "            for q in self.buckets[i]:\n"
        "                q.grad = buffer[offset:offset + q.numel()].view_as(q).clone()\n"
        "                offset += q.numel()\n")),
]
