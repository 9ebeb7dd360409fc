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
* :class:`KneserNeyLM` — interpolated modified Kneser–Ney of any order ``n`` (three discounts per order, tuned on
  a validation split by coordinate search): the strongest count baseline here.

Models of order above 3 read longer contexts: :func:`contexts_and_targets` with ``order=n`` gives
``(n - 1 tokens back…, target)`` rows, and :func:`perplexity` asks each model for rows of its ``order`` (3 for the
three models above, which read at most two tokens back).
"""
from __future__ import annotations

__all__ = ["BigramLM", "InterpolatedTrigramLM", "KneserNeyLM", "UnigramLM", "contexts_and_targets", "perplexity",
           "seen_share"]

import functools
import math
from collections import Counter
from collections.abc import Sequence

import torch

from .errors import CourseTypeError, CourseValueError
from .tokenization import BOS_ID
from .validation import check_id_lists, check_positive_int, check_real, describe


def contexts_and_targets(sequences: Sequence[Sequence[int]], order: int = 3) -> list[tuple[int, ...]]:
    """Every scored position as an ``order``-tuple ``(…, token two back, token one back, target)``; before [BOS]
    comes [BOS] again. The default ``order=3`` gives the triples the unigram, bigram and trigram models read."""
    check_positive_int("order", order)
    if not sequences:
        raise CourseValueError("no sequences given; pass encode_documents(...) output")
    rows = []
    for seq in sequences:
        if len(seq) < 2 or seq[0] != BOS_ID:
            raise CourseValueError(f"each sequence must be [BOS] followed by at least one id, got {list(seq)[:8]}; "
                                   "build them with language_model.encode_documents")
        padded = [BOS_ID] * (order - 1) + list(seq[1:])
        rows.extend(tuple(padded[i - order + 1:i + 1]) for i in range(order - 1, len(padded)))
    return rows


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


MIN_DISCOUNT = 1e-3  # the smallest discount the tuning tries: 0 would give unseen continuations probability 0


class KneserNeyLM:
    """Interpolated modified Kneser–Ney of order ``n`` (Chen & Goodman, 1998), tuned on a validation split.

    Level ``k`` (``k = 1 … n``) predicts the target from the ``k - 1`` tokens before it (``h``, left-padded with
    [BOS] as in :func:`contexts_and_targets`)::

        P_k(w | h) = (c_k(h w) - D_k(c_k(h w)) + γ_k(h) · P_{k-1}(w | h′)) / c_k(h ·)
        γ_k(h)     = D_k1 · N1(h ·) + D_k2 · N2(h ·) + D_k3+ · N3+(h ·)           (the mass the discounts free)
        P_0(w)     = 1 / vocab_size                                              (every id of the vocabulary)

    where ``h′`` is ``h`` without its first token, ``c_k(h ·) = Σ_w c_k(h w)``, ``Nj(h ·)`` is the number of
    targets ``w`` with ``c_k(h w) = j`` (``N3+``: ``≥ 3``), and ``D_k(c)`` is 0, ``D_k1``, ``D_k2`` or ``D_k3+`` for
    ``c`` = 0, 1, 2 or ≥ 3. A context never seen at level ``k`` (``c_k(h ·) = 0``) passes ``P_{k-1}`` on unchanged.
    The counts: at the top level ``c_n`` is how often the ``n``-gram occurs in training; below it is the
    *continuation count* ``c_k(g) = |{x : x g is a (k+1)-gram of level k+1}|`` — in how many different contexts
    ``g`` was seen, not how often. With every discount in ``(0, j]`` each ``P(· | context)`` is a distribution over
    all ``vocab_size`` ids, positive everywhere (unseen tokens and contexts included).

    ``discounts`` is a float64 ``(order, 3)`` tensor: row ``k - 1`` holds ``(D_k1, D_k2, D_k3+)`` of level ``k``
    (row 0: the unigram level). Left as ``None`` they start at Chen & Goodman's estimates from each level's counts
    of counts ``n_j`` (``Y = n1 / (n1 + 2 n2)``, ``D_j = j - (j + 1) Y n_{j+1} / n_j``, clipped into
    ``[MIN_DISCOUNT, j]``); :meth:`tune_discounts` then fits them to a validation split.
    Rows (:meth:`target_probs`) are ``(order - 1 context ids…, target)`` tuples: ``contexts_and_targets(sequences,
    order)``; :func:`perplexity` builds them itself. The baseline for lesson 08's GPT: ``benchmarks/lm_baselines.py``
    scores both on the lesson's data.
    """

    def __init__(self, sequences: Sequence[Sequence[int]], vocab_size: int, order: int = 3,
                 discounts: Sequence[Sequence[float]] | torch.Tensor | None = None) -> None:
        self.vocab_size = check_positive_int("vocab_size", vocab_size, hint="; pass tokenizer.vocab_size")
        self.order = check_positive_int("order", order, hint="; 3 is a trigram model")
        if vocab_size ** order >= 2 ** 62:
            raise CourseValueError(f"order={order} with vocab_size={vocab_size} gives {vocab_size}**{order} possible "
                                   "n-grams, more than the int64 keys that store them can number; use a smaller order")
        rows = self._rows(torch.tensor(contexts_and_targets(check_ids_in_vocabulary("sequences", sequences,
                                                                                    vocab_size), order)))
        self.levels = self._count(rows)
        self.discounts = self.estimated_discounts() if discounts is None else self._checked_discounts(discounts)

    # ------------------------------------------------------------------ counting
    def _rows(self, rows: torch.Tensor) -> torch.Tensor:
        return rows.reshape(-1, self.order).long()

    def _keys(self, rows: torch.Tensor, k: int) -> torch.Tensor:
        """One int64 key per row for its last ``k`` ids (base ``vocab_size`` digits): ``(m,)``."""
        key = torch.zeros(rows.size(0), dtype=torch.long)
        for column in range(self.order - k, self.order):
            key = key * self.vocab_size + rows[:, column]
        return key

    def _count(self, rows: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        """Per level ``k`` (list index ``k - 1``): the sorted keys of its ``k``-grams and their counts, and per
        context (the key without its last id) the total and the numbers of targets seen once, twice, ≥ 3 times."""
        levels = []
        keys, counts = torch.unique(self._keys(rows, self.order), return_counts=True)  # raw counts at the top
        for k in range(self.order, 0, -1):
            if k < self.order:  # continuation counts: distinct left extensions in the level above
                keys, counts = torch.unique(levels[0]["keys"] % self.vocab_size ** k, return_counts=True)
            contexts, position = torch.unique(keys // self.vocab_size, return_inverse=True)
            counts = counts.double()
            per_context = [torch.zeros(contexts.numel(), dtype=torch.float64).index_add_(0, position, values.double())
                           for values in (counts, counts == 1, counts == 2, counts >= 3)]
            levels.insert(0, {"keys": keys, "counts": counts, "contexts": contexts,
                              **dict(zip(("total", "n1", "n2", "n3"), per_context))})
        return levels

    def estimated_discounts(self) -> torch.Tensor:
        """Chen & Goodman's discounts from each level's counts of counts, ``(order, 3)`` float64 (see the class)."""
        rows = []
        for level in self.levels:
            n = [(level["counts"] == j).sum().item() for j in (1, 2, 3, 4)]
            if min(n) > 0:
                y = n[0] / (n[0] + 2 * n[1])
                estimate = [j - (j + 1) * y * n[j] / n[j - 1] for j in (1, 2, 3)]
            else:  # too few counts to estimate (a tiny corpus): the middle of each range
                estimate = [0.5, 1.0, 1.5]
            rows.append([min(max(d, MIN_DISCOUNT), j) for j, d in zip((1, 2, 3), estimate)])
        return torch.tensor(rows, dtype=torch.float64)

    def _checked_discounts(self, discounts: object) -> torch.Tensor:
        table = discounts.tolist() if isinstance(discounts, torch.Tensor) else discounts
        shape_ok = isinstance(table, Sequence) and len(table) == self.order and all(
            isinstance(row, Sequence) and len(row) == 3 for row in table)
        if not shape_ok:
            raise CourseValueError(f"discounts must be {self.order} rows (one per level, unigram first) of three "
                                   f"numbers (D1, D2, D3+), got {describe(discounts)}; or pass None for the estimates")
        for k, row in enumerate(table, start=1):
            for j, d in zip((1, 2, 3), row):
                check_real(f"discounts[{k - 1}][{j - 1}]", d, 0.0, float(j), low_inclusive=False,
                           hint=f"; D{j}{'+' if j == 3 else ''} of level {k} must be in (0, {j}] so the discounted "
                                "count stays >= 0 and unseen targets keep some probability")
        return torch.tensor(table, dtype=torch.float64)

    # ------------------------------------------------------------------ scoring
    def _statistics(self, rows: torch.Tensor) -> list[torch.Tensor]:
        """Per level, a float64 ``(5, m)`` tensor: ``c_k(h w)``, ``c_k(h ·)``, ``N1(h ·)``, ``N2(h ·)``, ``N3+(h ·)``
        of each row (zeros where unseen) — everything the probability needs besides the discounts."""
        statistics = []
        for k, level in enumerate(self.levels, start=1):
            keys = self._keys(rows, k)
            count = lookup(level["keys"], level["counts"], keys)
            where = keys // self.vocab_size
            statistics.append(torch.stack([count] + [lookup(level["contexts"], level[name], where)
                                                     for name in ("total", "n1", "n2", "n3")]))
        return statistics

    def _probs(self, statistics: list[torch.Tensor], discounts: torch.Tensor) -> torch.Tensor:
        """The class's formula, level by level from the uniform distribution up: float64 ``(m,)``."""
        probs = torch.full((statistics[0].size(1),), 1.0 / self.vocab_size, dtype=torch.float64)
        for (count, total, n1, n2, n3), d in zip(statistics, discounts):
            discount = torch.cat([d.new_zeros(1), d])[count.clamp(max=3).long()]  # D(c): 0, D1, D2, D3+
            backoff = d[0] * n1 + d[1] * n2 + d[2] * n3                              # γ(h)
            probs = torch.where(total > 0, (count - discount + backoff * probs) / total.clamp(min=1), probs)
        return probs

    def target_probs(self, rows: Sequence[Sequence[int]] | torch.Tensor) -> torch.Tensor:
        """``P(target | context)`` of each ``(order - 1 context ids…, target)`` row, float64 ``(m,)``."""
        return self._probs(self._statistics(self._checked_rows(rows)), self.discounts)

    def distribution(self, context: Sequence[int]) -> torch.Tensor:
        """``P(· | context)`` as a float64 ``(vocab_size,)`` tensor; the context is left-padded with [BOS] and only
        its last ``order - 1`` ids are read."""
        context = check_ids_in_vocabulary("context", [context], self.vocab_size, allow_empty=True)[0]
        context = ([BOS_ID] * self.order + context)[len(context) + 1:]  # the last order - 1 ids
        rows = torch.tensor(context, dtype=torch.long).repeat(self.vocab_size, 1)
        return self.target_probs(torch.cat([rows, torch.arange(self.vocab_size)[:, None]], dim=1))

    def _checked_rows(self, rows: object) -> torch.Tensor:
        if isinstance(rows, torch.Tensor):
            if rows.dim() != 2 or rows.dtype.is_floating_point or rows.dtype in (torch.bool, torch.complex64,
                                                                                 torch.complex128):
                raise CourseTypeError(f"rows must be an integer (m, {self.order}) tensor, got {describe(rows)}; "
                                      f"build them with contexts_and_targets(sequences, order={self.order})")
            table = rows.long()
        else:
            table = check_ids_in_vocabulary("rows", rows, self.vocab_size)
            table = torch.tensor(table, dtype=torch.long) if all(len(row) == self.order for row in table) else None
        if table is None or table.dim() != 2 or table.size(1) != self.order:
            raise CourseValueError(f"each row must hold {self.order} ids ({self.order - 1} context ids, then the "
                                   f"target); build them with contexts_and_targets(sequences, order={self.order})")
        if table.numel() and (table.min() < 0 or table.max() >= self.vocab_size):
            raise CourseValueError(f"rows must hold ids in [0, {self.vocab_size}), found range "
                                   f"[{int(table.min())}, {int(table.max())}]; pass ids of the same tokenizer")
        return table

    # ------------------------------------------------------------------ tuning
    def tune_discounts(self, validation: Sequence[Sequence[int]], sweeps: int = 4,
                       tolerance: float = 1e-4) -> list[float]:
        """Fit the ``3 · order`` discounts to ``validation`` by coordinate search; returns the validation
        perplexity before the first sweep and after each.

        A sweep visits each discount in turn (level 1 first) and sets it by golden-section search on its range
        ``[MIN_DISCOUNT, j]`` to the value of highest validation log-likelihood, the others held fixed (each
        probability is affine in any one discount, so the log-likelihood is concave along each coordinate and the
        1-D search finds its maximum); a value is kept only if it is better. Sweeps stop after ``sweeps`` or when
        one gains less than ``tolerance`` in perplexity. Deterministic, and never worse than the start.
        """
        check_positive_int("sweeps", sweeps)
        check_real("tolerance", tolerance, 0.0)
        statistics = self._statistics(self._rows(torch.tensor(contexts_and_targets(
            check_ids_in_vocabulary("validation", validation, self.vocab_size), self.order))))
        discounts = self.discounts.clone()

        def log_likelihood(level: int, j: int, value: float) -> float:
            trial = discounts.clone()
            trial[level, j] = value
            return self._probs(statistics, trial).log().mean().item()

        history = [math.exp(-self._probs(statistics, discounts).log().mean().item())]
        for _ in range(sweeps):
            for level in range(self.order):
                for j in range(3):
                    best = golden_section_max(functools.partial(log_likelihood, level, j), MIN_DISCOUNT, j + 1.0)
                    if log_likelihood(level, j, best) > log_likelihood(level, j, discounts[level, j].item()):
                        discounts[level, j] = best
            history.append(math.exp(-self._probs(statistics, discounts).log().mean().item()))
            if history[-2] - history[-1] < tolerance:
                break
        self.discounts = discounts
        return history


