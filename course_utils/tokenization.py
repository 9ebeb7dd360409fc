"""Text → token ids → text: character, word and byte-level BPE tokenizers, plus batching.

Every vocabulary in the course starts with the same seven special tokens at fixed ids, so a model,
a mask and a loss can rely on them whatever tokenizer made the ids:

====  ========  ==================================================================
 id   token     used for
====  ========  ==================================================================
  0   [PAD]     filler that makes rows of a batch equally long (masked out)
  1   [UNK]     a character / word the vocabulary does not know (char and word only)
  2   [CLS]     first token of a sequence; its final vector summarises the sequence
  3   [SEP]     end of a sentence (BERT style)
  4   [MASK]    a hidden token the masked language model must predict
  5   [BOS]     beginning of a target sequence (decoders)
  6   [EOS]     end of a target sequence (decoders stop here)
====  ========  ==================================================================

Real tokens therefore have ids ``>= N_SPECIAL_TOKENS`` (7).

The byte-level BPE works on UTF-8 bytes, so every string in every script round-trips exactly:
``tok.decode(tok.encode(text)) == text``. It never needs [UNK]. It learns the same merges, in the same order, and
splits text the same way as Hugging Face ``tokenizers`` (byte-level pre-tokenizer + BPE trainer) configured alike;
a property test checks this on generated corpora in many scripts.

The character and word tokenizers decode an [UNK] id to :data:`UNKNOWN_MARKER` ("�"), so a lost character or word
stays visible in the text.
"""

from __future__ import annotations

import heapq
import json
import numbers
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import regex
import torch

from .errors import CourseTypeError, CourseValueError
from .validation import check_bool, check_int, check_non_negative_int, check_positive_int

__all__ = [
    "PAD", "UNK", "CLS", "SEP", "MASK", "BOS", "EOS", "SPECIAL_TOKENS", "N_SPECIAL_TOKENS",
    "PAD_ID", "UNK_ID", "CLS_ID", "SEP_ID", "MASK_ID", "BOS_ID", "EOS_ID", "UNKNOWN_MARKER",
    "WORD_SPLIT_PATTERN", "split_words", "byte_level_text", "byte_level_bytes", "tie_break_key",
    "add_special_tokens", "pad_batch", "count_pairs", "merge_pair",
    "CharTokenizer", "WordTokenizer", "BPETokenizer",
]

PAD, UNK, CLS, SEP, MASK, BOS, EOS = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[BOS]", "[EOS]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK, BOS, EOS)
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID, BOS_ID, EOS_ID = range(len(SPECIAL_TOKENS))
N_SPECIAL_TOKENS = len(SPECIAL_TOKENS)

#: What ``CharTokenizer.decode`` / ``WordTokenizer.decode`` write for an [UNK] id: U+FFFD, the character Unicode
#: reserves for "something was here that could not be represented" (the BPE writes it for broken UTF-8 too).
UNKNOWN_MARKER = "\N{REPLACEMENT CHARACTER}"

#: GPT-2's pre-tokenizer, character for character the pattern of Hugging Face's ``ByteLevel`` (for the ``regex``
#: package; the standard ``re`` knows no ``\p{...}``): English contractions, an optional leading space glued to a
#: run of letters (``\p{L}``) / numbers (``\p{N}``: also ², ½, ①) / other symbols, and whitespace (``\s``; the
#: control characters \x1c–\x1f are *not* whitespace here, they are symbols). Joining the pieces gives the text
#: back, so no character is ever lost. :func:`split_words` applies it.
WORD_SPLIT_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# Code points that the `regex` package (newer Unicode tables) calls letters or numbers but the regex engine inside
# Hugging Face `tokenizers` (Oniguruma, older tables) does not know yet, so it treats them as "other" symbols.
# Measured against tokenizers 0.23.3 over every code point (tests/test_bpe_matches_hf.py re-checks it).
_NEWER_THAN_HF = (
    r"\U00000558\U0000058B-\U0000058C\U0000088F\U00000C5C\U00000CDC\U0000208F\U0000209D-\U0000209F"
    r"\U0000A7CE-\U0000A7CF\U0000A7D2\U0000A7D4\U0000A7DD\U0000A7E2\U0000A7F1\U0000AB6C-\U0000AB6D"
    r"\U000107BB-\U000107BF\U00010940-\U00010959\U00010EC5-\U00010EC7\U00010ED9-\U00010EEE\U00011B0A"
    r"\U00011DB0-\U00011DDB\U00011DE0-\U00011DE9\U00011DF1\U0001246F\U00012475-\U0001247F\U00012550-\U00012686"
    r"\U00016EA0-\U00016EB8\U00016EBB-\U00016ED3\U00016FF2-\U00016FF6\U000187F8-\U000187FF\U00018CD6-\U00018CDA"
    r"\U00018D09-\U00018D20\U00018D80-\U00018DF2\U00018E00-\U00019191\U000191A0-\U000191D2\U0001B123-\U0001B128"
    r"\U0001B168\U0001D6A6\U0001DF1F-\U0001DF24\U0001DF2B-\U0001DF81\U0001DF90-\U0001DF96\U0001DFCD-\U0001DFFF"
    r"\U0001E6C0-\U0001E6DE\U0001E6E0-\U0001E6E2\U0001E6E4-\U0001E6E5\U0001E6E7-\U0001E6ED\U0001E6F0-\U0001E6F4"
    r"\U0001E6FE-\U0001E6FF\U0002B73A-\U0002B73F\U0002B81E\U0002CEA2-\U0002CEAD\U000323B0-\U00033479"
    r"\U0003D000-\U0003FC3F"
)
_LETTER = rf"[\p{{L}}--[{_NEWER_THAN_HF}]]"
_NUMBER = rf"[\p{{N}}--[{_NEWER_THAN_HF}]]"
_OTHER = rf"[[^\s\p{{L}}\p{{N}}][{_NEWER_THAN_HF}]]"
# WORD_SPLIT_PATTERN with the letter and number classes of HF's Unicode tables
_WORD_SPLIT = regex.compile(rf"(?V1)'s|'t|'re|'ve|'m|'ll|'d| ?{_LETTER}+| ?{_NUMBER}+| ?{_OTHER}+|\s+(?!\S)|\s+")
# Word-level tokenizer: a word is a run of letters/digits/underscore, or one punctuation mark.
_WORD_OR_PUNCT = re.compile(r"\w+|[^\w\s]")
_SPECIAL_TOKEN_TEXT = regex.compile("|".join(regex.escape(t) for t in SPECIAL_TOKENS))

