"""Has a notebook changed anything the checks rely on? A snapshot of every loaded module, taken before any learner
code runs, compared by identity afterwards.

Catches ``torch.allclose = lambda *a, **k: True``, ``Exercise.evaluate = …``, ``lesson03.check_… = …``,
``torch.Tensor.__eq__ = …``, ``sys.modules['json'].dumps = …``, ``builtins.all = …``, a checker's ``__code__``
swapped, a closure's cell rewritten, ``sys.modules['json']`` replaced, and the like — wherever in the notebook
they happen, even inside the learner's own function while the check calls it (see :mod:`.guard`).

Two depths, for speed: the **core** (PyTorch's public modules and classes, NumPy, the standard-library modules a
check uses, the course; the code, defaults and closures of their functions) is compared each time the learner's code
hands control back to the checker (a few milliseconds); **everything** (every module loaded at the snapshot, its
functions, classes and sub-modules) before and after each check. Plain data outside the core, and private data
(``_name``) of the standard library's core modules (a cache, a counter, the locks ``threading`` renews after a
fork) is not watched: libraries change their own.
"""
from __future__ import annotations

import functools
import gc
import operator
import sys
import types

CORE_MODULES = ("builtins", "math", "cmath", "operator", "functools", "itertools", "collections", "numbers",
                "inspect", "copy", "random", "json", "json.encoder", "json.decoder", "types", "os", "posix", "sys",
                "gc", "threading", "signal", "weakref", "numpy", "torch", "torch.nn", "torch.nn.functional",
                "torch.nn.init", "torch.testing", "torch.linalg", "torch.special", "torch.optim", "torch.functional",
                "torch._tensor", "torch.autograd", "torch.overrides", "torch.utils._python_dispatch",
                "torch.nn.parameter")
CORE_PREFIXES = ("course_utils", "torch.nn.modules.", "torch.testing.", "torch.autograd.", "torch.optim.")
ALL_ATTRIBUTES = ("builtins", "math", "operator", "functools", "torch", "torch.nn", "torch.nn.functional",
                  "torch.nn.init", "torch.testing", "torch.linalg", "torch.special", "torch.optim", "numpy")
UNWATCHED_CLASS_MODULES = ("torch.optim",)  # an optimizer class's first instance wraps its ``step`` (profiling hook)
UNWATCHED_MODULES = ("__main__", "__mp_main__", "IPython", "ipykernel", "prompt_toolkit", "traitlets",
                     "matplotlib_inline", "jedi", "parso", "pygments", "comm", "ipywidgets", "tqdm")
IGNORED_CLASS_KEYS = {"__slotnames__", "_abc_impl", "__abstractmethods__", "_is_protocol", "__parameters__"}
IGNORED_MODULE_KEYS = {("builtins", key) for key in ("_", "__", "___", "input", "get_ipython", "display",
                                                     "__IPYTHON__", "exit", "quit")} | {("sys", key) for key in (
    "last_type", "last_value", "last_traceback", "last_exc", "ps1", "ps2", "ps3", "displayhook", "excepthook",
    "stdout", "stderr", "stdin", "path_importer_cache", "_git", "tracebacklimit")} | {
    ("warnings", key) for key in ("filters", "showwarning", "_showwarnmsg_impl", "_filters_mutated")}
FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")
IMMUTABLE_TYPE = 1 << 8   # Py_TPFLAGS_IMMUTABLETYPE: a built-in class nobody can assign to
CODE_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, type, staticmethod,
              classmethod, property, types.MethodDescriptorType, types.WrapperDescriptorType,
              types.ClassMethodDescriptorType, types.GetSetDescriptorType, types.MemberDescriptorType,
              functools.partial)
_MISSING = object()
# the builtins the comparison uses, bound here once: a notebook that replaces ``builtins.all`` cannot make it lie
_all, _map, _getattr, _list, _len, _vars, _is, _dict_get, _proxy_get = (
    all, map, getattr, list, len, vars, operator.is_, dict.get, types.MappingProxyType.get)


def is_core(name: str) -> bool:
    return name in CORE_MODULES or name.startswith(CORE_PREFIXES)


def _unwatched(name: str) -> bool:
    return name.split(".")[0] in UNWATCHED_MODULES


def _is_code(value) -> bool:
    """Functions, classes, modules and descriptors: what a library does not rebind on its own. (``type(value)``
    only: asking the value itself can run a lazy module's ``__getattr__``.)"""
    return issubclass(type(value), CODE_TYPES) or callable(value)


