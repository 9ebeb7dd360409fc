"""Exercises of notebook 01 (tokens and embeddings): BPE's two steps, padding + its mask, embedding as one-hot @ W."""
from __future__ import annotations

import math
from collections import Counter

import torch

from ..tokenization import merge_pair as reference_merge
from .asserts import call_with_copies
from .core import Exercise, ExerciseFailure


# ---------------------------------------------------------------------------- q1: count adjacent pairs
def reference_pair_counts(ids: list[int]) -> Counter:
    return Counter(zip(ids, ids[1:]))


def check_count_pairs(ns) -> None:
    count_pairs = ns["count_pairs"]
    for ids in ([5, 6, 5, 6, 7], [1, 1, 1, 2], [9, 3, 8, 9], [4]):
        got = call_with_copies(count_pairs, "count_pairs", ids)
        expected = reference_pair_counts(ids)
        if not isinstance(got, dict):
            raise ExerciseFailure(f"`count_pairs` should return a dict (or Counter) {{(a, b): count}}, "
                                  f"got {type(got).__name__}.")
        got = {pair: n for pair, n in got.items() if n}  # a Counter may keep zero entries
        if got == dict(expected):
            continue
        if got == {pair: 1 for pair in expected}:
            raise ExerciseFailure(f"for {ids} every pair got count 1, but {max(expected, key=expected.get)} occurs "
                                  f"{max(expected.values())} times: count occurrences (Counter), not distinct pairs.")
        if ids and (ids[-1], ids[0]) in got and (ids[-1], ids[0]) not in expected:
            raise ExerciseFailure(f"for {ids} you counted the pair {(ids[-1], ids[0])}, which wraps from the last id "
                                  "back to the first; pairs are only neighbours inside the sequence: "
                                  "zip(ids, ids[1:]).")
        if len(ids) > 1 and (ids[0], ids[0]) in got and (ids[0], ids[0]) not in expected:
            raise ExerciseFailure(f"for {ids} you counted {(ids[0], ids[0])}: pairing each id with itself "
                                  "(zip(ids, ids)) — pair it with the *next* id: zip(ids, ids[1:]).")
        if sum(got.values()) == sum(expected.values()) - 1:
            raise ExerciseFailure(f"for {ids} one pair is missing (off by one at the end?); a sequence of n ids "
                                  f"has n - 1 adjacent pairs, here {len(ids) - 1}.")
        raise ExerciseFailure(f"for ids {ids} expected {dict(expected)}, got {got}.")


# ---------------------------------------------------------------------------- q2: merge one pair


def check_merge_pair(ns) -> None:
    merge_pair = ns["merge_pair"]
    cases = [([5, 6, 7, 5, 6], (5, 6), 300), ([1, 2, 3], (2, 3), 300), ([4, 4, 4], (4, 4), 300),
             ([7, 8], (8, 7), 300), ([2, 5, 9, 2, 5, 2], (2, 5), 301)]
    for ids, pair, new_id in cases:
        got = call_with_copies(merge_pair, "merge_pair", ids, pair, new_id)
        expected = reference_merge(list(ids), tuple(pair), new_id)
        if got == expected:
            continue
        if not isinstance(got, list):
            raise ExerciseFailure(f"`merge_pair` should return a list of ids, got {type(got).__name__}.")
        if len(got) == len(expected) - 1 and got == expected[:-1]:
            raise ExerciseFailure(f"merge_pair({ids}, {pair}, {new_id}) lost the last id: {got} instead of "
                                  f"{expected}. When the loop stops before the end, append the remaining id.")
        if got.count(new_id) < expected.count(new_id):
            raise ExerciseFailure(f"merge_pair({ids}, {pair}, {new_id}) gave {got}: replace *every* occurrence "
                                  f"of the pair, not only the first. Expected {expected}.")
        if len(got) > len(expected):
            raise ExerciseFailure(f"merge_pair({ids}, {pair}, {new_id}) gave {got}, expected {expected}: after a "
                                  "merge skip *both* ids of the pair (i += 2), so the second id is not copied "
                                  "again and occurrences never overlap.")
        raise ExerciseFailure(f"merge_pair({ids}, {pair}, {new_id}) should give {expected}, got {got}.")


# ---------------------------------------------------------------------------- q3: pad a batch and build its mask
def example_sequences() -> list[list[int]]:
    return [[12, 40, 7, 93], [55, 8], [31, 17, 26]]


