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
        exec(compile(stubs, "<answer>", "exec"), scope)
        assert exercise.evaluate(scope).status == NOT_ATTEMPTED


CAPSTONES = [entry for entry in EXERCISES if entry[2].starter]


def test_the_four_lessons_that_build_a_block_have_a_capstone():
    assert {lesson for lesson, _, _ in CAPSTONES} == {"lesson03", "lesson04", "lesson05", "lesson06", "lesson07",
                                                      "lesson08", "lesson09", "lesson10", "lesson11"}


@pytest.mark.parametrize("lesson,name,exercise", CAPSTONES, ids=[f"{e[0]}.{e[1]}" for e in CAPSTONES])
def test_capstone_task_names_the_package_block_to_load_when_stuck(lesson, name, exercise):
    assert "from course_utils" in exercise.task and ".solution()" in exercise.task
    assert "NotImplementedError" in exercise.starter


def code_lines(code: str) -> set[str]:
    """The lines of ``code`` that carry an idea (no imports, signatures, comments or bare returns), spaces removed."""
    lines = set()
    for line in code.splitlines():
        line = line.split("#")[0].strip()
        if (len(line) < 12 or line.startswith(("import ", "from ", "def ", "class ", "@")) or line in {"return x"}
                or line.startswith("super().__init__")):
            continue
        lines.add("".join(line.split()))
    return lines


@pytest.mark.parametrize("lesson,name,exercise", EXERCISES, ids=[f"{e[0]}.{e[1]}" for e in EXERCISES])
def test_hints_are_tiered_and_share_no_line_of_code_with_the_solution(lesson, name, exercise):
    assert len(exercise.hints) >= 2, "hint() is a nudge, hint(2) the steps in pseudo-code"
    solution = code_lines(exercise.solution)
    for level, hint in enumerate(exercise.hints, 1):
        text = "".join(hint.split())
        shared = [line for line in solution if line in text]
        assert not shared, f"hint({level}) gives away solution code: {shared}"
