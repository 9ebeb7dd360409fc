"""Language-model data (lessons 08 and 09): documents split into train / validation / test, encoded as
``[BOS] ids… [EOS]``, batched by length — or cut into equal windows of a continuous token stream.

Count models (:mod:`course_utils.ngram`) and neural models are scored on exactly the same sequences.
"""
from __future__ import annotations

__all__ = ["LMData", "encode_documents", "lm_batches", "lm_training_batches", "pydoc_lm_data", "split_documents"]

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from ..errors import CourseTypeError, CourseValueError
from ..tokenization import BOS_ID, EOS_ID, PAD_ID
from ..validation import (
    check_bool,
    check_choice,
    check_id_lists,
    check_int,
    check_positive_int,
    check_real,
    check_str,
    describe,
    is_int,
)
from .batching import length_bucketed_batches

SPLITS = ("train", "validation", "test")


def check_documents(documents: object) -> list[str]:
    """``documents`` as a list of str: a list or tuple of texts (one str would be read character by character)."""
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        fix = "; for one text wrap it: [text]" if isinstance(documents, str) else ""
        raise CourseTypeError(f"documents must be a list of str, got {describe(documents)}{fix}")
    documents = list(documents)
    for i, document in enumerate(documents):
        check_str(f"documents[{i}]", document)
    return documents


