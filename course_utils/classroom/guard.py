"""The check's guard: the clean state a check starts from, and a watch on the learner's code while the check calls it.

A check has to call the learner's code, so the two share a process (a fork of the notebook's run, one per exercise,
see :mod:`.evaluator`). The guard makes the learner's code count only through what it returns:

* **before the check** it puts back what the notebook's cells may have changed for the whole process —
  PyTorch's function and dispatch modes, gradient mode, default dtype, ``sys.settrace``/``sys.setprofile`` hooks,
  signal handlers and timers, ``gc`` callbacks, import hooks, the environment (``COURSE_CHECK_SEED`` …) — and refuses
  to check while a thread the cells started is still running, or when anything in the snapshot of the modules
  (:mod:`.integrity`) was replaced;
* **while the check runs** it traces calls (``sys.settrace``; the "use your own" guard of the checks listens with
  ``sys.setprofile``, so the two do not meet): each time the learner's code hands control back to the checker — a
  return from the learner's function, method, ``__torch_function__``, ``__eq__``, ``__del__`` or callback — the
  core modules must be as in the snapshot (a patch that undoes itself later is still caught), no mode, thread,
  hook or global PyTorch setting may have been left behind, ``sys.setprofile``/``sys.settrace`` must not have been
  called, and no class of the learner's that poses as a value (a subclass of ``torch.Tensor``, ``int``, ``list`` …
  that redefines how it behaves, or a class that lies about its ``__class__``) may exist;
* **after the check** the whole snapshot again.

Anything found makes the exercise ``error`` with what was found: the result of a check the learner's code tampered
with is not a grade. What the guard cannot see — code that rewrites the guard's own state or memory (``ctypes``,
``gc``, frame objects) — the grader's static scan (:mod:`.reach`) answers: a ``correct`` that depends on such code is
not counted.
"""
from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import types

import numpy as np
import torch

from course_utils.exercises.core import INCORRECT, Result

from .integrity import Snapshot
from .processes import is_dumpable
from .provenance import borrowed_block, borrowed_message

ERROR = "error"
VALUE_TYPES = (torch.Tensor, np.ndarray, np.generic, int, float, complex, str, bytes, bytearray, list, tuple, dict,
               set, frozenset)
STRICT_VALUE_TYPES = (torch.Tensor, np.ndarray, np.generic)  # a learner's subclass of these may define nothing
PLAIN_CLASS_KEYS = frozenset({
    "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__", "__annotations__",
    "__orig_bases__", "__parameters__", "__firstlineno__", "__static_attributes__", "__match_args__",
    "__classcell__"})
HARMLESS_VALUE_KEYS = frozenset({"__init__", "__new__", "__repr__", "__str__", "__format__", "__getnewargs__",
                                 "_fields", "_field_defaults", "_make", "_replace", "_asdict", "__rich_repr__"})
POSING_KEYS = frozenset({"__class__", "__instancecheck__", "__subclasscheck__"})


class Trust:
    """Which code is the learner's: any code object that neither comes from a file of the installed libraries and
    the course (``roots``) nor existed before the first learner cell ran (``known``: what the libraries generated
    at import, e.g. a dataclass's ``__init__``)."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = tuple(os.path.join(os.path.realpath(root), "") for root in roots)
        self.files: dict[str, bool] = {}   # a cache of trusted_file(); verify() recomputes it
        known: set[types.CodeType] = set()
        stack = [f.__code__ for f in gc.get_objects() if type(f) is types.FunctionType]
        while stack:
            code = stack.pop()
            if code not in known:
                known.add(code)
                stack.extend(const for const in code.co_consts if type(const) is types.CodeType)
        self.known = frozenset(known)

    def trusted_file(self, name: str) -> bool:
        return name.startswith("<frozen ") or (not name.startswith("<") and
                                               os.path.realpath(name).startswith(self.roots))

    def learner(self, code: types.CodeType) -> bool:
        trusted = self.files.get(code.co_filename)
        if trusted is None:
            trusted = self.files[code.co_filename] = self.trusted_file(code.co_filename)
        return not trusted and code not in self.known

    def cache_intact(self) -> bool:
        """No entry of the cache says a file is trusted that is not (the learner's code could have added one)."""
        return all(verdict == self.trusted_file(name) for name, verdict in list(self.files.items()))


def torch_state() -> tuple:
    """PyTorch's process-wide settings a learner's code could leave changed to sway a check."""
    try:
        autocast = torch.is_autocast_enabled("cpu")
    except TypeError:   # older PyTorch
        autocast = torch.is_autocast_cpu_enabled()
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.get_default_dtype(), autocast,
            torch.is_anomaly_enabled(), torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack(),
            torch._C._is_torch_function_enabled(), torch._C._is_fwd_grad_enabled())


