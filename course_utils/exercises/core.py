"""Self-checking exercises: an object bound to the learner's namespace with ``check()``, ``hint()``, ``solution()``.

An exercise is three things, declared once in ``course_utils/exercises/lessonNN.py``:

1. **the contract check** on random inputs: the learner's answer against the package's reference (the package *is*
   the solution) through the shared helpers of :mod:`.asserts` (type, dtype, shape, values, inputs kept, gradients,
   state across calls, modes, stability on large inputs …); a broken contract raises :class:`Mismatch`;
2. **the reference**: a function or block of the package; ``solutions/lessonNN.py`` holds what ``solution()`` prints;
3. **one table of typical mistakes** (:class:`Mistake`): a name, a *variant* (the learner's signature, the bug planted
   in the package's reference), optionally a predicate ``shows(case, got, answer)``, and the message naming the bug.
   On a :class:`Mismatch` the first mistake whose ``shows`` holds, or whose variant gives the learner's output on the
   failing input and the probes, names the bug; without one, the contract's own message is reported.

The tests plug each variant in as the answer: it must be rejected with its own message — no bug is written twice.
Right answers written differently and wrong answers only the contract catches stay in ``tests/mistakes/``. Example::

    def check_weights(ns):                                  # the contract: reference vs learner on random inputs
        check_function(ns["weights"], softmax_weights, [Case("scores (2, 5)", (Draw().randn(2, 5),))], "weights")

    q1 = Exercise(name="Attention weights", variables=("weights",), checker=check_weights,
                  hints=("Which axis must sum to one?", "exponentiate the scores; divide by their sum over the keys"),
                  solution=solution_of("lesson03", "weights"),
                  mistakes=(Mistake("scores returned", "these are the raw scores; the weights are their softmax",
                                    variant=lambda scores: scores),))

and the notebook binds it: ``q1 = lesson03.q1.bind(globals())``, then ``q1.check()``. A *capstone* also has a
``task`` (markdown) and a ``starter``. A declared variant may call the package's reference (``forbidden`` in
:mod:`.asserts` does not count it). Only a ``raise NotImplementedError`` in the learner's own code means "not
attempted"; one raised inside PyTorch or the course is an error in the answer.
"""
from __future__ import annotations

import ast
import dis
import functools
import importlib
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import torch.nn as nn

CORRECT, INCORRECT, NOT_ATTEMPTED = "correct", "incorrect", "not attempted"
WITHHELD = "Withheld in the student edition: work it out with .hint() and .check(), or ask your teacher."


class ExerciseFailure(AssertionError):
    """Raised by a checker; its message tells the learner what is wrong and how to fix it."""


class NotAttempted(Exception):
    """The learner's own ``raise NotImplementedError`` seen where Python cannot show it (another process)."""


class Mismatch(ExerciseFailure):
    """The learner's ``answer`` broke the contract on ``case`` (anything with a ``description``), giving ``got``.
    ``run(answer, case)`` reruns an answer as the check did; ``same(a, b)`` compares outputs; a variant names the
    mistake only if it also agrees with the answer on ``probes`` (and differs from ``expected``, where known)."""

    def __init__(self, message: str, case: Any, got: Any, answer: Any, run: Callable[[Any, Any], Any],
                 same: Callable[[Any, Any], bool], probes: tuple = (), expected: Any = None) -> None:
        super().__init__(message)
        self.case, self.got, self.answer, self.run, self.same, self.probes = case, got, answer, run, same, probes
        self.expected = expected


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer, declared once beside its exercise (see the module docstring): ``variant`` the answer
    with the bug planted, ``shows(case, got, answer)`` an optional predicate, ``message`` the bug and its fix."""

    name: str
    message: str
    variant: Any
    shows: Callable[[Any, Any, Any], bool] | None = None

    def __post_init__(self) -> None:
        here = str(Path(__file__).resolve().parent)   # declared in the exercise modules only
        PLANTED.update(code for code in code_objects(self.variant, nested=True)
                       if str(Path(code.co_filename).resolve()).startswith(here))

    def names(self, failure: Mismatch) -> bool:
        """Whether ``shows`` holds, or the variant gives the learner's output on the failing input and every probe."""
        try:
            if self.shows is not None and self.shows(failure.case, failure.got, failure.answer):
                return True
        except Exception:  # noqa: BLE001 - a predicate that cannot judge this output does not name the mistake
            pass
        try:
            planted = failure.run(self.variant, failure.case)
            if not failure.same(failure.got, planted) or (failure.expected is not None
                                                          and failure.same(planted, failure.expected)):
                return False
            return all(failure.same(failure.run(failure.answer, probe), failure.run(self.variant, probe))
                       for probe in failure.probes)
        except Exception:  # noqa: BLE001 - a variant that cannot run on this input does not name the mistake
            return False


