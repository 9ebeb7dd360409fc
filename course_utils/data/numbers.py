"""English number words → German number words: a real translation task made offline with ``num2words``.

Why numbers
    "three hundred and forty-two" → "dreihundertzweiundvierzig". German writes a number as one compound word and
    says the units *before* the tens ("zwei-und-vierzig" = "two-and-forty"), so a translator has to reorder
    (the cross-attention must jump back to the units word) and has to build compounds out of pieces — real
    word-order and subword structure, generated in milliseconds by a pip-installed package (``num2words``), no
    download. Numbers have exactly one correct translation, so exact match is a meaningful score.

What the generator does (deterministic for a given ``seed`` and ``num2words`` version)
    1. Numbers from 0 to ``10**max_digits - 1`` (999 999 by default).
    2. **Always in training**: 0–9 and the round numbers ``d·10^k`` (10, 20, …, 300, 5000, 900000). They are the
       vocabulary of the task — no model can *infer* that 7 is "sieben" without seeing it.
    3. **Held out first**, so no held-out number can ever be drawn for training:
       * the **uniform test set**: ``n_test`` numbers drawn uniformly from every number in range except that
         vocabulary — what a user who types any number would meet (nine in ten have six digits);
       * the **stress set**: ``stress_per_category`` numbers for each structure that is hard for a translator
         (:data:`STRESS_CATEGORIES`: teen thousands, inner zeros, round and near-round numbers, repeated digits,
         round thousands — 113,000, where the German stops right after *tausend* — and among them the teen round
         thousands, and whole hundred thousands such as 300,005) and for each digit length 3–6, plus 16 of the 81
         non-vocabulary two-digit numbers. A category with few numbers gives at most a fifth of them: 18 of the
         90 teen round thousands (two of each teen), 150 of the 972 round thousands.
    4. **Train**: ``n_train`` numbers from :func:`sample_training_number`, skipping held-out ones. The sampler
       draws the *structure*, not the split: longer digit lengths more often (they hold the structure), each digit
       after the first is 0 with probability 0.3, each group's tens digit is 1 with probability 0.2, and round
       thousands, whole hundred thousands and repeated groups get a chance of their own, so every structure of
       the stress set is common in training while every test number stays unseen. Uniform sampling of
       0..999 999 would show a one-digit number once in 100 000 examples, a round thousand once in 1 000, and an
       inner zero far less often than a user types one.

Tokenization
    The source (English) side is word-level (:class:`~course_utils.tokenization.WordTokenizer`, lower case,
    "forty-two" → ``forty - two``): about 30 words cover every number. The target (German) side uses the
    course's byte-level :class:`~course_utils.tokenization.BPETokenizer` trained on the German training strings;
    with a small vocabulary its merges are the morphemes ("drei", "hundert", "zwei", "und", "vier", "zig").
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache

import torch
from num2words import num2words

from ..errors import CourseTypeError, CourseValueError
from ..tokenization import BPETokenizer, Tokenizer, WordTokenizer
from ..validation import check_int, check_positive_int, describe

__all__ = ["EXPECTED_INPUT", "GERMAN_VOCAB_SIZE", "GRAMMAR_WORDS", "HELD_OUT_FRACTION", "LENGTH_CATEGORIES",
           "MAX_DIGITS", "NUMBER_WORDS", "NumberPair", "NumberSplit", "STRESS_CATEGORIES", "STRESS_PER_CATEGORY",
           "STRUCTURAL_TESTS", "TEEN_WORDS", "TENS_WORDS", "TOKENIZER_TEXTS", "TRAIN_LENGTH_WEIGHTS",
           "TRAIN_REPEAT_PROBABILITY", "TRAIN_ROUND_THOUSANDS_PROBABILITY", "TRAIN_TEEN_PROBABILITY",
           "TRAIN_WHOLE_HUNDREDS_PROBABILITY", "TRAIN_ZERO_PROBABILITY", "UNIT_WORDS",
           "category_test", "check_number", "digit_length", "draw_held_out", "encode_pairs", "english_from_user_text",
           "english_words", "german_words", "has_inner_zero", "has_repeated_digits", "is_near_round", "is_round",
           "is_round_thousands", "is_teen_round_thousands", "is_teen_thousands", "is_whole_hundred_thousands",
           "make_number_split", "make_pair", "numbers_of_length", "parse_number", "round_numbers",
           "sample_training_number", "stress_categories", "structure_of", "train_tokenizers"]

MAX_DIGITS = 6
GERMAN_VOCAB_SIZE = 320  # 263 (7 special + 256 bytes) + 57 merges: the merges come out as number morphemes
TOKENIZER_TEXTS = 2000  # a sample of the training pairs: BPE learns the same morphemes from it, much faster


@dataclass(frozen=True)
class NumberPair:
    """One translation example: the number, its English words and its German words."""

    number: int
    english: str
    german: str


@dataclass
class NumberSplit:
    """Training examples, a uniform test set and a structural stress set, pairwise free of training numbers.

    ``train`` is the shuffled training stream (a number may repeat); ``test`` is drawn uniformly from every number
    in range that is not the task's vocabulary (:func:`round_numbers`); ``stress`` maps each name of
    :data:`STRESS_CATEGORIES` to its held-out numbers. No ``test`` or ``stress`` number occurs in ``train``.
    """

    train: list[NumberPair]
    test: list[NumberPair]
    stress: dict[str, list[NumberPair]]
    max_digits: int
    seed: int

    @property
    def train_numbers(self) -> set[int]:
        return {pair.number for pair in self.train}

    @property
    def test_numbers(self) -> set[int]:
        return {pair.number for pair in self.test}

    @property
    def held_out_numbers(self) -> set[int]:
        """Every number of ``test`` and of every stress category."""
        return self.test_numbers.union(*({pair.number for pair in pairs} for pairs in self.stress.values()))


def check_number(number: int, max_digits: int = MAX_DIGITS) -> int:
    """Return ``number`` if it is an int in ``[0, 10**max_digits)``, else raise an error that says the range."""
    check_positive_int("max_digits", max_digits)
    if isinstance(number, bool) or not isinstance(number, int):
        raise CourseTypeError(f"expected an int number, got {type(number).__name__} {number!r}; "
                              "convert with int(...), or parse typed text with parse_number(text)")
    if not 0 <= number < 10 ** max_digits:
        raise CourseValueError(f"expected a number in 0 .. {10 ** max_digits - 1:,} ({max_digits} digits), got "
                               f"{number:,}; pick a number in that range")
    return number


def _check_max_digits(max_digits: object, fewest: int = 1) -> int:
    """``max_digits`` as an int in ``fewest .. MAX_DIGITS``: the task's words stop at "thousand"."""
    check_int("max_digits", max_digits)
    if not fewest <= max_digits <= MAX_DIGITS:
        raise CourseValueError(f"max_digits must be an int in {fewest}..{MAX_DIGITS}, got {max_digits}; the default "
                               f"is {MAX_DIGITS} (the words stop at 'thousand')")
    return max_digits


