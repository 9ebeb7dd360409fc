"""A decoder-only language model (GPT): the encoder layer with a causal mask, trained to predict the next token.

Built in lesson 08. The pieces are the course's own: :class:`~course_utils.models.InputEmbedding`, the
:class:`~course_utils.layers.ResidualSublayer` and :class:`~course_utils.layers.PositionwiseFeedForward` of
lesson 04, :class:`~course_utils.attention.MultiHeadAttention` with its KV cache (lesson 07), and the
:func:`~course_utils.masks.causal_mask` convention (True = may attend).

The task: every sequence is ``[BOS] tokens… [EOS]`` (padded on the right with ``pad_id``); the model reads
``ids[:, :-1]`` and is scored on ``ids[:, 1:]`` (:func:`shift_for_lm`, :func:`lm_loss`). Count models
(:mod:`course_utils.ngram`) are scored on exactly the same positions (:func:`scored_positions`).
"""
from __future__ import annotations

__all__ = ["DecoderOnlyBlock", "DecoderOnlyLM", "LMData", "LMHistory", "NeuralBigramLM",
           "apply_repetition_penalty", "apply_temperature", "distinct_ngram_ratio", "encode_documents",
           "evaluate_lm", "generate", "lm_batches", "lm_loss", "next_token_logits", "pydoc_lm_data",
           "sample_perplexity", "shift_for_lm", "split_documents", "top_k_filter", "top_p_filter", "train_lm"]

import math
from dataclasses import dataclass
import random
from collections.abc import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import MultiHeadAttention
from .config import TransformerConfig
from .errors import CourseTypeError, CourseValueError
from .layers import PositionwiseFeedForward, ResidualSublayer
from .kv_cache import KVCache, LayerCache
from .masks import causal_mask, padding_mask
from .models import InputEmbedding, check_config, init_weights
from .tokenization import BOS_ID, EOS_ID, PAD_ID
from .validation import (check_bool, check_int, check_module, check_positive_int, check_real, check_token_ids,
                         describe)


class DecoderOnlyBlock(nn.Module):
    """Masked self-attention then feed-forward — :class:`~course_utils.layers.EncoderLayer` with a causal mask.

    ``residual=False`` drops the residual connections and their LayerNorms (``x = ff(attn(x))``), and
    ``feed_forward=False`` drops the feed-forward sublayer: the lower rungs of lesson 08's ladder.
    With both ``True`` it has the same parameters (same names) as ``EncoderLayer`` and computes the same function
    under the same mask.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, activation: str = "relu",
                 norm: str = "pre", residual: bool = True, feed_forward: bool = True) -> None:
        super().__init__()
        self.residual = check_bool("residual", residual)
        check_bool("feed_forward", feed_forward)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout, activation) if feed_forward else None
        if residual:
            self.attn_block = ResidualSublayer(d_model, dropout, norm)
            self.ff_block = ResidualSublayer(d_model, dropout, norm) if feed_forward else None
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                cache: LayerCache | None = None) -> torch.Tensor:
        """``x (batch, seq, d_model)`` → same shape; ``mask`` 4-D bool (causal, maybe AND padding);
        ``cache``: this block's entry of a :class:`~course_utils.kv_cache.KVCache` (new keys/values are appended)."""
        def attend(h: torch.Tensor) -> torch.Tensor:
            return self.self_attn(h, h, h, mask, cache=cache)[0]

        if not self.residual:
            x = self.dropout(attend(x))
            return x if self.feed_forward is None else self.dropout(self.feed_forward(x))
        x = self.attn_block(x, attend)
        return x if self.feed_forward is None else self.ff_block(x, self.feed_forward)


