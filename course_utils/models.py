"""Complete models built from the layers: encoder and decoder stacks, a classifier, a masked LM, a translator."""
from __future__ import annotations

__all__ = ["Decoder", "Encoder", "InputEmbedding", "MaskedLanguageModel", "POOLINGS", "Seq2SeqTransformer",
           "TextEncoder", "TransformerClassifier", "check_cache", "init_weights", "make_final_norm",
           "make_input_embedding"]

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import NORMALIZATIONS, POSITIONAL_KINDS, TransformerConfig
from .embedding import TokenEmbedding
from .errors import CourseTypeError, CourseValueError
from .kv_cache import KVCache
from .layers import DecoderLayer, EncoderLayer
from .masks import causal_mask, padding_mask
from .modern import make_norm
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding
from .validation import (
    check_bool,
    check_choice,
    check_context,
    check_features,
    check_int,
    check_module,
    check_non_negative_int,
    check_positive_int,
    check_probability,
    check_real,
    check_same_batch,
    check_token_ids,
    check_vectors,
    checked_by,
    describe,
)

POOLINGS = ("cls", "mean")


def check_config(config: object) -> TransformerConfig:
    """``config`` if it is a :class:`TransformerConfig` (a dict of settings must be unpacked into one first)."""
    if not isinstance(config, TransformerConfig):
        raise CourseTypeError(f"config must be a TransformerConfig, got {describe(config)}; build one with "
                              "TransformerConfig(vocab_size=..., d_model=..., ...) "
                              "(for a dict: TransformerConfig(**d))")
    return config


def check_cache(cache: object, n_layers: int, batch: int, cross_attention: bool = False) -> None:
    """Raise a clear error unless ``cache`` is ``None`` or a :class:`~course_utils.kv_cache.KVCache` from
    ``model.new_cache()`` with ``n_layers`` layers (and cross-attention entries when asked) that fits ``batch`` rows."""
    check_positive_int("n_layers", n_layers)
    check_positive_int("batch", batch)
    check_bool("cross_attention", cross_attention)
    if cache is None:
        return
    fix = "create it with model.new_cache() (one per batch of prompts) and pass the same object at every step"
    if (not isinstance(cache, KVCache) or len(cache.self_attention) != n_layers
            or (cross_attention and cache.cross_attention is None)):
        kind = "with cross-attention entries " if cross_attention else ""
        raise CourseTypeError(f"cache must be a KVCache {kind}for {n_layers} layers, got {describe(cache)}; {fix}")
    if cache.batch_size is not None and cache.batch_size != batch:
        raise CourseValueError(f"the cache holds keys for {cache.batch_size} rows but this call has {batch}; {fix}")


def init_weights(module: nn.Module) -> None:
    """Xavier-uniform for every matrix (as ``nn.Transformer`` does); vectors keep PyTorch's defaults."""
    check_module("module", module)
    for p in module.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)


