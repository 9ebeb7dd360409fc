"""Exercises of notebook 01 (tokens and embeddings): BPE's two steps, padding + its mask, embedding as one-hot @ W.

Every check draws fresh inputs (``COURSE_CHECK_SEED`` fixes them) and compares the answer with the package on each,
smallest first: ids far above 255 (merged tokens), overlapping pairs, a batch of one, rows with and without padding,
a [PAD] id other than 0 where the answer takes one, a vocabulary whose largest id is or is not in the batch.
"""
from __future__ import annotations

import functools
import inspect
import math
import re
from collections import Counter
from collections.abc import Mapping
from numbers import Number

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..embedding import TokenEmbedding
from ..masks import padding_mask
from ..tokenization import _merge_counting_changes, pad_batch
from ..tokenization import merge_pair as package_merge_pair
from .asserts import Case, Draw, OwnWork, call_learner, check_inputs_kept, difference, snapshot
from .core import Exercise, ExerciseFailure, solution_of


def as_list(value) -> list | None:
    """``value`` as a list when it is a sequence (list, tuple, 1-D tensor/array), else ``None``."""
    if isinstance(value, torch.Tensor):
        return value.tolist() if value.dim() == 1 else None
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


def large_id_hint(error: BaseException) -> str | None:
    """Explains a crash of an answer that assumed ids below 256 (a fixed table, bytes)."""
    if isinstance(error, (IndexError, ValueError, OverflowError, KeyError)):
        return ("Ids go beyond 255 once pairs are merged (new ids are 256, 257, …, here in the thousands): no "
                "table or bytes object of a fixed size — key everything by the ids themselves")
    return None


# ---------------------------------------------------------------------------- q1: count adjacent pairs
def reference_pair_counts(ids) -> dict:
    """What ``count_pairs`` must return: ``{(a, b): count}`` over the neighbours of ``ids``."""
    return dict(Counter(zip(ids, ids[1:])))


def count_cases(draw: Draw) -> list[Case]:
    a, b, c, d = draw.distinct(4, 0, 5000)
    big = draw.distinct(3, 256, 50000)
    alphabet = draw.distinct(4, 0, 50000)
    mixed = [draw.choice(alphabet) for _ in range(draw.integer(15, 30))]
    run = draw.integer(4, 7)
    return [
        Case(f"ids [{a}, {b}] (one pair)", ([a, b],)),
        Case(f"a single id [{c}]", ([c],)),
        Case(f"{run} equal ids {[d] * run} (the pairs overlap)", ([d] * run,)),
        Case(f"ids {[big[0], big[1], big[0], big[1], big[2], big[0]]} (merged tokens, above 255)",
             ([big[0], big[1], big[0], big[1], big[2], big[0]],)),
        Case(f"{len(mixed)} ids drawn from {sorted(alphabet)}", (mixed,)),
    ]


def pair_count_mistake(ids: list[int], got: dict) -> str | None:
    """The known mistake behind ``got`` (already a dict of pair → count, zeros dropped), if one matches."""
    expected = reference_pair_counts(ids)
    hypotheses = [
        ({pair: 1 for pair in expected},
         f"every pair got count 1, but {max(expected, key=expected.get) if expected else None} occurs "
         f"{max(expected.values(), default=0)} times: count occurrences (Counter), not distinct pairs"),
        (dict(Counter(zip(ids, ids[1:] + ids[:1]))),
         f"you counted the pair {(ids[-1], ids[0])}, which wraps from the last id back to the first; pairs are only "
         "neighbours inside the sequence: zip(ids, ids[1:])"),
        (dict(Counter(zip(ids, ids))),
         "you paired each id with itself (zip(ids, ids)) — pair it with the *next* id: zip(ids, ids[1:])"),
        (dict(Counter(zip(ids[1:], ids))),
         "your pairs are reversed, (next, previous): the pair of ids[i] and ids[i + 1] is (ids[i], ids[i + 1])"),
        (dict(Counter(zip(ids[::2], ids[1::2]))),
         "you counted only every other pair (ids[0], ids[1]), (ids[2], ids[3]), …: pairs overlap — each id pairs "
         "with the next one, so a sequence of n ids has n - 1 adjacent pairs"),
    ]
    for wrong, message in hypotheses:
        if wrong != expected and got == wrong:
            return message
    if sum(got.values()) == sum(expected.values()) - 1:
        return (f"one pair is missing (off by one at the end?); a sequence of n ids has n - 1 adjacent pairs, here "
                f"{len(ids) - 1}")
    return None


