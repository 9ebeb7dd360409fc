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
``tok.decode(tok.encode(text)) == text``. It never needs [UNK].
"""

from __future__ import annotations

import heapq
import json
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

PAD, UNK, CLS, SEP, MASK, BOS, EOS = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[BOS]", "[EOS]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK, BOS, EOS)
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID, BOS_ID, EOS_ID = range(len(SPECIAL_TOKENS))
N_SPECIAL_TOKENS = len(SPECIAL_TOKENS)

# GPT-2's pre-tokenizer, written for the standard-library ``re`` (``[^\W\d_]`` = letters): English
# contractions, an optional leading space glued to a run of letters / digits / other symbols, and
# whitespace. Joining the pieces gives the text back, so no character is ever lost.
WORD_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+"""
_WORD_SPLIT = re.compile(WORD_SPLIT_PATTERN)
# Word-level tokenizer: a word is a run of letters/digits/underscore, or one punctuation mark.
_WORD_OR_PUNCT = re.compile(r"\w+|[^\w\s]")


def _check_texts(texts: Iterable[str], what: str) -> list[str]:
    """Return ``texts`` as a list of strings, or raise an error that says how to fix the call."""
    if isinstance(texts, str):
        raise TypeError(
            f"{what} expects a list of strings, got one str of {len(texts)} characters "
            f"(iterating it would give single characters). Wrap it: [{texts[:20]!r}...]."
        )
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{what}: item {i} is {type(text).__name__}, expected str. Convert or drop it.")
    if not any(texts):
        raise ValueError(
            f"{what} got no text ({len(texts)} items, all empty). Pass a non-empty list of sentences, "
            "e.g. load_pydoc_corpus().sentences."
        )
    return texts


def _check_text(text: str) -> None:
    if not isinstance(text, str):
        hint = " Decode it first: data.decode('utf-8')." if isinstance(text, bytes) else ""
        raise TypeError(f"encode expects a str, got {type(text).__name__}.{hint}")


