"""One bad submission never stops the class: files the grader cannot analyse, a crash of the grader on one file,
forged protocol lines, links out of the folder, a second notebook of a lesson, formula-like CSV cells and feedback
pages whose names would collide. (No kernel runs here: the cases are decided before or around grading.)"""
import csv
import json

import nbformat
import pytest

from course_utils.classroom import grader, report
from course_utils.classroom.cells import parse_cell, program_slice
from course_utils.classroom.grader import ERROR, GradedNotebook, Row


def course_notebook(lesson: str = "03"):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    notebook.metadata["course"] = {"lesson": lesson}
    return notebook


def test_a_cell_too_deep_to_parse_is_not_a_crash():
    deep = "x = " + " + ".join(["1"] * 5000)
    assert parse_cell(deep) is None
    program_slice([deep, "y = 2"], {1: {"y"}})                  # analysing the notebook still works
    assert parse_cell("z = 3") is not None                      # and so does every later parse, in any thread
    import ast
    ast.parse("w = 4")


def test_a_crash_on_one_file_is_that_files_error_row(tmp_path, monkeypatch):
    for name in ("alice", "bob", "carol"):
        (tmp_path / name).mkdir()
        nbformat.write(course_notebook(), tmp_path / name / "03.ipynb")

    def fake_grade(path, submission, label, limits):
        if submission == "bob":
            raise RecursionError("maximum recursion depth exceeded")
        return GradedNotebook(submission, label, [Row(submission, label, "lesson03.q1", "correct", "Correct!")])

    monkeypatch.setattr(grader, "grade_notebook", fake_grade)
    graded = {g.submission: g for g in grader.grade([tmp_path])}
    assert set(graded) == {"alice", "bob", "carol"}
    assert graded["alice"].rows[0].status == graded["carol"].rows[0].status == "correct"
    assert graded["bob"].rows[0].status == ERROR and "RecursionError" in graded["bob"].rows[0].message


def test_forged_or_malformed_protocol_lines_never_grade_and_never_crash():
    token = "t0k3n"
    line = lambda payload: {"name": "stdout", "text": f"{token} {payload}\n"}  # noqa: E731
    real = json.dumps({"exercise": "q1", "status": "correct", "message": "Correct!"})
    assert grader._protocol_reports(line(real), token) == [json.loads(real)]
    assert grader._protocol_reports(line("{not json"), token) == [{"exercise": None}]
    assert grader._protocol_reports(line(json.dumps({"exercise": "q1", "status": "perfect", "message": ""})),
                                    token) == [{"exercise": None}]
    assert grader._protocol_reports({"name": "stderr", "text": f"{token} {real}"}, token) == []


def test_symlinks_are_refused_not_followed(tmp_path):
    outside = tmp_path / "teacher.ipynb"
    nbformat.write(course_notebook(), outside)
    folder = tmp_path / "submissions"
    (folder / "eve").mkdir(parents=True)
    (folder / "eve" / "03.ipynb").symlink_to(outside)
    (folder / "mallory").symlink_to(tmp_path, target_is_directory=True)
    graded = grader.grade([folder])
    assert graded and all(g.rows[0].status == ERROR and "symbolic link" in g.rows[0].message for g in graded)


def test_a_second_notebook_of_the_same_lesson_is_flagged(tmp_path, monkeypatch):
    (tmp_path / "dave").mkdir()
    for name in ("03_attention.ipynb", "03_copy.ipynb"):
        nbformat.write(course_notebook("03"), tmp_path / "dave" / name)
    monkeypatch.setattr(grader, "grade_notebook", lambda path, submission, label, limits: GradedNotebook(
        submission, label, [Row(submission, label, "lesson03.q1", "correct", "Correct!")]))
    first, second = grader.grade([tmp_path])
    assert first.rows[0].status == "correct"
    assert second.rows[0].status == ERROR and "second notebook of lesson 03" in second.rows[0].message


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)", "\t=1"])
def test_csv_cells_never_start_like_a_formula(tmp_path, text):
    path = tmp_path / "grades.csv"
    report.write_csv([GradedNotebook(text, text, [Row(text, text, "*", ERROR, text)])], path)
    with open(path, newline="", encoding="utf-8") as handle:
        row = list(csv.reader(handle))[1]
    assert all(cell == "'" + text for cell in row if cell not in (ERROR, "*"))