def english_words(number: int) -> str:
    """``342`` → ``"three hundred and forty-two"`` (British English, as ``num2words`` writes it)."""
    return num2words(check_number(number, max_digits=12), lang="en")


def german_words(number: int) -> str:
    """``342`` → ``"dreihundertzweiundvierzig"``."""
    return num2words(check_number(number, max_digits=12), lang="de")


def digit_length(number: int) -> int:
    """Number of decimal digits; ``0`` has one."""
    return len(str(check_number(number, max_digits=12)))


@lru_cache(maxsize=None)
def make_pair(number: int) -> NumberPair:
    """The :class:`NumberPair` of ``number`` in the task's range 0 .. 999 999 (cached: ``num2words`` is slow).

    Larger numbers are refused: their words ("million") are not in the task's vocabulary.
    """
    check_number(number)
    return NumberPair(number, english_words(number), german_words(number))


def round_numbers(max_digits: int = MAX_DIGITS) -> list[int]:
    """0–9 and every ``d·10^k`` below ``10**max_digits`` (10, 20, …, 90, 100, …, 900 000), sorted."""
    check_positive_int("max_digits", max_digits)
    return sorted(set(range(10)) | {d * 10 ** k for d in range(1, 10) for k in range(1, max_digits)})


@lru_cache(maxsize=None)
def _round_set(max_digits: int) -> frozenset[int]:
    return frozenset(round_numbers(max_digits))


def numbers_of_length(length: int) -> range:
    """All numbers with ``length`` digits (``range(0, 10)`` for length 1)."""
    check_positive_int("length", length)
    return range(0 if length == 1 else 10 ** (length - 1), 10 ** length)


# --- what makes a number hard: the structural categories of the stress set ---------------------------------------
# Each test takes a number of the task's range 0 .. 999 999 and refuses anything else (check_number).

def _groups(number: int) -> tuple[int, int]:
    """``435_012`` → ``(435, 12)``: the thousands group and the units group."""
    return number // 1000, number % 1000


def is_teen_thousands(number: int) -> bool:
    """The thousands group ends in 11–19: 11,000 (*elftausend*), 16,512, 417,373."""
    return check_number(number) >= 11_000 and 11 <= _groups(number)[0] % 100 <= 19


def has_inner_zero(number: int) -> bool:
    """A zero before the last non-zero digit: 305, 4,012, 800,232, 435,012 (a part of the number goes unsaid)."""
    return "0" in str(check_number(number)).rstrip("0")


def is_round(number: int) -> bool:
    """At least 1,000 with exactly two non-zero digits: 11,000, 430,000, 7,050, 900,800 (one would be vocabulary)."""
    return check_number(number) >= 1000 and sum(digit != "0" for digit in str(number)) == 2


def is_near_round(number: int) -> bool:
    """One to nine away from a multiple of 1,000: 100,001, 45,003, 299,999, 7,998."""
    return check_number(number) >= 1000 and 1 <= min(number % 1000, 1000 - number % 1000) <= 9


def has_repeated_digits(number: int) -> bool:
    """One digit throughout (444, 7,777) or the same three-digit group twice (323,323, 999,999)."""
    text = str(check_number(number))
    return (len(text) >= 3 and len(set(text)) == 1) or (number >= 100_000 and _groups(number)[0] == _groups(number)[1])


def is_round_thousands(number: int) -> bool:
    """Ends in 000 after a thousands part of two or more non-zero digits: 45,000, 113,000, 230,000, 999,000.

    The German stops right after *tausend* (*einhundertdreizehntausend*), where almost every number goes on. A
    thousands part with one non-zero digit (5,000, 30,000, 700,000) is vocabulary, always in training.
    """
    thousands, units = _groups(check_number(number))
    return units == 0 and sum(digit != "0" for digit in str(thousands)) >= 2


