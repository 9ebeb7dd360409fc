"""Every public name of the model, data, tokenization, decoding, loss and training modules, fed wrong input.

The walk reads each module's ``__all__``; :data:`REGISTRY` says, for every public callable (and every public
method of a public class), how to build valid arguments and what kind of value each argument takes. One argument
at a time is replaced by a wrong value of its kind — every hand-picked value of :data:`KINDS` (wrong ranks,
dtypes, sizes, empties), then values Hypothesis generates (random ranks, sizes and dtypes of tensors, out-of-range
numbers) — and the call must either raise a course error (``CourseError``) or return a result without NaN/inf.
A value marked ``must_raise`` (a negative size, float ids, ...) must raise a course error; an accepted variant
(``uint8`` ids) may also work. A public name without a registry entry fails
:func:`test_every_public_name_is_registered`, so new names cannot escape.

Deterministic: ``derandomize=True``, no example database, seeded tensors.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import random
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torch.nn as nn
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from course_utils.errors import CourseError
from course_utils.kv_cache import KVCache, LayerCache
from course_utils.validation import describe

MODULES = ("config", "embedding", "positional", "attention", "masks", "layers", "models", "reference", "mlm",
           "decoding", "training", "runtime", "tokenization", "kv_cache", "losses", "language_model", "modern",
           "data.pydoc_corpus", "data.language_id", "data.numbers", "data.batching", "data.lm_data", "data.order",
           "interop", "instruct", "data.stdlib_qa")
EXAMPLES_PER_ARGUMENT = 8
SCRATCH = Path(tempfile.gettempdir())  # files the save/load entries write

# ---------------------------------------------------------------------------- wrong values, by kind
NAN, INF = float("nan"), float("inf")
NOT_AN_INT = [1.5, 4.0, True, False, "3", None, torch.tensor(3)]
NOT_A_NUMBER = [NAN, INF, -INF, True, "0.1", None, torch.tensor(0.5)]


def fixed(*values: Any, must_raise: bool = True) -> list[tuple[Callable[[Any], Any], bool]]:
    """Wrong values that do not depend on the valid one."""
    return [((lambda valid, v=v: v), must_raise) for v in values]


def mutations(*functions: Callable[[Any], Any], must_raise: bool = True) -> list[tuple[Callable[[Any], Any], bool]]:
    """Wrong values made from the valid one (e.g. the valid ids as floats)."""
    return [(f, must_raise) for f in functions]


def filled_layer_cache(rows: int, heads: int = 2, d_head: int = 4) -> LayerCache:
    """A layer cache holding one step of keys/values for ``rows`` rows (the fuzz models have batch 2)."""
    cache = LayerCache()
    cache.append(torch.zeros(rows, heads, 1, d_head), torch.zeros(rows, heads, 1, d_head))
    return cache


def filled_kv_cache(rows: int) -> KVCache:
    """A one-layer encoder–decoder cache that already holds ``rows`` rows."""
    cache = KVCache(1, cross_attention=True)
    cache.self_attention[0] = filled_layer_cache(rows)
    return cache


def with_extra_column(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, x[..., :1]], dim=-1)


ID_MUTATIONS = mutations(
    lambda ids: ids.float(), lambda ids: ids.bool(), lambda ids: ids.flatten(), lambda ids: ids[..., None],
    lambda ids: -ids - 1, lambda ids: ids.tolist(), lambda ids: None,
    lambda ids: ids.to(torch.complex64)) + mutations(
    lambda ids: ids.to(torch.uint8), lambda ids: ids.to(torch.int16), lambda ids: ids.to(torch.int32),
    must_raise=False)
EMPTY_IDS = mutations(lambda ids: ids[:0], lambda ids: ids[:, :0])
OUT_OF_VOCABULARY = mutations(lambda ids: ids + 10_000)
VECTOR_MUTATIONS = mutations(
    lambda x: x.long(), lambda x: x.bool(), lambda x: x[0], lambda x: x[None], lambda x: x[:0], lambda x: x.tolist(),
    lambda x: None)
EXTRA_COLUMN = mutations(with_extra_column)
OTHER_FLOATS = mutations(lambda x: x.double(), lambda x: x.bfloat16())
MASK_MUTATIONS = mutations(
    lambda m: m.float(), lambda m: m.long(), lambda m: m.reshape(m.size(0), -1) if m.dim() == 4 else m[0],
    lambda m: m.squeeze(1) if m.dim() == 4 else m[None, None], lambda m: torch.cat([m, m[..., :1]], dim=-1),
    lambda m: m.tolist())
DOUBLED_BATCH = mutations(lambda m: m.repeat(2, *[1] * (m.dim() - 1)))
LOGITS_MUTATIONS = mutations(
    lambda x: x.long(), lambda x: x.bool(), lambda x: x[0], lambda x: x[None], lambda x: x.tolist(),
    lambda x: None) + mutations(lambda x: x.double(), must_raise=False)
NOT_A_TOKEN_ID = fixed(1.5, 4.0, True, False, "3", None) + fixed(torch.tensor(3), must_raise=False)

KINDS: dict[str, Any] = {
    # numbers and flags
    "size": (fixed(*NOT_AN_INT), st.integers(max_value=0)),                  # int >= 1
    "optional_size": (fixed(*NOT_AN_INT[:-2], NOT_AN_INT[-1]), st.integers(max_value=0)),  # None allowed
    "count": (fixed(*NOT_AN_INT), st.integers(max_value=-1)),                # int >= 0
    "int": (fixed(1.5, True, "3", None), None),                              # any int
    "seed32": (fixed(*NOT_AN_INT, 2**32, 2**40), st.integers(max_value=-1)),
    "id": (fixed(*NOT_AN_INT), st.one_of(st.integers(max_value=-1), st.integers(min_value=10_000))),
    "optional_id": (fixed(1.5, 4.0, True, "3", torch.tensor(3)),
                    st.one_of(st.integers(max_value=-1), st.integers(min_value=10_000))),
    # token ids of tokenization, which takes a 0-d integer tensor (ids[0]) as one: in a vocabulary / unbounded
    "token_id": (NOT_A_TOKEN_ID, st.one_of(st.integers(max_value=-1), st.integers(min_value=10_000))),
    "any_token_id": (NOT_A_TOKEN_ID, st.integers(max_value=-1)),
    "prob": (fixed(*NOT_A_NUMBER, 1.0, 1.5, -0.1), st.one_of(st.floats(min_value=1.0), st.floats(max_value=-1e-9))),
    "real": (fixed(*NOT_A_NUMBER), None),
    "positive_real": (fixed(*NOT_A_NUMBER, 0.0, -1.0), st.floats(max_value=0.0)),
    "optional_positive_real": (fixed(*NOT_A_NUMBER[:-2], NOT_A_NUMBER[-1], 0.0, -1.0), st.floats(max_value=0.0)),
    "non_negative_real": (fixed(*NOT_A_NUMBER, -0.5), st.floats(max_value=-1e-9)),
    "optional_non_negative_real": (fixed(*NOT_A_NUMBER[:-2], NOT_A_NUMBER[-1], -0.5), st.floats(max_value=-1e-9)),
    "base": (fixed(*NOT_A_NUMBER, 1.0, 0.5, -1.0), st.floats(max_value=1.0)),                 # real > 1 (RoPE)
    "optional_base": (fixed(*NOT_A_NUMBER[:-2], NOT_A_NUMBER[-1], 1.0, 0.5, -1.0), st.floats(max_value=1.0)),
    "at_least_one": (fixed(*NOT_A_NUMBER, 0.5, 0.0, -1.0), st.floats(max_value=1.0, exclude_max=True)),  # penalty
    "optional_mass": (fixed(*NOT_A_NUMBER[:-2], NOT_A_NUMBER[-1], 0.0, 1.5, -0.5),        # None or in (0, 1]: top-p
                      st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0, exclude_min=True))),
    "fraction_pair": (fixed((0.8,), (0.5, 0.6), (1.5, 0.1), (NAN, 0.1), "ab", 0.8, None), None),  # two in (0, 1)
    "open_unit": (fixed(*NOT_A_NUMBER, 0.0, 1.0, 1.5, -0.5), None),
    "unit_real": (fixed(*NOT_A_NUMBER, 1.5, -0.5), None),
    "bool": (fixed(0, 1, "yes", None, 1.0, torch.tensor(True)), None),
    "choice": (mutations(lambda v: v + "x", lambda v: v.upper(), lambda v: "", lambda v: 3, lambda v: None), None),
    "optional_choice": (mutations(lambda v: v + "x", lambda v: v.upper(), lambda v: "", lambda v: 3), None),
    "settings": (fixed({}, {"model_type": "t5"}, "gpt2", 3, None, [("model_type", "gpt2")]), None),  # config.json
    "weights": (fixed({}, {"a": 1}, 3, None, "weights", {"wte.weight": torch.zeros(2)}), None),     # a state dict
    "folder": (fixed(3, None, "", "/nonexistent/folder", Path("/nonexistent/folder")), None),
    "text": (fixed(b"bytes", 3, None, ["a list"]), None),
    "texts": (fixed("one str", [3], [None], 3, None), None),
    "callable": (fixed(3, "f", None), None),
    "optional_callable": (fixed(3, "f"), None),
    "module": (fixed(3, "model", None, {"a": 1}), None),
    "optional_module": (fixed(3, "model", {"a": 1}), None),
    "config": (fixed(None, {"vocab_size": 20}, 3, "config"), None),
    "cache": (fixed({}, [], [{}], "cache", [{"self": {}, "cross": {}}], 3)
              + mutations(lambda cache: KVCache(1), lambda cache: KVCache(3, cross_attention=True),
                          lambda cache: filled_kv_cache(rows=3)), None),
    "attention_cache": (fixed([], [{}], "cache", {"k": torch.zeros(2, 2, 1, 4)}, 3)
                        + mutations(lambda cache: KVCache(1), lambda cache: filled_layer_cache(rows=3))
                        + mutations(lambda cache: LayerCache(), must_raise=False), None),  # a fresh one starts
    "lm_cache": (fixed({}, [], "cache", 3) + mutations(lambda cache: KVCache(0), lambda cache: KVCache(3),
                                                       lambda cache: filled_kv_cache(rows=3))
                 + mutations(lambda cache: KVCache(1), must_raise=False), None),  # of a one-layer decoder-only model
    "id_lists": (fixed("text", [[1.5, 2.0]], [[-1, 8]], [], 3, None), None),
    "vocab_id_lists": (fixed("text", [[1.5, 2.0]], [[-1, 8]], [], 3, None, [[8, 10_000]]), None),
    "path": (fixed(3, None, "/nonexistent/file.po", Path("/nonexistent/file")), None),
    "optional_path": (fixed(3, "/nonexistent/folder"), None),
    "generator": (fixed(3, "seed", 0), None),
    "device": (fixed(3, "not-a-device", 1.5), None),
    "languages": (fixed("de", ("de",), ("de", "de"), (3, "fr"), 3, None), None),
    "int_list": (fixed("789", [1.5], [True], 3, None), None),
    "int_pairs": (fixed("ab", [(1.5, 2)], [(1, 2, 3)], [(-1, 300)], 3, None), None),
    "tensor": (fixed([1, 2], None, "3"), None),
    "tensors": (fixed((), (torch.zeros(3), torch.zeros(4)), (3,), (torch.tensor(1.0),), (torch.zeros(0, 2),)), None),
    "batches": (fixed("abc", 3, None, torch.zeros(2, 3), []), None),
    "optional_batches": (fixed("abc", 3, torch.zeros(2, 3), []), None),
    "batch_pair": (mutations(lambda b: (b[0].float(), b[1]), lambda b: (b[0], b[1].float()), lambda b: (b[0], b[1][:1]),
                             lambda b: (b[0][:0], b[1][:0]), lambda b: b[0], lambda b: b[:1], lambda b: None)
                   + mutations(lambda b: (b[0], b[1] + 10_000), must_raise=False), None),  # (inputs, targets)
    "documents": (fixed({}, {"train": [[7]]}, [[7]], "docs", 3, None), None),              # {split: id lists}
    "special_ids": (fixed({"bos_id": 10_000}, {"eos_id": -1}, {"pad_id": 1.5}), None),
    # tensors: mutations of the valid value
    "ids": (ID_MUTATIONS + EMPTY_IDS + OUT_OF_VOCABULARY, None),              # (batch, seq) integer ids
    "ids_or_empty": (ID_MUTATIONS + [(f, False) for f, _ in EMPTY_IDS] + OUT_OF_VOCABULARY, None),
    "any_ids": (ID_MUTATIONS + [(f, False) for f, _ in EMPTY_IDS + OUT_OF_VOCABULARY], None),  # no vocabulary
    "vectors": (VECTOR_MUTATIONS + EXTRA_COLUMN + OTHER_FLOATS, None),        # float, the module's own dtype
    "any_float": (VECTOR_MUTATIONS + EXTRA_COLUMN + [(f, False) for f, _ in OTHER_FLOATS], None),
    "any_width_float": (VECTOR_MUTATIONS + [(f, False) for f, _ in EXTRA_COLUMN + OTHER_FLOATS], None),  # d_v ≠ d_k
    "even_width_float": (mutations(lambda x: x.long(), lambda x: x.bool(), lambda x: x.tolist(), lambda x: None)
                         + EXTRA_COLUMN + mutations(lambda x: x[0], lambda x: x[None], lambda x: x[:0],
                                                    lambda x: x.double(), lambda x: x.bfloat16(), must_raise=False),
                         None),                                                # float (..., even d), any dtype
    "logits": (LOGITS_MUTATIONS, None),
    "next_logits": (LOGITS_MUTATIONS, None),                                  # (rows, vocab) of any vocabulary
    "labels": (mutations(lambda y: y.float(), lambda y: y.bool(), lambda y: y[0], lambda y: y[None],
                         lambda y: torch.where(y >= 0, y + 10_000, y), lambda y: y.tolist(), lambda y: None), None),
    # lesson 11: sequence log-probabilities (n_pairs,), a bool mask (batch, seq), (ids, response_mask) batches
    "logps": (fixed(torch.zeros(3, dtype=torch.long), torch.zeros(3, 2), torch.zeros(4), [0.0, 1.0, 2.0], None,
                    torch.tensor(1.0)), None),
    "bool_mask": (mutations(lambda m: m.float(), lambda m: m[:, :-1], lambda m: m.tolist(), lambda m: None), None),
    "response_batch": (mutations(lambda b: (b[0].float(), b[1]), lambda b: (b[0], b[1].long()),
                                 lambda b: (b[0], b[1][:, :-1]), lambda b: (b[0][:, :1], b[1][:, :1]),
                                 lambda b: b[0], lambda b: None), None),
    "qa_pairs": (fixed("pairs", 3, None, [("q", "a")], {"a": 1}), None),            # a list of stdlib_qa.QAPair
    "pool": (fixed(3, None, "pool", {"textwrap": "one sentence"}, {"textwrap": [3]}), None),  # {module: [str]}
    "examples": (fixed("q", 3, None, [], [("q",)], [(3, "a")], [("q", None)], {"q": "a"}, [("q", "a", "b")]), None),
    "triples": (fixed("q", 3, None, [], [("q", "a")], [(3, "a", "b")], {"q": "a"}), None),  # (q, chosen, rejected)
    "choice_items": (fixed("q", 3, None, [], [("q", ["a"], 0)], [("q", ["a", "b"], 2)], [("q", ["a", "b"], 1.0)],
                           [("q", "ab", 0)], [(3, ["a", "b"], 0)]), None),       # (question, options, right)
    "chat_ids": (fixed("789", [1.5], [True], 3, None, [-1], [10**6], torch.zeros(3), torch.zeros(2, 2).long()), None),
    "features": (mutations(lambda x: x.long(), lambda x: x.bool(), with_extra_column, lambda x: x.tolist(),
                           lambda x: None) + OTHER_FLOATS
                 + mutations(lambda x: x[0], lambda x: x[None], lambda x: x[:0], must_raise=False), None),
    "label_values": (mutations(lambda y: y.float(), lambda y: y.bool(), lambda y: torch.where(y >= 0, y + 10_000, y),
                               lambda y: y.tolist(), lambda y: None)
                     + mutations(lambda y: y[0], lambda y: y[None], must_raise=False), None),
    "mask": (MASK_MUTATIONS + DOUBLED_BATCH, None),                           # bool (batch, 1, q or 1, k)
    "combinable_mask": (MASK_MUTATIONS + [(f, False) for f, _ in DOUBLED_BATCH], None),  # broadcasts with the other
    "selected": (mutations(lambda m: m.float(), lambda m: m[0], lambda m: m.tolist(), lambda m: None), None),
    "model_tensor": (mutations(lambda x: x.tolist(), lambda x: None, lambda x: x[0]), None),
    "rows": (mutations(lambda r: r.float(), lambda r: r.bool(), lambda r: r[None], lambda r: r + 10, lambda r: None)
             + mutations(lambda r: r.tolist(), must_raise=False), None),            # (new_batch,) long row indices
    "positions": (mutations(lambda p: p.float(), lambda p: p.bool(), lambda p: p[None], lambda p: p - 10,
                            lambda p: p.tolist(), lambda p: None), None),               # (seq,) integer positions
    "token_type_ids": (mutations(lambda t: t.float(), lambda t: t.bool(), lambda t: t.flatten(), lambda t: t[..., None],
                                 lambda t: -t - 1, lambda t: t + 10_000, lambda t: t[:, :-1], lambda t: t.tolist(),
                                 lambda t: t.to(torch.complex64))
                       + mutations(lambda t: t.to(torch.uint8), lambda t: t.to(torch.int32), lambda t: None,
                                   must_raise=False), None),                 # (batch, seq) segment ids, or None
    "projection_rows": (mutations(lambda w: w.long(), lambda w: w.bool(), lambda w: w.tolist(), lambda w: None,
                                  lambda w: w[:-1], lambda w: w[None], lambda w: w[:0])
                        + mutations(lambda w: w[0], lambda w: w.double(), lambda w: w.bfloat16(), with_extra_column,
                                    must_raise=False), None),              # (heads · even d_head, ...) float rows
}


def listed_wrong_values(kind: str, valid: Any) -> list[tuple[Any, bool]]:
    """The hand-picked ``(value, must_raise)`` pairs of ``kind``, built from the argument's valid value."""
    return [(make(valid), must_raise) for make, must_raise in KINDS[kind][0]]


DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.uint8, torch.bool)
TENSOR_KINDS = {"ids", "ids_or_empty", "any_ids", "vectors", "any_float", "any_width_float", "even_width_float",
                "features", "logits", "next_logits", "labels", "mask", "combinable_mask"}


def tensor_is_acceptable(kind: str, x: torch.Tensor, valid: torch.Tensor) -> bool:
    """Whether a generated tensor may work (``False``: it must raise a course error)."""
    integer = not x.is_floating_point() and x.dtype != torch.bool
    if kind in ("ids", "ids_or_empty", "any_ids", "labels"):
        return integer and x.dim() == 2 and (x.numel() > 0 or kind != "ids")
    if kind in ("mask", "combinable_mask"):
        return x.dtype == torch.bool and x.dim() == valid.dim()
    if kind == "features":  # (..., d_model): any leading dimensions
        return x.dim() >= 1 and x.size(-1) == valid.size(-1) and x.dtype == valid.dtype
    if kind == "even_width_float":  # any leading dimensions and float dtype, an even last dimension
        return x.dim() >= 1 and x.size(-1) % 2 == 0 and x.is_floating_point()
    if kind in ("any_width_float", "next_logits"):  # any last dimension
        return x.dim() == valid.dim() and x.numel() > 0 and x.is_floating_point()
    same_layout = x.dim() == valid.dim() and x.numel() > 0 and x.size(-1) == valid.size(-1)
    if kind == "vectors":
        return same_layout and x.dtype == valid.dtype
    return same_layout and x.is_floating_point()  # any_float, logits