class _Table:
    """Owners, keys and the values they held, as flat lists so that comparing them runs at C speed."""

    def __init__(self) -> None:
        self.names: list[tuple[str, str]] = []    # (owner as shown, key) of each watched entry
        self.dicts: list[dict] = []
        self.dict_keys: list[str] = []
        self.dict_values: list[object] = []
        self.dict_names: list[int] = []
        self.proxies: list[types.MappingProxyType] = []
        self.proxy_classes: list[type] = []
        self.proxy_keys: list[str] = []
        self.proxy_values: list[object] = []
        self.proxy_names: list[int] = []
        self.holders: list[object] = []
        self.parts: list[str] = []
        self.part_values: list[object] = []
        self.part_names: list[int] = []
        self.classes: list[type] = []
        self.class_sizes: list[int] = []
        self.class_keys: list[frozenset[str]] = []

    def name(self, owner: str, key: str) -> int:
        self.names.append((owner, key))
        return len(self.names) - 1

    def shown(self, index: int) -> str:
        owner, key = self.names[index]
        return f"{owner}.{key}" if key else owner

    def intact(self) -> bool:
        try:
            return (_all(_map(_is, _map(_dict_get, self.dicts, self.dict_keys), self.dict_values))
                    and _all(_map(_is, _map(_proxy_get, self.proxies, self.proxy_keys), self.proxy_values))
                    and _all(_map(_is, _map(_getattr, self.holders, self.parts), self.part_values))
                    and _list(_map(_len, _map(_vars, self.classes))) == self.class_sizes)
        except (ValueError, AttributeError):   # a closure's cell emptied, an attribute deleted
            return False

    def current(self) -> dict[str, object]:
        """What differs from the snapshot: ``{"module.name": the value there now}`` (``_MISSING`` if it is gone)."""
        changed: dict[str, object] = {}
        for owner, key, value, name in zip(self.dicts, self.dict_keys, self.dict_values, self.dict_names):
            current = owner.get(key, _MISSING)
            if current is not value:
                changed[self.shown(name)] = current
        for owner, key, value, name in zip(self.proxies, self.proxy_keys, self.proxy_values, self.proxy_names):
            current = owner.get(key, _MISSING)
            if current is not value:
                changed[self.shown(name)] = current
        for holder, part, value, name in zip(self.holders, self.parts, self.part_values, self.part_names):
            try:
                current = getattr(holder, part)
            except (ValueError, AttributeError):
                current = _MISSING
            if current is not value:
                changed[self.shown(name)] = current
        for index, (cls, size) in enumerate(zip(self.classes, self.class_sizes)):
            if len(vars(cls)) != size:
                added = sorted(set(vars(cls)) - self.class_keys[index] - IGNORED_CLASS_KEYS)
                changed.update({f"{cls.__module__}.{cls.__qualname__}.{key}": vars(cls)[key] for key in added})
                if not added:  # only keys Python adds on its own: this is the new normal
                    self.class_sizes[index] = len(vars(cls))
                    self.class_keys[index] = frozenset(vars(cls))
        return changed

    def changes(self) -> list[str]:
        return sorted(self.current())

    def restore(self, names) -> list[str]:
        """Put the snapshot's values back for the entries ``names`` (as :meth:`changes` shows them); return those
        that could not be put back."""
        wanted = set(names)
        if not wanted:
            return []
        for owner, key, value, name in zip(self.dicts, self.dict_keys, self.dict_values, self.dict_names):
            if self.shown(name) in wanted and owner.get(key, _MISSING) is not value:
                try:
                    owner[key] = value
                except Exception:  # noqa: BLE001 - what cannot be put back is reported below
                    pass
        for cls, owner, key, value, name in zip(self.proxy_classes, self.proxies, self.proxy_keys,
                                                self.proxy_values, self.proxy_names):
            if self.shown(name) in wanted and owner.get(key, _MISSING) is not value:
                try:
                    type.__setattr__(cls, key, value)
                except Exception:  # noqa: BLE001
                    pass
        for holder, part, value, name in zip(self.holders, self.parts, self.part_values, self.part_names):
            if self.shown(name) in wanted:
                try:
                    if getattr(holder, part) is not value:
                        setattr(holder, part, value)
                except Exception:  # noqa: BLE001
                    pass
        for cls, keys in zip(self.classes, self.class_keys):
            for key in sorted(set(vars(cls)) - keys - IGNORED_CLASS_KEYS):
                if f"{cls.__module__}.{cls.__qualname__}.{key}" in wanted:
                    try:
                        type.__delattr__(cls, key)
                    except Exception:  # noqa: BLE001
                        pass
        return sorted(wanted & set(self.current()))