class InputEmbedding(nn.Module):
    """Token ids → ``token embedding × √d_model + positional encoding``, then dropout.

    ``positional="rope"`` adds no table: the attention layers rotate queries and keys instead (lesson 09).

    The keyword-only switches are the published families' (see :class:`~course_utils.interop.PublishedConfig`):
    ``scale=False`` skips the √d_model; ``n_token_types > 0`` adds a token-type (segment) embedding (BERT);
    ``norm`` (``"layernorm"`` or ``"rmsnorm"``, with ``norm_eps`` and ``bias``) normalises the sum before dropout
    (BERT's embedding LayerNorm). :func:`make_input_embedding` builds one from a config.
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, positional: str = "sinusoidal",
                 dropout: float = 0.1, pad_id: int | None = None, *, scale: bool = True, n_token_types: int = 0,
                 norm: str | None = None, norm_eps: float | None = None, bias: bool = True) -> None:
        super().__init__()
        check_choice("positional", positional, POSITIONAL_KINDS)
        self.max_len = check_positive_int("max_len", max_len)
        check_probability("dropout", dropout)
        self.tokens = TokenEmbedding(vocab_size, d_model, pad_id, scale)
        self.n_token_types = check_non_negative_int("n_token_types", n_token_types)
        self.token_types = nn.Embedding(n_token_types, d_model) if n_token_types else None
        tables = {"sinusoidal": SinusoidalPositionalEncoding, "learned": LearnedPositionalEncoding}
        self.positions = tables[positional](d_model, max_len) if positional in tables else None
        if norm is not None:
            check_choice("norm", norm, NORMALIZATIONS)
        if norm_eps is not None:
            check_real("norm_eps", norm_eps, low=0.0, low_inclusive=False, hint="; None keeps the norm's default")
        self.norm = None if norm is None else make_norm(norm, d_model, bias, norm_eps)
        self.dropout = nn.Dropout(dropout)

    def check_inputs(self, ids: torch.Tensor, offset: int = 0, token_type_ids: torch.Tensor | None = None) -> None:
        ids = check_token_ids(ids, self.tokens.vocab_size, name="ids")
        check_non_negative_int("offset", offset)
        check_context(offset, ids.size(1), self.max_len)
        check_token_types(token_type_ids, ids, self.n_token_types)

    @checked_by(check_inputs)
    def forward(self, ids: torch.Tensor, offset: int = 0, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``(batch, seq)`` integer ids → ``(batch, seq, d_model)``; ``offset`` = position of the first token;
        ``token_type_ids`` ``(batch, seq)`` segment ids (``None``: all 0) when the model has token types."""
        x = self.tokens(ids)
        if self.token_types is not None:
            types = torch.zeros_like(ids, dtype=torch.long) if token_type_ids is None else token_type_ids.long()
            x = x + self.token_types(types)
        if self.positions is not None:
            x = self.positions(x, offset)
        if self.norm is not None:
            x = self.norm(x)
        return self.dropout(x)


def check_token_types(token_type_ids: object, ids: torch.Tensor, n_token_types: int) -> None:
    """Raise a course error unless ``token_type_ids`` is ``None`` or integer ids in ``[0, n_token_types)`` of the
    shape of ``ids``."""
    if token_type_ids is None:
        return
    if not n_token_types:
        raise CourseValueError("token_type_ids were given but this model has no token-type embeddings "
                               "(n_token_types=0); pass token_type_ids=None or build it with n_token_types > 0")
    token_type_ids = check_token_ids(token_type_ids, n_token_types, name="token_type_ids")
    if token_type_ids.shape != ids.shape:
        raise CourseValueError(f"token_type_ids must have the shape of ids {tuple(ids.shape)}, got "
                               f"{tuple(token_type_ids.shape)}; give one segment id per token")


def make_input_embedding(config: TransformerConfig, vocab_size: int | None = None) -> InputEmbedding:
    """The :class:`InputEmbedding` a config describes (``vocab_size``: another vocabulary, e.g. the target's)."""
    check_config(config)
    vocab_size = config.vocab_size if vocab_size is None else check_positive_int("vocab_size", vocab_size)
    return InputEmbedding(vocab_size, config.d_model, config.max_len, config.positional, config.dropout,
                          config.pad_id, scale=config.scale_embeddings, n_token_types=config.n_token_types,
                          norm=config.normalization if config.embedding_norm else None, norm_eps=config.norm_eps,
                          bias=config.bias)


def make_final_norm(config: TransformerConfig) -> nn.Module:
    """The normalisation after a stack of layers (the config's kind: LayerNorm or RMSNorm, with its ``norm_eps``)."""
    check_config(config)
    return make_norm(config.normalization, config.d_model, config.bias, config.norm_eps)


def _padding(ids: torch.Tensor, pad_id: int | None) -> torch.Tensor | None:
    """``padding_mask(ids, pad_id)``, or ``None`` for a vocabulary without a padding token."""
    return None if pad_id is None else padding_mask(ids, pad_id)


