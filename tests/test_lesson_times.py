"""Each lesson's stated "**Time:**" matches the rule in tools/lesson_times.py (within 20 %)."""
import importlib.util
import pathlib

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("lesson_times", ROOT / "tools" / "lesson_times.py")
lesson_times = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lesson_times)


def synthetic_notebook():
    notebook = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("x = 1\n\ny = 2\nq1.check()\nq2.check()\nq2.check()")
    code.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00.000Z",
                                  "shell.execute_reply": "2026-01-01T00:02:00.000Z"}
    notebook.cells = [nbformat.v4.new_markdown_cell("**Time:** about 99 minutes.\n\n" + "word " * 1493),
                      nbformat.v4.new_markdown_cell("**Capstone.** Build it."), code]
    return notebook


def test_the_rule():
    parts = lesson_times.estimate(synthetic_notebook())
    # 1500 words / 150 = 10; 5 code lines / 15 ≈ 0.3; exercises q1, q2 with one capstone: 5 + 15; 2 minutes run
    assert (parts["words"], parts["code lines"], parts["exercises"], parts["capstones"]) == (1500, 5, 2, 1)
    assert parts["run seconds"] == pytest.approx(120)
    assert parts["minutes"] == 30                          # 10 + 0.33 + 20 + 2 = 32.3 → nearest 5
    assert lesson_times.stated_minutes(synthetic_notebook()) == 99


def test_write_then_check_agree(tmp_path):
    path = tmp_path / "99_synthetic.ipynb"
    nbformat.write(synthetic_notebook(), path)
    assert lesson_times.write(path) == 30
    rewritten = nbformat.read(path, as_version=4)
    assert lesson_times.stated_minutes(rewritten) == 30
    assert rewritten.cells[0].source.startswith("**Time:** about 30 minutes — about 10 to read")


@pytest.mark.parametrize("path", lesson_times.NOTEBOOKS, ids=lambda p: p.name)
def test_stated_time_matches_the_rule(path):
    notebook = nbformat.read(path, as_version=4)
    parts, stated = lesson_times.estimate(notebook), lesson_times.stated_minutes(notebook)
    assert stated is not None, "state the time as '**Time:** about N minutes' (python tools/lesson_times.py --write)"
    assert abs(stated - parts["minutes"]) <= lesson_times.TOLERANCE * parts["minutes"], (
        f"states {stated} minutes; the rule gives {parts['minutes']} ({parts}); "
        f"run: python tools/lesson_times.py --write notebooks/{path.name}")
