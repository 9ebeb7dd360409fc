"""Typical wrong answers to the exercises of notebook 10 (scaling out), each with the phrase its feedback must
contain, and right answers written differently (which must be accepted)."""
from . import Alternative, Mistake

PRELUDE = "import math\nimport numpy as np\nimport torch\n"
RING = "def ring_sent(n_elements, world_size):\n"
RING_MISTAKES = [
    Mistake("lesson10", "q1", "torch.chunk's sizes", RING + "    size = -(-n_elements // world_size)   # chunk()\n"
            "    sizes = [max(0, min(size, n_elements - c * size)) for c in range(world_size)]\n"
            "    return [2 * n_elements - sizes[(r + 1) % world_size] - sizes[(r + 2) % world_size]\n"
            "            for r in range(world_size)]\n", "should", PRELUDE),
    Mistake("lesson10", "q1", "floats from the fraction",
            RING + "    return [2 * (world_size - 1) / world_size * n_elements] * world_size\n", "should be an int",
            PRELUDE),
    Mistake("lesson10", "q1", "a tuple of the right counts for divisible sizes only",
            RING + "    return tuple(2 * (world_size - 1) * (n_elements // world_size) for _ in range(world_size))\n",
            "should", PRELUDE),
]
RING_ALTERNATIVES = [
    Alternative("lesson10", "q1", "simulated step by step", RING
                + "    base, extra = divmod(n_elements, world_size)\n"
                "    sizes = [base + 1] * extra + [base] * (world_size - extra)\n"
                "    sent = [0] * world_size\n"
                "    for step in range(world_size - 1):\n"
                "        for r in range(world_size):\n"
                "            sent[r] += sizes[(r - step) % world_size] + sizes[(r + 1 - step) % world_size]\n"
                "    return sent\n", PRELUDE),
    Alternative("lesson10", "q1", "a tensor", RING
                + "    sizes = n_elements // world_size + (torch.arange(world_size) < n_elements % world_size).long()\n"
                "    return 2 * n_elements - sizes.roll(-1) - sizes.roll(-2)\n", PRELUDE),
]


# ---------------------------------------------------------------------------- q2 (capstone): bucketed all-reduce
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
    return Mistake("lesson10", "q2", name, code, message, SYNC_PRELUDE)


def sync_right(name: str, code: str) -> Alternative:
    return Alternative("lesson10", "q2", name, code, SYNC_PRELUDE)


def planted(old: str, new: str) -> str:
    if old not in SOLUTION:
        raise ValueError(old)
    return SOLUTION.replace(old, new)


# ---------------------------------------------------------------------------- q3: checkpointing a deeper model
LAYER = "def layer_mib(rows, source_len, target_len, d_model):\n"
SAVED_MISTAKES = [
    Mistake("lesson10", "q3", "a line through the page's two depths", LAYER + "    return 0.625\n", "should",
            PRELUDE),
    Mistake("lesson10", "q3", "scaled by the rows alone", LAYER + "    return 0.625 * rows / 64\n", "should",
            PRELUDE),
    Mistake("lesson10", "q3", "a string",
            LAYER + "    return f'{rows * (source_len + target_len - 1) * d_model * 4} B'\n", "should", PRELUDE),
]
SAVED_ALTERNATIVES = [
    Alternative("lesson10", "q3", "in bytes, then MiB", LAYER + "    encoder, decoder = source_len, target_len - 1\n"
                "    kept = rows * d_model * 4 * (encoder + decoder)\n    return kept / 2**20\n", PRELUDE),
    Alternative("lesson10", "q3", "with torch", LAYER + "    import torch\n"
                "    return torch.zeros(rows, source_len + target_len - 1, d_model).nbytes / 2**20\n", PRELUDE),
]

MISTAKES = RING_MISTAKES + SAVED_MISTAKES + [
    sync("DDP does the work", "from torch.nn.parallel import DistributedDataParallel\n\n" + planted(
        "        self.in_flight = []\n        for p", "        self.ddp = DistributedDataParallel(model)\n"
        "        self.in_flight = []\n        for p"), "DistributedDataParallel"),
]

ALTERNATIVES = RING_ALTERNATIVES + SAVED_ALTERNATIVES + [
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