def check_pad_with_mask(ns) -> None:
    pad_with_mask = ns["pad_with_mask"]
    sequences = example_sequences()
    result = call_with_copies(pad_with_mask, "pad_with_mask", sequences)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ExerciseFailure("`pad_with_mask` should return a tuple (ids, mask).")
    ids, mask = result
    if not isinstance(ids, torch.Tensor) or not isinstance(mask, torch.Tensor):
        raise ExerciseFailure("both `ids` and `mask` should be torch tensors.")
    expected_ids = torch.tensor([[12, 40, 7, 93], [55, 8, 0, 0], [31, 17, 26, 0]])
    if ids.shape != (3, 4):
        raise ExerciseFailure(f"ids should have shape (batch, longest sequence) = (3, 4), got {tuple(ids.shape)}.")
    if ids.dtype != torch.long:
        raise ExerciseFailure(f"ids have dtype {ids.dtype}; token ids must be torch.long for nn.Embedding.")
    if torch.equal(ids, torch.tensor([[12, 40, 7, 93], [0, 0, 55, 8], [0, 31, 17, 26]])):
        raise ExerciseFailure("you padded on the left; pad on the right (the course's models expect "
                              "real tokens first, [PAD] = 0 after them).")
    if not torch.equal(ids, expected_ids):
        raise ExerciseFailure(f"padded ids should be {expected_ids.tolist()} ([PAD] = 0 on the right), "
                              f"got {ids.tolist()}.")
    real = expected_ids != 0
    if mask.dtype != torch.bool:
        raise ExerciseFailure(f"the mask has dtype {mask.dtype}; use a boolean mask (ids != 0), True = may attend.")
    if mask.shape == (3, 4):
        raise ExerciseFailure("the mask has shape (batch, seq) = (3, 4); attention scores are (batch, heads, "
                              "q_len, k_len), so give it shape (batch, 1, 1, seq): mask[:, None, None, :].")
    if mask.shape != (3, 1, 1, 4):
        raise ExerciseFailure(f"the mask should have shape (batch, 1, 1, seq) = (3, 1, 1, 4), got {tuple(mask.shape)}.")
    if torch.equal(mask[:, 0, 0], ~real):
        raise ExerciseFailure("the mask is inverted: in this course True means 'may attend', so real tokens are "
                              "True and [PAD] positions are False (ids != pad_id).")
    if not torch.equal(mask[:, 0, 0], real):
        raise ExerciseFailure(f"mask[:, 0, 0] should be {real.tolist()}, got {mask[:, 0, 0].tolist()}.")


# ---------------------------------------------------------------------------- q4: embedding = one-hot @ W, scaled
def example_embedding_inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """ids ``(2, 3)`` from a vocabulary of 10 whose largest id (9) is *not* in the batch, and W ``(10, 16)``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.tensor([[3, 1, 4], [1, 5, 8]]), torch.randn(10, 16, generator=generator)


class LookupGuard(torch.Tensor):
    """A weight matrix that refuses to be read by row lookup: the exercise asks for one-hot @ W, not W[ids]."""

    LOOKUPS = {"embedding", "index_select", "gather", "take", "take_along_dim"}

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        indexed = name == "__getitem__" and _indexes_rows(args[1])
        if indexed or name in cls.LOOKUPS:
            how = "W[ids]" if indexed else f"{name}(...)"
            raise ExerciseFailure(f"you looked the rows up with {how}: that is what nn.Embedding does, and this "
                                  "exercise asks you to get the same numbers *without indexing*: "
                                  "F.one_hot(ids, num_classes=vocab_size).float() @ W, times math.sqrt(d_model).")
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def _indexes_rows(index) -> bool:
    """Whether a ``__getitem__`` index picks rows by id (a tensor or list of ids), not a slice or a single axis."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(part, (torch.Tensor, list)) for part in parts)


