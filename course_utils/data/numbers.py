"""English number words → German number words: a real translation task made offline with ``num2words``.

Why numbers
    "three hundred and forty-two" → "dreihundertzweiundvierzig". German writes a number as one compound word and
    says the units *before* the tens ("zwei-und-vierzig" = "two-and-forty"), so a translator has to reorder
    (the cross-attention must jump back to the units word) and has to build compounds out of pieces — real
    word-order and subword structure, generated in milliseconds by a pip-installed package (``num2words``), no
    download. Numbers have exactly one correct translation, so exact match is a meaningful score.

What the generator does (deterministic for a given ``seed`` and ``num2words`` version)
    1. Numbers from 0 to ``10**max_digits - 1``, grouped by digit length (0–9 is length 1).
    2. **Always in training**: 0–9 and the round numbers ``d·10^k`` (10, 20, …, 300, 5000, 900000). They are the
       vocabulary of the task — no model can *infer* that 7 is "sieben" without seeing it.
    3. **Test**: for every length ≥ 2, ``test_per_length`` numbers (at most a fifth of that length's non-round
       numbers, so 16 two-digit ones) drawn with the seeded generator. No test number ever appears in training.
    4. **Train**: every digit length gets the same number of examples, ``train_per_length``. Long lengths are
       sampled without replacement from the numbers not in the test set; short lengths have fewer numbers than
       that (ten one-digit numbers), so their numbers are repeated until the quota is met. Without this
       balancing, uniform sampling of 0..999 999 would show a one-digit number once in 100 000 examples.

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

from ..tokenization import BPETokenizer, WordTokenizer

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
    """Train and test examples. ``train`` repeats short numbers so each digit length has the same weight."""

    train: list[NumberPair]
    test: list[NumberPair]
    max_digits: int
    seed: int

    @property
    def train_numbers(self) -> set[int]:
        return {pair.number for pair in self.train}

    @property
    def test_numbers(self) -> set[int]:
        return {pair.number for pair in self.test}


def check_number(number: int, max_digits: int = MAX_DIGITS) -> int:
    """Return ``number`` if it is an int in ``[0, 10**max_digits)``, else raise an error that says the range."""
    if isinstance(number, bool) or not isinstance(number, int):
        raise TypeError(f"expected an int number, got {type(number).__name__} {number!r}; convert with int(...)")
    if not 0 <= number < 10 ** max_digits:
        raise ValueError(f"the task covers 0 .. {10 ** max_digits - 1:,} ({max_digits} digits), got {number:,}; "
                         "pick a number in that range (or build the data with a larger max_digits)")
    return number


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
    """The :class:`NumberPair` of ``number`` (cached: ``num2words`` takes about half a millisecond per call)."""
    return NumberPair(number, english_words(number), german_words(number))


def round_numbers(max_digits: int = MAX_DIGITS) -> list[int]:
    """0–9 and every ``d·10^k`` below ``10**max_digits`` (10, 20, …, 90, 100, …, 900 000), sorted."""
    return sorted(set(range(10)) | {d * 10 ** k for d in range(1, 10) for k in range(1, max_digits)})


def numbers_of_length(length: int) -> range:
    """All numbers with ``length`` digits (``range(0, 10)`` for length 1)."""
    return range(0 if length == 1 else 10 ** (length - 1), 10 ** length)


def make_number_split(train_per_length: int = 4000, test_per_length: int = 100, max_digits: int = MAX_DIGITS,
                      seed: int = 0) -> NumberSplit:
    """Build the train/test split described in the module docstring.

    Args:
        train_per_length: training examples per digit length (short lengths repeat their numbers).
        test_per_length: held-out numbers per digit length ≥ 2 (capped at a fifth of the non-round ones).
        max_digits: largest digit length (6 → numbers up to 999 999).
        seed: seed of the generator that draws test and training numbers.

    Returns:
        a :class:`NumberSplit`; ``train`` is shuffled, ``test`` is sorted by number.
    """
    if not isinstance(max_digits, int) or not 2 <= max_digits <= 9:
        raise ValueError(f"max_digits must be an int in 2..9, got {max_digits!r}")
    if train_per_length < 10 or test_per_length < 1:
        raise ValueError(f"need train_per_length >= 10 (every one-digit number once) and test_per_length >= 1, "
                         f"got {train_per_length} and {test_per_length}")
    rng = random.Random(seed)
    always_train = set(round_numbers(max_digits))

    test: list[int] = []
    for length in range(2, max_digits + 1):
        candidates = numbers_of_length(length)
        n_non_round = len(candidates) - sum(1 for n in always_train if n in candidates)
        wanted = min(test_per_length, n_non_round // 5)
        chosen: set[int] = set()
        while len(chosen) < wanted:  # rejection sampling: never materialises the 900 000 six-digit numbers
            number = rng.choice(candidates)
            if number not in always_train:
                chosen.add(number)
        test.extend(sorted(chosen))
    test_set = set(test)

    train: list[int] = []
    for length in range(1, max_digits + 1):
        candidates = numbers_of_length(length)
        if len(candidates) <= 2 * train_per_length:  # short lengths: every number, repeated up to the quota
            pool = [n for n in candidates if n not in test_set]
            rng.shuffle(pool)
            train.extend(pool[i % len(pool)] for i in range(max(train_per_length, len(pool))))
        else:  # long lengths: the round numbers plus distinct numbers drawn without replacement
            chosen = {n for n in always_train if n in candidates}
            while len(chosen) < train_per_length:
                number = rng.choice(candidates)
                if number not in test_set:
                    chosen.add(number)
            train.extend(sorted(chosen))
    rng.shuffle(train)
    return NumberSplit([make_pair(n) for n in train], [make_pair(n) for n in test], max_digits, seed)


def train_tokenizers(pairs: list[NumberPair], german_vocab_size: int = GERMAN_VOCAB_SIZE,
                     max_texts: int = TOKENIZER_TEXTS, seed: int = 0) -> tuple[WordTokenizer, BPETokenizer]:
    """Word-level English tokenizer and byte-level BPE German tokenizer, both trained on ``pairs`` (training set).

    Both are trained on a seeded sample of ``max_texts`` training pairs (repeats included, so the counts keep
    the balance between digit lengths) plus the round numbers, so every number word is seen. They share the
    course's special ids (0 = [PAD], 5 = [BOS], 6 = [EOS]), so one ``pad_id`` serves both sides.
    """
    if not pairs:
        raise ValueError("train_tokenizers got no pairs; pass the training pairs, e.g. split.train")
    sample = random.Random(seed).sample(pairs, min(len(pairs), max_texts))
    numbers = {pair.number for pair in pairs}
    texts = sample + [make_pair(n) for n in round_numbers(9) if n in numbers]
    source = WordTokenizer.train([p.english for p in texts], lowercase=True)
    target = BPETokenizer.train([p.german for p in texts], vocab_size=german_vocab_size)
    return source, target


def encode_pairs(pairs: list[NumberPair], source: WordTokenizer, target: BPETokenizer
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids for a list of pairs.

    Returns:
        ``src_ids (n, src_len)`` — English word ids, right-padded with 0;
        ``tgt_ids (n, tgt_len)`` — ``[BOS] German BPE ids [EOS]``, right-padded with 0. Teacher forcing feeds
        ``tgt_ids[:, :-1]`` to the decoder and scores its predictions against ``tgt_ids[:, 1:]``.
    """
    if not pairs:
        raise ValueError("encode_pairs got no pairs; pass a non-empty list such as split.train")
    src_ids = source.encode_batch([p.english for p in pairs])
    tgt_ids = target.encode_batch([p.german for p in pairs], add_bos_eos=True)
    return src_ids, tgt_ids


_DIGITS = re.compile(r"[\d,._ ]+")


def english_from_user_text(text: str, source: WordTokenizer, max_digits: int = MAX_DIGITS) -> str:
    """Turn what a learner typed — ``"342"``, ``"12,005"`` or ``"forty-two"`` — into the English source text.

    Raises ``ValueError`` naming the unknown words when the text uses words the source vocabulary lacks.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("type a number such as 342 or its English words such as 'three hundred and forty-two'")
    text = text.strip()
    if _DIGITS.fullmatch(text) and any(ch.isdigit() for ch in text):
        return english_words(check_number(int(re.sub(r"[,._ ]", "", text)), max_digits))
    unknown = [w for w in source.tokenize(text) if w not in source.piece_to_id]
    if unknown:
        raise ValueError(f"unknown English word(s) {unknown}; the translator knows only number words such as "
                         "'twenty', 'hundred', 'thousand', 'and' — or type the digits instead")
    return text.lower()