def is_teen_round_thousands(number: int) -> bool:
    """A round thousand whose thousands part ends in 11–19: 13,000, 113,000 (*einhundertdreizehntausend*), 916,000."""
    return is_round_thousands(number) and is_teen_thousands(number)


def is_whole_hundred_thousands(number: int) -> bool:
    """A thousands part of whole hundreds and a non-zero rest: 300,005 (*dreihunderttausendfünf*), 700,420."""
    thousands, units = _groups(check_number(number))
    return thousands in range(100, 1000, 100) and units != 0


STRUCTURAL_TESTS = {"teen thousands": is_teen_thousands, "inner zero": has_inner_zero, "round": is_round,
                    "near round": is_near_round, "repeated digits": has_repeated_digits,
                    "teen round thousands": is_teen_round_thousands, "round thousands": is_round_thousands,
                    "whole hundred thousands": is_whole_hundred_thousands}
LENGTH_CATEGORIES = {f"{length} digits": length for length in range(2, MAX_DIGITS + 1)}
STRESS_CATEGORIES = tuple(STRUCTURAL_TESTS) + tuple(LENGTH_CATEGORIES)
STRESS_PER_CATEGORY = 150
HELD_OUT_FRACTION = 5  # a category gives at most a fifth of its numbers to the stress set: 16 of 81 two-digit ones
_FEWEST_DIGITS = {"teen thousands": 5, "inner zero": 3, "round": 4, "near round": 4, "repeated digits": 6,
                  "teen round thousands": 6, "round thousands": 5, "whole hundred thousands": 6}
_ROUND_THOUSANDS_CATEGORIES = ("teen round thousands", "round thousands")  # below a million: 90 and 972 numbers


def stress_categories(max_digits: int = MAX_DIGITS) -> tuple[str, ...]:
    """The stress categories that exist below ``10**max_digits`` (all of :data:`STRESS_CATEGORIES` for 6 digits)."""
    _check_max_digits(max_digits)
    return (tuple(name for name in STRUCTURAL_TESTS if _FEWEST_DIGITS[name] <= max_digits)
            + tuple(f"{length} digits" for length in range(2, max_digits + 1)))