def check_scaled_one_hot_embedding(ns) -> None:
    embed = ns["scaled_one_hot_embedding"]
    ids, weight = example_embedding_inputs()
    got = embed(ids, weight.clone().as_subclass(LookupGuard))
    if isinstance(got, torch.Tensor):
        got = got.as_subclass(torch.Tensor)
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"`scaled_one_hot_embedding` should return a tensor, got {type(got).__name__}.")
    lookup = weight[ids]
    d_model = weight.size(1)
    if got.shape != (2, 3, d_model):
        raise ExerciseFailure(f"output should have shape (batch, seq, d_model) = (2, 3, {d_model}), "
                              f"got {tuple(got.shape)}.")
    if torch.allclose(got, lookup * math.sqrt(d_model), atol=1e-5):
        return
    if torch.allclose(got, lookup, atol=1e-5):
        raise ExerciseFailure("this is the plain lookup; the Transformer multiplies it by math.sqrt(d_model).")
    if torch.allclose(got, lookup * d_model, atol=1e-4):
        raise ExerciseFailure("you multiplied by d_model; the scale is its square root, math.sqrt(d_model).")
    if torch.allclose(got, lookup / math.sqrt(d_model), atol=1e-5):
        raise ExerciseFailure("you divided by √d_model; the embedding is *multiplied* by it "
                              "(attention scores are the ones divided by √d_k).")
    if torch.allclose(got, lookup * math.sqrt(weight.size(0)), atol=1e-5):
        raise ExerciseFailure("you scaled by √vocab_size; the scale is √d_model = √weight.size(1).")
    raise ExerciseFailure("the values differ from W[ids] × √d_model; build one_hot(ids, num_classes=vocab_size)"
                          ".float() @ W, then multiply by math.sqrt(d_model).")


def _explain_runtime_error(checker):
    """Turn the typical one-hot mistakes (shape / dtype errors) into feedback that names them."""
    def checked(ns) -> None:
        try:
            checker(ns)
        except NotImplementedError:
            raise
        except RuntimeError as error:
            message = (str(error).splitlines() or [""])[0]
            if "cannot be multiplied" in message:
                raise ExerciseFailure(f"shapes do not fit ({message}). F.one_hot(ids) infers the vocabulary from the "
                                      "largest id in the batch (here 8 < 10): pass num_classes=weight.size(0)."
                                      ) from None
            if "expected" in message and ("Float" in message or "Long" in message or "dtype" in message):
                raise ExerciseFailure(f"dtype mismatch ({message}): F.one_hot returns integers; convert with "
                                      ".float() before the matrix product.") from None
            raise
    return checked


q1 = Exercise(
    name="Count adjacent pairs",
    variables=("count_pairs",),
    checker=check_count_pairs,
    hint="Neighbours are zip(ids, ids[1:]); collections.Counter counts them.",
    solution=("from collections import Counter\n\n"
              "def count_pairs(ids):\n    return Counter(zip(ids, ids[1:]))\n"),
)

q2 = Exercise(
    name="Merge one pair",
    variables=("merge_pair",),
    checker=check_merge_pair,
    hint="Walk with an index i; on a match append new_id and jump i += 2, otherwise append ids[i] and i += 1.",
    solution=("def merge_pair(ids, pair, new_id):\n    merged, i = [], 0\n    while i < len(ids):\n"
              "        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == tuple(pair):\n"
              "            merged.append(new_id)\n            i += 2\n        else:\n"
              "            merged.append(ids[i])\n            i += 1\n    return merged\n"),
)

q3 = Exercise(
    name="Pad a batch and build its mask",
    variables=("pad_with_mask",),
    checker=check_pad_with_mask,
    hint="torch.full((batch, longest), 0) then copy each row in from the left; mask = (ids != 0)[:, None, None, :].",
    solution=("import torch\n\n"
              "def pad_with_mask(sequences, pad_id=0):\n"
              "    longest = max(len(s) for s in sequences)\n"
              "    ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)\n"
              "    for row, sequence in enumerate(sequences):\n"
              "        ids[row, :len(sequence)] = torch.tensor(sequence)\n"
              "    mask = (ids != pad_id)[:, None, None, :]\n"
              "    return ids, mask\n"),
)

q4 = Exercise(
    name="Embedding = one-hot @ W, times √d_model",
    variables=("scaled_one_hot_embedding",),
    checker=_explain_runtime_error(check_scaled_one_hot_embedding),
    hint="F.one_hot(ids, num_classes=W.size(0)).float() @ W has shape (batch, seq, d_model); "
         "then multiply by math.sqrt(W.size(1)).",
    solution=("import math\nimport torch.nn.functional as F\n\n"
              "def scaled_one_hot_embedding(ids, weight):\n"
              "    vocab_size, d_model = weight.shape\n"
              "    one_hot = F.one_hot(ids, num_classes=vocab_size).float()   # (batch, seq, vocab)\n"
              "    return one_hot @ weight * math.sqrt(d_model)                # (batch, seq, d_model)\n"),
)