@st.composite
def generated_tensor(draw, kind: str, valid: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """A tensor of random rank (0-4), sizes (0-5, or the valid ones) and dtype, with ``must_raise``."""
    rank = draw(st.integers(0, 4))
    sizes = [[0, 1, 2, 3, 5] + ([valid.shape[i]] if i < valid.dim() else []) for i in range(rank)]
    shape = [draw(st.sampled_from(choices)) for choices in sizes]
    dtype = draw(st.sampled_from(DTYPES))
    x = torch.randint(7, 20, shape, generator=generator(draw(st.integers(0, 3)))).to(dtype) if kind != "vectors" \
        else torch.randn(shape, generator=generator()).to(dtype)
    if kind in ("mask", "combinable_mask"):
        x = (torch.rand(shape, generator=generator()) > 0.2).to(dtype)
    return x, not tensor_is_acceptable(kind, x, valid)


def generated_wrong_value(kind: str, valid: Any) -> st.SearchStrategy | None:
    """A hypothesis strategy of ``(value, must_raise)`` pairs of ``kind``, or ``None`` if the kind has none."""
    if kind in TENSOR_KINDS:
        return generated_tensor(kind, valid)
    numbers = KINDS[kind][1]
    return None if numbers is None else numbers.map(lambda v: (v, True))


# ---------------------------------------------------------------------------- valid arguments
TINY = dict(vocab_size=20, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=8, dropout=0.0)


def generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


PUBLISHED_FIELDS = {"scale_embeddings", "n_token_types", "embedding_norm", "final_norm", "norm_eps"}


def config(**changes):
    """A tiny config: a TransformerConfig, or interop's PublishedConfig when a published family's field is set."""
    from course_utils.config import TransformerConfig
    from course_utils.interop import PublishedConfig
    return (PublishedConfig if PUBLISHED_FIELDS & set(changes) else TransformerConfig)(**{**TINY, **changes})


def ids(batch: int = 2, seq: int = 5, low: int = 7, high: int = 20) -> torch.Tensor:
    return torch.randint(low, high, (batch, seq), generator=generator())


def vectors(batch: int = 2, seq: int = 5, d_model: int = 8) -> torch.Tensor:
    return torch.randn(batch, seq, d_model, generator=generator())


def head_vectors(heads: int = 2) -> torch.Tensor:
    """Queries/keys split into heads, ``(batch, heads, seq, d_head)``."""
    return torch.randn(2, heads, 5, 4, generator=generator())


def padding(batch: int = 2, seq: int = 5) -> torch.Tensor:
    from course_utils.masks import padding_mask
    return padding_mask(ids(batch, seq))


@lru_cache(maxsize=None)
def seq2seq():
    """Shared, in eval mode: no fuzz call changes a model (a cache is always a fresh argument)."""
    from course_utils.models import Seq2SeqTransformer
    torch.manual_seed(0)
    return Seq2SeqTransformer(config()).eval()


@lru_cache(maxsize=None)
def gpt(modern: bool = False):
    """Shared, in eval mode, like :func:`seq2seq`; ``modern``: RoPE, RMSNorm, SwiGLU and one K/V head."""
    from course_utils.language_model import DecoderOnlyLM
    from course_utils.modern import modern_config
    torch.manual_seed(0)
    return DecoderOnlyLM(modern_config(**TINY) if modern else config(norm="pre")).eval()


@lru_cache(maxsize=None)
def mlm_model():
    from course_utils.models import MaskedLanguageModel
    torch.manual_seed(0)
    return MaskedLanguageModel(config(vocab_size=300, max_len=16)).eval()


@lru_cache(maxsize=None)
def bpe():
    from course_utils.tokenization import BPETokenizer
    return BPETokenizer.train(["the function returns a list of values", "a value is returned"] * 3, vocab_size=290)


@lru_cache(maxsize=None)
def word_tokenizer():
    from course_utils.tokenization import WordTokenizer
    return WordTokenizer.train(["one two three", "four five"])


@lru_cache(maxsize=None)
def number_tokenizers():
    from course_utils.data import numbers
    return numbers.train_tokenizers([numbers.make_pair(n) for n in range(60)], german_vocab_size=270, max_texts=60)


def number_words():
    return number_tokenizers()[0]


def number_bpe():
    return number_tokenizers()[1]


def labels(batch: int = 2, seq: int = 5, vocab: int = 20) -> torch.Tensor:
    y = torch.randint(7, vocab, (batch, seq), generator=generator())
    y[:, ::2] = -100
    return y


def tiny_linear():
    torch.manual_seed(0)
    return nn.Linear(3, 2)


def linear_loss(model, batch):
    x, y = batch
    return nn.functional.mse_loss(model(x), y)


def po_file() -> Path:
    path = SCRATCH / "course_fuzz_messages.po"
    path.write_text('msgid "Hello"\nmsgstr "Hallo"\n', encoding="utf-8")
    return path


def scratch_folder() -> Path:
    folder = SCRATCH / "course_fuzz_bpe_files"
    folder.mkdir(exist_ok=True)
    return folder


def gpt2_layout_files() -> Path:
    """vocab.json + merges.txt numbered as GPT-2 numbers them: the bytes first, an ``<|endoftext|>`` last."""
    import json

    folder = SCRATCH / "course_fuzz_gpt2_files"
    folder.mkdir(exist_ok=True)
    vocab_path, _ = bpe().write_vocab_and_merges(folder)
    vocab = {token: i - 7 for token, i in json.loads(vocab_path.read_text(encoding="utf-8")).items() if i >= 7}
    vocab["<|endoftext|>"] = len(vocab)
    vocab_path.write_text(json.dumps(vocab), encoding="utf-8")
    return folder


@lru_cache(maxsize=None)
def course_gpt2():
    """A course model built as GPT-2 is (what the interop entries convert)."""
    from course_utils.language_model import DecoderOnlyLM
    torch.manual_seed(0)
    return DecoderOnlyLM(config(norm="pre", positional="learned", scale_embeddings=False, activation="gelu_tanh",
                                pad_id=None)).eval()


@lru_cache(maxsize=None)
def published():
    from course_utils.interop import to_hf
    return to_hf(course_gpt2())


@lru_cache(maxsize=None)
def hf_gpt2():
    from course_utils.interop import to_transformers
    return to_transformers(course_gpt2())


def checkpoint_folder() -> Path:
    import json

    from safetensors.torch import save_file
    folder = SCRATCH / "course_fuzz_checkpoint"
    folder.mkdir(exist_ok=True)
    settings, state = published()
    (folder / "config.json").write_text(json.dumps(settings), encoding="utf-8")
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"))
    return folder


QA_MODULES = {"textwrap": ("Remove common leading whitespace.", "Fill a paragraph of text.", "Wrap a paragraph."),
              "json": ("Serialize an object to a string.", "Deserialize a string to an object.", "Read a file.")}


def qa_pairs():
    from course_utils.data.stdlib_qa import QAPair
    return [QAPair(module, f"{module}.f{i}", answer) for module, answers in QA_MODULES.items()
            for i, answer in enumerate(answers)]


@lru_cache(maxsize=None)
def chat_tokenizer():
    """Lesson 11's chat tokenizer: the shipped base GPT's BPE plus the two chat tokens."""
    from course_utils.instruct import ChatTokenizer, load_base_gpt
    return ChatTokenizer(load_base_gpt()[1])


def chat_gpt():
    """A fresh tiny GPT over the chat tokenizer's vocabulary (the training entries change it in place)."""
    from course_utils.language_model import DecoderOnlyLM
    torch.manual_seed(0)
    return DecoderOnlyLM(config(vocab_size=chat_tokenizer().vocab_size, max_len=32, norm="pre")).eval()


def capture_and_release(model):
    from course_utils.attention import capture_attention
    with capture_attention(model) as maps:
        pass
    return maps


# ---------------------------------------------------------------------------- the registry
@dataclass
class Case:
    """How to call one public callable: ``call(**valid())`` works; ``bad`` maps argument → kind of wrong value."""

    call: Callable[..., Any]
    valid: Callable[[], dict]
    bad: dict[str, str]
    allow_inf: bool = False  # the output may hold -inf on purpose (e.g. forbidden logits)


def case(call, bad: dict[str, str], allow_inf: bool = False, **valid) -> Case:
    """``valid`` values may be zero-argument factories (called afresh for every example)."""
    return Case(call, lambda: {k: v() if callable(v) and not isinstance(v, type) and k not in CALLABLE_ARGS else v
                               for k, v in valid.items()}, bad, allow_inf)


CALLABLE_ARGS = {"loss_fn", "eval_fn", "sublayer"}  # arguments whose valid value is itself a function


def method(factory: Callable[[], Any], name: str):
    """Call ``factory().name(**arguments)``: a fresh object for every example."""
    return lambda **arguments: getattr(factory(), name)(**arguments)


def m(module: str):
    return importlib.import_module(f"course_utils.{module}")


def build_registry() -> dict[str, Case | None]:
    """``"module:name"`` (or ``"module:Class.method"``) → :class:`Case`; ``None`` = nothing to vary (no arguments)."""
    config_, embedding, positional, models = m("config"), m("embedding"), m("positional"), m("models")
    attention, masks, layers, reference = m("attention"), m("masks"), m("layers"), m("reference")
    mlm, decoding, training, runtime = m("mlm"), m("decoding"), m("training"), m("runtime")
    tokenization, corpus, language_id, numbers = (m("tokenization"), m("data.pydoc_corpus"), m("data.language_id"),
                                                  m("data.numbers"))
    kv_cache, losses, language_model, modern = m("kv_cache"), m("losses"), m("language_model"), m("modern")
    interop = m("interop")
    batching, lm_data, order = m("data.batching"), m("data.lm_data"), m("data.order")
    sizes = dict(vocab_size="size", d_model="size", n_heads="size", d_ff="size", n_layers="size", max_len="size")
    r: dict[str, Case | None] = {}
    # config
    r["config:TransformerConfig"] = case(config_.TransformerConfig, {
        **sizes, "dropout": "prob", "activation": "choice", "norm": "choice", "positional": "choice",
        "pad_id": "optional_id", "tgt_vocab_size": "optional_size", "normalization": "choice",
        "n_kv_heads": "optional_size", "rope_base": "base", "bias": "bool"}, **TINY, activation="relu", norm="post",
        positional="sinusoidal", pad_id=0, tgt_vocab_size=None, normalization="layernorm", n_kv_heads=None,
        rope_base=10000.0, bias=True)
    r["config:TransformerConfig.layer_options"] = None  # no arguments
    r["config:check_heads"] = case(config_.check_heads, {"d_model": "size", "n_heads": "size"}, d_model=8, n_heads=2)
    r["config:check_kv_heads"] = case(config_.check_kv_heads, {"n_heads": "size", "n_kv_heads": "size"}, n_heads=4,
                                      n_kv_heads=2)
    r["config:count_parameters"] = case(config_.count_parameters, {"module": "module", "trainable_only": "bool"},
                                        module=tiny_linear, trainable_only=True)
    for name in ("attention_parameter_count", "layer_norm_parameter_count"):
        r[f"config:{name}"] = case(getattr(config_, name), {"d_model": "size"}, d_model=8)
    for name in ("feed_forward_parameter_count", "encoder_layer_parameter_count", "decoder_layer_parameter_count"):
        r[f"config:{name}"] = case(getattr(config_, name), {"d_model": "size", "d_ff": "size"}, d_model=8, d_ff=16)
    # embedding
    r["embedding:TokenEmbedding"] = case(embedding.TokenEmbedding, {"vocab_size": "size", "d_model": "size",
                                                                   "pad_id": "optional_id", "scale": "bool"},
                                         vocab_size=20, d_model=8, pad_id=0, scale=True)
    for name in ("forward", "check_ids"):
        r[f"embedding:TokenEmbedding.{name}"] = case(method(lambda: embedding.TokenEmbedding(20, 8), name),
                                                     {"ids": "ids"}, ids=ids)
    r["embedding:check_token_ids"] = case(embedding.check_token_ids, {"ids": "ids", "vocab_size": "size",
                                                                     "max_len": "optional_size"},
                                          ids=ids, vocab_size=20, max_len=8)
    # positional
    r["positional:sinusoidal_table"] = case(positional.sinusoidal_table, {"max_len": "size", "d_model": "size"},
                                            max_len=8, d_model=8)
    for name in ("SinusoidalPositionalEncoding", "LearnedPositionalEncoding"):
        cls = getattr(positional, name)
        r[f"positional:{name}"] = case(cls, {"d_model": "size", "max_len": "size"}, d_model=8, max_len=8)
        for method_name in ("forward", "check_inputs"):
            r[f"positional:{name}.{method_name}"] = case(
                method(lambda cls=cls: cls(8, 8), method_name),
                {"x": "any_float" if name.startswith("Sinusoidal") else "vectors", "offset": "count"}, x=vectors,
                offset=0)
    # attention (mask helper)
    for name in ("scaled_dot_product_attention", "check_attention_inputs"):
        r[f"attention:{name}"] = case(getattr(attention, name), {
            "query": "any_float", "key": "any_float", "value": "any_width_float", "mask": "mask", "dropout_p": "prob",
            "scale": "optional_positive_real"}, query=lambda: vectors()[:, None], key=lambda: vectors()[:, None],
            value=lambda: vectors()[:, None], mask=padding, dropout_p=0.0, scale=None)
    r["attention:check_mask"] = case(attention.check_mask, {"mask": "mask"}, mask=padding,
                                     scores_shape=torch.Size((2, 2, 5, 5)))
    r["attention:fused_attention"] = case(attention.fused_attention, {
        "query": "any_float", "key": "any_float", "value": "any_width_float", "mask": "mask", "dropout_p": "prob",
        "scale": "optional_positive_real"}, query=lambda: vectors()[:, None], key=lambda: vectors()[:, None],
        value=lambda: vectors()[:, None], mask=padding, dropout_p=0.0, scale=None)
    r["attention:MultiHeadAttention"] = case(attention.MultiHeadAttention, {
        "d_model": "size", "n_heads": "size", "dropout": "prob", "bias": "bool"}, d_model=8, n_heads=2, dropout=0.0,
        bias=True)
    r["kv_cache:CachedMultiHeadAttention"] = case(kv_cache.CachedMultiHeadAttention, {
        "d_model": "size", "n_heads": "size", "dropout": "prob", "bias": "bool", "use_fast_path": "bool",
        "kdim": "optional_size", "vdim": "optional_size"},
        d_model=8, n_heads=2, dropout=0.0, bias=True, use_fast_path=True, kdim=None, vdim=None)
    r["modern:GroupedQueryAttention"] = case(modern.GroupedQueryAttention, {
        "d_model": "size", "n_heads": "size", "dropout": "prob", "bias": "bool", "use_fast_path": "bool",
        "n_kv_heads": "optional_size", "rope_base": "optional_base"},
        d_model=8, n_heads=2, dropout=0.0, bias=True, use_fast_path=True, n_kv_heads=None, rope_base=None)
    r["modern:make_attention"] = case(modern.make_attention, {
        "d_model": "size", "n_heads": "size", "dropout": "prob", "bias": "bool", "n_kv_heads": "optional_size",
        "rope_base": "optional_base"}, d_model=8, n_heads=2, dropout=0.0, bias=True, n_kv_heads=1, rope_base=100.0)
    mha = lambda: attention.MultiHeadAttention(8, 2).eval()  # noqa: E731
    cached = lambda: kv_cache.CachedMultiHeadAttention(8, 2).eval()  # noqa: E731
    rope_gqa = lambda: modern.GroupedQueryAttention(8, 2, n_kv_heads=1, rope_base=10000.0).eval()  # noqa: E731
    for name in ("forward", "check_inputs"):
        r[f"attention:MultiHeadAttention.{name}"] = case(method(mha, name), {
            "query": "vectors", "key": "vectors", "value": "vectors", "mask": "mask"},
            query=vectors, key=vectors, value=vectors, mask=padding)
        for key, make in (("kv_cache:CachedMultiHeadAttention", cached), ("modern:GroupedQueryAttention", rope_gqa)):
            r[f"{key}.{name}"] = case(method(make, name), {
                "query": "vectors", "key": "vectors", "value": "vectors", "mask": "mask", "need_weights": "bool",
                "cache": "attention_cache", "static_kv": "bool"},
                query=vectors, key=vectors, value=vectors, mask=padding, need_weights=False, cache=None,
                static_kv=False)
    r["attention:MultiHeadAttention.split_heads"] = case(method(mha, "split_heads"), {"x": "vectors"}, x=vectors)
    r["attention:MultiHeadAttention.merge_heads"] = case(method(mha, "merge_heads"), {"x": "any_float"},
                                                         x=head_vectors)
    for key, make, width in (("kv_cache:CachedMultiHeadAttention", cached, 8), ("modern:GroupedQueryAttention",
                                                                               rope_gqa, 4)):
        r[f"{key}.split_kv_heads"] = case(method(make, "split_kv_heads"), {"x": "vectors"},
                                          x=lambda width=width: vectors(d_model=width))
    r["attention:capture_attention"] = case(capture_and_release, {"model": "module"}, model=seq2seq)
    # masks (mask helper)
    r["masks:padding_mask"] = case(masks.padding_mask, {"ids": "any_ids", "pad_id": "count"}, ids=ids, pad_id=0)
    r["masks:causal_mask"] = case(masks.causal_mask, {"q_len": "size", "past": "count", "device": "device"}, q_len=5,
                                  past=0, device=None)
    r["masks:target_mask"] = case(masks.target_mask, {"tgt_ids": "any_ids", "pad_id": "count"}, tgt_ids=ids,
                                  pad_id=0)
    r["masks:combine_masks"] = case(lambda first, second: masks.combine_masks(first, second),
                                    {"first": "combinable_mask", "second": "combinable_mask"}, first=padding,
                                    second=lambda: masks.causal_mask(5))
    # layers (mask helper)
    r["layers:PositionwiseFeedForward"] = case(layers.PositionwiseFeedForward, {
        "d_model": "size", "d_ff": "size", "dropout": "prob", "activation": "choice", "bias": "bool"},
        d_model=8, d_ff=16, dropout=0.0, activation="relu", bias=True)
    for name in ("forward", "check_input"):
        r[f"layers:PositionwiseFeedForward.{name}"] = case(
            method(lambda: layers.PositionwiseFeedForward(8, 16), name), {"x": "features"}, x=vectors)
    for activation in ("relu", "swiglu"):
        r[f"layers:make_feed_forward[{activation}]"] = case(layers.make_feed_forward, {
            "d_model": "size", "d_ff": "size", "dropout": "prob", "activation": "choice", "bias": "bool"},
            d_model=8, d_ff=16, dropout=0.0, activation=activation, bias=True)
    r["layers:ResidualSublayer"] = case(layers.ResidualSublayer, {
        "d_model": "size", "dropout": "prob", "norm": "choice", "bias": "bool", "normalization": "choice",
        "eps": "optional_positive_real"}, d_model=8, dropout=0.0, norm="post", bias=True, normalization="layernorm",
        eps=None)
    for name in ("forward", "check_inputs"):
        r[f"layers:ResidualSublayer.{name}"] = case(method(lambda: layers.ResidualSublayer(8, 0.0, "post"), name),
                                                    {"x": "vectors", "sublayer": "callable"}, x=vectors,
                                                    sublayer=lambda h: h)
    for name in ("EncoderLayer", "DecoderLayer"):
        r[f"layers:{name}"] = case(getattr(layers, name), {
            "d_model": "size", "n_heads": "size", "d_ff": "size", "dropout": "prob", "activation": "choice",
            "norm": "choice", "bias": "bool", "normalization": "choice", "n_kv_heads": "optional_size",
            "rope_base": "optional_base", "norm_eps": "optional_positive_real"}, d_model=8, n_heads=2, d_ff=16,
            dropout=0.0, activation="relu", norm="post", bias=True, normalization="layernorm", n_kv_heads=None,
            rope_base=None, norm_eps=None)
    for name in ("forward", "check_inputs"):
        r[f"layers:EncoderLayer.{name}"] = case(method(lambda: layers.EncoderLayer(8, 2, 16, 0.0).eval(), name),
                                                {"x": "vectors", "mask": "mask"}, x=vectors, mask=padding)
        r[f"layers:DecoderLayer.{name}"] = case(
            method(lambda: layers.DecoderLayer(8, 2, 16, 0.0).eval(), name),
            {"y": "vectors", "memory": "vectors", "tgt_mask": "mask", "memory_mask": "mask",
             "self_cache": "attention_cache", "cross_cache": "attention_cache"},
            y=vectors, memory=vectors, tgt_mask=lambda: masks.target_mask(ids()), memory_mask=padding,
            self_cache=None, cross_cache=None)
    # reference (mask helper)
    r["reference:copy_attention"] = case(reference.copy_attention, {"ours": "module", "theirs": "module"},
                                         ours=mha, theirs=lambda: nn.MultiheadAttention(8, 2, batch_first=True))
    r["reference:copy_linear_and_norms"] = case(reference.copy_linear_and_norms, {"pairs": "batches"},
                                                pairs=lambda: [(nn.Linear(2, 2), nn.Linear(2, 2))])
    r["reference:copy_encoder_layer"] = case(
        reference.copy_encoder_layer, {"ours": "module", "theirs": "module"},
        ours=lambda: layers.EncoderLayer(8, 2, 16),
        theirs=lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True))
    r["reference:copy_decoder_layer"] = case(
        reference.copy_decoder_layer, {"ours": "module", "theirs": "module"},
        ours=lambda: layers.DecoderLayer(8, 2, 16),
        theirs=lambda: nn.TransformerDecoderLayer(8, 2, 16, batch_first=True))
    r["reference:copy_encoder"] = case(
        reference.copy_encoder, {"ours": "module", "theirs": "module"}, ours=lambda: models.Encoder(config()),
        theirs=lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1,
                                             norm=nn.LayerNorm(8), enable_nested_tensor=False))
    r["reference:copy_decoder"] = case(
        reference.copy_decoder, {"ours": "module", "theirs": "module"}, ours=lambda: models.Decoder(config()),
        theirs=lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, batch_first=True), 1,
                                             norm=nn.LayerNorm(8)))
    # models
    r["models:init_weights"] = case(models.init_weights, {"module": "module"}, module=tiny_linear)
    r["models:check_cache"] = case(models.check_cache, {"cache": "cache", "n_layers": "size", "batch": "size",
                                                        "cross_attention": "bool"},
                                   cache=lambda: seq2seq().new_cache(), n_layers=1, batch=2, cross_attention=True)
    r["models:InputEmbedding"] = case(models.InputEmbedding, {
        "vocab_size": "size", "d_model": "size", "max_len": "size", "positional": "choice", "dropout": "prob",
        "pad_id": "optional_id", "scale": "bool", "n_token_types": "count", "norm": "optional_choice",
        "norm_eps": "optional_positive_real", "bias": "bool"}, vocab_size=20, d_model=8, max_len=8,
        positional="sinusoidal", dropout=0.0, pad_id=0, scale=True, n_token_types=2, norm="layernorm", norm_eps=None,
        bias=True)
    for name in ("Encoder", "Decoder", "TextEncoder", "Seq2SeqTransformer", "make_final_norm"):
        r[f"models:{name}"] = case(getattr(models, name), {"config": "config"}, config=config)
    r["models:make_input_embedding"] = case(models.make_input_embedding, {"config": "config",
                                                                         "vocab_size": "optional_size"},
                                            config=lambda: config(n_token_types=2, embedding_norm=True),
                                            vocab_size=None)
    segments = lambda: torch.randint(0, 2, (2, 5), generator=generator())  # noqa: E731
    for name in ("forward", "check_inputs"):
        r[f"models:InputEmbedding.{name}"] = case(method(lambda: models.InputEmbedding(20, 8, 8), name),
                                                  {"ids": "ids", "offset": "count"}, ids=ids, offset=0)
        r[f"models:InputEmbedding.{name}[token_types]"] = case(
            method(lambda: models.InputEmbedding(20, 8, 8, n_token_types=2, norm="layernorm", scale=False), name),
            {"ids": "ids", "offset": "count", "token_type_ids": "token_type_ids"}, ids=ids, offset=0,
            token_type_ids=segments)
        r[f"models:TextEncoder.{name}[token_types]"] = case(
            method(lambda: models.TextEncoder(config(n_token_types=2)).eval(), name),
            {"ids": "ids", "mask_padding": "bool", "token_type_ids": "token_type_ids"}, ids=ids, mask_padding=True,
            token_type_ids=segments)
        r[f"models:Encoder.{name}"] = case(method(lambda: models.Encoder(config()).eval(), name),
                                           {"x": "vectors", "mask": "mask"}, x=vectors, mask=padding)
        r[f"models:Decoder.{name}"] = case(
            method(lambda: models.Decoder(config()).eval(), name),
            {"y": "vectors", "memory": "vectors", "tgt_mask": "mask", "memory_mask": "mask", "cache": "cache"},
            y=vectors, memory=vectors, tgt_mask=lambda: masks.target_mask(ids()), memory_mask=padding, cache=None)
        r[f"models:TextEncoder.{name}"] = case(method(lambda: models.TextEncoder(config()).eval(), name),
                                               {"ids": "ids", "mask_padding": "bool"}, ids=ids, mask_padding=True)
    r["models:TransformerClassifier"] = case(models.TransformerClassifier, {
        "config": "config", "n_classes": "size", "pooling": "choice", "mask_padding": "bool"},
        config=config, n_classes=3, pooling="cls", mask_padding=True)
    for pooling in ("cls", "mean"):
        for name in ("forward", "check_inputs"):
            r[f"models:TransformerClassifier.{name}[{pooling}]"] = case(
                method(lambda p=pooling: models.TransformerClassifier(config(), 3, pooling=p).eval(), name),
                {"ids": "ids"}, ids=ids)
    r["models:MaskedLanguageModel"] = case(models.MaskedLanguageModel, {"config": "config", "tie_weights": "bool"},
                                           config=config, tie_weights=True)
    r["models:MaskedLanguageModel.forward"] = case(method(mlm_model, "forward"), {"ids": "ids"}, ids=ids)
    r["models:MaskedLanguageModel.forward[token_types]"] = case(
        method(lambda: models.MaskedLanguageModel(config(n_token_types=2, pad_id=None)).eval(), "forward"),
        {"ids": "ids", "token_type_ids": "token_type_ids"}, ids=ids, token_type_ids=segments)
    for name in ("head", "check_hidden"):
        r[f"models:MaskedLanguageModel.{name}"] = case(method(mlm_model, name), {"hidden": "features"},
                                                       hidden=vectors)
    r["models:Seq2SeqTransformer.new_cache"] = None
    for name in ("encode", "check_source"):
        r[f"models:Seq2SeqTransformer.{name}"] = case(method(seq2seq, name), {"src_ids": "ids"}, src_ids=ids)
    for name in ("decode", "check_decode_inputs"):
        r[f"models:Seq2SeqTransformer.{name}"] = case(
            method(seq2seq, name), {"tgt_in_ids": "ids", "memory": "vectors", "src_ids": "ids", "cache": "cache"},
            tgt_in_ids=lambda: ids(2, 3), memory=vectors, src_ids=ids, cache=None)
    for name in ("forward", "check_inputs"):
        r[f"models:Seq2SeqTransformer.{name}"] = case(method(seq2seq, name), {"src_ids": "ids", "tgt_in_ids": "ids"},
                                                      src_ids=ids, tgt_in_ids=lambda: ids(2, 4))
    # mlm
    r["mlm:check_probabilities"] = case(mlm.check_probabilities, {"select_prob": "unit_real", "mask_prob": "unit_real",
                                                                 "random_prob": "unit_real"},
                                        select_prob=0.15, mask_prob=0.8, random_prob=0.1)
    r["mlm:mask_tokens"] = case(mlm.mask_tokens, {
        "ids": "ids_or_empty", "vocab_size": "size", "generator": "generator", "select_prob": "unit_real",
        "mask_prob": "unit_real", "random_prob": "unit_real", "mask_id": "id", "first_real_id": "count"},
        ids=ids, vocab_size=20, generator=generator, select_prob=0.15, mask_prob=0.8, random_prob=0.1, mask_id=4,
        first_real_id=7)
    for name in ("masked_accuracy", "check_labels"):
        r[f"mlm:{name}"] = case(getattr(mlm, name), {"logits": "logits", "labels": "labels"},
                                logits=lambda: vectors(2, 5, 20), labels=labels)
    r["mlm:UnigramBaseline"] = case(mlm.UnigramBaseline, {"train_ids": "vocab_id_lists", "vocab_size": "size",
                                                         "first_real_id": "count"},
                                    train_ids=lambda: [[7, 8, 9], [9, 10]], vocab_size=20, first_real_id=7)
    r["mlm:UnigramBaseline.score"] = case(method(lambda: mlm.UnigramBaseline([[7, 8, 9]], 20), "score"),
                                          {"labels": "label_values"}, labels=labels)
    r["mlm:logits_at"] = case(mlm.logits_at, {"model": "module", "inputs": "ids", "selected": "selected"},
                              model=mlm_model, inputs=ids, selected=lambda: ids() > 12)
    r["mlm:make_mlm_loss_fn"] = case(mlm.make_mlm_loss_fn, {"vocab_size": "size", "seed": "int"},
                                     vocab_size=20, seed=0)
    r["mlm:evaluate_mlm"] = case(mlm.evaluate_mlm, {"model": "module", "batches": "batches", "vocab_size": "size",
                                                   "seed": "int"},
                                 model=mlm_model, batches=lambda: [ids()], vocab_size=300, seed=0)
    r["mlm:encode_with_masks"] = case(mlm.encode_with_masks, {"tokenizer": "module", "text": "text",
                                                             "max_len": "optional_size"},
                                      tokenizer=bpe, text="the [MASK] returns a list", max_len=None)
    r["mlm:fill_mask"] = case(mlm.fill_mask, {"model": "module", "text": "text", "k": "size"},
                              model=mlm_model, tokenizer=bpe, text="the [MASK] returns a list", k=3)
    # decoding
    r["decoding:forbid_special_tokens"] = case(decoding.forbid_special_tokens, {
        "logits": "model_tensor", "bos_id": "id", "pad_id": "id"}, allow_inf=True,
        logits=lambda: torch.randn(2, 20, generator=generator()), bos_id=5, pad_id=0)
    r["decoding:check_decoding_inputs"] = case(decoding.check_decoding_inputs, {
        "src_ids": "ids", "max_new_tokens": "size", "beam_size": "size", "model": "optional_module",
        "special_ids": "special_ids"}, src_ids=ids, max_new_tokens=4, beam_size=2, model=seq2seq,
        special_ids=lambda: {"bos_id": 5})
    r["decoding:repeated_ngram_tokens"] = case(decoding.repeated_ngram_tokens, {"generated": "int_list", "n": "count"},
                                               generated=lambda: [7, 8, 9, 7, 8], n=3)
    greedy = dict(model=seq2seq, src_ids=ids, bos_id=5, eos_id=6, max_new_tokens=4, pad_id=0)
    greedy_bad = {"model": "module", "src_ids": "ids", "bos_id": "id", "eos_id": "id", "max_new_tokens": "size",
                  "pad_id": "id"}
    r["decoding:greedy_decode"] = case(decoding.greedy_decode, {**greedy_bad, "use_cache": "bool",
                                                               "no_repeat_ngram_size": "count"},
                                       **greedy, use_cache=True, no_repeat_ngram_size=0)
    r["decoding:beam_search"] = case(decoding.beam_search, {**greedy_bad, "beam_size": "size", "alpha": "real"},
                                     **greedy, beam_size=2, alpha=0.6)
    r["decoding:length_penalty"] = case(decoding.length_penalty, {"length": "tensor", "alpha": "real"},
                                        length=lambda: torch.tensor([1, 4]), alpha=0.6)
    r["decoding:BeamSearchOutput"] = case(decoding.BeamSearchOutput, {
        "sequences": "model_tensor", "scores": "model_tensor", "log_probs": "model_tensor"},
        sequences=lambda: ids(2, 3).view(2, 1, 3), scores=lambda: torch.zeros(2, 1),
        log_probs=lambda: torch.zeros(2, 1))
    r["decoding:strip_after_eos"] = case(decoding.strip_after_eos, {"generated": "any_ids", "eos_id": "int"},
                                         generated=ids, eos_id=6)
    r["decoding:cross_attention_weights"] = case(decoding.cross_attention_weights, {
        "model": "module", "src_ids": "ids", "generated": "ids", "bos_id": "id"},
        model=seq2seq, src_ids=ids, generated=lambda: ids(2, 3), bos_id=5)
    # decoding: sampling (gpt helper)
    row_logits = lambda: torch.randn(2, 20, generator=generator())  # noqa: E731
    r["decoding:apply_temperature"] = case(decoding.apply_temperature, {
        "logits": "next_logits", "temperature": "positive_real"}, logits=row_logits, temperature=0.7)
    r["decoding:top_k_filter"] = case(decoding.top_k_filter, {"logits": "next_logits", "top_k": "optional_size"},
                                      allow_inf=True, logits=row_logits, top_k=5)
    r["decoding:top_p_filter"] = case(decoding.top_p_filter, {"logits": "next_logits", "top_p": "optional_mass"},
                                      allow_inf=True, logits=row_logits, top_p=0.9)
    r["decoding:apply_repetition_penalty"] = case(decoding.apply_repetition_penalty, {
        "logits": "next_logits", "previous_ids": "ids", "penalty": "at_least_one"},
        logits=row_logits, previous_ids=ids, penalty=1.2)
    sampling = dict(temperature=0.8, top_k=5, top_p=0.9, repetition_penalty=1.2)
    sampling_bad = {"temperature": "non_negative_real", "top_k": "optional_size", "top_p": "optional_mass",
                    "repetition_penalty": "at_least_one"}
    r["decoding:next_token_logits"] = case(decoding.next_token_logits, {
        "logits": "next_logits", "previous_ids": "ids", **sampling_bad}, allow_inf=True, logits=row_logits,
        previous_ids=ids, **sampling)
    r["decoding:generate"] = case(decoding.generate, {
        "model": "module", "prompt_ids": "ids", "max_new_tokens": "size", **sampling_bad, "generator": "generator",
        "use_cache": "bool", "eos_id": "optional_id"}, model=gpt, prompt_ids=ids, max_new_tokens=3, **sampling,
        generator=generator, use_cache=True, eos_id=6)
    r["decoding:distinct_ngram_ratio"] = case(decoding.distinct_ngram_ratio, {"sequences": "id_lists", "n": "size"},
                                              sequences=lambda: [[7, 8, 9, 7, 8]], n=2)
    r["decoding:sample_perplexity"] = case(decoding.sample_perplexity, {
        "model": "module", "ids": "ids", "prompt_len": "size", "pad_id": "id"}, model=gpt, ids=ids, prompt_len=2,
        pad_id=0)
    # training
    r["training:lr_multiplier"] = case(training.lr_multiplier, {
        "step": "count", "warmup_steps": "count", "total_steps": "size", "schedule": "choice"},
        step=3, warmup_steps=2, total_steps=10, schedule="cosine")
    r["training:History"] = None  # a record that fit fills in; no argument to vary
    r["training:History.metric"] = case(method(training.History, "metric"), {"name": "text"}, name="loss")
    r["training:to_device"] = case(training.to_device, {"device": "device"}, batch=lambda: [vectors()], device="cpu")
    r["training:make_loader"] = case(lambda tensors, **kw: training.make_loader(*tensors, **kw), {
        "tensors": "tensors", "batch_size": "size", "shuffle": "bool", "seed": "int"},
        tensors=lambda: (torch.zeros(4, 3), torch.zeros(4)), batch_size=2, shuffle=True, seed=0)
    fit_valid = dict(model=tiny_linear, train_batches=lambda: [(torch.ones(2, 3), torch.zeros(2, 2))],
                     loss_fn=linear_loss, epochs=1, lr=1e-3, weight_decay=0.0, warmup_steps=0, schedule="cosine",
                     clip_norm=1.0, eval_fn=None, eval_every=None, device=None, amp=False, progress=False)
    fit_bad = {"model": "module", "train_batches": "batches", "loss_fn": "callable", "epochs": "size",
               "lr": "positive_real", "weight_decay": "non_negative_real", "warmup_steps": "count",
               "schedule": "choice", "clip_norm": "optional_positive_real", "eval_fn": "optional_callable",
               "eval_every": "optional_size", "device": "device", "amp": "bool", "progress": "bool"}
    r["training:fit"] = case(training.fit, fit_bad, **fit_valid)
    r["training:check_fit_arguments"] = case(training.check_fit_arguments, fit_bad, **fit_valid)
    r["training:train_lm"] = case(training.train_lm, {
        "model": "module", "train_sequences": "vocab_id_lists", "steps": "size", "batch_size": "size",
        "lr": "positive_real", "warmup_steps": "count", "weight_decay": "non_negative_real",
        "validation": "optional_batches", "eval_every": "optional_size", "seed": "int"},
        model=lambda: language_model.DecoderOnlyLM(config(norm="pre")),
        train_sequences=lambda: [[5, 7, 8, 6], [5, 9, 6]], steps=2, batch_size=2, lr=1e-3, warmup_steps=1,
        weight_decay=0.01, validation=lambda: [ids()], eval_every=1, seed=0)
    r["training:evaluate_lm"] = case(training.evaluate_lm, {"model": "module", "batches": "batches", "pad_id": "id"},
                                     model=gpt, batches=lambda: [ids()], pad_id=0)
    # runtime
    r["runtime:seed_everything"] = case(runtime.seed_everything, {"seed": "seed32"}, seed=0)
    r["runtime:pick_device"] = case(runtime.pick_device, {"prefer_gpu": "bool"}, prefer_gpu=True)
    r["runtime:set_threads"] = case(runtime.set_threads, {"n_threads": "size"}, n_threads=1)
    r["runtime:environment_report"] = None
    # kv_cache
    r["kv_cache:KVCache"] = case(kv_cache.KVCache, {"n_layers": "count", "cross_attention": "bool"}, n_layers=2,
                                 cross_attention=True)
    r["kv_cache:KVCache.layers"] = None  # no arguments
    r["kv_cache:LayerCache"] = None
    for name in ("append", "check_append"):
        r[f"kv_cache:LayerCache.{name}"] = case(method(lambda: filled_layer_cache(rows=2), name), {
            "keys": "vectors", "values": "vectors"}, keys=lambda: head_vectors()[:, :, :1],
            values=lambda: head_vectors()[:, :, :1])
    for name, filled in (("KVCache", filled_kv_cache), ("LayerCache", filled_layer_cache)):
        for method_name in ("reorder", "check_reorder"):
            r[f"kv_cache:{name}.{method_name}"] = case(method(lambda filled=filled: filled(rows=2), method_name),
                                                       {"rows": "rows"}, rows=lambda: torch.tensor([1, 0]))
    # losses (gpt helper)
    classifier = lambda: models.TransformerClassifier(config(), 3).eval()  # noqa: E731
    for name in ("classification_loss", "classification_loss_sum"):
        r[f"losses:{name}"] = case(getattr(losses, name), {"model": "module", "batch": "batch_pair"},
                                   model=classifier, batch=lambda: (ids(), torch.tensor([0, 2])))
    r["losses:masked_lm_loss"] = case(losses.masked_lm_loss, {"logits": "logits", "labels": "labels"},
                                      logits=lambda: vectors(2, 5, 20), labels=labels)
    r["losses:masked_lm_loss_sum"] = case(losses.masked_lm_loss_sum, {"model": "module", "batch": "batch_pair"},
                                          model=mlm_model, batch=lambda: (ids(), labels()))
    translation_batch = lambda: (ids(), ids(2, 4))  # noqa: E731
    for name in ("translation_loss", "translation_loss_sum"):
        r[f"losses:{name}"] = case(getattr(losses, name), {
            "model": "module", "batch": "batch_pair", "label_smoothing": "unit_real", "pad_id": "id"},
            model=seq2seq, batch=translation_batch, label_smoothing=0.1, pad_id=0)
    r["losses:translation_target_count"] = case(losses.translation_target_count, {  # no vocabulary: pad_id any >= 0
        "batch": "batch_pair", "pad_id": "count"}, batch=translation_batch, pad_id=0)
    r["losses:shift_for_lm"] = case(losses.shift_for_lm, {"ids": "any_ids"}, ids=ids)
    for name in ("lm_loss", "lm_loss_sum"):
        r[f"losses:{name}"] = case(getattr(losses, name), {"model": "module", "batch": "ids", "pad_id": "id"},
                                   model=gpt, batch=ids, pad_id=0)
    r["losses:lm_target_count"] = case(losses.lm_target_count, {"batch": "any_ids", "pad_id": "count"}, batch=ids,
                                       pad_id=0)  # no vocabulary: any pad_id >= 0
    r["losses:loss_per_position"] = case(losses.loss_per_position, {
        "model": "module", "windows": "ids", "batch_size": "size"}, model=gpt, windows=lambda: ids(3, 6),
        batch_size=2)
    # losses (lesson 11)
    response_batch = lambda: (ids(2, 6), torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 0]], dtype=torch.bool))  # noqa: E731
    for name in ("response_logprobs", "response_loss", "response_loss_sum"):
        r[f"losses:{name}"] = case(getattr(losses, name), {"model": "module", "batch": "response_batch"},
                                   model=gpt, batch=response_batch)
    r["losses:response_target_count"] = case(losses.response_target_count, {"batch": "response_batch"},
                                             batch=response_batch)
    r["losses:sequence_logprobs"] = case(losses.sequence_logprobs, {
        "logits": "logits", "targets": "ids", "mask": "bool_mask"}, logits=lambda: vectors(2, 5, 20),
        targets=ids, mask=lambda: ids() > 12)
    logps = lambda: -torch.rand(3, generator=generator()) * 20  # noqa: E731
    for name in ("dpo_loss", "dpo_loss_sum", "dpo_gradient_weight"):
        r[f"losses:{name}"] = case(getattr(losses, name), {
            "policy_chosen": "logps", "policy_rejected": "logps", "reference_chosen": "logps",
            "reference_rejected": "logps", "beta": "positive_real"}, policy_chosen=logps, policy_rejected=logps,
            reference_chosen=logps, reference_rejected=logps, beta=0.1)
    preference_batch = lambda: (*response_batch(), -torch.rand(2, generator=generator()) * 20)  # noqa: E731
    r["losses:dpo_batch_loss_sum"] = case(losses.dpo_batch_loss_sum, {
        "model": "module", "batch": "response_batch", "beta": "positive_real"}, model=gpt, batch=preference_batch,
        beta=0.1)
    # language_model (gpt helper)
    r["language_model:DecoderOnlyBlock"] = case(language_model.DecoderOnlyBlock, {
        "d_model": "size", "n_heads": "size", "d_ff": "size", "dropout": "prob", "activation": "choice",
        "norm": "choice", "bias": "bool", "normalization": "choice", "n_kv_heads": "optional_size",
        "rope_base": "optional_base", "with_residual": "bool", "with_feed_forward": "bool",
        "norm_eps": "optional_positive_real"},
        d_model=8, n_heads=2, d_ff=16, dropout=0.0, activation="relu", norm="pre", bias=True,
        normalization="layernorm", n_kv_heads=None, rope_base=None, with_residual=True, with_feed_forward=True,
        norm_eps=None)
    blocks = {"": lambda: language_model.DecoderOnlyBlock(8, 2, 16, 0.0).eval(),
              "[modern]": lambda: language_model.DecoderOnlyBlock(
                  8, 2, 16, 0.0, "swiglu", bias=False, normalization="rmsnorm", n_kv_heads=1,
                  rope_base=10000.0).eval()}
    for suffix, block in blocks.items():
        for name in ("forward", "check_inputs"):
            r[f"language_model:DecoderOnlyBlock.{name}{suffix}"] = case(method(block, name), {
                "x": "vectors", "mask": "mask", "cache": "attention_cache"}, x=vectors,
                mask=lambda: masks.target_mask(ids()), cache=None)
    r["language_model:DecoderOnlyLM"] = case(language_model.DecoderOnlyLM, {
        "config": "config", "tie_weights": "bool", "with_residual": "bool", "with_feed_forward": "bool"},
        config=config, tie_weights=True, with_residual=True, with_feed_forward=True)
    r["language_model:DecoderOnlyLM.new_cache"] = None
    for suffix, model in (("", gpt), ("[modern]", lambda: gpt(modern=True))):
        for name in ("forward", "check_inputs"):
            r[f"language_model:DecoderOnlyLM.{name}{suffix}"] = case(method(model, name), {
                "ids": "ids", "cache": "lm_cache"}, ids=ids, cache=None)
    r["language_model:ladder_rungs"] = case(language_model.ladder_rungs, {"config": "config", "more_layers": "size"},
                                            config=config, more_layers=2)
    r["language_model:NeuralBigramLM"] = case(language_model.NeuralBigramLM, {"vocab_size": "size"}, vocab_size=20)
    for name in ("forward", "check_ids"):
        r[f"language_model:NeuralBigramLM.{name}"] = case(method(lambda: language_model.NeuralBigramLM(20), name),
                                                          {"ids": "ids"}, ids=ids)
    # modern
    positions = lambda: torch.arange(5)  # noqa: E731
    r["modern:rope_frequencies"] = case(modern.rope_frequencies, {"d_head": "size", "base": "base"}, d_head=4,
                                        base=10000.0)
    r["modern:check_positions"] = case(modern.check_positions, {"positions": "positions", "seq_len": "optional_size"},
                                       positions=positions, seq_len=5)
    r["modern:rotary_embedding"] = case(modern.rotary_embedding, {
        "positions": "positions", "d_head": "size", "base": "base"}, positions=positions, d_head=4, base=10000.0)
    r["modern:rotate_half"] = case(modern.rotate_half, {"x": "even_width_float"}, x=head_vectors)
    r["modern:apply_rotary"] = case(modern.apply_rotary, {
        "q": "any_float", "k": "any_float", "positions": "positions", "base": "base"}, q=head_vectors,
        k=lambda: head_vectors(heads=1), positions=positions, base=10000.0)
    r["modern:RMSNorm"] = case(modern.RMSNorm, {"d_model": "size", "eps": "optional_non_negative_real"}, d_model=8,
                               eps=None)
    r["modern:SwiGLUFeedForward"] = case(modern.SwiGLUFeedForward, {
        "d_model": "size", "d_hidden": "optional_size", "dropout": "prob", "bias": "bool"}, d_model=8, d_hidden=16,
        dropout=0.0, bias=False)
    for name in ("forward", "check_input"):
        r[f"modern:RMSNorm.{name}"] = case(method(lambda: modern.RMSNorm(8), name), {"x": "features"}, x=vectors)
        r[f"modern:SwiGLUFeedForward.{name}"] = case(method(lambda: modern.SwiGLUFeedForward(8, 16), name),
                                                     {"x": "features"}, x=vectors)
    r["modern:make_norm"] = case(modern.make_norm, {"normalization": "choice", "d_model": "size", "bias": "bool",
                                                   "eps": "optional_positive_real"},
                                 normalization="layernorm", d_model=8, bias=True, eps=None)
    r["modern:swiglu_hidden_size"] = case(modern.swiglu_hidden_size, {"d_ff": "size"}, d_ff=32)
    r["modern:repeat_kv"] = case(modern.repeat_kv, {"x": "model_tensor", "n_repeats": "size"},
                                 x=lambda: head_vectors(heads=1), n_repeats=2)
    cache_sizes = dict(batch=2, seq=5, n_layers=1, n_kv_heads=1, d_head=4, bytes_per_value=4)
    r["modern:kv_cache_bytes"] = case(modern.kv_cache_bytes, dict.fromkeys(cache_sizes, "size"), **cache_sizes)
    r["modern:modern_config"] = case(modern.modern_config, {**sizes, "dropout": "prob"}, **TINY)
    # tokenization (bpe helper)
    r["tokenization:pad_batch"] = case(tokenization.pad_batch, {"sequences": "id_lists", "pad_id": "count",
                                                               "max_len": "optional_size"},
                                       sequences=lambda: [[7, 8, 9], [10]], pad_id=0, max_len=None)
    r["tokenization:add_special_tokens"] = case(tokenization.add_special_tokens, {
        "ids": "int_list", "add_cls": "bool", "add_sep": "bool", "add_bos_eos": "bool", "max_len": "optional_size"},
        ids=lambda: [7, 8], add_cls=True, add_sep=False, add_bos_eos=False, max_len=None)
    r["tokenization:split_words"] = case(tokenization.split_words, {"text": "text"}, text="x² and ½ ①")
    r["tokenization:byte_level_text"] = case(tokenization.byte_level_text, {}, data=b" the")  # bytes: no kind yet
    r["tokenization:byte_level_bytes"] = case(tokenization.byte_level_bytes, {"token": "text"}, token="\u0120the")
    r["tokenization:tie_break_key"] = case(tokenization.tie_break_key, {"pair": "int_list"}, pair=(7 + 104, 7 + 105))
    r["tokenization:count_pairs"] = case(tokenization.count_pairs, {"symbols": "int_list"}, symbols=[5, 6, 5, 6, 7])
    r["tokenization:merge_pair"] = case(tokenization.merge_pair, {"symbols": "int_list", "new_id": "any_token_id"},
                                        symbols=lambda: [1, 2, 1, 2], pair=(1, 2), new_id=300)
    for name, trained in (("CharTokenizer", lambda: tokenization.CharTokenizer.train(["abc"])),
                          ("WordTokenizer", word_tokenizer), ("BPETokenizer", bpe)):
        r[f"tokenization:{name}.encode"] = case(method(trained, "encode"), {"text": "text"}, text="one two")
        r[f"tokenization:{name}.decode"] = case(method(trained, "decode"), {"ids": "int_list",
                                                                           "skip_special_tokens": "bool"},
                                                ids=lambda: [7, 8], skip_special_tokens=True)
        r[f"tokenization:{name}.tokenize"] = case(method(trained, "tokenize"), {"text": "text"}, text="one two")
        r[f"tokenization:{name}.encode_batch"] = case(method(trained, "encode_batch"), {
            "texts": "texts", "add_cls": "bool", "max_len": "optional_size"}, texts=lambda: ["one two", "four"],
            add_cls=True, max_len=None)
    r["tokenization:Tokenizer"] = None  # the shared base class; its methods are fuzzed through the subclasses
    r["tokenization:Tokenizer.encode"] = None
    r["tokenization:Tokenizer.encode_batch"] = None
    r["tokenization:CharTokenizer"] = case(tokenization.CharTokenizer, {"pieces": "texts"}, pieces=lambda: ["a", "b"])
    r["tokenization:WordTokenizer"] = case(tokenization.WordTokenizer, {"pieces": "texts", "lowercase": "bool"},
                                           pieces=lambda: ["one", "two"], lowercase=False)
    r["tokenization:BPETokenizer"] = case(tokenization.BPETokenizer, {"merges": "int_pairs"},
                                          merges=lambda: [(104, 105)])
    r["tokenization:CharTokenizer.train"] = case(tokenization.CharTokenizer.train, {
        "texts": "texts", "vocab_size": "optional_size", "min_count": "size"}, texts=lambda: ["abc"], vocab_size=None,
        min_count=1)
    r["tokenization:WordTokenizer.train"] = case(tokenization.WordTokenizer.train, {"texts": "texts"},
                                                 texts=lambda: ["one two"])
    r["tokenization:BPETokenizer.train"] = case(tokenization.BPETokenizer.train, {
        "texts": "texts", "vocab_size": "size", "min_frequency": "count"}, texts=lambda: ["aaab aab"] * 3,
        vocab_size=265, min_frequency=2)
    r["tokenization:BPETokenizer.token_str"] = case(method(bpe, "token_str"), {"token_id": "token_id"}, token_id=100)
    r["tokenization:BPETokenizer.save"] = case(method(bpe, "save"), {"path": "optional_path"},
                                               path=str(SCRATCH / "course_fuzz_bpe.json"))
    r["tokenization:BPETokenizer.load"] = case(tokenization.BPETokenizer.load, {"path": "path"},
                                               path=lambda: (bpe().save(str(SCRATCH / "course_fuzz_bpe.json")),
                                                             str(SCRATCH / "course_fuzz_bpe.json"))[1])
    r["tokenization:BPETokenizer.write_vocab_and_merges"] = case(method(bpe, "write_vocab_and_merges"),
                                                                 {"folder": "folder"}, folder=scratch_folder)
    r["tokenization:BPETokenizer.read_vocab_and_merges"] = case(tokenization.BPETokenizer.read_vocab_and_merges,
                                                                {"folder": "folder"}, folder=gpt2_layout_files)
    read_back = lambda: tokenization.BPETokenizer.read_vocab_and_merges(gpt2_layout_files())  # noqa: E731
    r["tokenization:BPETokenizer.encode[file_ids]"] = case(method(read_back, "encode"), {
        "text": "text", "recognize_special_tokens": "bool"}, text="one <|endoftext|> two",
        recognize_special_tokens=True)
    r["tokenization:BPETokenizer.decode[file_ids]"] = case(method(read_back, "decode"), {
        "ids": "int_list", "skip_special_tokens": "bool"}, ids=lambda: [0, 1, 283], skip_special_tokens=False)
    r["tokenization:BPETokenizer.token_str[file_ids]"] = case(method(read_back, "token_str"),
                                                              {"token_id": "token_id"}, token_id=283)
    # interop (published helper)
    r["interop:PublishedConfig"] = case(interop.PublishedConfig, {
        **sizes, "dropout": "prob", "pad_id": "optional_id", "bias": "bool", "scale_embeddings": "bool",
        "n_token_types": "count", "embedding_norm": "bool", "final_norm": "bool",
        "norm_eps": "optional_positive_real"}, **TINY, pad_id=0, bias=True, scale_embeddings=False, n_token_types=2,
        embedding_norm=True, final_norm=False, norm_eps=1e-6)
    r["interop:from_hf"] = case(interop.from_hf, {"hf_config": "settings", "state_dict": "weights"},
                                hf_config=lambda: published()[0], state_dict=lambda: published()[1])
    r["interop:from_transformers"] = case(interop.from_transformers, {"model": "module"}, model=hf_gpt2)
    r["interop:load_checkpoint"] = case(interop.load_checkpoint, {"folder": "folder"}, folder=checkpoint_folder)
    for name in ("to_hf", "to_transformers"):
        r[f"interop:{name}"] = case(getattr(interop, name), {"model": "module"}, model=course_gpt2)
    for name in ("interleaved_to_halves", "halves_to_interleaved"):
        r[f"interop:{name}"] = case(getattr(interop, name), {"weight": "projection_rows", "n_heads": "size"},
                                    weight=lambda: torch.randn(8, 6, generator=generator()), n_heads=2)
    # data: the Python-documentation corpus
    small = lambda: corpus.Corpus(("One sentence is here.", "Another one is there."), "3.x")  # noqa: E731
    r["data.pydoc_corpus:Corpus"] = case(corpus.Corpus, {"sentences": "texts", "python_version": "text",
                                                         "description": "text"},
                                         sentences=lambda: ("One sentence.",), python_version="3.x", description="d")
    r["data.pydoc_corpus:Corpus.sample"] = case(method(small, "sample"), {"n": "size", "seed": "int"}, n=1, seed=0)
    r["data.pydoc_corpus:Corpus.split"] = case(method(small, "split"), {"held_out_fraction": "open_unit",
                                                                       "seed": "int"},
                                               held_out_fraction=0.5, seed=0)
    r["data.pydoc_corpus:Corpus.summary"] = None
    for name, argument in (("prose_paragraphs", "text"), ("split_sentences", "paragraph"),
                           ("is_prose_sentence", "sentence")):
        r[f"data.pydoc_corpus:{name}"] = case(getattr(corpus, name), {argument: "text"},
                                              **{argument: "A sentence with enough words in it."})
    r["data.pydoc_corpus:extract_sentences"] = case(corpus.extract_sentences, {"documents": "texts"},
                                                    documents=lambda: ["A sentence with enough words in it."])
    r["data.pydoc_corpus:read_docstrings"] = case(corpus.read_docstrings, {"path": "path"},
                                                  path=lambda: Path(corpus.__file__))
    for name in ("load_pydoc_corpus", "read_pydoc_corpus"):
        r[f"data.pydoc_corpus:{name}"] = case(getattr(corpus, name), {"use_cache_file": "bool"}, use_cache_file=True)
    r["data.pydoc_corpus:package_source_files"] = case(corpus.package_source_files, {"package": "text"},
                                                       package="sacrebleu")
    r["data.pydoc_corpus:read_package_corpus"] = case(corpus.read_package_corpus, {"packages": "texts"},
                                                      packages=("sacrebleu",))
    for name in ("build_sentences", "cache_dir", "stdlib_source_files"):
        r[f"data.pydoc_corpus:{name}"] = None
    # data: language identification
    r["data.language_id:read_po_messages"] = case(language_id.read_po_messages, {"path": "path"}, path=po_file)
    r["data.language_id:clean_message"] = case(language_id.clean_message, {"text": "text"}, text="Hello %(name)s.")
    r["data.language_id:django_locale_root"] = None
    r["data.language_id:po_files"] = case(language_id.po_files, {"language": "text", "root": "optional_path"},
                                          language="de", root=None)
    r["data.language_id:translated_strings"] = case(language_id.translated_strings, {
        "language": "text", "min_chars": "count", "root": "optional_path"},
        language="de", min_chars=10, root=None)
    r["data.language_id:load_language_id"] = case(language_id.load_language_id, {
        "languages": "languages", "min_chars": "count", "test_fraction": "open_unit", "seed": "int",
        "root": "optional_path"}, languages=("de", "es"), min_chars=10, test_fraction=0.2, seed=0, root=None)
    r["data.language_id:load_cldr_phrases"] = case(language_id.load_cldr_phrases, {
        "languages": "languages", "min_chars": "count", "per_class": "size", "seed": "int"},
        languages=("de", "es"), min_chars=10, per_class=5, seed=0)
    r["data.language_id:LanguageIdData"] = None  # a record that load_language_id fills in
    r["data.language_id:LanguageIdData.summary"] = None
    r["data.language_id:PoMessage"] = None
    # data: numbers (translator)
    r["data.numbers:check_number"] = case(numbers.check_number, {"number": "count", "max_digits": "size"},
                                          number=342, max_digits=6)
    for name in ("english_words", "german_words", "digit_length", "make_pair"):
        r[f"data.numbers:{name}"] = case(getattr(numbers, name), {"number": "count"}, number=342)
    r["data.numbers:round_numbers"] = case(numbers.round_numbers, {"max_digits": "size"}, max_digits=3)
    r["data.numbers:numbers_of_length"] = case(numbers.numbers_of_length, {"length": "size"}, length=2)
    for name in ("is_teen_thousands", "has_inner_zero", "is_round", "is_near_round", "has_repeated_digits",
                 "is_round_thousands", "is_teen_round_thousands", "is_whole_hundred_thousands", "structure_of"):
        r[f"data.numbers:{name}"] = case(getattr(numbers, name), {"number": "count"}, number=416_005)
    r["data.numbers:stress_categories"] = case(numbers.stress_categories, {"max_digits": "size"}, max_digits=4)
    r["data.numbers:category_test"] = case(numbers.category_test, {"category": "choice"}, category="inner zero")
    r["data.numbers:sample_training_number"] = case(numbers.sample_training_number, {
        "rng": "generator", "max_digits": "size"}, rng=lambda: random.Random(0), max_digits=6)
    r["data.numbers:parse_number"] = case(numbers.parse_number, {"text": "text", "max_digits": "size"},
                                          text="twelve thousand and five", max_digits=6)
    r["data.numbers:NumberPair"] = None  # records the split functions fill in
    r["data.numbers:NumberSplit"] = None
    r["data.numbers:make_number_split"] = case(numbers.make_number_split, {
        "n_train": "size", "n_test": "size", "stress_per_category": "size", "max_digits": "size", "seed": "int"},
        n_train=20, n_test=10, stress_per_category=2, max_digits=3, seed=0)
    r["data.numbers:draw_held_out"] = case(numbers.draw_held_out, {
        "n_test": "size", "stress_per_category": "size", "max_digits": "size", "seed": "int", "exclude": "int_list"},
        n_test=10, stress_per_category=2, max_digits=3, seed=0, exclude=lambda: {5, 42})
    r["data.numbers:train_tokenizers"] = case(numbers.train_tokenizers, {
        "pairs": "batches", "german_vocab_size": "size", "max_texts": "size", "seed": "int"},
        pairs=lambda: [numbers.make_pair(n) for n in range(40)], german_vocab_size=270, max_texts=40, seed=0)
    r["data.numbers:encode_pairs"] = case(numbers.encode_pairs, {"pairs": "batches", "source": "module",
                                                                "target": "module"},
                                          pairs=lambda: [numbers.make_pair(n) for n in (3, 42)], source=number_words,
                                          target=number_bpe)
    r["data.numbers:english_from_user_text"] = case(numbers.english_from_user_text, {
        "text": "text", "source": "optional_module", "max_digits": "size"}, text="3", source=number_words,
        max_digits=6)
    # data: batching and language-model data
    r["data.batching:length_bucketed_batches"] = case(batching.length_bucketed_batches, {
        "sequences": "id_lists", "batch_size": "size", "shuffle": "bool", "seed": "int", "pad_id": "count"},
        sequences=lambda: [[7, 8, 9], [9, 10], [11]], batch_size=2, shuffle=True, seed=0, pad_id=0)
    r["data.batching:ReshuffledEachEpoch"] = case(batching.ReshuffledEachEpoch, {"batches": "batches", "seed": "int"},
                                                  batches=lambda: [ids(), ids(2, 3)], seed=0)
    r["data.batching:trim_padding"] = case(batching.trim_padding, {"ids": "any_ids", "pad_id": "count"},
                                           ids=lambda: tokenization.pad_batch([[7, 8, 9], [10]]), pad_id=0)
    r["data.lm_data:split_documents"] = case(lm_data.split_documents, {
        "documents": "texts", "fractions": "fraction_pair", "block_size": "size", "seed": "int"},
        documents=lambda: [f"document {i}" for i in range(6)], fractions=(0.6, 0.2), block_size=2, seed=0)
    r["data.lm_data:encode_documents"] = case(lm_data.encode_documents, {
        "tokenizer": "module", "documents": "texts", "max_len": "optional_size"}, tokenizer=word_tokenizer,
        documents=lambda: ["one two", "four five"], max_len=None)
    r["data.lm_data:lm_batches"] = case(lm_data.lm_batches, {
        "sequences": "id_lists", "batch_size": "size", "shuffle": "bool", "seed": "int", "pad_id": "count"},
        sequences=lambda: [[5, 7, 6], [5, 8, 9, 6], [5, 6]], batch_size=2, shuffle=True, seed=0, pad_id=0)
    r["data.lm_data:lm_training_batches"] = case(lm_data.lm_training_batches, {
        "sequences": "id_lists", "steps": "size", "batch_size": "size", "seed": "int", "pad_id": "count"},
        sequences=lambda: [[5, 7, 6], [5, 8, 9, 6], [5, 6]], steps=3, batch_size=2, seed=0, pad_id=0)
    lm_documents = lambda: {split: [[5, 7, 8, 6], [5, 9, 6]] for split in ("train", "validation", "test")}  # noqa: E731
    r["data.lm_data:LMData"] = case(lm_data.LMData, {"tokenizer": "module", "documents": "documents",
                                                     "max_len": "size"},
                                    tokenizer=word_tokenizer, documents=lm_documents, max_len=8)
    r["data.lm_data:LMData.windows"] = case(method(lambda: lm_data.LMData(word_tokenizer(), lm_documents(), 8),
                                                   "windows"), {"split": "choice", "seq_len": "size"},
                                            split="train", seq_len=2)
    r["data.order:which_comes_first"] = case(order.which_comes_first, {
        "n_examples": "size", "seq_len": "size", "vocab_size": "size", "seed": "int"},
        n_examples=4, seq_len=5, vocab_size=6, seed=0)
    r["data.lm_data:pydoc_lm_data"] = None  # ~0.5 s a call even with the corpus cached: too slow to fuzz
    # lesson 11: the stdlib questions and answers, the chat template, SFT and DPO
    qa, instruct = m("data.stdlib_qa"), m("instruct")
    for name in ("QAPair", "QASplit", "all_pairs", "prose_pool"):
        r[f"data.stdlib_qa:{name}"] = None  # records, and the two readers of the running Python's stdlib
    r["data.stdlib_qa:QASplit.modules"] = case(method(lambda: qa.QASplit(tuple(qa_pairs()), (), ()), "modules"),
                                               {"split": "choice"}, split="train")
    r["data.stdlib_qa:read_qa_pairs"] = case(qa.read_qa_pairs, {"path": "path", "root": "path"},
                                             path=lambda: Path(tempfile.__file__),
                                             root=lambda: Path(tempfile.__file__).parent)
    r["data.stdlib_qa:load_stdlib_qa"] = case(qa.load_stdlib_qa, {"fractions": "fraction_pair", "seed": "int"},
                                              fractions=(0.6, 0.15), seed=0)
    r["data.stdlib_qa:sibling_pool"] = case(qa.sibling_pool, {"pairs": "qa_pairs"}, pairs=qa_pairs)
    pool = lambda: {module: list(answers) for module, answers in QA_MODULES.items()}  # noqa: E731
    r["data.stdlib_qa:choice_items"] = case(qa.choice_items, {"pairs": "qa_pairs", "pool": "pool", "k": "size",
                                                              "seed": "int"}, pairs=qa_pairs, pool=pool, k=2, seed=0)
    r["data.stdlib_qa:preference_pairs"] = case(qa.preference_pairs, {"pairs": "qa_pairs", "pool": "pool",
                                                                      "seed": "int"}, pairs=qa_pairs, pool=pool, seed=0)
    examples = lambda: [("What does textwrap.dedent do?", "Remove whitespace."), ("Why?", "Because.")]  # noqa: E731
    triples = lambda: [("What does json.dumps do?", "Serialize an object.", "Read a file.")] * 2  # noqa: E731
    r["instruct:load_base_gpt"] = case(instruct.load_base_gpt, {"folder": "folder"}, folder=instruct.BASE_DIR)
    r["instruct:seed_results"] = case(instruct.seed_results, {"path": "path"}, path=instruct.SEED_RESULTS)
    r["instruct:ChatTokenizer"] = case(instruct.ChatTokenizer, {"base": "module"}, base=lambda: chat_tokenizer().base)
    for name, argument in (("encode", "text"), ("prompt_ids", "question")):
        r[f"instruct:ChatTokenizer.{name}"] = case(method(chat_tokenizer, name), {argument: "text"},
                                                   **{argument: "What does it do?"})
    r["instruct:ChatTokenizer.chat_ids"] = case(method(chat_tokenizer, "chat_ids"), {
        "question": "text", "answer": "text"}, question="What?", answer="It does.")
    for name in ("check_ids", "decode", "render"):
        r[f"instruct:ChatTokenizer.{name}"] = case(method(chat_tokenizer, name), {"ids": "chat_ids"},
                                                   ids=lambda: chat_tokenizer().prompt_ids("What?"))
    r["instruct:grow_vocabulary"] = case(instruct.grow_vocabulary, {"model": "module", "n_new": "size"},
                                         model=chat_gpt, n_new=2)
    r["instruct:frozen_copy"] = case(instruct.frozen_copy, {"model": "module"}, model=chat_gpt)
    r["instruct:chat_batch"] = case(instruct.chat_batch, {"tokenizer": "module", "examples": "examples",
                                                          "max_len": "optional_size"},
                                    tokenizer=chat_tokenizer, examples=examples, max_len=None)
    r["instruct:preference_batch"] = case(instruct.preference_batch, {"tokenizer": "module", "triples": "triples"},
                                          tokenizer=chat_tokenizer, triples=triples)
    r["instruct:assistant_mask"] = case(instruct.assistant_mask, {
        "ids": "any_ids", "user_id": "count", "assistant_id": "count", "eos_id": "count", "pad_id": "count"},
        ids=lambda: instruct.chat_batch(chat_tokenizer(), examples())[0], user_id=lambda: chat_tokenizer().user_id,
        assistant_id=lambda: chat_tokenizer().assistant_id, eos_id=2, pad_id=0)
    r["instruct:fitting_pairs"] = case(instruct.fitting_pairs, {
        "pairs": "qa_pairs", "tokenizer": "module", "max_len": "size", "max_question": "size"},
        pairs=qa_pairs, tokenizer=chat_tokenizer, max_len=64, max_question=24)
    r["instruct:load_instruct_data"] = case(instruct.load_instruct_data, {
        "tokenizer": "module", "max_len": "size", "max_question": "size", "seed": "int"},
        tokenizer=chat_tokenizer, max_len=64, max_question=24, seed=0)
    r["instruct:InstructData"] = None  # a record that load_instruct_data fills in
    r["instruct:InstructData.examples"] = case(method(lambda: instruct.InstructData(
        chat_tokenizer(), qa_pairs(), [], [], {}, {}), "examples"), {"split": "choice"}, split="train")
    r["instruct:response_scores"] = case(instruct.response_scores, {
        "model": "module", "tokenizer": "module", "examples": "examples", "batch_size": "size"},
        model=chat_gpt, tokenizer=chat_tokenizer, examples=examples, batch_size=2)
    r["instruct:choice_accuracy"] = case(instruct.choice_accuracy, {
        "model": "module", "tokenizer": "module", "items": "choice_items"},
        model=chat_gpt, tokenizer=chat_tokenizer, items=lambda: [("What?", ["It does.", "It reads."], 1)])
    r["instruct:greedy_answers"] = case(instruct.greedy_answers, {
        "model": "module", "tokenizer": "module", "questions": "texts", "max_new_tokens": "size"},
        model=chat_gpt, tokenizer=chat_tokenizer, questions=lambda: ["What does it do?"], max_new_tokens=3)
    r["instruct:chrf"] = case(instruct.chrf, {"hypotheses": "texts", "references": "texts"},
                              hypotheses=lambda: ["It reads a file."], references=lambda: ["It writes a file."])
    r["instruct:preference_metrics"] = case(instruct.preference_metrics, {
        "policy": "module", "reference": "module", "tokenizer": "module", "triples": "triples",
        "beta": "positive_real"},
        policy=chat_gpt, reference=chat_gpt, tokenizer=chat_tokenizer, triples=triples, beta=0.1)
    training_kinds = {"tokenizer": "module", "steps": "size", "batch_size": "size", "lr": "positive_real",
                      "seed": "int", "warmup_steps": "count"}
    r["instruct:train_sft"] = case(instruct.train_sft, {**training_kinds, "model": "module", "examples": "examples",
                                                        "response_only": "bool"},
                                   model=chat_gpt, tokenizer=chat_tokenizer, examples=examples, steps=2, batch_size=2,
                                   lr=1e-3, seed=0, response_only=True, warmup_steps=1)
    r["instruct:train_dpo"] = case(instruct.train_dpo, {**training_kinds, "policy": "module", "triples": "triples",
                                                        "beta": "positive_real"},
                                   policy=chat_gpt, tokenizer=chat_tokenizer, triples=triples, steps=2, batch_size=2,
                                   lr=1e-4, beta=0.1, seed=0, warmup_steps=1)
    return r