class DecoderOnlyLM(nn.Module):
    """GPT: token + position embedding → ``n_layers`` causal blocks → (final LayerNorm for Pre-LN) → logits.

    Args:
        config: sizes, ``norm`` ("pre" is the GPT-2 placement, "post" the original paper's), ``positional``
            ("sinusoidal" or "learned"), ``pad_id``; ``max_len`` is the longest context.
        tie_weights: the output layer reuses the token-embedding matrix (saves ``vocab_size × d_model`` weights).
        residual, feed_forward: passed to every :class:`DecoderOnlyBlock` (the ladder's lower rungs).

    Subclasses may override :meth:`make_block` to swap the block (lesson 09).
    """

    def __init__(self, config: TransformerConfig, tie_weights: bool = True, residual: bool = True,
                 feed_forward: bool = True) -> None:
        super().__init__()
        self.config = check_config(config)
        check_bool("tie_weights", tie_weights)
        self.residual, self.feed_forward = check_bool("residual", residual), check_bool("feed_forward", feed_forward)
        self.embedding = InputEmbedding(config.vocab_size, config.d_model, config.max_len, config.positional,
                                        config.dropout, config.pad_id)
        self.blocks = nn.ModuleList(self.make_block(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model) if config.norm == "pre" and residual else nn.Identity()
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        init_weights(self)
        if tie_weights:
            self.lm_head.weight = self.embedding.tokens.weight

    def make_block(self, config: TransformerConfig) -> nn.Module:
        return DecoderOnlyBlock(config.d_model, config.n_heads, config.d_ff, config.dropout, config.activation,
                                config.norm, self.residual, self.feed_forward)

    def new_cache(self) -> KVCache:
        """An empty :class:`~course_utils.kv_cache.KVCache` for one batch of prompts."""
        return KVCache(len(self.blocks))

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
        config = self.config
        ids = check_token_ids(ids, config.vocab_size, name="ids")
        if cache is not None and not isinstance(cache, KVCache):
            raise CourseTypeError(f"cache must be a KVCache from model.new_cache(), got {describe(cache)}")
        offset = cache.length if cache is not None else 0
        if cache is not None and offset and cache.batch_size != ids.size(0):
            raise CourseValueError(f"the cache holds {cache.batch_size} rows but ids has {ids.size(0)}; make one "
                                   "cache per batch with model.new_cache()")
        if offset + ids.size(1) > config.max_len:
            raise CourseValueError(f"positions {offset}..{offset + ids.size(1) - 1} exceed the context of "
                                   f"max_len={config.max_len}; keep only the last {config.max_len} tokens or build "
                                   "the model with a larger max_len")
        mask = causal_mask(ids.size(1), past=offset, device=ids.device)  # (1, 1, new, offset + new)
        if cache is None:
            mask = mask & padding_mask(ids, config.pad_id)
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

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """``(batch, seq)`` → ``(batch, seq, vocab_size)``."""
        return self.logits(check_token_ids(ids, self.logits.num_embeddings, name="ids"))


# ---------------------------------------------------------------------------------------------------- the task
def shift_for_lm(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(batch, seq)`` ids → ``(inputs, targets)``, both ``(batch, seq - 1)``: the model reads ``ids[:, :-1]``
    and position ``t`` is scored on the next token ``ids[:, t + 1]``."""
    ids = check_token_ids(ids, vocab_size=torch.iinfo(torch.long).max, name="ids")
    if ids.size(1) < 2:
        raise CourseValueError(f"a language-model batch needs at least 2 tokens per row ([BOS] and one to "
                               f"predict), got shape {tuple(ids.shape)}")
    return ids[:, :-1], ids[:, 1:]


def lm_loss(model: nn.Module, batch: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    """Mean next-token cross-entropy over the real (non-padding) targets of ``batch (batch, seq)``."""
    check_module("model", model)
    inputs, targets = shift_for_lm(batch)
    logits = model(inputs)  # (batch, seq - 1, vocab)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=pad_id)


@torch.no_grad()
def evaluate_lm(model: nn.Module, batches: Sequence[torch.Tensor], pad_id: int = PAD_ID) -> dict[str, float]:
    """Summed next-token loss over every real target of ``batches`` → ``{"loss", "perplexity", "n_tokens"}``.

    The same positions :func:`course_utils.ngram.perplexity` scores on the same sequences.
    """
    check_module("model", model)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        inputs, targets = shift_for_lm(batch)
        logits = model(inputs)
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=pad_id,
                                 reduction="sum").item()
        count += int((targets != pad_id).sum())
    model.train(was_training)
    if count == 0:
        raise CourseValueError("no tokens to score: every target is padding; pass batches from lm_batches(...)")
    return {"loss": total / count, "perplexity": math.exp(total / count), "n_tokens": count}


# ---------------------------------------------------------------------------------------------------- the data
def split_documents(documents: Sequence[str], fractions: tuple[float, float] = (0.8, 0.1), block_size: int = 20,
                    seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    """Split ``documents`` into ``(train, validation, test)`` by blocks of ``block_size`` consecutive documents.

    Consecutive sentences of the documentation corpus come from the same source file, so whole blocks go to one
    split: no test sentence has its neighbours (same topic, same phrasing) in training. Blocks are assigned with
    ``random.Random(seed)``; the order inside each split is kept.
    """
    check_positive_int("block_size", block_size)
    train_fraction = check_real("fractions[0]", fractions[0], 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    val_fraction = check_real("fractions[1]", fractions[1], 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    if train_fraction + val_fraction >= 1.0:
        raise CourseValueError(f"fractions {fractions} leave nothing for the test split; their sum must be < 1")
    blocks = [list(documents[i:i + block_size]) for i in range(0, len(documents), block_size)]
    if len(blocks) < 3:
        raise CourseValueError(f"{len(documents)} documents make {len(blocks)} blocks of {block_size}; a "
                               "three-way split needs at least 3 blocks: pass more documents or a smaller block_size")
    order = list(range(len(blocks)))
    random.Random(seed).shuffle(order)
    n_train = max(1, round(train_fraction * len(blocks)))
    n_val = max(1, round(val_fraction * len(blocks)))
    chosen = (sorted(order[:n_train]), sorted(order[n_train:n_train + n_val]), sorted(order[n_train + n_val:]))
    return tuple([doc for b in part for doc in blocks[b]] for part in chosen)


def encode_documents(tokenizer, documents: Sequence[str], max_len: int) -> list[list[int]]:
    """Each document → ``[BOS] ids… [EOS]``, cut to ``max_len + 1`` ids (the model reads at most ``max_len``).

    A cut document loses its tail, [EOS] included; every model is scored on the same cut sequences.
    """
    check_positive_int("max_len", max_len)
    return [([BOS_ID] + tokenizer.encode(doc) + [EOS_ID])[:max_len + 1] for doc in documents]


def lm_batches(sequences: Sequence[Sequence[int]], batch_size: int, shuffle: bool = True, seed: int = 0,
               pad_id: int = PAD_ID) -> list[torch.Tensor]:
    """Right-padded ``(batch, longest)`` long tensors of sequences of similar length (little padding).

    Sequences are sorted by length and cut into batches; ``shuffle=True`` then shuffles the order of the batches
    (and which sequences share one) with ``random.Random(seed)``.
    """
    check_positive_int("batch_size", batch_size)
    if not sequences:
        raise CourseValueError("no sequences to batch; encode some documents first (encode_documents)")
    order = list(range(len(sequences)))
    rng = random.Random(seed)
    if shuffle:
        rng.shuffle(order)  # ties in length are broken differently per seed
    order.sort(key=lambda i: len(sequences[i]))
    batches = []
    for start in range(0, len(order), batch_size):
        rows = [sequences[i] for i in order[start:start + batch_size]]
        batch = torch.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=torch.long)
        for r, row in enumerate(rows):
            batch[r, :len(row)] = torch.tensor(row, dtype=torch.long)
        batches.append(batch)
    if shuffle:
        rng.shuffle(batches)
    return batches


# ---------------------------------------------------------------------------------------------------- sampling
def check_logits(logits: object) -> torch.Tensor:
    """``logits`` if it is a floating ``(rows, vocab)`` tensor."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() != 2:
        raise CourseValueError(f"expected next-token logits as a float tensor (rows, vocab), got {describe(logits)}; "
                               "take the last position: model(ids)[:, -1]")
    return logits


def check_top_k(top_k: object) -> int | None:
    if top_k is None:
        return None
    return check_positive_int("top_k", top_k, hint="; None keeps every token")


def check_top_p(top_p: object) -> float | None:
    if top_p is None:
        return None
    return check_real("top_p", top_p, 0.0, 1.0, low_inclusive=False, hint="; 1.0 (or None) keeps every token")


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``logits / temperature`` (``temperature > 0``): below 1 sharpens the distribution, above 1 flattens it."""
    check_logits(logits)
    check_real("temperature", temperature, 0.0, low_inclusive=False,
               hint="; temperature 0 means greedy decoding: use generate(..., temperature=0)")
    return logits / temperature


def top_k_filter(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """Keep the ``top_k`` largest logits of every row (exactly ``top_k``, ties broken by index); the others
    become ``-inf``."""
    check_logits(logits)
    top_k = min(check_top_k(top_k), logits.size(-1))
    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(top_k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Nucleus filter: keep the smallest set of most probable tokens whose probabilities sum to at least
    ``top_p``; the others become ``-inf``. The most probable token is always kept."""
    check_logits(logits)
    top_p = check_top_p(top_p)
    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above each one
    keep_sorted = mass_before < top_p
    keep_sorted[:, 0] = True
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))


