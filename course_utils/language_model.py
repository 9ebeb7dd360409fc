"""A decoder-only language model (GPT): the encoder layer with a causal mask, trained to predict the next token.

Built in lesson 08. The pieces are the course's own: :class:`~course_utils.models.InputEmbedding`, the
:class:`~course_utils.layers.ResidualSublayer` and :class:`~course_utils.layers.PositionwiseFeedForward` of
lesson 04, :class:`~course_utils.kv_cache.CachedMultiHeadAttention` (lesson 07), and the
:func:`~course_utils.masks.causal_mask` convention (True = may attend).

Lesson 09's modern block is the same block with switches (RoPE, RMSNorm, SwiGLU, grouped-query attention): see
:mod:`course_utils.modern`. The task (``[BOS] tokens… [EOS]``, read ``ids[:, :-1]``, scored on ``ids[:, 1:]``)
lives in :mod:`course_utils.losses` and :mod:`course_utils.data.lm_data`; sampling in :mod:`course_utils.decoding`;
training in :mod:`course_utils.training`.
"""
from __future__ import annotations

__all__ = ["DecoderOnlyBlock", "DecoderOnlyLM", "NeuralBigramLM", "ladder_rungs"]

from collections.abc import Callable
from dataclasses import replace

import torch
import torch.nn as nn

from .config import TransformerConfig
from .kv_cache import KVCache, LayerCache
from .layers import ResidualSublayer, make_feed_forward
from .masks import causal_mask, padding_mask
from .models import check_cache, check_config, init_weights, make_final_norm, make_input_embedding
from .modern import make_attention
from .validation import check_bool, check_context, check_positive_int, check_token_ids, check_vectors, checked_by


class DecoderOnlyBlock(nn.Module):
    """Masked self-attention then feed-forward — :class:`~course_utils.layers.EncoderLayer` with a causal mask.

    ``with_residual=False`` drops the residual connections and their norms (``x = ff(attn(x))``), and
    ``with_feed_forward=False`` drops the feed-forward sublayer: the lower rungs of lesson 08's ladder.
    With both ``True`` it has the same parameters (same names) as ``EncoderLayer`` and computes the same function
    under the same mask. The keyword-only switches are lesson 09's
    (see :class:`~course_utils.config.TransformerConfig`); ``norm_eps`` is the ε of its norms (``None``: default).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, activation: str = "relu",
                 norm: str = "pre", bias: bool = True, *, normalization: str = "layernorm",
                 n_kv_heads: int | None = None, rope_base: float | None = None, with_residual: bool = True,
                 with_feed_forward: bool = True, norm_eps: float | None = None) -> None:
        super().__init__()
        self.with_residual = check_bool("with_residual", with_residual)
        check_bool("with_feed_forward", with_feed_forward)
        self.self_attn = make_attention(d_model, n_heads, dropout, bias, n_kv_heads, rope_base)
        self.feed_forward = make_feed_forward(d_model, d_ff, dropout, activation, bias) if with_feed_forward else None
        if with_residual:
            self.attn_block = ResidualSublayer(d_model, dropout, norm, bias, normalization, norm_eps)
            self.ff_block = (ResidualSublayer(d_model, dropout, norm, bias, normalization, norm_eps)
                             if with_feed_forward else None)
        self.dropout = nn.Dropout(dropout)

    def check_inputs(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                     cache: LayerCache | None = None) -> None:
        check_vectors(x, self, self.self_attn.d_model)
        self.self_attn.check_inputs(x, x, x, mask, cache=cache)

    @checked_by(check_inputs)
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: LayerCache | None = None) -> torch.Tensor:
        """``x (batch, seq, d_model)`` → same shape; ``mask`` 4-D bool (causal, maybe AND padding);
        ``cache``: this block's entry of a :class:`~course_utils.kv_cache.KVCache` (new keys/values are appended)."""
        def attend(h: torch.Tensor) -> torch.Tensor:
            return self.self_attn(h, h, h, mask, cache=cache)[0]

        if not self.with_residual:
            x = self.dropout(attend(x))
            return x if self.feed_forward is None else self.dropout(self.feed_forward(x))
        x = self.attn_block(x, attend)
        return x if self.feed_forward is None else self.ff_block(x, self.feed_forward)


