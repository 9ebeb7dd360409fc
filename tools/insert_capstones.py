#!/usr/bin/env python
"""Insert the capstone exercises into their notebooks — idempotent.

Usage (from the repository root; the notebooks and the package of this checkout are used)::

    python tools/insert_capstones.py                   # edits notebooks/*.ipynb in place
    python tools/insert_capstones.py --check           # only report what would change; exit 1 if anything
    python tools/insert_capstones.py --only 04 05 07   # only these notebooks (by number), with or without --check

A capstone is an exercise with a ``task`` (markdown) and a ``starter``. For every capstone three cells are placed
just before the notebook's "## Summary" heading (after the last ordinary exercise): the task (markdown), the
starter skeleton (left unsolved), and the check cell
``qN = lessonNN.qN.bind(globals())`` / ``qN.check()``. Their text comes from the package itself
(``Exercise.task`` and ``Exercise.starter`` in ``course_utils/exercises/lessonNN.py``), so notebook and checker
cannot drift. The cells carry fixed ids (``capstone-lessonNN-qN-task|starter|check``): a second run finds them and
refreshes their source instead of inserting them again, keeping their order and position. Outputs of the
inserted cells are cleared; re-execute the notebook afterwards (restart and run all).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import nbformat

from course_utils.exercises.core import Exercise

ROOT = Path(__file__).resolve().parent.parent



def capstones(notebooks: Path = ROOT / "notebooks") -> dict[str, tuple[str, tuple[str, ...]]]:
    """notebook -> (exercise module, its capstones in order): every exercise of ``lessonNN`` with a ``task`` is a
    capstone of notebook ``NN_*.ipynb`` — the exercise module is the one place that says so."""
    found = {}
    for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")):
        lesson = f"lesson{path.name[:2]}"
        try:
            module = importlib.import_module(f"course_utils.exercises.{lesson}")
        except ModuleNotFoundError:
            continue
        names = sorted((name for name, value in vars(module).items()
                        if isinstance(value, Exercise) and value.task), key=lambda name: int(name[1:]))
        if names:
            found[path.name] = (lesson, tuple(names))
    return found


ANCHOR = "## Summary"  # the capstones go right before the one markdown cell that starts with this
CHECK_TAGS = ["nbval-check-output"]  # the check prints a fixed line ("not attempted") in the stored notebook


def cell_id(lesson: str, name: str, part: str) -> str:
    return f"capstone-{lesson}-{name}-{part}"


def capstone_cells(lesson: str, name: str, exercise) -> list:
    task = exercise.task + (f"\n\nWrite your answer in the next cell and run it; then run the check below it "
                            f"(`{name}.check()`).")
    task_cell = nbformat.v4.new_markdown_cell(task, id=cell_id(lesson, name, "task"))
    starter = nbformat.v4.new_code_cell(exercise.starter.rstrip("\n"), id=cell_id(lesson, name, "starter"))
    check = nbformat.v4.new_code_cell(f"{name} = {lesson}.{name}.bind(globals())\n{name}.check()\n"
                                      f"# {name}.hint()\n# {name}.solution()",
                                      id=cell_id(lesson, name, "check"))
    check.metadata["tags"] = list(CHECK_TAGS)
    return [task_cell, starter, check]


def find_anchor(nb, path: Path) -> int:
    hits = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith(ANCHOR)]
    if len(hits) != 1:
        raise SystemExit(f"{path}: expected exactly one markdown cell starting with {ANCHOR!r}, found {len(hits)}")
    return hits[0]


def require_binding(nb, lesson: str, path: Path) -> None:
    if not any(c.cell_type == "code" and f"from course_utils.exercises import {lesson}" in c.source
               for c in nb.cells):
        raise SystemExit(f"{path}: no cell imports {lesson} (`from course_utils.exercises import {lesson}`); the "
                         "capstone check cells bind through it")


def update_notebook(path: Path, lesson: str, names: tuple[str, ...]):
    """Insert or refresh the capstones of ``lesson`` in ``path``; return ``(changed, notebook)``."""
    module = importlib.import_module(f"course_utils.exercises.{lesson}")
    nb = nbformat.read(path, as_version=4)
    require_binding(nb, lesson, path)
    changed = False
    by_id = {c.get("id"): i for i, c in enumerate(nb.cells)}
    for name in names:
        exercise = getattr(module, name)
        if not exercise.starter or not exercise.task:
            raise SystemExit(f"{lesson}.{name} has no task/starter: not a capstone")
        fresh = capstone_cells(lesson, name, exercise)
        if all(cell.id in by_id for cell in fresh):  # already there: refresh sources in place
            for cell in fresh:
                old = nb.cells[by_id[cell.id]]
                if old.source != cell.source or old.cell_type != cell.cell_type:
                    nb.cells[by_id[cell.id]] = cell
                    changed = True
            continue
        if any(cell.id in by_id for cell in fresh):
            raise SystemExit(f"{path}: only some cells of {lesson}.{name} are present; remove them and rerun")
        position = find_anchor(nb, path)
        nb.cells[position:position] = fresh
        by_id = {c.get("id"): i for i, c in enumerate(nb.cells)}
        changed = True
    if changed:
        nbformat.validate(nb)
    return changed, nb


def selected(only: list[str] | None, notebooks: Path = ROOT / "notebooks") -> dict[str, tuple[str, tuple[str, ...]]]:
    """The entries of :func:`capstones` whose notebook number is in ``only`` (all of them when ``only`` is None)."""
    every = capstones(notebooks)
    if only is None:
        return every
    unknown = sorted(set(only) - {notebook[:2] for notebook in every})
    if unknown:
        raise SystemExit(f"no capstones for notebook(s) {', '.join(unknown)}; "
                         f"known: {', '.join(notebook[:2] for notebook in every)}")
    return {notebook: entry for notebook, entry in every.items() if notebook[:2] in only}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", type=Path, default=ROOT / "notebooks", help="notebook folder")
    parser.add_argument("--check", action="store_true", help="report only; exit 1 if a notebook would change")
    parser.add_argument("--only", nargs="+", metavar="NN", help="notebook numbers, e.g. --only 04 05 07")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    would_change = []
    for notebook, (lesson, names) in selected(args.only, args.notebooks).items():
        path = args.notebooks / notebook
        changed, nb = update_notebook(path, lesson, names)
        status = ("would change" if args.check else "updated") if changed else "already up to date"
        print(f"{notebook}: {status} ({', '.join(names)})")
        if changed:
            would_change.append(notebook)
            if not args.check:
                nbformat.write(nb, path)
    if args.check and would_change:
        sys.exit(1)


if __name__ == "__main__":
    main()
