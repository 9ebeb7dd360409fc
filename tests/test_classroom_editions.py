"""Student and teacher editions: no solution leaks into the student's copy; the teacher's is filled in and annotated."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from mistakes import all_mistakes

from course_utils.classroom.cells import answer_cells, checked_exercises, lesson_exercises, notebook_lesson
from course_utils.classroom.editions import (
    add_missing_exercise_cells,
    all_exercises,
    build_student_edition,
    fill_solutions,
)
from course_utils.classroom.notes import PLAN_MINUTES, ninety_minute_plan, teaching_notes
from course_utils.exercises.core import WITHHELD

ROOT = Path(__file__).resolve().parent.parent
COURSE_NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def visible_texts(path: Path) -> list[str]:
    """A file as text, its Python string constants (implicit concatenation joined), its notebook cells."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    texts = [text]
    if path.suffix == ".py":
        texts += [node.value for node in ast.walk(ast.parse(text))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    if path.suffix == ".ipynb":
        for cell in nbformat.reads(text, as_version=4).cells:
            texts += [cell.source] + [output.get("text", "") for output in cell.get("outputs", [])]
    return texts


@pytest.fixture(scope="module")
def student_edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "edition"
    build_student_edition(out)
    return out


def test_no_solution_string_anywhere_in_the_student_edition(student_edition):
    solutions = {key: exercise.solution.strip() for key, exercise in all_exercises().items()}
    assert len(solutions) >= 24
    leaks = []
    for path in (p for p in student_edition.rglob("*") if p.is_file()):
        texts = visible_texts(path)
        leaks += [f"{path.relative_to(student_edition)}: {key}" for key, solution in solutions.items()
                  if any(solution in text for text in texts)]
    assert leaks == []


def test_no_mistake_catalogue_and_no_solution_tests_in_the_student_edition(student_edition):
    assert not (student_edition / "tests" / "mistakes").exists()
    assert not list((student_edition / "tests").glob("test_exercise*.py"))
    shipped = {p.relative_to(student_edition / "course_utils" / "classroom").as_posix()
               for p in (student_edition / "course_utils" / "classroom").rglob("*.py")}
    assert shipped == {"__init__.py", "sandbox/__init__.py", "sandbox/sitecustomize.py"}, \
        "only the offline guard of the classroom kit goes to students (their test run loads it), no grading tools"
    shown_by_the_lessons = "".join(cell.source for path in COURSE_NOTEBOOKS
                                   for cell in nbformat.read(path, as_version=4).cells)
    shown_by_the_lessons += "".join(f"{e.hint}{getattr(e, 'task', '')}" for e in all_exercises().values())
    catalogue = [m.code.strip() for m in all_mistakes() if m.code.strip() not in shown_by_the_lessons]
    for path in (p for p in student_edition.rglob("*") if p.is_file()):
        texts = visible_texts(path)
        assert not any(code in text for code in catalogue for text in texts), path


def test_exercise_cells_are_cleared_and_the_rest_kept(student_edition):
    for path in COURSE_NOTEBOOKS:
        course = nbformat.read(path, as_version=4)
        student = nbformat.read(student_edition / "notebooks" / path.name, as_version=4)
        assert student.metadata["course"] == course.metadata["course"]
        lesson = notebook_lesson(student)
        exercise_cells = set(answer_cells(student, lesson).values()) | {
            i for i, cell in enumerate(student.cells) if cell.cell_type == "code" and checked_exercises(cell.source)}
        assert len(exercise_cells) >= 2 * len(answer_cells(course, lesson))
        for index, (kept, original) in enumerate(zip(student.cells, course.cells)):
            assert kept.source == original.source
            if index in exercise_cells:
                assert kept.outputs == [] and "nbval-check-output" not in kept.metadata.get("tags", [])
            elif kept.cell_type == "code":
                assert kept.outputs == original.outputs


def test_student_package_withholds_solutions_but_hints_and_checks_work(student_edition):
    code = ("from course_utils.exercises import lesson03\n"
            "q1 = lesson03.q1.bind(globals())\n"
            "q1.solution()\nq1.hint()\nq1.check()\n"
            "import math, torch\n"
            "def attention_weights(q, k):\n"
            "    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)\n"
            "q1.check()\n")
    env = {**os.environ, "PYTHONPATH": str(student_edition)}
    printed = subprocess.run([sys.executable, "-c", code], cwd=student_edition, env=env, capture_output=True,
                             text=True, check=True).stdout
    from course_utils.exercises import lesson03
    assert printed.splitlines() == [f"📖 Solution ({lesson03.q1.name}):", WITHHELD,
                                    f"💡 Hint 1 ({lesson03.q1.name}): {lesson03.q1.hints[0]}  (More: .hint(2).)",
                                    f"✍️ {lesson03.q1.name}: {lesson03.q1.evaluate({}).message}",
                                    f"✅ {lesson03.q1.name}: Correct!"]


def test_student_edition_runs_its_own_tests(student_edition):
    result = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider",
                             "tests/test_network_guard.py"], cwd=student_edition,
                            env={**os.environ, "PYTHONPATH": str(student_edition)}, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:]


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.name)
def test_teacher_fill_puts_every_solution_in_its_answer_cell(path):
    notebook = nbformat.read(path, as_version=4)
    lesson = notebook_lesson(notebook)
    added = add_missing_exercise_cells(notebook)
    assert add_missing_exercise_cells(notebook) == []  # once is enough
    answers = answer_cells(notebook, lesson)
    assert sorted(answers) == sorted(lesson_exercises(lesson)) and set(added) <= set(answers)
    assert sorted(fill_solutions(notebook)) == sorted(answers)
    assert answer_cells(notebook, lesson) == {}  # no placeholder left
    for key, index in answers.items():
        assert notebook.cells[index].source == lesson_exercises(lesson)[key].solution.rstrip("\n")


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.name)
def test_teaching_notes_plan_ninety_minutes_over_the_notebooks_sections(path):
    notebook = nbformat.read(path, as_version=4)
    plan = ninety_minute_plan(notebook)
    assert sum(minutes for minutes, _ in plan) == PLAN_MINUTES and all(minutes > 0 for minutes, _ in plan)
    headings = [line[3:].strip() for cell in notebook.cells if cell.cell_type == "markdown"
                for line in cell.source.splitlines() if line.startswith("## ")]
    assert [activity[2:] for _, activity in plan if activity.startswith("§ ")] == [
        h for h in headings if h not in ("Summary", "Common errors") and "exercise" not in h.lower()]
    notes = teaching_notes(notebook)
    for exercise in lesson_exercises(notebook_lesson(notebook)).values():
        assert exercise.name in notes and exercise.solution.strip() not in notes
    assert notes.count("\n1. ") == 1 and "## Discussion questions" in notes


def test_student_readme_leaves_out_the_teaching_section_only(student_edition):
    readme = (student_edition / "README.md").read_text(encoding="utf-8")
    course = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Teaching with this course" in course and "## Teaching with this course" not in readme
    assert [line for line in course.splitlines() if line.startswith("## ") and "Teaching" not in line] == [
        line for line in readme.splitlines() if line.startswith("## ")]
