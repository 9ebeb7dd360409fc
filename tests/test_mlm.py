"""BERT masking and masked-LM metrics (course_utils.mlm): statistics, specials and padding, labels, determinism."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.config import TransformerConfig
from course_utils.data.batching import length_bucketed_batches
from course_utils.losses import masked_lm_loss
from course_utils.mlm import (
    IGNORE_INDEX,
    UnigramBaseline,
    encode_with_masks,
    evaluate_mlm,
    fill_mask,
    logits_at,
    make_mlm_loss_fn,
    mask_tokens,
    masked_accuracy,
)
from course_utils.models import MaskedLanguageModel
from course_utils.tokenization import CLS_ID, MASK_ID, N_SPECIAL_TOKENS, PAD_ID, SEP_ID, BPETokenizer

VOCAB = 500


def padded_batch(n_rows=400, max_real=60, seed=0):
    """Rows ``[CLS] real... [SEP] [PAD]...`` with real lengths 1..max_real; ids >= 7 are real tokens."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_real + 1, (n_rows,), generator=g)
    ids = torch.full((n_rows, max_real + 2), PAD_ID)
    for row, n in enumerate(lengths.tolist()):
        ids[row, 0] = CLS_ID
        ids[row, 1:n + 1] = torch.randint(N_SPECIAL_TOKENS, VOCAB, (n,), generator=g)
        ids[row, n + 1] = SEP_ID
    return ids


def z_score(count, n, p):
    return abs(count - n * p) / math.sqrt(n * p * (1 - p))


def test_proportions_match_bert_within_statistical_tolerance():
    # long rows, so the "at least one per row" rule hardly changes the 15 % rate
    ids = torch.randint(N_SPECIAL_TOKENS, VOCAB, (200, 200))
    generator = torch.Generator().manual_seed(0)
    n_real = n_selected = n_mask = n_random = n_kept = 0
    for _ in range(20):
        inputs, labels = mask_tokens(ids, VOCAB, generator)
        selected = labels != IGNORE_INDEX
        n_real += ids.numel()
        n_selected += int(selected.sum())
        n_mask += int((inputs[selected] == MASK_ID).sum())
        changed = selected & (inputs != ids) & (inputs != MASK_ID)
        n_random += int(changed.sum())
        n_kept += int((selected & (inputs == ids)).sum())
    assert z_score(n_selected, n_real, 0.15) < 4.5, n_selected / n_real
    assert z_score(n_mask, n_selected, 0.80) < 4.5, n_mask / n_selected
    # a random replacement equals the original with probability 1 / n_real_tokens: it then counts as "kept"
    p_same = 1 / (VOCAB - N_SPECIAL_TOKENS)
    assert z_score(n_random, n_selected, 0.10 * (1 - p_same)) < 4.5, n_random / n_selected
    assert z_score(n_kept, n_selected, 0.10 + 0.10 * p_same) < 4.5, n_kept / n_selected


def test_random_replacements_are_real_tokens_spread_over_the_vocabulary():
    ids = torch.randint(N_SPECIAL_TOKENS, VOCAB, (300, 200))
    inputs, labels = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(1), mask_prob=0.0, random_prob=1.0)
    selected = labels != IGNORE_INDEX
    replaced = inputs[selected]
    assert replaced.min() >= N_SPECIAL_TOKENS and replaced.max() < VOCAB
    assert len(replaced.unique()) > 0.9 * (VOCAB - N_SPECIAL_TOKENS)


def test_specials_and_padding_are_never_selected_or_changed():
    ids = padded_batch()
    generator = torch.Generator().manual_seed(2)
    special = ids < N_SPECIAL_TOKENS
    for _ in range(30):
        inputs, labels = mask_tokens(ids, VOCAB, generator)
        assert torch.equal(inputs[special], ids[special])
        assert (labels[special] == IGNORE_INDEX).all()
    # even when every real token is selected
    inputs, labels = mask_tokens(ids, VOCAB, generator, select_prob=1.0)
    assert torch.equal(inputs[special], ids[special])
    assert torch.equal(labels[~special], ids[~special])


def test_labels_hold_the_original_ids_exactly_at_selected_positions():
    ids = padded_batch(seed=3)
    original = ids.clone()
    inputs, labels = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(3))
    assert torch.equal(ids, original), "mask_tokens must not modify its input"
    selected = labels != IGNORE_INDEX
    assert torch.equal(labels[selected], ids[selected])
    # outside the selection the input is untouched; inside, it is [MASK], a real token, or the original
    assert torch.equal(inputs[~selected], ids[~selected])
    assert ((inputs[selected] == MASK_ID) | (inputs[selected] >= N_SPECIAL_TOKENS)).all()
    assert inputs.dtype == labels.dtype == torch.long and inputs.shape == labels.shape == ids.shape


