"""The English → German number data: correct words, balanced lengths, a leak-free seeded split, tokenization."""
from collections import Counter

import pytest
import torch

from course_utils.data.numbers import (check_number, digit_length, encode_pairs, english_from_user_text,
                                       english_words, german_words, make_number_split, round_numbers,
                                       train_tokenizers)
from course_utils.tokenization import BOS_ID, EOS_ID, PAD_ID


@pytest.fixture(scope="module")
def split():
    return make_number_split(train_per_length=300, test_per_length=40, max_digits=5, seed=0)


@pytest.fixture(scope="module")
def tokenizers(split):
    return train_tokenizers(split.train, max_texts=600)


def test_words_in_both_languages():
    assert english_words(342) == "three hundred and forty-two"
    assert german_words(342) == "dreihundertzweiundvierzig"
    assert german_words(21) == "einundzwanzig"  # units before tens: the reordering the model must learn
    assert german_words(0) == "null"
    assert [digit_length(n) for n in (0, 9, 10, 999, 100_000)] == [1, 1, 2, 3, 6]


def test_round_numbers():
    assert round_numbers(3) == list(range(10)) + [10, 20, 30, 40, 50, 60, 70, 80, 90] + [100 * d for d in range(1, 10)]


def test_train_and_test_never_share_a_number(split):
    assert split.train_numbers.isdisjoint(split.test_numbers)
    assert len(split.test) == len(split.test_numbers)  # no duplicate test numbers


def test_every_digit_length_has_the_same_weight_in_training(split):
    per_length = Counter(digit_length(p.number) for p in split.train)
    assert sorted(per_length) == [1, 2, 3, 4, 5]
    assert set(per_length.values()) == {300}


def test_small_and_round_numbers_are_always_trained_on(split):
    assert set(round_numbers(5)) <= split.train_numbers
    assert split.test_numbers.isdisjoint(round_numbers(5))


def test_test_set_per_length(split):
    per_length = Counter(digit_length(n) for n in split.test_numbers)
    assert per_length == {2: 16, 3: 40, 4: 40, 5: 40}  # two-digit: a fifth of the 81 non-round ones


def test_pairs_are_correct_translations(split):
    for pair in split.train[:50] + split.test[:50]:
        assert pair.english == english_words(pair.number)
        assert pair.german == german_words(pair.number)


def test_split_is_deterministic_and_seed_dependent(split):
    again = make_number_split(train_per_length=300, test_per_length=40, max_digits=5, seed=0)
    assert again.train == split.train and again.test == split.test
    other = make_number_split(train_per_length=300, test_per_length=40, max_digits=5, seed=1)
    assert other.test_numbers != split.test_numbers


def test_bpe_splits_compounds_into_morphemes(tokenizers, split):
    _, target = tokenizers
    pieces = target.tokenize("dreihundertzweiundvierzig")
    assert len(pieces) > 1 and "".join(pieces) == "dreihundertzweiundvierzig"
    assert any("hundert" in piece and len(piece) < len("dreihundertzweiundvierzig") for piece in pieces)
    for pair in split.test:  # round trip on numbers the tokenizer never saw
        assert target.decode(target.encode(pair.german)) == pair.german


def test_source_vocabulary_is_the_number_words(tokenizers):
    source, _ = tokenizers
    assert source.tokenize("Forty-Two") == ["forty", "-", "two"]
    assert {"hundred", "thousand", "and", "zero", "nineteen"} <= set(source.piece_to_id)


def test_encode_pairs_pads_and_wraps_targets(tokenizers, split):
    source, target = tokenizers
    pairs = split.test[:5]
    src_ids, tgt_ids = encode_pairs(pairs, source, target)
    assert src_ids.dtype == tgt_ids.dtype == torch.long
    assert src_ids.shape[0] == tgt_ids.shape[0] == 5
    assert (tgt_ids[:, 0] == BOS_ID).all()
    for row, pair in zip(tgt_ids.tolist(), pairs):
        row = [i for i in row if i != PAD_ID]
        assert row[-1] == EOS_ID and target.decode(row) == pair.german
    for row, pair in zip(src_ids.tolist(), pairs):
        assert source.decode([i for i in row if i != PAD_ID]) == " ".join(source.tokenize(pair.english))


def test_user_text_digits_or_words(tokenizers):
    source, _ = tokenizers
    assert english_from_user_text(" 12,005 ", source) == "twelve thousand and five"
    assert english_from_user_text("Forty-Two", source) == "forty-two"
    with pytest.raises(ValueError, match="unknown English word"):
        english_from_user_text("forty-two apples", source)
    with pytest.raises(ValueError, match="0 .. 999,999"):
        english_from_user_text("1000000", source)
    with pytest.raises(ValueError, match="type a number"):
        english_from_user_text("   ", source)


def test_bad_arguments_name_the_fix():
    with pytest.raises(TypeError, match="int"):
        check_number(3.5)
    with pytest.raises(ValueError, match="0 .. 999"):
        check_number(1000, max_digits=3)
    with pytest.raises(ValueError, match="max_digits"):
        make_number_split(max_digits=1)
    with pytest.raises(ValueError, match="train_per_length"):
        make_number_split(train_per_length=5)
    with pytest.raises(ValueError, match="no pairs"):
        train_tokenizers([])
