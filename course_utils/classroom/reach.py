"""Does the code above a check reach into Python's machinery? A static scan, made in the grader's own process.

A check has to run the learner's code in the process that checks it (:mod:`.guard`), so code written against the
grader itself — finding its objects with ``gc``, rewriting memory with ``ctypes``, tracing its frames, forging its
report on a file descriptor — could in principle fake a result there. No exercise of the course needs any of that,
so the grader looks for it in every cell above an exercise's check point — they all ran in the process that checks
it (statements of the course's own notebook excepted) — and does not count a ``correct`` checked after it. What
counts as reaching in:

* importing, or naming as an attribute, modules that reach the interpreter, the process or other processes
  (``gc``, ``ctypes``, ``sys``, ``inspect``, ``threading``, ``signal``, ``os``, ``subprocess``, ``importlib``,
  ``pickle`` …) or PyTorch's hooks into its own dispatch (``torch.overrides``, ``torch.library``,
  ``torch.utils._python_dispatch``, ``torch._C`` …);
* running code from text (``exec``, ``eval``, ``compile``, ``__import__``, IPython magics other than ``%config``,
  ``%matplotlib``, ``%time`` and ``%timeit``, shell escapes);
* reflection that leaves the learner's own objects: ``globals()`` (but ``q1 = lessonNN.q1.bind(globals())`` and
  ``globals()["name"]`` for a plain name, which is the name itself),
  ``locals()``, ``vars()``, ``getattr``/``setattr``/``delattr`` with a computed or dunder name on anything but
  ``self``, any dunder
  attribute but a handful (``super().__init__``, ``__name__``, ``__class__.__name__`` …), dunder strings, frame and
  code attributes (``f_back``, ``__code__`` …), and defining the dunders that change how a value compares or
  dispatches (``__eq__``, ``__torch_function__``, ``__class__`` …).

A determined attacker can hide code from any static scan; together with the guard's run-time watch it raises the
bar, and what remains is named in the threat model (SECURITY.md).
"""
from __future__ import annotations

import ast
import functools
import re
import threading
from pathlib import Path

from IPython.core.inputtransformer2 import TransformerManager

from .cells import notebook_lesson, parse_cell

REACHING_MODULES = frozenset({
    "gc", "ctypes", "sys", "inspect", "threading", "_thread", "multiprocessing", "concurrent", "subprocess", "signal",
    "atexit", "importlib", "builtins", "code", "codeop", "types", "marshal", "pickle", "dill", "cloudpickle",
    "shelve", "copyreg", "weakref", "faulthandler", "tracemalloc", "resource", "mmap", "pty", "socket", "os",
    "posix", "nt", "runpy", "pdb", "bdb", "trace", "cProfile", "profile", "sysconfig", "site", "ipykernel",
    "jupyter_client", "zmq", "IPython", "traitlets", "dis", "opcode", "_ctypes", "fcntl", "select", "selectors",
    "asyncio", "_io"})
REACHING_TORCH = ("torch._", "torch.overrides", "torch.library", "torch.utils._", "torch.utils.hooks",
                  "torch.fx", "torch.jit", "torch.package", "torch.compile", "torch.multiprocessing",
                  "torch.utils.cpp_extension", "numpy.ctypeslib", "numpy.lib.format")
REACHING_CALLS = frozenset({"exec", "eval", "compile", "__import__", "locals", "vars", "breakpoint", "globals",
                            "open", "input", "help", "memoryview"})
ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "delattr"})
REACHING_ATTRIBUTES = frozenset({
    "ctypes", "ctypeslib", "_getframe", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace",
    "tb_frame", "tb_next", "gi_frame", "cr_frame", "ag_frame", "gi_code", "co_code", "co_consts", "settrace",
    "setprofile", "gettrace", "getprofile", "meta_path", "path_hooks", "addaudithook", "get_objects",
    "get_referrers", "get_referents", "_current_frames", "environ", "putenv", "fork", "setsid", "kill", "killpg",
    "_exit", "system", "popen", "dup2", "prctl", "attrgetter", "methodcaller", "import_module", "TorchFunctionMode",
    "TorchDispatchMode", "BaseTorchFunctionMode", "set_default_device", "set_default_dtype", "set_grad_enabled",
    "Library", "register_kernel", "custom_op", "impl", "load_library", "weights_only", "allow_pickle",
    "run_line_magic", "run_cell_magic", "system_piped", "getoutput", "run_cell", "ex", "ev", "user_ns",
    "sys", "os", "gc", "builtins", "importlib", "inspect", "subprocess", "threading"})
