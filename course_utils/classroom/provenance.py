"""Did the learner write the answer, or hand in the course's finished block?

The package's finished blocks are the course's library and stay importable; an exercise asks the learner to build
one. An answer is *borrowed* when it is a function or class from ``course_utils`` (``from course_utils.attention
import MultiHeadAttention``), subclasses one, or is a notebook function/class whose code calls the package's block of
the same name (``return tokenization.merge_pair(…)``).
"""
from __future__ import annotations

import functools
import inspect
import types


def _course_origin(value) -> str | None:
    """``"course_utils.attention.MultiHeadAttention"`` if ``value`` is a function or class of the package."""
    if isinstance(value, functools.partial):
        value = value.func
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
        module = getattr(value, "__module__", None) or ""
        if module == "course_utils" or module.startswith("course_utils."):
            return f"{module}.{getattr(value, '__qualname__', getattr(value, '__name__', '?'))}"
    return None


def _code_objects(value) -> list[tuple[types.CodeType, dict]]:
    """The code of a notebook function, or of every method of a notebook class, with its globals."""
    if isinstance(value, types.FunctionType):
        functions = [value]
    elif isinstance(value, type):
        functions = [member for cls in value.__mro__ if cls.__module__ == value.__module__
                     for member in vars(cls).values() if isinstance(member, types.FunctionType)]
    else:
        return []
    found = []
    for function in functions:
        stack = [function.__code__]
        while stack:
            code = stack.pop()
            found.append((code, function.__globals__))
            stack.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
    return found


def borrowed_block(variable: str, value) -> str | None:
    """The package block the answer ``variable`` is, extends or calls, as ``module.name``; ``None`` if it is the
    learner's own."""
    origin = _course_origin(value)
    if origin:
        return origin
    if isinstance(value, type):
        for base in value.__mro__[1:]:
            origin = _course_origin(base)
            if origin:
                return origin
    for code, namespace in _code_objects(value):
        for name in code.co_names:
            target = namespace.get(name)
            if inspect.ismodule(target) and target.__name__.startswith("course_utils") and variable in code.co_names:
                modules = [target] + [getattr(target, n) for n in code.co_names
                                      if inspect.ismodule(getattr(target, n, None))]
                origin = next(filter(None, (_course_origin(getattr(m, variable, None)) for m in modules)), None)
            elif target is not None and getattr(target, "__name__", None) == variable:
                origin = _course_origin(target)
            if origin:
                return origin
    return None


def borrowed_message(variable: str, value, origin: str) -> str:
    kind = "class" if isinstance(value, type) else "function"
    return (f"use your own {kind}: `{variable}` is or calls the course's finished `{origin}`. The exercise is to "
            f"build it yourself — define `{variable}` in the notebook without the package's version.")