# GPT-2's printable stand-in for each byte: printable Latin-1 bytes stand for themselves, the other 68 bytes
# (control characters, space, soft hyphen, ...) become chr(256), chr(257), ... in byte order. A space is "Ġ".
_PRINTABLE_BYTES = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
_OTHER_BYTES = [b for b in range(256) if b not in _PRINTABLE_BYTES]
_BYTE_TO_CHAR = [""] * 256
for _n, _b in enumerate(_OTHER_BYTES):
    _BYTE_TO_CHAR[_b] = chr(256 + _n)
for _b in _PRINTABLE_BYTES:
    _BYTE_TO_CHAR[_b] = chr(_b)
_CHAR_TO_BYTE = {c: b for b, c in enumerate(_BYTE_TO_CHAR)}


def split_words(text: str) -> list[str]:
    """Cut ``text`` into the words BPE works on (:data:`WORD_SPLIT_PATTERN`); ``"".join`` gives ``text`` back.

    Exactly Hugging Face's split, also for the few thousand letters and numbers that only the newest Unicode
    versions define (HF's regex engine does not know them yet and treats them as symbols).

    >>> split_words("The cat's 3 hats")
    ['The', ' cat', "'s", ' 3', ' hats']
    """
    _check_text(text, "split_words")
    return _WORD_SPLIT.findall(text)


def byte_level_text(data: bytes) -> str:
    """GPT-2's printable form of ``data``, one character per byte (``b" the"`` → ``"Ġthe"``): how Hugging Face
    ``tokenizers`` writes byte-level tokens. :func:`byte_level_bytes` is the inverse."""
    if not isinstance(data, (bytes, bytearray)):
        raise CourseTypeError(f"byte_level_text expects bytes, got {type(data).__name__}; use text.encode('utf-8').")
    return "".join(_BYTE_TO_CHAR[b] for b in data)


def byte_level_bytes(token: str) -> bytes:
    """The bytes behind a Hugging Face byte-level token (``"Ġthe"`` → ``b" the"``)."""
    if not isinstance(token, str):
        raise CourseTypeError(f"byte_level_bytes expects a str token, got {type(token).__name__}.")
    try:
        return bytes(_CHAR_TO_BYTE[c] for c in token)
    except KeyError as error:
        raise CourseValueError(
            f"byte_level_bytes: {error.args[0]!r} in {token!r} is not one of GPT-2's 256 byte characters; "
            "expected a token of a byte-level vocabulary (special tokens such as '[CLS]' are not byte-level)."
        ) from None


# ---------------------------------------------------------------------------------------------- validation
def _is_int(value) -> bool:
    """A Python / NumPy integer or a 0-d integer tensor — not a bool (True is no id or size)."""
    if isinstance(value, torch.Tensor):
        return value.dim() == 0 and not (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool)
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _check_id(value, name: str, minimum: int | None = None, where: str = "") -> int:
    """A token id as an int (Python or NumPy integer, or a 0-d integer tensor such as ``ids[0]``; never a bool or
    a float), at least ``minimum``."""
    if type(value) is int and (minimum is None or value >= minimum):
        return value
    prefix = f"{where}: " if where else ""
    if not _is_int(value):
        raise CourseTypeError(f"{prefix}{name} must be an int, got {type(value).__name__} {value!r}. Pass an int.")
    value = int(value)
    if minimum is not None and value < minimum:
        raise CourseValueError(f"{prefix}{name} must be >= {minimum}, got {value}.")
    return value


def _check_texts(texts: Iterable[str], what: str) -> list[str]:
    """Return ``texts`` as a list of strings, or raise an error that says how to fix the call."""
    if isinstance(texts, str):
        raise CourseTypeError(
            f"{what} expects a list of strings, got one str of {len(texts)} characters "
            f"(iterating it would give single characters). Wrap it: [{texts[:20]!r}...]."
        )
    if isinstance(texts, (bytes, bytearray, torch.Tensor)) or not isinstance(texts, Iterable):
        raise CourseTypeError(f"{what} expects a list of strings, got {type(texts).__name__}.")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise CourseTypeError(f"{what}: item {i} is {type(text).__name__}, expected str. Convert or drop it.")
    if not any(texts):
        raise CourseValueError(
            f"{what} got no text ({len(texts)} items, all empty). Pass a non-empty list of sentences, "
            "e.g. load_pydoc_corpus().sentences."
        )
    return texts


def _check_text(text: str, what: str = "encode") -> None:
    if not isinstance(text, str):
        hint = " Decode it first: data.decode('utf-8')." if isinstance(text, (bytes, bytearray)) else ""
        hint = hint or (" For several texts use encode_batch." if isinstance(text, (list, tuple)) else "")
        raise CourseTypeError(f"{what} expects a str, got {type(text).__name__}.{hint}")


def _id_list(ids, what: str) -> list[int]:
    """A sequence of integer ids (list, tuple, 1-D integer tensor) as a list of Python ints."""
    if type(ids) is list and all(type(i) is int for i in ids):
        return ids  # the common case, checked fast (merge_pair runs in training loops)
    if isinstance(ids, torch.Tensor):
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            raise CourseTypeError(
                f"{what}: ids must be integers, got a {ids.dtype} tensor. Token ids are integers: use ids.long()."
            )
        if ids.dim() != 1:
            raise CourseValueError(
                f"{what}: expected one sequence of ids (1-D), got a tensor of shape {tuple(ids.shape)}. "
                "For a (batch, seq) tensor handle one row at a time: [... for row in batch]."
            )
        return ids.tolist()
    if isinstance(ids, (str, bytes, bytearray)) or not isinstance(ids, Iterable):
        raise CourseTypeError(f"{what}: expected a sequence of int ids, got {type(ids).__name__}.")
    out = []
    for position, i in enumerate(ids):
        if not _is_int(i):
            more = (" For a batch, handle one row at a time." if isinstance(i, (list, tuple, torch.Tensor))
                    else " Token ids are integers: convert with int() / .long().")
            raise CourseTypeError(f"{what}: item {position} is {type(i).__name__} {i!r}, expected an int id.{more}")
        out.append(int(i))
    return out


