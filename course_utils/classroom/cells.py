"""Reading a course notebook's code cells: what each defines and uses, and which are exercise cells.

Three kinds of exercise cell, as the course ships them:

* the **answer cell** of ``qN``: binds the exercise's variables to a placeholder (``name = ...`` or a function whose
  body is ``raise NotImplementedError``); the learner replaces it;
* the **check cell** of ``qN``: nothing but ``qN.check()`` (and ``qN.hint()`` / ``qN.solution()``) calls;
* everything else (demonstrations of a wrong answer, the cell that binds ``qN = lessonNN.qN.bind(globals())``).

Cells are IPython source; magics (``%config …``) are turned into Python before parsing.
"""
from __future__ import annotations

import ast
import builtins
import functools
import importlib
import symtable
import threading
from dataclasses import dataclass, field

from IPython.core.inputtransformer2 import TransformerManager

from course_utils.exercises.core import Exercise

CHECK_METHODS = {"check", "hint", "solution"}
BUILTIN_NAMES = frozenset(dir(builtins))


@functools.lru_cache(maxsize=4096)
def parse_cell(source: str) -> ast.Module | None:
    """The cell as a Python syntax tree, or ``None`` if it is not valid (IPython) Python — or too deeply nested
    to analyse (``1 + 1 + …`` thousands of times exhausts the parser's recursion).

    The parse runs in a thread of its own: after a ``RecursionError`` CPython 3.11's parser leaves its thread's
    recursion count wrong, and every later ``ast.parse`` in that thread fails — one hostile cell must not break the
    analysis of every notebook graded after it."""
    try:
        text = TransformerManager().transform_cell(source)
    except (SyntaxError, ValueError):
        return None
    outcome: dict[str, ast.Module | None] = {"tree": None}

    def parse() -> None:
        try:
            outcome["tree"] = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
            pass

    worker = threading.Thread(target=parse, name="course-parse-cell")
    worker.start()
    worker.join()
    return outcome["tree"]


def lesson_exercises(lesson: str) -> dict[str, Exercise]:
    """``{"q1": Exercise, …}`` of lesson ``"03"`` (module ``course_utils.exercises.lesson03``), in order."""
    module = importlib.import_module(f"course_utils.exercises.lesson{lesson}")
    found = {name: value for name, value in vars(module).items() if isinstance(value, Exercise)}
    return dict(sorted(found.items(), key=lambda item: (len(item[0]), item[0])))


def notebook_lesson(notebook) -> str | None:
    """The lesson a notebook belongs to (``metadata.course.lesson``, e.g. ``"03"``), whatever its file name."""
    course = notebook.get("metadata", {}).get("course") or {}
    lesson = course.get("lesson") if isinstance(course, dict) else None
    return lesson if isinstance(lesson, str) else None


@dataclass
class CellNames:
    """Top-level names a cell binds for sure (``defines``), may change (``touches``), and reads (``uses``)."""
    defines: set[str] = field(default_factory=set)
    touches: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)
    imports: set[str] = field(default_factory=set)
    called_on: set[str] = field(default_factory=set)  # ``name.method(…)``: may change ``name`` unless a module
    opaque: bool = False  # a star import or unparsable source: it may define anything


def _target_names(target: ast.expr) -> tuple[set[str], set[str]]:
    """(names bound, names mutated) by an assignment target."""
    if isinstance(target, ast.Name):
        return {target.id}, set()
    if isinstance(target, (ast.Tuple, ast.List)):
        bound, mutated = set(), set()
        for element in target.elts:
            b, m = _target_names(element.value if isinstance(element, ast.Starred) else element)
            bound |= b
            mutated |= m
        return bound, mutated
    base = target
    while isinstance(base, (ast.Attribute, ast.Subscript, ast.Starred)):
        base = base.value
    return set(), ({base.id} if isinstance(base, ast.Name) else set())