STATE_NAMES = ("gradient mode", "inference mode", "default dtype", "autocast", "anomaly detection",
               "a torch function mode (TorchFunctionMode)", "a torch dispatch mode (TorchDispatchMode)",
               "torch function dispatch", "forward-mode AD")


def _reset_torch() -> None:
    while torch._C._len_torch_function_stack():
        torch._C._pop_torch_function_stack()
    while torch._C._len_torch_dispatch_stack():
        torch._C._pop_torch_dispatch_stack(None)
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    torch.autograd.set_detect_anomaly(False)


class Guard:
    """Made in the evaluation host before any learner code runs (see the module docstring); one guarded check per
    forked process (:meth:`check`)."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.problems: list[str] = []
        self.hooked: list[str] = []   # sys.settrace/setprofile calls by learner code, in the cells or the check
        self.active = False
        self.depth = 0
        self.entry: tuple = ()
        self.environment: dict[str, str] = {}
        self.setprofile, self.settrace, self.getframe = sys.setprofile, sys.settrace, sys._getframe
        sys.setprofile, sys.settrace = self._watched(self.setprofile), self._watched(self.settrace)
        self.trust = Trust(roots)
        self.full = Snapshot()
        self.core = Snapshot(core=True)
        gc.collect()   # classes already garbage go now: none is freed later, leaving its id to a learner's class
        self.known_classes = tuple(_all_classes())   # held: no class made later can take one of their ids
        self.classes = {id(cls) for cls in self.known_classes}
        self.meta_path = list(sys.meta_path)
        self.path_hooks = list(sys.path_hooks)
        self.signals = {number: signal.getsignal(number) for number in _signal_numbers()}
        self.recursion_limit = sys.getrecursionlimit()
        self.torch_state = torch_state()
        self.hooks = (sys.excepthook, sys.displayhook, sys.unraisablehook, sys.breakpointhook)

    # ------------------------------------------------------------------------------------------ set-up hooks
    def _watched(self, original):
        """``sys.setprofile``/``sys.settrace`` as the learner's code sees them: calling one while a check runs is
        noted (it would blind the "use your own" guard, or this one)."""
        guard = self

        def hook(function):
            if guard.trust.learner(guard.getframe(1).f_code):
                guard.hooked.append(original.__name__)
                guard.note(f"your code called sys.{original.__name__}(): that switches off the watches the check "
                           "relies on")
            original(function)

        hook.__name__ = hook.__qualname__ = original.__name__
        hook.__doc__ = original.__doc__
        return hook

    def remember_environment(self) -> None:
        """The environment to give back to the check (called in the forked process, before any learner cell)."""
        self.environment = dict(os.environ)

    def note(self, problem: str) -> None:
        if problem not in self.problems:
            self.problems.append(problem)

    # ------------------------------------------------------------------------------------------ the check
    def check(self, exercise, namespace: dict) -> Result:
        """``exercise.evaluate(namespace)`` from a clean start, watched; ``error`` if the learner's code tampered."""
        self.problems = [f"the notebook called sys.{name}(): that switches off the watches the check relies on"
                         for name in dict.fromkeys(self.hooked)]
        self._clean_start()
        if self.problems:
            return self._refusal()
        for variable in exercise.variables:
            self._inspect_value(namespace.get(variable), f"`{variable}`")
        self._inspect_classes()
        if self.problems:
            return self._refusal()
        self.depth, self.active = 0, True
        watch = self._call   # one bound method: sys.gettrace() must return this very object afterwards
        self.settrace(watch)
        try:
            result = exercise.evaluate(namespace)
        except BaseException as stop:  # SystemExit, KeyboardInterrupt…: evaluate() lets only these through
            result = Result(ERROR, f"your code stopped the check with {type(stop).__name__}: {stop}")
        finally:
            tracer = sys.gettrace()
            self.settrace(None)
            self.active = False
        if tracer is not watch or self.depth != 0 or not self.trust.cache_intact():
            self.note("your code switched off the watch the check runs under (sys.settrace)")
        self._inspect_classes()
        changed = self.full.changes()
        if changed:
            self.note(_replaced(changed, "while it was being checked"))
        if _python_threads() > 1:
            self.note("your code started a thread while it was being checked")
        if self.problems:
            return self._refusal()
        if result.passed:
            for variable in exercise.variables:
                origin = borrowed_block(variable, namespace.get(variable))
                if origin:
                    return Result(INCORRECT, borrowed_message(variable, namespace.get(variable), origin))
        return result

    def _refusal(self) -> Result:
        shown = "; ".join(self.problems[:2]) + (" …" if len(self.problems) > 2 else "")
        if shown.startswith("the notebook replaced"):
            return Result(ERROR, shown)
        return Result(ERROR, f"{shown[0].upper()}{shown[1:]}. The result of a check your code interfered with is "
                             "not a grade: remove that code (grading needs PyTorch's and the course's own functions, "
                             "used as they are).")

    def _clean_start(self) -> None:
        """Put back the process-wide state; note what cannot be put back. Replaced builtins are put back first
        (this code needs them), and anything replaced stops the check before any other set-up runs."""
        replaced = self.full.restore_builtins()
        changed = sorted(set(replaced) | set(self.full.changes()))
        if changed:
            self.note(_replaced(changed))
            return
        self.settrace(None)
        self.setprofile(None)
        threading.settrace(None)
        threading.setprofile(None)
        for number, handler in self.signals.items():
            try:
                if signal.getsignal(number) is not handler:
                    signal.signal(number, handler if handler is not None else signal.SIG_DFL)
            except (OSError, ValueError, TypeError):
                pass
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        gc.callbacks[:] = []
        sys.meta_path[:] = self.meta_path
        sys.path_hooks[:] = self.path_hooks
        sys.excepthook, sys.displayhook, sys.unraisablehook, sys.breakpointhook = self.hooks
        sys.setrecursionlimit(self.recursion_limit)
        if self.environment:
            os.environ.clear()
            os.environ.update(self.environment)
        _reset_torch()
        state = torch_state()
        for name, now, then in zip(STATE_NAMES, state, self.torch_state):
            if now != then:
                self.note(f"the notebook's cells left PyTorch's {name} changed ({now!r}) and it cannot be "
                          "put back")
        if _python_threads() > 1:
            self.note("a thread the notebook started was still running when the check began (the grader does not "
                      "check while other code runs: stop your threads)")
        if is_dumpable():
            self.note("the notebook changed how the process is protected (prctl)")

    # ------------------------------------------------------------------------------------------ the watch
    def _call(self, frame, event, arg):
        """The global trace function: 'call' events of every Python frame."""
        learner = self.trust.learner
        if not learner(frame.f_code):
            return None
        back = frame.f_back
        if back is not None and learner(back.f_code):
            return None   # the learner's code calling its own: control has not come back to the checker
        self.depth += 1
        if self.depth == 1:
            self.entry = (sys.getprofile(), torch_state())
        frame.f_trace_lines = False
        return self._local

    def _local(self, frame, event, arg):
        if event == "return":
            self.depth -= 1
            if self.depth == 0:
                self._handed_back(arg)
        return self._local

    def _handed_back(self, value) -> None:
        """The learner's code just returned to the checker: nothing it changed on the way may remain."""
        replaced = self.full.restore_builtins()
        if replaced:
            self.note(_replaced(replaced, "while it was being checked"))
        if not self.core.intact():
            changed = self.core.changes()
            if changed:
                self.note(_replaced(changed, "while it was being checked (even if it put them back later)"))
        profile, state = self.entry
        if sys.getprofile() is not profile:
            self.note("your code switched off the watch the check listens with (sys.setprofile)")
        for name, now, then in zip(STATE_NAMES, torch_state(), state):
            if now != then:
                self.note(f"your code left PyTorch's {name} changed when it returned")
        if _python_threads() > 1:
            self.note("your code started a thread while it was being checked")
        if is_dumpable():
            self.note("your code changed how the process is protected (prctl)")
        if gc.callbacks or sys.meta_path != self.meta_path or sys.path_hooks != self.path_hooks:
            self.note("your code installed a hook (gc callback or import hook) while it was being checked")
        if signal.getitimer(signal.ITIMER_REAL)[0] or any(
                signal.getsignal(number) is not handler for number, handler in self.signals.items()):
            self.note("your code installed a signal handler or timer while it was being checked")
        self._inspect_value(value, "what your code returned")
        self._inspect_classes()

    def _inspect_value(self, value, what: str, depth: int = 0) -> None:
        kind = type(value)
        if id(kind) not in self.classes and self._posing(kind):
            return
        if depth < 3 and kind in (list, tuple, dict, set, frozenset):
            items = list(value.values() if kind is dict else value)[:1000]
            for item in items:
                self._inspect_value(item, what, depth + 1)

    def _inspect_classes(self) -> None:
        """Every class the learner made that poses as a value (see the module docstring) is a problem."""
        for cls in _all_classes(VALUE_TYPES):
            if id(cls) not in self.classes:
                self._posing(cls)

    def _posing(self, cls: type) -> bool:
        if id(cls) in self.classes or not self._learners(cls):
            return False
        own = {key for klass in cls.__mro__ if id(klass) not in self.classes for key in vars(klass)}
        if own & POSING_KEYS:
            posing = ", ".join(sorted(own & POSING_KEYS))
            self.note(f"your class `{cls.__qualname__}` pretends to be another class ({posing})")
            return True
        if not issubclass(cls, VALUE_TYPES):
            return False
        base = next(klass for klass in cls.__mro__ if id(klass) in self.classes and issubclass(klass, VALUE_TYPES))
        allowed = PLAIN_CLASS_KEYS if issubclass(cls, STRICT_VALUE_TYPES) else PLAIN_CLASS_KEYS | HARMLESS_VALUE_KEYS
        redefined = sorted(key for key in own - allowed if key.startswith("__") or issubclass(cls, STRICT_VALUE_TYPES))
        if redefined:
            self.note(f"your class `{cls.__qualname__}`, a subclass of {base.__module__}.{base.__qualname__}, "
                      f"redefines {', '.join(redefined[:4])}: the check cannot trust such values — use plain "
                      f"{base.__qualname__}s")
            return True
        return False

    def _learners(self, cls: type) -> bool:
        """Whether ``cls`` was made by the learner's code (module ``__main__``, or a method written by it)."""
        module = cls.__dict__.get("__module__")
        if module == "__main__" or not isinstance(module, str) or module not in sys.modules:
            return True
        for value in vars(cls).values():
            member = getattr(value, "__func__", value)
            code = getattr(member, "__code__", None)
            if type(code) is types.CodeType and self.trust.learner(code) and not code.co_filename.startswith("<string"):
                return True
        return False