# ---------------------------------------------------------------------------------------------- batching
def add_special_tokens(
    ids: Sequence[int], add_cls: bool = False, add_sep: bool = False, add_bos_eos: bool = False,
    max_len: int | None = None,
) -> list[int]:
    """Wrap one sequence of ids: ``[CLS]? [BOS]? ids [EOS]? [SEP]?``, truncating the *content* so the
    result has at most ``max_len`` ids (the special tokens are never cut off)."""
    ids = _id_list(ids, "add_special_tokens")
    add_cls, add_sep, add_bos_eos = (check_bool(name, flag) for name, flag in
                                     (("add_cls", add_cls), ("add_sep", add_sep), ("add_bos_eos", add_bos_eos)))
    head = ([CLS_ID] if add_cls else []) + ([BOS_ID] if add_bos_eos else [])
    tail = ([EOS_ID] if add_bos_eos else []) + ([SEP_ID] if add_sep else [])
    if max_len is not None:
        max_len = check_int("max_len", max_len)
        room = max_len - len(head) - len(tail)
        if room < 1:
            raise CourseValueError(
                f"max_len={max_len} leaves no room for text after {len(head) + len(tail)} special tokens; "
                f"use max_len >= {len(head) + len(tail) + 1}."
            )
        ids = ids[:room]
    return head + ids + tail


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int = PAD_ID, max_len: int | None = None) -> torch.Tensor:
    """Stack id sequences of different lengths into one ``(batch, seq)`` int64 tensor.

    ``sequences`` is a list (or tuple) of id sequences — lists of ints or 1-D integer tensors — or a 2-D integer
    tensor. Rows longer than ``max_len`` (>= 1) are truncated; all rows are right-padded with ``pad_id`` to the
    longest (truncated) row. The matching attention mask is ``course_utils.masks.padding_mask(batch, pad_id)``.

    Raises if the batch or a row is empty (an all-[PAD] row has no key attention may read, so its output
    means nothing — all zeros in the course's attention, NaN where masked scores are filled with ``-inf``), if an
    id is not an integer (a float id would be silently truncated) or negative, or if a row already contains
    ``pad_id`` (that real token would be masked out as if it were padding).
    """
    if isinstance(sequences, torch.Tensor):
        if sequences.dim() != 2:
            raise CourseValueError(
                f"pad_batch: a tensor batch must be 2-D (batch, seq), got shape {tuple(sequences.shape)}. "
                "For one sequence use pad_batch([ids])."
            )
        sequences = list(sequences)
    elif not isinstance(sequences, (list, tuple)):
        raise CourseTypeError(
            f"pad_batch expects a list of id sequences, got {type(sequences).__name__}. "
            "Example: pad_batch([[12, 40, 7], [12, 9]])."
        )
    pad_id = check_non_negative_int("pad_id", pad_id)
    if pad_id >= 2**63:
        raise CourseValueError(f"pad_id={pad_id} does not fit the int64 ids of a batch; pad with a small id that "
                               "is in your vocabulary (the course uses PAD_ID = 0)")
    if max_len is not None:
        max_len = check_int("max_len", max_len)
        if max_len < 1:
            raise CourseValueError(
                f"pad_batch: max_len must be >= 1 (the longest row to keep), got {max_len}; "
                "use None to keep every token."
            )
    if len(sequences) == 0:
        raise CourseValueError("pad_batch got an empty batch; pass at least one sequence of ids.")
    rows = []
    for i, seq in enumerate(sequences):
        if _is_int(seq) or isinstance(seq, (bool, float)) or isinstance(seq, torch.Tensor) and seq.dim() == 0:
            raise CourseTypeError(
                f"pad_batch: item {i} is one id ({seq!r}), expected a sequence of ids. "
                f"For a single sequence wrap it: pad_batch([{list(sequences)[:3]}...])."
            )
        row = _id_list(seq, f"pad_batch: sequence {i}")
        if max_len is not None:
            row = row[:max_len]
        if len(row) == 0:
            raise CourseValueError(
                f"pad_batch: sequence {i} is empty; it would become an all-[PAD] row whose padding mask hides "
                "every key, so its attention output means nothing (all zeros from course_utils.attention, NaN in code "
                "that masks with -inf). Drop empty texts or add a [CLS] token."
            )
        if pad_id in row:
            raise CourseValueError(
                f"pad_batch: sequence {i} already contains the pad id {pad_id} at position {row.index(pad_id)}; "
                f"the padding mask would hide that real token. Real tokens need ids >= {N_SPECIAL_TOKENS} "
                "(ids 0..6 are reserved for special tokens)."
            )
        if min(row) < 0:
            raise CourseValueError(f"pad_batch: sequence {i} has a negative id {min(row)}; ids must be >= 0.")
        rows.append(row)
    width = max(len(row) for row in rows)
    batch = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        batch[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return batch


# ---------------------------------------------------------------------------------------------- tokenizers
class Tokenizer:
    """What every course tokenizer shares: the special tokens, batching and id checks.

    Subclasses provide ``encode(text) -> list[int]``, ``decode(ids) -> str``, ``tokenize(text) -> list[str]``
    and ``vocab_size``.
    """

    pad_id = PAD_ID
    special_tokens = SPECIAL_TOKENS

    @property
    def vocab_size(self) -> int:
        raise NotImplementedError

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError

    def encode_batch(
        self, texts: Sequence[str], add_cls: bool = False, add_sep: bool = False, add_bos_eos: bool = False,
        max_len: int | None = None,
    ) -> torch.Tensor:
        """Encode several texts into one padded ``(batch, seq)`` int64 tensor (pad id 0).

        ``add_cls`` prepends [CLS], ``add_sep`` appends [SEP], ``add_bos_eos`` wraps in [BOS] ... [EOS];
        ``max_len`` truncates the text part so each row, special tokens included, has at most ``max_len`` ids.
        """
        if isinstance(texts, str):
            raise CourseTypeError(
                f"encode_batch expects a list of strings, got one str; wrap it: [{texts[:20]!r}...]."
            )
        if not isinstance(texts, (list, tuple)):
            raise CourseTypeError(f"encode_batch expects a list of strings, got {type(texts).__name__}.")
        if len(texts) == 0:
            raise CourseValueError("encode_batch got an empty list; pass at least one text.")
        rows = [
            add_special_tokens(self.encode(text), add_cls, add_sep, add_bos_eos, max_len) for text in texts
        ]
        for i, row in enumerate(rows):
            if not row:
                raise CourseValueError(
                    f"encode_batch: text {i} is empty, which would give an all-[PAD] row: attention has no key "
                    "to read there, so its output means nothing. "
                    "Drop empty texts or pass add_cls=True / add_bos_eos=True."
                )
        return pad_batch(rows, pad_id=self.pad_id)

    def _check_ids(self, ids: Iterable[int], what: str = "decode") -> list[int]:
        ids = _id_list(ids, what)
        for position, i in enumerate(ids):
            if not 0 <= i < self.vocab_size:
                raise CourseValueError(
                    f"id {i!r} at position {position} is not in this vocabulary (ids 0..{self.vocab_size - 1}). "
                    "Were these ids made by a different tokenizer, or a model with a larger vocab_size?"
                )
        return ids


class _TableTokenizer(Tokenizer):
    """A tokenizer that is a lookup table from pieces (characters or words) to ids."""

    def __init__(self, pieces: Sequence[str]):
        if isinstance(pieces, (str, bytes, torch.Tensor)) or not isinstance(pieces, Iterable):
            raise CourseTypeError(
                f"{type(self).__name__} expects a list of pieces (str), got {type(pieces).__name__}; "
                f"to learn them from text use {type(self).__name__}.train(texts)."
            )
        pieces = list(pieces)
        for i, piece in enumerate(pieces):
            if not isinstance(piece, str):
                raise CourseTypeError(f"{type(self).__name__}: piece {i} is {type(piece).__name__}, expected a str.")
            if not piece:
                raise CourseValueError(f"{type(self).__name__}: piece {i} is empty; every piece needs a character.")
        self.id_to_piece = list(SPECIAL_TOKENS) + [p for p in dict.fromkeys(pieces) if p not in SPECIAL_TOKENS]
        self.piece_to_id = {piece: i for i, piece in enumerate(self.id_to_piece)}

    @property
    def vocab_size(self) -> int:
        return len(self.id_to_piece)

    def encode(self, text: str) -> list[int]:
        """Ids of ``tokenize(text)``; pieces not in the vocabulary become [UNK] (id 1)."""
        return [self.piece_to_id.get(piece, UNK_ID) for piece in self.tokenize(text)]

    def tokenize(self, text: str) -> list[str]:
        raise NotImplementedError

    def _pieces(self, ids: Iterable[int], skip_special_tokens: bool) -> list[str]:
        """Pieces of ``ids``: [UNK] becomes :data:`UNKNOWN_MARKER` (unless ``skip_special_tokens=False``, which
        writes every special token as its text), the other special tokens are dropped."""
        skip_special_tokens = check_bool("skip_special_tokens", skip_special_tokens)
        pieces = []
        for i in self._check_ids(ids):
            if not skip_special_tokens:
                pieces.append(self.id_to_piece[i])
            elif i == UNK_ID:
                pieces.append(UNKNOWN_MARKER)
            elif i >= N_SPECIAL_TOKENS:
                pieces.append(self.id_to_piece[i])
        return pieces

    @classmethod
    def _most_common(cls, counts: Counter, vocab_size: int | None, min_count: int) -> list[str]:
        where = f"{cls.__name__}.train"
        if vocab_size is not None:
            vocab_size = check_int("vocab_size", vocab_size)
            if vocab_size <= N_SPECIAL_TOKENS:
                raise CourseValueError(
                    f"{where}: vocab_size={vocab_size} leaves no room after the {N_SPECIAL_TOKENS} special tokens; "
                    f"use vocab_size >= {N_SPECIAL_TOKENS + 1} (or None to keep every piece)."
                )
        min_count = check_positive_int("min_count", min_count)
        ranked = sorted((piece for piece, c in counts.items() if c >= min_count), key=lambda p: (-counts[p], p))
        return ranked if vocab_size is None else ranked[: vocab_size - N_SPECIAL_TOKENS]


class CharTokenizer(_TableTokenizer):
    """One token per Unicode character. Tiny vocabulary, long sequences; unseen characters → [UNK], which
    ``decode`` writes as :data:`UNKNOWN_MARKER` ("�"), so the decoded text keeps its length."""

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int | None = None, min_count: int = 1) -> "CharTokenizer":
        """Keep the characters seen at least ``min_count`` times (the most frequent ``vocab_size - 7``)."""
        counts = Counter(ch for text in _check_texts(texts, "CharTokenizer.train") for ch in text)
        return cls(cls._most_common(counts, vocab_size, min_count))

    def tokenize(self, text: str) -> list[str]:
        _check_text(text)
        return list(text)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of ``ids``; [UNK] → "�", other special tokens dropped (written out if ``skip_special_tokens=False``)."""
        return "".join(self._pieces(ids, skip_special_tokens))


class WordTokenizer(_TableTokenizer):
    """One token per word or punctuation mark. Short sequences, huge vocabulary, unseen words → [UNK], which
    ``decode`` writes as :data:`UNKNOWN_MARKER` ("�").

    ``decode`` joins words with single spaces, so it cannot restore the original spacing: word-level
    tokenization is lossy (one reason subwords won).
    """

    def __init__(self, pieces: Sequence[str], lowercase: bool = False):
        super().__init__(pieces)
        self.lowercase = check_bool("lowercase", lowercase)

    @classmethod
    def train(
        cls, texts: Iterable[str], vocab_size: int | None = None, min_count: int = 1, lowercase: bool = False,
    ) -> "WordTokenizer":
        """Keep the words seen at least ``min_count`` times (the most frequent ``vocab_size - 7``)."""
        lowercase = check_bool("lowercase", lowercase)
        counts = Counter()
        for text in _check_texts(texts, "WordTokenizer.train"):
            counts.update(_WORD_OR_PUNCT.findall(text.lower() if lowercase else text))
        if not counts:
            raise CourseValueError("WordTokenizer.train found no word in the texts (they are empty or only "
                                   "whitespace); pass texts with words in them")
        return cls(cls._most_common(counts, vocab_size, min_count), lowercase=lowercase)

    def tokenize(self, text: str) -> list[str]:
        _check_text(text)
        return _WORD_OR_PUNCT.findall(text.lower() if self.lowercase else text)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Words of ``ids`` joined by spaces; [UNK] → "�", other special tokens dropped (or written out)."""
        return " ".join(self._pieces(ids, skip_special_tokens))