def apply_repetition_penalty(logits: torch.Tensor, previous_ids: torch.Tensor, penalty: float) -> torch.Tensor:
    """Make every token already in ``previous_ids (rows, seq)`` less likely: its logit is divided by ``penalty``
    if positive, multiplied if negative (``penalty = 1`` changes nothing)."""
    check_logits(logits)
    penalty = check_real("repetition_penalty", penalty, 1.0, hint="; 1.0 switches the penalty off")
    seen = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, previous_ids, True)
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalised, logits)


def next_token_logits(logits: torch.Tensor, previous_ids: torch.Tensor, temperature: float = 1.0,
                      top_k: int | None = None, top_p: float | None = None,
                      repetition_penalty: float = 1.0) -> torch.Tensor:
    """The logits :func:`generate` samples from: repetition penalty → temperature → top-k → top-p.

    ``temperature == 0`` returns the penalised logits unchanged (greedy decoding takes their argmax).
    """
    logits = apply_repetition_penalty(logits, previous_ids, repetition_penalty)
    if temperature == 0:
        return logits
    logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None and top_p < 1.0:
        logits = top_p_filter(logits, top_p)
    return logits


def distinct_ngram_ratio(sequences: Sequence[Sequence[int]], n: int = 2) -> float:
    """Distinct ``n``-grams / all ``n``-grams over ``sequences`` (1.0 = no ``n``-gram repeats; low = loops)."""
    check_positive_int("n", n)
    grams = [tuple(seq[i:i + n]) for seq in sequences for i in range(len(seq) - n + 1)]
    if not grams:
        raise CourseValueError(f"no {n}-grams: every sequence is shorter than {n} tokens")
    return len(set(grams)) / len(grams)


