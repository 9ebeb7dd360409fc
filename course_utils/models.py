"""Complete models built from the layers: encoder and decoder stacks, a classifier, a masked LM, a translator."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import TransformerConfig
from .embedding import TokenEmbedding
from .layers import DecoderLayer, EncoderLayer
from .masks import padding_mask
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding

POOLINGS = ("cls", "mean")
DecoderCache = list  # one {"self": {...}, "cross": {...}} dict per decoder layer


def init_weights(module: nn.Module) -> None:
    """Xavier-uniform for every matrix (as ``nn.Transformer`` does); vectors keep PyTorch's defaults."""
    for p in module.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)


class InputEmbedding(nn.Module):
    """Token ids → ``token embedding × √d_model + positional encoding``, then dropout."""

    def __init__(self, vocab_size: int, d_model: int, max_len: int, positional: str = "sinusoidal",
                 dropout: float = 0.1, pad_id: int | None = None) -> None:
        super().__init__()
        self.tokens = TokenEmbedding(vocab_size, d_model, pad_id)
        encoding = SinusoidalPositionalEncoding if positional == "sinusoidal" else LearnedPositionalEncoding
        self.positions = encoding(d_model, max_len)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``(batch, seq)`` long → ``(batch, seq, d_model)``; ``offset`` = position of the first token."""
        return self.dropout(self.positions(self.tokens(ids), offset))


class Encoder(nn.Module):
    """``n_layers`` encoder layers and a final LayerNorm, on vectors ``(batch, seq, d_model)``."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(config.d_model, config.n_heads, config.d_ff, config.dropout, config.activation, config.norm)
            for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``(batch, seq, d_model)`` → same shape; ``mask`` bool, True = may attend."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(nn.Module):
    """``n_layers`` decoder layers and a final LayerNorm, on vectors ``(batch, tgt_len, d_model)``."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(config.d_model, config.n_heads, config.d_ff, config.dropout, config.activation, config.norm)
            for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)

    def forward(self, y: torch.Tensor, memory: torch.Tensor, tgt_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None, cache: DecoderCache | None = None) -> torch.Tensor:
        """``y (batch, tgt_len, d_model)``, ``memory (batch, src_len, d_model)`` → ``(batch, tgt_len, d_model)``."""
        for i, layer in enumerate(self.layers):
            y = layer(y, memory, tgt_mask, memory_mask, cache[i] if cache is not None else None)
        return self.norm(y)


class TextEncoder(nn.Module):
    """Token ids → contextual vectors: :class:`InputEmbedding` + :class:`Encoder`, padding masked by ``pad_id``."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.embedding = InputEmbedding(config.vocab_size, config.d_model, config.max_len, config.positional,
                                        config.dropout, config.pad_id)
        self.encoder = Encoder(config)

    def forward(self, ids: torch.Tensor, mask_padding: bool = True) -> torch.Tensor:
        """``(batch, seq)`` long → ``(batch, seq, d_model)``. ``mask_padding=False`` lets tokens attend to padding."""
        mask = padding_mask(ids, self.config.pad_id) if mask_padding else None
        return self.encoder(self.embedding(ids), mask)