SAFE_DUNDERS = frozenset({"__init__", "__name__", "__qualname__", "__doc__", "__module__", "__main__",
                          "__version__", "__len__", "__iter__", "__next__", "__enter__", "__exit__", "__call__",
                          "__repr__", "__str__", "__getitem__", "__contains__", "__post_init__", "__future__",
                          "__all__", "__file__"})
READ_ONLY_DUNDERS = frozenset({"__class__"})   # ``self.__class__.__name__`` style reads are common
REACHING_DEFINITIONS = frozenset({
    "__torch_function__", "__torch_dispatch__", "__array_function__", "__array_ufunc__", "__array__",
    "__array_priority__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__",
    "__int__", "__index__", "__float__", "__complex__", "__class__", "__instancecheck__", "__subclasscheck__",
    "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__del__", "__init_subclass__", "__set_name__",
    "__class_getitem__", "__subclasshook__", "__get__", "__set__", "__delete__", "__reduce__", "__reduce_ex__",
    "__setstate__", "__mro_entries__", "__prepare__", "__new__", "__builtins__", "__code__", "__globals__",
    "__closure__", "__defaults__", "__kwdefaults__", "__dict__", "__module__", "__slots__"})
SAFE_MAGICS = frozenset({"config", "matplotlib", "time", "timeit"})
DUNDER = re.compile(r"__\w+__")


def _dunder(name: str) -> bool:
    return bool(DUNDER.fullmatch(name))


def _module_reaches(name: str) -> bool:
    return (name.split(".")[0] in REACHING_MODULES or name.startswith(REACHING_TORCH) or name == "torch._C"
            or name.startswith("course_utils.classroom"))


