"""Model configuration and parameter counting."""
from __future__ import annotations

from dataclasses import dataclass

import torch.nn as nn

ACTIVATIONS = ("relu", "gelu")
NORM_PLACEMENTS = ("post", "pre")
POSITIONAL_KINDS = ("sinusoidal", "learned")


@dataclass
class TransformerConfig:
    """Hyper-parameters shared by every model in the course.

    ``d_model`` must be divisible by ``n_heads`` (each head gets ``d_model // n_heads`` dimensions).
    ``norm="post"`` is the original paper's Add & Norm (``x = norm(x + sublayer(x))``); ``"pre"`` normalises first
    (``x = x + sublayer(norm(x))``). ``tgt_vocab_size`` is only used by the encoder–decoder (defaults to
    ``vocab_size``).
    """

    vocab_size: int
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 512
    n_layers: int = 2
    max_len: int = 128
    dropout: float = 0.1
    activation: str = "relu"
    norm: str = "post"
    positional: str = "sinusoidal"
    pad_id: int = 0
    tgt_vocab_size: int | None = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        check_heads(self.d_model, self.n_heads)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("norm", self.norm, NORM_PLACEMENTS)
        check_choice("positional", self.positional, POSITIONAL_KINDS)
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id={self.pad_id} must be a valid id in [0, vocab_size={self.vocab_size})")
        if self.tgt_vocab_size is None:
            self.tgt_vocab_size = self.vocab_size

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


def check_heads(d_model: int, n_heads: int) -> None:
    """Raise a helpful error unless ``d_model`` splits evenly into ``n_heads`` heads."""
    if n_heads < 1 or d_model % n_heads != 0:
        divisors = [h for h in range(1, min(d_model, 32) + 1) if d_model % h == 0]
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}; each head needs "
                         f"d_model // n_heads dimensions. Pick n_heads from {divisors} or change d_model.")


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def count_parameters(module: nn.Module, trainable_only: bool = True) -> int:
    """Number of (trainable) parameters; tied weights are counted once."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def attention_parameter_count(d_model: int) -> int:
    """Four ``d_model × d_model`` projections (W_q, W_k, W_v, W_o), each with a bias."""
    return 4 * (d_model * d_model + d_model)


def feed_forward_parameter_count(d_model: int, d_ff: int) -> int:
    """Two linear layers d_model → d_ff → d_model with biases."""
    return d_model * d_ff + d_ff + d_ff * d_model + d_model


def layer_norm_parameter_count(d_model: int) -> int:
    """A LayerNorm's gain and bias."""
    return 2 * d_model


def encoder_layer_parameter_count(d_model: int, d_ff: int) -> int:
    """Self-attention + FFN + two LayerNorms."""
    return (attention_parameter_count(d_model) + feed_forward_parameter_count(d_model, d_ff)
            + 2 * layer_norm_parameter_count(d_model))


def decoder_layer_parameter_count(d_model: int, d_ff: int) -> int:
    """Masked self-attention + cross-attention + FFN + three LayerNorms."""
    return (2 * attention_parameter_count(d_model) + feed_forward_parameter_count(d_model, d_ff)
            + 3 * layer_norm_parameter_count(d_model))
