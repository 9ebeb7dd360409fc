"""Typical wrong answers to the exercises of notebook 10 (scaling out)."""
from . import Mistake

MISTAKES = [
    Mistake("lesson10", "q1", "mean of per-rank means",
            "def ddp_scaled_loss(loss_sum, local_tokens, global_tokens, world_size):\n"
            "    return loss_sum / local_tokens\n",
            "averages the means"),
    Mistake("lesson10", "q1", "forgot DDP divides by world_size",
            "def ddp_scaled_loss(loss_sum, local_tokens, global_tokens, world_size):\n"
            "    return loss_sum / global_tokens\n",
            "multiply by world_size"),
    Mistake("lesson10", "q1", "no normalisation",
            "def ddp_scaled_loss(loss_sum, local_tokens, global_tokens, world_size):\n"
            "    return loss_sum\n",
            "grow with the batch size"),
    Mistake("lesson10", "q1", "returns a float",
            "def ddp_scaled_loss(loss_sum, local_tokens, global_tokens, world_size):\n"
            "    return float(loss_sum) * world_size / global_tokens\n",
            "return a tensor"),
    Mistake("lesson10", "q2", "contiguous blocks",
            "def rank_batches(n_batches, rank, world_size):\n"
            "    per_rank = n_batches // world_size\n"
            "    return list(range(rank * per_rank, (rank + 1) * per_rank))\n",
            "DistributedSampler interleaves"),
    Mistake("lesson10", "q2", "tail not dropped",
            "def rank_batches(n_batches, rank, world_size):\n"
            "    return list(range(rank, n_batches, world_size))\n",
            "Drop the tail"),
    Mistake("lesson10", "q3", "Adam moments forgotten",
            "def training_state_bytes(n_parameters, world_size, sharded):\n"
            "    full = 8 * n_parameters\n"
            "    return full / world_size if sharded else full\n",
            "two float32 moments"),
    Mistake("lesson10", "q3", "one part missing",
            "def training_state_bytes(n_parameters, world_size, sharded):\n"
            "    full = 12 * n_parameters\n"
            "    return full / world_size if sharded else full\n",
            "12 bytes per parameter"),
    Mistake("lesson10", "q3", "sharding does not divide",
            "def training_state_bytes(n_parameters, world_size, sharded):\n"
            "    return 16 * n_parameters\n",
            "divide by world_size"),
    Mistake("lesson10", "q3", "DDP divided too",
            "def training_state_bytes(n_parameters, world_size, sharded):\n"
            "    return 16 * n_parameters / world_size\n",
            "do not divide by world_size"),
]
