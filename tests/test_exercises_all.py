"""Every exercise of every lesson: the reference solution passes, an untouched placeholder is "not attempted".

Each lesson's typical wrong answers are tested in tests/test_exercise_mistakes.py (catalogues: tests/mistakes/).
"""
import pytest

from course_utils.exercises.core import CORRECT, NOT_ATTEMPTED
from tests.helpers import EXERCISES, LESSONS


def test_every_lesson_has_at_least_three_exercises():
    for lesson in LESSONS:
        assert sum(1 for entry in EXERCISES if entry[0] == lesson) >= 3, lesson


@pytest.mark.parametrize("lesson,name,exercise", EXERCISES, ids=[f"{e[0]}.{e[1]}" for e in EXERCISES])
def test_solution_passes(lesson, name, exercise):
    result = exercise.evaluate(exercise.run_solution())
    assert result.status == CORRECT, result.message


@pytest.mark.parametrize("lesson,name,exercise", EXERCISES, ids=[f"{e[0]}.{e[1]}" for e in EXERCISES])
def test_untouched_answers_are_not_attempted(lesson, name, exercise):
    assert exercise.evaluate({variable: ... for variable in exercise.variables}).status == NOT_ATTEMPTED
    if exercise.starter:  # a capstone's skeleton, as the notebook shows it
        assert exercise.evaluate_code(exercise.starter).status == NOT_ATTEMPTED
    solution = exercise.run_solution()
    functions = [v for v in exercise.variables if callable(solution[v]) and not isinstance(solution[v], type)]
    if functions:  # a stub that still raises NotImplementedError counts as not attempted too
        stubs = "".join(f"def {v}(*args, **kwargs):\n    raise NotImplementedError\n" for v in functions)
        scope = {**{v: solution[v] for v in exercise.variables}}
        exec(stubs, scope)
        assert exercise.evaluate(scope).status == NOT_ATTEMPTED


CAPSTONES = [entry for entry in EXERCISES if entry[2].starter]


def test_the_four_lessons_that_build_a_block_have_a_capstone():
    assert {lesson for lesson, _, _ in CAPSTONES} == {"lesson03", "lesson04", "lesson05", "lesson07"}


@pytest.mark.parametrize("lesson,name,exercise", CAPSTONES, ids=[f"{e[0]}.{e[1]}" for e in CAPSTONES])
def test_capstone_task_names_the_package_block_to_load_when_stuck(lesson, name, exercise):
    assert "from course_utils" in exercise.task and ".solution()" in exercise.task
    assert "NotImplementedError" in exercise.starter