def golden_section_max(function, low: float, high: float, iterations: int = 40) -> float:
    """The argmax of a function that is concave on ``[low, high]``, to ``(high - low) · 0.618**iterations``."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = function(c), function(d)
    for _ in range(iterations):
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = function(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = function(d)
    candidates = [(function(x), x) for x in (low, (a + b) / 2, high)]
    return max(candidates)[1]


def lookup(sorted_keys: torch.Tensor, values: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """``values[i]`` where ``sorted_keys[i] == query``, else 0 — a vectorised dictionary lookup, float64 ``(m,)``."""
    if sorted_keys.numel() == 0:
        return torch.zeros(queries.shape, dtype=torch.float64)
    index = torch.searchsorted(sorted_keys, queries).clamp(max=sorted_keys.numel() - 1)
    return torch.where(sorted_keys[index] == queries, values[index], torch.zeros((), dtype=torch.float64))


def check_ids_in_vocabulary(name: str, sequences: object, vocab_size: int,
                            allow_empty: bool = False) -> list[list[int]]:
    """``sequences`` as lists of ids in ``[0, vocab_size)`` (see :func:`~course_utils.validation.check_id_lists`)."""
    rows = check_id_lists(name, sequences)
    if not allow_empty and any(not row for row in rows):
        raise CourseValueError(f"{name} holds an empty sequence; each must hold at least one id")
    high = max((max(row) for row in rows if row), default=0)
    if high >= vocab_size:
        raise CourseValueError(f"{name} holds id {high}, outside the vocabulary [0, {vocab_size}); pass "
                               "vocab_size=tokenizer.vocab_size of the tokenizer that encoded them")
    return rows


def perplexity(model, sequences: Sequence[Sequence[int]]) -> float:
    """``exp(mean −log P(target | context))`` over every scored position of ``sequences``; the rows have the
    model's ``order`` (3 for models without one)."""
    probs = model.target_probs(contexts_and_targets(sequences, getattr(model, "order", 3)))
    return math.exp(-probs.log().mean().item())


def seen_share(train: Sequence[Sequence[int]], sequences: Sequence[Sequence[int]], order: int) -> float:
    """Share of the scored positions of ``sequences`` whose ``order``-gram (context and target, as
    :func:`contexts_and_targets` builds them) also occurs in ``train``: how much of a test set a count model of that
    order has seen."""
    seen = set(contexts_and_targets(train, order))
    rows = contexts_and_targets(sequences, order)
    return sum(row in seen for row in rows) / len(rows)