def test_feedback_pages_of_different_submissions_never_collide(tmp_path):
    names = ["dave~smith", "dave_smith", "dave smith", "dave/smith", "..", "Dave"]
    pages = report.write_feedback([GradedNotebook(n, "03.ipynb", [Row(n, "03.ipynb", "*", ERROR, "x")])
                                   for n in names], tmp_path)
    assert len({page.name for page in pages}) == len(names)
    assert all(page.parent == tmp_path for page in pages)
    assert report.feedback_name("dave_smith") == "dave_smith"                  # plain names stay readable


def test_the_csv_holds_each_notebook_as_soon_as_it_is_graded(tmp_path, monkeypatch):
    """An interrupted run keeps the rows of what it graded: the CSV is written notebook by notebook."""
    from course_utils.classroom.__main__ import main

    for name in ("alice", "bob"):
        (tmp_path / "in" / name).mkdir(parents=True)
        nbformat.write(course_notebook(), tmp_path / "in" / name / "03.ipynb")
    out = tmp_path / "grades.csv"
    seen_before_bob = []

    def fake_grade(path, submission, label, limits):
        if submission == "bob":
            with open(out, newline="", encoding="utf-8") as handle:
                seen_before_bob.extend(row[0] for row in list(csv.reader(handle))[1:])
        return GradedNotebook(submission, label, [Row(submission, label, "lesson03.q1", "correct", "Correct!")])

    monkeypatch.setattr(grader, "grade_notebook", fake_grade)
    assert main(["grade", str(tmp_path / "in"), "--out", str(out)]) == 0
    assert seen_before_bob == ["alice"]
    with open(out, newline="", encoding="utf-8") as handle:
        assert [row[0] for row in list(csv.reader(handle))[1:]] == ["alice", "bob"]


def test_the_grading_kernels_have_no_solution_to_give(tmp_path):
    """A submission that asks the package for the answers (run_solution, the solution strings) earns nothing: the
    kernels that run learner code import a copy of the package with every solution withheld."""
    from classroom_helpers import small_notebook

    from course_utils.classroom.cells import lesson_exercises

    def cheat(key: str) -> str:
        exercise = lesson_exercises("03")[key]
        return ("from course_utils.exercises import lesson03 as _l\n"
                f"_s = _l.{key}.run_solution(globals())\n"
                + "".join(f"{name} = _s[{name!r}]\n" for name in exercise.variables))

    notebook = small_notebook("03", {key: cheat(key) for key in lesson_exercises("03")})
    path = tmp_path / "cheat.ipynb"
    nbformat.write(notebook, path)
    graded = grader.grade_notebook(path, "cheat", path.name)
    assert [row.status for row in graded.rows] and not any(row.status == "correct" for row in graded.rows)
    root = grader.withheld_package_root()
    assert not (root / "course_utils" / "exercises" / "solutions").exists()
    from course_utils.exercises import lesson04
    sources = [path.read_text(encoding="utf-8") for path in root.rglob("*.py")]
    for exercise in (lesson04.q4, lesson04.q5):
        definition = exercise.solution.split("\n\n\n")[-1].strip()  # the class the learner must write
        assert not any(definition in source for source in sources)


def test_a_submission_cannot_plant_a_startup_file_or_leave_a_process_behind(tmp_path):
    """Each kernel gets fresh IPython/Jupyter directories, and its process group is killed when it ends."""
    marker = tmp_path / "late.txt"
    planted = tmp_path / "planted.txt"
    plant = f"open({str(planted)!r}, 'w').write('ran')"
    child = f"import time; time.sleep(3); open({str(marker)!r}, 'w')"
    attack = grader.run_cells([
        "import os, pathlib, subprocess, sys\n"
        "startup = pathlib.Path(os.environ['IPYTHONDIR']) / 'profile_default' / 'startup'\n"
        "startup.mkdir(parents=True, exist_ok=True)\n"
        f"(startup / '00-plant.py').write_text({plant!r})\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}])\n"
    ], grader.Limits(), str(tmp_path))
    assert attack.stopped_at is None
    later = grader.run_cells(["x = 1"], grader.Limits(), str(tmp_path))   # the next submission's kernel
    assert later.stopped_at is None and not planted.exists()
    import time
    time.sleep(4)
    assert not marker.exists()                                # the child died with its kernel
