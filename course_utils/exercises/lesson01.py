"""Exercises of lesson 01 (byte-pair encoding): ``merge_pair``, ``train``, ``encode``, ``split_digits`` and the
embedding's backward pass; the variants count and merge pairs as a learner would (``_pairs``, ``_merge``)."""
from __future__ import annotations

import math
import warnings
from collections import Counter
from typing import Callable

import regex
import torch

from ..embedding import TokenEmbedding
from ..tokenization import (
    WORD_SPLIT_PATTERN,
    BPETokenizer,
    _merge_counting_changes,
    count_pairs,
    merge_pair,
    split_words,
    tie_break_key,
)
from .asserts import Case, Draw, check_function
from .core import Exercise, ExerciseFailure, Mistake, solution_of

FIRST_BYTE, FIRST_MERGE = 7, 263


def too_small_id_hint(error: BaseException) -> str | None:
    if isinstance(error, (IndexError, OverflowError, KeyError, ValueError)):
        return ("ids go beyond 255 once pairs are merged (263, 264, …): key everything by the ids themselves, "
                "no table or bytes object of a fixed size")
    return None


def check(ns, name: str, reference: Callable, cases: list[Case], forbidden: dict | None = None,
          error_hint=too_small_id_hint) -> None:
    check_function(ns[name], reference, cases, name, forbidden=forbidden, error_hint=error_hint)


# ---------------------------------------------------------------------------------------- the typical mistakes
# Written as a learner writes them; the tests plug each one in as the learner's answer.
def _pairs(ids):
    return Counter(zip(ids, ids[1:]))


def _merge(ids, pair, new_id, skip=2, stop=0, first_only=False):
    """Every occurrence of ``pair`` merged from the left; ``skip=1``, ``stop=1`` or ``first_only`` plant a bug."""
    out, i = [], 0
    while i < len(ids) - stop:
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            out.append(new_id)
            i += skip
            if first_only:
                return out + list(ids[i:])
        else:
            out.append(ids[i])
            i += 1
    return out


def merging(**flags):
    return lambda ids, pair, new_id: _merge(ids, pair, new_id, **flags)


def merge_draft(ids, pair, new_id):
    """The notebook's draft of ``merge_pair``: in a run such as [4, 4, 4] the middle id is used twice."""
    merged = []
    for i in range(len(ids)):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):
            merged.append(new_id)
        elif i == 0 or (ids[i - 1], ids[i]) != tuple(pair):
            merged.append(ids[i])
    return merged


def merge_from_the_right(ids, pair, new_id):
    return _merge(list(ids)[::-1], tuple(pair)[::-1], new_id)[::-1]


def train_with(texts, n_merges, weighted=True, split=True, ties="rule", first_merge=263, first_byte=7,
               stop=True, recount=True, utf8=True, none_left=True):
    """The recipe of exercise 2, with one step done wrong where a flag says so."""
    word_counts = Counter(w for t in texts for w in (split_words(t) if split else [t]))
    words = {w: [first_byte + b for b in w.encode("utf-8")] if utf8 else [first_byte + ord(c) for c in w]
             for w in word_counts}
    merges, totals = [], None
    for k in range(n_merges):
        if recount or totals is None:
            totals = Counter()
            for w, ids in words.items():
                for pair, n in _pairs(ids).items():
                    totals[pair] += n * (word_counts[w] if weighted else 1)
        if none_left and not totals:
            break
        if ties == "first seen":
            best = max(totals, key=totals.get)
        else:
            best = min(totals, key=lambda p: (-totals[p], tie_break_key(p) if ties == "rule" else p))
        if stop and totals[best] < 2:
            break
        merges.append(best)
        if not recount:
            del totals[best]
        words = {w: _merge(ids, best, first_merge + k) for w, ids in words.items()}
    return merges


