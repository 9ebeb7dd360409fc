"""The modern decoder block (lesson 09): RoPE, RMSNorm, SwiGLU, grouped-query attention with a KV cache.

Every swap is one switch of :class:`ModernConfig`, so an ablation can turn each on alone:

=================  ==========================  ====================================
switch             baseline (GPT-2-like)       modern (Llama-like)
=================  ==========================  ====================================
``position``       ``"learned"`` (added)       ``"rope"`` (rotates q and k)
``norm``           ``"layernorm"``             ``"rmsnorm"``
``feed_forward``   ``"relu"`` (d_ff)           ``"swiglu"`` (hidden = round(2·d_ff/3))
``n_kv_heads``     ``n_heads`` (multi-head)    fewer: grouped-query; 1: multi-query
=================  ==========================  ====================================

Both blocks are Pre-norm (``x + sublayer(norm(x))``) and every linear layer is bias-free, so a switch changes one
thing only. Masks follow :mod:`course_utils.masks` (bool, ``True`` = may attend, 4-D). The ablation of lesson 09
runs from the command line::

    python -m course_utils.modern ablation --out benchmarks/ablation_results.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import check_mask, scaled_dot_product_attention
from .config import check_heads, count_parameters
from .errors import CourseTypeError, CourseValueError
from .kv_cache import KVCache, LayerCache
from .masks import causal_mask
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding
from .validation import (check_choice, check_features, check_positive_int, check_probability, check_rank,
                         check_real, check_tensor, check_token_ids, check_vectors, describe)

POSITIONS = ("learned", "sinusoidal", "rope")
NORMS = ("layernorm", "rmsnorm")
FEED_FORWARDS = ("relu", "swiglu")


# ---------------------------------------------------------------------------- RoPE
def rope_frequencies(d_head: int, base: float = 10000.0) -> torch.Tensor:
    """The ``d_head / 2`` rotation speeds ``θ_j = base^(-2j / d_head)``, float32 ``(d_head / 2,)``.

    Pair ``j`` turns by the angle ``m · θ_j`` at position ``m``: pair 0 by one radian per token, the last pair
    slowest — the same geometric ladder as the sinusoidal table of lesson 02.
    """
    check_positive_int("d_head", d_head)
    base = check_real("base", base, low=1.0, low_inclusive=False, hint="; 10000.0 is the usual value")
    if d_head % 2:
        raise CourseValueError(f"RoPE rotates pairs of dimensions, so d_head must be even, got {d_head}; "
                               "pick d_model and n_heads with an even d_model // n_heads")
    return base ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)


def check_positions(positions: object, seq_len: int | None = None) -> torch.Tensor:
    """``positions`` as a 1-D integer tensor (of length ``seq_len`` when given) of non-negative positions."""
    check_tensor("positions", positions, hint=", e.g. torch.arange(seq_len)")
    if positions.dtype.is_floating_point or positions.dtype == torch.bool or positions.dtype.is_complex:
        raise CourseTypeError(f"positions must be integers, got {positions.dtype}; use torch.arange(seq_len)")
    if positions.dim() != 1:
        raise CourseValueError(f"positions must have shape (seq,), got {tuple(positions.shape)}; one position per "
                               "token, shared by the whole batch: torch.arange(seq_len)")
    if seq_len is not None and positions.numel() != seq_len:
        raise CourseValueError(f"positions has {positions.numel()} entries but the sequence has {seq_len} tokens; "
                               "give one position per token (torch.arange(offset, offset + seq_len))")
    if positions.numel() and int(positions.min()) < 0:
        raise CourseValueError(f"positions must be >= 0, got a minimum of {int(positions.min())}")
    return positions


def rotary_embedding(positions: torch.Tensor, d_head: int, base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)`` of the angles ``m · θ_j``, each ``(seq, d_head)`` float32, laid out in halves.

    Dimension ``i`` and dimension ``i + d_head/2`` form pair ``i`` (the "rotate half" layout of GPT-NeoX and
    Llama), so both halves repeat the same ``d_head / 2`` angles.
    """
    positions = check_positions(positions)
    angles = positions.float()[:, None] * rope_frequencies(d_head, base).to(positions.device)  # (seq, d_head/2)
    angles = torch.cat([angles, angles], dim=-1)                                    # (seq, d_head)
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """``(x1, x2) → (-x2, x1)`` on the two halves of the last dimension: a 90° turn of every pair."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def apply_rotary(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor,
                 base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate queries and keys by their positions (RoPE); values are left alone.

    Args:
        q: ``(batch, heads, seq, d_head)``; k: ``(batch, kv_heads, seq, d_head)`` (fewer heads under GQA).
        positions: ``(seq,)`` integer positions of the tokens, e.g. ``torch.arange(offset, offset + seq)``.

    Returns:
        ``(q_rotated, k_rotated)``, same shapes and dtypes: ``x·cos + rotate_half(x)·sin``. Then
        ``q_m · k_n`` depends on ``m − n`` only.
    """
    check_rank(q, 4, "q", "(batch, heads, seq, d_head)")
    check_rank(k, 4, "k", "(batch, kv_heads, seq, d_head)")
    if q.size(-1) != k.size(-1) or q.size(-2) != k.size(-2):
        raise CourseValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} need the same seq and d_head "
                               "(dims 2 and 3): rotate the queries and keys of the same tokens")
    if not (q.is_floating_point() and k.is_floating_point()):
        raise CourseTypeError(f"q and k must be float tensors, got {q.dtype} and {k.dtype}")
    cos, sin = rotary_embedding(check_positions(positions, q.size(-2)).to(q.device), q.size(-1), base)
    cos, sin = cos.to(q.dtype), sin.to(q.dtype)
    return q * cos + rotate_half(q) * sin, k * cos.to(k.dtype) + rotate_half(k) * sin.to(k.dtype)


