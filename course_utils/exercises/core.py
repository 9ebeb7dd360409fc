"""Self-checking exercises: an object bound to the learner's namespace with ``check()``, ``hint()``, ``solution()``.

A lesson module defines exercises once::

    q1 = Exercise(
        name="Scaled scores",
        variables=("scaled_scores",),           # what the learner must define in the notebook
        checker=check_scaled_scores,            # raises ExerciseFailure("what is wrong and how to fix it")
        hint="Divide by the square root of d_k, not by d_k.",
        solution="def scaled_scores(q, k):\\n    return q @ k.transpose(-2, -1) / q.size(-1) ** 0.5\\n",
    )

and the notebook binds it: ``q1 = lesson03.q1.bind(globals())``, then ``q1.check()``. The ``solution`` string is
self-contained code (imports included) so tests can run it and prove that it passes. A *capstone* (the learner
writes a whole block) also has a ``task`` (markdown) and a ``starter`` skeleton for the notebook; its checker
compares the learner's block with the package's, weights copied across (see :mod:`.asserts`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

CORRECT, INCORRECT, NOT_ATTEMPTED = "correct", "incorrect", "not attempted"


class ExerciseFailure(AssertionError):
    """Raised by a checker; its message tells the learner what is wrong and how to fix it."""


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
    hint: str
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
        except Exception as error:  # the learner's code crashed: say how, never crash the notebook
            return Result(INCORRECT, f"Your code raised {type(error).__name__}: {error}")
        return Result(CORRECT, self.success)

    def evaluate_code(self, code: str, prelude: str = "") -> Result:
        """Run ``prelude + code`` (e.g. a typical wrong answer) in a fresh namespace and evaluate it."""
        scope: dict[str, Any] = {}
        exec(compile(prelude + code, f"<answer to {self.name}>", "exec"), scope)
        return self.evaluate(scope)

    def run_solution(self, namespace: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Execute the reference solution in a copy of ``namespace`` and return the resulting namespace."""
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

    def hint(self) -> None:
        print(f"💡 Hint ({self.exercise.name}): {self.exercise.hint}")

    def solution(self) -> None:
        print(f"📖 Solution ({self.exercise.name}):\n{self.exercise.solution}")

    def __repr__(self) -> str:
        return f"<exercise {self.exercise.name!r}: run .check(), .hint() or .solution()>"
