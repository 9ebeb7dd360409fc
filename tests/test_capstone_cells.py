"""The capstone cells of each notebook are exactly what tools/insert_capstones.py writes from the package.

The task, starter and check cells of a capstone come from ``Exercise.task`` / ``Exercise.starter`` in
``course_utils/exercises/lessonNN.py``; after editing either, run ``python tools/insert_capstones.py`` and
re-execute the notebook.
"""
import importlib.util
import pathlib

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("insert_capstones", ROOT / "tools" / "insert_capstones.py")
insert_capstones = importlib.util.module_from_spec(spec)
spec.loader.exec_module(insert_capstones)

CAPSTONES = insert_capstones.capstones()


def capstone_ids(path):
    return {cell.get("id") for cell in nbformat.read(path, as_version=4).cells
            if str(cell.get("id", "")).startswith("capstone-")}


@pytest.mark.parametrize("notebook", sorted(CAPSTONES))
def test_capstone_cells_match_the_package(notebook):
    path = ROOT / "notebooks" / notebook
    lesson, names = CAPSTONES[notebook]
    changed, _ = insert_capstones.update_notebook(path, lesson, names)
    assert not changed, f"{notebook}: capstone cells differ from the package; run python tools/insert_capstones.py"
    expected = {insert_capstones.cell_id(lesson, name, part) for name in names for part in ("task", "starter", "check")}
    assert capstone_ids(path) == expected


def test_only_selects_by_notebook_number():
    assert list(insert_capstones.selected(["05", "04"])) == ["04_encoder_layer.ipynb", "05_classifier.ipynb"]
    with pytest.raises(SystemExit, match="no capstones for notebook"):
        insert_capstones.selected(["99"])


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.name)
def test_no_capstone_cells_without_a_capstone(path):
    """A notebook whose lesson declares no capstone holds no capstone cells (left over from a removed one)."""
    if path.name not in CAPSTONES:
        assert not capstone_ids(path)


def test_capstones_are_found_from_the_exercise_modules(tmp_path):
    """Every exercise with a task is a capstone of its lesson's notebook, in the order of its number."""
    for name in ("05_a.ipynb", "99_no_module.ipynb"):
        (tmp_path / name).write_text("{}")
    found = insert_capstones.capstones(tmp_path)
    assert list(found) == ["05_a.ipynb"]
    lesson, names = found["05_a.ipynb"]
    assert lesson == "lesson05" and names and all(name.startswith("q") for name in names)
    assert list(names) == sorted(names, key=lambda name: int(name[1:]))