BOOKKEEPING = frozenset({"problems", "depth", "active", "entry"})   # what a check itself changes on the guard


def guard_state(guard: "Guard") -> tuple:
    """Everything a verdict of ``guard`` rests on, as one tuple of objects to compare by identity: the guard's
    attributes, the snapshots' tables, the methods and code of the classes and modules of the guard, the snapshot,
    the trust and the provenance check (what the checks themselves use, the snapshot watches). Taken before the first
    learner cell
    runs and compared before and after the check (:mod:`.evaluator`), so that code which reaches the guard — with
    ``gc``, say — and changes it is found."""
    from . import integrity, processes, provenance

    parts: list[object] = [guard, guard.trust, *vars(guard.trust).values()]
    parts += [value for key, value in sorted(vars(guard).items()) if key not in BOOKKEEPING]
    parts += sorted(key for key in vars(guard) if key not in BOOKKEEPING)
    for snapshot in (guard.full, guard.core):
        table = snapshot.table
        parts += [snapshot, table, snapshot.builtins, snapshot.builtins_get, snapshot.builtins_set]
        parts += sorted(vars(snapshot)) + sorted(vars(table))   # no method shadowed by an attribute of its own
        parts += vars(table).values()   # tuples, but for the class sizes and keys it updates itself
    for holder in (Guard, Trust, integrity.Snapshot, integrity._Table, sys.modules[__name__], integrity, processes,
                   provenance):
        for value in list(vars(holder).values()):
            parts.append(value)
            member = getattr(value, "__func__", value)
            if type(member) is types.FunctionType:
                parts += [member.__code__, member.__defaults__, member.__kwdefaults__]
    return tuple(parts)


