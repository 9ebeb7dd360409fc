"""Count baselines of lesson 08: proper distributions, tuning that helps, and the same scored positions as the
Transformer's evaluation."""
import itertools
import math
import random
from collections import Counter

import pytest
import torch

from course_utils import ngram
from course_utils.config import TransformerConfig
from course_utils.data.lm_data import lm_batches
from course_utils.errors import CourseError, CourseValueError
from course_utils.language_model import DecoderOnlyLM
from course_utils.tokenization import BOS_ID, EOS_ID
from course_utils.training import evaluate_lm

VOCAB = 20


def toy_sequences(n, seed):
    """A little grammar: 7 → 8|9, then a repeating pattern, so higher orders help."""
    rng = random.Random(seed)
    sequences = []
    for _ in range(n):
        seq = [BOS_ID]
        for _ in range(rng.randint(3, 9)):
            prev2, prev1 = seq[-2] if len(seq) > 1 else BOS_ID, seq[-1]
            if rng.random() < 0.85:
                seq.append(7 + (prev2 + 2 * prev1) % 11)  # determined by the last two tokens
            else:
                seq.append(rng.randrange(7, VOCAB))
        sequences.append(seq + [EOS_ID])
    return sequences


TRAIN, VALIDATION, TEST = toy_sequences(400, 0), toy_sequences(100, 1), toy_sequences(100, 2)


@pytest.mark.parametrize("model", [ngram.UnigramLM(TRAIN, VOCAB), ngram.BigramLM(TRAIN, VOCAB, k=0.1),
                                   ngram.InterpolatedTrigramLM(TRAIN, VOCAB)], ids=["unigram", "bigram", "trigram"])
@pytest.mark.parametrize("context", [[BOS_ID], [BOS_ID, 9], [BOS_ID, 12, 13], [BOS_ID, 19, 3]])
def test_probabilities_sum_to_one_over_the_vocabulary(model, context):
    probs = model.distribution(context)
    assert probs.shape == (VOCAB,) and (probs > 0).all()
    assert math.isclose(probs.sum().item(), 1.0, rel_tol=1e-9)


def test_target_probs_agree_with_distribution():
    trigram = ngram.InterpolatedTrigramLM(TRAIN, VOCAB)
    trigram.fit_lambdas(VALIDATION)
    probs = trigram.distribution([BOS_ID, 9, 12])
    torch.testing.assert_close(trigram.target_probs([(9, 12, 15)]), probs[15:16])
    bigram = ngram.BigramLM(TRAIN, VOCAB, k=0.1)
    torch.testing.assert_close(bigram.target_probs([(0, 9, 15)]), bigram.distribution([9])[15:16])


def test_tuned_lambdas_beat_fixed_lambdas_and_em_never_gets_worse():
    trigram = ngram.InterpolatedTrigramLM(TRAIN, VOCAB)
    fixed = ngram.perplexity(trigram, VALIDATION)
    history = trigram.fit_lambdas(VALIDATION)
    assert history[0] == pytest.approx(fixed)
    assert all(b <= a + 1e-9 for a, b in zip(history, history[1:]))
    tuned = ngram.perplexity(trigram, VALIDATION)
    assert tuned < fixed - 0.05
    assert ngram.perplexity(trigram, TEST) < ngram.perplexity(ngram.InterpolatedTrigramLM(TRAIN, VOCAB), TEST)
    torch.testing.assert_close(trigram.lambdas.sum(-1), torch.ones(ngram.N_BUCKETS, dtype=torch.float64))


def test_tuned_k_is_the_best_of_its_grid():
    bigram = ngram.BigramLM(TRAIN, VOCAB)
    results = bigram.tune_k(VALIDATION)
    assert bigram.k == min(results, key=results.get)
    assert ngram.perplexity(bigram, VALIDATION) == pytest.approx(min(results.values()))


def test_more_context_helps_on_text_that_depends_on_it():
    trigram = ngram.InterpolatedTrigramLM(TRAIN, VOCAB)
    trigram.fit_lambdas(VALIDATION)
    bigram = ngram.BigramLM(TRAIN, VOCAB)
    bigram.tune_k(VALIDATION)
    unigram = ngram.UnigramLM(TRAIN, VOCAB)
    assert ngram.perplexity(trigram, TEST) < ngram.perplexity(bigram, TEST) < ngram.perplexity(unigram, TEST)


def test_same_positions_as_the_transformer_evaluation():
    """A uniform model has perplexity V on any positions; both evaluations count the same tokens."""
    triples = ngram.contexts_and_targets(TEST)
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=VOCAB, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16,
                               dropout=0.0)
    model = DecoderOnlyLM(config)
    assert evaluate_lm(model, lm_batches(TEST, 16, shuffle=False))["n_tokens"] == len(triples)
    assert len(triples) == sum(len(s) - 1 for s in TEST)
    assert triples[0][:2] == (BOS_ID, BOS_ID)


def test_bad_sequences_are_refused():
    with pytest.raises(CourseValueError, match="BOS"):
        ngram.UnigramLM([[7, 8, 9]], VOCAB)
    with pytest.raises(CourseValueError, match="no sequences"):
        ngram.BigramLM([], VOCAB)


