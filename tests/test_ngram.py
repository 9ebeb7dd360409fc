"""Count baselines of lesson 08: proper distributions, tuning that helps, and the same scored positions as the
Transformer's evaluation."""
import math
import random

import pytest
import torch

from course_utils import ngram
from course_utils.config import TransformerConfig
from course_utils.data.lm_data import lm_batches
from course_utils.errors import CourseValueError
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