class _Scan(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[str] = []

    def flag(self, what: str) -> None:
        if what not in self.found:
            self.found.append(what)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _module_reaches(alias.name):
                self.flag(f"`import {alias.name}`")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}" if module else alias.name
            if node.level == 0 and (_module_reaches(module) or _module_reaches(full) or alias.name == "*"
                                    and module.startswith("torch")):
                self.flag(f"`from {module} import {alias.name}`")
            elif alias.name in REACHING_ATTRIBUTES or alias.name in REACHING_CALLS or _dunder(alias.name):
                self.flag(f"`from {module} import {alias.name}`")

    def visit_Name(self, node: ast.Name) -> None:
        if self._allowed_call:
            self._allowed_call = False
        elif node.id in ATTRIBUTE_CALLS:
            self.flag(f"`{node.id}` with a computed or special name")
        elif node.id in REACHING_CALLS or node.id in ("get_ipython", "__builtins__"):
            self.flag(f"`{node.id}()`" if node.id == "globals" else f"`{node.id}`")
        elif _dunder(node.id) and node.id not in SAFE_DUNDERS:
            self.flag(f"`{node.id}`")

    _allowed_call = False

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ATTRIBUTE_CALLS and len(node.args) >= 2:
            owner, name = node.args[0], node.args[1]
            plain_name = (isinstance(name, ast.Constant) and isinstance(name.value, str) and not _dunder(name.value)
                          and name.value not in REACHING_ATTRIBUTES)
            if plain_name or (isinstance(owner, ast.Name) and owner.id == "self"):
                self._allowed_call = True   # getattr(model, "weight"), setattr(self, name, layer)
        if isinstance(func, ast.Name) and func.id == "globals" and self._binding_argument:
            self._allowed_call = True
        if self._magic(node):
            return
        for keyword in node.keywords:
            if keyword.arg in ("weights_only", "allow_pickle") and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is (keyword.arg == "weights_only")):
                self.flag(f"`{keyword.arg}={ast.unparse(keyword.value)}`")
        self.visit(func)
        for argument in node.args:
            self._binding_argument = (isinstance(func, ast.Attribute) and func.attr == "bind")
            self.visit(argument)
            self._binding_argument = False
        for keyword in node.keywords:
            self.visit(keyword.value)

    _binding_argument = False

    def visit_Subscript(self, node: ast.Subscript) -> None:
        """``globals()["f"]`` for a plain name (no dunder, nothing the scan names) is the name ``f`` itself."""
        value, key = node.value, node.slice
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "globals"
                and not value.args and not value.keywords and isinstance(key, ast.Constant)
                and isinstance(key.value, str) and key.value.isidentifier() and not _dunder(key.value)
                and key.value not in REACHING_CALLS | ATTRIBUTE_CALLS | REACHING_ATTRIBUTES | REACHING_MODULES
                and key.value != "get_ipython"):
            return
        self.generic_visit(node)

    def _magic(self, node: ast.Call) -> bool:
        """``get_ipython().run_line_magic('config', …)``: the magics that only configure or time are allowed (the
        code a ``%time``/``%timeit`` runs is scanned too)."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython"):
            return False
        arguments = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        if func.attr in ("run_line_magic", "run_cell_magic") and arguments and arguments[0] in SAFE_MAGICS:
            for text in arguments[1:]:
                self.found.extend(what for what in reaching_in(text) if what not in self.found)
            return True
        self.flag(f"an IPython magic or shell command (`{func.attr}`)")
        return True

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = node.attr
        dotted = _dotted(node)
        if dotted and _module_reaches(dotted) and dotted.split(".")[0] in ("torch", "numpy", "np"):
            self.flag(f"`{dotted}`")
        elif name in REACHING_ATTRIBUTES:
            self.flag(f"`.{name}`")
        elif _dunder(name) and name not in SAFE_DUNDERS and not (
                name in READ_ONLY_DUNDERS and isinstance(node.ctx, ast.Load)):
            self.flag(f"`.{name}`")
        self.visit(node.value)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and any(match not in SAFE_DUNDERS for match in DUNDER.findall(node.value)):
            self.flag(f"the string {node.value[:30]!r}")

    def _definition(self, name: str) -> None:
        if name in REACHING_DEFINITIONS:
            self.flag(f"defining `{name}`")

    def visit_FunctionDef(self, node) -> None:
        self._definition(node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for statement in node.body:
            targets = statement.targets if isinstance(statement, ast.Assign) else \
                [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                if isinstance(target, ast.Name):
                    self._definition(target.id)
        for keyword in node.keywords:
            if keyword.arg == "metaclass":
                self.flag("a metaclass")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            if _dunder(name):
                self.flag(f"`global {name}`")


def _syntax_error(text: str) -> bool:
    """Whether ``text`` fails to parse for a plain syntax error (such a cell runs nothing anywhere), rather than for
    being too deep to parse. In a thread of its own, as :func:`~.cells.parse_cell` explains."""
    outcome = {"syntax": False}

    def parse() -> None:
        try:
            ast.parse(text)
        except SyntaxError:
            outcome["syntax"] = True
        except (RecursionError, MemoryError, ValueError, SystemError):
            pass

    worker = threading.Thread(target=parse, name="course-reach-parse")
    worker.start()
    worker.join()
    return outcome["syntax"]


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append({"np": "numpy"}.get(node.id, node.id))
        return ".".join(reversed(parts))
    return ""


def _statements(source: str) -> list[ast.stmt]:
    tree = parse_cell(source)
    return list(tree.body) if tree is not None else []


def _key(statement: ast.stmt) -> str:
    return ast.unparse(statement)


def reaching_in(source: str, known: frozenset[str] = frozenset()) -> list[str]:
    """What in ``source`` (IPython cell text) reaches into Python's machinery, skipping statements in ``known``.
    A cell the grader cannot parse counts as reaching in (it may hide anything)."""
    try:
        text = TransformerManager().transform_cell(source)
    except (SyntaxError, ValueError):
        return ["a cell the grader cannot read"]
    if not text.strip():
        return []
    tree = parse_cell(source)
    if tree is None:
        return [] if _syntax_error(text) else ["a cell too deep for the grader to read"]
    scan = _Scan()
    for statement in tree.body:
        if _key(statement) not in known:
            scan.visit(statement)
    return scan.found


def reaching(sources: list[str], known: frozenset[str] = frozenset()) -> list[str]:
    """:func:`reaching_in` over several cells, each construct named once."""
    found: list[str] = []
    for source in sources:
        found.extend(what for what in reaching_in(source, known) if what not in found)
    return found


@functools.lru_cache(maxsize=None)
def course_statements(lesson: str) -> frozenset[str]:
    """The statements of the course's own notebook for ``lesson`` (and of every exercise's starter): a learner who
    keeps them is not flagged for what the course itself does (``import inspect`` to show the package's source …)."""
    import nbformat

    from .cells import lesson_exercises

    root = Path(__file__).resolve().parent.parent.parent / "notebooks"
    found: set[str] = set()
    for path in sorted(root.glob("*.ipynb")) if root.is_dir() else ():
        try:
            notebook = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001 - an unreadable course notebook exempts nothing
            continue
        if notebook_lesson(notebook) != lesson:
            continue
        for cell in notebook.cells:
            if cell.cell_type == "code":
                found.update(_key(statement) for statement in _statements(cell.source))
    for exercise in lesson_exercises(lesson).values():
        found.update(_key(statement) for statement in _statements(exercise.starter or ""))
    return frozenset(found)
