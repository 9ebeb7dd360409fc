"""Model configuration and parameter counting."""
from __future__ import annotations

__all__ = ["ACTIVATIONS", "NORMALIZATIONS", "NORM_PLACEMENTS", "POSITIONAL_KINDS", "TransformerConfig",
           "attention_parameter_count", "check_heads", "check_kv_heads", "count_parameters",
           "decoder_layer_parameter_count", "encoder_layer_parameter_count",
           "feed_forward_parameter_count", "layer_norm_parameter_count"]

from dataclasses import dataclass
from typing import ClassVar

import torch.nn as nn

from .errors import CourseValueError
from .validation import (
    check_bool,
    check_choice,
    check_index,
    check_module,
    check_positive_int,
    check_probability,
    check_real,
)

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "swiglu")  # gelu_tanh: GPT-2's GELU; swiglu: lesson 09's gated FFN
NORM_PLACEMENTS = ("post", "pre")
NORMALIZATIONS = ("layernorm", "rmsnorm")
POSITIONAL_KINDS = ("sinusoidal", "learned", "rope")  # rope: no table added, queries and keys rotated (lesson 09)


@dataclass
class TransformerConfig:
    """Hyper-parameters shared by every model in the course.

    ``d_model`` must be divisible by ``n_heads`` (each head gets ``d_model // n_heads`` dimensions).
    ``norm`` is where the normalisation sits: ``"post"`` is the original paper's Add & Norm
    (``x = norm(x + sublayer(x))``), ``"pre"`` normalises first (``x = x + sublayer(norm(x))``).
    ``tgt_vocab_size`` is only used by the encoder–decoder (defaults to ``vocab_size``).

    Lesson 09's switches, each changing one thing: ``positional="rope"`` (rotate queries and keys by
    ``rope_base``), ``normalization="rmsnorm"``, ``activation="swiglu"`` (a gated feed-forward whose hidden size is
    ``d_ff``), ``n_kv_heads`` < ``n_heads`` (grouped-query attention; ``None`` = ``n_heads``, 1 = multi-query), and
    ``bias=False`` (no bias in any linear layer or LayerNorm). ``activation="gelu_tanh"`` is GPT-2's GELU (the tanh
    approximation) and ``pad_id=None`` a vocabulary without a padding token (GPT-2, Llama): nothing is masked.

    Every field is checked when the config is built: sizes are positive ints, ``dropout`` lies in [0, 1),
    ``pad_id`` is ``None`` or a valid id of both vocabularies, ``n_kv_heads`` divides ``n_heads``, RoPE has an even
    ``d_head``.

    The five constants below are what the published families change to load their checkpoints; they are fields of
    :class:`course_utils.interop.PublishedConfig`, which documents them. Every course model has these values.
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
    pad_id: int | None = 0
    tgt_vocab_size: int | None = None
    normalization: str = "layernorm"
    n_kv_heads: int | None = None
    rope_base: float = 10000.0
    bias: bool = True

    scale_embeddings: ClassVar[bool] = True       # token embeddings × √d_model
    n_token_types: ClassVar[int] = 0              # no token-type (segment) embeddings
    embedding_norm: ClassVar[bool] = False        # the input embeddings are not normalised
    final_norm: ClassVar[bool] = True             # a norm after the last layer (Pre-LN stacks)
    norm_eps: ClassVar[float | None] = None       # each norm's own default ε

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            check_positive_int(name, getattr(self, name))
        if self.tgt_vocab_size is not None:
            check_positive_int("tgt_vocab_size", self.tgt_vocab_size)
        check_heads(self.d_model, self.n_heads)
        check_probability("dropout", self.dropout, hint="; 0.1 is the usual value")
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("norm", self.norm, NORM_PLACEMENTS)
        check_choice("positional", self.positional, POSITIONAL_KINDS)
        check_choice("normalization", self.normalization, NORMALIZATIONS)
        check_bool("bias", self.bias)
        if self.n_kv_heads is not None:  # None: as many as n_heads (kept None, so replace(n_heads=...) still works)
            check_kv_heads(self.n_heads, self.n_kv_heads)
        check_real("rope_base", self.rope_base, low=1.0, low_inclusive=False, hint="; 10000.0 is the usual value")
        if self.positional == "rope" and self.d_head % 2:
            raise CourseValueError(f"RoPE rotates pairs of dimensions, so d_head = d_model // n_heads must be even, "
                                   f"got {self.d_head}; pick d_model and n_heads with an even quotient")
        if self.pad_id is not None:  # None: a vocabulary without a padding token (GPT-2, Llama)
            check_index("pad_id", self.pad_id, self.vocab_size, f"the vocabulary (vocab_size={self.vocab_size})")
        if self.tgt_vocab_size is None:
            self.tgt_vocab_size = self.vocab_size
        if self.pad_id is not None:
            check_index("pad_id", self.pad_id, self.tgt_vocab_size,
                        f"the target vocabulary (tgt_vocab_size={self.tgt_vocab_size})")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def layer_options(self) -> dict:
        """The settings every layer of a model built from this config takes (see :mod:`course_utils.layers`)."""
        return {"d_model": self.d_model, "n_heads": self.n_heads, "d_ff": self.d_ff, "dropout": self.dropout,
                "activation": self.activation, "norm": self.norm, "bias": self.bias,
                "normalization": self.normalization, "n_kv_heads": self.n_kv_heads,
                "rope_base": self.rope_base if self.positional == "rope" else None, "norm_eps": self.norm_eps}


def check_heads(d_model: int, n_heads: int) -> None:
    """Raise a helpful error unless ``d_model`` and ``n_heads`` are positive ints and ``d_model`` splits evenly
    into ``n_heads`` heads."""
    check_positive_int("d_model", d_model)
    check_positive_int("n_heads", n_heads)
    if d_model % n_heads != 0:
        divisors = [h for h in range(1, min(d_model, 32) + 1) if d_model % h == 0]
        raise CourseValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}; each head needs "
                               f"d_model // n_heads dimensions. Pick n_heads from {divisors} or change d_model.")


def check_kv_heads(n_heads: int, n_kv_heads: int) -> None:
    """``n_kv_heads`` must be a positive int that divides ``n_heads`` (each K/V head serves a whole group)."""
    check_positive_int("n_heads", n_heads)
    check_positive_int("n_kv_heads", n_kv_heads)
    if n_heads % n_kv_heads:
        divisors = [h for h in range(1, n_heads + 1) if n_heads % h == 0]
        raise CourseValueError(f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}: every key/value head "
                               f"serves a group of n_heads // n_kv_heads query heads. Pick one of {divisors} "
                               f"({n_heads} = multi-head, 1 = multi-query)")


def count_parameters(module: nn.Module, trainable_only: bool = True) -> int:
    """Number of (trainable) parameters; tied weights are counted once."""
    check_module("module", module)
    check_bool("trainable_only", trainable_only)
    return sum(p.numel() for p in module.parameters() if p.requires_grad or not trainable_only)


def attention_parameter_count(d_model: int) -> int:
    """Four ``d_model × d_model`` projections (W_q, W_k, W_v, W_o), each with a bias."""
    check_positive_int("d_model", d_model)
    return 4 * (d_model * d_model + d_model)


def feed_forward_parameter_count(d_model: int, d_ff: int) -> int:
    """Two linear layers d_model → d_ff → d_model with biases."""
    check_positive_int("d_model", d_model)
    check_positive_int("d_ff", d_ff)
    return d_model * d_ff + d_ff + d_ff * d_model + d_model


def layer_norm_parameter_count(d_model: int) -> int:
    """A LayerNorm's gain and bias."""
    check_positive_int("d_model", d_model)
    return 2 * d_model


def encoder_layer_parameter_count(d_model: int, d_ff: int) -> int:
    """Self-attention + FFN + two LayerNorms."""
    check_positive_int("d_model", d_model)
    check_positive_int("d_ff", d_ff)
    return (attention_parameter_count(d_model) + feed_forward_parameter_count(d_model, d_ff)
            + 2 * layer_norm_parameter_count(d_model))


def decoder_layer_parameter_count(d_model: int, d_ff: int) -> int:
    """Masked self-attention + cross-attention + FFN + three LayerNorms."""
    check_positive_int("d_model", d_model)
    check_positive_int("d_ff", d_ff)
    return (2 * attention_parameter_count(d_model) + feed_forward_parameter_count(d_model, d_ff)
            + 3 * layer_norm_parameter_count(d_model))
