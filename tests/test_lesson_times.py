"""Each lesson's stated "**Time:**" follows the rule in course_utils/lesson_times.py (within 20 %), every code
cell has a stored run time, and a lesson longer than 2 hours is cut into sittings of at most 2 hours by break cells."""
import copy
import pathlib

import nbformat
import pytest

from course_utils import lesson_times

ROOT = pathlib.Path(__file__).resolve().parent.parent


def timed_code(source, seconds):
    code = nbformat.v4.new_code_cell(source)
    code.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00.000Z",
                                  "shell.execute_reply": f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}.000Z"}
    return code


def synthetic_notebook():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("**Time:** about 99 minutes.\n\n" + "word " * 1493),
                      nbformat.v4.new_markdown_cell("**Capstone.** Build it."),
                      timed_code("x = 1\n\ny = 2\nq1.check()\nq2.check()\nq2.check()", 120)]
    return notebook


BREAK_TEXT = (f"{lesson_times.break_heading(1)}\n\n* one\n* two\n* three\n\n"
              "**Coming back later?** to be written")


def two_sittings():
    """Sitting 1: 1000 words (10 min), 8 code lines (1 min), q1 (8 min), 60 s run → 20; the break cell's 19 words
    count there too (0.19 min). Sitting 2: 2000 words (20), a capstone q2 (30), 5 min run → 55."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("**Time:** about 1 minutes.\n\n" + "word " * 995),
                      timed_code("\n".join(["a = 1"] * 7 + ["q1.check()"]), 60),
                      nbformat.v4.new_markdown_cell(BREAK_TEXT),
                      nbformat.v4.new_markdown_cell("**Capstone.** " + "word " * 1998),
                      timed_code("q2.check()\nq1.check()", 300)]
    return notebook


def test_an_exercise_heading_may_state_its_own_time():
    """'### Exercise 1 · … (about 15 minutes)' counts 15 for q1 instead of the rule's 8; the capstone keeps 30."""
    notebook = synthetic_notebook()
    notebook.cells.insert(1, nbformat.v4.new_markdown_cell("### Exercise 1 · a model (about 15 minutes)"))
    plain = lesson_times.estimate(synthetic_notebook())["exercise minutes"]
    assert plain == 8 + 30
    assert lesson_times.estimate(notebook)["exercise minutes"] == 15 + 30
    notebook.cells[1].source = "**Exercise 1 — a model (about 12 minutes).** Write it."
    assert lesson_times.estimate(notebook)["exercise minutes"] == 12 + 30
    notebook.cells[1].source = "### Exercise 1 · a model, about 15 minutes"   # no parentheses: not an announcement
    assert lesson_times.estimate(notebook)["exercise minutes"] == plain


def test_the_rule():
    parts = lesson_times.estimate(synthetic_notebook())
    assert (lesson_times.WORDS_PER_MINUTE, lesson_times.CODE_LINES_PER_MINUTE) == (100, 8)
    assert (lesson_times.MINUTES_PER_EXERCISE, lesson_times.MINUTES_PER_CAPSTONE) == (8, 30)
    # 1500 words / 100 = 15; 5 code lines / 8 ≈ 0.6; exercises q1, q2 with one capstone: 8 + 30; 2 minutes run
    assert (parts["words"], parts["code lines"], parts["exercises"], parts["capstones"]) == (1500, 5, 2, 1)
    assert parts["run seconds"] == pytest.approx(120) and parts["untimed cells"] == 0
    assert parts["minutes"] == 55                          # 15 + 0.6 + 38 + 2 = 55.6 → nearest 5
    assert len(parts["sittings"]) == 1
    assert lesson_times.stated_minutes(synthetic_notebook()) == 99


def test_write_then_check_agree(tmp_path):
    path = tmp_path / "99_synthetic.ipynb"
    nbformat.write(synthetic_notebook(), path)
    assert lesson_times.write(path) == 55
    rewritten = nbformat.read(path, as_version=4)
    assert lesson_times.stated_minutes(rewritten) == 55
    assert rewritten.cells[0].source.startswith(
        "**Time:** about 55 minutes — about 16 to read, 1 to work through the code, 38 for the 2 exercises "
        "(about 30 of them for the capstone); running every cell takes about 2 minutes")
    assert "sittings" not in rewritten.cells[0].source


