"""Has a notebook changed the functions the checks rely on? A snapshot of PyTorch and the course, taken before any
learner code runs, compared afterwards.

Catches ``torch.allclose = lambda *a, **k: True``, ``Exercise.evaluate = …``, ``lesson03.check_… = …``,
``torch.Tensor.__eq__ = …``, a checker's ``__code__`` swapped, and the like — wherever in the notebook they happen,
even inside the learner's own function when the check calls it.
"""
from __future__ import annotations

import sys
import types

WATCHED_MODULES = ("builtins", "math", "operator", "functools", "torch", "torch.nn", "torch.nn.functional",
                   "torch.nn.init", "torch.testing", "torch.linalg", "torch.special", "torch.optim", "numpy")
IGNORED_BUILTINS = {"_", "__", "___", "input"}  # IPython: the last results; the kernel: input() per cell


def _is_course_module(name: str) -> bool:
    return name == "course_utils" or name.startswith("course_utils.")


def _watched_classes(module: types.ModuleType) -> dict[str, type]:
    """The module's own classes, by the name the module binds them to."""
    return {key: value for key, value in vars(module).items()
            if isinstance(value, type) and str(getattr(value, "__module__", "")).startswith(module.__name__)}


class Snapshot:
    """References to every watched attribute, so that a replaced one is found by identity."""

    def __init__(self) -> None:
        self.attributes: dict[tuple[str, ...], object] = {}
        self.class_keys: dict[tuple[str, ...], frozenset[str]] = {}
        for name in sorted(sys.modules):
            module = sys.modules[name]
            if module is None or not (name in WATCHED_MODULES or _is_course_module(name)):
                continue
            for key, value in vars(module).items():
                if not (name == "builtins" and key in IGNORED_BUILTINS):
                    self.attributes[(name, key)] = value
                if _is_course_module(name) and isinstance(value, types.FunctionType):
                    self._record_function((name, key), value)
                if _is_course_module(name) and hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
                    for field_name, field_value in vars(value).items():  # an Exercise: its checker, its name
                        self.attributes[(name, key, field_name)] = field_value
            for key, cls in _watched_classes(module).items():
                where = (name, key, "<class>")
                self.class_keys[where] = frozenset(vars(cls))
                for attribute, value in vars(cls).items():
                    self.attributes[(*where, attribute)] = value
                    if isinstance(value, types.FunctionType) and _is_course_module(name):
                        self._record_function((*where, attribute), value)

    def _record_function(self, where: tuple[str, ...], function: types.FunctionType) -> None:
        self.attributes[(*where, "__code__")] = function.__code__
        self.attributes[(*where, "__defaults__")] = function.__defaults__
        self.attributes[(*where, "__kwdefaults__")] = function.__kwdefaults__

    def _current(self, where: tuple[str, ...]) -> object:
        module = sys.modules.get(where[0])
        if len(where) == 2:
            return vars(module).get(where[1], _MISSING)
        if where[2] in ("__code__", "__defaults__", "__kwdefaults__"):
            return getattr(vars(module).get(where[1]), where[2], _MISSING)
        if where[2] == "<class>":
            cls = self._class(where)
            value = vars(cls).get(where[3], _MISSING) if cls is not None else _MISSING
            return getattr(value, where[4], _MISSING) if len(where) == 5 else value
        return vars(vars(module).get(where[1])).get(where[2], _MISSING)  # a dataclass instance's field

    @staticmethod
    def _class(where: tuple[str, ...]):
        value = vars(sys.modules[where[0]]).get(where[1])
        return value if isinstance(value, type) else None

    def changes(self) -> list[str]:
        """What differs from the snapshot, as ``module.name`` strings (empty if nothing was replaced)."""
        changed = set()
        for where, value in self.attributes.items():
            if self._current(where) is not value:
                changed.add(_describe(where))
        for where, keys in self.class_keys.items():
            cls = self._class(where)
            if cls is None or frozenset(vars(cls)) - keys:
                added = sorted(frozenset(vars(cls)) - keys) if cls is not None else []
                changed.add(f"{where[0]}.{where[1]}" + (f".{added[0]}" if added else ""))
        return sorted(changed)


_MISSING = object()


def _describe(where: tuple[str, ...]) -> str:
    parts = [part for part in where if part != "<class>"]
    if parts[-1] in ("__code__", "__defaults__", "__kwdefaults__"):
        parts = parts[:-1]
    return ".".join(parts)
