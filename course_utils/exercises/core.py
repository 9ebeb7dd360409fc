"""Self-checking exercises: an object bound to the learner's namespace with ``check()``, ``hint()``, ``solution()``.

A lesson module defines exercises once::

    q1 = Exercise(
        name="Scaled scores",
        variables=("scaled_scores",),           # what the learner must define in the notebook
        checker=check_scaled_scores,            # raises ExerciseFailure("what is wrong and how to fix it")
        hints=("What makes the softmax saturate as d_k grows?",          # hint(): a nudge, no code
               "scores = Q Kᵀ; divide by the square root of d_k; …"),   # hint(2): the steps in pseudo-code
        solution=solution_of("lesson03", "scaled_scores"),
    )

and the notebook binds it: ``q1 = lesson03.q1.bind(globals())``, then ``q1.check()``. Reference solutions are real
code in ``course_utils/exercises/solutions/lessonNN.py`` (linted and tested like the package); :func:`solution_of`
turns the named definitions into self-contained code (their imports included) that ``solution()`` prints and the
tests run. A *capstone* (the learner writes a whole block) also has a ``task`` (markdown) and a ``starter`` skeleton
for the notebook; its checker compares the learner's block with the package's, weights copied across, on random
configurations (see :mod:`.asserts`).
"""
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

CORRECT, INCORRECT, NOT_ATTEMPTED = "correct", "incorrect", "not attempted"


WITHHELD = "Withheld in the student edition: work it out with .hint() and .check(), or ask your teacher."


class ExerciseFailure(AssertionError):
    """Raised by a checker; its message tells the learner what is wrong and how to fix it."""


@functools.lru_cache(maxsize=None)
def _solution_module_source(lesson: str) -> tuple[str, ast.Module] | None:
    try:
        module = importlib.import_module(f"{__package__}.solutions.{lesson}")
    except ModuleNotFoundError:  # the student edition ships no solutions
        return None
    source = inspect.getsource(module)
    return source, ast.parse(source)


