"""The grader's side of the evaluation kernel: imported before any learner code, it checks answers in place.

The grader starts a fresh kernel, runs ``Evaluator(lesson, token)`` first (so the checkers, PyTorch and the course
are imported untouched and snapshotted), then only the learner cells an answer needs, and at each exercise's check
point ``evaluator.probe(["q1"], globals())``. A probe prints one line per exercise, ``<token> {json}``, with the
``sys.stdout.write`` captured at start-up; the grader reads nothing else from the kernel.
"""
from __future__ import annotations

import json
import sys

from course_utils.exercises.core import INCORRECT, Result

from .cells import lesson_exercises
from .integrity import Snapshot
from .provenance import borrowed_block, borrowed_message

ERROR = "error"


class Evaluator:
    def __init__(self, lesson: str, token: str) -> None:
        self.exercises = lesson_exercises(lesson)
        self.token = token
        self.write = sys.stdout.write
        self.flush = sys.stdout.flush
        self.snapshot = Snapshot()

    def _tampered(self) -> Result | None:
        changed = self.snapshot.changes()
        if not changed:
            return None
        shown = ", ".join(f"`{name}`" for name in changed[:3]) + (" …" if len(changed) > 3 else "")
        return Result(ERROR, f"the notebook replaced {shown}, which the checks rely on; remove the code that "
                             "assigns to it (grading needs PyTorch's and the course's own functions).")

    def evaluate(self, key: str, namespace: dict) -> Result:
        exercise = self.exercises[key]
        tampered = self._tampered()
        if tampered:
            return tampered
        try:
            result = exercise.evaluate(namespace)
        except BaseException as stop:  # SystemExit, KeyboardInterrupt…: evaluate() lets only these through
            return Result(ERROR, f"your code stopped the check with {type(stop).__name__}: {stop}")
        tampered = self._tampered()  # the learner's code ran during the check
        if tampered:
            return tampered
        if result.passed:
            for variable in exercise.variables:
                origin = borrowed_block(variable, namespace.get(variable))
                if origin:
                    return Result(INCORRECT, borrowed_message(variable, namespace.get(variable), origin))
        return result

    def probe(self, keys: list[str], namespace: dict) -> None:
        for key in keys:
            result = self.evaluate(key, namespace)
            line = json.dumps({"exercise": key, "status": result.status, "message": result.message})
            self.write(f"{self.token} {line}\n")
        self.flush()
