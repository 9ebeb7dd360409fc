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
UNWATCHED_CLASS_MODULES = ("torch.optim",)  # an optimizer class's first instance wraps its ``step`` (profiling hook)
IGNORED_CLASS_KEYS = {"__slotnames__"}  # copyreg's cache, written by the first copy or pickle of an instance
IGNORED_BUILTINS = {"_", "__", "___", "input"}  # IPython: the last results; the kernel: input() per cell


def _is_course_module(name: str) -> bool:
    return name == "course_utils" or name.startswith("course_utils.")


_MISSING = object()
FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")


class Snapshot:
    """References to every watched attribute, so that a replaced one is found by identity.

    Watched: the attributes of :data:`WATCHED_MODULES` and of every ``course_utils`` module; the attributes of the
    classes they define (``torch.Tensor``, ``nn.Linear``, ``Exercise``…, each once, under its own module's name); the
    code and defaults of the course's functions; the fields of the course's dataclass objects (an ``Exercise``).
    """

    def __init__(self) -> None:
        if "torch" in sys.modules:  # torch wraps torch.manual_seed when it first loads dynamo (an optimizer's first
            import torch._dynamo  # noqa: F401  step does): load it before the snapshot, not during the check
        self.entries: list[tuple[str, object, str, object]] = []  # (shown as, owner, attribute, value)
        self.class_keys: list[tuple[str, type, frozenset[str]]] = []
        classes: dict[int, type] = {}
        for name in sorted(sys.modules):
            module = sys.modules[name]
            if not isinstance(module, types.ModuleType) or not (name in WATCHED_MODULES or _is_course_module(name)):
                continue
            for key, value in list(vars(module).items()):
                if name == "builtins" and key in IGNORED_BUILTINS:
                    continue
                self.entries.append((f"{name}.{key}", module, key, value))
                if isinstance(value, type) and str(getattr(value, "__module__", "")).startswith(name.split(".")[0]):
                    classes[id(value)] = value
                elif _is_course_module(name) and isinstance(value, types.FunctionType):
                    self._watch_function(f"{name}.{key}", value)
                elif _is_course_module(name) and hasattr(value, "__dataclass_fields__"):
                    for field_name, field_value in vars(value).items():  # an Exercise: its checker, its name…
                        self.entries.append((f"{name}.{key}.{field_name}", value, field_name, field_value))
        for cls in classes.values():
            if cls.__module__.startswith(UNWATCHED_CLASS_MODULES):
                continue
            shown = f"{cls.__module__}.{cls.__qualname__}"
            self.class_keys.append((shown, cls, frozenset(vars(cls))))
            for key, value in list(vars(cls).items()):
                self.entries.append((f"{shown}.{key}", cls, key, value))
                if isinstance(value, types.FunctionType) and _is_course_module(cls.__module__):
                    self._watch_function(f"{shown}.{key}", value)

    def _watch_function(self, shown: str, function: types.FunctionType) -> None:
        for part in FUNCTION_PARTS:
            self.entries.append((shown, function, part, getattr(function, part)))

    def changes(self) -> list[str]:
        """What differs from the snapshot, as ``module.name`` strings (empty if nothing was replaced)."""
        changed = set()
        for shown, owner, attribute, value in self.entries:
            current = getattr(owner, attribute, _MISSING) if attribute in FUNCTION_PARTS else \
                vars(owner).get(attribute, _MISSING)
            if current is not value:
                changed.add(shown)
        for shown, cls, keys in self.class_keys:
            added = sorted(frozenset(vars(cls)) - keys - IGNORED_CLASS_KEYS)
            changed.update(f"{shown}.{key}" for key in added)
        return sorted(changed)