def solution_of(lesson: str, *names: str) -> str:
    """Self-contained code of the named top-level definitions of ``solutions/<lesson>.py``: the imports they use,
    then each definition's source, in the order given. ``"lesson04.FeedForward"`` takes a definition from another
    lesson's solutions. Where the solutions are not shipped (the student edition), the text says it is withheld."""
    parts: list[tuple[str, str]] = [(name.split(".")[0], name.split(".")[1]) if "." in name else (lesson, name)
                                    for name in names]
    imports: list[str] = []
    bodies: list[str] = []
    for module_name, name in parts:
        loaded = _solution_module_source(module_name)
        if loaded is None:
            return WITHHELD
        source, tree = loaded
        lines = source.splitlines()
        found = [node for node in tree.body if getattr(node, "name", None) == name
                 or any(getattr(t, "id", None) == name for t in getattr(node, "targets", ()))]
        if not found:
            raise LookupError(f"solutions/{module_name}.py defines no {name!r}")
        node = found[0]
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        bodies.append("\n".join(lines[start - 1:node.end_lineno]))
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
            n.value.id for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
        for statement in tree.body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)) and getattr(statement, "level", 0) == 0:
                bound = {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
                text = ast.get_source_segment(source, statement)
                if bound & used and text not in imports:
                    imports.append(text)
    plain = sorted(line for line in imports if line.startswith("import "))
    header = "\n\n".join(filter(None, ("\n".join(plain), "\n".join(sorted(set(imports) - set(plain))))))
    return (header + "\n\n\n" if header else "") + "\n\n\n".join(bodies) + "\n"


def learner_frames(error: BaseException, course_code: tuple = ()) -> bool:
    """Whether ``error`` was raised while the learner's own code was running (a frame of the traceback is not the
    course's — its package or ``course_code`` — nor an installed library's): only then is it reported as "your code
    raised"."""
    traceback = error.__traceback__
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if code not in course_code and _written_by_the_learner(code.co_filename):
            return True
        traceback = traceback.tb_next
    return False


def _written_by_the_learner(filename: str) -> bool:
    """Code typed as text and run with exec (``<answer to …>``), a notebook cell or a learner's own file — not the
    course's package, the standard library or an installed package."""
    if filename.startswith("<"):  # "<string>": code Python generates itself (dataclass and namedtuple methods)
        return not filename.startswith(("<frozen", "<string>"))
    path = str(Path(filename).resolve())
    package = str(Path(__file__).resolve().parent.parent)
    libraries = tuple(str(Path(p).resolve()) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    return not path.startswith((package, *libraries)) and "site-packages" not in path


@dataclass(frozen=True)
class Result:
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == CORRECT


def is_placeholder(value: Any) -> bool:
    """``...`` or ``None`` mean "the learner has not written this yet"."""
    return value is Ellipsis or value is None


@dataclass(frozen=True)
class Exercise:
    name: str
    variables: tuple[str, ...]
    checker: Callable[[Mapping[str, Any]], None]
    hints: tuple[str, ...]   # hint(): a nudge without code; hint(2): the steps in pseudo-code
    solution: str
    success: str = "Correct!"
    task: str = ""      # capstones: the task as notebook markdown (what to build, names, formula, how it is checked)
    starter: str = ""   # capstones: the skeleton the notebook shows, left unsolved ("not attempted" until filled in)

    def evaluate(self, namespace: Mapping[str, Any]) -> Result:
        """Check the learner's ``namespace`` without printing (used by ``check()`` and by the tests)."""
        missing = [v for v in self.variables if is_placeholder(namespace.get(v))]
        if missing:
            return Result(NOT_ATTEMPTED, f"Not attempted yet: define {', '.join(f'`{v}`' for v in missing)} "
                                         "in the cell above, run it, then run this check again.")
        try:
            self.checker(namespace)
        except ExerciseFailure as failure:
            return Result(INCORRECT, str(failure))
        except NotImplementedError:
            return Result(NOT_ATTEMPTED, "Not attempted yet: replace `raise NotImplementedError` with your code.")
        except Exception as error:  # never crash the notebook
            if learner_frames(error, (getattr(self.checker, "__code__", None),)):
                return Result(INCORRECT, f"Your code raised {type(error).__name__}: {error}")
            return Result(INCORRECT, f"The checker could not compare your answer ({type(error).__name__}: {error}). "
                                     "Check that it returns what the task asks for (type and shape); if it does, "
                                     "this is a bug in the course — please report it.")
        return Result(CORRECT, self.success)

    @property
    def hint(self) -> str:
        """The first hint: a nudge (``hints[1]`` is the step-by-step pseudo-code)."""
        return self.hints[0]

    def evaluate_code(self, code: str, prelude: str = "") -> Result:
        """Run ``prelude + code`` (e.g. a typical wrong answer) in a fresh namespace and evaluate it."""
        scope: dict[str, Any] = {}
        exec(compile(prelude + code, f"<answer to {self.name}>", "exec"), scope)
        return self.evaluate(scope)

    def run_solution(self, namespace: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Execute the reference solution in a copy of ``namespace`` and return the resulting namespace."""
        if self.solution == WITHHELD:
            raise LookupError(WITHHELD)
        scope = dict(namespace or {})
        exec(compile(self.solution, f"<solution of {self.name}>", "exec"), scope)
        return scope

    def bind(self, namespace: dict[str, Any]) -> "BoundExercise":
        """Attach to the notebook's ``globals()`` so ``check()`` sees the learner's variables."""
        return BoundExercise(self, namespace)


class BoundExercise:
    """An :class:`Exercise` attached to a notebook namespace."""

    SYMBOLS = {CORRECT: "✅", INCORRECT: "❌", NOT_ATTEMPTED: "✍️"}

    def __init__(self, exercise: Exercise, namespace: dict[str, Any]) -> None:
        self.exercise = exercise
        self.namespace = namespace

    def check(self) -> None:
        """Print feedback on the learner's answer. Never raises (``Exercise.evaluate`` returns the result)."""
        result = self.exercise.evaluate(self.namespace)
        print(f"{self.SYMBOLS[result.status]} {self.exercise.name}: {result.message}")

    def hint(self, level: int = 1) -> None:
        """``hint()`` a nudge, ``hint(2)`` the steps in pseudo-code; ``solution()`` shows the code."""
        hints = self.exercise.hints
        level = min(max(int(level), 1), len(hints))
        more = (f"  (More: .hint({level + 1}).)" if level < len(hints) else "  (Still stuck? .solution().)")
        print(f"💡 Hint {level} ({self.exercise.name}): {hints[level - 1]}{more}")

    def solution(self) -> None:
        print(f"📖 Solution ({self.exercise.name}):\n{self.exercise.solution}")

    def __repr__(self) -> str:
        return f"<exercise {self.exercise.name!r}: run .check(), .hint() or .solution()>"