def check_count_pairs(ns) -> None:
    count_pairs = ns["count_pairs"]
    for case in count_cases(Draw()):
        (ids,) = case.args
        given = snapshot(ids)
        got = call_learner(count_pairs, "count_pairs", case.description, given, error_hint=large_id_hint)
        check_inputs_kept({"ids": ids}, {"ids": given}, "count_pairs", case.description)
        if not isinstance(got, Mapping):
            raise ExerciseFailure(f"on {case.description}: `count_pairs` should return a dict (or Counter) "
                                  f"{{(a, b): count}}, got {type(got).__name__}.")
        for key in got:
            if not (isinstance(key, tuple) and len(key) == 2):
                raise ExerciseFailure(f"on {case.description}: the keys of your dict should be pairs of ids, tuples "
                                      f"(a, b), got the key {key!r}.")
            if any(isinstance(part, torch.Tensor) for part in key):
                raise ExerciseFailure(f"on {case.description}: your keys hold tensors ({key!r}); two tensors with "
                                      "the same value are different dict keys. Use plain ints (a list of ints, "
                                      "or .tolist()).")
        counts = {pair: n for pair, n in got.items() if not (isinstance(n, Number) and n == 0)}
        expected = reference_pair_counts(ids)
        gap = difference(counts, expected, "the result of `count_pairs`")
        if gap:
            known = pair_count_mistake(ids, counts)
            raise ExerciseFailure(f"on {case.description}: {known or gap}.")


# ---------------------------------------------------------------------------- q2: merge one pair
def reference_merge(ids, pair, new_id) -> list[int]:
    """The package's ``course_utils.tokenization.merge_pair``: the reference answer."""
    return package_merge_pair(list(ids), tuple(pair), new_id)


def merge_cases(draw: Draw) -> list[Case]:
    """The task's two examples, then drawn ids (far above 255, as merged tokens are), smallest first."""
    a, b, c = draw.distinct(3, 256, 20000)
    small_a, small_b = draw.distinct(2, 10, 99)
    alphabet = draw.distinct(4, 256, 50000)
    mixed = [draw.choice(alphabet) for _ in range(draw.integer(20, 40))]
    planted = draw.integer(0, len(mixed) - 2)
    mixed[planted:planted + 2] = alphabet[:2]
    used = {a, b, c, small_a, small_b, *alphabet, 256}
    new_ids = [n for n in draw.distinct(20, 257, 60000) if n not in used]
    digits = [int(f"1{small_a}"), small_b, small_a, int(f"{small_b}1"), small_a, small_b]
    drawn = [
        ([a, b], (a, b)),                  # one pair, the whole list
        ([a], (a, a)),                     # a single id
        ([a, a, a], (a, a)),               # occurrences overlap
        ([b, a], (a, b)),                  # the pair reversed: nothing to merge
        ([c, a, b], (a, b)),               # the pair at the very end
        ([a, a, a, a, a], (a, a)),
        (digits, (small_a, small_b)),      # ids whose digits contain the pair's digits
        (mixed, tuple(alphabet[:2])),
    ]
    cases = [([5, 6, 7, 5, 6], (5, 6), 300), ([4, 4, 4], (4, 4), 300)]
    cases += [(ids, pair, new_id) for (ids, pair), new_id in zip(drawn, new_ids)]
    return [Case(f"merge_pair({ids}, {pair}, {new_id})", (ids, pair, new_id)) for ids, pair, new_id in cases]