def test_every_row_with_text_gets_at_least_one_selected_token():
    ids = padded_batch(n_rows=500, max_real=3, seed=4)  # short rows: often nothing selected by chance
    for seed in range(5):
        _, labels = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(seed))
        assert ((labels != IGNORE_INDEX).sum(dim=1) >= 1).all()


def test_row_without_real_tokens_stays_untouched():
    ids = torch.tensor([[CLS_ID, SEP_ID, PAD_ID], [CLS_ID, 10, SEP_ID]])
    inputs, labels = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(0))
    assert torch.equal(inputs[0], ids[0]) and (labels[0] == IGNORE_INDEX).all()
    assert labels[1, 1] == 10


def test_same_seed_same_masks_other_seed_other_masks():
    ids = padded_batch(seed=5)
    first = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(42))
    again = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(42))
    other = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(43))
    assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])
    assert not torch.equal(first[1], other[1])


@pytest.mark.parametrize("bad, error, message", [
    (torch.zeros(5, dtype=torch.long), ValueError, "shape"),
    (torch.zeros(2, 5), TypeError, "must be integers"),
    (torch.full((2, 5), VOCAB), ValueError, "disagree on the vocabulary size"),
])
def test_bad_ids_get_a_clear_error(bad, error, message):
    with pytest.raises(error, match=message):
        mask_tokens(bad, VOCAB)


def test_bad_probabilities_get_a_clear_error():
    ids = padded_batch(n_rows=2)
    with pytest.raises(ValueError, match="select_prob"):
        mask_tokens(ids, VOCAB, select_prob=0.0)
    with pytest.raises(ValueError, match="sum to at most 1"):
        mask_tokens(ids, VOCAB, mask_prob=0.8, random_prob=0.3)


def test_loss_and_accuracy_ignore_unselected_positions():
    logits = torch.randn(2, 4, 10)
    labels = torch.full((2, 4), IGNORE_INDEX)
    labels[0, 1], labels[1, 3] = 3, 7
    expected = F.cross_entropy(logits.reshape(-1, 10), labels.reshape(-1), ignore_index=IGNORE_INDEX)
    torch.testing.assert_close(masked_lm_loss(logits, labels), expected)
    logits[0, 1, 3] = 100.0  # right at one selected position; the unselected ones may say anything
    logits[1, 3, 2] = 100.0  # wrong at the other
    assert masked_accuracy(logits, labels) == 0.5
    with pytest.raises(ValueError, match="NaN"):
        masked_lm_loss(logits, torch.full((2, 4), IGNORE_INDEX))
    with pytest.raises(ValueError, match="disagree"):
        masked_lm_loss(logits, labels[:, :3])


def test_unigram_baseline_counts_real_tokens_and_scores_held_out_labels():
    train = [[CLS_ID, 7, 7, 7, 8, SEP_ID], [CLS_ID, 7, 9, SEP_ID, PAD_ID]]
    baseline = UnigramBaseline(train, vocab_size=10)
    assert baseline.most_frequent_id == 7
    assert baseline.probabilities[:N_SPECIAL_TOKENS].sum() == 0
    torch.testing.assert_close(baseline.probabilities.sum().item(), 1.0)
    # add-one smoothing over the 3 real ids: counts 4, 1, 1 -> (5, 2, 2) / 9
    labels = torch.tensor([[7, 8, IGNORE_INDEX, 9]])
    scores = baseline.score(labels)
    assert scores["accuracy"] == pytest.approx(1 / 3)
    expected_nll = -(math.log(5 / 9) + 2 * math.log(2 / 9)) / 3
    assert scores["perplexity"] == pytest.approx(math.exp(expected_nll))


class PerfectOracle(nn.Module):
    """Predicts the true token at every position (it sees the clean ids): accuracy 1, perplexity ≈ 1."""

    def __init__(self, clean_ids):
        super().__init__()
        self.clean_ids = clean_ids
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward(self, ids):
        return F.one_hot(self.clean_ids[: len(ids), : ids.size(1)], VOCAB).float() * 50.0


def test_evaluate_mlm_reports_model_and_baseline_on_the_same_positions():
    ids = padded_batch(n_rows=64, seed=6)
    oracle = PerfectOracle(ids)
    baseline = UnigramBaseline(ids, VOCAB)
    metrics = evaluate_mlm(oracle, [ids], VOCAB, baseline=baseline)
    assert metrics["accuracy"] == 1.0 and metrics["perplexity"] == pytest.approx(1.0, abs=1e-6)
    assert metrics["n_predictions"] > 0 and 0 <= metrics["unigram_accuracy"] < 0.1
    assert metrics == evaluate_mlm(oracle, [ids], VOCAB, baseline=baseline), "same seed → same masks → same numbers"