# Hugging Face numbers the 256 byte tokens in the order of their GPT-2 characters (printable bytes first).
_HF_BYTE_ORDER = sorted(range(256), key=lambda b: ord(_BYTE_TO_CHAR[b]))
_HF_POSITION = [0] * 256
for _position, _b in enumerate(_HF_BYTE_ORDER):
    _HF_POSITION[_b] = _position


def tie_break_key(pair: tuple[int, int]) -> tuple[int, int]:
    """Of several equally frequent pairs, BPE training merges the one with the smallest key (Hugging Face's rule).

    The key is the pair's two token ids as Hugging Face numbers them: special tokens 0..6 and merged tokens (263
    onwards, by age) as here, but the 256 bytes in the order of their GPT-2 characters — ``!`` … ``~``, ``¡`` …
    ``ÿ``, then the other 68 bytes by value (the controls 0–31, the space 32, 127–160 and 173) — instead of by byte
    value. So "el" (both letters) beats " w" (the space sorts after every printable byte), although the space byte
    32 is smaller than "e" (101).

    >>> tie_break_key((7 + ord("e"), 7 + ord("l"))) < tie_break_key((7 + ord(" "), 7 + ord("w")))
    True
    """
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise CourseTypeError(f"tie_break_key expects a pair of token ids (a, b), got {pair!r}.")
    a, b = (_check_id(i, "token id", minimum=0, where="tie_break_key") for i in pair)
    return _hf_id(a), _hf_id(b)


