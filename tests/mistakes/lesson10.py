"""Typical wrong answers to the exercises of notebook 10 (scaling out), each with the phrase its feedback must
contain, and right answers written differently (which must be accepted)."""
from . import Alternative, Mistake

PRELUDE = "import math\nimport numpy as np\nimport torch\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson10", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson10", exercise, name, code, PRELUDE)


LOSS = "def ddp_scaled_loss(loss_sum, local_tokens, global_tokens, world_size):\n"
BATCHES = "def rank_batches(n_batches, rank, world_size):\n"
STATE = "def training_state_bytes(n_parameters, world_size, sharded):\n"

MISTAKES = [
    # q1: the loss each rank backpropagates
    q("q1", "tokens assumed to divide evenly",
      LOSS + "    return loss_sum * world_size / (local_tokens * world_size)\n",
      "averages the means"),
    q("q1", "hard-coded two ranks", LOSS + "    return loss_sum * 2 / global_tokens\n", "expected"),
    q("q1", "a new tensor without a graph",
      LOSS + "    return torch.tensor(loss_sum.item() * world_size / global_tokens)\n",
      "carries no gradient"),
    q("q1", "scaled in place", LOSS + "    loss_sum *= world_size\n    return loss_sum / global_tokens\n", "in place"),
    q("q1", "float64 result", LOSS + "    return loss_sum.double() * world_size / global_tokens\n", "torch.float32"),
    q("q1", "the factor detached", LOSS + "    scale = (loss_sum / loss_sum.detach()) * world_size / global_tokens\n"
      "    return scale.detach() * loss_sum.detach() + 0 * loss_sum\n", "NaN"),
    # q2: which batches a rank gets
    q("q2", "per-rank count used as the end",
      BATCHES + "    return list(range(rank, n_batches // world_size, world_size))\n",
      "dropped more than the tail"),
    q("q2", "float indices", BATCHES + "    usable = n_batches - n_batches % world_size\n"
      "    return [float(i) for i in range(rank, usable, world_size)]\n", "should be an int"),
    q("q2", "remainder handed to rank 0", BATCHES + "    usable = n_batches - n_batches % world_size\n"
      "    mine = list(range(rank, usable, world_size))\n"
      "    return mine + list(range(usable, n_batches)) if rank == 0 else mine\n", "should"),
    q("q2", "a set of indices",
      BATCHES + "    return set(range(rank, n_batches - n_batches % world_size, world_size))\n",
      "should be a list"),
    q("q2", "the package's sampler", "from course_utils.distributed import DistributedContext, batch_sampler\n\n"
      + BATCHES + "    context = DistributedContext(rank, world_size, rank, torch.device('cpu'), 'gloo')\n"
      "    return list(batch_sampler(n_batches, context, shuffle=False))\n", "use your own code"),
    # q3: training-state memory
    q("q3", "hard-coded 8 GPUs", STATE + "    full = 16 * n_parameters\n    return full // 8 if sharded else full\n",
      "should be"),
    q("q3", "sharded flag ignored", STATE + "    return 16 * n_parameters // world_size if world_size > 1 else "
      "16 * n_parameters\n", "do not divide by world_size"),
]