# ---------------------------------------------------------------------------- Kneser–Ney
def reference_kneser_ney(train, vocab_size, order, discounts):
    """Interpolated modified Kneser–Ney written from its definition: dicts of counts and loops, no tensors.

    Returns ``prob(context, w)`` for a context of ``order - 1`` ids. Levels k = 1 … order; level ``order`` counts
    n-grams, each lower level counts, for every k-gram, the distinct tokens seen just before it one level up."""
    counts = {order: Counter()}
    for seq in train:
        padded = [BOS_ID] * (order - 1) + seq[1:]
        for i in range(order - 1, len(padded)):
            counts[order][tuple(padded[i - order + 1:i + 1])] += 1
    for k in range(order - 1, 0, -1):
        counts[k] = Counter()
        for longer in counts[k + 1]:         # each distinct (k+1)-gram x g adds one context x to g
            counts[k][longer[1:]] += 1

    def discount(k, c):
        return 0.0 if c == 0 else discounts[k - 1][min(c, 3) - 1]

    def prob(k, history, w):
        if k == 0:
            return 1.0 / vocab_size
        lower = prob(k - 1, history[1:], w)
        followers = {g[-1]: c for g, c in counts[k].items() if g[:-1] == history}
        total = sum(followers.values())
        if total == 0:                       # unseen context: the lower level, unchanged
            return lower
        freed = sum(discount(k, c) for c in followers.values())
        c = followers.get(w, 0)
        return (c - discount(k, c) + freed * lower) / total

    return lambda context, w: prob(order, tuple(context), w)


def random_corpus(n, seed, tokens):
    rng = random.Random(seed)
    return [[BOS_ID] + [rng.choice(tokens) for _ in range(rng.randint(1, 6))] + [EOS_ID] for _ in range(n)]


def random_discounts(order, seed):
    rng = random.Random(seed)
    return [[rng.uniform(0.05, 1.0), rng.uniform(0.05, 2.0), rng.uniform(0.05, 3.0)] for _ in range(order)]


SMALL_VOCAB = 11  # 7 special ids; training uses 7, 8, 9; id 10 is never seen in training


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_kneser_ney_equals_the_definition(order, seed):
    train = random_corpus(12, seed, [7, 8, 9])
    held_out = random_corpus(6, seed + 100, [7, 8, 9, 10])
    discounts = random_discounts(order, seed)
    model = ngram.KneserNeyLM(train, SMALL_VOCAB, order=order, discounts=discounts)
    reference = reference_kneser_ney(train, SMALL_VOCAB, order, discounts)
    rows = ngram.contexts_and_targets(held_out, order)
    expected = torch.tensor([reference(row[:-1], row[-1]) for row in rows], dtype=torch.float64)
    torch.testing.assert_close(model.target_probs(rows), expected, rtol=1e-12, atol=0)
    rng = random.Random(seed)
    for _ in range(5):  # whole distributions after random contexts, most of them never seen in training
        context = [rng.randrange(SMALL_VOCAB) for _ in range(order - 1)]
        expected = torch.tensor([reference(context, w) for w in range(SMALL_VOCAB)], dtype=torch.float64)
        torch.testing.assert_close(model.distribution(context), expected, rtol=1e-12, atol=0)
    assert any(row[-1] == 10 for row in rows), "the held-out text must hold a token unseen in training"
    seen = {row[:-1] for row in ngram.contexts_and_targets(train, order)}
    assert order == 1 or any(row[:-1] not in seen for row in rows), "and contexts unseen in training"


def every_context(vocab_size, length):
    return [list(c) for c in itertools.product(range(vocab_size), repeat=length)]


@pytest.mark.parametrize("order", [2, 3, 4])
def test_kneser_ney_sums_to_one_after_every_context(order):
    """All contexts of order - 1 ids over the vocabulary: seen, unseen, made of unseen tokens, of [PAD] …"""
    vocab = SMALL_VOCAB if order == 4 else VOCAB
    train = TRAIN if order < 4 else random_corpus(40, 5, [7, 8, 9])
    model = ngram.KneserNeyLM(train, vocab, order=order)
    model.tune_discounts(VALIDATION if order < 4 else random_corpus(20, 6, [7, 8, 9, 10]))
    contexts = torch.tensor(every_context(vocab, order - 1))                          # (vocab ** (order-1), order-1)
    rows = torch.cat([contexts.repeat_interleave(vocab, 0), torch.arange(vocab).repeat(len(contexts))[:, None]], 1)
    probs = model.target_probs(rows).reshape(len(contexts), vocab)                       # (contexts, vocab)
    assert (probs > 0).all()
    torch.testing.assert_close(probs.sum(-1), torch.ones(len(contexts), dtype=torch.float64), rtol=0, atol=1e-12)
    seen = {tuple(row[:-1]) for row in ngram.contexts_and_targets(train, order)}
    assert 0 < len(seen) < len(contexts), "both seen and unseen contexts must be checked"