def encode_with(text, merges, first_merge=263, first_byte=7, utf8=True, order=1, keep_going=True):
    """The recipe of exercise 3, with one step done wrong where a flag says so."""
    ids = []
    for word in split_words(text):
        word_ids = [first_byte + b for b in word.encode("utf-8")] if utf8 else [first_byte + ord(c) for c in word]
        for k, pair in list(enumerate(merges))[::order]:
            merged = _merge(word_ids, tuple(pair), first_merge + k)
            if merged == word_ids and not keep_going:
                break
            word_ids = merged
        ids += word_ids
    return ids


def encode_longest_match(text, merges):
    pieces = {7 + b: bytes([b]) for b in range(256)}
    for k, (a, b) in enumerate(merges):
        pieces[263 + k] = pieces[a] + pieces[b]
    vocabulary = {piece: i for i, piece in sorted(pieces.items(), reverse=True)}
    ids = []
    for word in split_words(text):
        data = word.encode("utf-8")
        while data:
            length = max(n for n in range(1, len(data) + 1) if data[:n] in vocabulary)
            ids.append(vocabulary[data[:length]])
            data = data[length:]
    return ids


def digits_pattern(group: str) -> str:
    """GPT-2's split with ``group`` in place of its number rule ``" ?\\p{N}+"``."""
    return WORD_SPLIT_PATTERN.replace(r" ?\p{N}+", group)


DIGIT_GROUPS = digits_pattern(r" ?\p{N}{1,3}")  # the reference: at most 3 digits a piece, from the left
assert DIGIT_GROUPS != WORD_SPLIT_PATTERN


def split_with(pattern: str):
    return lambda text: regex.findall(pattern, text)


def groups_from_the_right(text):
    pieces = []
    for piece in split_words(text):
        number = regex.fullmatch(r"( ?)(\p{N}+)", piece)
        if not number:
            pieces.append(piece)
            continue
        space, digits = number.groups()
        cut = len(digits) % 3 or 3
        groups = [digits[:cut]] + [digits[i:i + 3] for i in range(cut, len(digits), 3)]
        pieces += [space + groups[0]] + groups[1:]
    return pieces


def grad_with(ids, grad_output, vocab_size, scale="sqrt", accumulate=True, reduce="sum"):
    """The gradient of exercise 5, with one step done wrong where a flag says so."""
    d_model = grad_output.size(-1)
    factor = {"sqrt": math.sqrt(d_model), "none": 1.0, "divide": 1 / math.sqrt(d_model), "d": d_model}[scale]
    flat_ids, flat_grad = ids.reshape(-1), grad_output.reshape(-1, d_model) * factor
    grad = torch.zeros(vocab_size, d_model, dtype=grad_output.dtype)
    if accumulate:
        grad.index_add_(0, flat_ids, flat_grad)
    else:
        grad[flat_ids] = flat_grad
    if reduce == "mean":
        grad = grad / flat_ids.numel()
    return grad


def kept_one_occurrence(ids, grad_output, got) -> bool:
    """Whether each row of ``got`` is √d_model times the gradient of *one* occurrence of its token (not summed)."""
    d_model = grad_output.size(-1)
    if not isinstance(got, torch.Tensor) or got.dim() != 2 or got.size(1) != d_model:
        return False
    flat, rows = ids.reshape(-1), grad_output.reshape(-1, d_model) * math.sqrt(d_model)
    return all(any(torch.allclose(got[token].float(), row, atol=1e-5) for row in rows[flat == token])
               for token in flat.unique().tolist())


def trained(**flags):
    return lambda texts, n_merges: train_with(texts, n_merges, **flags)


def encoded(**flags):
    return lambda text, merges: encode_with(text, merges, **flags)


def gradient(**flags):
    return lambda ids, grad_output, vocab_size: grad_with(ids, grad_output, vocab_size, **flags)


FIRST_IDS = "merge k creates id 263 + k (7 special tokens and 256 bytes come first), not 256 + k"
BYTE_IDS = "byte b has id 7 + b (ids 0..6 are the special tokens)"
NO_PAIRS = ("no pair was left to merge (every word is one token) and your train still looked for the best one: "
            "stop when no pair is left, before taking the most frequent")
