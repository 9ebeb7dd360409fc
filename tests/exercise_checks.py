"""Shared assertion for the lesson exercise tests (tests/test_exercises_lessonNN.py)."""
from course_utils.exercises.core import INCORRECT, Exercise


def assert_rejected(exercise: Exercise, code: str, expected_message: str, prelude: str = "") -> None:
    """A typical wrong answer must be marked incorrect, with feedback that names the mistake."""
    result = exercise.evaluate_code(code, prelude)
    assert result.status == INCORRECT and expected_message in result.message, result.message