def test_loss_fn_draws_new_masks_each_call_but_reproducibly():
    ids = padded_batch(n_rows=8, seed=7)
    config = TransformerConfig(vocab_size=VOCAB, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=64)
    model = MaskedLanguageModel(config)
    recorded = []
    model.text_encoder.register_forward_pre_hook(lambda module, args: recorded.append(args[0].clone()))
    for _ in range(2):
        loss_fn = make_mlm_loss_fn(VOCAB, seed=0)
        loss_fn(model, ids)
        loss_fn(model, ids)
    assert not torch.equal(recorded[0], recorded[1]), "dynamic masking: a new mask per batch"
    assert torch.equal(recorded[0], recorded[2]) and torch.equal(recorded[1], recorded[3]), "seeded"


def test_length_bucketed_batches_keep_every_sequence_once_with_little_padding():
    sequences = [[CLS_ID] + [7] * n + [SEP_ID] for n in (5, 1, 9, 3, 7, 2)]
    batches = length_bucketed_batches(sequences, batch_size=2, seed=0)
    assert sorted(int((b != PAD_ID).sum(1)[i]) for b in batches for i in range(len(b))) == [3, 4, 5, 7, 9, 11]
    assert all(b.size(1) - int((b != PAD_ID).sum(1).min()) <= 2 for b in batches)


def test_encode_with_masks_puts_the_mask_id_where_the_text_says():
    tokenizer = BPETokenizer.train(["The function returns a list of values."] * 5, vocab_size=280)
    ids = encode_with_masks(tokenizer, "The [MASK] returns a [MASK].")
    assert ids.shape[0] == 1 and ids[0, 0] == CLS_ID and ids[0, -1] == SEP_ID
    assert int((ids == MASK_ID).sum()) == 2
    # the space before a mask travels with the hidden word, as BPE glues " word" together in training
    assert tokenizer.decode(ids[0]) == "The returns a."
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        encode_with_masks(tokenizer, "no mask here")


def test_fill_mask_returns_k_probabilities_per_mask_in_descending_order():
    tokenizer = BPETokenizer.train(["The function returns a list of values."] * 5, vocab_size=280)

    class Uniformish(nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.linspace(0, 1, tokenizer.vocab_size))

        def forward(self, ids):
            return self.bias.expand(*ids.shape, -1)

    predictions = fill_mask(Uniformish(), tokenizer, "The [MASK] returns a [MASK].", k=3)
    assert len(predictions) == 2 and all(len(p) == 3 for p in predictions)
    probabilities = [p for _, p in predictions[0]]
    assert probabilities == sorted(probabilities, reverse=True) and 0 < sum(probabilities) < 1


@pytest.mark.parametrize("tie_weights", [True, False])
def test_logits_at_selected_positions_equal_the_full_forward_pass(tie_weights):
    config = TransformerConfig(vocab_size=VOCAB, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=64, dropout=0.0)
    model = MaskedLanguageModel(config, tie_weights=tie_weights).eval()
    ids = padded_batch(n_rows=6, max_real=20, seed=8)
    inputs, labels = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(8))
    selected = labels != IGNORE_INDEX
    with torch.no_grad():
        torch.testing.assert_close(logits_at(model, inputs, selected), model(inputs)[selected])
    # the training loss is the mean cross-entropy of those logits
    loss = make_mlm_loss_fn(VOCAB, seed=8)(model, ids)
    generator = torch.Generator().manual_seed(8)
    inputs, labels = mask_tokens(ids, VOCAB, generator)
    torch.testing.assert_close(loss, masked_lm_loss(model(inputs), labels))


def test_unigram_baseline_refuses_ids_outside_the_vocabulary_instead_of_dropping_them():
    with pytest.raises(ValueError, match=r"outside the vocabulary \[0, 10\)"):
        UnigramBaseline([[7, 8, 12]], vocab_size=10)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        UnigramBaseline([[7, -1]], vocab_size=10)
    with pytest.raises(TypeError, match="must be integers"):
        UnigramBaseline(torch.tensor([[7.5, 8.0]]), vocab_size=10)


def test_mask_tokens_accepts_any_integer_dtype():
    ids = padded_batch(n_rows=3).clamp(max=255)  # representable in uint8
    for dtype in (torch.uint8, torch.int16, torch.int32):
        small = mask_tokens(ids.to(dtype), VOCAB, torch.Generator().manual_seed(1))
        reference = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(1))
        assert all(torch.equal(a, b) and a.dtype == torch.long for a, b in zip(small, reference))