# ---------------------------------------------------------------------------- RMSNorm
class RMSNorm(nn.Module):
    """``x / sqrt(mean(x²) + eps) · weight`` over the last dimension: LayerNorm without centring and bias.

    ``eps=None`` uses the machine epsilon of the computation (``torch.finfo(float32).eps`` for float32, float16
    and bfloat16 inputs, which are computed in float32), as ``torch.nn.RMSNorm`` does.
    """

    def __init__(self, d_model: int, eps: float | None = None) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.eps = None if eps is None else check_real("eps", eps, low=0.0, hint="; None or 1e-6 are usual")
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., d_model)`` → same shape and dtype."""
        check_features(x, self, self.d_model)
        compute = torch.promote_types(x.dtype, torch.float32)
        eps = torch.finfo(compute).eps if self.eps is None else self.eps
        h = x.to(compute)
        normed = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
        return (normed * self.weight.to(compute)).to(x.dtype)


def make_norm(kind: str, d_model: int) -> nn.Module:
    """``"layernorm"`` → ``nn.LayerNorm(d_model)``; ``"rmsnorm"`` → :class:`RMSNorm`."""
    check_choice("norm", kind, NORMS)
    return nn.LayerNorm(d_model) if kind == "layernorm" else RMSNorm(d_model)


# ---------------------------------------------------------------------------- SwiGLU
def swiglu_hidden_size(d_ff: int) -> int:
    """Hidden size of a bias-free SwiGLU with the parameters of a bias-free ReLU FFN of width ``d_ff``.

    ReLU FFN: two matrices, ``2 · d_model · d_ff``. SwiGLU: three (gate, up, down), ``3 · d_model · h``. Equal
    when ``h = 2 · d_ff / 3``, rounded to the nearest int (``d_ff = 4 · d_model`` gives ``h ≈ 8/3 · d_model``).
    """
    check_positive_int("d_ff", d_ff)
    return max(1, round(2 * d_ff / 3))


class ReLUFeedForward(nn.Module):
    """``W_2 · relu(W_1 x)``, bias-free: the baseline's feed-forward, ``(batch, seq, d_model)`` → same shape."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.dropout(F.relu(self.up(x))))


class SwiGLUFeedForward(nn.Module):
    """``W_down · (silu(W_gate x) ⊙ W_up x)``, bias-free, ``(batch, seq, d_model)`` → same shape.

    The gate decides, per hidden unit and per token, how much of ``W_up x`` passes. ``d_hidden`` defaults to
    :func:`swiglu_hidden_size` of ``4 · d_model``.
    """

    def __init__(self, d_model: int, d_hidden: int | None = None, dropout: float = 0.0) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        d_hidden = swiglu_hidden_size(4 * d_model) if d_hidden is None else check_positive_int("d_hidden", d_hidden)
        self.gate = nn.Linear(d_model, d_hidden, bias=False)
        self.up = nn.Linear(d_model, d_hidden, bias=False)
        self.down = nn.Linear(d_hidden, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.dropout(F.silu(self.gate(x)) * self.up(x)))