class TransformerClassifier(nn.Module):
    """Encoder + pooling + linear head → class logits.

    ``pooling="cls"`` reads the vector at position 0, which must hold a real ``[CLS]`` token added by the
    tokenizer; ``"mean"`` averages the vectors of the real (non-padding) tokens.
    """

    def __init__(self, config: TransformerConfig, n_classes: int, pooling: str = "cls",
                 mask_padding: bool = True) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if n_classes < 2:
            raise ValueError(f"a classifier needs n_classes >= 2, got {n_classes}")
        self.pooling = pooling
        self.mask_padding = mask_padding
        self.text_encoder = TextEncoder(config)
        self.head = nn.Linear(config.d_model, n_classes)
        init_weights(self)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` long → logits ``(batch, n_classes)``."""
        hidden = self.text_encoder(ids, self.mask_padding)
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            pad_id = self.text_encoder.config.pad_id
            keep = ids != pad_id if self.mask_padding else torch.ones_like(ids, dtype=torch.bool)
            weights = keep.to(hidden.dtype)
            pooled = (hidden * weights[..., None]).sum(1) / weights.sum(1, keepdim=True).clamp(min=1.0)
        return self.head(pooled)


class MaskedLanguageModel(nn.Module):
    """Encoder + MLM head (dense → GELU → LayerNorm → vocabulary logits), as in BERT.

    With ``tie_weights=True`` the output projection reuses the token-embedding matrix (its transpose), which
    saves ``vocab_size × d_model`` parameters.
    """

    def __init__(self, config: TransformerConfig, tie_weights: bool = True) -> None:
        super().__init__()
        self.text_encoder = TextEncoder(config)
        self.transform = nn.Linear(config.d_model, config.d_model)
        self.transform_norm = nn.LayerNorm(config.d_model)
        self.output = nn.Linear(config.d_model, config.vocab_size)
        init_weights(self)
        if tie_weights:
            self.output.weight = self.text_encoder.embedding.tokens.weight

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """The MLM head alone: vectors ``(..., d_model)`` → vocabulary logits ``(..., vocab_size)``."""
        return self.output(self.transform_norm(F.gelu(self.transform(hidden))))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` long → logits ``(batch, seq, vocab_size)``."""
        return self.head(self.text_encoder(ids))


class Seq2SeqTransformer(nn.Module):
    """The encoder–decoder of "Attention Is All You Need": source ids + shifted target ids → next-token logits."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.src_embedding = InputEmbedding(config.vocab_size, config.d_model, config.max_len, config.positional,
                                            config.dropout, config.pad_id)
        self.tgt_embedding = InputEmbedding(config.tgt_vocab_size, config.d_model, config.max_len,
                                            config.positional, config.dropout, config.pad_id)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)
        init_weights(self)

    def encode(self, src_ids: torch.Tensor) -> torch.Tensor:
        """``(batch, src_len)`` → memory ``(batch, src_len, d_model)``; source padding is masked."""
        return self.encoder(self.src_embedding(src_ids), padding_mask(src_ids, self.config.pad_id))

    def new_cache(self) -> DecoderCache:
        """An empty KV cache for :meth:`decode` (one dict per decoder layer)."""
        return [{"self": {}, "cross": {}} for _ in self.decoder.layers]

    def decode(self, tgt_in_ids: torch.Tensor, memory: torch.Tensor, src_ids: torch.Tensor,
               cache: DecoderCache | None = None) -> torch.Tensor:
        """Next-token logits ``(batch, tgt_len, tgt_vocab_size)``.

        Args:
            tgt_in_ids: target ids shifted right (start with BOS) ``(batch, tgt_len)``. With a ``cache``, only the
                tokens not yet seen (usually one) — their positions continue after the cached ones.
            memory: :meth:`encode` output ``(batch, src_len, d_model)``.
            src_ids: the source ids ``(batch, src_len)``, used to hide source padding in cross-attention.
            cache: from :meth:`new_cache`; filled in place. Target padding is not masked in cached mode (generated
                prefixes contain none).
        """
        pad_id = self.config.pad_id
        offset = cache[0]["self"]["k"].size(2) if cache is not None and cache[0]["self"] else 0
        new_len = tgt_in_ids.size(1)
        # query i (absolute position offset + i) may see keys 0 .. offset + i
        tgt_mask = torch.ones(new_len, offset + new_len, dtype=torch.bool, device=tgt_in_ids.device)
        tgt_mask = tgt_mask.tril(diagonal=offset)[None, None]
        if cache is None:
            tgt_mask = tgt_mask & padding_mask(tgt_in_ids, pad_id)
        y = self.decoder(self.tgt_embedding(tgt_in_ids, offset), memory, tgt_mask,
                         padding_mask(src_ids, pad_id), cache)
        return self.generator(y)

    def forward(self, src_ids: torch.Tensor, tgt_in_ids: torch.Tensor) -> torch.Tensor:
        """``src (batch, src_len)``, ``tgt_in (batch, tgt_len)`` → logits ``(batch, tgt_len, tgt_vocab_size)``."""
        return self.decode(tgt_in_ids, self.encode(src_ids), src_ids)
