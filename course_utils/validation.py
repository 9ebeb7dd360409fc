"""Input validation shared by every public entry point of the course's modules.

Each ``check_*`` function raises a :class:`~course_utils.errors.CourseValueError` or
:class:`~course_utils.errors.CourseTypeError` whose message says what was expected, what came, and how to fix
the call. Functions that may convert their input (``check_token_ids`` turns any integer dtype into ``torch.long``)
return the value to use; the others return it unchanged, so a call can be written inline::

    self.d_model = check_positive_int("d_model", d_model)
    ids = check_token_ids(ids, self.vocab_size, name="src_ids")

**Checked once, at the door.** A block's ``forward`` is decorated with :func:`checked_by`: its checks run when
*you* call it, and are skipped when another course block calls it with inputs the package computed itself (the
encoder calling its layers, ``generate`` calling the model at every step). So every error still names your
argument, the formula reads first in each ``forward``, and a forward pass pays for its checks once.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import numbers
from collections.abc import Callable, Iterator, Sequence

import torch
import torch.nn as nn

from .errors import CourseTypeError, CourseValueError

_INSIDE_THE_PACKAGE = contextvars.ContextVar("inside_the_package", default=False)


def checked_by(check: Callable[..., object], trusts_callees: bool = True) -> Callable:
    """Decorator: run ``check(*args, **kwargs)`` before the function — unless a course entry point is already
    running (then its own checks covered these inputs). ``check`` takes the function's arguments and raises a
    course error; what it returns is ignored.

    ``trusts_callees=False`` is for functions that hand *your* objects on (a loss calling your model, a residual
    wrapper calling your sublayer): their callees keep checking their own inputs."""
    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def at_the_door(*args, **kwargs):
            if _INSIDE_THE_PACKAGE.get():
                return function(*args, **kwargs)
            check(*args, **kwargs)
            if not trusts_callees:
                return function(*args, **kwargs)
            token = _INSIDE_THE_PACKAGE.set(True)
            try:
                return function(*args, **kwargs)
            finally:
                _INSIDE_THE_PACKAGE.reset(token)
        return at_the_door
    return decorate


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Run the block without the course's input checks, as if called from inside the package — for measuring what
    the checks cost (``benchmarks/validation_overhead.py``). Bad input then fails inside PyTorch, or silently."""
    token = _INSIDE_THE_PACKAGE.set(True)
    try:
        yield
    finally:
        _INSIDE_THE_PACKAGE.reset(token)


def describe(value: object) -> str:
    """A short description of ``value`` for an error message: the value and its type, or a tensor's dtype/shape."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def is_int(value: object) -> bool:
    """True for Python and NumPy integers; False for ``bool`` (``True`` is not a size) and for floats like ``4.0``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, torch.Tensor))


