"""Count-based language models — the baselines a Transformer language model must beat (lesson 08).

Every model here scores the same positions as :func:`course_utils.language_model.evaluate_lm`: each sequence is
``[BOS] tokens… [EOS]`` and every id after the leading [BOS] is predicted from the ids before it (the context
before [BOS] is [BOS] again, so the first real token is predicted from ``([BOS], [BOS])``). Padding is never part
of a sequence. Probabilities are over the whole vocabulary (``vocab_size`` ids) and sum to 1.

* :class:`UnigramLM` — add-k counts of single tokens, ignores the context.
* :class:`BigramLM` — add-k counts of ``(previous, next)``; ``k`` tuned on a validation split (grid).
* :class:`InterpolatedTrigramLM` — Jelinek–Mercer interpolation of the trigram, bigram and unigram relative
  frequencies and the uniform distribution; the four weights λ are fitted on a validation split by EM, one set
  per bucket of how often the two-token context was seen in training (a rare context trusts the trigram less).
"""
from __future__ import annotations

__all__ = ["BigramLM", "InterpolatedTrigramLM", "UnigramLM", "contexts_and_targets", "perplexity"]

import math
from collections import Counter
from collections.abc import Sequence

import torch

from .errors import CourseValueError
from .tokenization import BOS_ID
from .validation import check_positive_int, check_real


def contexts_and_targets(sequences: Sequence[Sequence[int]]) -> list[tuple[int, int, int]]:
    """Every scored position as ``(token two back, token one back, target)``; before [BOS] comes [BOS]."""
    if not sequences:
        raise CourseValueError("no sequences given; pass encode_documents(...) output")
    triples = []
    for seq in sequences:
        if len(seq) < 2 or seq[0] != BOS_ID:
            raise CourseValueError(f"each sequence must be [BOS] followed by at least one id, got {list(seq)[:8]}; "
                                   "build them with language_model.encode_documents")
        padded = [BOS_ID] + list(seq)
        triples.extend((padded[i - 2], padded[i - 1], padded[i]) for i in range(2, len(padded)))
    return triples


class UnigramLM:
    """``P(w) = (count(w) + k) / (N + k V)``."""

    def __init__(self, sequences: Sequence[Sequence[int]], vocab_size: int, k: float = 1.0) -> None:
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.k = check_real("k", k, 0.0, low_inclusive=False)
        counts = torch.zeros(vocab_size, dtype=torch.float64)
        targets = torch.tensor([t for _, _, t in contexts_and_targets(sequences)])
        counts.index_add_(0, targets, torch.ones(len(targets), dtype=torch.float64))
        self.counts = counts
        self.probs = (counts + self.k) / (counts.sum() + self.k * vocab_size)

    def distribution(self, context: Sequence[int]) -> torch.Tensor:
        """``P(· | context)`` as a float64 ``(vocab_size,)`` tensor (the context is ignored)."""
        return self.probs.clone()

    def target_probs(self, triples: list[tuple[int, int, int]]) -> torch.Tensor:
        """``P(target | context)`` of every ``(two back, one back, target)`` triple, float64 ``(n,)``."""
        return self.probs[torch.tensor([t for _, _, t in triples])]


class BigramLM:
    """``P(w | v) = (count(v, w) + k) / (count(v) + k V)``; :meth:`tune_k` picks ``k`` on validation data."""

    def __init__(self, sequences: Sequence[Sequence[int]], vocab_size: int, k: float = 1.0) -> None:
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.k = check_real("k", k, 0.0, low_inclusive=False)
        self.pair_counts: Counter = Counter((v, w) for _, v, w in contexts_and_targets(sequences))
        self.context_counts: Counter = Counter()
        for (v, _), c in self.pair_counts.items():
            self.context_counts[v] += c

    def distribution(self, context: Sequence[int]) -> torch.Tensor:
        v = context[-1]
        counts = torch.zeros(self.vocab_size, dtype=torch.float64)
        for (u, w), c in self.pair_counts.items():
            if u == v:
                counts[w] = c
        return (counts + self.k) / (self.context_counts[v] + self.k * self.vocab_size)

    def target_probs(self, triples: list[tuple[int, int, int]]) -> torch.Tensor:
        k, vocab = self.k, self.vocab_size
        return torch.tensor([(self.pair_counts[(v, w)] + k) / (self.context_counts[v] + k * vocab)
                             for _, v, w in triples], dtype=torch.float64)

    def tune_k(self, validation: Sequence[Sequence[int]],
               grid: Sequence[float] = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)) -> dict[float, float]:
        """Set ``k`` to the grid value with the lowest validation perplexity; returns ``{k: perplexity}``."""
        results = {}
        for k in grid:
            self.k = check_real("k", k, 0.0, low_inclusive=False)
            results[k] = perplexity(self, validation)
        self.k = min(results, key=results.get)
        return results