def merge_mistake(case: Case, got) -> str | None:
    ids, pair, new_id = case.args
    got = as_list(got)
    if got is None:
        return None
    expected = reference_merge(ids, pair, new_id)
    call = f"gave {got}, expected {expected}"
    if got == expected[:-1] or (len(got) == len(expected) - 1 and got == expected[:len(got)]):
        return f"{call}: you lost the last id. When the loop stops before the end, append the remaining id"
    no_skip = [new_id if (x, y) == tuple(pair) else x for x, y in zip(ids, ids[1:])] + ids[-1:]
    if got == no_skip and no_skip != expected:
        return (f"{call}: after a merge skip *both* ids of the pair (i += 2), so the second id is not copied again "
                "and occurrences never overlap")
    if got == list(ids) and expected != list(ids):
        return (f"{call}: nothing was replaced. Compare the pair of neighbours (ids[i], ids[i + 1]) with `pair` "
                "(a tuple: a list never equals a tuple) and append `new_id` where they match")
    if got.count(new_id) < expected.count(new_id) and got.count(new_id) >= 1:
        return f"{call}: replace *every* occurrence of the pair, not only the first"
    if new_id not in got and new_id in expected:
        others = [x for x in got if x not in ids]
        return (f"{call}: the merged token must be `new_id` ({new_id})"
                + (f", not {others[0]} — do not hard-code it" if others else ""))
    first_only, i = [], 0
    while i < len(ids):
        matched = ids[i] == pair[0] and i + 1 < len(ids)
        first_only.append(new_id if matched else ids[i])
        i += 2 if matched else 1
    if got == first_only and first_only != expected:
        return (f"{call}: you merged wherever the pair's *first* id appears; both neighbours must match, "
                f"ids[i] == {pair[0]} and ids[i + 1] == {pair[1]}")
    backwards = reference_merge(ids[::-1], pair[::-1], new_id)[::-1]
    if got == backwards and backwards != expected:
        return f"{call}: scan from the left (i = 0 upwards); merging from the right pairs overlapping ids differently"
    if len(got) > len(expected) and got.count(new_id) > expected.count(new_id):
        return (f"{call}: a pair was merged where its ids overlap another match: after a merge skip both ids "
                "(i += 2)")
    if len(got) != len(ids) and not set(got) <= set(ids) | {new_id}:
        return (f"{call}: your result holds ids that are not in the input nor new_id — matching the pair inside "
                "a text of the ids (str.replace) also matches across the digits of other ids. Compare whole ids, "
                "neighbour by neighbour")
    return None


MERGE_FORBIDDEN = {"the package's course_utils.tokenization.merge_pair": package_merge_pair,
                   "the package's BPE merge (course_utils.tokenization)": _merge_counting_changes}


def check_merge_pair(ns) -> None:
    merge_pair = ns["merge_pair"]
    for case in merge_cases(Draw()):
        ids, pair, new_id = case.args
        given = snapshot(ids)
        got = call_learner(merge_pair, "merge_pair", case.description, given, pair, new_id,
                           forbidden=MERGE_FORBIDDEN, error_hint=large_id_hint)
        check_inputs_kept({"ids": ids}, {"ids": given}, "merge_pair", case.description)
        gap = difference(got, reference_merge(ids, pair, new_id), "the result of `merge_pair`")
        if gap:
            known = merge_mistake(case, got)  # "gave …, expected …: what went wrong"
            raise ExerciseFailure(f"{case.description} {known}." if known else f"on {case.description}: {gap}.")


# ---------------------------------------------------------------------------- q3: pad a batch and build its mask
PAD_PARAMETERS = ("pad_id", "pad", "pad_token_id", "pad_token", "pad_idx", "pad_index", "pad_value",
                  "padding_value", "padding_id", "padding_idx")