ALTERNATIVES = [
    # q1
    right("q1", "divide by the mean tokens per rank", LOSS + "    return loss_sum / (global_tokens / world_size)\n"),
    right("q1", "torch.div and mul", LOSS + "    return torch.div(loss_sum, global_tokens).mul(world_size)\n"),
    right("q1", "a scale factor first", LOSS + "    scale = world_size / float(global_tokens)\n"
          "    return scale * loss_sum\n"),
    # q2
    right("q2", "a range", BATCHES + "    return range(rank, n_batches // world_size * world_size, world_size)\n"),
    right("q2", "a slice of all batches", BATCHES + "    steps = n_batches // world_size\n"
          "    return list(range(n_batches))[rank::world_size][:steps]\n"),
    right("q2", "a tensor", BATCHES + "    steps = n_batches // world_size\n"
          "    return torch.arange(steps) * world_size + rank\n"),
    right("q2", "torch's DistributedSampler", "from torch.utils.data import DistributedSampler\n\n" + BATCHES
          + "    return DistributedSampler(range(n_batches), num_replicas=world_size, rank=rank, shuffle=False,\n"
          "                              drop_last=True)\n"),
    right("q2", "a numpy array",
          BATCHES + "    return np.arange(rank, n_batches - n_batches % world_size, world_size)\n"),
    # q3
    right("q3", "parts added", STATE + "    weights = gradients = 4 * n_parameters\n"
          "    adam = 8 * n_parameters\n"
          "    total = weights + gradients + adam\n"
          "    return total // world_size if sharded else total\n"),
    right("q3", "ceil of the shard", STATE + "    per_gpu = math.ceil(n_parameters / world_size) if sharded else "
          "n_parameters\n    return 16 * per_gpu\n"),
    right("q3", "numpy integers", STATE + "    return np.int64(16) * n_parameters // (world_size if sharded else 1)\n"),
]

# ---------------------------------------------------------------------------- q4 (capstone): a data-parallel step
STEP_PRELUDE = PRELUDE + "import torch.distributed as dist\n"
STEP = ("def data_parallel_step(model, optimizer, batch, loss_sum, target_count):\n"
        "    optimizer.zero_grad()\n"
        "    tokens = torch.tensor(float(target_count(batch)))\n"
        "    dist.all_reduce(tokens)\n"
        "    (loss_sum(model, batch) / tokens).backward()\n"
        "    for p in model.parameters():\n"
        "        if p.grad is not None:\n"
        "            dist.all_reduce(p.grad)\n"
        "    optimizer.step()\n")


