"""Lesson 06's count baselines and whole-word fill-mask (course_utils.mlm): backoff order, scoring positions,
hidden words, beam search."""
import pytest
import torch

from course_utils import mlm
from course_utils.config import TransformerConfig
from course_utils.data.batching import length_bucketed_batches
from course_utils.models import MaskedLanguageModel
from course_utils.tokenization import CLS_ID, MASK_ID, SEP_ID, BPETokenizer

A, B, C, D, E = 10, 11, 12, 13, 14
VOCAB = 20
TRAIN = [[CLS_ID, A, B, C, SEP_ID], [CLS_ID, A, B, C, SEP_ID], [CLS_ID, A, D, E, SEP_ID],
         [CLS_ID, E, D, E, SEP_ID], [CLS_ID, C, D, E, SEP_ID]]


def test_neighbour_counts_use_the_pair_then_left_then_right_then_unigram():
    baseline = mlm.NeighbourCountBaseline(TRAIN, VOCAB)
    assert baseline.predict(A, C) == B            # (A, C) -> B twice
    assert baseline.predict(A, E) == D            # (A, E) -> D once
    assert baseline.predict(A, A) == B            # pair unseen: left A -> B twice, D once
    assert baseline.predict(MASK_ID, E) == D      # left unknown: right E -> D three times
    assert baseline.predict(MASK_ID, MASK_ID) == baseline.unigram.most_frequent_id
    assert baseline.unigram.most_frequent_id in (D, E)


def test_one_sided_bigram_ignores_the_right_neighbour():
    bigram = mlm.NeighbourCountBaseline(TRAIN, VOCAB, use_right=False)
    assert bigram.predict(A, E) == B              # left A -> B (twice) wins, whatever is on the right
    assert bigram.predict(MASK_ID, C) == bigram.unigram.most_frequent_id
    assert not bigram.both and not bigram.right


def test_log_probabilities_are_a_distribution_that_prefers_the_counted_token():
    baseline = mlm.NeighbourCountBaseline(TRAIN, VOCAB)
    log_p = baseline.log_probabilities(A, C)
    assert log_p.shape == (VOCAB,)
    assert torch.isclose(log_p.exp().sum(), torch.tensor(1.0, dtype=log_p.dtype))
    assert int(log_p.argmax()) == B and torch.isfinite(log_p[D])


def random_rows(n=300, length=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = torch.randint(7, VOCAB, (n, length), generator=g)
    rows[:, 0], rows[:, -1] = CLS_ID, SEP_ID
    return rows


def test_evaluate_at_masks_scores_the_positions_evaluate_mlm_scores():
    rows = random_rows()
    train, held_out = rows[:200].tolist(), [rows[200:250], rows[250:]]
    torch.manual_seed(0)
    model = MaskedLanguageModel(TransformerConfig(vocab_size=VOCAB, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                                                  max_len=16, dropout=0.0))
    unigram = mlm.UnigramBaseline(train, VOCAB)
    reference = mlm.evaluate_mlm(model, held_out, VOCAB, baseline=unigram)
    results = mlm.evaluate_at_masks(model, held_out, VOCAB, {"unigram": unigram,
                                                             "neighbour": mlm.NeighbourCountBaseline(train, VOCAB)})
    assert results["model"]["n_predictions"] == reference["n_predictions"]
    assert results["model"]["accuracy"] == pytest.approx(reference["accuracy"])
    assert results["unigram"]["accuracy"] == pytest.approx(reference["unigram_accuracy"])
    assert 0 < results["model"]["n_mask"] < results["model"]["n_predictions"]


def test_neighbour_counts_learn_a_deterministic_pattern_that_unigram_cannot():
    # each token is followed by its successor mod 10: the left neighbour gives the answer away
    rows = [[CLS_ID] + [7 + (start + i) % 10 for i in range(10)] + [SEP_ID] for start in range(10)] * 20
    batches = length_bucketed_batches(rows[:40], 20, shuffle=False)
    results = mlm.evaluate_at_masks(None, batches, VOCAB, {
        "unigram": mlm.UnigramBaseline(rows, VOCAB), "neighbour": mlm.NeighbourCountBaseline(rows, VOCAB)})
    assert results["neighbour"]["mask_accuracy"] > 0.95
    assert results["unigram"]["mask_accuracy"] < 0.3


SENTENCES = ["The function returns a list of strings.", "This module provides functions for working with files.",
             "If the file does not exist, an exception is raised.", "The default value is none of those."] * 5


@pytest.fixture(scope="module")
def tokenizer():
    return BPETokenizer.train(SENTENCES, vocab_size=300)


def test_hidden_words_are_whole_words_hidden_as_all_their_pieces(tokenizer):
    examples = mlm.sample_hidden_words(tokenizer, SENTENCES[:4], 4, seed=1)
    for example in examples:
        assert example.ids[0] == CLS_ID and example.ids[-1] == SEP_ID
        assert all(t == MASK_ID for t in example.ids[example.start:example.end])
        assert example.word.startswith(" ") and example.word[1:].isalpha()
        assert example.text.replace(" [MASK]", example.word) in SENTENCES
    again = mlm.sample_hidden_words(tokenizer, SENTENCES[:4], 4, seed=1)
    assert [e.text for e in again] == [e.text for e in examples]
    with pytest.raises(ValueError, match="hideable"):
        mlm.sample_hidden_words(tokenizer, SENTENCES[:4], 5)


def test_fill_word_needs_every_piece_and_ranks_the_oracle_first(tokenizer):
    example = next(e for e in mlm.sample_hidden_words(tokenizer, SENTENCES[:4], 4, seed=0) if e.end - e.start > 1)
    truth = tokenizer.encode(example.text.replace(" [MASK]", example.word))[example.start - 1:example.end - 1]

    def oracle(inputs, position):          # sure of the true piece at every position
        log_p = torch.full((inputs.size(0), tokenizer.vocab_size), -20.0)
        log_p[:, truth[position - example.start]] = 0.0
        return log_p

    guesses = mlm.fill_word(oracle, tokenizer, example, k=5)
    assert guesses[0][0] == example.word
    assert len({w for w, _ in guesses}) == len(guesses)
    assert all(w.startswith(" ") for w, _ in guesses)
    assert mlm.whole_word_accuracy(oracle, tokenizer, [example])["top1"] == 1.0

    def first_piece_only(inputs, position):  # right first piece, wrong rest: never a whole-word hit
        log_p = oracle(inputs, position)
        if position > example.start:
            log_p[:, truth[position - example.start]] = -30.0
        return log_p

    assert mlm.whole_word_accuracy(first_piece_only, tokenizer, [example], k=1)["top1"] == 0.0