def test_kneser_ney_tuning_stays_in_range_and_never_loses_on_validation():
    model = ngram.KneserNeyLM(TRAIN, VOCAB, order=3)
    default = ngram.perplexity(model, VALIDATION)
    history = model.tune_discounts(VALIDATION)
    tuned = ngram.perplexity(model, VALIDATION)
    assert history[0] == pytest.approx(default) and history[-1] == pytest.approx(tuned)
    assert all(b <= a + 1e-12 for a, b in zip(history, history[1:])) and tuned < default
    upper = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert model.discounts.shape == (3, 3)
    assert (model.discounts >= ngram.MIN_DISCOUNT).all() and (model.discounts <= upper).all()
    for level, j in itertools.product(range(3), range(3)):  # no value on a grid over a discount's range does better
        for value in torch.linspace(ngram.MIN_DISCOUNT, upper[j].item(), 21).tolist():
            moved = model.discounts.clone()
            moved[level, j] = value
            other = ngram.KneserNeyLM(TRAIN, VOCAB, order=3, discounts=moved)
            assert ngram.perplexity(other, VALIDATION) > tuned - 1e-3, (level, j, value)


def test_kneser_ney_default_discounts_are_chen_and_goodman_estimates():
    model = ngram.KneserNeyLM(TRAIN, VOCAB, order=3)
    top = Counter(Counter(ngram.contexts_and_targets(TRAIN, 3)).values())  # counts of counts of the trigrams
    y = top[1] / (top[1] + 2 * top[2])
    expected = [min(max(j - (j + 1) * y * top[j + 1] / top[j], ngram.MIN_DISCOUNT), j) for j in (1, 2, 3)]
    torch.testing.assert_close(model.discounts[2], torch.tensor(expected, dtype=torch.float64))


def test_kneser_ney_beats_the_other_count_models_on_text_that_depends_on_context():
    trigram = ngram.InterpolatedTrigramLM(TRAIN, VOCAB)
    trigram.fit_lambdas(VALIDATION)
    kneser_ney = ngram.KneserNeyLM(TRAIN, VOCAB, order=3)
    kneser_ney.tune_discounts(VALIDATION)
    assert ngram.perplexity(kneser_ney, TEST) < ngram.perplexity(trigram, TEST)


def test_kneser_ney_scores_the_rows_of_its_order():
    model = ngram.KneserNeyLM(TRAIN, VOCAB, order=4)
    rows = ngram.contexts_and_targets(TEST, 4)
    assert len(rows) == len(ngram.contexts_and_targets(TEST)) and rows[0][:3] == (BOS_ID,) * 3
    assert [row[1:] for row in rows] == ngram.contexts_and_targets(TEST)  # the triples, one more token back
    expected = math.exp(-model.target_probs(rows).log().mean().item())
    assert ngram.perplexity(model, TEST) == pytest.approx(expected)
    torch.testing.assert_close(model.target_probs([(9, 12, 13, 15)]), model.distribution([BOS_ID, 9, 12, 13])[15:16])
    torch.testing.assert_close(model.distribution([]), model.distribution([BOS_ID, BOS_ID, BOS_ID]))


@pytest.mark.parametrize("call, message", [
    (lambda: ngram.KneserNeyLM(TRAIN, 12), "outside the vocabulary"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB, order=0), "order must be an int >= 1"),
    (lambda: ngram.KneserNeyLM(TRAIN, 512, order=8), "use a smaller order"),
    (lambda: ngram.KneserNeyLM([[BOS_ID, 7.0]], VOCAB), "token ids are ints"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB, discounts=[[0.5, 1.0, 1.5]]), "3 rows"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB, discounts=[[0.5, 1.0, 1.5]] * 2 + [[1.5, 1.0, 1.5]]),
     r"discounts\[2\]\[0\] must lie in \(0.0, 1.0\]"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB, discounts=[[0.0, 1.0, 1.5]] * 3), "must lie in"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB).target_probs([(5, 7)]), "each row must hold 3 ids"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB).target_probs([(5, 7, 99)]), "outside the vocabulary"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB).target_probs(torch.ones(2, 3)), "integer"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB).distribution([5, 20]), "outside the vocabulary"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB).tune_discounts([[7, 8]]), "BOS"),
    (lambda: ngram.KneserNeyLM(TRAIN, VOCAB).tune_discounts(VALIDATION, sweeps=0), "sweeps"),
])
def test_kneser_ney_refuses_bad_input_with_a_fix(call, message):
    with pytest.raises(CourseError, match=message):
        call()


def test_seen_share_counts_the_test_positions_whose_n_gram_training_holds():
    from course_utils.ngram import seen_share

    train = [[BOS_ID, 7, 8, 9, EOS_ID]]
    test = [[BOS_ID, 7, 8, 10, EOS_ID]]             # positions: 7 | 8 | 10 | [EOS]
    assert seen_share(train, test, 1) == 3 / 4      # 7, 8, [EOS] occur; 10 does not
    assert seen_share(train, test, 2) == 2 / 4      # ([BOS], 7) and (7, 8)
    assert seen_share(train, test, 3) == 2 / 4      # ([BOS], [BOS], 7) and ([BOS], 7, 8)
    assert seen_share(train, train, 5) == 1.0
