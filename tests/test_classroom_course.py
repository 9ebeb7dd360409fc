"""Slow (COURSE_SLOW_TESTS=1): the classroom kit on the whole course — the teacher edition executes every notebook
with its solutions, and the grader gives every exercise of it ``correct``, of the course as shipped ``not
attempted``, and of one catalogued mistake per exercise of every lesson the checker's verdict. Prints the grading
time per notebook."""
from pathlib import Path

import nbformat
import pytest
from classroom_helpers import catalogue_by_lesson, save_catalogue_notebook

from course_utils.classroom.cells import answer_cells, notebook_lesson
from course_utils.classroom.editions import build_teacher_edition
from course_utils.classroom.grader import Limits, grade

ROOT = Path(__file__).resolve().parent.parent
PATIENT = Limits(cell_seconds=600, notebook_seconds=1800)  # lesson 06's training cell passed 120 s on a loaded machine
pytestmark = pytest.mark.slow


def report(graded) -> None:
    for notebook in graded:
        print(f"{notebook.seconds:7.1f} s  {notebook.notebook}")


def test_teacher_edition_is_all_correct_when_graded(tmp_path):
    executed = build_teacher_edition(tmp_path / "teacher")
    assert len(executed) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    lessons = [notebook_lesson(nbformat.read(path, as_version=4)) for path in (ROOT / "notebooks").glob("*.ipynb")]
    assert sorted(p.name for p in (tmp_path / "teacher" / "teaching_notes").glob("*.md")) == [
        f"lesson{lesson}.md" for lesson in sorted(lessons)]
    graded = grade([tmp_path / "teacher" / "notebooks"], PATIENT)
    report(graded)
    assert [(row.exercise, row.status) for g in graded for row in g.rows] == [
        (row.exercise, "correct") for g in graded for row in g.rows]


def test_course_as_shipped_is_not_attempted():
    """Every exercise with an answer cell is ``not attempted``; one whose cells the lesson does not show yet is
    graded at the end, where the lesson's own import of the package's block is no answer either."""
    graded = grade([ROOT / "notebooks"], PATIENT)
    report(graded)
    with_cells = set()
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        lesson = notebook_lesson(notebook)
        with_cells |= {f"lesson{lesson}.{key}" for key in answer_cells(notebook, lesson)}
    statuses = {row.exercise: row.status for g in graded for row in g.rows}
    assert {statuses[key] for key in with_cells} == {"not attempted"}
    assert "correct" not in statuses.values()


def test_one_catalogued_mistake_per_exercise_of_every_lesson(tmp_path):
    want = {f"lesson{lesson}": save_catalogue_notebook(tmp_path, f"lesson{lesson}", lesson)
            for lesson in sorted(catalogue_by_lesson())}
    graded = grade([tmp_path], PATIENT)
    report(graded)
    assert {g.submission: {row.exercise: (row.status, row.message) for row in g.rows} for g in graded} == want