def _replaced(changed: list[str], when: str = "") -> str:
    shown = ", ".join(f"`{name}`" for name in changed[:3]) + (" …" if len(changed) > 3 else "")
    if when:
        return f"your code replaced {shown} {when}"
    return (f"the notebook replaced {shown}, which the checks rely on; remove the code that assigns to it (grading "
            "needs PyTorch's and the course's own functions).")


def _all_classes(roots=(object,)):
    """Every class below ``roots`` (their subclasses, recursively)."""
    seen: dict[int, type] = {}
    stack = list(roots)
    while stack:
        cls = stack.pop()
        if id(cls) in seen:
            continue
        seen[id(cls)] = cls
        try:
            stack.extend(type.__subclasses__(cls))
        except TypeError:
            stack.extend(cls.__subclasses__())
    return list(seen.values())


def _python_threads() -> int:
    """Threads that run Python code, however they were started (``threading``, ``_thread``, a C thread that
    calls into Python); a library's worker threads that never run Python (OpenMP's) do not count."""
    return len(sys._current_frames())


def _signal_numbers() -> list[int]:
    numbers = []
    for number in range(1, signal.NSIG):
        try:
            signal.getsignal(number)
        except (OSError, ValueError):
            continue
        if number not in (signal.SIGKILL, signal.SIGSTOP):
            numbers.append(number)
    return numbers