TIES = "two pairs were equally frequent and you merged the other one: break ties with the smallest tie_break_key(pair)"

MISTAKES: dict[str, tuple[Mistake, ...]] = {  # the table of each exercise, by the name it asks for
    "merge_pair": (
        Mistake("no skip", "after a merge skip *both* ids of the pair (i += 2), so the second id is not copied again "
                "and occurrences never overlap", variant=merging(skip=1)),
        Mistake("drops last", "you lost the last id: when the loop stops before the end, append the remaining id",
                variant=merging(stop=1)),
        Mistake("first only", "replace *every* occurrence of the pair, not only the first",
                variant=merging(first_only=True)),
        Mistake("overlapping pairs", "in a run such as [4, 4, 4] the pair occurs twice, overlapping, and your merge "
                "used the middle id twice (two new ids stand for four ids): once a pair is merged, jump over both of "
                "its ids (i += 2) and look at the next id afresh", variant=merge_draft),
        Mistake("from the right", "scan from the left (i = 0 upwards): merging from the right pairs overlapping ids "
                "differently", variant=merge_from_the_right),
    ),
    "train": (
        Mistake("unweighted", "weight each word's pairs by how often the word occurs in the texts: a word seen 5 "
                "times adds 5 to each of its pairs", variant=trained(weighted=False)),
        Mistake("no split", "your merges cross word boundaries: cut every text with split_words first and count "
                "pairs inside words only", variant=trained(split=False)),
        Mistake("ids from 256", FIRST_IDS, variant=trained(first_merge=256)),
        Mistake("no byte offset", BYTE_IDS, variant=trained(first_byte=0)),
        Mistake("no stop", "stop when the most frequent pair occurs fewer than 2 times: you learned merges of pairs "
                "seen once", variant=trained(stop=False)),
        Mistake("no pairs left", NO_PAIRS, variant=trained(none_left=False)),
        Mistake("counted once", "count the pairs again after every merge: a merge changes the pairs around it",
                variant=trained(recount=False)),
        Mistake("characters", "work on the UTF-8 bytes of each word (word.encode('utf-8')), not on its characters: "
                "'é' is two bytes, two ids", variant=trained(utf8=False)),
        Mistake("ties by ids", TIES, variant=trained(ties="ids")),
        Mistake("ties by first seen", TIES, variant=trained(ties="first seen")),
    ),
    "encode": (
        Mistake("ids from 256", FIRST_IDS, variant=encoded(first_merge=256)),
        Mistake("no byte offset", BYTE_IDS, variant=encoded(first_byte=0)),
        Mistake("characters", "encode the UTF-8 bytes of each word, not its characters: 'é' is two bytes, two ids",
                variant=encoded(utf8=False)),
        Mistake("longest match", "taking the longest known token from the left is not BPE: replay the merges in "
                "the order they were learned", variant=encode_longest_match),
        Mistake("reversed", "replay the merges in the order they were learned, first merge first",
                variant=encoded(order=-1)),
        Mistake("stops early", "a merge that finds nothing in a word does not end the word: later merges may still "
                "apply", variant=encoded(keep_going=False)),
    ),
    "split_digits": (
        Mistake("whole runs", "a run of digits stays one piece: cut it into groups of at most 3 digits "
                "(' 1234567' -> ' 123', '456', '7')", variant=split_words),
        Mistake("exactly three", "the last group of a run may be shorter than 3 digits (' 1234567' -> ' 123', "
                "'456', '7'): with groups of exactly 3 the leftover digits are lost and the pieces no longer join "
                "back to the text", variant=split_with(digits_pattern(r" ?\p{N}{3}"))),
        Mistake("single digits", "groups of *up to* 3 digits, not one digit a piece",
                variant=split_with(digits_pattern(r" ?\p{N}"))),
        Mistake("space apart", "a space before a number stays with its first group (' 123'), as split_words keeps a "
                "space with the word after it", variant=split_with(digits_pattern(r"\p{N}{1,3}"))),
        Mistake("from the right", "group from the left, three digits at a time from the start of the run "
                "(' 1234567' -> ' 123', '456', '7'), not from its end", variant=groups_from_the_right),
    ),
    "embedding_grad": (
        Mistake("assignment", "a token that occurs several times gets the *sum* of its output gradients; assigning "
                "rows keeps only one of them — accumulate (index_add_, or one_hot(ids)ᵀ @ grad_output)",
                variant=gradient(accumulate=False),
                shows=lambda case, got, answer: kept_one_occurrence(*case.args[:2], got)),
        Mistake("no scale", "the block multiplies by √d_model, so its gradient with respect to W is multiplied by "
                "√d_model too", variant=gradient(scale="none")),
        Mistake("divided", "multiply by √d_model, do not divide: the forward pass multiplies",
                variant=gradient(scale="divide")),
        Mistake("d_model", "the factor is √d_model, not d_model", variant=gradient(scale="d")),
        Mistake("mean", "sum the contributions; do not average them over positions", variant=gradient(reduce="mean")),
    ),
}


