"""Stored notebooks are what learners read on the web: executed top to bottom, clean, small, complete lessons."""
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LOCAL_PATH = re.compile(r"(/work/|/tmp/ipykernel_|/root/|/home/\w+/|C:\\\\Users|site-packages)")
MAX_BYTES = 3_000_000


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(notebook):
    return [c for c in notebook["cells"] if c["cell_type"] == "code"]


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_executed_top_to_bottom(path):
    counts = [c["execution_count"] for c in code_cells(load(path))]
    assert counts == list(range(1, len(counts) + 1)), "restart the kernel and run all, then save"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_errors_unless_tagged(path):
    for cell in code_cells(load(path)):
        errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
        if errors:
            assert "raises-exception" in cell["metadata"].get("tags", []), cell["source"][:200]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_machine_local_paths_and_small(path):
    assert path.stat().st_size < MAX_BYTES
    for cell in code_cells(load(path)):
        text = json.dumps(cell["outputs"])
        match = LOCAL_PATH.search(text)
        assert match is None, f"output shows a machine-local path {match.group(0)!r}: {cell['source'][:120]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_lesson_structure(path):
    notebook = load(path)
    markdown = "\n".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    code = "\n".join("".join(c["source"]) for c in code_cells(notebook))
    assert "Objectives" in markdown and re.search(r"\*\*Time:?\*\*", markdown), "objectives and time at the top"
    assert "## Summary" in markdown and "Common errors" in markdown, "summary and common errors at the end"
    assert len(set(re.findall(r"\b(q\d+)\.check\(\)", code))) >= 3, "at least three self-checking exercises"
    assert "seed_everything(" in code, "seed the notebook"