def is_real(value: object) -> bool:
    """True for ints and floats (Python or NumPy); False for ``bool`` and tensors."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, torch.Tensor))


def check_int(name: str, value: object, minimum: int | None = None, hint: str = "") -> int:
    """``value`` as an ``int``; refuses bools, floats (``4.0`` too) and, with ``minimum``, values below it."""
    if not is_int(value):
        raise CourseTypeError(f"{name} must be an int, got {describe(value)}; "
                              f"pass a whole number such as {max(minimum or 0, 1)}{hint}")
    if minimum is not None and value < minimum:
        fix = hint or f"; pass {minimum} or more"
        raise CourseValueError(f"{name} must be an int >= {minimum}, got {value}{fix}")
    return int(value)


def check_positive_int(name: str, value: object, hint: str = "") -> int:
    """``value`` as an ``int >= 1`` (a size, a count, a length); refuses bool, float, zero and negatives."""
    return check_int(name, value, minimum=1, hint=hint)


def check_non_negative_int(name: str, value: object, hint: str = "") -> int:
    """``value`` as an ``int >= 0`` (an offset, a step, a seed)."""
    return check_int(name, value, minimum=0, hint=hint)


def check_index(name: str, value: object, size: int, what: str = "the vocabulary") -> int:
    """``value`` as an ``int`` in ``[0, size)`` — e.g. a special-token id that must exist in the vocabulary."""
    value = check_int(name, value)
    if not 0 <= value < size:
        raise CourseValueError(f"{name}={value} must be a valid id in [0, {size}) of {what}; "
                               f"pick an id below {size} or enlarge {what}")
    return value


def check_real(name: str, value: object, low: float | None = None, high: float | None = None,
               low_inclusive: bool = True, high_inclusive: bool = True, hint: str = "") -> float:
    """``value`` as a finite ``float`` inside the given bounds; refuses bools, strings, tensors and NaN."""
    if not is_real(value) or value != value or value in (float("inf"), float("-inf")):
        raise CourseTypeError(f"{name} must be a finite number, got {describe(value)}{hint}")
    too_low = low is not None and (value < low if low_inclusive else value <= low)
    too_high = high is not None and (value > high if high_inclusive else value >= high)
    if too_low or too_high:
        left = "(-inf" if low is None else ("[" if low_inclusive else "(") + f"{low}"
        right = "inf)" if high is None else f"{high}" + ("]" if high_inclusive else ")")
        raise CourseValueError(f"{name} must lie in {left}, {right}, got {value}{hint}")
    return float(value)


def check_probability(name: str, value: object, hint: str = "") -> float:
    """``value`` as a ``float`` in ``[0, 1)`` — a dropout rate (1 would drop everything)."""
    return check_real(name, value, 0.0, 1.0, high_inclusive=False, hint=hint)


def check_bool(name: str, value: object) -> bool:
    """``value`` if it is ``True`` or ``False``; refuses 0/1, strings and tensors (``bool("no")`` is True)."""
    if not isinstance(value, bool):
        raise CourseTypeError(f"{name} must be True or False, got {describe(value)}")
    return value


def check_choice(name: str, value: object, allowed: Sequence[str]) -> str:
    """``value`` if it is one of ``allowed`` (exact spelling); the message lists the choices."""
    if not isinstance(value, str) or value not in allowed:
        raise CourseValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}; check the spelling")
    return value


def check_str(name: str, value: object, hint: str = "") -> str:
    """``value`` if it is a ``str``; a ``bytes`` value gets the decode hint."""
    if not isinstance(value, str):
        extra = " Decode it first: data.decode('utf-8')." if isinstance(value, bytes) else hint
        raise CourseTypeError(f"{name} must be a str, got {describe(value)}.{extra}")
    return value


def check_str_list(name: str, value: object) -> list[str]:
    """``value`` as a non-empty list of ``str`` (a list or tuple; one str, whose characters would be read as the
    items, is refused)."""
    if isinstance(value, str):
        raise CourseTypeError(f"{name} must be a list of str, got one str; wrap it: [{value[:20]!r}]")
    if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) for s in value):
        raise CourseTypeError(f"{name} must be a list of str, got {describe(value)}")
    if not value:
        raise CourseValueError(f"{name} is empty; pass at least one str")
    return list(value)


def check_str_tuples(name: str, value: object, fields: tuple[str, ...]) -> list[tuple[str, ...]]:
    """``value`` as a non-empty list of tuples of ``len(fields)`` str each (``("question", "answer")`` examples);
    any iterable of them but a str, a dict or a tensor."""
    shape = "(" + ", ".join(fields) + ")"
    if isinstance(value, (str, bytes, dict, torch.Tensor)) or not hasattr(value, "__iter__"):
        raise CourseTypeError(f"{name} must be a list of {shape} tuples of str, got {describe(value)}")
    rows = list(value)
    if not rows:
        raise CourseValueError(f"{name} is empty; pass at least one {shape} tuple")
    for i, row in enumerate(rows):
        if not isinstance(row, (tuple, list)) or len(row) != len(fields) or not all(isinstance(s, str) for s in row):
            raise CourseTypeError(f"{name}[{i}] must be a {shape} tuple of {len(fields)} str, got {describe(row)}")
    return [tuple(row) for row in rows]


def check_batches(name: str, batches: object, example: str = "a list of batches") -> object:
    """``batches`` if it is a non-empty, re-iterable collection with a length (a list, a tuple, a ``DataLoader``):
    not a str, bytes or a tensor, whose characters or rows would be read as the batches."""
    if isinstance(batches, (str, bytes, torch.Tensor)) or not hasattr(batches, "__len__") \
            or not hasattr(batches, "__iter__"):
        fix = "; for a single batch pass [batch]" if isinstance(batches, torch.Tensor) else ""
        raise CourseTypeError(f"{name} must be a re-iterable collection with a length ({example}), got "
                              f"{describe(batches)}{fix}")
    if len(batches) == 0:
        raise CourseValueError(f"no batches: {name} is empty; pass at least one batch")
    return batches


def check_id_lists(name: str, sequences: object) -> list[list[int]]:
    """``sequences`` as a list of lists of ``int`` token ids: a non-empty list or tuple of rows, each a sequence of
    non-negative ints (Python or NumPy; no bools, no floats) or a 1-D integer tensor. A row may be empty."""
    example = "such as [[5, 7, 6], [5, 8, 9, 6]]"
    if not isinstance(sequences, Sequence) or isinstance(sequences, (str, bytes, bytearray)):
        raise CourseTypeError(f"{name} must be a list of token-id lists {example}, got {describe(sequences)}")
    if len(sequences) == 0:
        raise CourseValueError(f"{name} holds no sequences; pass at least one list of token ids {example}")
    rows = []
    for i, row in enumerate(sequences):
        if type(row) is list and all(type(t) is int for t in row):
            pass  # the common case, checked fast
        elif isinstance(row, torch.Tensor):
            if row.dim() != 1 or row.dtype.is_floating_point or row.dtype == torch.bool or row.dtype.is_complex:
                raise CourseTypeError(f"{name}[{i}] must be one sequence of integer ids, got {describe(row)}; "
                                      "pass a 1-D integer tensor or a list of ints (row.tolist())")
            row = row.tolist()
        elif not isinstance(row, Sequence) or isinstance(row, (str, bytes, bytearray)):
            raise CourseTypeError(f"{name}[{i}] must be a list of int token ids, got {describe(row)}; {name} is a "
                                  f"list of sequences {example} (for one sequence wrap it: [ids])")
        elif not all(is_int(t) for t in row):
            bad = next(t for t in row if not is_int(t))
            raise CourseTypeError(f"{name}[{i}] holds {describe(bad)}; token ids are ints: convert with int(), and "
                                  "check you did not pass probabilities or embeddings")
        else:
            row = [int(t) for t in row]
        if row and min(row) < 0:
            raise CourseValueError(f"{name}[{i}] has a negative id {min(row)}; token ids are >= 0")
        rows.append(row)
    return rows


def check_tensor(name: str, value: object, hint: str = "") -> torch.Tensor:
    """``value`` if it is a ``torch.Tensor``."""
    if not isinstance(value, torch.Tensor):
        raise CourseTypeError(f"{name} must be a torch.Tensor, got {describe(value)}; "
                              f"convert it with torch.tensor(...){hint}")
    return value


def check_rank(x: object, rank: int, name: str, shape_doc: str) -> torch.Tensor:
    """``x`` if it is a tensor with ``rank`` dimensions; ``shape_doc`` names them, e.g. ``"(batch, seq, d_model)"``."""
    check_tensor(name, x)
    if x.dim() != rank:
        fix = " — for a single example add the batch dimension with .unsqueeze(0)" if x.dim() == rank - 1 else ""
        raise CourseValueError(f"{name} must have shape {shape_doc} ({rank} dimensions), got shape "
                               f"{tuple(x.shape)} ({x.dim()} dimensions){fix}")
    return x


def check_device(name: str, value: object) -> torch.device:
    """``value`` as a ``torch.device``: a ``torch.device`` or a device string such as ``'cpu'``, ``'cuda'``,
    ``'cuda:1'``; refuses other types (an int is no device name here) and strings PyTorch does not parse."""
    if not isinstance(value, (str, torch.device)):
        raise CourseTypeError(f"{name} must be a torch.device or a str such as 'cpu' or 'cuda', got {describe(value)}; "
                              "pass the device of the input, e.g. ids.device")
    try:
        return torch.device(value)
    except RuntimeError:
        raise CourseValueError(f"{name} must be a device name such as 'cpu', 'cuda' or 'cuda:0', got {value!r}; "
                               "check the spelling") from None


def check_non_empty(name: str, x: torch.Tensor, what: str = "at least one sequence of at least one token") -> None:
    """Refuse a tensor with a zero-size dimension (an empty batch or an empty sequence)."""
    if x.numel() == 0:
        raise CourseValueError(f"empty batch: {name} has shape {tuple(x.shape)}; every batch needs {what}")


def check_same_batch(*named: tuple[str, torch.Tensor]) -> None:
    """Refuse tensors whose first dimension (the batch) differs: ``check_same_batch(("src_ids", s), ("tgt", t))``."""
    sizes = {name: x.size(0) for name, x in named}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{name} has {size}" for name, size in sizes.items())
        raise CourseValueError(f"batch sizes disagree: {listed} rows; row i of each must belong to the same "
                               "example — pass the same number of sentences to each")


def check_token_ids(ids: object, vocab_size: int, max_len: int | None = None, *, name: str = "token ids",
                    allow_empty: bool = False) -> torch.Tensor:
    """Validate a ``(batch, seq)`` tensor of token ids and return it as ``torch.long``.

    Accepts any integer dtype (``uint8``, ``int16``, ``int32`` are converted; ``int64`` is returned as is).
    Refuses float, bool and complex tensors, other ranks, an empty batch or sequence (unless ``allow_empty``),
    ``seq > max_len`` when ``max_len`` is given, and ids outside ``[0, vocab_size)``.
    """
    check_positive_int("vocab_size", vocab_size)
    if max_len is not None:
        check_positive_int("max_len", max_len)
    if not isinstance(ids, torch.Tensor):
        raise CourseTypeError(f"{name} must be a torch.Tensor, got {describe(ids)}; "
                              "wrap them with torch.tensor(ids, dtype=torch.long)")
    if ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.dtype.is_complex:
        raise CourseTypeError(f"{name} must be integers (torch.long), got {ids.dtype}; "
                              "convert with ids.long() — and check you did not pass embeddings instead of ids")
    if ids.dim() != 2:
        raise CourseValueError(f"{name} must have shape (batch, seq), got {tuple(ids.shape)}; "
                               "for a single sequence use ids.unsqueeze(0)")
    if not allow_empty and (ids.size(0) == 0 or ids.size(1) == 0):
        raise CourseValueError(f"empty batch: {name} have shape {tuple(ids.shape)}; "
                               "every batch needs at least one sequence of at least one token")
    if max_len is not None and ids.size(1) > max_len:
        raise CourseValueError(f"sequence length {ids.size(1)} exceeds max_len={max_len}; truncate the input "
                               "or build the model with a larger max_len")
    if ids.numel():
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= vocab_size:
            raise CourseValueError(f"{name} must lie in [0, {vocab_size}) (vocab_size={vocab_size}), found range "
                                   f"[{low}, {high}]; the tokenizer and the model disagree on the vocabulary size")
    return ids.long()


def check_context(first: int, count: int, max_len: int, what: str = "positions",
                  fix: str = "truncate the input") -> None:
    """Refuse positions ``first .. first + count - 1`` that do not fit a model's context of ``max_len`` positions
    (``first`` is the number of positions already in a KV cache)."""
    if first + count > max_len:
        raise CourseValueError(f"{what} {first}..{first + count - 1} exceed the context of max_len={max_len}; "
                               f"{fix} or build the model with a larger max_len")


def module_dtype(module: nn.Module) -> torch.dtype | None:
    """The floating dtype of the module's first floating parameter or buffer (``None`` if it has none)."""
    for tensor in itertools.chain(module.parameters(), module.buffers()):
        if tensor.is_floating_point():
            return tensor.dtype
    return None