class Snapshot:
    """References to every watched attribute, so that a replaced one is found by identity.

    ``core=True`` watches only the core (fast enough to compare after every return of the learner's code to the
    checker); ``core=False`` watches every module loaded now (see the module docstring).
    """

    def __init__(self, core: bool = False) -> None:
        if "torch" in sys.modules:  # torch wraps torch.manual_seed when it first loads dynamo (an optimizer's first
            import torch._dynamo  # noqa: F401  step does): load it before the snapshot, not during the check
        collecting = gc.isenabled()
        gc.disable()   # hundreds of thousands of small tuples: the collector would walk the whole heap again and again
        try:
            self._take(core)
            self._freeze()
        finally:
            if collecting:
                gc.enable()

    def _freeze(self) -> None:
        """The entries as tuples: code that reaches the snapshot (``gc``) can rebind them, which
        :func:`~.guard.guard_state` notices, but not change them in place."""
        table = self.table
        for key, value in list(vars(table).items()):
            if isinstance(value, list) and key not in ("class_sizes", "class_keys"):
                setattr(table, key, tuple(value))

    def _take(self, core: bool) -> None:
        import builtins

        self.builtins = tuple((key, value) for key, value in vars(builtins).items()
                              if ("builtins", key) not in IGNORED_MODULE_KEYS)
        self.builtins_get, self.builtins_set = vars(builtins).get, vars(builtins).__setitem__
        self.table = table = _Table()
        classes: dict[int, tuple[type, bool]] = {}
        functions: dict[int, tuple[int, types.FunctionType]] = {}
        for name, module in sorted(sys.modules.items()):
            if not isinstance(module, types.ModuleType) or _unwatched(name) or (core and not is_core(name)):
                continue
            module_dict = vars(module)
            everything = name in ALL_ATTRIBUTES or name.startswith("course_utils")
            in_core = is_core(name)
            sys_modules = table.name(f"sys.modules[{name!r}]", "")
            table.dicts.append(sys.modules)
            table.dict_keys.append(name)
            table.dict_values.append(module)
            table.dict_names.append(sys_modules)
            for key, value in list(module_dict.items()):
                if (name, key) in IGNORED_MODULE_KEYS:
                    continue
                if not (everything or (in_core and not key.startswith("_")) or _is_code(value)):
                    continue
                index = table.name(name, key)
                table.dicts.append(module_dict)
                table.dict_keys.append(key)
                table.dict_values.append(value)
                table.dict_names.append(index)
                kind = type(value)
                if issubclass(kind, type):
                    if id(value) not in classes or in_core and not classes[id(value)][1]:
                        classes[id(value)] = (value, in_core)
                elif kind is types.FunctionType and in_core:
                    functions.setdefault(id(value), (index, value))
                elif everything and name.startswith("course_utils") and hasattr(kind, "__dataclass_fields__"):
                    for field_name, field_value in vars(value).items():  # an Exercise: its checker, its name…
                        table.dicts.append(vars(value))
                        table.dict_keys.append(field_name)
                        table.dict_values.append(field_value)
                        table.dict_names.append(table.name(f"{name}.{key}", field_name))
        for cls, _found_in_core in classes.values():
            module = str(cls.__dict__.get("__module__", ""))
            if module.startswith(UNWATCHED_CLASS_MODULES) or _unwatched(module) or cls.__flags__ & IMMUTABLE_TYPE:
                continue
            in_core = is_core(module)   # a class's own module decides, not the module that imported it
            shown = f"{module}.{cls.__dict__.get('__qualname__', cls.__name__)}"
            proxy = cls.__dict__
            table.classes.append(cls)
            table.class_sizes.append(len(proxy))
            table.class_keys.append(frozenset(proxy))
            for key, value in list(proxy.items()):
                if key in IGNORED_CLASS_KEYS or not (in_core or _is_code(value)):
                    continue
                index = table.name(shown, key)
                table.proxies.append(proxy)
                table.proxy_classes.append(cls)
                table.proxy_keys.append(key)
                table.proxy_values.append(value)
                table.proxy_names.append(index)
                member = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                if in_core and type(member) is types.FunctionType:
                    functions.setdefault(id(member), (index, member))
        for index, function in functions.values():
            for part in FUNCTION_PARTS:
                table.holders.append(function)
                table.parts.append(part)
                table.part_values.append(getattr(function, part))
                table.part_names.append(index)
            for cell in function.__closure__ or ():
                try:
                    contents = cell.cell_contents
                except ValueError:   # an empty cell is left alone: reading it would raise
                    continue
                table.holders.append(cell)
                table.parts.append("cell_contents")
                table.part_values.append(contents)
                table.part_names.append(index)

    def restore_builtins(self) -> list[str]:
        """Put back every replaced entry of ``builtins`` (before anything else runs: the grader's own code uses
        them); return their names, as ``builtins.all``."""
        changed = []
        for key, value in self.builtins:
            if self.builtins_get(key, _MISSING) is not value:
                changed.append(key)
                self.builtins_set(key, value)
        return ["builtins." + key for key in changed]

    def __len__(self) -> int:
        table = self.table
        return len(table.dict_keys) + len(table.proxy_keys) + len(table.parts)

    def intact(self) -> bool:
        """Nothing watched was replaced (fast; :meth:`changes` says what was)."""
        return self.table.intact()

    def changes(self) -> list[str]:
        """What differs from the snapshot, as ``module.name`` strings (empty if nothing was replaced)."""
        return self.table.changes()

    def current(self) -> dict[str, object]:
        """What differs from the snapshot, with the value there now."""
        return self.table.current()

    def restore(self, names) -> list[str]:
        """Put back the entries ``names`` (see :meth:`changes`); return those that could not be put back."""
        return self.table.restore(names)