class Encoder(nn.Module):
    """``n_layers`` encoder layers and a final norm (none with a published config's ``final_norm=False``), on
    vectors ``(batch, seq, d_model)``."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = check_config(config)
        self.layers = nn.ModuleList(EncoderLayer(**config.layer_options()) for _ in range(config.n_layers))
        self.norm = make_final_norm(config) if config.final_norm else nn.Identity()

    def check_inputs(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> None:
        check_vectors(x, self, self.config.d_model)
        self.layers[0].check_inputs(x, mask)

    @checked_by(check_inputs)
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``(batch, seq, d_model)`` → same shape; ``mask`` bool, True = may attend."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(nn.Module):
    """``n_layers`` decoder layers and a final norm (none with a published config's ``final_norm=False``), on
    vectors ``(batch, tgt_len, d_model)``."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = check_config(config)
        self.layers = nn.ModuleList(DecoderLayer(**config.layer_options()) for _ in range(config.n_layers))
        self.norm = make_final_norm(config) if config.final_norm else nn.Identity()

    def check_inputs(self, y: torch.Tensor, memory: torch.Tensor, tgt_mask: torch.Tensor | None = None,
                     memory_mask: torch.Tensor | None = None, cache: KVCache | None = None) -> None:
        check_vectors(y, self, self.config.d_model, "y", "(batch, tgt_len, d_model)")
        check_vectors(memory, self, self.config.d_model, "memory", "(batch, src_len, d_model)")
        check_same_batch(("y", y), ("memory", memory))
        check_cache(cache, len(self.layers), y.size(0), cross_attention=True)
        layer_caches = (None, None) if cache is None else (cache.self_attention[0], cache.cross_attention[0])
        self.layers[0].check_inputs(y, memory, tgt_mask, memory_mask, *layer_caches)

    @checked_by(check_inputs)
    def forward(self, y: torch.Tensor, memory: torch.Tensor, tgt_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None, cache: KVCache | None = None) -> torch.Tensor:
        """``y (batch, tgt_len, d_model)``, ``memory (batch, src_len, d_model)`` → ``(batch, tgt_len, d_model)``."""
        for i, layer in enumerate(self.layers):
            if cache is None:
                y = layer(y, memory, tgt_mask, memory_mask)
            else:
                y = layer(y, memory, tgt_mask, memory_mask, cache.self_attention[i], cache.cross_attention[i])
        return self.norm(y)


class TextEncoder(nn.Module):
    """Token ids → contextual vectors: :class:`InputEmbedding` + :class:`Encoder`, padding masked by ``pad_id``
    (nothing is masked when ``config.pad_id`` is ``None``)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = check_config(config)
        self.embedding = make_input_embedding(config)
        self.encoder = Encoder(config)

    def check_inputs(self, ids: torch.Tensor, mask_padding: bool = True,
                     token_type_ids: torch.Tensor | None = None) -> None:
        ids = check_token_ids(ids, self.config.vocab_size, self.config.max_len, name="ids")
        check_bool("mask_padding", mask_padding)
        check_token_types(token_type_ids, ids, self.config.n_token_types)

    @checked_by(check_inputs)
    def forward(self, ids: torch.Tensor, mask_padding: bool = True,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``(batch, seq)`` integer ids → ``(batch, seq, d_model)``. ``mask_padding=False`` lets tokens attend to
        padding. ``token_type_ids`` ``(batch, seq)``: segment ids, for a config with ``n_token_types > 0``."""
        mask = _padding(ids, self.config.pad_id) if mask_padding else None
        return self.encoder(self.embedding(ids, 0, token_type_ids), mask)


class TransformerClassifier(nn.Module):
    """Encoder + pooling + linear head → class logits.

    ``pooling="cls"`` reads the vector at position 0, which must hold a real ``[CLS]`` token added by the
    tokenizer; ``"mean"`` averages the vectors of the real (non-padding) tokens.
    """

    def __init__(self, config: TransformerConfig, n_classes: int, pooling: str = "cls",
                 mask_padding: bool = True) -> None:
        super().__init__()
        check_config(config)
        check_choice("pooling", pooling, POOLINGS)
        if check_int("n_classes", n_classes) < 2:
            raise CourseValueError(f"a classifier needs n_classes >= 2, got {n_classes}; "
                                   "a yes/no task has 2 classes")
        check_bool("mask_padding", mask_padding)
        self.pooling = pooling
        self.mask_padding = mask_padding
        self.text_encoder = TextEncoder(config)
        self.head = nn.Linear(config.d_model, n_classes)
        init_weights(self)

    def check_inputs(self, ids: torch.Tensor) -> None:
        config = self.text_encoder.config
        ids = check_token_ids(ids, config.vocab_size, config.max_len, name="ids")
        if self.pooling == "cls" and config.pad_id is not None and bool((ids[:, 0] == config.pad_id).any()):
            row = int((ids[:, 0] == config.pad_id).nonzero()[0])
            raise CourseValueError(f"pooling='cls' reads position 0, but row {row} starts with [PAD] (id "
                                   f"{config.pad_id}); its vector would summarise nothing. Put the [CLS] token first "
                                   "(tokenizer.encode_batch(..., add_cls=True)), pad on the right, or use "
                                   "pooling='mean'")

    @checked_by(check_inputs)
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` integer ids → logits ``(batch, n_classes)``."""
        hidden = self.text_encoder(ids, self.mask_padding)
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            pad_id = self.text_encoder.config.pad_id
            keep = ids != pad_id if self.mask_padding and pad_id is not None else torch.ones_like(ids, dtype=torch.bool)
            weights = keep.to(hidden.dtype)
            pooled = (hidden * weights[..., None]).sum(1) / weights.sum(1, keepdim=True).clamp(min=1.0)
        return self.head(pooled)


class MaskedLanguageModel(nn.Module):
    """Encoder + MLM head (dense → GELU → LayerNorm → vocabulary logits), as in BERT.

    With ``tie_weights=True`` the output projection reuses the token-embedding matrix (its transpose), which
    saves ``vocab_size × d_model`` parameters. The head's LayerNorm uses ``config.norm_eps`` when it is set.
    """

    def __init__(self, config: TransformerConfig, tie_weights: bool = True) -> None:
        super().__init__()
        check_config(config)
        check_bool("tie_weights", tie_weights)
        self.text_encoder = TextEncoder(config)
        self.transform = nn.Linear(config.d_model, config.d_model)
        self.transform_norm = (nn.LayerNorm(config.d_model) if config.norm_eps is None
                               else nn.LayerNorm(config.d_model, eps=config.norm_eps))
        self.output = nn.Linear(config.d_model, config.vocab_size)
        init_weights(self)
        if tie_weights:
            self.output.weight = self.text_encoder.embedding.tokens.weight

    def check_hidden(self, hidden: torch.Tensor) -> None:
        check_features(hidden, self, self.text_encoder.config.d_model, "hidden")

    @checked_by(check_hidden)
    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """The MLM head alone: vectors ``(..., d_model)`` → vocabulary logits ``(..., vocab_size)``."""
        return self.output(self.transform_norm(F.gelu(self.transform(hidden))))

    def forward(self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``(batch, seq)`` integer ids → logits ``(batch, seq, vocab_size)``; ``token_type_ids`` as in
        :class:`TextEncoder`."""
        return self.head(self.text_encoder(ids, token_type_ids=token_type_ids))


class Seq2SeqTransformer(nn.Module):
    """The encoder–decoder of "Attention Is All You Need": source ids + shifted target ids → next-token logits."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = check_config(config)
        self.src_embedding = make_input_embedding(config)
        self.tgt_embedding = make_input_embedding(config, config.tgt_vocab_size)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)
        init_weights(self)

    def check_source(self, src_ids: torch.Tensor) -> None:
        check_token_ids(src_ids, self.config.vocab_size, self.config.max_len, name="src_ids")

    @checked_by(check_source)
    def encode(self, src_ids: torch.Tensor) -> torch.Tensor:
        """``(batch, src_len)`` → memory ``(batch, src_len, d_model)``; source padding is masked."""
        return self.encoder(self.src_embedding(src_ids), _padding(src_ids, self.config.pad_id))

    def new_cache(self) -> KVCache:
        """An empty KV cache for :meth:`decode`: self- and cross-attention keys/values of every decoder layer."""
        return KVCache(len(self.decoder.layers), cross_attention=True)

    def check_decode_inputs(self, tgt_in_ids: torch.Tensor, memory: torch.Tensor, src_ids: torch.Tensor,
                            cache: KVCache | None = None) -> None:
        config = self.config
        tgt_in_ids = check_token_ids(tgt_in_ids, config.tgt_vocab_size, name="tgt_in_ids")
        src_ids = check_token_ids(src_ids, config.vocab_size, config.max_len, name="src_ids")
        check_vectors(memory, self, config.d_model, "memory", "(batch, src_len, d_model)")
        check_same_batch(("tgt_in_ids", tgt_in_ids), ("memory", memory), ("src_ids", src_ids))
        if memory.size(1) != src_ids.size(1):
            raise CourseValueError(f"memory covers {memory.size(1)} source positions but src_ids has "
                                   f"{src_ids.size(1)}; pass the src_ids that produced memory = model.encode(src_ids)")
        check_cache(cache, len(self.decoder.layers), tgt_in_ids.size(0), cross_attention=True)
        offset = cache.length if cache is not None else 0
        check_context(offset, tgt_in_ids.size(1), config.max_len, "target positions", "generate fewer tokens")

    @checked_by(check_decode_inputs)
    def decode(self, tgt_in_ids: torch.Tensor, memory: torch.Tensor, src_ids: torch.Tensor,
               cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits ``(batch, tgt_len, tgt_vocab_size)``.

        Args:
            tgt_in_ids: target ids shifted right (start with BOS) ``(batch, tgt_len)``. With a ``cache``, only the
                tokens not yet seen (usually one) — their positions continue after the cached ones.
            memory: :meth:`encode` output ``(batch, src_len, d_model)``.
            src_ids: the source ids ``(batch, src_len)``, used to hide source padding in cross-attention.
            cache: from :meth:`new_cache`; filled in place. Target padding is not masked in cached mode (generated
                prefixes contain none).
        """
        offset = cache.length if cache is not None else 0
        tgt_mask = causal_mask(tgt_in_ids.size(1), past=offset, device=tgt_in_ids.device)
        if cache is None and self.config.pad_id is not None:
            tgt_mask = tgt_mask & padding_mask(tgt_in_ids, self.config.pad_id)
        y = self.decoder(self.tgt_embedding(tgt_in_ids, offset), memory, tgt_mask,
                         _padding(src_ids, self.config.pad_id), cache)
        return self.generator(y)

    def check_inputs(self, src_ids: torch.Tensor, tgt_in_ids: torch.Tensor) -> None:
        check_token_ids(src_ids, self.config.vocab_size, self.config.max_len, name="src_ids")
        check_token_ids(tgt_in_ids, self.config.tgt_vocab_size, self.config.max_len, name="tgt_in_ids")
        check_same_batch(("src_ids", src_ids), ("tgt_in_ids", tgt_in_ids))

    @checked_by(check_inputs)
    def forward(self, src_ids: torch.Tensor, tgt_in_ids: torch.Tensor) -> torch.Tensor:
        """``src (batch, src_len)``, ``tgt_in (batch, tgt_len)`` → logits ``(batch, tgt_len, tgt_vocab_size)``."""
        return self.decode(tgt_in_ids, self.encode(src_ids), src_ids)
