"""Mistake catalogues: the typical wrong answers of every exercise, and right answers written differently.

The typical mistakes an exercise diagnoses are declared once, in its table (``Exercise.mistakes``, see
``course_utils/exercises/core.py``); :func:`all_mistakes` turns each into an entry whose code plugs the declared
variant in as the learner's answer. ``tests/mistakes/lessonNN.py`` adds what no table holds: ``ALTERNATIVES`` (right
answers written differently, which must be accepted) and ``MISTAKES`` that only exercise the generic contract
(a wrong type, an input changed in place, the package's block borrowed) — never a second copy of a declared mistake.
One parametrised test (tests/test_exercise_mistakes.py) proves that every mistake is rejected with a message that
contains ``message``; the classroom grader's tests build synthetic submissions from the same data.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    lesson: str       # "lesson03": the module in course_utils.exercises
    exercise: str     # "q1": the Exercise's name in that module
    name: str         # short id, e.g. "missing sqrt(d_k)"
    code: str         # the learner's wrong answer, as they would type it in the notebook cell
    message: str      # a phrase the feedback must contain
    prelude: str = ""  # imports the answer needs (the notebook has them already)


@dataclass(frozen=True)
class Alternative:
    """A *right* answer written differently from the reference solution (einsum, a loop, another valid order of
    operations, a buffer, a module where a function is asked …): the checker must accept it."""

    lesson: str
    exercise: str
    name: str
    code: str
    prelude: str = ""


def _lesson_modules():
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("lesson"):
            yield importlib.import_module(f"{__name__}.{module.name}")


def declared_mistakes(lesson: str) -> list[Mistake]:
    """The mistakes declared in the tables of ``course_utils.exercises.<lesson>``, each answered by its variant."""
    from course_utils.exercises.core import Exercise

    module = importlib.import_module(f"course_utils.exercises.{lesson}")
    return [Mistake(lesson, name, mistake.name,
                    f"from course_utils.exercises.{lesson} import {name} as _exercise\n\n"
                    f"{exercise.variables[0]} = _exercise.planted({mistake.name!r})\n", mistake.message)
            for name, exercise in vars(module).items() if isinstance(exercise, Exercise)
            for mistake in exercise.mistakes]


def all_mistakes() -> list[Mistake]:
    """Every lesson's mistakes (its catalogue, then its declared tables), in lesson order."""
    return [mistake for module in _lesson_modules()
            for mistake in [*module.MISTAKES, *declared_mistakes(module.__name__.rsplit(".", 1)[-1])]]


def all_alternatives() -> list[Alternative]:
    """Every lesson's right answers written differently (``ALTERNATIVES``), in lesson order."""
    return [alternative for module in _lesson_modules() for alternative in getattr(module, "ALTERNATIVES", [])]


def plant(code: str, old: str, new: str, count: int = -1) -> str:
    """``code`` (usually an exercise's solution) with ``old`` replaced by ``new``: a bug planted in a right answer.

    Raises if ``old`` does not occur, so a catalogue entry cannot silently turn into the unchanged solution.
    """
    if old not in code:
        raise ValueError(f"cannot plant a bug: {old!r} does not occur in the code")
    return code.replace(old, new, count)