# Failures found by this test in modules other helpers own, keyed (entry, argument, "listed"/"generated"/"both"),
# with the first wrong outcome. Strict: once the module is fixed the xfail turns into a failure, so remove the line.
KNOWN_FAILURES: dict[tuple[str, str, str], str] = {
}


REGISTRY = build_registry()


# ---------------------------------------------------------------------------- the walk
def public_names(module_name: str) -> list[str]:
    """``name`` for every callable in the module's ``__all__``, plus ``Class.method`` for each public method a
    public class defines itself."""
    module = m(module_name)
    names = []
    for name in getattr(module, "__all__", []):
        value = getattr(module, name)
        if not callable(value):
            continue  # a constant
        names.append(name)
        if inspect.isclass(value):
            for attribute, member in vars(value).items():
                if attribute.startswith("_") or isinstance(member, (property, dataclasses.Field)):
                    continue
                if callable(member) or isinstance(member, (classmethod, staticmethod)):
                    names.append(f"{name}.{attribute}")
    return names


def registered(module_name: str, name: str) -> bool:
    key = f"{module_name}:{name}"
    return key in REGISTRY or any(k.startswith(key + "[") for k in REGISTRY)


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_name_is_registered(module_name):
    missing = [name for name in public_names(module_name) if not registered(module_name, name)]
    assert not missing, (f"course_utils.{module_name} exports names the fuzz registry does not know: {missing}. "
                         "Add an entry to REGISTRY in tests/test_fuzz_api.py (valid arguments + the kind of each)")