PLANTED: set = set()
"""Code objects of every declared variant: a call they make into the package's reference is not the learner's."""


def code_objects(obj: Any, nested: bool = False) -> list:
    """The code objects of ``obj`` (a function, or a class's own methods); ``nested``: their nested functions' too."""
    functions = ([m for klass in obj.__mro__ if klass not in (object, nn.Module) for m in vars(klass).values()]
                 if isinstance(obj, type) else [obj])
    codes = []
    for function in functions:
        function = function.fget if isinstance(function, property) else getattr(function, "__func__", function)
        code = getattr(inspect.unwrap(function) if callable(function) else function, "__code__", None)
        stack = [code] if code is not None else []
        while stack:
            code = stack.pop()
            codes.append(code)
            stack.extend(c for c in code.co_consts if nested and inspect.iscode(c))
    return codes


def raised_by_the_learner(error: BaseException) -> bool:
    """Whether ``error`` came from a ``raise`` statement of the learner's own code (not from PyTorch or the course)."""
    traceback = error.__traceback__
    if traceback is None:
        return False
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    code = traceback.tb_frame.f_code
    if not _written_by_the_learner(code.co_filename):
        return False
    return any(i.offset == traceback.tb_lasti and i.opname == "RAISE_VARARGS" for i in dis.get_instructions(code))


@functools.lru_cache(maxsize=None)
def _solution_module_source(lesson: str) -> tuple[str, ast.Module] | None:
    try:
        module = importlib.import_module(f"{__package__}.solutions.{lesson}")
    except ModuleNotFoundError:  # the student edition ships no solutions
        return None
    source = inspect.getsource(module)
    return source, ast.parse(source)


def solution_of(lesson: str, *names: str) -> str:
    """The named top-level definitions of ``solutions/<lesson>.py`` with the imports they use, in the order given
    (``"lesson04.FeedForward"``: another lesson's); :data:`WITHHELD` where the solutions are not shipped."""
    parts = [tuple(name.split(".", 1)) if "." in name else (lesson, name) for name in names]
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
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}   # `torch` of torch.x included
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
    """Whether a frame of ``error``'s traceback is the learner's (not the package's, ``course_code`` or a library's)."""
    traceback = error.__traceback__
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if code not in course_code and _written_by_the_learner(code.co_filename):
            return True
        traceback = traceback.tb_next
    return False


def _written_by_the_learner(filename: str) -> bool:
    """Code run with exec (``<answer to …>``), a notebook cell or a learner's file; not the package's or a library's."""
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
    mistakes: tuple[Mistake, ...] = ()   # the typical mistakes, consulted in order when the contract check fails

    def planted(self, name: str) -> Any:
        """The variant of the declared mistake ``name``: the answer with that bug (the tests plug it in)."""
        found = [m.variant for m in self.mistakes if m.name == name]
        if not found:
            raise LookupError(f"{self.name!r} declares no mistake {name!r}")
        return found[0]

    def diagnose(self, failure: Mismatch) -> str:
        """The message of the first declared mistake that explains ``failure``, else the contract's own."""
        for mistake in self.mistakes:
            if mistake.names(failure):
                return f"on {failure.case.description}: {mistake.message}."
        return str(failure)

    def evaluate(self, namespace: Mapping[str, Any]) -> Result:
        """Check the learner's ``namespace`` without printing (used by ``check()`` and by the tests)."""
        missing = [v for v in self.variables if namespace.get(v) is Ellipsis or namespace.get(v) is None]
        if missing:
            return Result(NOT_ATTEMPTED, f"Not attempted yet: define {', '.join(f'`{v}`' for v in missing)} "
                                         "in the cell above, run it, then run this check again.")
        try:
            self.checker(namespace)
        except Mismatch as failure:
            return Result(INCORRECT, self.diagnose(failure))
        except ExerciseFailure as failure:
            return Result(INCORRECT, str(failure))
        except (NotAttempted, NotImplementedError) as error:
            if isinstance(error, NotAttempted) or raised_by_the_learner(error):
                return Result(NOT_ATTEMPTED, "Not attempted yet: replace `raise NotImplementedError` with your code.")
            return Result(INCORRECT, f"Your code raised NotImplementedError ({error or 'no message'}) from inside "
                                     "PyTorch or the course: an operation your code calls does not support these "
                                     "arguments — this is an error in the answer, not a missing one.")
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