# ---------------------------------------------------------------------------------------- q1: merge a pair
def check_merge_pair(ns) -> None:
    draw = Draw()
    a, b, c = draw.distinct(3, 256, 20000)
    alphabet = draw.distinct(4, 256, 50000)
    mixed = [draw.choice(alphabet) for _ in range(draw.integer(20, 40))]
    at = draw.integer(0, len(mixed) - 2)
    mixed[at:at + 2] = alphabet[:2]
    new = draw.integer(60001, 70000)
    drawn = [([a, b], (a, b)), ([a], (a, a)), ([a, a, a], (a, a)), ([b, a], (a, b)), ([c, a, b], (a, b)),
             ([a, a, a, a, a], (a, a)), (mixed, tuple(alphabet[:2]))]
    inputs = [([5, 6, 7, 5, 6], (5, 6), 300), ([4, 4, 4], (4, 4), 300)] + [(i, p, new) for i, p in drawn]
    cases = [Case(f"merge_pair({ids}, {pair}, {new_id})", (ids, pair, new_id)) for ids, pair, new_id in inputs]
    check(ns, "merge_pair", lambda ids, pair, new_id: merge_pair(list(ids), tuple(pair), new_id),
          cases, PIECES_FORBIDDEN)


PIECES_FORBIDDEN = {"the package's course_utils.tokenization.merge_pair": merge_pair,
                    "the package's course_utils.tokenization.count_pairs": count_pairs,
                    "the package's BPE merge (course_utils.tokenization)": _merge_counting_changes}