def count_bucket(count: int) -> int:
    """Bucket of a context count: 0 for unseen, then ``1 + floor(log2(count))`` capped at 8 (≥ 128)."""
    return 0 if count == 0 else min(1 + int(math.log2(count)), 8)


N_BUCKETS = 9


class InterpolatedTrigramLM:
    """``P(w | u, v) = λ₃ f(w | u, v) + λ₂ f(w | v) + λ₁ f(w) + λ₀ / V`` with relative frequencies ``f``.

    For an unseen context, an order's ``f`` is the next lower order's, so every distribution sums to 1.
    ``lambdas (N_BUCKETS, 4)`` hold one weight set per bucket of ``count(u, v)`` (:func:`count_bucket`); start
    uniform (fixed λ) and fit them with :meth:`fit_lambdas`.
    """

    def __init__(self, sequences: Sequence[Sequence[int]], vocab_size: int) -> None:
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        triples = contexts_and_targets(sequences)
        self.trigram_counts: Counter = Counter(triples)
        self.bigram_counts: Counter = Counter((v, w) for _, v, w in triples)
        self.unigram_counts: Counter = Counter(w for _, _, w in triples)
        self.context2_counts: Counter = Counter((u, v) for u, v, _ in triples)
        self.context1_counts: Counter = Counter(v for _, v, _ in triples)
        self.n_tokens = len(triples)
        self.lambdas = torch.full((N_BUCKETS, 4), 0.25, dtype=torch.float64)  # (trigram, bigram, unigram, uniform)

    def components(self, triples: list[tuple[int, int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Per triple the four component probabilities ``(n, 4)`` and the λ bucket of its context ``(n,)``."""
        rows, buckets = [], []
        for u, v, w in triples:
            c2, c1 = self.context2_counts[(u, v)], self.context1_counts[v]
            unigram = self.unigram_counts[w] / self.n_tokens
            bigram = self.bigram_counts[(v, w)] / c1 if c1 else unigram  # unseen context: the next lower order
            trigram = self.trigram_counts[(u, v, w)] / c2 if c2 else bigram
            rows.append((trigram, bigram, unigram, 1.0 / self.vocab_size))
            buckets.append(count_bucket(c2))
        return torch.tensor(rows, dtype=torch.float64), torch.tensor(buckets)

    def target_probs(self, triples: list[tuple[int, int, int]]) -> torch.Tensor:
        parts, buckets = self.components(triples)
        return (parts * self.lambdas[buckets]).sum(-1)

    def distribution(self, context: Sequence[int]) -> torch.Tensor:
        u, v = ([BOS_ID, BOS_ID] + list(context))[-2:]
        return self.target_probs([(u, v, w) for w in range(self.vocab_size)])

    def fit_lambdas(self, validation: Sequence[Sequence[int]], iterations: int = 30) -> list[float]:
        """Fit λ on ``validation`` by expectation–maximisation; returns the validation perplexity per iteration.

        E-step: the share of each component in the probability of each validation token; M-step: λ of a bucket =
        the mean share over its tokens. Each iteration cannot raise the validation perplexity.
        """
        check_positive_int("iterations", iterations)
        parts, buckets = self.components(contexts_and_targets(validation))
        history = []
        for _ in range(iterations):
            weighted = parts * self.lambdas[buckets]  # (n, 4)
            total = weighted.sum(-1, keepdim=True)
            history.append(math.exp(-total.log().mean().item()))
            shares = weighted / total
            for b in range(N_BUCKETS):
                chosen = buckets == b
                if chosen.any():
                    self.lambdas[b] = shares[chosen].mean(0)
        return history


def perplexity(model, sequences: Sequence[Sequence[int]]) -> float:
    """``exp(mean −log P(target | context))`` over every scored position of ``sequences``."""
    probs = model.target_probs(contexts_and_targets(sequences))
    return math.exp(-probs.log().mean().item())