def pad_parameter(function) -> str | None:
    """The name of the learner's [PAD]-id parameter (``pad_with_mask(sequences, pad_id=0)``), if it has one."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return None
    for name in PAD_PARAMETERS:
        if name in parameters and parameters[name].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                            inspect.Parameter.KEYWORD_ONLY):
            return name
    return None


def pad_cases(draw: Draw, parameter: str | None) -> list[Case]:
    """Batches of id lists (the real ids avoid the [PAD] id, as a tokenizer's do); where the answer takes a [PAD]
    id (its ``parameter``), cases with another [PAD] id than 0 follow, ``kwargs`` holding it."""
    pad_id = draw.integer(1, 99)

    def row(length: int, pad: int) -> list[int]:
        return [n for n in draw.distinct(length + 1, 1, 50000) if n != pad][:length]

    longest, batch = draw.distinct(2, 4, 9)
    lengths = [draw.integer(1, longest - 1) for _ in range(batch)]  # the first and last rows are padded
    lengths[batch // 2] = longest   # the longest row is neither the first nor the last
    lengths[1] = 1                  # a single token
    if batch >= 5:
        lengths[batch - 2] = longest  # a second full row: no padding in some rows, some in others
    single = draw.integer(2, 9)
    equal_length, equal_batch = draw.distinct(2, 2, 6)
    cases = [
        Case(f"batch 1: one sequence of {single} ids", ([row(single, 0)],)),
        Case(f"{equal_batch} rows of {equal_length} ids (no padding needed)",
             ([row(equal_length, 0) for _ in range(equal_batch)],)),
        Case("the 3 rows [[12, 40, 7, 93], [55, 8], [31, 17, 26]]", ([[12, 40, 7, 93], [55, 8], [31, 17, 26]],)),
        Case(f"{batch} rows of lengths {lengths}", ([row(n, 0) for n in lengths],)),
    ]
    if parameter:
        cases += [
            Case(f"batch 1: one sequence of {single} ids, {parameter}={pad_id}", ([row(single, pad_id)],),
                 {parameter: pad_id}),
            Case(f"{batch} rows of lengths {lengths}, {parameter}={pad_id}", ([row(n, pad_id) for n in lengths],),
                 {parameter: pad_id}),
        ]
    return cases


def reference_padding(sequences, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The package's ``pad_batch`` and ``padding_mask``: the reference answer."""
    ids = pad_batch(sequences, pad_id)
    return ids, padding_mask(ids, pad_id)


PAD_FORBIDDEN = {"the package's course_utils.tokenization.pad_batch": pad_batch,
                 "the package's course_utils.masks.padding_mask": padding_mask}


def padded_with(sequences, value: int, left: bool = False) -> torch.Tensor:
    longest = max(len(s) for s in sequences)
    rows = [([value] * (longest - len(s)) + list(s)) if left else (list(s) + [value] * (longest - len(s)))
            for s in sequences]
    return torch.tensor(rows, dtype=torch.long)


def check_ids(case: Case, ids, expected: torch.Tensor, pad_id: int) -> None:
    sequences = case.args[0]
    gap = difference(ids, expected, "the padded ids")
    if gap is None:
        return
    where = f"on {case.description}: "
    if isinstance(ids, torch.Tensor) and ids.shape != expected.shape:
        batch, longest = expected.shape
        if tuple(ids.shape) == (longest,) or (batch == 1 and ids.dim() == 1):
            raise ExerciseFailure(where + f"the ids have shape {tuple(ids.shape)}, expected (batch, longest) = "
                                  f"{(batch, longest)}: the batch axis of size 1 was dropped (a .squeeze()?). Keep "
                                  "it: a batch of one sequence is still (1, seq).")
        if tuple(ids.shape) == (longest, batch):
            raise ExerciseFailure(where + f"the ids have shape {tuple(ids.shape)} = (seq, batch); expected (batch, "
                                  f"longest sequence) = {(batch, longest)} — one row per sequence.")
        raise ExerciseFailure(where + f"the ids should have shape (batch, longest sequence) = {(batch, longest)}, "
                              f"got {tuple(ids.shape)}.")
    if isinstance(ids, torch.Tensor) and ids.shape == expected.shape and ids.dtype != expected.dtype:
        raise ExerciseFailure(where + f"the ids have dtype {ids.dtype}; token ids must be torch.long (int64) for "
                              "nn.Embedding (build them with dtype=torch.long).")
    if isinstance(ids, torch.Tensor) and ids.shape == expected.shape:
        ids = ids.detach().cpu().long()
        if torch.equal(ids, padded_with(sequences, pad_id, left=True)) and not torch.equal(ids, expected):
            raise ExerciseFailure(where + "you padded on the left; pad on the right (the course's models expect "
                                  f"real tokens first, [PAD] = {pad_id} after them).")
        real = expected != pad_id
        if torch.equal(ids[real], expected[real]) and (~real).any():
            used = sorted(set(ids[~real].tolist()))
            if pad_id != 0 and used == [0]:
                raise ExerciseFailure(where + f"you padded with 0, but this call asked for [PAD] = {pad_id}: pad "
                                      "with the pad_id argument (0 is only its default).")
            raise ExerciseFailure(where + f"the padding positions hold {used[:3]}; pad with [PAD] = {pad_id}"
                                  + (" (the pad_id argument)." if pad_id else "."))
    raise ExerciseFailure(where + gap + ".")


def check_mask(case: Case, mask, ids: torch.Tensor, pad_id: int) -> None:
    expected = padding_mask(ids, pad_id)
    gap = difference(mask, expected, "the mask")
    if gap is None:
        return
    where = f"on {case.description}: "
    batch, longest = ids.shape
    real = expected[:, 0, 0]
    if not isinstance(mask, torch.Tensor):
        raise ExerciseFailure(where + f"the mask should be a torch.Tensor, got {type(mask).__name__}.")
    if mask.dtype != torch.bool:
        raise ExerciseFailure(where + f"the mask has dtype {mask.dtype}; use a boolean mask (ids != pad_id), "
                              "True = may attend.")
    if tuple(mask.shape) == (batch, longest):
        raise ExerciseFailure(where + f"the mask has shape (batch, seq) = {(batch, longest)}; attention scores are "
                              "(batch, heads, q_len, k_len), so give it shape (batch, 1, 1, seq): add the two "
                              "axes with None indexing.")
    if mask.shape != expected.shape:
        squeezed = (" (the batch axis of size 1 was dropped: no .squeeze())"
                    if mask.dim() < 4 and mask.numel() == expected.numel() else "")
        raise ExerciseFailure(where + f"the mask should have shape (batch, 1, 1, seq) = {tuple(expected.shape)}, "
                              f"got {tuple(mask.shape)}{squeezed}.")
    got = mask.detach().cpu()[:, 0, 0]
    if torch.equal(got, ~real):
        raise ExerciseFailure(where + "the mask is inverted: in this course True means 'may attend', so real "
                              "tokens are True and [PAD] positions are False (ids != pad_id).")
    if pad_id != 0 and torch.equal(got, ids != 0):
        raise ExerciseFailure(where + f"the mask marks the [PAD] positions True: it compares with 0, but this call "
                              f"pads with pad_id={pad_id}. Compare with the pad_id argument.")
    raise ExerciseFailure(where + gap + ".")


def padding_error_hint(error: BaseException) -> str | None:
    message = str(error)
    if "must match" in message or "expected sequence of length" in message or "size" in message:
        return ("A row does not fit the width of your tensor: the width is the length of the longest sequence, "
                "whichever row that is (max over all rows), and every row is padded up to it")
    return None


def check_pad_with_mask(ns) -> None:
    pad_with_mask = ns["pad_with_mask"]
    parameter = pad_parameter(pad_with_mask)
    for case in pad_cases(Draw(), parameter):
        pad_id = case.kwargs.get(parameter, 0)
        sequences = snapshot(case.args[0])
        result = call_learner(pad_with_mask, "pad_with_mask", case.description, sequences, forbidden=PAD_FORBIDDEN,
                              error_hint=padding_error_hint, **case.kwargs)
        check_inputs_kept({"sequences": case.args[0]}, {"sequences": sequences}, "pad_with_mask", case.description)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise ExerciseFailure(f"on {case.description}: `pad_with_mask` should return a tuple (ids, mask), got "
                                  f"{type(result).__name__}.")
        ids, mask = result
        if not isinstance(ids, torch.Tensor) or not isinstance(mask, torch.Tensor):
            raise ExerciseFailure(f"on {case.description}: both `ids` and `mask` should be torch tensors, got "
                                  f"({type(ids).__name__}, {type(mask).__name__}).")
        expected_ids, _ = reference_padding(case.args[0], pad_id)
        check_ids(case, ids, expected_ids, pad_id)
        check_mask(case, mask, expected_ids, pad_id)


# ---------------------------------------------------------------------------- q4: embedding = one-hot @ W, scaled
def embedding_cases(draw: Draw) -> list[Case]:
    """``(ids, weight)`` with batch, seq, vocab and d_model all different; the largest id absent in the first two
    (so a one-hot whose width is read off the batch cannot fit W), every id present in the third."""
    cases = []
    vocab, d_model = draw.distinct(2, 5, 16)
    token = draw.integer(0, vocab - 2)
    cases.append(Case(f"batch 1, seq 1 (the single id {token}), vocab {vocab}, d_model {d_model}",
                      (torch.tensor([[token]]), draw.randn(vocab, d_model))))
    seq, vocab, d_model = draw.distinct(3, 2, 16, avoid=(1,))
    ids = draw.randint(0, vocab - 1, (1, seq))
    cases.append(Case(f"batch 1, seq {seq}, vocab {vocab}, d_model {d_model} (the largest id, {vocab - 1}, "
                      "absent)", (ids, draw.randn(vocab, d_model))))
    vocab = draw.integer(5, 9)
    batch, seq = draw.choice([(b, s) for b in range(2, 7) for s in range(2, 8)
                              if b != s and b * s >= vocab and vocab not in (b, s)])
    d_model = draw.choice([n for n in range(4, 24) if n not in (batch, seq, vocab)])
    order = torch.randperm(batch * seq, generator=draw.generator())
    ids = torch.cat([torch.arange(vocab), draw.randint(0, vocab, (batch * seq - vocab,))])[order].view(batch, seq)
    cases.append(Case(f"batch {batch}, seq {seq}, vocab {vocab}, d_model {d_model} (every id of the vocabulary "
                      "present)", (ids, draw.randn(vocab, d_model))))
    batch, seq, d_model = draw.distinct(3, 2, 12)
    vocab = draw.integer(40, 120)
    cases.append(Case(f"batch {batch}, seq {seq}, vocab {vocab}, d_model {d_model} (vocabulary larger than "
                      "d_model)", (draw.randint(0, vocab, (batch, seq)), draw.randn(vocab, d_model, scale=0.1))))
    return cases


def reference_embedding(ids: torch.Tensor, weight: torch.Tensor, grad: bool = False):
    """The package's ``TokenEmbedding`` holding ``weight``: its output (and, with ``grad``, the module, whose
    weight collects the gradient)."""
    module = TokenEmbedding(*weight.shape)
    with torch.no_grad():
        module.weight.copy_(weight)
    if grad:
        return module(ids), module
    with torch.no_grad():
        return module(ids)


LOOKUP_CALLS = {"F.embedding": F.embedding, "torch.embedding": torch.embedding, "nn.Embedding": nn.Embedding,
                "the package's TokenEmbedding": TokenEmbedding}
LOOKUP_NODES = {  # autograd nodes of operations that read rows of W by index
    "IndexBackward": "W[ids]", "IndexSelectBackward": "index_select", "EmbeddingBackward": "F.embedding",
    "EmbeddingBagBackward": "F.embedding_bag", "GatherBackward": "gather", "TakeBackward": "take",
    "SelectBackward": "W[i] (one row at a time)", "UnbindBackward": "a loop over the rows of W",
    "SplitBackward": "W split into rows", "SplitWithSizesBackward": "W split into rows",
    "MaskedSelectBackward": "masked_select",
}
WITHOUT_INDEXING = ("this exercise asks you to get the same numbers *without indexing*: a one-hot matrix "
                    "(vocab_size columns, float) times W, then the scale")


def graph_of(output: torch.Tensor, weight: torch.Tensor) -> tuple[bool, list[str]]:
    """Whether ``output``'s autograd graph reaches ``weight``, and the row lookups (:data:`LOOKUP_NODES`) in it."""
    reached, lookups, seen = False, [], set()
    stack = [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if getattr(node, "variable", None) is weight:
            reached = True
        kind = type(node).__name__.rstrip("0123456789")
        if kind in LOOKUP_NODES:
            lookups.append(LOOKUP_NODES[kind])
        stack.extend(next_node for next_node, _ in node.next_functions)
    return reached, lookups


def embedding_mistake(got: torch.Tensor, ids: torch.Tensor, weight: torch.Tensor) -> str | None:
    vocab_size, d_model = weight.shape
    lookup = F.embedding(ids, weight)
    scales = [(1.0, "this is the plain lookup; the Transformer multiplies it by √d_model"),
              (float(d_model), "you multiplied by d_model; the scale is its square root, √d_model"),
              (1 / math.sqrt(d_model), "you divided by √d_model; the embedding is *multiplied* by it (attention "
                                       "scores are the ones divided by √d_k)"),
              (math.sqrt(vocab_size), "you scaled by √vocab_size; the scale is √d_model = √weight.size(1)"
               + (f" (or you wrote the fixed number {math.isqrt(vocab_size)}: read d_model from weight.size(1), no "
                  "fixed number)" if math.isqrt(vocab_size) ** 2 == vocab_size else ""))]
    for scale, message in scales:
        if torch.allclose(got.double(), lookup.double() * scale, atol=1e-5, rtol=1e-4):
            return message
    lookup = lookup.double()
    scale = float((got * lookup).sum() / (lookup * lookup).sum())
    if torch.allclose(got, lookup * scale, atol=1e-5, rtol=1e-4):
        return (f"the rows are right but scaled by {scale:.6g}, while √d_model = √{d_model} = {math.sqrt(d_model):.6g} "
                "here: read d_model from weight.size(1), no fixed number")
    return None


def embedding_error_hint(error: BaseException, vocab_size: int, d_model: int) -> str | None:
    message = str(error)
    shapes = re.search(r"\((\d+)x(\d+) and (\d+)x(\d+)\)", message)
    if shapes and (int(shapes[3]), int(shapes[4])) == (d_model, vocab_size):
        return (f"W is (vocab_size, d_model) = ({vocab_size}, {d_model}) already: multiply the one-hot matrix by W "
                "itself, not by its transpose")
    if ("cannot be multiplied" in message or "size mismatch" in message or "must match the size" in message
            or "smaller than num_classes" in message):
        return ("The one-hot matrix has the wrong width: it needs one column per id of the vocabulary, "
                "num_classes=vocab_size = weight.size(0) — neither a fixed number nor read off the ids (F.one_hot(ids) "
                "alone uses the largest id in the batch, which need not be the vocabulary's last)")
    if "dtype" in message or "Float" in message or "Long" in message:
        return "F.one_hot returns integers: convert the one-hot matrix to W's dtype with .float() before the product."
    return None


def check_scaled_one_hot_embedding(ns) -> None:
    embed = ns["scaled_one_hot_embedding"]
    name = "scaled_one_hot_embedding"
    for case in embedding_cases(Draw()):
        ids, weight = case.args
        where = f"on {case.description}: "
        expected = reference_embedding(ids, weight)
        given = snapshot(case.args)
        guard = OwnWork(LOOKUP_CALLS)
        with guard:
            got = call_learner(embed, name, case.description, *given,
                               error_hint=functools.partial(embedding_error_hint, vocab_size=weight.size(0),
                                                            d_model=weight.size(1)))
        if guard.used:
            raise ExerciseFailure(where + f"you looked the rows up ({guard.used}), the way nn.Embedding does; "
                                  f"{WITHOUT_INDEXING}.")
        check_inputs_kept({"ids": ids, "weight": weight}, dict(zip(("ids", "weight"), given)), name,
                          case.description)
        gap = difference(got, expected, f"the result of `{name}`")
        if gap:
            known = None
            if isinstance(got, torch.Tensor) and got.shape == expected.shape and got.is_floating_point() \
                    and not torch.allclose(got.detach().double(), expected.double(), atol=1e-5, rtol=1e-4):
                known = embedding_mistake(got.detach().double(), ids, weight) or (
                    f"the values differ from W[ids] × √d_model ({gap}); build the one-hot matrix of ids "
                    "(num_classes = vocab_size), as floats, times W, then multiply by √d_model")
            raise ExerciseFailure(where + (known or gap) + ".")
        # how the numbers were obtained: through a product with W that gradients flow back through, no row lookup
        leaf = weight.clone().requires_grad_()
        output = call_learner(embed, name, case.description, ids.clone(), leaf)
        if not isinstance(output, torch.Tensor) or output.shape != expected.shape:
            raise ExerciseFailure(where + f"with a weight that requires grad, `{name}` returned "
                                  f"{type(output).__name__} {tuple(getattr(output, 'shape', ()))}, not the "
                                  f"{tuple(expected.shape)} tensor it returns otherwise.")
        reached, lookups = graph_of(output, leaf) if output.requires_grad else (False, [])
        if lookups:
            raise ExerciseFailure(where + f"you looked the rows up ({lookups[0]}), the way nn.Embedding does; "
                                  f"{WITHOUT_INDEXING}.")
        if not reached:
            raise ExerciseFailure(where + "no gradient reaches `weight` through your output: the rows were rebuilt "
                                  "from values (.detach(), .data, .tolist(), torch.tensor(...) or torch.no_grad()), "
                                  "so an embedding built this way could never learn. Compute the product with W "
                                  "itself, in tensor operations.")
        probe = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1))
        reference_output, module = reference_embedding(ids, weight, grad=True)
        (reference_output * probe).sum().backward()
        (output * probe).sum().backward()
        gap = difference(leaf.grad, module.weight.grad, "the gradient of `weight`", atol=1e-4, rtol=1e-3)
        if gap:
            raise ExerciseFailure(where + f"the output is right but {gap}: part of the product is detached or "
                                  "computed in place. Write it with out-of-place tensor operations.")