class DecoderOnlyLM(nn.Module):
    """GPT: token + position embedding → ``n_layers`` causal blocks → (final norm for Pre-LN) → logits.

    Args:
        config: sizes, ``norm`` ("pre" is the GPT-2 placement, "post" the original paper's), ``positional``
            ("sinusoidal", "learned" or lesson 09's "rope"), ``pad_id`` (``None``: no padding token, nothing is
            masked); ``max_len`` is the longest context. Lesson 09's switches (``normalization``,
            ``activation="swiglu"``, ``n_kv_heads``, ``bias``) reach every block, and so do the published families'
            (``activation="gelu_tanh"``, and :class:`~course_utils.interop.PublishedConfig`'s ``scale_embeddings``,
            ``norm_eps``, ``final_norm``).
        tie_weights: the output layer reuses the token-embedding matrix (saves ``vocab_size × d_model`` weights).
        with_residual, with_feed_forward: passed to every :class:`DecoderOnlyBlock` (the ladder's lower rungs).
    """

    def __init__(self, config: TransformerConfig, tie_weights: bool = True, with_residual: bool = True,
                 with_feed_forward: bool = True) -> None:
        super().__init__()
        self.config = check_config(config)
        check_bool("tie_weights", tie_weights)
        check_bool("with_residual", with_residual)
        check_bool("with_feed_forward", with_feed_forward)
        self.embedding = make_input_embedding(config)
        self.blocks = nn.ModuleList(
            DecoderOnlyBlock(**config.layer_options(), with_residual=with_residual,
                             with_feed_forward=with_feed_forward) for _ in range(config.n_layers))
        final_norm = config.norm == "pre" and with_residual and config.final_norm
        self.norm = make_final_norm(config) if final_norm else nn.Identity()
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        init_weights(self)
        if tie_weights:
            self.lm_head.weight = self.embedding.tokens.weight

    def new_cache(self) -> KVCache:
        """An empty :class:`~course_utils.kv_cache.KVCache` for one batch of prompts."""
        return KVCache(len(self.blocks))

    def check_inputs(self, ids: torch.Tensor, cache: KVCache | None = None) -> None:
        config = self.config
        check_token_ids(ids, config.vocab_size, name="ids")
        check_cache(cache, len(self.blocks), ids.size(0))
        offset = cache.length if cache is not None else 0
        check_context(offset, ids.size(1), config.max_len, fix=f"keep only the last {config.max_len} tokens")

    @checked_by(check_inputs)
    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits.

        Args:
            ids: ``(batch, seq)`` token ids. With a ``cache``: only the tokens not yet seen (their positions
                continue after the cached ones); cached calls do not mask padding, so prompts fed through a
                cache must not contain ``pad_id``.
            cache: from :meth:`new_cache`, filled in place.

        Returns:
            ``(batch, seq, vocab_size)``: row ``t`` scores the token that follows ``ids[:, t]``.
        """
        offset = cache.length if cache is not None else 0
        mask = causal_mask(ids.size(1), past=offset, device=ids.device)  # (1, 1, new, offset + new)
        if cache is None and self.config.pad_id is not None:
            mask = mask & padding_mask(ids, self.config.pad_id)
        x = self.embedding(ids, offset)
        for i, block in enumerate(self.blocks):
            x = block(x, mask, cache.self_attention[i] if cache is not None else None)
        return self.lm_head(self.norm(x))


class NeuralBigramLM(nn.Module):
    """The ladder's first rung: a table of next-token logits per current token (``nn.Embedding(V, V)``).

    Sees one token of context, like a bigram count model, but learns its table by gradient descent.
    """

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.logits = nn.Embedding(check_positive_int("vocab_size", vocab_size), vocab_size)
        nn.init.zeros_(self.logits.weight)

    def check_ids(self, ids: torch.Tensor) -> None:
        check_token_ids(ids, self.logits.num_embeddings, name="ids")

    @checked_by(check_ids)
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` → ``(batch, seq, vocab_size)``."""
        return self.logits(ids.long())


def ladder_rungs(config: TransformerConfig, more_layers: int = 2) -> dict[str, Callable[[], nn.Module]]:
    """Lesson 08's ladder: a builder of a fresh model for each rung, every rung adding one piece to the one before.

    ``bigram`` (:class:`NeuralBigramLM`) → ``+ one attention head`` (``config`` with 1 head, one block of attention
    alone: no feed-forward, no residual, no norm) → ``+ multi-head (h)`` (``config.n_heads`` heads) →
    ``+ feed-forward`` → ``+ residual & LayerNorm`` (the full block; "RMSNorm" for ``normalization="rmsnorm"``) →
    ``+ more layers (n)`` (``more_layers`` full blocks). ``config.n_layers`` is not used: the middle rungs have one
    block. The names are the keys, in order.
    """
    check_config(config)
    check_positive_int("more_layers", more_layers)
    one_block = replace(config, n_layers=1)
    one_head = replace(one_block, n_heads=1, n_kv_heads=None)
    norm = "RMSNorm" if config.normalization == "rmsnorm" else "LayerNorm"
    return {
        "bigram": lambda: NeuralBigramLM(config.vocab_size),
        "+ one attention head": lambda: DecoderOnlyLM(one_head, with_residual=False, with_feed_forward=False),
        f"+ multi-head ({config.n_heads})": lambda: DecoderOnlyLM(one_block, with_residual=False,
                                                                  with_feed_forward=False),
        "+ feed-forward": lambda: DecoderOnlyLM(one_block, with_residual=False),
        f"+ residual & {norm}": lambda: DecoderOnlyLM(one_block),
        f"+ more layers ({more_layers})": lambda: DecoderOnlyLM(replace(config, n_layers=more_layers)),
    }
