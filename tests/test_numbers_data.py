"""The English → German number data: correct words, a split that matches use, tokenization, and the grammar that
reads what a learner types."""
import random
from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.data.numbers import (
    LENGTH_CATEGORIES,
    STRESS_CATEGORIES,
    STRUCTURAL_TESTS,
    category_test,
    check_number,
    digit_length,
    draw_held_out,
    encode_pairs,
    english_from_user_text,
    english_words,
    german_words,
    make_number_split,
    make_pair,
    parse_number,
    round_numbers,
    sample_training_number,
    stress_categories,
    structure_of,
    train_tokenizers,
)
from course_utils.errors import CourseTypeError, CourseValueError
from course_utils.tokenization import BOS_ID, EOS_ID, PAD_ID


@pytest.fixture(scope="module")
def split():
    return make_number_split(n_train=3000, n_test=2000, stress_per_category=100, seed=0)


@pytest.fixture(scope="module")
def tokenizers(split):
    return train_tokenizers(split.train, max_texts=600)


# --- the words ------------------------------------------------------------------------------------------------------

def test_words_in_both_languages():
    assert english_words(342) == "three hundred and forty-two"
    assert german_words(342) == "dreihundertzweiundvierzig"
    assert german_words(21) == "einundzwanzig"  # units before tens: the reordering the model must learn
    assert german_words(0) == "null"
    assert [digit_length(n) for n in (0, 9, 10, 999, 100_000)] == [1, 1, 2, 3, 6]


def test_round_numbers():
    assert round_numbers(3) == list(range(10)) + [10, 20, 30, 40, 50, 60, 70, 80, 90] + [100 * d for d in range(1, 10)]


def test_make_pair_refuses_numbers_outside_the_task():
    assert make_pair(999_999).german.endswith("neunundneunzig")
    with pytest.raises(CourseValueError, match=r"0 \.\. 999,999.*got 1,000,000"):
        make_pair(1_000_000)  # "million" is not a word of the task: refused, not encoded as an unknown token
    with pytest.raises(CourseTypeError, match="parse_number"):
        make_pair("342")


# --- the structural categories --------------------------------------------------------------------------------------

@pytest.mark.parametrize("number, categories", [
    (11_000, ["teen thousands", "round", "teen round thousands", "round thousands"]), (16_512, ["teen thousands"]),
    (417_373, ["teen thousands"]), (800_232, ["inner zero", "whole hundred thousands"]), (435_012, ["inner zero"]),
    (305, ["inner zero"]), (4_012, ["inner zero"]), (430_000, ["round", "round thousands"]),
    (7_050, ["inner zero", "round"]), (100_001, ["inner zero", "round", "near round", "whole hundred thousands"]),
    (299_999, ["near round"]), (45_003, ["inner zero", "near round"]), (323_323, ["repeated digits"]),
    (4_444, ["repeated digits"]), (999_999, ["near round", "repeated digits"]), (57_384, []), (5_000, []),
    (342, []), (12, []), (113_000, ["teen thousands", "teen round thousands", "round thousands"]),
    (216_000, ["teen thousands", "teen round thousands", "round thousands"]), (110_000, ["round", "round thousands"]),
    (999_000, ["round thousands"]), (700_000, []), (300_050, ["inner zero", "round", "whole hundred thousands"]),
    (700_420, ["inner zero", "whole hundred thousands"]),
])
def test_structure_of_numbers(number, categories):
    assert structure_of(number) == categories


def test_every_stress_category_has_a_test():
    assert set(STRESS_CATEGORIES) == set(STRUCTURAL_TESTS) | set(LENGTH_CATEGORIES)
    assert category_test("4 digits")(1234) and not category_test("4 digits")(123)
    with pytest.raises(CourseValueError, match="stress category"):
        category_test("easy")


# --- the split ------------------------------------------------------------------------------------------------------

def test_no_held_out_number_is_ever_trained_on(split):
    assert split.train_numbers.isdisjoint(split.held_out_numbers)
    assert len(split.test) == len(split.test_numbers) == 2000  # no duplicate test numbers