q1 = Exercise(
    name="Count adjacent pairs",
    variables=("count_pairs",),
    checker=check_count_pairs,
    hints=("A pair is an id and the id right after it. Python can walk a list and the same list shifted by one "
           "in step, and the standard library has a dict that counts.",
           "Pair the list with itself shifted by one position (so n ids give n - 1 pairs, overlapping: the middle "
           "id of three belongs to two pairs); count each (a, b) tuple with collections.Counter; return it (a "
           "Counter is a dict)."),
    solution=solution_of("lesson01", "count_pairs"),
)

q2 = Exercise(
    name="Merge one pair",
    variables=("merge_pair",),
    checker=check_merge_pair,
    hints=("Walk the list with an index you move yourself, so that after a match you can jump over both ids. "
           "Build a new list; leave the input alone.",
           "Start an empty output and i at 0. While i is inside the list: if ids i and i + 1 exist and form the "
           "pair, append new_id and move i on by two; otherwise append the id at i and move on by one. Return the "
           "output (ids can be any size — merged tokens are far above 255)."),
    solution=solution_of("lesson01", "merge_pair"),
)

q3 = Exercise(
    name="Pad a batch and build its mask",
    variables=("pad_with_mask",),
    checker=check_pad_with_mask,
    hints=("Make a (batch, longest) tensor full of the [PAD] id, copy each sequence into the left of its row, then "
           "compare the ids with the [PAD] id. (Give the function a pad_id=0 parameter and the check tries other "
           "pad ids too.)",
           "longest = the length of the longest sequence (any row, not necessarily the first); ids = a torch.long "
           "tensor (batch, longest) filled with pad_id; row r, positions 0 … len - 1 = sequence r; mask = whether "
           "ids differ from pad_id, reshaped to (batch, 1, 1, seq) with two new axes in the middle. Keep the batch "
           "axis even for a batch of one (no squeeze)."),
    solution=solution_of("lesson01", "pad_with_mask"),
)

q4 = Exercise(
    name="Embedding = one-hot @ W, times √d_model",
    variables=("scaled_one_hot_embedding",),
    checker=check_scaled_one_hot_embedding,
    hints=("A one-hot row times W selects one row of W — so a matrix product can do what indexing does. How wide "
           "must the one-hot rows be for the product to fit W, whatever ids the batch holds?",
           "vocab_size, d_model = the shape of weight; one-hot the ids with num_classes = vocab_size and make it "
           "float32 like W → (batch, seq, vocab); matrix-multiply by weight → (batch, seq, d_model); multiply by the "
           "square root of d_model. No W[ids], no F.embedding / nn.Embedding: the product is the point."),
    solution=solution_of("lesson01", "scaled_one_hot_embedding"),
)