@pytest.mark.parametrize("module_name", MODULES)
def test_every_module_declares_its_public_names(module_name):
    assert hasattr(m(module_name), "__all__"), f"course_utils.{module_name} has no __all__"


def test_registry_entries_name_existing_callables():
    for key in REGISTRY:
        module_name, dotted = key.split(":")
        target = m(module_name)
        for part in dotted.split("[")[0].split("."):
            target = getattr(target, part)  # AttributeError names a stale entry
        assert callable(target), key


def fuzz_targets(generated: bool):
    for key, entry in REGISTRY.items():
        if entry is None:
            continue
        for argument, kind in entry.bad.items():
            if generated and generated_wrong_value(kind, torch.zeros(1)) is None:
                continue
            reason = (KNOWN_FAILURES.get((key, argument, "both"))
                      or KNOWN_FAILURES.get((key, argument, "generated" if generated else "listed")))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(key, argument, id=f"{key}({argument})", marks=marks)


def assert_finite(result: Any, allow_inf: bool, where: str) -> None:
    """No NaN (and, unless allowed, no inf) anywhere in the result: tensors, numbers, containers, dataclasses."""
    if isinstance(result, torch.Tensor):
        if result.is_floating_point() or result.is_complex():
            bad = torch.isnan(result) if allow_inf else ~torch.isfinite(result)
            assert not bad.any(), f"{where} returned a tensor with NaN/inf"
    elif isinstance(result, float):
        assert not math.isnan(result) and (allow_inf or math.isfinite(result)), f"{where} returned {result}"
    elif isinstance(result, dict):
        for value in result.values():
            assert_finite(value, allow_inf, where)
    elif isinstance(result, (list, tuple)):
        for value in result:
            assert_finite(value, allow_inf, where)
    elif dataclasses.is_dataclass(result) and not isinstance(result, type):
        for f in dataclasses.fields(result):
            assert_finite(getattr(result, f.name), allow_inf, where)