def split_documents(documents: Sequence[str], fractions: tuple[float, float] = (0.8, 0.1), block_size: int = 20,
                    seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    """Split ``documents`` into ``(train, validation, test)`` by blocks of ``block_size`` consecutive documents.

    Consecutive sentences of the documentation corpus come from the same source file, so whole blocks go to one
    split: no test sentence has its neighbours (same topic, same phrasing) in training. Blocks are assigned with
    ``random.Random(seed)``; the order inside each split is kept.
    """
    documents = check_documents(documents)
    if not isinstance(fractions, (tuple, list)) or len(fractions) != 2:
        raise CourseTypeError(f"fractions must be a pair (train, validation) of fractions such as (0.8, 0.1), got "
                              f"{describe(fractions)}; the test split gets the rest")
    check_positive_int("block_size", block_size)
    check_int("seed", seed)
    train_fraction = check_real("fractions[0]", fractions[0], 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    val_fraction = check_real("fractions[1]", fractions[1], 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    if train_fraction + val_fraction >= 1.0:
        raise CourseValueError(f"fractions {fractions} leave nothing for the test split; their sum must be < 1")
    blocks = [list(documents[i:i + block_size]) for i in range(0, len(documents), block_size)]
    if len(blocks) < 3:
        raise CourseValueError(f"{len(documents)} documents make {len(blocks)} blocks of {block_size}; a "
                               "three-way split needs at least 3 blocks: pass more documents or a smaller block_size")
    order = list(range(len(blocks)))
    random.Random(seed).shuffle(order)
    n_train = max(1, round(train_fraction * len(blocks)))
    n_val = max(1, round(val_fraction * len(blocks)))
    chosen = (sorted(order[:n_train]), sorted(order[n_train:n_train + n_val]), sorted(order[n_train + n_val:]))
    return tuple([doc for b in part for doc in blocks[b]] for part in chosen)


def encode_documents(tokenizer, documents: Sequence[str], max_len: int | None = None) -> list[list[int]]:
    """Each document → ``[BOS] ids… [EOS]``, cut to ``max_len + 1`` ids when ``max_len`` is given (the model reads
    at most ``max_len``). A cut document loses its tail, [EOS] included; every model is scored on the same cut
    sequences."""
    if isinstance(tokenizer, (str, bytes)) or not callable(getattr(tokenizer, "encode", None)):  # a str has .encode too
        raise CourseTypeError(f"tokenizer must have an encode(text) -> list of ids method (e.g. a BPETokenizer), got "
                              f"{describe(tokenizer)}")
    documents = check_documents(documents)
    if max_len is not None:
        check_positive_int("max_len", max_len)
    encoded = [[BOS_ID] + tokenizer.encode(doc) + [EOS_ID] for doc in documents]
    return encoded if max_len is None else [ids[:max_len + 1] for ids in encoded]


def lm_batches(sequences: Sequence[Sequence[int]], batch_size: int, shuffle: bool = True, seed: int = 0,
               pad_id: int = PAD_ID) -> list[torch.Tensor]:
    """Right-padded ``(batch, longest)`` long tensors of sequences of similar length (little padding).

    The course's one length-bucketing batcher (:func:`~course_utils.data.batching.length_bucketed_batches`) does the
    work; ``shuffle=True`` first shuffles the sequences with ``random.Random(seed)`` (so ties in length share a
    batch differently per seed, and each epoch's ``seed + epoch`` regroups them), then the order of the batches.
    """
    check_bool("shuffle", shuffle)
    check_int("seed", seed)
    check_id_lists("sequences", sequences)
    order = list(range(len(sequences)))
    rng = random.Random(seed)
    if shuffle:
        rng.shuffle(order)
    batches = length_bucketed_batches([sequences[i] for i in order], batch_size, shuffle=False, pad_id=pad_id)
    if shuffle:
        rng.shuffle(batches)
    return batches


def lm_training_batches(sequences: Sequence[Sequence[int]], steps: int, batch_size: int, seed: int = 0,
                        pad_id: int = PAD_ID) -> list[torch.Tensor]:
    """Exactly ``steps`` batches of :func:`lm_batches`: epoch after epoch over ``sequences``, each epoch regrouped
    and reordered with the seed ``seed + epoch``, the last epoch cut where the steps end. What
    :func:`~course_utils.training.train_lm` trains on, one batch per step (and lesson 08's ``gpt`` task of
    :mod:`course_utils.tasks`)."""
    check_positive_int("steps", steps)
    check_int("seed", seed)
    batches: list[torch.Tensor] = []
    epoch = 0
    while len(batches) < steps:
        batches.extend(lm_batches(sequences, batch_size, seed=seed + epoch, pad_id=pad_id))
        epoch += 1
    return batches[:steps]


@dataclass
class LMData:
    """A tokenizer and the ``[BOS] … [EOS]`` id sequences of the train / validation / test documents.

    ``documents[split]`` holds them whole; ``train``, ``validation`` and ``test`` cut each to ``max_len + 1`` ids
    (what a model with a context of ``max_len`` reads and predicts). :meth:`windows` cuts a split's continuous token
    stream into equal windows instead (lesson 09 trains and tests at fixed lengths).
    """

    tokenizer: object
    documents: dict[str, list[list[int]]]
    max_len: int
    train: list[list[int]] = field(init=False, repr=False)
    validation: list[list[int]] = field(init=False, repr=False)
    test: list[list[int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not is_int(getattr(self.tokenizer, "vocab_size", None)):
            raise CourseTypeError(f"tokenizer must be a tokenizer with a vocab_size (e.g. BPETokenizer.train(...)), "
                                  f"got {describe(self.tokenizer)}")
        if not isinstance(self.documents, Mapping) or any(split not in self.documents for split in SPLITS):
            raise CourseTypeError(f"documents must be a dict with the keys {SPLITS}, each a list of [BOS] ids… [EOS] "
                                  f"lists (encode_documents), got {describe(self.documents)}")
        for split in SPLITS:
            check_id_lists(f"documents[{split!r}]", self.documents[split])
        check_positive_int("max_len", self.max_len)
        for split in SPLITS:
            setattr(self, split, [ids[:self.max_len + 1] for ids in self.documents[split]])

    def windows(self, split: str, seq_len: int) -> torch.Tensor:
        """Non-overlapping ``(n, seq_len + 1)`` long windows of the split's documents joined end to end: ``seq_len``
        inputs and the token after the last. Consecutive windows share one token (the next one's first input)."""
        check_choice("split", split, SPLITS)
        check_positive_int("seq_len", seq_len)
        stream = torch.tensor([token for ids in self.documents[split] for token in ids], dtype=torch.long)
        n = (stream.numel() - 1) // seq_len
        if n == 0:
            raise CourseValueError(f"the {split} split has {stream.numel()} tokens, too few for one window of "
                                   f"{seq_len} + 1; pick a smaller seq_len")
        return torch.stack([stream[i * seq_len: i * seq_len + seq_len + 1] for i in range(n)])


def pydoc_lm_data(vocab_size: int = 512, max_len: int = 64, seed: int = 0) -> LMData:
    """Lesson 08's data: the Python-documentation sentences, split by blocks of documents (:func:`split_documents`),
    a byte-level BPE of ``vocab_size`` ids trained on the training split only."""
    from ..tokenization import BPETokenizer
    from .pydoc_corpus import load_pydoc_corpus

    parts = dict(zip(SPLITS, split_documents(load_pydoc_corpus().sentences, seed=seed)))
    tokenizer = BPETokenizer.train(parts["train"], vocab_size=check_positive_int("vocab_size", vocab_size))
    return LMData(tokenizer, {split: encode_documents(tokenizer, docs) for split, docs in parts.items()}, max_len)