# ---------------------------------------------------------------------------- lesson 06: probes, whole-word masking
def test_probe_positions_have_real_neighbours_and_hide_makes_the_views():
    from course_utils.mlm import hide, probe_positions

    sentences = [[CLS_ID] + list(range(10, 10 + n)) + [SEP_ID] for n in (2, 3, 5, 9)]
    ids, targets = probe_positions(sentences, per_sentence=3, seed=0)
    rows = torch.arange(len(targets))
    assert (ids[rows, targets - 1] >= N_SPECIAL_TOKENS).all() and (ids[rows, targets + 1] >= N_SPECIAL_TOKENS).all()
    assert len(targets) == 1 + 3 + 3            # 2 real tokens: no position with real tokens on both sides
    both = hide(ids, targets, (-1, 1))
    assert (both != ids).sum() == 3 * len(targets) and (both[rows, targets] == MASK_ID).all()
    assert torch.equal(hide(ids, targets), ids.scatter(1, targets[:, None], MASK_ID))
    assert torch.equal(probe_positions(sentences, 3, seed=0)[1], targets)


def test_probe_accuracy_of_the_counts_falls_to_the_unigram_without_neighbours():
    from course_utils.mlm import NeighbourCountBaseline, hide, probe_accuracy, probe_positions

    sentences = [[CLS_ID, 7 + i % 5, 20 + i % 5, 30 + i % 5, 40, SEP_ID] for i in range(50)]
    counts = NeighbourCountBaseline(sentences, 60)
    ids, targets = probe_positions(sentences, per_sentence=2, seed=1)
    assert probe_accuracy(counts, hide(ids, targets), ids, targets) == 1.0     # the middle token follows from its pair
    hidden = probe_accuracy(counts, hide(ids, targets, (-1, 1)), ids, targets)
    expected = (ids[torch.arange(len(targets)), targets] == counts.unigram.most_frequent_id).float().mean().item()
    assert hidden == pytest.approx(expected)


def test_accuracy_at_mask_counts_only_positions_that_show_mask():
    from course_utils.mlm import accuracy_at_mask

    logits = torch.zeros(1, 4, 10)
    logits[0, [0, 1, 2], [7, 8, 9]] = 1.0                       # right at positions 0-2, wrong at 3
    inputs = torch.tensor([[MASK_ID, 8, MASK_ID, MASK_ID]])     # position 1 shows its own id (kept)
    labels = torch.tensor([[7, 8, 9, 7]])
    assert accuracy_at_mask(logits, inputs, labels) == pytest.approx(2 / 3)
    assert masked_accuracy(logits, labels) == pytest.approx(3 / 4)
    with pytest.raises(ValueError, match="no labelled position shows"):
        accuracy_at_mask(logits, torch.full((1, 4), 9), labels)


def test_whole_word_mask_chooses_words_whole_at_the_asked_rate():
    from course_utils.mlm import whole_word_mask

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(N_SPECIAL_TOKENS, 50, (3000, 14), generator=generator)
    ids[:, 0], ids[:, -1] = CLS_ID, SEP_ID
    starts = torch.zeros_like(ids, dtype=torch.bool)
    starts[:, 1:13:3] = True                                    # 4 words of 3 pieces, then [SEP]
    ids_before = ids.clone()
    inputs, labels = whole_word_mask(ids, starts, 50, torch.Generator().manual_seed(1), select_prob=0.3)
    assert torch.equal(ids, ids_before)
    chosen = labels != IGNORE_INDEX
    assert not chosen[:, [0, -1]].any()
    words = chosen[:, 1:13].reshape(3000, 4, 3)
    assert (words.all(-1) | ~words.any(-1)).all()              # all pieces of a word, or none
    assert chosen[:, 1:].any(1).all()                          # every row got a word
    expected = 0.3 + 0.7 ** 4 / 4                              # 4 words per row, one forced where none drew
    assert abs(chosen[:, 1:13:3].float().mean().item() - expected) < 0.02
    shown = inputs[chosen]
    assert abs((shown == MASK_ID).float().mean().item() - 0.8) < 0.02
    assert torch.equal(labels[chosen], ids[chosen])
    again = whole_word_mask(ids, starts, 50, torch.Generator().manual_seed(1), select_prob=0.3)
    assert torch.equal(again[0], inputs) and torch.equal(again[1], labels)


def test_word_starts_follow_the_leading_space():
    from course_utils.mlm import word_starts

    tokenizer = BPETokenizer.train(["the cat sat on the mat"] * 20, vocab_size=270)
    ids = torch.tensor([[CLS_ID] + tokenizer.encode("the cats sat") + [SEP_ID, PAD_ID]])
    starts = word_starts(tokenizer, ids)
    words = [tokenizer.token_str(int(t)) for t, s in zip(ids[0], starts[0]) if s]
    assert words[0].startswith("the") or words[0] == "t" and all(w.startswith(" ") for w in words[1:])
    assert not starts[0, 0] and not starts[0, -2:].any()