def add_special_tokens(
    ids: Sequence[int], add_cls: bool = False, add_sep: bool = False, add_bos_eos: bool = False,
    max_len: int | None = None,
) -> list[int]:
    """Wrap one sequence of ids: ``[CLS]? [BOS]? ids [EOS]? [SEP]?``, truncating the *content* so the
    result has at most ``max_len`` ids (the special tokens are never cut off)."""
    head = ([CLS_ID] if add_cls else []) + ([BOS_ID] if add_bos_eos else [])
    tail = ([EOS_ID] if add_bos_eos else []) + ([SEP_ID] if add_sep else [])
    ids = list(ids)
    if max_len is not None:
        room = max_len - len(head) - len(tail)
        if room < 1:
            raise ValueError(
                f"max_len={max_len} leaves no room for text after {len(head) + len(tail)} special tokens; "
                f"use max_len >= {len(head) + len(tail) + 1}."
            )
        ids = ids[:room]
    return head + ids + tail


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int = PAD_ID, max_len: int | None = None) -> torch.Tensor:
    """Stack id sequences of different lengths into one ``(batch, seq)`` int64 tensor.

    Rows longer than ``max_len`` are truncated; all rows are right-padded with ``pad_id`` to the longest
    (truncated) row. The matching attention mask is ``course_utils.masks.padding_mask(batch, pad_id)``.

    Raises if the batch or a row is empty (an all-[PAD] row has no key attention may read, so its output
    means nothing — all zeros in the course's attention, NaN where masked scores are filled with ``-inf``) or
    if a row already contains ``pad_id`` (that real token would be masked out as if it were padding).
    """
    if len(sequences) == 0:
        raise ValueError("pad_batch got an empty batch; pass at least one sequence of ids.")
    rows = []
    for i, seq in enumerate(sequences):
        row = seq.tolist() if isinstance(seq, torch.Tensor) else list(seq)
        if max_len is not None:
            row = row[:max_len]
        if len(row) == 0:
            raise ValueError(
                f"pad_batch: sequence {i} is empty; it would become an all-[PAD] row whose padding mask hides "
                "every key, so its attention output means nothing (all zeros from course_utils.attention, NaN in code "
                "that masks with -inf). Drop empty texts or add a [CLS] token."
            )
        if pad_id in row:
            raise ValueError(
                f"pad_batch: sequence {i} already contains the pad id {pad_id} at position {row.index(pad_id)}; "
                f"the padding mask would hide that real token. Real tokens need ids >= {N_SPECIAL_TOKENS} "
                "(ids 0..6 are reserved for special tokens)."
            )
        if min(row) < 0:
            raise ValueError(f"pad_batch: sequence {i} has a negative id {min(row)}; ids must be >= 0.")
        rows.append(row)
    width = max(len(row) for row in rows)
    batch = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        batch[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return batch


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
            raise TypeError(f"encode_batch expects a list of strings, got one str; wrap it: [{texts[:20]!r}...].")
        rows = [
            add_special_tokens(self.encode(text), add_cls, add_sep, add_bos_eos, max_len) for text in texts
        ]
        for i, row in enumerate(rows):
            if not row:
                raise ValueError(
                    f"encode_batch: text {i} is empty, which would give an all-[PAD] row: attention has no key "
                    "to read there, so its output means nothing. "
                    "Drop empty texts or pass add_cls=True / add_bos_eos=True."
                )
        return pad_batch(rows, pad_id=self.pad_id)

    def _check_ids(self, ids: Iterable[int]) -> list[int]:
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        for position, i in enumerate(ids):
            if not isinstance(i, int) or not 0 <= i < self.vocab_size:
                raise ValueError(
                    f"id {i!r} at position {position} is not in this vocabulary (ids 0..{self.vocab_size - 1}). "
                    "Were these ids made by a different tokenizer, or a model with a larger vocab_size?"
                )
        return ids


class _TableTokenizer(Tokenizer):
    """A tokenizer that is a lookup table from pieces (characters or words) to ids."""

    def __init__(self, pieces: Sequence[str]):
        self.id_to_piece = list(SPECIAL_TOKENS) + [p for p in pieces if p not in SPECIAL_TOKENS]
        self.piece_to_id = {piece: i for i, piece in enumerate(self.id_to_piece)}

    @property
    def vocab_size(self) -> int:
        return len(self.id_to_piece)

    def encode(self, text: str) -> list[int]:
        """Ids of ``tokenize(text)``; pieces not in the vocabulary become [UNK] (id 1)."""
        return [self.piece_to_id.get(piece, UNK_ID) for piece in self.tokenize(text)]

    def tokenize(self, text: str) -> list[str]:
        raise NotImplementedError

    @classmethod
    def _most_common(cls, counts: Counter, vocab_size: int | None, min_count: int) -> list[str]:
        if vocab_size is not None and vocab_size <= N_SPECIAL_TOKENS:
            raise ValueError(
                f"vocab_size={vocab_size} leaves no room after the {N_SPECIAL_TOKENS} special tokens; use more."
            )
        ranked = sorted((piece for piece, c in counts.items() if c >= min_count), key=lambda p: (-counts[p], p))
        return ranked if vocab_size is None else ranked[: vocab_size - N_SPECIAL_TOKENS]


class CharTokenizer(_TableTokenizer):
    """One token per Unicode character. Tiny vocabulary, long sequences; unseen characters → [UNK]."""

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int | None = None, min_count: int = 1) -> "CharTokenizer":
        """Keep the characters seen at least ``min_count`` times (the most frequent ``vocab_size - 7``)."""
        counts = Counter(ch for text in _check_texts(texts, "CharTokenizer.train") for ch in text)
        return cls(cls._most_common(counts, vocab_size, min_count))

    def tokenize(self, text: str) -> list[str]:
        _check_text(text)
        return list(text)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        ids = self._check_ids(ids)
        return "".join(self.id_to_piece[i] for i in ids if not (skip_special_tokens and i < N_SPECIAL_TOKENS))