def _stress_quota(category: str, wanted: int, max_digits: int) -> int:
    """``wanted``, capped at a fifth of the category's non-vocabulary numbers where that is small to count."""
    vocabulary = _round_set(max_digits)
    if category in LENGTH_CATEGORIES and LENGTH_CATEGORIES[category] <= 4:
        pool = numbers_of_length(LENGTH_CATEGORIES[category])
    elif max_digits <= 4:
        pool = range(10 ** max_digits)
    else:
        return wanted  # thousands of numbers of every category below a million
    test = category_test(category)
    return min(wanted, sum(test(n) for n in pool if n not in vocabulary) // HELD_OUT_FRACTION)


def category_test(category: str):
    """The test ``number -> bool`` of a stress category (a structure, or a digit length)."""
    if not isinstance(category, str) or category not in STRESS_CATEGORIES:
        raise CourseValueError(f"category must be a stress category, one of {STRESS_CATEGORIES}, got "
                               f"{describe(category)}; check the spelling")
    if category in LENGTH_CATEGORIES:
        return lambda number: digit_length(number) == LENGTH_CATEGORIES[category]
    return STRUCTURAL_TESTS[category]


def structure_of(number: int) -> list[str]:
    """Names of the structural categories ``number`` belongs to (``[]`` for an ordinary number)."""
    return [name for name, test in STRUCTURAL_TESTS.items() if test(number)]


def _propose(category: str, rng: random.Random, max_digits: int) -> int:
    """One candidate number for ``category`` (the caller rejects candidates that fail the category's test)."""
    top = 10 ** max_digits
    if category in LENGTH_CATEGORIES:
        return rng.choice(numbers_of_length(LENGTH_CATEGORIES[category]))
    if category == "teen thousands":
        return (rng.randrange(10) * 100 + rng.randrange(11, 20)) * 1000 + rng.randrange(1000)
    if category == "inner zero":
        digits = [rng.randrange(1, 10)] + [rng.choice((0, 0, *range(1, 10)))
                                           for _ in range(rng.randrange(2, max_digits))]
        return int("".join(map(str, digits)))
    if category == "round":
        high, low = rng.sample(range(max_digits), 2)
        return rng.randrange(1, 10) * 10 ** high + rng.randrange(1, 10) * 10 ** low
    if category == "near round":
        return rng.randrange(1, top // 1000) * 1000 + rng.choice((-1, 1)) * rng.randrange(1, 10)
    if category == "repeated digits":
        if rng.random() < 0.1:
            return int(str(rng.randrange(1, 10)) * rng.randrange(3, max_digits + 1))
        group = rng.randrange(100, 1000)
        return group * 1000 + group
    if category == "whole hundred thousands":  # rests of 1, 2 and 3 digits equally often: 300,005, 300,050, 300,420
        return rng.randrange(1, 10) * 100_000 + rng.choice(numbers_of_length(rng.randrange(1, 4)))
    raise CourseValueError(f"expected a stress category, one of {STRESS_CATEGORIES}, got {category!r}")


TRAIN_LENGTH_WEIGHTS = (1, 2, 3, 4, 5, 6)  # weight of digit lengths 1..6 in training
TRAIN_ZERO_PROBABILITY = 0.3  # chance that a digit after the first is 0
TRAIN_TEEN_PROBABILITY = 0.2  # chance that the tens digit of a three-digit group is 1
TRAIN_ROUND_THOUSANDS_PROBABILITY = 0.15  # chance that a number of 4+ digits ends in 000 (113,000)
TRAIN_WHOLE_HUNDREDS_PROBABILITY = 0.1  # chance that a six-digit number's thousands part is whole hundreds (300,005)
TRAIN_REPEAT_PROBABILITY = 0.05  # chance that a six-digit number repeats its thousands group (323,323)


def sample_training_number(rng: random.Random, max_digits: int = MAX_DIGITS) -> int:
    """One training number, drawn so every digit length and every structure is common (module docstring, step 4).

    The digit length is drawn with weight growing with the length (long numbers carry most of the structure and
    most of the numbers in range); each digit after the first is 0 with probability 0.3 (inner zeros, round
    and near-round numbers), and the tens digit of each three-digit group is 1 with probability 0.2 (teens).
    Then three structures that are rare even so get their own chance: a number of four or more digits ends in
    000 with probability 0.15 (round thousands, 113,000, where the German stops right after *tausend*: about one
    training number in a hundred otherwise), a six-digit number gets a thousands part of whole hundreds with
    probability 0.1 (300,005, *dreihunderttausendfünf*) and repeats its thousands group with probability 0.05
    (323,323: the same words twice, in two places).
    """
    if not isinstance(rng, random.Random):
        raise CourseTypeError(f"rng must be a random.Random, got {describe(rng)}; pass random.Random(seed)")
    _check_max_digits(max_digits)
    length = rng.choices(range(1, max_digits + 1), weights=TRAIN_LENGTH_WEIGHTS[:max_digits])[0]
    if length == 1:
        return rng.randrange(10)
    digits = [rng.randrange(1, 10)]
    for position in range(length - 2, -1, -1):  # position = power of ten of the digit drawn
        if position % 3 == 1 and rng.random() < TRAIN_TEEN_PROBABILITY:
            digits.append(1)
        else:
            digits.append(0 if rng.random() < TRAIN_ZERO_PROBABILITY else rng.randrange(1, 10))
    if length > 3 and rng.random() < TRAIN_ROUND_THOUSANDS_PROBABILITY:
        digits[-3:] = [0, 0, 0]
    if length == 6 and rng.random() < TRAIN_WHOLE_HUNDREDS_PROBABILITY:
        digits[1:3] = [0, 0]
    if length == 6 and rng.random() < TRAIN_REPEAT_PROBABILITY:
        digits[3:] = digits[:3]
    return int("".join(map(str, digits)))


def _check_exclude(exclude: object) -> frozenset[int]:
    if isinstance(exclude, (str, bytes)) or not isinstance(exclude, (set, frozenset, list, tuple, range)):
        raise CourseTypeError(f"exclude must be a set (or list) of int numbers, got {describe(exclude)}; pass e.g. "
                              "split.train_numbers")
    bad = next((number for number in exclude if isinstance(number, bool) or not isinstance(number, int)), None)
    if bad is not None:
        raise CourseTypeError(f"exclude must hold int numbers only, got {describe(bad)}; pass e.g. "
                              "split.train_numbers")
    return frozenset(exclude)


def _draw_category(category: str, wanted: int, rng: random.Random, max_digits: int, taken: set[int]) -> list[int]:
    """Up to ``wanted`` numbers of ``category`` that are not in ``taken``, sorted.

    The round thousands are few (972 below a million, 90 of them teen round thousands): they are listed, and the
    stress set takes at most a fifth of them — of each teen, for the teen round thousands, so every teen appears.
    Every other category is drawn by proposal and rejection, capped by :func:`_stress_quota`.
    """
    test, vocabulary = category_test(category), _round_set(max_digits)
    if category in _ROUND_THOUSANDS_CATEGORIES:
        strata: dict[int, list[int]] = {}  # the teen of a teen round thousand; one stratum for the round thousands
        for number in range(0, 10 ** max_digits, 1000):
            if test(number):
                strata.setdefault(_groups(number)[0] % 100 if category == "teen round thousands" else 0,
                                  []).append(number)
        queues = []  # per stratum, the numbers it gives, in random order
        for members in strata.values():
            free = [number for number in members if number not in taken]
            queues.append(rng.sample(free, min(len(members) // HELD_OUT_FRACTION, len(free))))
        rng.shuffle(queues)
        in_turn = [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]
        return sorted(in_turn[:wanted])
    wanted = _stress_quota(category, wanted, max_digits)
    chosen: set[int] = set()
    for _ in range(1000 * wanted):
        if len(chosen) == wanted:
            break
        number = _propose(category, rng, max_digits)
        if 0 <= number < 10 ** max_digits and number not in vocabulary and number not in taken and test(number):
            chosen.add(number)
    if len(chosen) < wanted:
        raise CourseValueError(f"found only {len(chosen)} of {wanted} '{category}' numbers outside the excluded "
                               "ones; exclude fewer numbers or lower stress_per_category")
    return sorted(chosen)


def _draw_held_out(rng: random.Random, n_test: int, stress_per_category: int, max_digits: int,
                   exclude: frozenset[int]) -> tuple[list[int], dict[str, list[int]]]:
    """The uniform test numbers and each stress category's numbers: pairwise disjoint, free of vocabulary and
    ``exclude``."""
    vocabulary, top = _round_set(max_digits), 10 ** max_digits
    categories = stress_categories(max_digits)
    most = (top - len(vocabulary)) // HELD_OUT_FRACTION
    if n_test + stress_per_category * len(categories) > most:
        raise CourseValueError(f"expected at most {most:,} held-out numbers for max_digits={max_digits} (a fifth of "
                               f"the numbers), got n_test={n_test} + {len(categories)} × {stress_per_category} "
                               "stress numbers; lower n_test or stress_per_category")
    if len(exclude) > top // 2:
        raise CourseValueError(f"expected at most {top // 2:,} excluded numbers (half the range), got "
                               f"{len(exclude):,}; exclude the training numbers only")
    test: set[int] = set()
    while len(test) < n_test:  # rejection sampling: never materialises the million numbers
        number = rng.randrange(top)
        if number not in vocabulary and number not in exclude:
            test.add(number)
    taken = set(test) | exclude
    stress: dict[str, list[int]] = {}
    for category in categories:
        stress[category] = _draw_category(category, stress_per_category, rng, max_digits, taken)
        taken.update(stress[category])
    return sorted(test), stress


def draw_held_out(n_test: int = 2000, stress_per_category: int = STRESS_PER_CATEGORY, max_digits: int = MAX_DIGITS,
                  seed: int = 0, exclude: set[int] | frozenset[int] = frozenset()
                  ) -> tuple[list[NumberPair], dict[str, list[NumberPair]]]:
    """A fresh uniform test set and stress set drawn with ``seed``, none of whose numbers is in ``exclude``.

    The same draw as the held-out half of :func:`make_number_split` (step 3 of the module docstring), for testing a
    trained model on numbers from *another* seed: pass ``exclude=split.train_numbers`` and no number of the draw was
    seen in training.

    Returns:
        ``(test, stress)``: the uniform test pairs and, for each of :func:`stress_categories`, its pairs, sorted
        by number.
    """
    _check_max_digits(max_digits, fewest=3)
    hint = f"; the defaults are n_test=2000, stress_per_category={STRESS_PER_CATEGORY}"
    for name, value in (("n_test", n_test), ("stress_per_category", stress_per_category)):
        check_positive_int(name, value, hint=hint)
    check_int("seed", seed)
    test, stress = _draw_held_out(random.Random(seed), n_test, stress_per_category, max_digits,
                                  _check_exclude(exclude))
    return [make_pair(n) for n in test], {name: [make_pair(n) for n in numbers] for name, numbers in stress.items()}


def make_number_split(n_train: int = 8000, n_test: int = 2000, stress_per_category: int = STRESS_PER_CATEGORY,
                      max_digits: int = MAX_DIGITS, seed: int = 0) -> NumberSplit:
    """Build the held-out sets first, then a training stream that never touches them.

    Args:
        n_train: training examples (numbers drawn by :func:`sample_training_number`; they may repeat), plus the
            vocabulary numbers :func:`round_numbers`, which are always in training.
        n_test: numbers of the uniform test set.
        stress_per_category: held-out numbers per stress category (:func:`stress_categories`), at most a fifth
            of a category's numbers where it has few (16 two-digit ones: only 81 two-digit numbers are not
            vocabulary; 18 teen round thousands, two of each teen, of 90).
        max_digits: largest digit length (6 → numbers up to 999 999).
        seed: seed of the generator that draws every set.

    Returns:
        a :class:`NumberSplit`; ``train`` is shuffled, ``test`` and each stress list are sorted by number.
    """
    _check_max_digits(max_digits, fewest=3)
    hint = f"; the defaults are n_train=8000, n_test=2000, stress_per_category={STRESS_PER_CATEGORY}"
    for name, value in (("n_train", n_train), ("n_test", n_test), ("stress_per_category", stress_per_category)):
        check_positive_int(name, value, hint=hint)
    check_int("seed", seed)
    rng = random.Random(seed)
    vocabulary = _round_set(max_digits)
    test, stress = _draw_held_out(rng, n_test, stress_per_category, max_digits, frozenset())
    held_out = set(test).union(*stress.values())
    train = sorted(vocabulary)
    while len(train) < n_train + len(vocabulary):
        number = sample_training_number(rng, max_digits)
        if number not in held_out:
            train.append(number)
    rng.shuffle(train)
    return NumberSplit([make_pair(n) for n in train], [make_pair(n) for n in test],
                       {name: [make_pair(n) for n in numbers] for name, numbers in stress.items()}, max_digits, seed)


def train_tokenizers(pairs: list[NumberPair], german_vocab_size: int = GERMAN_VOCAB_SIZE,
                     max_texts: int = TOKENIZER_TEXTS, seed: int = 0) -> tuple[WordTokenizer, BPETokenizer]:
    """Word-level English tokenizer and byte-level BPE German tokenizer, both trained on ``pairs`` (training set).

    Both are trained on a seeded sample of ``max_texts`` training pairs (repeats included, so the counts keep
    the balance between digit lengths) plus the round numbers, so every number word is seen. They share the
    course's special ids (0 = [PAD], 5 = [BOS], 6 = [EOS]), so one ``pad_id`` serves both sides.
    """
    _check_pairs(pairs, "split.train")
    check_int("german_vocab_size", german_vocab_size, minimum=BPETokenizer.min_vocab_size)
    check_positive_int("max_texts", max_texts)
    check_int("seed", seed)
    sample = random.Random(seed).sample(pairs, min(len(pairs), max_texts))
    numbers = {pair.number for pair in pairs}
    texts = sample + [make_pair(n) for n in round_numbers(9) if n in numbers]
    source = WordTokenizer.train([p.english for p in texts], lowercase=True)
    target = BPETokenizer.train([p.german for p in texts], vocab_size=german_vocab_size)
    return source, target


def _check_pairs(pairs: object, example: str) -> None:
    """Refuse anything but a non-empty list (or tuple) of :class:`NumberPair`; ``example`` names a good argument."""
    if not isinstance(pairs, (list, tuple)):
        raise CourseTypeError(f"pairs must be a list of NumberPair, got {describe(pairs)}; pass e.g. {example}")
    for index, pair in enumerate(pairs):
        if not isinstance(pair, NumberPair):
            raise CourseTypeError(f"pairs[{index}] must be a NumberPair, got {describe(pair)}; build pairs with "
                                  f"make_pair(number), or pass e.g. {example}")
    if not pairs:
        raise CourseValueError(f"pairs must be a non-empty list of NumberPair, got an empty list; pass e.g. {example}")


def encode_pairs(pairs: list[NumberPair], source: WordTokenizer, target: BPETokenizer
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids for a list of pairs.

    Returns:
        ``src_ids (n, src_len)`` — English word ids, right-padded with 0;
        ``tgt_ids (n, tgt_len)`` — ``[BOS] German BPE ids [EOS]``, right-padded with 0. Teacher forcing feeds
        ``tgt_ids[:, :-1]`` to the decoder and scores its predictions against ``tgt_ids[:, 1:]``.
    """
    _check_pairs(pairs, "split.test")
    for name, tokenizer in (("source", source), ("target", target)):
        if not isinstance(tokenizer, Tokenizer):
            raise CourseTypeError(f"{name} must be a course tokenizer, got {describe(tokenizer)}; pass the two "
                                  "tokenizers train_tokenizers returns: source, target = train_tokenizers(split.train)")
    src_ids = source.encode_batch([p.english for p in pairs])
    tgt_ids = target.encode_batch([p.german for p in pairs], add_bos_eos=True)
    return src_ids, tgt_ids


# --- reading what a learner types: a small grammar of English numbers ---------------------------------------------

UNIT_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
TEEN_WORDS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
              "seventeen": 17, "eighteen": 18, "nineteen": 19}
TENS_WORDS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
              "ninety": 90}
NUMBER_WORDS = {**UNIT_WORDS, **TEEN_WORDS, **TENS_WORDS}
GRAMMAR_WORDS = {"zero", "a", "and", "hundred", "thousand"}
_LARGER_SCALES = {"million", "millions", "billion", "billions", "trillion", "lakh", "crore"}
_FRACTION_WORDS = {"point", "half", "halves", "quarter", "quarters", "dot"}
_NEGATIVE_WORDS = {"minus", "negative"}
_ORDINALS = {"first", "second", "third", "fifth", "eighth", "ninth", "twelfth"}
_ASCII_DIGITS = re.compile(r"[0-9]+")
_GROUPED_DIGITS = re.compile(r"(0|[1-9][0-9]{0,2})(,[0-9]{3})+")
_WORD_TOKEN = re.compile(r"[a-z]+|[-,]|\S")
EXPECTED_INPUT = ("a whole number from 0 to {top:,}: digits (12,345) or English words (twelve thousand, three "
                  "hundred and forty-five; forty-two or forty two; a hundred; twelve hundred)")


def _refuse(text: str, problem: str, fix: str, max_digits: int) -> CourseValueError:
    expected = EXPECTED_INPUT.format(top=10 ** max_digits - 1)
    return CourseValueError(f"expected {expected}; got {text!r}: {problem}. Fix: {fix}")


class _NumberParser:
    """Recursive descent over the tokens of one English number below a million (grammar in :func:`parse_number`).

    Each method consumes the tokens of one rule and returns its value; ``_fail`` explains the first token that
    fits no rule.
    """

    def __init__(self, text: str, tokens: list[str], max_digits: int):
        self.text, self.tokens, self.max_digits, self.position = text, tokens, max_digits, 0

    def _peek(self, ahead: int = 0) -> str | None:
        index = self.position + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def _take(self) -> str:
        self.position += 1
        return self.tokens[self.position - 1]

    def _fail(self, problem: str, fix: str) -> CourseValueError:
        return _refuse(self.text, problem, fix, self.max_digits)

    def number(self) -> int:
        """number := "zero" | ["a"] group ["thousand" [","] ["and"] [group]]"""
        for scale, most in (("thousand", 1), ("hundred", 2)):
            if self.tokens.count(scale) > most:
                raise self._fail(f"'{scale}' appears {self.tokens.count(scale)} times (a repeated scale word)",
                                 f"use '{scale}' at most {'once' if most == 1 else 'twice'}: "
                                 "'three hundred thousand, four hundred' is the longest pattern")
        if self._peek() == "zero":
            self._take()
            if self._peek() is not None:
                raise self._fail("'zero' stands alone", "type 'zero' by itself, or leave it out")
            return 0
        head = None
        if self._peek() == "a":
            self._take()
            if self._peek() not in ("hundred", "thousand"):
                raise self._fail("'a' must be followed by 'hundred' or 'thousand'",
                                 "write 'a hundred', 'a thousand' — or 'one', 'two', … for a single number")
            head = 1
        value = self.group(head, thousands_follow_allowed=True)
        if self._peek() == "thousand":
            if value > 999:
                raise self._fail(f"it says {value:,} thousand, {value * 1000:,}, out of range",
                                 f"use a number from 0 to {10 ** self.max_digits - 1:,}")
            self._take()
            value *= 1000
            if self._peek() == ",":
                self._take()
            if self._peek() == "and":
                self._take()
                if self._peek() is None:
                    raise self._fail("'and' at the end", "finish the number after 'and' ('two thousand and five')")
            if self._peek() is not None:
                value += self.group(None, thousands_follow_allowed=False)
        if self._peek() is not None:
            raise self._unexpected()
        return value

    def group(self, head: int | None, thousands_follow_allowed: bool) -> int:
        """group := tens ["hundred" [["and"] tens]]  (1–999; "twelve hundred [and five]" for 1,100–9,999 alone)"""
        value = self.tens() if head is None else head
        if value is None:
            raise self._unexpected()
        if self._peek() != "hundred":
            return value
        self._take()
        if value >= 10:
            typed = f"{' '.join(self.tokens[: self.position])}"
            if value % 10 == 0:
                raise self._fail(f"'{typed}' is {value * 100:,}", f"write '{english_words(value * 100)}'")
            if not thousands_follow_allowed:
                raise self._fail(f"'{typed}' mixes two ways of saying thousands",
                                 "write 'N hundred' (eleven … ninety-nine hundred) only on its own, "
                                 "e.g. 'twelve hundred' or 'one thousand, two hundred'")
        value *= 100
        if self._peek() == "and":
            self._take()
            rest = self.tens()
            if rest is None:
                raise self._fail("'and' must be followed by the tens and units",
                                 "write e.g. 'three hundred and five' or 'three hundred five'")
            return value + rest
        rest = self.tens()
        return value + (rest or 0)

    def tens(self) -> int | None:
        """tens := unit | teen | tens-word [["-"] unit]  (1–99); ``None`` when no number word comes next."""
        word = self._peek()
        if word in UNIT_WORDS or word in TEEN_WORDS:
            self._take()
            return NUMBER_WORDS[word]
        if word not in TENS_WORDS:
            return None
        self._take()
        value = TENS_WORDS[word]
        if self._peek() == "-":
            self._take()
            if self._peek() not in UNIT_WORDS:
                raise self._fail(f"after '{word}-' comes a unit word (one … nine), got {self._peek() or 'nothing'!r}",
                                 f"write e.g. '{word}-two'")
            return value + UNIT_WORDS[self._take()]
        if self._peek() in UNIT_WORDS:
            return value + UNIT_WORDS[self._take()]
        return value

    def _unexpected(self) -> CourseValueError:
        """The error for the token at ``position``, which no rule accepts there."""
        word, before = self._peek(), self.tokens[self.position - 1] if self.position else None
        if word is None:
            return self._fail(f"it ends after {before!r}", "finish the number")
        if word in ("hundred", "thousand"):
            if word in self.tokens[: self.position]:
                return self._fail(f"'{word}' again where it cannot repeat",
                                  "one 'hundred' per group of three digits and one 'thousand' in all, as in "
                                  "'three hundred thousand, four hundred'")
            if before in (None, "and", ","):
                return self._fail(f"'{word}' needs a number before it", f"write 'one {word}' or 'a {word}'")
            return self._fail(f"'{word}' cannot follow {before!r} here", "say the thousands first, then the "
                              "hundreds: 'two thousand, three hundred'")
        if word == "and":
            return self._fail("'and' is out of place", "'and' follows 'hundred' or 'thousand' only, once: "
                              "'three hundred and five', 'two thousand and five'")
        if word == ",":
            return self._fail("a comma that is not right after 'thousand' (a list of numbers?)",
                              "translate one number at a time; a comma may follow 'thousand' only")
        if word == "-":
            return self._fail("a hyphen that does not join tens and units",
                              "hyphenate only tens and units: 'forty-two'")
        if word in NUMBER_WORDS or word == "zero":
            return self._fail(f"two number words in a row ({before!r} then {word!r})",
                              "say one number: 'seven hundred and seventy-seven', not 'seven seven seven'")
        return self._fail(f"{word!r} is out of place", "write the number as num2words would")


def _check_words(text: str, tokens: list[str], max_digits: int) -> None:
    """Refuse words that are not number words, naming the closest one or the reason."""
    import difflib

    known = set(NUMBER_WORDS) | GRAMMAR_WORDS
    for token in tokens:
        if token in known or token in ("-", ","):
            continue
        if token in _FRACTION_WORDS or token == ".":
            raise _refuse(text, "a decimal or a fraction", "type a whole number", max_digits)
        if token in _NEGATIVE_WORDS:
            raise _refuse(text, "a negative number", "type a number from 0 up", max_digits)
        if token in _LARGER_SCALES:
            raise _refuse(text, f"'{token}' is beyond the range", "use a number below a million", max_digits)
        if token in _ORDINALS or (token.endswith("th") and token[:-2].rstrip("e").rstrip("i") in
                                  {w.rstrip("ey") for w in known}):
            raise _refuse(text, f"'{token}' is an ordinal", "type the cardinal number ('four', not 'fourth')",
                          max_digits)
        close = difflib.get_close_matches(token, sorted(known), n=1)
        hint = f"did you mean {close[0]!r}?" if close else "use number words such as 'twenty', 'hundred', 'thousand'"
        raise _refuse(text, f"unknown word {token!r}", hint, max_digits)


def parse_number(text: str, max_digits: int = MAX_DIGITS) -> int:
    """The number a learner typed, as an int — or a :class:`~course_utils.errors.CourseValueError` saying why not.

    Accepted (any letter case, extra spaces ignored):

    * digits, with or without thousands separators: ``342``, ``12005``, ``12,005``;
    * English words, by this grammar (a recursive-descent parser, one method per rule)::

          number := "zero" | ["a"] group ["thousand" [","] ["and"] [group]]
          group  := tens ["hundred" [["and"] tens]]
          tens   := unit | teen | tens-word [["-"] unit]

      so num2words' own form (``"twelve thousand, three hundred and forty-five"``), the same without "and" or the
      comma, ``"forty-two"`` or ``"forty two"``, ``"a hundred"``, ``"a thousand and one"``, and "N hundred" for
      1,100–9,999 on its own (``"twelve hundred"``, ``"nineteen hundred and ninety-nine"``).

    Refused, with the reason and a fix: empty text, decimals and fractions (``3.5``, ``"three point five"``),
    lists (``1,2,3``, ``"one, two"``), negative numbers, numbers outside ``0 .. 10**max_digits - 1``, repeated or
    misplaced scale words (``"thousand thousand"``, ``"hundred five"``), misplaced "and", number words in a
    row (``"seven seven seven"``), mixed digits and words, and unknown words. Only the ASCII digits 0-9 are read:
    any other numeral (``²``, ``①``, Arabic-Indic ``٣٤٢``, ``½``, ``五``) is refused. ``max_digits`` is 1..6.
    """
    if not isinstance(text, str):
        raise CourseTypeError(f"expected the typed text as a str, got {type(text).__name__} {text!r}; "
                              "pass str(...) or call english_words(number) for an int")
    _check_max_digits(max_digits)
    cleaned = " ".join(text.lower().split())
    top = 10 ** max_digits - 1
    if not cleaned:
        raise _refuse(text, "nothing was typed", "type e.g. 342 or 'three hundred and forty-two'", max_digits)
    other_digits = sorted({c for c in cleaned if c.isnumeric() and c not in "0123456789"})
    if other_digits:   # one rule: the grammar reads the ASCII digits 0-9; every other numeral is refused
        raise _refuse(text, f"{', '.join(map(repr, other_digits))} is not one of the digits 0-9 the grammar reads",
                      "type the number with the digits 0-9 (342) or in English words", max_digits)
    has_digits, has_letters = any(c in "0123456789" for c in cleaned), any(c.isalpha() for c in cleaned)
    if has_digits and has_letters:
        raise _refuse(text, "digits and words mixed", "type only digits (5000) or only words (five thousand)",
                      max_digits)
    if has_digits:
        if cleaned.startswith("-"):
            raise _refuse(text, "a negative number", "type a number from 0 up", max_digits)
        if "." in cleaned:
            raise _refuse(text, "a decimal number", "type a whole number (no decimal point)", max_digits)
        if _ASCII_DIGITS.fullmatch(cleaned) or _GROUPED_DIGITS.fullmatch(cleaned):
            number = int(cleaned.replace(",", ""))
        else:
            raise _refuse(text, "not one number: digits may be grouped by commas in threes only (12,345)",
                          "type one number, without spaces, e.g. 12345 or 12,345", max_digits)
    else:
        tokens = _WORD_TOKEN.findall(cleaned)
        _check_words(text, tokens, max_digits)
        number = _NumberParser(text, tokens, max_digits).number()
    if number > top:
        raise _refuse(text, f"{number:,} is out of range", f"use a number from 0 to {top:,}", max_digits)
    return number


def english_from_user_text(text: str, source: WordTokenizer | None = None, max_digits: int = MAX_DIGITS) -> str:
    """What a learner typed → num2words' English, the form the model was trained on.

    ``"12,005"``, ``"twelve thousand five"`` and ``"Twelve Thousand and Five"`` all give
    ``"twelve thousand and five"``; bad text raises the error of :func:`parse_number`. With a ``source``
    tokenizer, the English must also consist of words that tokenizer knows (one trained on three-digit numbers
    has never seen "thousand").
    """
    if source is not None and not isinstance(source, WordTokenizer):
        raise CourseTypeError(f"source must be None or a WordTokenizer, got {describe(source)}; pass the first "
                              "tokenizer train_tokenizers returns")
    english = english_words(parse_number(text, max_digits))
    if source is not None:
        unknown = [word for word in source.tokenize(english) if word not in source.piece_to_id]
        if unknown:
            raise CourseValueError(f"expected words the source tokenizer knows, got {unknown} in {english!r}; "
                                   "train the tokenizers on data that covers this number (a larger max_digits)")
    return english
