"""Slow (COURSE_SLOW_TESTS=1): the classroom kit on the whole course — the teacher edition executes every notebook
with its solutions, and the grader gives every exercise of it ``correct`` and of the course as shipped ``not
attempted``. Prints the grading time per notebook."""
import os
from pathlib import Path

import pytest

from course_utils.classroom.editions import build_teacher_edition
from course_utils.classroom.grader import Limits, grade

ROOT = Path(__file__).resolve().parent.parent
PATIENT = Limits(cell_seconds=600, notebook_seconds=1800)  # lesson 06's training cell passed 120 s on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.environ.get("COURSE_SLOW_TESTS") != "1",
                                                   reason="slow: set COURSE_SLOW_TESTS=1 to grade the whole course")]


def report(graded) -> None:
    for notebook in graded:
        print(f"{notebook.seconds:7.1f} s  {notebook.notebook}")


def test_teacher_edition_is_all_correct_when_graded(tmp_path):
    executed = build_teacher_edition(tmp_path / "teacher")
    assert len(executed) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    assert sorted(p.name for p in (tmp_path / "teacher" / "teaching_notes").glob("*.md")) == [
        f"lesson{n:02d}.md" for n in range(len(executed))]
    graded = grade([tmp_path / "teacher" / "notebooks"], PATIENT)
    report(graded)
    assert [(row.exercise, row.status) for g in graded for row in g.rows] == [
        (row.exercise, "correct") for g in graded for row in g.rows]


def test_course_as_shipped_is_not_attempted():
    graded = grade([ROOT / "notebooks"], PATIENT)
    report(graded)
    assert {row.status for g in graded for row in g.rows} == {"not attempted"}
