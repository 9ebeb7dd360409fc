"""Copy weights from PyTorch's own modules into the course's, to prove both compute the same function.

PyTorch packs W_q, W_k, W_v into one ``in_proj_weight`` of shape ``(3·d_model, d_model)``; we keep them apart.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from .attention import MultiHeadAttention
from .layers import DecoderLayer, EncoderLayer
from .models import Decoder, Encoder


@torch.no_grad()
def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """Load ``nn.MultiheadAttention`` weights into :class:`MultiHeadAttention`."""
    for target, weight, bias in zip((ours.w_q, ours.w_k, ours.w_v), theirs.in_proj_weight.chunk(3),
                                    theirs.in_proj_bias.chunk(3)):
        target.weight.copy_(weight)
        target.bias.copy_(bias)
    ours.w_o.weight.copy_(theirs.out_proj.weight)
    ours.w_o.bias.copy_(theirs.out_proj.bias)


@torch.no_grad()
def copy_linear_and_norms(pairs) -> None:
    for ours, theirs in pairs:
        ours.weight.copy_(theirs.weight)
        ours.bias.copy_(theirs.bias)


def copy_encoder_layer(ours: EncoderLayer, theirs: nn.TransformerEncoderLayer) -> None:
    """Load ``nn.TransformerEncoderLayer`` weights (norm1 → attention block, norm2 → feed-forward block)."""
    copy_attention(ours.self_attn, theirs.self_attn)
    copy_linear_and_norms([(ours.feed_forward.linear1, theirs.linear1), (ours.feed_forward.linear2, theirs.linear2),
                           (ours.attn_block.norm, theirs.norm1), (ours.ff_block.norm, theirs.norm2)])


def copy_decoder_layer(ours: DecoderLayer, theirs: nn.TransformerDecoderLayer) -> None:
    """Load ``nn.TransformerDecoderLayer`` weights (``multihead_attn`` is the cross-attention)."""
    copy_attention(ours.self_attn, theirs.self_attn)
    copy_attention(ours.cross_attn, theirs.multihead_attn)
    copy_linear_and_norms([(ours.feed_forward.linear1, theirs.linear1), (ours.feed_forward.linear2, theirs.linear2),
                           (ours.self_attn_block.norm, theirs.norm1), (ours.cross_attn_block.norm, theirs.norm2),
                           (ours.ff_block.norm, theirs.norm3)])


def copy_encoder(ours: Encoder, theirs: nn.TransformerEncoder) -> None:
    """Load an ``nn.TransformerEncoder`` (built with a final ``norm``) into :class:`Encoder`."""
    for our_layer, their_layer in zip(ours.layers, theirs.layers, strict=True):
        copy_encoder_layer(our_layer, their_layer)
    copy_linear_and_norms([(ours.norm, theirs.norm)])


def copy_decoder(ours: Decoder, theirs: nn.TransformerDecoder) -> None:
    """Load an ``nn.TransformerDecoder`` (built with a final ``norm``) into :class:`Decoder`."""
    for our_layer, their_layer in zip(ours.layers, theirs.layers, strict=True):
        copy_decoder_layer(our_layer, their_layer)
    copy_linear_and_norms([(ours.norm, theirs.norm)])