def cell_names(source: str) -> CellNames:
    """What a cell defines and uses, over-approximated so that a program slice never misses a needed cell."""
    tree = parse_cell(source)
    names = CellNames()
    if tree is None:
        names.opaque = True
        return names
    for statement in tree.body:
        unconditional = isinstance(statement, (ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef,
                                               ast.ClassDef, ast.Import, ast.ImportFrom))
        bound: set[str] = set()
        for node in ast.walk(statement):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name == "*":
                        names.opaque = True
                    else:
                        bound.add(alias.asname or alias.name.split(".")[0])
                        names.imports.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.withitem,
                                   ast.NamedExpr)):
                targets = (node.targets if isinstance(node, ast.Assign) else
                           [node.optional_vars] if isinstance(node, ast.withitem) else [node.target])
                for target in targets:
                    if target is not None:
                        b, m = _target_names(target)
                        bound |= b
                        names.touches |= m
            elif isinstance(node, ast.Global):
                names.touches |= set(node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                base = node.func.value
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(base, ast.Name):  # model.load_state_dict(…), items.append(…): may change it
                    names.called_on.add(base.id)
        if unconditional and not isinstance(statement, ast.AugAssign):
            names.defines |= bound
        else:
            names.touches |= bound
    try:
        names.uses = _global_reads(TransformerManager().transform_cell(source)) - BUILTIN_NAMES
    except SyntaxError:  # e.g. a top-level ``await``: valid in IPython, opaque to the symbol table
        names.opaque = True
    return names


def _global_reads(code: str) -> set[str]:
    """Module-level names the code reads, at top level or from inside its functions and classes (``symtable``)."""
    reads: set[str] = set()
    scopes = [symtable.symtable(code, "<cell>", "exec")]
    while scopes:
        scope = scopes.pop()
        for symbol in scope.get_symbols():
            is_module_level = scope.get_type() == "module" or symbol.is_global() or (
                scope.get_type() == "class" and not symbol.is_assigned())
            if symbol.is_referenced() and is_module_level:
                reads.add(symbol.get_name())
        scopes.extend(scope.get_children())
    return reads


def checked_exercises(source: str) -> set[str]:
    """``{"q1"}`` if the cell is a check cell (only ``q1.check()``/``.hint()``/``.solution()`` calls, optionally after
    the binding ``q1 = lessonNN.q1.bind(globals())`` that capstone check cells start with), else empty."""
    tree = parse_cell(source)
    if tree is None or not tree.body:
        return set()
    checked = set()
    for statement in tree.body:
        if _is_binding(statement):
            continue
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr in CHECK_METHODS and isinstance(call.func.value, ast.Name)):
            return set()
        if call.func.attr == "check":
            checked.add(call.func.value.id)
    return checked


def _is_binding(statement: ast.stmt) -> bool:
    """``qN = lessonNN.qN.bind(globals())``."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Call)):
        return False
    func = statement.value.func
    return (isinstance(func, ast.Attribute) and func.attr == "bind" and isinstance(func.value, ast.Attribute)
            and func.value.attr == statement.targets[0].id and isinstance(func.value.value, ast.Name)
            and func.value.value.id.startswith("lesson"))


def _is_placeholder_statement(statement: ast.stmt, variables: set[str]) -> bool:
    if isinstance(statement, ast.Assign):
        value = statement.value
        is_empty = isinstance(value, ast.Constant) and value.value in (Ellipsis, None)
        return is_empty and all(isinstance(t, ast.Name) and t.id in variables for t in statement.targets)
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)) and statement.name in variables:
        body = [s for s in statement.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        return all(isinstance(s, ast.Raise) and "NotImplementedError" in ast.unparse(s) for s in body)
    return False


def is_answer_cell(source: str, variables: tuple[str, ...]) -> bool:
    """True for the course's untouched answer cell of an exercise: every statement is a placeholder (``name = ...``,
    or a def/class whose body raises NotImplementedError), one of them for the exercise's own names; the others are
    the predictions its check reads beside them."""
    tree = parse_cell(source)
    if not (tree and tree.body):
        return False
    names = {target.id for s in tree.body if isinstance(s, ast.Assign) for target in s.targets
             if isinstance(target, ast.Name)}
    names |= {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
    return (all(_is_placeholder_statement(s, names) for s in tree.body)
            and any(_is_placeholder_statement(s, set(variables)) for s in tree.body))


def answer_cells(notebook, lesson: str) -> dict[str, int]:
    """``{"q1": cell index, …}``: the placeholder cell of each exercise in the course's own notebook."""
    found = {}
    for key, exercise in lesson_exercises(lesson).items():
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "code" and is_answer_cell(cell.source, exercise.variables):
                found[key] = index
    return found


def check_points(notebook, exercise_keys) -> dict[str, int]:
    """Where each exercise is graded: the index of its last check cell, or ``len(cells)`` (the end) if none is left."""
    points = {key: len(notebook.cells) for key in exercise_keys}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            for key in checked_exercises(cell.source) & set(points):
                points[key] = index
    return points


def program_slice(sources: list[str], needed_at: dict[int, set[str]]) -> set[int]:
    """Indices of the cells that can affect the names needed at each position (``{position: names}``).

    Walks backwards: a cell is kept if it defines or touches a needed name (or is opaque); the names it reads become
    needed before it, and names it surely defines stop being needed before it.
    """
    every_name = [cell_names(source) for source in sources]
    modules = set().union(*(names.imports for names in every_name))
    kept: set[int] = set()
    needed: set[str] = set()
    for index in range(len(sources) - 1, -1, -1):
        needed |= needed_at.get(index + 1, set())
        names = every_name[index]
        touches = names.touches | (names.called_on - modules)
        if names.opaque or needed & (names.defines | touches):
            kept.add(index)
            needed = (needed - (names.defines - touches)) | names.uses
    return kept
