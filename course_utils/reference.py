"""Copy weights from PyTorch's own modules into the course's, to prove both compute the same function.

PyTorch packs W_q, W_k, W_v into one ``in_proj_weight`` of shape ``(3·d_model, d_model)`` (separate
``q/k/v_proj_weight`` when ``kdim``/``vdim`` differ from ``embed_dim``); we keep them apart.

Every copy first checks that both modules compute the same kind of function — sizes, heads, biases, norm placement,
activation, number of layers — and refuses with a course error otherwise: weights copied across such a mismatch
would run, and prove nothing.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import MultiHeadAttention
from .errors import CourseTypeError, CourseValueError
from .layers import DecoderLayer, EncoderLayer, PositionwiseFeedForward, ResidualSublayer
from .models import Decoder, Encoder

__all__ = ["copy_attention", "copy_decoder", "copy_decoder_layer", "copy_encoder", "copy_encoder_layer",
           "copy_linear_and_norms"]


def _check_same(what: str, ours, theirs, fix: str) -> None:
    """Raise a :class:`CourseValueError` naming the mismatch unless ``ours == theirs``."""
    if ours != theirs:
        raise CourseValueError(f"cannot copy weights: {what} differs — the course's module has {ours!r}, "
                               f"PyTorch's has {theirs!r}; {fix}")


def _check_type(name: str, module, expected: type) -> None:
    if not isinstance(module, expected):
        raise CourseTypeError(f"{name} must be a {expected.__module__}.{expected.__name__}, got "
                              f"{type(module).__name__}")


@torch.no_grad()
def _copy_tensor(target: nn.Parameter | None, source: torch.Tensor | None, name: str) -> None:
    """Copy ``source`` into ``target``; both absent (a layer without bias) is fine, one absent is refused."""
    _check_same(f"whether {name} exists", target is not None, source is not None,
               "build both modules with the same bias=True/False")
    if target is not None:
        _check_same(f"the shape of {name}", tuple(target.shape), tuple(source.shape),
                   "build both modules with the same sizes (d_model, d_ff, kdim, vdim)")
        target.copy_(source)


def _copy_linear_or_norm(ours: nn.Linear | nn.LayerNorm, theirs: nn.Linear | nn.LayerNorm, name: str) -> None:
    """Copy the weight and bias of a ``nn.Linear`` or ``nn.LayerNorm`` (same class, same eps for norms)."""
    _check_same(f"whether {name} is a LayerNorm", isinstance(ours, nn.LayerNorm), isinstance(theirs, nn.LayerNorm),
               "pair a linear layer with a linear layer, a norm with a norm")
    if isinstance(ours, nn.LayerNorm):
        _check_same(f"the eps of {name}", ours.eps, theirs.eps, "build PyTorch's layer with layer_norm_eps=1e-5")
    _copy_tensor(ours.weight, theirs.weight, f"{name}.weight")
    _copy_tensor(ours.bias, theirs.bias, f"{name}.bias")


def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """Load ``nn.MultiheadAttention`` weights into :class:`MultiHeadAttention`.

    Works for ``bias=False`` and for ``kdim``/``vdim`` (build ours with the same ``bias``; for ``kdim``/``vdim``, a
    :class:`~course_utils.kv_cache.CachedMultiHeadAttention` with the same sizes);
    refuses ``add_bias_kv`` and ``add_zero_attn``, which the course's block does not have.
    """
    _check_type("ours", ours, MultiHeadAttention)
    _check_type("theirs", theirs, nn.MultiheadAttention)
    _check_same("d_model (embed_dim)", ours.d_model, theirs.embed_dim, "build both with the same d_model")
    _check_same("the number of heads", ours.n_heads, theirs.num_heads,
               "build both with the same n_heads (the same weights split into other heads are another function)")
    kdim, vdim = getattr(ours, "kdim", ours.d_model), getattr(ours, "vdim", ours.d_model)  # lesson 07's block has both
    _check_same("kdim", kdim, theirs.kdim, "pass the same kdim to CachedMultiHeadAttention")
    _check_same("vdim", vdim, theirs.vdim, "pass the same vdim to CachedMultiHeadAttention")
    _check_same("add_bias_kv", False, theirs.bias_k is not None, "build nn.MultiheadAttention with add_bias_kv=False")
    _check_same("add_zero_attn", False, theirs.add_zero_attn, "build nn.MultiheadAttention with add_zero_attn=False")
    if theirs.in_proj_weight is not None:  # kdim == vdim == embed_dim: one packed matrix
        weights = theirs.in_proj_weight.chunk(3)
    else:
        weights = (theirs.q_proj_weight, theirs.k_proj_weight, theirs.v_proj_weight)
    biases = theirs.in_proj_bias.chunk(3) if theirs.in_proj_bias is not None else (None, None, None)
    for name, target, weight, bias in zip("qkv", (ours.w_q, ours.w_k, ours.w_v), weights, biases):
        _copy_tensor(target.weight, weight, f"W_{name}")
        _copy_tensor(target.bias, bias, f"the bias of W_{name}")
    _copy_linear_or_norm(ours.w_o, theirs.out_proj, "W_o (out_proj)")


def copy_linear_and_norms(pairs) -> None:
    """Copy weight and bias for each ``(ours, theirs)`` pair of ``nn.Linear`` or ``nn.LayerNorm`` modules."""
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise CourseTypeError(f"pairs must be a list of (ours, theirs) module pairs, got {type(pairs).__name__}")
    pairs = list(pairs)
    if not pairs:
        raise CourseValueError("pairs must hold at least one (ours, theirs) pair, got none; copying nothing would "
                               "prove nothing — pass e.g. [(ours.linear1, theirs.linear1)]")
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise CourseTypeError(f"pairs[{index}] must be a tuple (ours, theirs), got {pair!r:.60}")
        ours, theirs = pair
        for side, module in (("ours", ours), ("theirs", theirs)):
            if not isinstance(module, (nn.Linear, nn.LayerNorm)):
                raise CourseTypeError(f"pairs[{index}]: {side} must be an nn.Linear or nn.LayerNorm, got "
                                      f"{type(module).__name__}")
        _copy_linear_or_norm(ours, theirs, f"pairs[{index}]")


def _activation_name(activation) -> str:
    """``"relu"``/``"gelu"`` for PyTorch's activation functions or modules, else the object's name."""
    if activation is F.relu or isinstance(activation, nn.ReLU):
        return "relu"
    if activation is F.gelu or (isinstance(activation, nn.GELU) and activation.approximate == "none"):
        return "gelu"
    return getattr(activation, "__name__", type(activation).__name__)


def _check_layer_kind(feed_forward: PositionwiseFeedForward, blocks: list[ResidualSublayer], theirs) -> None:
    """Refuse a copy across a different norm placement or activation."""
    _check_same("norm_first (Pre-LN)", blocks[0].norm_first, theirs.norm_first,
               "build the course's layer with norm='pre' for norm_first=True, norm='post' for False")
    _check_same("the activation", feed_forward.activation_name, _activation_name(theirs.activation),
               "build both with the same activation ('relu' or 'gelu')")


def copy_encoder_layer(ours: EncoderLayer, theirs: nn.TransformerEncoderLayer) -> None:
    """Load ``nn.TransformerEncoderLayer`` weights (norm1 → attention block, norm2 → feed-forward block)."""
    _check_type("ours", ours, EncoderLayer)
    _check_type("theirs", theirs, nn.TransformerEncoderLayer)
    _check_layer_kind(ours.feed_forward, [ours.attn_block, ours.ff_block], theirs)
    copy_attention(ours.self_attn, theirs.self_attn)
    for name, our_part, their_part in (("linear1", ours.feed_forward.linear1, theirs.linear1),
                                       ("linear2", ours.feed_forward.linear2, theirs.linear2),
                                       ("norm1", ours.attn_block.norm, theirs.norm1),
                                       ("norm2", ours.ff_block.norm, theirs.norm2)):
        _copy_linear_or_norm(our_part, their_part, name)


def copy_decoder_layer(ours: DecoderLayer, theirs: nn.TransformerDecoderLayer) -> None:
    """Load ``nn.TransformerDecoderLayer`` weights (``multihead_attn`` is the cross-attention)."""
    _check_type("ours", ours, DecoderLayer)
    _check_type("theirs", theirs, nn.TransformerDecoderLayer)
    _check_layer_kind(ours.feed_forward, [ours.self_attn_block, ours.cross_attn_block, ours.ff_block], theirs)
    copy_attention(ours.self_attn, theirs.self_attn)
    copy_attention(ours.cross_attn, theirs.multihead_attn)
    for name, our_part, their_part in (("linear1", ours.feed_forward.linear1, theirs.linear1),
                                       ("linear2", ours.feed_forward.linear2, theirs.linear2),
                                       ("norm1", ours.self_attn_block.norm, theirs.norm1),
                                       ("norm2", ours.cross_attn_block.norm, theirs.norm2),
                                       ("norm3", ours.ff_block.norm, theirs.norm3)):
        _copy_linear_or_norm(our_part, their_part, name)


def _check_stack(ours: Encoder | Decoder, theirs: nn.TransformerEncoder | nn.TransformerDecoder) -> None:
    _check_same("the number of layers", len(ours.layers), len(theirs.layers),
               "build both with the same n_layers / num_layers")
    _check_same("whether a final LayerNorm exists", True, theirs.norm is not None,
               f"the course's stack ends with a LayerNorm: build {type(theirs).__name__}(..., "
               "norm=nn.LayerNorm(d_model))")


def copy_encoder(ours: Encoder, theirs: nn.TransformerEncoder) -> None:
    """Load an ``nn.TransformerEncoder`` (built with a final ``norm``) into :class:`Encoder`."""
    _check_type("ours", ours, Encoder)
    _check_type("theirs", theirs, nn.TransformerEncoder)
    _check_stack(ours, theirs)
    for our_layer, their_layer in zip(ours.layers, theirs.layers):
        copy_encoder_layer(our_layer, their_layer)
    _copy_linear_or_norm(ours.norm, theirs.norm, "the final norm")


def copy_decoder(ours: Decoder, theirs: nn.TransformerDecoder) -> None:
    """Load an ``nn.TransformerDecoder`` (built with a final ``norm``) into :class:`Decoder`."""
    _check_type("ours", ours, Decoder)
    _check_type("theirs", theirs, nn.TransformerDecoder)
    _check_stack(ours, theirs)
    for our_layer, their_layer in zip(ours.layers, theirs.layers):
        copy_decoder_layer(our_layer, their_layer)
    _copy_linear_or_norm(ours.norm, theirs.norm, "the final norm")