# ---------------------------------------------------------------------------------------- q2, q3: train and encode
def package_merges(texts, n_merges) -> list[tuple[int, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it warns when it stops early, as the recipe does
        return BPETokenizer.train(texts, FIRST_MERGE + n_merges).merges


def corpus(draw: Draw, n_texts: int) -> list[str]:
    """Short texts over a small alphabet (pairs repeat and tie), punctuation, digits, an accented letter."""
    while True:
        letters = "".join(draw.choice("abcdelnorst") for _ in range(4)) + "é"
        words = ["".join(draw.choice(letters) for _ in range(draw.integer(2, 6))) for _ in range(draw.integer(5, 9))]
        texts = []
        for _ in range(n_texts):
            picked = [draw.choice(words) for _ in range(draw.integer(3, 9))]
            texts.append(" ".join(w + draw.choice(["", "", "", ".", ",", "2"]) for w in picked))
        merges = package_merges(texts, 40)
        if len(BPETokenizer(merges).token_bytes) == FIRST_MERGE + len(merges):
            return texts


def check_train(ns) -> None:
    if "merge_pair" in ns and q1.evaluate(ns).status == "incorrect":
        raise ExerciseFailure(f"your `merge_pair` does not pass its own check yet ({q1.name}); `train` builds on it "
                              "— fix it first: run q1.check().")
    draw = Draw()
    a, b, c, d = sorted(draw.distinct(4, ord("a"), ord("z")))
    tied = [f"{chr(c)}{chr(d)} {chr(a)}{chr(b)} {chr(c)}{chr(d)} {chr(a)}{chr(b)}"]  # three pairs seen twice each
    small, single = ["ab ab cd"], [f"{chr(a)} {chr(a)} {chr(a)}"]  # single: no pair left after one merge
    cases = [Case(f"train({tied}, 2)", (tied, 2)), Case(f"train({small}, 5)", (small, 5)),
             Case(f"train({single}, 3)", (single, 3))]
    for n_texts, n_merges in ((2, 6), (4, 12), (6, 40)):
        texts = corpus(draw, n_texts)
        cases.append(Case(f"train({texts}, {n_merges})", (texts, n_merges)))
    check(ns, "train", package_merges, cases, TRAIN_FORBIDDEN, error_hint=no_pairs_hint)


def check_encode(ns) -> None:
    if "merge_pair" in ns and q1.evaluate(ns).status == "incorrect":
        raise ExerciseFailure("your `merge_pair` does not pass its own check yet; `encode` builds on it — fix it "
                              "first: run q1.check().")
    draw = Draw()
    x, y, z = (FIRST_BYTE + c for c in draw.distinct(3, ord("a"), ord("z")))
    word = bytes([x - FIRST_BYTE, y - FIRST_BYTE, z - FIRST_BYTE]).decode()
    cases = [Case(f"encode({word!r}, merges) with merges {[(x, y), (FIRST_MERGE, z)]} (= {word[:2]!r}, then "
                  f"{word!r})", (word, [(x, y), (FIRST_MERGE, z)])),
             Case(f"encode({word!r}, merges) with merges {[(y, z), (x, y)]} (= {word[1:]!r}, then {word[:2]!r})",
                  (word, [(y, z), (x, y)]))]
    texts = corpus(draw, 5)
    merges = package_merges(texts, 30)
    for text in ["", texts[0], texts[-1], " ".join(corpus(draw, 2)), "Tokens é, 12."]:
        cases.append(Case(f"encode({text!r}, merges) with the {len(merges)} merges learned from {texts}",
                          (text, merges)))
    check(ns, "encode", lambda text, merges: BPETokenizer(merges).encode(text), cases, TRAIN_FORBIDDEN)


TRAIN_FORBIDDEN = {**PIECES_FORBIDDEN, "the package's BPETokenizer.train": BPETokenizer.train,
                   "the package's BPETokenizer.encode": BPETokenizer.encode}


def no_pairs_hint(error: BaseException) -> str | None:
    """``min``/``max`` over an empty count: no pair was left."""
    if isinstance(error, ValueError) and "empty" in str(error):
        return NO_PAIRS
    return too_small_id_hint(error)


# ---------------------------------------------------------------------------------------- q4: digit groups
def check_split_digits(ns) -> None:
    draw = Draw()
    alphabet = list("ab Zé我,.'-") + list("0123456789") * 3 + ["٣", "  "]  # str.isdigit() agrees with \p{N}
    cases = [Case(repr(text), (text,)) for text in
             ("In 1234567 cases", "", " 12", "1234", "on 2026-12-07, 99.5 %", "x  123456 ", "a1b22c333d4444")]
    for _ in range(8):
        text = "".join(draw.choice(alphabet) for _ in range(draw.integer(5, 40)))
        cases.append(Case(repr(text), (text,)))
    check(ns, "split_digits", split_with(DIGIT_GROUPS), cases, error_hint=None)


# ---------------------------------------------------------------------------------------- q5: the backward pass
def package_grad(ids, grad_output, vocab_size) -> torch.Tensor:
    """The gradient of ``TokenEmbedding``'s weight for the output gradient ``grad_output``, by autograd."""
    block = TokenEmbedding(vocab_size, grad_output.size(-1))
    block(ids).backward(grad_output)
    return block.weight.grad


def check_embedding_grad(ns) -> None:
    draw = Draw()
    cases, twins = grad_cases(draw), grad_cases(draw.twin())   # twins: the same shapes, other ids
    forbidden = {"autograd (Tensor.backward)": torch.Tensor.backward, "autograd (torch.autograd.grad)":
                 torch.autograd.grad, "autograd (torch.autograd.backward)": torch.autograd.backward}
    check_function(ns["embedding_grad"], package_grad, cases, "embedding_grad", forbidden=forbidden, twins=twins)


def grad_cases(draw: Draw) -> list[Case]:
    cases = []
    for batch, seq in ((1, draw.integer(3, 6)), (draw.integer(2, 4), draw.integer(4, 9))):
        vocab_size, d_model = draw.integer(seq + 3, 30), draw.distinct(1, 2, 40, avoid=(seq, batch))[0]
        ids = draw.randint(0, vocab_size, (batch, seq))
        ids[0, -1] = ids[0, 0]  # a token that occurs at least twice
        grad_output = draw.randn(batch, seq, d_model)
        cases.append(Case(f"ids of shape {(batch, seq)} ({ids.tolist()}), vocab_size={vocab_size}, d_model={d_model}",
                          (ids, grad_output, vocab_size)))
    return cases


# ---------------------------------------------------------------------------------------- the exercises
q1 = Exercise(
    name="Merge one pair", variables=("merge_pair",), checker=check_merge_pair,
    hints=("Walk from the left with an index; after a match, jump over both ids.",
           "an empty output list and an index i from 0 to the end of ids; where ids[i] and the next id form the "
           "pair, append new_id and advance i by 2, else append ids[i] and advance by 1."),
    solution=solution_of("lesson01", "merge_pair"),
    mistakes=MISTAKES["merge_pair"])

q2 = Exercise(
    name="Train BPE", variables=("train",), checker=check_train,
    hints=("Work on the table of distinct words and their counts; each round: total pair counts over all words, "
           "pick the best, rewrite every word.",
           "count the words of split_words over all texts; give each word its byte ids (7 + byte); then n_merges "
           "times: add up each pair's count in each word times that word's count; take the pair with the highest "
           "total (ties: smallest tie_break_key); stop if no pair is left or that total is below 2; record it; "
           "merge it in every word with id 263 + (number of merges before it)."),
    solution=solution_of("lesson01", "count_pairs", "merge_pair", "train"),
    mistakes=MISTAKES["train"])

q3 = Exercise(
    name="Encode with BPE", variables=("encode",), checker=check_encode,
    hints=("Each word on its own, from its bytes; every merge in turn, in the order learned.",
           "for each word of split_words(text): its ids are 7 + each UTF-8 byte; go through the merges with their "
           "position k and merge each pair with id 263 + k; append the word's ids to the result."),
    solution=solution_of("lesson01", "merge_pair", "encode"),
    mistakes=MISTAKES["encode"])

q4 = Exercise(
    name="Digits in groups of three", variables=("split_digits",), checker=check_split_digits,
    hints=("Only the number rule of the pattern changes; everything else splits as split_words does.",
           "in tokenization.WORD_SPLIT_PATTERN replace the number rule ' ?\\p{N}+' by ' ?\\p{N}{1,3}' and return "
           "regex.findall(that pattern, text) — or cut each number piece of split_words(text) into groups of 3 from "
           "the left, the space on the first."),
    solution=solution_of("lesson01", "split_digits"),
    mistakes=MISTAKES["split_digits"])

q5 = Exercise(
    name="The embedding's gradient", variables=("embedding_grad",), checker=check_embedding_grad,
    hints=("E = √d · one_hot(ids) @ W is linear in W: its gradient is the transposed one-hot matrix times the "
           "output gradient, times √d.",
           "start from zeros (vocab_size, d_model); add each position's grad_output row into the row of its token "
           "(index_add_ over the flattened ids, or one_hot(ids).T @ grad_output); multiply by √d_model."),
    solution=solution_of("lesson01", "embedding_grad"),
    mistakes=MISTAKES["embedding_grad"])
