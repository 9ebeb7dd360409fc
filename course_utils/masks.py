"""Attention masks — one convention for the whole course.

**A mask is a boolean tensor where ``True`` means "this query may attend to this key".** It has one dimension per
dimension of the attention scores ``(batch, heads, q_len, k_len)``, each of size 1 or the scores' size, so it can be
read only one way (the attention modules refuse anything else, e.g. a ``(batch, seq)`` mask that broadcasting would
read as ``(q_len, k_len)``). Every builder below returns such a 4-D mask. True = may attend is the convention of
``torch.nn.functional.scaled_dot_product_attention``. (``nn.MultiheadAttention``'s ``key_padding_mask`` and
``attn_mask`` use the *opposite* convention, ``True`` = blocked; invert with ``~`` when you talk to it.)
"""
from __future__ import annotations

import torch

from .errors import CourseTypeError, CourseValueError
from .validation import check_device, check_non_negative_int, check_positive_int, check_tensor, describe

__all__ = ["causal_mask", "combine_masks", "padding_mask", "target_mask"]


def padding_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Mask that hides padding keys.

    Args:
        ids: token ids ``(batch, seq)``, integers >= 0.
        pad_id: the id used for padding (>= 0).

    Returns:
        bool ``(batch, 1, 1, seq)``: ``True`` at real tokens, ``False`` at padding.
    """
    check_tensor("ids", ids, " with dtype=torch.long")
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise CourseTypeError(f"padding_mask expects integer token ids (batch, seq), got {ids.dtype}; pass the ids "
                              "themselves (ids.long()), not embeddings or an already built mask")
    check_non_negative_int("pad_id", pad_id)
    if ids.dim() != 2:
        raise CourseValueError(f"padding_mask expects token ids of shape (batch, seq), got {tuple(ids.shape)}; "
                               "add a batch dimension with ids.unsqueeze(0) for a single sequence")
    if ids.numel() and int(ids.min()) < 0:
        raise CourseValueError(f"ids must be token ids >= 0, got a smallest id of {int(ids.min())}; pass the input "
                               "ids, not labels where -100 marks the positions to ignore")
    return (ids != pad_id)[:, None, None, :]


def causal_mask(q_len: int, past: int = 0, device: torch.device | str | None = None) -> torch.Tensor:
    """Mask that hides the future: the query at position ``past + i`` may attend to keys ``0 .. past + i``.

    ``past`` is the number of positions already in a KV cache (0 without one: then query ``i`` sees ``0..i``).
    ``device`` is ``None`` (the CPU), a ``torch.device`` or a device string such as ``'cuda'``.

    Returns:
        bool ``(1, 1, q_len, past + q_len)``: lower-triangular ``True``, shifted right by ``past``.
    """
    check_positive_int("q_len", q_len)
    check_non_negative_int("past", past)
    if device is not None:
        device = check_device("device", device)
    return torch.ones(q_len, past + q_len, dtype=torch.bool, device=device).tril(diagonal=past)[None, None]


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of the given masks (``None`` entries are skipped); a key is allowed only if every mask allows it.

    Each mask is a 4-D bool tensor (see the module docstring) and their shapes must broadcast together:
    ``padding_mask(ids)`` ``(batch, 1, 1, seq)`` AND ``causal_mask(seq)`` ``(1, 1, seq, seq)`` gives
    ``(batch, 1, seq, seq)``.
    """
    present = {}
    for index, mask in enumerate(masks):
        if mask is None:
            continue
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise CourseTypeError(f"mask {index} must be a bool tensor (True = may attend), got {describe(mask)}; "
                                  "build masks with padding_mask / causal_mask, or convert a 0/1 mask with m.bool()")
        if mask.dim() != 4:
            raise CourseValueError(f"mask {index} must have 4 dimensions (batch, heads, q_len, k_len), got shape "
                                   f"{tuple(mask.shape)}; padding_mask(ids) gives (batch, 1, 1, seq) and "
                                   "causal_mask(seq_len) gives (1, 1, seq_len, seq_len)")
        present[index] = mask
    if not present:
        return None
    try:
        torch.broadcast_shapes(*(mask.shape for mask in present.values()))
    except RuntimeError:
        shapes = ", ".join(f"mask {index} {tuple(mask.shape)}" for index, mask in present.items())
        raise CourseValueError(f"masks must broadcast to one shape, got {shapes}; each dimension must be 1 or the "
                               "same size in every mask: build them from the same ids (same batch, same seq)") from None
    combined, *rest = present.values()
    for mask in rest:
        combined = combined & mask
    return combined


def target_mask(tgt_ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Decoder self-attention mask: causal AND target padding, bool ``(batch, 1, seq, seq)``."""
    return combine_masks(padding_mask(tgt_ids, pad_id), causal_mask(tgt_ids.size(1), device=tgt_ids.device))