class WordTokenizer(_TableTokenizer):
    """One token per word or punctuation mark. Short sequences, huge vocabulary, unseen words → [UNK].

    ``decode`` joins words with single spaces, so it cannot restore the original spacing: word-level
    tokenization is lossy (one reason subwords won).
    """

    def __init__(self, pieces: Sequence[str], lowercase: bool = False):
        super().__init__(pieces)
        self.lowercase = lowercase

    @classmethod
    def train(
        cls, texts: Iterable[str], vocab_size: int | None = None, min_count: int = 1, lowercase: bool = False,
    ) -> "WordTokenizer":
        """Keep the words seen at least ``min_count`` times (the most frequent ``vocab_size - 7``)."""
        counts = Counter()
        for text in _check_texts(texts, "WordTokenizer.train"):
            counts.update(_WORD_OR_PUNCT.findall(text.lower() if lowercase else text))
        return cls(cls._most_common(counts, vocab_size, min_count), lowercase=lowercase)

    def tokenize(self, text: str) -> list[str]:
        _check_text(text)
        return _WORD_OR_PUNCT.findall(text.lower() if self.lowercase else text)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        ids = self._check_ids(ids)
        return " ".join(self.id_to_piece[i] for i in ids if not (skip_special_tokens and i < N_SPECIAL_TOKENS))