def _hf_id(token_id: int) -> int:
    if N_SPECIAL_TOKENS <= token_id < N_SPECIAL_TOKENS + 256:
        return N_SPECIAL_TOKENS + _HF_POSITION[token_id - N_SPECIAL_TOKENS]
    return token_id


def _merge_counting_changes(symbols: list[int], a: int, b: int, new_id: int, changes: list) -> list[int]:
    """``merge_pair(symbols, (a, b), new_id)``, appending to ``changes`` how the neighbouring pairs change, as
    ``((left, right), +1 / -1)`` — exactly the bookkeeping of the Hugging Face trainer (which does not subtract the
    merged pair itself)."""
    out, i, n = [], 0, len(symbols)
    while i < n:
        if symbols[i] == a and i + 1 < n and symbols[i + 1] == b:
            if out:
                changes.append(((out[-1], a), -1))
                changes.append(((out[-1], new_id), 1))
            if i + 2 < n:
                changes.append(((b, symbols[i + 2]), -1))
                changes.append(((new_id, symbols[i + 2]), 1))
            out.append(new_id)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


class BPETokenizer(Tokenizer):
    """Byte-level byte-pair encoding (GPT-2 style), trained from scratch.

    Vocabulary: ids 0..6 special tokens, ids 7..262 the 256 single bytes (byte ``b`` has id ``7 + b``), then one
    id per learned merge whose result is new (in practice every merge: merge ``k`` creates id ``263 + k``; a merge
    that rebuilds an existing token — "ab" + "c" after "a" + "bc" — reuses that token's id). Text is split into
    words by :data:`WORD_SPLIT_PATTERN` first, so merges never cross a word boundary; a leading space belongs to the
    word (``" the"``).

    Training and encoding follow Hugging Face ``tokenizers`` step for step (lesson 01 compares them), so both learn
    the same merges in the same order and cut every text into the same tokens.

    :meth:`write_vocab_and_merges` and :meth:`read_vocab_and_merges` write and read the two files of a GPT-2-format
    tokenizer (``vocab.json`` + ``merges.txt``), so a tokenizer trained here loads in Hugging Face's
    ``ByteLevelBPETokenizer``, and GPT-2's own files (or a tokenizer trained with ``tokenizers``) load here, giving
    the same ids.
    """

    n_byte_tokens = 256
    first_merge_id = N_SPECIAL_TOKENS + n_byte_tokens
    min_vocab_size = first_merge_id

    def __init__(self, merges: Sequence[tuple[int, int]] = ()):
        if isinstance(merges, (str, bytes)) or not isinstance(merges, Iterable) or (
                isinstance(merges, torch.Tensor) and merges.dim() != 2):
            raise CourseTypeError(
                f"BPETokenizer expects a list of merges (pairs of ids), got {type(merges).__name__}; "
                "to learn them from text use BPETokenizer.train(texts, vocab_size)."
            )
        self.merges: list[tuple[int, int]] = []
        self.token_bytes: list[bytes] = [t.encode() for t in SPECIAL_TOKENS] + [bytes([b]) for b in range(256)]
        self._bytes_to_id = {t: i for i, t in enumerate(self.token_bytes) if i >= N_SPECIAL_TOKENS}
        # (a, b) -> (priority, id of the merged token); a pair learned twice keeps its later priority (as HF does)
        self.merge_rank: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, pair in enumerate(merges):
            self._add_merge(rank, pair)
        self._word_cache: dict[str, list[int]] = {}
        # a vocabulary read from vocab.json numbers the tokens its own way (see read_vocab_and_merges):
        self._file_ids: list[int] | None = None       # our id -> the file's id (-1: our special token, not in it)
        self._from_file: dict[int, int] = {}          # the file's id -> our id
        self._file_specials: dict[int, str] = {}      # the file's tokens that bytes and merges never make
        self._file_vocab_size = 0

    def _add_merge(self, rank: int, pair) -> int:
        if isinstance(pair, torch.Tensor) and pair.dim() == 1:
            pair = pair.tolist()
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise CourseValueError(f"merge {rank} is {pair!r}; each merge must be a pair of token ids (a, b).")
        a, b = (_check_id(i, f"merge {rank}", where="BPETokenizer") for i in pair)
        if not (N_SPECIAL_TOKENS <= a < len(self.token_bytes) and N_SPECIAL_TOKENS <= b < len(self.token_bytes)):
            raise CourseValueError(
                f"merge {rank} = ({a}, {b}) uses an id that does not exist yet (ids {N_SPECIAL_TOKENS}.."
                f"{len(self.token_bytes) - 1} so far); the merge list is corrupt."
            )
        merged = self.token_bytes[a] + self.token_bytes[b]
        new_id = self._bytes_to_id.get(merged)
        if new_id is None:
            new_id = len(self.token_bytes)
            self.token_bytes.append(merged)
            self._bytes_to_id[merged] = new_id
        self.merges.append((a, b))
        self.merge_rank[(a, b)] = (rank, new_id)
        return new_id

    @property
    def vocab_size(self) -> int:
        return len(self.token_bytes) if self._file_ids is None else self._file_vocab_size

    # ------------------------------------------------------------------ training
    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> "BPETokenizer":
        """Learn merges from ``texts`` until the vocabulary has ``vocab_size`` tokens: repeatedly fuse the most
        frequent adjacent pair (counted over words, weighted by how often each word occurs).

        The rules are Hugging Face's ``BpeTrainer`` (with ``initial_alphabet`` = all 256 bytes and the 7 special
        tokens first): ties between equally frequent pairs go to the smallest :func:`tie_break_key`; a pair must
        occur at least ``min_frequency`` times; training stops (with a warning) when no pair is frequent enough.

        Pair counts are kept incrementally: each merge revisits only the words that contain the pair, and the best
        pair comes from a lazy max-heap (an entry whose count is out of date is re-queued with its current count).
        """
        vocab_size = check_int("vocab_size", vocab_size, minimum=cls.min_vocab_size,
                               hint=f" ({N_SPECIAL_TOKENS} special tokens + 256 bytes); "
                                    "try 1000-8000 for English prose")
        min_frequency = check_non_negative_int("min_frequency", min_frequency)
        word_counts = Counter()
        for text in _check_texts(texts, "BPETokenizer.train"):
            word_counts.update(_WORD_SPLIT.findall(text))
        tokenizer = cls()
        words = [[N_SPECIAL_TOKENS + b for b in word.encode("utf-8")] for word in word_counts]
        freqs = list(word_counts.values())

        pair_counts: dict[tuple[int, int], int] = {}
        pair_words: dict[tuple[int, int], set[int]] = {}
        for w, (symbols, freq) in enumerate(zip(words, freqs)):
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] = pair_counts.get(pair, 0) + freq
                pair_words.setdefault(pair, set()).add(w)
        # heap entry: (-count, HF id of left token, HF id of right token, push number, pair, words to visit)
        pushes = 0
        heap = []
        for pair, where in pair_words.items():
            heap.append((-pair_counts[pair], _hf_id(pair[0]), _hf_id(pair[1]), pushes, pair, where))
            pushes += 1
        heapq.heapify(heap)

        while tokenizer.vocab_size < vocab_size and heap:
            neg_count, key_a, key_b, _, pair, where = heapq.heappop(heap)
            count = pair_counts[pair]
            if -neg_count != count:  # out of date: queue it again with its current count
                heapq.heappush(heap, (-count, key_a, key_b, pushes, pair, where))
                pushes += 1
                continue
            if count < 1 or count < min_frequency:
                break
            new_id = tokenizer._add_merge(len(tokenizer.merges), pair)
            changes: list = []
            changed_words: dict[tuple[int, int], set[int]] = {}
            for w in where:
                symbols = words[w]
                if pair[0] not in symbols:
                    continue
                start = len(changes)
                merged = _merge_counting_changes(symbols, pair[0], pair[1], new_id, changes)
                words[w] = merged
                freq = freqs[w]
                for changed, delta in changes[start:]:
                    pair_counts[changed] = pair_counts.get(changed, 0) + delta * freq
                    if delta > 0:
                        changed_words.setdefault(changed, set()).add(w)
            for changed, where_changed in changed_words.items():
                if pair_counts[changed] > 0:
                    heapq.heappush(heap, (-pair_counts[changed], _hf_id(changed[0]), _hf_id(changed[1]), pushes,
                                          changed, where_changed))
                    pushes += 1
        if tokenizer.vocab_size < vocab_size:
            warnings.warn(
                f"BPETokenizer.train stopped at vocab_size {tokenizer.vocab_size} (asked {vocab_size}): "
                f"no pair left that occurs >= {max(min_frequency, 1)} times. Use more text or a smaller vocab_size.",
                stacklevel=2,
            )
        return tokenizer

    # ------------------------------------------------------------------ encoding
    def _encode_word(self, word: str) -> list[int]:
        """Replay the merges on one word, always applying the highest-priority pair present (leftmost first)."""
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        symbols = [N_SPECIAL_TOKENS + b for b in word.encode("utf-8")]
        n = len(symbols)
        following = list(range(1, n)) + [-1]
        preceding = list(range(-1, n - 1))
        alive = [True] * n
        ranks = self.merge_rank
        queue = []
        for i in range(n - 1):
            found = ranks.get((symbols[i], symbols[i + 1]))
            if found is not None:
                queue.append((found[0], i, found[1]))
        heapq.heapify(queue)
        while queue:
            _, i, new_id = heapq.heappop(queue)
            j = following[i]
            if not alive[i] or j == -1:
                continue
            found = ranks.get((symbols[i], symbols[j]))
            if found is None or found[1] != new_id:
                continue  # out of date: one of the two tokens has been merged since
            symbols[i] = new_id
            alive[j] = False
            following[i] = following[j]
            if following[j] != -1:
                preceding[following[j]] = i
            if preceding[i] != -1:
                found = ranks.get((symbols[preceding[i]], new_id))
                if found is not None:
                    heapq.heappush(queue, (found[0], preceding[i], found[1]))
            if following[i] != -1:
                found = ranks.get((new_id, symbols[following[i]]))
                if found is not None:
                    heapq.heappush(queue, (found[0], i, found[1]))
        symbols = [s for s, keep in zip(symbols, alive) if keep]
        if len(self._word_cache) < 100_000:
            self._word_cache[word] = symbols
        return symbols

    def encode(self, text: str, recognize_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text`` (no special tokens added; ``encode("") == []``).

        The text ``"[CLS]"`` is ordinary text by default (5 bytes), so every string round-trips. With
        ``recognize_special_tokens=True`` the exact texts of :data:`SPECIAL_TOKENS` become their ids (0..6) —
        what Hugging Face ``tokenizers`` does by default.
        """
        _check_text(text)
        recognize = check_bool("recognize_special_tokens", recognize_special_tokens)
        if self._file_ids is not None:
            return self._encode_in_file_ids(text, recognize)
        if not recognize:
            return [i for word in _WORD_SPLIT.findall(text) for i in self._encode_word(word)]
        ids, start = [], 0
        for match in _SPECIAL_TOKEN_TEXT.finditer(text):
            ids += self.encode(text[start:match.start()])
            ids.append(SPECIAL_TOKENS.index(match.group()))
            start = match.end()
        return ids + self.encode(text[start:])

    def _encode_in_file_ids(self, text: str, recognize: bool) -> list[int]:
        """:meth:`encode` for a vocabulary read from files: our ids turned into the file's; with ``recognize`` the
        file's special tokens (those bytes and merges never make, e.g. ``<|endoftext|>``) become their ids."""
        to_file = self._file_ids

        def plain(part: str) -> list[int]:
            return [to_file[i] for word in _WORD_SPLIT.findall(part) for i in self._encode_word(word)]

        if not recognize or not self._file_specials:
            return plain(text)
        by_text = {t: i for i, t in self._file_specials.items()}
        pattern = regex.compile("|".join(regex.escape(t) for t in sorted(by_text, key=len, reverse=True)))
        ids, start = [], 0
        for match in pattern.finditer(text):
            ids += plain(text[start:match.start()])
            ids.append(by_text[match.group()])
            start = match.end()
        return ids + plain(text[start:])

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of ``ids``. Special tokens are dropped (or written as ``[CLS]`` etc. when
        ``skip_special_tokens=False``); byte sequences that are not valid UTF-8 become U+FFFD."""
        ids = self._check_ids(ids)
        skip = check_bool("skip_special_tokens", skip_special_tokens)
        if self._file_ids is not None:
            pieces = [self._file_token_bytes(i, position) for position, i in enumerate(ids)
                      if not (skip and i in self._file_specials)]
            return b"".join(pieces).decode("utf-8", errors="replace")
        if skip:
            ids = [i for i in ids if i >= N_SPECIAL_TOKENS]
        return b"".join(self.token_bytes[i] for i in ids).decode("utf-8", errors="replace")

    def _file_token_bytes(self, file_id: int, position: int = 0) -> bytes:
        """The bytes of the file's token ``file_id`` (a special token: its text)."""
        if file_id in self._file_specials:
            return self._file_specials[file_id].encode("utf-8")
        ours = self._from_file.get(file_id)
        if ours is None:
            raise CourseValueError(f"id {file_id} at position {position} is not in this vocabulary: vocab.json has no "
                                   "token with that id; were these ids made by another tokenizer?")
        return self.token_bytes[ours]

    def token_str(self, token_id: int) -> str:
        """Readable form of one token: its text, or ``\\xe4``-style escapes for a partial UTF-8 character."""
        token_id = self._check_ids([_check_id(token_id, "token_id", where="token_str")], "token_str")[0]
        data = self.token_bytes[token_id] if self._file_ids is None else self._file_token_bytes(token_id)
        return data.decode("utf-8", errors="backslashreplace")

    def tokenize(self, text: str) -> list[str]:
        """The pieces ``encode`` produces, as readable strings (see :meth:`token_str`)."""
        return [self.token_str(i) for i in self.encode(text)]

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> None:
        """Write the tokenizer as JSON (the merge list is the whole model)."""
        if self._file_ids is not None:
            raise CourseValueError("this tokenizer was read from vocab.json + merges.txt and numbers its tokens as "
                                   "they do; save it in that format with write_vocab_and_merges(folder)")
        data = {"type": "byte_level_bpe", "format_version": 2, "special_tokens": list(SPECIAL_TOKENS),
                "word_split_pattern": WORD_SPLIT_PATTERN, "merges": [list(m) for m in self.merges]}
        path = _check_path(path, "save")
        if not path.parent.is_dir():
            raise CourseValueError(f"save: the folder of {str(path)!r} does not exist; create it first with "
                                   f"Path({str(path.parent)!r}).mkdir(parents=True), or save elsewhere.")
        path.write_text(json.dumps(data), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "BPETokenizer":
        """Read a tokenizer written by :meth:`save`."""
        path = _check_path(path, "load")
        if not path.is_file():
            raise CourseValueError(f"load: no such file: {str(path)!r}; pass the path you gave BPETokenizer.save.")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            data = None
        if not (isinstance(data, dict) and data.get("type") == "byte_level_bpe"
                and isinstance(data.get("merges"), list)):
            raise CourseValueError(
                f"{path} is not a file written by BPETokenizer.save (no 'type': 'byte_level_bpe')."
            )
        if data.get("special_tokens") != list(SPECIAL_TOKENS) or data.get("word_split_pattern") != WORD_SPLIT_PATTERN:
            raise CourseValueError(
                f"{path} was saved with other special tokens or word splitting; retrain the tokenizer."
            )
        return cls(data["merges"])


    # ------------------------------------------------------------------ GPT-2's two files
    def write_vocab_and_merges(self, folder: str | Path) -> tuple[Path, Path]:
        """Write ``vocab.json`` and ``merges.txt`` into ``folder``: the two files of a GPT-2-format byte-level BPE.

        ``vocab.json`` maps each token, written in GPT-2's printable byte characters (:func:`byte_level_text`: a
        space is ``Ġ``), to its id, the seven special tokens included; ``merges.txt`` lists the merges in the order
        they were learned, one ``left right`` pair a line, after a ``#version: 0.2`` line. Hugging Face's
        ``ByteLevelBPETokenizer(vocab, merges)`` (or ``GPT2TokenizerFast``) reading them gives the ids this tokenizer
        gives. Returns the two paths.
        """
        folder = _check_folder(folder, "write_vocab_and_merges")
        if self._file_ids is None:
            vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
            numbered = range(N_SPECIAL_TOKENS, len(self.token_bytes))
            ids = list(range(len(self.token_bytes)))
        else:
            vocab = {token: i for i, token in self._file_specials.items()}
            numbered = [i for i in range(N_SPECIAL_TOKENS, len(self.token_bytes))]
            ids = self._file_ids
        for i in numbered:
            token = byte_level_text(self.token_bytes[i])
            if token in vocab:
                raise CourseValueError(f"the learned token {token!r} has the text of a special token; vocab.json "
                                       "cannot hold both. Retrain without it")
            vocab[token] = ids[i]
        lines = ["#version: 0.2"] + [f"{byte_level_text(self.token_bytes[a])} {byte_level_text(self.token_bytes[b])}"
                                     for a, b in self.merges]
        vocab_path, merges_path = folder / "vocab.json", folder / "merges.txt"
        vocab_path.write_text(json.dumps(dict(sorted(vocab.items(), key=lambda item: item[1])), ensure_ascii=False),
                              encoding="utf-8")
        merges_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return vocab_path, merges_path

    @classmethod
    def read_vocab_and_merges(cls, folder: str | Path) -> "BPETokenizer":
        """Read a GPT-2-format byte-level BPE: ``vocab.json`` + ``merges.txt`` in ``folder`` (what
        :meth:`write_vocab_and_merges`, Hugging Face's ``save_model`` and GPT-2's checkpoints hold).

        The merges are replayed on the 256 bytes as in :meth:`train`; ``encode`` then returns the *file's* ids and
        ``decode`` reads them, so the ids are those of Hugging Face's tokenizer built from the same files. A file
        written by :meth:`write_vocab_and_merges` gives back the course's own layout (special tokens 0..6, byte
        ``b`` = ``7 + b``); another layout (GPT-2's: byte characters first, ``<|endoftext|>`` last) is kept, and
        then the course's special ids 0..6 mean nothing in it: the file's own special tokens (the entries bytes and
        merges never make) are recognised by ``encode(text, recognize_special_tokens=True)``, and dropped by
        ``decode`` unless ``skip_special_tokens=False``.
        """
        folder = _check_folder(folder, "read_vocab_and_merges", must_exist=True)
        vocab_path, merges_path = folder / "vocab.json", folder / "merges.txt"
        for path in (vocab_path, merges_path):
            if not path.is_file():
                raise CourseValueError(f"read_vocab_and_merges: {str(path)!r} does not exist; the folder must hold "
                                       "vocab.json and merges.txt (a GPT-2-format tokenizer)")
        try:
            vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            vocab = None
        if not (isinstance(vocab, dict) and all(isinstance(k, str) and _is_int(v) and int(v) >= 0
                                                for k, v in vocab.items())):
            raise CourseValueError(f"{vocab_path} is not a vocabulary: expected a JSON object of token -> id >= 0")
        tokenizer = cls()
        for line_number, line in enumerate(merges_path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip() or line.startswith("#version"):
                continue
            parts = line.split(" ")
            if len(parts) != 2:
                raise CourseValueError(f"{merges_path}, line {line_number}: {line!r} is not a merge 'left right'")
            try:
                pair = [tokenizer._bytes_to_id[byte_level_bytes(part)] for part in parts]
            except (KeyError, CourseValueError):
                raise CourseValueError(f"{merges_path}, line {line_number}: {line!r} uses a token that is neither a "
                                       "byte nor made by an earlier merge; the file is not a byte-level BPE") from None
            tokenizer._add_merge(len(tokenizer.merges), pair)
        file_ids = [-1] * N_SPECIAL_TOKENS
        for i in range(N_SPECIAL_TOKENS, len(tokenizer.token_bytes)):
            token = byte_level_text(tokenizer.token_bytes[i])
            if token not in vocab:
                raise CourseValueError(f"{vocab_path} has no entry for {token!r}, which the byte alphabet or "
                                       f"merges.txt makes; the two files do not belong together")
            file_ids.append(int(vocab[token]))
        made = set(file_ids)
        specials = {int(i): token for token, i in vocab.items() if int(i) not in made}
        if all(file_ids[i] == i for i in range(N_SPECIAL_TOKENS, len(file_ids))) and specials == dict(
                enumerate(SPECIAL_TOKENS)):
            return tokenizer                                        # the course's own layout
        tokenizer._file_ids = file_ids
        tokenizer._from_file = {f: i for i, f in enumerate(file_ids) if f >= 0}
        tokenizer._file_specials = specials
        tokenizer._file_vocab_size = max(int(i) for i in vocab.values()) + 1
        if PAD in vocab:
            tokenizer.pad_id = int(vocab[PAD])
        return tokenizer


def _check_folder(folder, what: str, must_exist: bool = False) -> Path:
    if not isinstance(folder, (str, Path)) or str(folder) == "":
        raise CourseTypeError(f"{what} expects a folder path (str or pathlib.Path), got {folder!r}.")
    folder = Path(folder)
    if not folder.is_dir():
        fix = "pass the folder that holds vocab.json and merges.txt" if must_exist else \
            f"create it first with Path({str(folder)!r}).mkdir(parents=True)"
        raise CourseValueError(f"{what}: {str(folder)!r} is not a folder; {fix}.")
    return folder


def _check_path(path, what: str) -> Path:
    if not isinstance(path, (str, Path)):
        raise CourseTypeError(f"{what} expects a file path (str or pathlib.Path), got {type(path).__name__}.")
    if str(path) == "" or Path(path).is_dir():
        raise CourseValueError(f"{what} expects the path of a file, got {str(path)!r} (a directory); "
                               "add a file name, e.g. 'tokenizer.json'.")
    return Path(path)


def count_pairs(symbols: Sequence[int]) -> dict[tuple[int, int], int]:
    """How often each adjacent pair occurs in one sequence of ids: BPE's first step (lesson 01 builds it).

    >>> count_pairs([5, 6, 5, 6, 7])
    {(5, 6): 2, (6, 5): 1, (6, 7): 1}
    """
    symbols = _id_list(symbols, "count_pairs")
    return dict(Counter(zip(symbols, symbols[1:])))


def merge_pair(symbols: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every non-overlapping occurrence of ``pair`` (left to right) by ``new_id``: BPE's second step
    (lesson 01 builds it).

    >>> merge_pair([5, 6, 7, 5, 6], (5, 6), 300)
    [300, 7, 300]
    """
    symbols = _id_list(symbols, "merge_pair")
    if type(pair) is not tuple and (
            isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence)) or len(pair) != 2:
        raise CourseTypeError(f"merge_pair: pair must be two ids (a, b), got {pair!r}.")
    a = _check_id(pair[0], "pair[0]", where="merge_pair")
    b = _check_id(pair[1], "pair[1]", where="merge_pair")
    new_id = _check_id(new_id, "new_id", minimum=0, where="merge_pair")
    out, i, n = [], 0, len(symbols)
    while i < n:
        if i + 1 < n and symbols[i] == a and symbols[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def draw_merges(texts: Sequence[str], merges: Sequence[tuple[int, int]]):
    """Lesson 01's picture of BPE training: one column per merge, every word of ``texts`` (with its count) cut into
    its tokens, the token each merge creates in orange (``·`` marks a space). Returns the matplotlib figure.
    ``merges`` is a merge list such as :meth:`BPETokenizer.train` learns (merge ``k`` creates id ``263 + k``)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    words = sorted(Counter(w for t in texts for w in split_words(t)).items(), key=lambda item: -item[1])
    names = [piece.decode("latin-1") for piece in BPETokenizer(list(merges)).token_bytes]
    first_merge = N_SPECIAL_TOKENS + 256
    fig, ax = plt.subplots(figsize=(13, 0.3 * len(words) + 1.5))
    states = {word: [N_SPECIAL_TOKENS + b for b in word.encode()] for word, _ in words}
    for step in range(len(merges) + 1):
        for row, (word, _) in enumerate(words):
            x = step * 1.6
            for token in states[word]:
                width, new = 0.12 * len(names[token]), step > 0 and token == first_merge + step - 1
                ax.add_patch(Rectangle((x, -row - 0.4), width, 0.8, facecolor="C1" if new else "white",
                                       edgecolor="black", lw=0.6))
                ax.text(x + width / 2, -row, names[token].replace(" ", "·"), ha="center", va="center", fontsize=8,
                        family="monospace")
                x += width
        if step < len(merges):
            states = {w: merge_pair(ids, tuple(merges[step]), first_merge + step) for w, ids in states.items()}
    ax.set_xticks([0.6 + 1.6 * s for s in range(len(merges) + 1)],
                  ["start"] + [f"merge {k}\n{names[first_merge + k]!r}" for k in range(len(merges))])
    ax.set_yticks([-r for r in range(len(words))], [f"{w!r} ×{n}" for w, n in words])
    ax.set(xlim=(-0.1, 1.6 * (len(merges) + 1)), ylim=(-len(words) + 0.4, 0.6),
           title="BPE on a toy corpus: each merge fuses the most frequent adjacent pair (new token in orange)")
    ax.tick_params(length=0)
    return fig