@torch.no_grad()
def sample_perplexity(model: nn.Module, ids: torch.Tensor, prompt_len: int, pad_id: int = PAD_ID) -> float:
    """Perplexity the model itself (temperature 1, no filter) assigns to the generated part of ``ids (batch, seq)``
    — every position from ``prompt_len`` on that is not padding. Low = the model finds its samples predictable."""
    check_module("model", model)
    check_int("prompt_len", prompt_len, 1)
    was_training = model.training
    model.eval()
    log_probs = torch.log_softmax(model(ids[:, :-1]).float(), dim=-1)
    targets = ids[:, 1:]
    chosen = log_probs.gather(-1, targets[..., None]).squeeze(-1)[:, prompt_len - 1:]
    keep = targets[:, prompt_len - 1:] != pad_id
    model.train(was_training)
    return math.exp(-chosen[keep].mean().item())


@torch.no_grad()
def generate(model: DecoderOnlyLM, prompt_ids: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, repetition_penalty: float = 1.0,
             generator: torch.Generator | None = None, use_cache: bool = True,
             eos_id: int | None = None) -> torch.Tensor:
    """Continue ``prompt_ids (batch, prompt_len)`` by up to ``max_new_tokens`` tokens (lesson 08).

    Args:
        temperature: ``0`` = greedy (always the most probable token); otherwise sample from
            ``softmax(logits / temperature)``.
        top_k: sample only among the ``top_k`` most probable tokens. top_p: only from the nucleus (smallest set
            with probability ≥ ``top_p``). repetition_penalty: ``≥ 1``; > 1 discourages tokens already present.
        generator: a seeded ``torch.Generator`` makes sampling reproducible.
        use_cache: feed only the newest token and reuse the cached keys/values (same tokens, less work).
        eos_id: stop a row once it has produced this id; later positions are filled with the model's ``pad_id``.

    Returns:
        ``(batch, prompt_len + steps)``: the prompt followed by the new tokens, ``steps <= max_new_tokens``.
    """
    check_module("model", model, DecoderOnlyLM)
    config = model.config
    prompt_ids = check_token_ids(prompt_ids, config.vocab_size, config.max_len, name="prompt_ids")
    if bool((prompt_ids == config.pad_id).any()):
        raise CourseValueError(f"prompt_ids contain the padding id {config.pad_id}; generate from prompts of equal "
                               "length without padding (one prompt per call, or prompts cut to the same length)")
    check_positive_int("max_new_tokens", max_new_tokens)
    check_real("temperature", temperature, 0.0, hint="; 0 is greedy, 1 samples from the model's distribution")
    check_top_k(top_k)
    check_top_p(top_p)
    check_real("repetition_penalty", repetition_penalty, 1.0, hint="; 1.0 switches the penalty off")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise CourseTypeError(f"generator must be a torch.Generator, got {describe(generator)}; "
                              "use torch.Generator().manual_seed(0)")
    check_bool("use_cache", use_cache)
    if eos_id is not None:
        check_int("eos_id", eos_id, 0)
    if prompt_ids.size(1) + max_new_tokens > config.max_len:
        raise CourseValueError(f"prompt of {prompt_ids.size(1)} tokens + max_new_tokens={max_new_tokens} exceeds "
                               f"the context max_len={config.max_len}; ask for at most "
                               f"{config.max_len - prompt_ids.size(1)} new tokens")
    was_training = model.training
    model.eval()
    ids = prompt_ids
    finished = torch.zeros(ids.size(0), dtype=torch.bool, device=ids.device)
    cache = model.new_cache() if use_cache else None
    step_input = ids
    for _ in range(max_new_tokens):
        logits = model(step_input if use_cache else ids, cache)[:, -1].float()  # (batch, vocab)
        logits = next_token_logits(logits, ids, temperature, top_k, top_p, repetition_penalty)
        if temperature == 0:
            token = logits.argmax(dim=-1)
        else:
            token = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(1)
        token = token.masked_fill(finished, config.pad_id)
        ids = torch.cat([ids, token[:, None]], dim=1)
        step_input = token[:, None]
        if eos_id is not None:
            finished |= token == eos_id
            if finished.all():
                break
    model.train(was_training)
    return ids