# ---------------------------------------------------------------------------- grouped-query attention
def check_kv_heads(n_heads: int, n_kv_heads: int) -> None:
    """``n_kv_heads`` must be a positive int that divides ``n_heads`` (each K/V head serves a whole group)."""
    check_positive_int("n_kv_heads", n_kv_heads)
    if n_heads % n_kv_heads:
        divisors = [h for h in range(1, n_heads + 1) if n_heads % h == 0]
        raise CourseValueError(f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}: every key/value head "
                               f"serves a group of n_heads // n_kv_heads query heads. Pick one of {divisors} "
                               f"({n_heads} = multi-head, 1 = multi-query)")


def repeat_kv(x: torch.Tensor, n_repeats: int) -> torch.Tensor:
    """``(batch, kv_heads, seq, d_head)`` → ``(batch, kv_heads · n_repeats, seq, d_head)``, each head repeated
    ``n_repeats`` times in a row: query head ``h`` reads K/V head ``h // n_repeats`` (as ``enable_gqa=True``)."""
    check_rank(x, 4, "x", "(batch, kv_heads, seq, d_head)")
    check_positive_int("n_repeats", n_repeats)
    return x if n_repeats == 1 else x.repeat_interleave(n_repeats, dim=1)


class GroupedQueryAttention(nn.Module):
    """Causal-ready self-attention with ``n_heads`` query heads sharing ``n_kv_heads`` key/value heads.

    ``n_kv_heads = n_heads`` is multi-head attention, ``1`` multi-query attention, anything between grouped-query.
    ``rope=True`` rotates queries and keys by their positions (:func:`apply_rotary`). The fused path is
    ``F.scaled_dot_product_attention(..., enable_gqa=True)``; the math path repeats K/V heads and calls the
    course's step-by-step attention. Projections are bias-free.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, dropout: float = 0.0,
                 rope: bool = False, rope_base: float = 10000.0, use_fast_path: bool = True) -> None:
        super().__init__()
        check_heads(d_model, n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        check_kv_heads(n_heads, n_kv_heads)
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_head = d_model // n_heads
        if rope:
            rope_frequencies(self.d_head, rope_base)   # refuses an odd d_head now, not at the first forward
        self.rope, self.rope_base = rope, rope_base
        self.dropout = check_probability("dropout", dropout)
        self.use_fast_path = use_fast_path
        self.w_q = nn.Linear(d_model, n_heads * self.d_head, bias=False)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head, bias=False)
        self.w_o = nn.Linear(n_heads * self.d_head, d_model, bias=False)

    def split(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        """``(batch, seq, heads · d_head)`` → ``(batch, heads, seq, d_head)``."""
        batch, seq, _ = x.shape
        return x.view(batch, seq, heads, self.d_head).transpose(1, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: LayerCache | None = None) -> torch.Tensor:
        """Attend from every position of ``x`` to the cached and new positions.

        Args:
            x: ``(batch, seq, d_model)``, the new tokens (all of them, or one step with a cache).
            mask: bool, ``True`` = may attend, 4-D, each dimension 1 or the size of ``(batch, heads, seq,
                cached + seq)``, e.g. ``causal_mask(seq)`` without a cache.
            cache: the layer's :class:`LayerCache`; new keys/values (after RoPE) are appended to it.

        Returns:
            ``(batch, seq, d_model)``.
        """
        check_vectors(x, self, self.d_model)
        past = 0 if cache is None else cache.length
        q = self.split(self.w_q(x), self.n_heads)                  # (batch, heads, seq, d_head)
        k = self.split(self.w_k(x), self.n_kv_heads)               # (batch, kv_heads, seq, d_head)
        v = self.split(self.w_v(x), self.n_kv_heads)
        if self.rope:
            q, k = apply_rotary(q, k, torch.arange(past, past + x.size(1), device=x.device), self.rope_base)
        if cache is not None:
            k, v = cache.append(k, v)
        if mask is not None:
            check_mask(mask, torch.Size((q.size(0), self.n_heads, q.size(2), k.size(2))))
        dropout_p = self.dropout if self.training else 0.0
        if self.use_fast_path:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, enable_gqa=True)
        else:
            groups = self.n_heads // self.n_kv_heads
            out, _ = scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups), mask, dropout_p)
        batch, _, seq, _ = out.shape
        return self.w_o(out.transpose(1, 2).reshape(batch, seq, self.n_heads * self.d_head))


def kv_cache_bytes(batch: int, seq: int, n_layers: int, n_kv_heads: int, d_head: int, bytes_per_value: int = 4) -> int:
    """The KV-cache formula: ``2 (K and V) · batch · seq · layers · kv_heads · d_head · bytes``."""
    for name, value in (("batch", batch), ("seq", seq), ("n_layers", n_layers), ("n_kv_heads", n_kv_heads),
                        ("d_head", d_head), ("bytes_per_value", bytes_per_value)):
        check_positive_int(name, value)
    return 2 * batch * seq * n_layers * n_kv_heads * d_head * bytes_per_value


# ---------------------------------------------------------------------------- the block and the model
@dataclass
class ModernConfig:
    """A decoder-only language model whose every modern swap is one field (see the module docstring).

    ``max_len`` is the number of positions a learned or sinusoidal table holds; RoPE computes its rotations for
    any position, so a RoPE model accepts longer inputs. ``n_kv_heads=None`` means ``n_heads`` (multi-head).
    """

    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    n_kv_heads: int | None = None
    d_ff: int = 256
    n_layers: int = 2
    max_len: int = 64
    dropout: float = 0.0
    position: str = "learned"
    norm: str = "layernorm"
    feed_forward: str = "relu"
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            check_positive_int(name, getattr(self, name))
        check_heads(self.d_model, self.n_heads)
        if self.n_kv_heads is None:
            self.n_kv_heads = self.n_heads
        check_kv_heads(self.n_heads, self.n_kv_heads)
        check_probability("dropout", self.dropout)
        check_choice("position", self.position, POSITIONS)
        check_choice("norm", self.norm, NORMS)
        check_choice("feed_forward", self.feed_forward, FEED_FORWARDS)
        if self.position == "rope":
            rope_frequencies(self.d_model // self.n_heads, self.rope_base)

    @classmethod
    def modern(cls, vocab_size: int, **overrides) -> "ModernConfig":
        """All four swaps on: RoPE, RMSNorm, SwiGLU, and grouped-query attention with half as many K/V heads."""
        n_heads = overrides.get("n_heads", cls.n_heads)
        settings = {"position": "rope", "norm": "rmsnorm", "feed_forward": "swiglu",
                    "n_kv_heads": max(1, n_heads // 2), **overrides}
        return cls(vocab_size, **settings)


class ModernBlock(nn.Module):
    """Pre-norm decoder block: ``x + attn(norm(x))`` then ``x + ffn(norm(x))``; norm, positions (RoPE or
    none here), K/V heads and feed-forward chosen by the config."""

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        self.attn_norm = make_norm(config.norm, config.d_model)
        self.attn = GroupedQueryAttention(config.d_model, config.n_heads, config.n_kv_heads, config.dropout,
                                          rope=config.position == "rope", rope_base=config.rope_base)
        self.ff_norm = make_norm(config.norm, config.d_model)
        if config.feed_forward == "swiglu":
            self.feed_forward = SwiGLUFeedForward(config.d_model, swiglu_hidden_size(config.d_ff), config.dropout)
        else:
            self.feed_forward = ReLUFeedForward(config.d_model, config.d_ff, config.dropout)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: LayerCache | None = None) -> torch.Tensor:
        """``x (batch, seq, d_model)`` → same shape; ``mask`` as in :meth:`GroupedQueryAttention.forward`."""
        x = x + self.dropout(self.attn(self.attn_norm(x), mask, cache))
        return x + self.dropout(self.feed_forward(self.ff_norm(x)))


class ModernDecoderLM(nn.Module):
    """Token embedding (+ learned or sinusoidal positions) → ``n_layers`` :class:`ModernBlock` → final norm →
    logits over the vocabulary (a separate, untied output layer). Causal: position ``t`` sees tokens ``0..t`` only.

    Token vectors start as ``N(0, 1)`` (``nn.Embedding``'s default), learned positions as ``N(0, 0.02²)``
    (:class:`~course_utils.positional.LearnedPositionalEncoding`'s, as in BERT and GPT-2)."""

    def __init__(self, config: ModernConfig) -> None:
        super().__init__()
        if not isinstance(config, ModernConfig):
            raise CourseTypeError(f"config must be a ModernConfig, got {describe(config)}")
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.positional: nn.Module | None = None
        if config.position == "learned":
            self.positional = LearnedPositionalEncoding(config.d_model, config.max_len)
        elif config.position == "sinusoidal":
            self.positional = SinusoidalPositionalEncoding(config.d_model, config.max_len)
        self.blocks = nn.ModuleList(ModernBlock(config) for _ in range(config.n_layers))
        self.final_norm = make_norm(config.norm, config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)

    def new_cache(self) -> KVCache:
        return KVCache(self.config.n_layers)

    def forward(self, ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """``ids (batch, seq)`` → logits ``(batch, seq, vocab_size)``; with a ``cache`` (from :meth:`new_cache`)
        ``ids`` are the next tokens after the cached ones."""
        ids = check_token_ids(ids, self.config.vocab_size)
        if cache is not None and not isinstance(cache, KVCache):
            raise CourseTypeError(f"cache must be a KVCache (model.new_cache()), got {describe(cache)}")
        past = 0 if cache is None else cache.length
        x = self.token_embedding(ids)                               # (batch, seq, d_model)
        if self.positional is not None:
            x = self.positional(x, offset=past)
        mask = causal_mask(ids.size(1), past=past, device=ids.device)
        for i, block in enumerate(self.blocks):
            x = block(x, mask, None if cache is None else cache.self_attention[i])
        return self.lm_head(self.final_norm(x))


def lm_loss(model: nn.Module, windows: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) of ``windows (batch, seq + 1)``: read ``[:, :-1]``, predict ``[:, 1:]``."""
    logits = model(windows[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), windows[:, 1:].reshape(-1))


@torch.no_grad()
def held_out_loss(model: nn.Module, windows: torch.Tensor, batch_size: int = 256) -> float:
    """Mean next-token loss over every window, in nats per token (``exp`` of it is the perplexity)."""
    model.eval()
    total, count = 0.0, 0
    for start in range(0, windows.size(0), batch_size):
        chunk = windows[start:start + batch_size]
        total += float(lm_loss(model, chunk)) * chunk[:, 1:].numel()
        count += chunk[:, 1:].numel()
    return total / count


@torch.no_grad()
def loss_per_position(model: nn.Module, windows: torch.Tensor, batch_size: int = 128) -> torch.Tensor:
    """Mean next-token loss at each position of ``windows (n, seq + 1)``, float ``(seq,)`` in nats."""
    model.eval()
    totals = torch.zeros(windows.size(1) - 1)
    for start in range(0, windows.size(0), batch_size):
        chunk = windows[start:start + batch_size]
        logits = model(chunk[:, :-1])
        losses = F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:], reduction="none")   # (batch, seq)
        totals += losses.sum(dim=0)
    return totals / windows.size(0)


# ---------------------------------------------------------------------------- the lesson's data
@dataclass
class LMData:
    """Python-documentation prose as BPE token windows: ``train``/``held_out`` ``(n, seq + 1)`` long tensors."""

    tokenizer: object
    train_stream: torch.Tensor
    held_out_stream: torch.Tensor

    def windows(self, split: str, seq_len: int) -> torch.Tensor:
        """Non-overlapping ``(n, seq_len + 1)`` windows of the ``"train"`` or ``"held_out"`` token stream."""
        check_choice("split", split, ("train", "held_out"))
        check_positive_int("seq_len", seq_len)
        stream = self.train_stream if split == "train" else self.held_out_stream
        n = (stream.numel() - 1) // seq_len
        return torch.stack([stream[i * seq_len: i * seq_len + seq_len + 1] for i in range(n)])


def load_lm_data(vocab_size: int = 512, held_out_fraction: float = 0.1, seed: int = 0) -> LMData:
    """The pydoc corpus, split by sentence, BPE trained on the training part; sentences joined with [EOS]."""
    from .data.pydoc_corpus import load_pydoc_corpus
    from .tokenization import EOS_ID, BPETokenizer

    train, held_out = load_pydoc_corpus().split(held_out_fraction, seed=seed)
    tokenizer = BPETokenizer.train(train.sentences, vocab_size=vocab_size)

    def stream(sentences) -> torch.Tensor:
        ids: list[int] = []
        for sentence in sentences:
            ids.extend(tokenizer.encode(sentence))
            ids.append(EOS_ID)
        return torch.tensor(ids, dtype=torch.long)

    return LMData(tokenizer, stream(train.sentences), stream(held_out.sentences))


def train_lm(config: ModernConfig, train_windows: torch.Tensor, steps: int, batch_size: int = 32,
             lr: float = 3e-3, warmup_steps: int = 20, seed: int = 0) -> tuple[ModernDecoderLM, list[float]]:
    """Train a fresh :class:`ModernDecoderLM` for ``steps`` AdamW steps on batches drawn (seeded) from
    ``train_windows``; the same seed gives every config the same initial RNG state and the same batches."""
    from .runtime import seed_everything
    from .training import make_optimizer, make_scheduler, train_one_epoch

    seed_everything(seed)
    model = ModernDecoderLM(config)
    generator = torch.Generator().manual_seed(seed)
    order = torch.cat([torch.randperm(train_windows.size(0), generator=generator)
                       for _ in range(math.ceil(steps * batch_size / train_windows.size(0)))])
    batches = [train_windows[order[i * batch_size:(i + 1) * batch_size]] for i in range(steps)]
    optimizer = make_optimizer(model, lr=lr)
    losses = train_one_epoch(model, batches, lm_loss, optimizer, make_scheduler(optimizer, warmup_steps, steps))
    return model.eval(), losses


# ---------------------------------------------------------------------------- the ablation (on lesson 08's task)
VARIANTS = {
    "baseline": {},
    "+ RoPE": {"position": "rope"},
    "+ RMSNorm": {"norm": "rmsnorm"},
    "+ SwiGLU": {"feed_forward": "swiglu"},
    "+ GQA (2 K/V heads)": {"n_kv_heads": 2},
    "all modern": {"position": "rope", "norm": "rmsnorm", "feed_forward": "swiglu", "n_kv_heads": 2},
}


@dataclass
class AblationConfig:
    """Everything that decides the ablation's numbers; its hash is stored with the results.

    The task is lesson 08's (:func:`course_utils.language_model.pydoc_lm_data`): ``[BOS] sentence [EOS]``
    sequences of at most ``max_len`` inputs, trained with its ``train_lm`` and scored on its validation split.
    """

    task: str = "lesson 08: language_model.pydoc_lm_data, train_lm, evaluate_lm on the validation split"
    vocab_size: int = 512
    max_len: int = 64
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_layers: int = 2
    steps: int = 400
    batch_size: int = 32
    lr: float = 3e-3
    warmup_steps: int = 20
    seeds: tuple[int, ...] = (0, 1, 2)
    variants: dict = field(default_factory=lambda: dict(VARIANTS))

    def model_config(self, variant: str, vocab_size: int) -> ModernConfig:
        return ModernConfig(vocab_size, d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff,
                            n_layers=self.n_layers, max_len=self.max_len, **self.variants[variant])

    def hash(self) -> str:
        """First 12 hex digits of the SHA-256 of the config as sorted JSON."""
        text = json.dumps(asdict(self), sort_keys=True, default=list)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def train_on_documents(config: ModernConfig, data, steps: int, batch_size: int = 32, lr: float = 3e-3,
                       warmup_steps: int = 20, seed: int = 0) -> tuple[ModernDecoderLM, float]:
    """A fresh :class:`ModernDecoderLM` trained on lesson 08's task; returns it and its validation loss (nats).

    ``data`` is :func:`course_utils.language_model.pydoc_lm_data`'s; the same seed gives every config the same
    initial RNG state and the same batches.
    """
    from .language_model import evaluate_lm, lm_batches, train_lm as train_on_sequences
    from .runtime import seed_everything

    seed_everything(seed)
    model = ModernDecoderLM(config)
    train_on_sequences(model, data.train, steps, batch_size, lr, warmup_steps, seed=seed)
    return model.eval(), evaluate_lm(model, lm_batches(data.validation, 256, shuffle=False))["loss"]


def mean_and_standard_error(values: list[float]) -> tuple[float, float]:
    """Mean and standard error ``s / √n`` (``s`` with ``n − 1``); the error of a single value is 0."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)


def run_variant(setup: AblationConfig, variant: str, seed: int, data) -> dict:
    """Train one variant with one seed; return its validation loss, parameter count and seconds."""
    start = time.perf_counter()
    model, loss = train_on_documents(setup.model_config(variant, data.tokenizer.vocab_size), data, setup.steps,
                                     setup.batch_size, setup.lr, setup.warmup_steps, seed)
    return {"variant": variant, "seed": seed, "held_out_loss": loss, "parameters": count_parameters(model),
            "train_seconds": time.perf_counter() - start}


def summarise(runs: list[dict]) -> list[dict]:
    """One row per variant: mean ± standard error of the held-out loss over seeds, and the difference to the
    baseline with its standard error (seeds paired: the same seed gives the same batches)."""
    by_variant: dict[str, dict[int, float]] = {}
    for run in runs:
        by_variant.setdefault(run["variant"], {})[run["seed"]] = run["held_out_loss"]
    baseline = by_variant["baseline"]
    rows = []
    for variant, losses in by_variant.items():
        mean, error = mean_and_standard_error(list(losses.values()))
        diff, diff_error = mean_and_standard_error([losses[s] - baseline[s] for s in losses if s in baseline])
        parameters = next(r["parameters"] for r in runs if r["variant"] == variant)
        rows.append({"variant": variant, "mean": mean, "standard_error": error, "vs_baseline": diff,
                     "vs_baseline_standard_error": diff_error, "seeds": len(losses), "parameters": parameters})
    return rows


def verdict(row: dict, sigmas: float = 2.0) -> str:
    """``"better"`` / ``"worse"`` when the paired difference to the baseline is beyond ``sigmas`` standard errors
    (and the errors are not zero), else ``"within noise"``."""
    diff, error = row["vs_baseline"], row["vs_baseline_standard_error"]
    if row["variant"] == "baseline" or error == 0.0 or abs(diff) <= sigmas * error:
        return "within noise"
    return "better" if diff < 0 else "worse"


def run_ablation(setup: AblationConfig | None = None, log=print) -> dict:
    """Every variant × every seed; returns ``{"config", "config_hash", "runs", "summary"}``."""
    from .language_model import pydoc_lm_data

    setup = AblationConfig() if setup is None else setup
    data = pydoc_lm_data(setup.vocab_size, setup.max_len)
    runs = []
    for seed in setup.seeds:
        for variant in setup.variants:
            runs.append(run_variant(setup, variant, seed, data))
            log(f"seed {seed} {variant:22} validation loss {runs[-1]['held_out_loss']:.4f} "
                f"({runs[-1]['train_seconds']:.0f} s)")
    return {"config": asdict(setup), "config_hash": setup.hash(), "torch": torch.__version__.split("+")[0],
            "runs": runs, "summary": summarise(runs)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_utils.modern",
                                     description="Lesson 09's equal-budget ablation of the modern block on lesson 08's task.")
    commands = parser.add_subparsers(dest="command", required=True)
    ablation = commands.add_parser("ablation", help="train every variant with every seed, write a JSON file")
    ablation.add_argument("--out", default="benchmarks/ablation_results.json")
    ablation.add_argument("--steps", type=int, default=None, help="override the number of steps (a quick run)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    setup = AblationConfig() if args.steps is None else replace(AblationConfig(), steps=args.steps)
    start = time.perf_counter()
    results = run_ablation(setup)
    results["total_seconds"] = time.perf_counter() - start
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1)
        handle.write("\n")
    for row in results["summary"]:
        print(f"{row['variant']:22} {row['mean']:.4f} ± {row['standard_error']:.4f}  "
              f"Δ {row['vs_baseline']:+.4f} ± {row['vs_baseline_standard_error']:.4f}  {verdict(row)}")
    print(f"wrote {args.out} (config hash {results['config_hash']}, {results['total_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
