"""Every typical wrong answer in the mistake catalogues (tests/mistakes/lessonNN.py) is rejected with its message.

Each entry is a right answer with a bug in it (often the solution itself with a planted bug), so these tests also
prove that every checker can fail.
"""
import importlib

import pytest

from course_utils.exercises.core import INCORRECT, Exercise
from mistakes import all_mistakes

MISTAKES = all_mistakes()


def exercise_of(mistake) -> Exercise:
    return getattr(importlib.import_module(f"course_utils.exercises.{mistake.lesson}"), mistake.exercise)


@pytest.mark.parametrize("mistake", MISTAKES, ids=[f"{m.lesson}.{m.exercise}:{m.name}" for m in MISTAKES])
def test_mistake_is_rejected_with_its_message(mistake):
    result = exercise_of(mistake).evaluate_code(mistake.code, mistake.prelude)
    assert result.status == INCORRECT, f"accepted although wrong: {result.message}"
    assert mistake.message in result.message, result.message


def test_catalogue_names_are_unique():
    keys = [(m.lesson, m.exercise, m.name) for m in MISTAKES]
    assert len(keys) == len(set(keys))