def step(name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson10", "q4", name, code, message, STEP_PRELUDE)


def step_right(name: str, code: str) -> Alternative:
    return Alternative("lesson10", "q4", name, code, STEP_PRELUDE)


def planted(old: str, new: str) -> str:
    if old not in STEP:
        raise ValueError(old)
    return STEP.replace(old, new)


MISTAKES += [
    step("no all-reduce of the gradients", planted("            dist.all_reduce(p.grad)\n", "            pass\n"),
         'no gradient was all-reduced'),
    step("per-rank mean, averaged (DDP's default)",
         planted("    dist.all_reduce(tokens)\n    (loss_sum(model, batch) / tokens).backward()\n",
                 "    (loss_sum(model, batch) / tokens).backward()\n")
         .replace("            dist.all_reduce(p.grad)\n",
                  "            dist.all_reduce(p.grad)\n            p.grad /= dist.get_world_size()\n"),
         "mean of the ranks' means"),
    step("token count not all-reduced", planted("    dist.all_reduce(tokens)\n", ""), 'its own token count'),
    step("divided by world size once too often",
         planted("            dist.all_reduce(p.grad)\n",
                 "            dist.all_reduce(p.grad)\n            p.grad /= dist.get_world_size()\n"),
         'world_size times too small'),
    step("divided by world size twice",
         planted("(loss_sum(model, batch) / tokens)", "(loss_sum(model, batch) / tokens / dist.get_world_size())")
         .replace("            dist.all_reduce(p.grad)\n",
                  "            dist.all_reduce(p.grad)\n            p.grad /= dist.get_world_size()\n"),
         'world_size² times too small'),
    step("DDP's scaling with a SUM all-reduce",
         planted("(loss_sum(model, batch) / tokens)", "(loss_sum(model, batch) * dist.get_world_size() / tokens)"),
         'world_size times too large'),
    step("the loss all-reduced instead of the gradients",
         "def data_parallel_step(model, optimizer, batch, loss_sum, target_count):\n"
         "    optimizer.zero_grad()\n"
         "    tokens = torch.tensor(float(target_count(batch)))\n"
         "    dist.all_reduce(tokens)\n"
         "    loss = loss_sum(model, batch) / tokens\n"
         "    dist.all_reduce(loss)          # the mean over all tokens ... of the value only\n"
         "    loss.backward()\n"
         "    optimizer.step()\n",
         'single numbers'),
    step("zero_grad forgotten", planted("    optimizer.zero_grad()\n", ""), 'zero_grad is forgotten'),
    step("zero_grad between backward and step",
         planted("    optimizer.step()\n", "    optimizer.zero_grad()\n    optimizer.step()\n"),
         'did not change'),
    step("optimizer step forgotten", planted("    optimizer.step()\n", "    return None\n"), 'did not change'),
    step("DistributedDataParallel does the all-reduce",
         "from torch.nn.parallel import DistributedDataParallel\n\n"
         "def data_parallel_step(model, optimizer, batch, loss_sum, target_count):\n"
         "    optimizer.zero_grad()\n"
         "    ddp = DistributedDataParallel(model)\n"
         "    tokens = torch.tensor(float(target_count(batch)))\n"
         "    dist.all_reduce(tokens)\n"
         "    (loss_sum(ddp, batch) * dist.get_world_size() / tokens).backward()\n"
         "    optimizer.step()\n",
         'DistributedDataParallel'),
    step("gradients all-reduced on rank 0 only",
         planted("        if p.grad is not None:\n", "        if p.grad is not None and dist.get_rank() == 0:\n"),
         'left waiting in a collective'),
    step("the token count all-reduced as a Python int",
         planted("    tokens = torch.tensor(float(target_count(batch)))\n", "    tokens = target_count(batch)\n"),
         'raised'),
    step("the batch's padding rewritten in place",
         planted("    optimizer.zero_grad()\n", "    optimizer.zero_grad()\n    batch[:, 0] = batch[:, 0]\n"
                                               "    batch.clamp_(max=batch.max() - 1)\n"),
         'in place'),
]

ALTERNATIVES += [
    step_right("DDP's scaling with ReduceOp.AVG",
               planted("    (loss_sum(model, batch) / tokens).backward()\n",
                       "    (loss_sum(model, batch) * dist.get_world_size() / tokens).backward()\n")
               .replace("dist.all_reduce(p.grad)", "dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)")),
    step_right("one flat buffer, divided after the all-reduce",
               "def data_parallel_step(model, optimizer, batch, loss_sum, target_count):\n"
               "    model.zero_grad(set_to_none=False)\n"
               "    count = torch.tensor([target_count(batch)], dtype=torch.long)\n"
               "    dist.all_reduce(count, op=dist.ReduceOp.SUM)\n"
               "    loss_sum(model, batch).backward()\n"
               "    params = [p for p in model.parameters() if p.grad is not None]\n"
               "    flat = torch.cat([p.grad.flatten() for p in params])\n"
               "    dist.all_reduce(flat)\n"
               "    flat = flat / count.item()\n"
               "    offset = 0\n"
               "    for p in params:\n"
               "        n = p.numel()\n"
               "        p.grad.copy_(flat[offset:offset + n].view_as(p))\n"
               "        offset += n\n"
               "    optimizer.step()\n"
               "    return loss_sum\n"),
    step_right("DDP's scaling, asynchronous handles, the world size divided out",
               "def data_parallel_step(model, optimizer, batch, loss_sum, target_count):\n"
               "    world = dist.get_world_size()\n"
               "    for p in model.parameters():\n"
               "        p.grad = None\n"
               "    total = torch.tensor(target_count(batch))\n"
               "    dist.all_reduce(total)\n"
               "    loss = loss_sum(model, batch) * world / total\n"
               "    loss.backward()\n"
               "    handles = [dist.all_reduce(p.grad, async_op=True) for p in model.parameters()]\n"
               "    for handle in handles:\n"
               "        handle.wait()\n"
               "    for p in model.parameters():\n"
               "        p.grad.div_(world)\n"
               "    optimizer.step()\n"
               "    return float(loss.detach())\n"),
]