def check_float_input(x: object, module: nn.Module, name: str = "x") -> torch.Tensor:
    """``x`` if it is a floating tensor of the module's own dtype (any float dtype under autocast).

    An fp64 tensor fed to an fp32 module fails deep inside ``nn.Linear`` ("mat1 and mat2 must have the same
    dtype"); this check names the two fixes instead.
    """
    check_tensor(name, x)
    owner = type(module).__name__
    if not x.is_floating_point():
        raise CourseTypeError(f"{owner} expects {name} as floating-point vectors, got {x.dtype}; token ids must go "
                              "through an embedding first (InputEmbedding / TextEncoder), and a 0/1 tensor needs "
                              ".float()")
    expected = module_dtype(module)
    if expected is not None and x.dtype != expected and not torch.is_autocast_enabled(x.device.type):
        raise CourseTypeError(f"{owner} holds {expected} weights but {name} is {x.dtype}; convert the input with "
                              f"{name}.to({expected}) or the module with module.to({x.dtype}) "
                              "(model.double() for float64, model.float() for float32)")
    return x


def check_vectors(x: object, module: nn.Module, d_model: int, name: str = "x",
                  shape_doc: str = "(batch, seq, d_model)") -> torch.Tensor:
    """A non-empty floating ``(batch, seq, d_model)`` tensor of the module's dtype."""
    check_rank(x, 3, name, shape_doc.replace("d_model", f"d_model={d_model}"))
    if x.size(-1) != d_model:
        raise CourseValueError(f"{name} must have shape {shape_doc.replace('d_model', f'd_model={d_model}')}, "
                               f"got {tuple(x.shape)}; its last dimension must equal the model's d_model")
    check_non_empty(name, x, "at least one sequence of at least one vector")
    return check_float_input(x, module, name)


def check_features(x: object, module: nn.Module, d_model: int, name: str = "x") -> torch.Tensor:
    """A floating ``(..., d_model)`` tensor of the module's dtype, with any leading dimensions: the input of a
    position-wise block, which maps one vector as it maps a whole batch."""
    check_tensor(name, x)
    if x.dim() == 0 or x.size(-1) != d_model:
        raise CourseValueError(f"{name} must have shape (..., d_model={d_model}), got {tuple(x.shape)}; its last "
                               "dimension must equal the model's d_model")
    return check_float_input(x, module, name)


def check_module(name: str, value: object, kind: type = nn.Module) -> nn.Module:
    """``value`` if it is an instance of ``kind`` (an ``nn.Module`` by default)."""
    if not isinstance(value, kind):
        raise CourseTypeError(f"{name} must be a {kind.__name__}, got {describe(value)}")
    return value