def test_stress_categories_are_full_and_hold_what_they_say(split):
    assert list(split.stress) == list(STRESS_CATEGORIES)
    few = {"2 digits": 16, "teen round thousands": 18}  # a fifth of 81 two-digit numbers; two of each teen's ten
    for name, pairs in split.stress.items():
        numbers = [pair.number for pair in pairs]
        assert len(numbers) == len(set(numbers)) == few.get(name, 100), name
        assert all(category_test(name)(n) for n in numbers), name
        assert split.test_numbers.isdisjoint(numbers), name


def _thousands_part_words(pair):
    """The German of a number's thousands part, read off the German words: 113,000 → einhundertdreizehn."""
    return pair.german[: pair.german.index("tausend")]


# Each new category against its definition written out in digits and in German, not through the package's tests.
DEFINITIONS = {
    "round thousands": lambda pair: (pair.german.endswith("tausend") and pair.number % 1000 == 0
                                     and len(str(pair.number // 1000).replace("0", "")) >= 2),
    "teen round thousands": lambda pair: (pair.german.endswith("tausend") and pair.number % 1000 == 0
                                          and 11 <= pair.number // 1000 % 100 <= 19
                                          and _thousands_part_words(pair).endswith(("elf", "zwölf", "zehn"))),
    "whole hundred thousands": lambda pair: (str(pair.number)[1:3] == "00" and len(str(pair.number)) == 6
                                             and not str(pair.number).endswith("000")
                                             and "hunderttausend" in pair.german
                                             and not pair.german.endswith("tausend")),
}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_round_thousand_categories_hold_their_definition_and_cover_the_structure(seed):
    split = make_number_split(n_train=2000, n_test=500, stress_per_category=150, seed=seed)
    assert split.train_numbers.isdisjoint(split.held_out_numbers)
    for name, holds in DEFINITIONS.items():
        assert split.stress[name] and all(holds(pair) for pair in split.stress[name]), name
        assert split.train_numbers.isdisjoint(pair.number for pair in split.stress[name]), name
    teen_round = [pair.number // 1000 for pair in split.stress["teen round thousands"]]
    assert Counter(part % 100 for part in teen_round) == {teen: 2 for teen in range(11, 20)}   # every teen, twice
    assert len({part // 100 for part in teen_round}) >= 5   # with and without "hundert" before the teen
    round_parts = [pair.number // 1000 for pair in split.stress["round thousands"]]
    assert len(round_parts) == 150 and {part // 100 for part in round_parts} == set(range(10))  # 11–99 and X01–X99
    assert any(11 <= part % 100 <= 19 for part in round_parts) and any(part % 10 == 0 for part in round_parts)
    whole = split.stress["whole hundred thousands"]
    assert {pair.number // 100_000 for pair in whole} == set(range(1, 10))          # every whole hundred
    assert {digit_length(pair.number % 1000) for pair in whole} == {1, 2, 3}         # 300,005, 300,050, 300,420


def test_round_thousand_categories_are_drawn_from_their_whole_population():
    # 972 round thousands below a million (90 teen ones): the stress sets of many seeds reach most of them, and
    # never more than a fifth of the teen round thousands of one teen at once
    population = [n for n in range(1000, 10 ** 6, 1000) if len(str(n // 1000).replace("0", "")) >= 2]
    assert len(population) == 972 and sum(11 <= n // 1000 % 100 <= 19 for n in population) == 90
    seen: set[int] = set()
    for seed in range(8):
        split = make_number_split(n_train=200, n_test=200, stress_per_category=150, seed=seed)
        seen |= {pair.number for name in ("round thousands", "teen round thousands") for pair in split.stress[name]}
    assert seen <= set(population) and len(seen) > 0.6 * len(population)
    assert {n // 1000 % 100 for n in seen} >= set(range(11, 20)) | {21, 30, 99}


def test_fresh_held_out_draws_skip_the_training_numbers(split):
    test, stress = draw_held_out(n_test=500, stress_per_category=100, seed=7, exclude=split.train_numbers)
    numbers = [pair.number for pair in test] + [pair.number for pairs in stress.values() for pair in pairs]
    assert len(numbers) == len(set(numbers)) and split.train_numbers.isdisjoint(numbers)
    assert list(stress) == list(STRESS_CATEGORIES) and all(category_test(name)(pair.number)
                                                            for name, pairs in stress.items() for pair in pairs)
    assert 0.85 < sum(digit_length(pair.number) == 6 for pair in test) / 500 < 0.95   # still uniform
    again, _ = draw_held_out(n_test=500, stress_per_category=100, seed=7, exclude=split.train_numbers)
    assert again == test and set(numbers) != split.held_out_numbers
    with pytest.raises(CourseTypeError, match="exclude"):
        draw_held_out(exclude="123")
    with pytest.raises(CourseTypeError, match="int numbers"):
        draw_held_out(exclude=[1.5])


def test_a_smaller_range_keeps_only_the_categories_it_has():
    small = make_number_split(n_train=500, n_test=100, stress_per_category=20, max_digits=4, seed=0)
    assert list(small.stress) == list(stress_categories(4)) == ["inner zero", "round", "near round", "2 digits",
                                                                "3 digits", "4 digits"]
    assert all(n < 10_000 for n in small.train_numbers | small.held_out_numbers)
    assert small.train_numbers.isdisjoint(small.held_out_numbers)
    with pytest.raises(CourseValueError, match="at most 194 held-out numbers"):
        make_number_split(n_test=2000, max_digits=3)


def test_uniform_test_set_looks_uniform(split):
    lengths = Counter(digit_length(n) for n in split.test_numbers)
    assert 0.86 < lengths[6] / 2000 < 0.94  # 900 000 of the million numbers have six digits
    assert 0.07 < lengths[5] / 2000 < 0.13
    assert split.test_numbers.isdisjoint(round_numbers(6))


def test_vocabulary_numbers_are_always_trained_on(split):
    assert set(round_numbers(6)) <= split.train_numbers


def test_training_stream_covers_every_length_and_structure(split):
    lengths = Counter(digit_length(p.number) for p in split.train)
    assert set(lengths) == {1, 2, 3, 4, 5, 6}
    assert lengths[6] > lengths[5] > lengths[4] > lengths[3] > lengths[2] > lengths[1]
    structures = Counter(name for p in split.train for name in structure_of(p.number))
    for name in ("teen thousands", "inner zero", "round", "near round", "round thousands"):
        assert structures[name] / len(split.train) > 0.02, (name, structures)
    assert structures["teen round thousands"] / len(split.train) > 0.003, structures   # about 90 of 8000


def test_sampler_draws_structures_far_more_often_than_uniform_sampling():
    rng = random.Random(0)
    drawn = [sample_training_number(rng) for _ in range(5000)]
    uniform = [rng.randrange(10 ** 6) for _ in range(5000)]
    def count(name, numbers):
        return sum(map(STRUCTURAL_TESTS[name], numbers))

    for name in ("round", "round thousands", "repeated digits", "whole hundred thousands"):
        assert count(name, drawn) > 2 * count(name, uniform), name
    assert count("near round", drawn) > 1.3 * count("near round", uniform)  # 1.4–1.6×: some end in 000 instead
    assert count("round thousands", drawn) > 0.03 * len(drawn)   # one number in a thousand ends in 000 uniformly
    long_drawn, long_uniform = [n for n in drawn if n >= 11_000], [n for n in uniform if n >= 11_000]
    assert count("teen thousands", long_drawn) / len(long_drawn) > 1.5 * count("teen thousands", long_uniform) / len(
        long_uniform)
    assert count("inner zero", drawn) > 1.1 * count("inner zero", uniform)  # already a third of uniform numbers


def test_pairs_are_correct_translations(split):
    for pair in split.train[:50] + split.test[:50] + split.stress["inner zero"][:20]:
        assert pair.english == english_words(pair.number)
        assert pair.german == german_words(pair.number)


def test_split_is_deterministic_and_seed_dependent(split):
    again = make_number_split(n_train=3000, n_test=2000, stress_per_category=100, seed=0)
    assert again.train == split.train and again.test == split.test and again.stress == split.stress
    other = make_number_split(n_train=3000, n_test=2000, stress_per_category=100, seed=1)
    assert other.test_numbers != split.test_numbers


# --- tokenization ---------------------------------------------------------------------------------------------------

def test_bpe_splits_compounds_into_morphemes(tokenizers, split):
    _, target = tokenizers
    pieces = target.tokenize("dreihundertzweiundvierzig")
    assert len(pieces) > 1 and "".join(pieces) == "dreihundertzweiundvierzig"
    assert any("hundert" in piece and len(piece) < len("dreihundertzweiundvierzig") for piece in pieces)
    for pair in split.test[:300]:  # round trip on numbers the tokenizer never saw
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


def test_bad_arguments_name_the_fix():
    with pytest.raises(CourseTypeError, match="int"):
        check_number(3.5)
    with pytest.raises(CourseValueError, match=r"0 \.\. 999"):
        check_number(1000, max_digits=3)
    with pytest.raises(CourseValueError, match="max_digits"):
        make_number_split(max_digits=7)
    with pytest.raises(CourseValueError, match="n_train"):
        make_number_split(n_train=0)
    with pytest.raises(CourseValueError, match="empty list"):
        train_tokenizers([])


# --- the grammar of typed numbers -----------------------------------------------------------------------------------

ACCEPTED = [
    # digits, with and without thousands separators
    ("0", 0), ("7", 7), ("342", 342), ("12005", 12_005), ("12,005", 12_005), ("999,999", 999_999),
    ("1,000", 1000), (" 57384 ", 57_384), ("007", 7),
    # num2words' own English
    ("zero", 0), ("seven", 7), ("nineteen", 19), ("twenty-one", 21), ("three hundred and forty-two", 342),
    ("one thousand and one", 1001), ("fifteen thousand, one hundred", 15_100),
    ("fifty-seven thousand, three hundred and eighty-four", 57_384),
    ("nine hundred and ninety-nine thousand, nine hundred and ninety-nine", 999_999),
    ("one hundred and one thousand", 101_000), ("eight hundred thousand, two hundred and thirty-two", 800_232),
    # without "and" or the comma
    ("three hundred forty-two", 342), ("one thousand one", 1001), ("fifteen thousand one hundred", 15_100),
    ("twelve thousand five", 12_005), ("one hundred two thousand", 102_000),
    ("four hundred thirty-five thousand twelve", 435_012), ("two thousand and three hundred", 2300),
    # tens and units joined by a space, or a spaced hyphen
    ("forty two", 42), ("forty - two", 42), ("ninety nine thousand ninety nine", 99_099),
    # "a hundred", "a thousand"
    ("a hundred", 100), ("a hundred and five", 105), ("a thousand", 1000), ("a thousand and one", 1001),
    ("a hundred thousand", 100_000),
    # "N hundred" on its own, 1,100–9,999
    ("eleven hundred", 1100), ("twelve hundred", 1200), ("ninety-nine hundred", 9900),
    ("nineteen hundred and ninety-nine", 1999), ("forty two hundred", 4200), ("fifteen hundred five", 1505),
    # any letter case, any spacing
    ("Forty-Two", 42), ("FORTY TWO", 42), ("Twelve Thousand And Five", 12_005), ("  three   hundred  ", 300),
    ("One Thousand, Two Hundred", 1200),
]


@pytest.mark.parametrize("text, number", ACCEPTED)
def test_accepted_forms(text, number):
    assert parse_number(text) == number


@pytest.mark.parametrize("text", ["twelve hundred", "one thousand two hundred", "1,200", "One Thousand, Two Hundred"])
def test_every_form_is_normalised_to_num2words_english(text):
    assert english_from_user_text(text) == "one thousand, two hundred"


REFUSED = [
    # empty
    ("", "nothing was typed"), ("   ", "nothing was typed"),
    # decimals and fractions
    ("3.5", "decimal"), ("0.5", "decimal"), ("1,000.5", "decimal"), (".5", "decimal"),
    ("three point five", "decimal or a fraction"), ("one and a half", "decimal or a fraction"),
    # lists and badly grouped digits
    ("1,2,3", "not one number"), ("12,34", "not one number"), ("1,0000", "not one number"),
    ("012,345", "not one number"), ("12 345", "not one number"), ("1, 2", "not one number"),
    ("one, two, three", "comma"), ("five, six", "comma"),
    # out of range
    ("1000000", "out of range"), ("1,000,000", "out of range"), ("one million", "beyond the range"),
    ("a million", "beyond the range"), ("twelve hundred thousand", "out of range"),
    ("nineteen hundred and five thousand", "out of range"), ("-5", "negative"), ("minus five", "negative"),
    ("negative three", "negative"),
    # repeated scale words
    ("thousand thousand", "repeated scale word"), ("a thousand thousand", "repeated scale word"),
    ("one thousand thousand", "repeated scale word"), ("one hundred hundred", "cannot repeat"),
    ("hundred hundred hundred", "repeated scale word"), ("two thousand three hundred thousand", "repeated scale"),
    # misplaced scale words
    ("hundred", "needs a number before it"), ("thousand", "needs a number before it"),
    ("hundred five", "needs a number before it"), ("and hundred", "out of place"),
    ("five thousand hundred", "cannot follow 'thousand'"), ("one hundred thousand hundred", "cannot repeat"),
    ("twenty hundred", "is 2,000"), ("ten hundred", "is 1,000"),
    ("two thousand twelve hundred", "two ways of saying thousands"),
    # misplaced "and"
    ("and and and", "'and' is out of place"), ("and five", "'and' is out of place"), ("five and", "out of place"),
    ("forty and two", "out of place"), ("one hundred and", "must be followed"), ("one thousand and", "at the end"),
    ("one hundred and and five", "must be followed"),
    # number words in a row
    ("seven seven seven", "two number words in a row"), ("one two", "in a row"), ("twenty thirty", "in a row"),
    ("eleven five", "in a row"), ("forty-two three", "in a row"), ("zero five", "stands alone"),
    ("five zero", "in a row"), ("nineteen ninety-nine", "in a row"),
    # hyphens and "a" out of place
    ("forty-", "comes a unit word"), ("twenty-ten", "comes a unit word"), ("eleven-one", "hyphen"),
    ("-five", "hyphen"), ("forty-two-three", "hyphen"), ("a five", "'a' must be followed"),
    ("one thousand a hundred", "out of place"),
    # mixed, unknown and ordinal words
    ("5 thousand", "mixed"), ("twelve 5", "mixed"), ("forty-two apples", "unknown word 'apples'"),
    ("fourty", "did you mean 'forty'"), ("fourth", "ordinal"), ("twentieth", "ordinal"), ("first", "ordinal"),
    ("one & two", "unknown word '&'"),
]


@pytest.mark.parametrize("text, reason", REFUSED)
def test_refused_forms_say_why_and_how_to_fix(text, reason):
    with pytest.raises(CourseValueError) as refused:
        parse_number(text)
    message = str(refused.value)
    assert reason in message, message
    assert message.startswith("expected a whole number from 0 to 999,999") and f"got {text!r}" in message
    assert "Fix: " in message


def test_a_source_tokenizer_must_know_every_word():
    small = make_number_split(n_train=300, n_test=50, stress_per_category=10, max_digits=3, seed=0)
    source, _ = train_tokenizers(small.train, max_texts=200)
    assert english_from_user_text("forty two", source, max_digits=3) == "forty-two"
    big_source, _ = train_tokenizers(make_number_split(n_train=300, n_test=50, stress_per_category=10).train)
    assert english_from_user_text("12,005", big_source) == "twelve thousand and five"
    with pytest.raises(CourseValueError, match="tokenizer knows, got \\[.*'thousand'\\]"):
        english_from_user_text("12,005", source)


def test_a_smaller_range_is_enforced():
    assert parse_number("999", max_digits=3) == 999
    with pytest.raises(CourseValueError, match="from 0 to 999: .*1,000 is out of range"):
        parse_number("one thousand", max_digits=3)


def test_non_text_is_refused_with_a_type_error():
    with pytest.raises(CourseTypeError, match="str"):
        parse_number(342)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.integers(0, 999_999))
def test_round_trip_num2words_and_digits(number):
    english = english_words(number)
    assert parse_number(english) == number
    assert parse_number(f"{number:,}") == number and parse_number(str(number)) == number
    assert parse_number(english.upper()) == number
    assert parse_number(english.replace(" and ", " ").replace(",", "").replace("-", " ")) == number


def test_round_trip_on_every_number_below_two_thousand():
    assert all(parse_number(english_words(n)) == n for n in range(2000))


@pytest.mark.parametrize("text", ["²", "①", "٣٤٢", "۳۴۲", "१२", "12²", "½", "五", "Ⅻ", "x²"])
def test_one_rule_for_digits_only_0_to_9_are_read(text):
    """The grammar reads the ASCII digits 0-9; every other numeral is refused with the course's error."""
    with pytest.raises(CourseValueError, match=r"^expected a whole number.*not one of the digits 0-9.*Fix: "):
        parse_number(text)
    assert parse_number("342") == parse_number("three hundred and forty-two") == 342
