"""Attention masks — one convention for the whole course.

**A mask is a boolean tensor where ``True`` means "this query may attend to this key".** It has one dimension per
dimension of the attention scores ``(batch, heads, q_len, k_len)``, each of size 1 or the scores' size, so it can be
read only one way (the attention modules refuse anything else, e.g. a ``(batch, seq)`` mask that broadcasting would
read as ``(q_len, k_len)``). Every builder below returns such a 4-D mask. True = may attend is
the convention of ``torch.nn.functional.scaled_dot_product_attention``. (``nn.MultiheadAttention``'s ``key_padding_mask`` and
``attn_mask`` use the *opposite* convention, ``True`` = blocked; invert with ``~`` when you talk to it.)
"""
from __future__ import annotations

import torch

from .errors import CourseTypeError, CourseValueError
from .validation import check_int, check_positive_int, check_tensor

__all__ = ["causal_mask", "combine_masks", "padding_mask", "target_mask"]


def padding_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Mask that hides padding keys.

    Args:
        ids: token ids ``(batch, seq)``.
        pad_id: the id used for padding.

    Returns:
        bool ``(batch, 1, 1, seq)``: ``True`` at real tokens, ``False`` at padding.
    """
    check_tensor("ids", ids, " with dtype=torch.long")
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise CourseTypeError(f"padding_mask expects integer token ids (batch, seq), got {ids.dtype}; pass the ids "
                              "themselves (ids.long()), not embeddings or an already built mask")
    check_int("pad_id", pad_id)
    if ids.dim() != 2:
        raise CourseValueError(f"padding_mask expects token ids of shape (batch, seq), got {tuple(ids.shape)}; "
                         "add a batch dimension with ids.unsqueeze(0) for a single sequence")
    return (ids != pad_id)[:, None, None, :]


def causal_mask(seq_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Mask that hides the future: position ``i`` may attend to positions ``0..i``.

    Returns:
        bool ``(1, 1, seq_len, seq_len)``, lower-triangular ``True``.
    """
    check_positive_int("seq_len", seq_len)
    if device is not None and not isinstance(device, (str, torch.device)):
        raise CourseTypeError(f"device must be None, a str such as 'cpu' or a torch.device, got "
                              f"{type(device).__name__}; use ids.device")
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()[None, None]


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of the given masks (``None`` entries are skipped); a key is allowed only if every mask allows it."""
    present = [m for m in masks if m is not None]
    for index, mask in enumerate(present):
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise CourseTypeError(f"combine_masks expects bool masks (True = may attend), got {got} for mask "
                                  f"{index}; build them with padding_mask / causal_mask, or use m.bool()")
    if not present:
        return None
    combined = present[0]
    for mask in present[1:]:
        combined = combined & mask
    return combined


def target_mask(tgt_ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Decoder self-attention mask: causal AND target padding, bool ``(batch, 1, seq, seq)``."""
    return combine_masks(padding_mask(tgt_ids, pad_id), causal_mask(tgt_ids.size(1), tgt_ids.device))