class BPETokenizer(Tokenizer):
    """Byte-level byte-pair encoding (GPT-2 style), trained from scratch.

    Vocabulary: ids 0..6 special tokens, ids 7..262 the 256 single bytes, then one id per learned merge
    (merge ``k`` creates id ``263 + k``). Text is split into words by :data:`WORD_SPLIT_PATTERN` first, so
    merges never cross a word boundary; a leading space belongs to the word (``" the"``).
    """

    n_byte_tokens = 256
    first_merge_id = N_SPECIAL_TOKENS + n_byte_tokens
    min_vocab_size = first_merge_id

    def __init__(self, merges: Sequence[tuple[int, int]] = ()):
        self.merges = [tuple(pair) for pair in merges]
        self.token_bytes: list[bytes] = [t.encode() for t in SPECIAL_TOKENS] + [bytes([b]) for b in range(256)]
        self.merge_rank: dict[tuple[int, int], int] = {}
        for rank, (a, b) in enumerate(self.merges):
            if not (N_SPECIAL_TOKENS <= a < len(self.token_bytes) and N_SPECIAL_TOKENS <= b < len(self.token_bytes)):
                raise ValueError(
                    f"merge {rank} = ({a}, {b}) uses an id that does not exist yet; the merge list is corrupt."
                )
            self.merge_rank[(a, b)] = rank
            self.token_bytes.append(self.token_bytes[a] + self.token_bytes[b])
        self._word_cache: dict[str, list[int]] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.token_bytes)

    # ------------------------------------------------------------------ training
    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> "BPETokenizer":
        """Learn ``vocab_size - 263`` merges from ``texts``: repeatedly fuse the most frequent adjacent pair.

        Pair counts are kept incrementally over the *unique* words (weighted by frequency) and the best
        pair comes from a lazy max-heap, so each merge only revisits the words that contain it.
        Ties go to the pair with the smaller ids. Stops early (with a warning) when no pair occurs at
        least ``min_frequency`` times.
        """
        if not isinstance(vocab_size, int) or vocab_size < cls.min_vocab_size:
            raise ValueError(
                f"vocab_size must be an int >= {cls.min_vocab_size} ({N_SPECIAL_TOKENS} special tokens + 256 bytes), "
                f"got {vocab_size!r}. Try 1000-8000 for English prose."
            )
        word_counts = Counter()
        for text in _check_texts(texts, "BPETokenizer.train"):
            word_counts.update(_WORD_SPLIT.findall(text))
        offset = N_SPECIAL_TOKENS
        words = [[offset + b for b in word.encode("utf-8")] for word in word_counts]
        freqs = list(word_counts.values())

        pair_counts: Counter = Counter()
        pair_words: dict[tuple[int, int], set[int]] = {}
        for w, (symbols, freq) in enumerate(zip(words, freqs)):
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += freq
                pair_words.setdefault(pair, set()).add(w)
        heap = [(-count, pair) for pair, count in pair_counts.items()]
        heapq.heapify(heap)

        merges: list[tuple[int, int]] = []
        while len(merges) < vocab_size - cls.min_vocab_size and heap:
            neg_count, pair = heapq.heappop(heap)
            if pair_counts.get(pair, 0) != -neg_count:
                continue  # stale heap entry: this pair's count has changed since it was pushed
            if -neg_count < min_frequency:
                break
            new_id = cls.first_merge_id + len(merges)
            merges.append(pair)
            changed = set()
            for w in pair_words.pop(pair):
                symbols, freq = words[w], freqs[w]
                merged = merge_pair(symbols, pair, new_id)
                if len(merged) == len(symbols):
                    continue  # an earlier merge already consumed this word's occurrences of the pair
                for old in zip(symbols, symbols[1:]):
                    pair_counts[old] -= freq
                    changed.add(old)
                for new in zip(merged, merged[1:]):
                    pair_counts[new] += freq
                    changed.add(new)
                    if new_id in new:  # pairs without the new token were in this word before
                        pair_words.setdefault(new, set()).add(w)
                words[w] = merged
            del pair_counts[pair]
            changed.discard(pair)
            for p in changed:
                if pair_counts[p] > 0:
                    heapq.heappush(heap, (-pair_counts[p], p))
                else:
                    del pair_counts[p]
                    pair_words.pop(p, None)
        if len(merges) < vocab_size - cls.min_vocab_size:
            warnings.warn(
                f"BPETokenizer.train stopped at vocab_size {cls.min_vocab_size + len(merges)} (asked {vocab_size}): "
                f"no pair left that occurs >= {min_frequency} times. Use more text or a smaller vocab_size.",
                stacklevel=2,
            )
        return cls(merges)

    # ------------------------------------------------------------------ encoding
    def _encode_word(self, word: str) -> list[int]:
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        symbols = [N_SPECIAL_TOKENS + b for b in word.encode("utf-8")]
        while len(symbols) > 1:
            # apply the earliest-learned merge present in the word (training order = priority)
            pair = min(zip(symbols, symbols[1:]), key=lambda p: self.merge_rank.get(p, len(self.merge_rank)))
            if pair not in self.merge_rank:
                break
            symbols = merge_pair(symbols, pair, self.first_merge_id + self.merge_rank[pair])
        if len(self._word_cache) < 100_000:
            self._word_cache[word] = symbols
        return symbols

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens added; ``encode("") == []``)."""
        _check_text(text)
        return [i for word in _WORD_SPLIT.findall(text) for i in self._encode_word(word)]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of ``ids``. Special tokens are dropped (or written as ``[CLS]`` etc. when
        ``skip_special_tokens=False``); byte sequences that are not valid UTF-8 become U+FFFD."""
        ids = self._check_ids(ids)
        if skip_special_tokens:
            ids = [i for i in ids if i >= N_SPECIAL_TOKENS]
        return b"".join(self.token_bytes[i] for i in ids).decode("utf-8", errors="replace")

    def token_str(self, token_id: int) -> str:
        """Readable form of one token: its text, or ``\\xe4``-style escapes for a partial UTF-8 character."""
        return self.token_bytes[self._check_ids([token_id])[0]].decode("utf-8", errors="backslashreplace")

    def tokenize(self, text: str) -> list[str]:
        """The pieces ``encode`` produces, as readable strings (see :meth:`token_str`)."""
        return [self.token_str(i) for i in self.encode(text)]

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> None:
        """Write the tokenizer as JSON (the merge list is the whole model)."""
        data = {"type": "byte_level_bpe", "format_version": 1, "special_tokens": list(SPECIAL_TOKENS),
                "word_split_pattern": WORD_SPLIT_PATTERN, "merges": [list(m) for m in self.merges]}
        Path(path).write_text(json.dumps(data), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "BPETokenizer":
        """Read a tokenizer written by :meth:`save`."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("type") != "byte_level_bpe":
            raise ValueError(f"{path} is not a file written by BPETokenizer.save (no 'type': 'byte_level_bpe').")
        if data["special_tokens"] != list(SPECIAL_TOKENS) or data["word_split_pattern"] != WORD_SPLIT_PATTERN:
            raise ValueError(f"{path} was saved with other special tokens or word splitting; retrain the tokenizer.")
        return cls([tuple(m) for m in data["merges"]])


def merge_pair(symbols: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every non-overlapping occurrence of ``pair`` (left to right) by ``new_id``."""
    a, b = pair
    out, i, n = [], 0, len(symbols)
    while i < n:
        if i + 1 < n and symbols[i] == a and symbols[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out