# ---------------------------------------------------------------------------------------------------- one call
@dataclass
class LMData:
    """A tokenizer and the ``[BOS] … [EOS]`` id sequences of the train / validation / test documents."""

    tokenizer: object
    train: list[list[int]]
    validation: list[list[int]]
    test: list[list[int]]
    max_len: int


def pydoc_lm_data(vocab_size: int = 512, max_len: int = 64, seed: int = 0) -> LMData:
    """Lesson 08's data: the Python-documentation sentences, split by blocks of documents (:func:`split_documents`),
    a byte-level BPE of ``vocab_size`` ids trained on the training split only, sequences cut at ``max_len + 1``."""
    from .data.pydoc_corpus import load_pydoc_corpus
    from .tokenization import BPETokenizer

    train, validation, test = split_documents(load_pydoc_corpus().sentences, seed=seed)
    tokenizer = BPETokenizer.train(train, vocab_size=check_positive_int("vocab_size", vocab_size))
    return LMData(tokenizer, *(encode_documents(tokenizer, part, max_len) for part in (train, validation, test)),
                  max_len=max_len)


# ---------------------------------------------------------------------------------------------------- training
@dataclass
class LMHistory:
    """What :func:`train_lm` measured: per-step training loss, ``(step, validation loss)`` pairs, and the wall-clock
    and CPU seconds of the training steps alone (evaluation excluded)."""

    train_loss: list[float]
    evaluations: list[tuple[int, float]]
    wall_seconds: float
    cpu_seconds: float


def train_lm(model: nn.Module, train_sequences: Sequence[Sequence[int]], steps: int, batch_size: int = 32,
             lr: float = 3e-3, warmup_steps: int = 50, weight_decay: float = 0.01,
             validation: Sequence[torch.Tensor] | None = None, eval_every: int | None = None,
             seed: int = 0) -> LMHistory:
    """Train ``model`` for exactly ``steps`` AdamW steps of :func:`lm_loss` (warmup + cosine decay, clipping at 1).

    Batches come from :func:`lm_batches`, reshuffled every epoch (``seed + epoch``). With ``validation`` batches,
    the validation loss is measured every ``eval_every`` steps and after the last one.
    """
    import time

    from .training import make_optimizer, make_scheduler, train_one_epoch

    check_module("model", model)
    check_positive_int("steps", steps)
    if eval_every is not None:
        check_positive_int("eval_every", eval_every)
    batches: list[torch.Tensor] = []
    epoch = 0
    while len(batches) < steps:
        batches.extend(lm_batches(train_sequences, batch_size, seed=seed + epoch))
        epoch += 1
    optimizer = make_optimizer(model, lr, weight_decay)
    scheduler = make_scheduler(optimizer, min(warmup_steps, steps - 1), steps)
    evaluations: list[tuple[int, float]] = []
    eval_wall = eval_cpu = 0.0
    done = 0

    def on_step(_result) -> None:
        nonlocal done, eval_wall, eval_cpu
        done += 1
        if validation is not None and (done == steps or (eval_every and done % eval_every == 0)):
            wall, cpu = time.perf_counter(), time.process_time()
            evaluations.append((done, evaluate_lm(model, validation)["loss"]))
            model.train()
            eval_wall += time.perf_counter() - wall
            eval_cpu += time.process_time() - cpu

    wall, cpu = time.perf_counter(), time.process_time()
    losses = train_one_epoch(model, batches[:steps], lm_loss, optimizer, scheduler, clip_norm=1.0, on_step=on_step)
    return LMHistory(losses, evaluations, time.perf_counter() - wall - eval_wall, time.process_time() - cpu - eval_cpu)
