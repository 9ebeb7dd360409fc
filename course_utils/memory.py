"""Activation memory (lesson 10): gradient checkpointing and what a training step keeps for its backward pass.

The backward pass needs tensors saved by the forward pass (inputs of matrix products, softmax outputs, ...).
Their total is what mixed precision halves (16-bit copies) and gradient checkpointing trades for recomputation.
:func:`saved_activation_bytes` measures it on any device, CPU included, by watching autograd's saved tensors;
:func:`step_memory` adds the CUDA allocator's peak when a GPU does the work.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from .errors import CourseTypeError

AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class Checkpointed(nn.Module):
    """Wraps a layer: its inner activations are not kept but recomputed during the backward pass.

    Same outputs and gradients as the bare layer (dropout replays the same random mask); less memory, one
    extra forward pass of the layer per training step.
    """

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, *inputs, **kwargs):
        return checkpoint(self.layer, *inputs, use_reentrant=False, **kwargs)


def checkpoint_layers(model: nn.Module) -> int:
    """Wrap every encoder and decoder layer of a course model in :class:`Checkpointed` (in place).

    Returns the number of wrapped layers; 0 means the model has no ``encoder.layers``/``decoder.layers``.
    """
    stacks = [module.layers for module in model.modules()
              if isinstance(getattr(module, "layers", None), nn.ModuleList)]
    wrapped = 0
    for stack in stacks:
        for i, layer in enumerate(stack):
            if not isinstance(layer, Checkpointed):
                stack[i] = Checkpointed(layer)
                wrapped += 1
    return wrapped


def autocast_context(device: torch.device, amp: str | None):
    """``torch.autocast`` on ``device`` with ``amp`` = ``"bf16"`` or ``"fp16"``; a no-op context for ``None``."""
    if amp is None:
        return nullcontext()
    if amp not in AMP_DTYPES:
        raise CourseTypeError(f"amp must be None, 'bf16' or 'fp16', got {amp!r}")
    return torch.autocast(device.type, dtype=AMP_DTYPES[amp])


def saved_activation_bytes(step: Callable[[], torch.Tensor], exclude: nn.Module | None = None) -> int:
    """Bytes of the tensors autograd saves for backward while ``step()`` runs its forward pass.

    ``step`` returns the loss; its backward pass is run too (so the graph is freed). Tensors that share storage
    with a parameter of ``exclude`` (the weights themselves, not activations) are not counted, and each storage
    is counted once. Under gradient checkpointing only the checkpointed layers' *inputs* are saved.
    """
    parameters = {p.untyped_storage().data_ptr() for p in exclude.parameters()} if exclude is not None else set()
    seen: set[int] = set()
    total = 0

    def pack(tensor: torch.Tensor):
        nonlocal total
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
        if pointer not in seen and pointer not in parameters:
            seen.add(pointer)
            total += storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = step()
    loss.backward()
    return total


def step_memory(step: Callable[[], torch.Tensor], model: nn.Module) -> dict[str, float | None]:
    """Memory of one training step: ``{"saved for backward MB", "peak CUDA MB"}``.

    ``"peak CUDA MB"`` is ``torch.cuda.max_memory_allocated`` during the step when ``model`` lives on a GPU, and
    ``None`` elsewhere (a CPU has no allocator statistics; the saved-tensor total is measured on both).
    """
    on_cuda = next(model.parameters()).device.type == "cuda"
    if on_cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    saved = saved_activation_bytes(step, exclude=model)
    peak = None
    if on_cuda:
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() / 2**20
    model.zero_grad(set_to_none=True)
    return {"saved for backward MB": saved / 2**20, "peak CUDA MB": peak}