def call_with(key: str, argument: str, value: Any, must_raise: bool, arguments: dict) -> str | None:
    """Call the entry with one wrong argument; return a description of what went wrong, or ``None``."""
    entry = REGISTRY[key]
    arguments[argument] = value
    where = f"{key} with {argument}={describe(value)}"
    try:
        result = entry.call(**arguments)
    except CourseError:
        return None
    except Exception as error:  # noqa: BLE001 — any other exception is what this test exists to find
        return f"{where} raised {type(error).__name__}: {str(error)[:200]} — expected a course error naming the fix"
    if must_raise:
        return f"{where} was accepted silently; it must raise a course error"
    try:
        assert_finite(result, entry.allow_inf, where)
    except AssertionError as error:
        return str(error)
    return None


@pytest.mark.parametrize("key, argument", list(fuzz_targets(generated=False)))
def test_listed_wrong_values_get_a_course_error_or_work(key, argument):
    entry = REGISTRY[key]
    valid = entry.valid()
    problems = [call_with(key, argument, value, must_raise, entry.valid())
                for value, must_raise in listed_wrong_values(entry.bad[argument], valid.get(argument))]
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("key, argument", list(fuzz_targets(generated=True)))
@settings(derandomize=True, database=None, max_examples=EXAMPLES_PER_ARGUMENT, deadline=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_wrong_values_get_a_course_error_or_work(key, argument, data):
    entry = REGISTRY[key]
    arguments = entry.valid()
    strategy = generated_wrong_value(entry.bad[argument], arguments.get(argument))
    value, must_raise = data.draw(strategy, label=argument)
    problem = call_with(key, argument, value, must_raise, arguments)
    assert problem is None, problem


def test_valid_arguments_of_every_entry_work():
    """The registry's valid arguments really are valid (else every fuzz case would test the wrong thing)."""
    for key, entry in REGISTRY.items():
        if entry is None or key.startswith(("data.language_id:load_language_id", "runtime:set_threads")):
            continue
        try:
            entry.call(**entry.valid())
        except Exception as error:  # noqa: BLE001
            raise AssertionError(f"{key}: the valid arguments fail with {error!r}") from error