def test_a_cell_without_a_stored_run_time_is_reported_not_counted_as_zero(tmp_path):
    notebook = synthetic_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell("z = 3"))
    parts = lesson_times.estimate(notebook)
    assert parts["untimed cells"] == 1
    assert any("no stored run time" in problem for problem in lesson_times.problems(notebook))
    path = tmp_path / "99_untimed.ipynb"
    nbformat.write(notebook, path)
    with pytest.raises(SystemExit, match="no stored run time"):
        lesson_times.write(path)


def test_sittings_are_estimated_one_by_one_and_stated(tmp_path):
    parts = lesson_times.estimate(two_sittings())
    first, second = parts["sittings"]
    assert (first["exercises"], first["capstones"], first["minutes"]) == (1, 0, 20)
    assert (second["exercises"], second["capstones"], second["minutes"]) == (1, 1, 55)  # q1 counted once, in 1
    assert parts["minutes"] == 75 and parts["exercises"] == 2
    assert lesson_times.problems(two_sittings()) == []
    path = tmp_path / "99_split.ipynb"
    nbformat.write(two_sittings(), path)
    assert lesson_times.write(path) == 75
    cells = nbformat.read(path, as_version=4).cells
    assert cells[0].source.startswith("**Time:** about 75 minutes, in two sittings of about 20 and 55 minutes — ")
    assert cells[2].source.endswith("**Coming back later?** Run every cell above this one first (in JupyterLab: "
                                    "*Run → Run All Above Selected Cell*); the cells below use what they computed. "
                                    "That takes about 1 minute.")


def test_a_long_sitting_and_a_bare_break_are_reported():
    notebook = two_sittings()
    notebook.cells[3].source += " word" * 7000              # sitting 2 now past two hours
    assert any("sitting 2 takes about" in problem for problem in lesson_times.problems(notebook))
    notebook = two_sittings()
    notebook.cells[2].source = lesson_times.break_heading(1) + "\n\nSee you later."
    assert any("3 to 5 bullets" in problem for problem in lesson_times.problems(notebook))
    notebook = two_sittings()
    notebook.cells[2].source = notebook.cells[2].source.replace("first", "second")
    assert any("must start with" in problem for problem in lesson_times.problems(notebook))


@pytest.mark.parametrize("path", lesson_times.NOTEBOOKS, ids=lambda p: p.name)
def test_stated_time_matches_the_rule(path):
    notebook = nbformat.read(path, as_version=4)
    parts, stated = lesson_times.estimate(notebook), lesson_times.stated_minutes(notebook)
    assert stated is not None, "state the time as '**Time:** about N minutes' (python tools/lesson_times.py --write)"
    assert abs(stated - parts["minutes"]) <= lesson_times.TOLERANCE * parts["minutes"], (
        f"states {stated} minutes; the rule gives {parts['minutes']} ({parts}); "
        f"run: python tools/lesson_times.py --write notebooks/{path.name}")
    if len(parts["sittings"]) > 1:
        assert "sittings of about" in next(c.source for c in notebook.cells if lesson_times.STATED.search(c.source))


@pytest.mark.parametrize("path", lesson_times.NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_has_a_run_time_and_no_sitting_passes_two_hours(path):
    """A lesson over 120 minutes has a break cell (two for three sittings), each sitting at most 120 minutes."""
    assert lesson_times.problems(nbformat.read(path, as_version=4), path.name) == []


def test_the_lesson_checks_fail_on_doctored_lessons():
    notebook = nbformat.read(lesson_times.NOTEBOOKS[-1], as_version=4)
    unsplit = copy.deepcopy(notebook)  # a lesson made an hour longer, with no break cell
    unsplit.cells = [cell for cell in unsplit.cells if not lesson_times.is_break(cell)]
    unsplit.cells.append(nbformat.v4.new_markdown_cell("word " * 6000))
    assert lesson_times.estimate(unsplit)["minutes"] > lesson_times.SITTING_MINUTES
    assert any("past 120" in problem for problem in lesson_times.problems(unsplit))
    untimed = copy.deepcopy(notebook)
    next(cell for cell in untimed.cells if cell.cell_type == "code").metadata.pop("execution")
    assert any("no stored run time" in problem for problem in lesson_times.problems(untimed))
