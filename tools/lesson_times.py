"""Honest time estimates for the lessons, from one stated rule.

    python tools/lesson_times.py            # print the table
    python tools/lesson_times.py --check    # exit 1 if a notebook's stated time is off by more than 20 %
    python tools/lesson_times.py --write [NOTEBOOK ...]   # rewrite the "**Time:**" line of the notebooks

The rule (minutes):  prose words / 150  +  code lines / 15  +  5 per exercise (15 per capstone)
                     +  the stored run time of the code cells,
rounded to the nearest 5 minutes. Prose = every markdown cell; code lines = non-blank lines of code cells;
an exercise = a distinct ``qN`` whose ``qN.check()`` the notebook calls; a capstone = a markdown cell that starts
an exercise with ``**Capstone``; run time = the sum over code cells of the execution timestamps that
``jupyter nbconvert --execute`` stores in each cell's metadata (0 where a cell has none).
"""
from __future__ import annotations

import argparse
import datetime
import pathlib
import re
import sys

import nbformat

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE = 150, 15
MINUTES_PER_EXERCISE, MINUTES_PER_CAPSTONE = 5, 15
TOLERANCE = 0.20
TIME_LINE = re.compile(r"^\*\*Time:?\*\*:?.*$", re.MULTILINE)
STATED = re.compile(r"\*\*Time:?\*\*:?\s*about\s+(\d+)\s+minutes")
CHECK_CALL = re.compile(r"\b(q\d+)\.check\(\)")
CAPSTONE = re.compile(r"^\s*\*\*Capstone", re.MULTILINE)


def _seconds(cell) -> float:
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    parse = lambda stamp: datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))  # noqa: E731
    return max(0.0, (parse(end) - parse(start)).total_seconds())


def estimate(notebook) -> dict:
    """The parts of the rule for one notebook (an ``nbformat`` node) and the rounded total in minutes."""
    markdown = [c.source for c in notebook.cells if c.cell_type == "markdown"]
    code = [c for c in notebook.cells if c.cell_type == "code"]
    words = sum(len(text.split()) for text in markdown)
    lines = sum(1 for c in code for line in c.source.splitlines() if line.strip())
    exercises = len({name for c in code for name in CHECK_CALL.findall(c.source)})
    capstones = min(exercises, sum(len(CAPSTONE.findall(text)) for text in markdown))
    run_seconds = sum(_seconds(c) for c in code)
    parts = {"reading": words / WORDS_PER_MINUTE, "code": lines / CODE_LINES_PER_MINUTE,
             "exercise minutes": MINUTES_PER_EXERCISE * (exercises - capstones) + MINUTES_PER_CAPSTONE * capstones,
             "running": run_seconds / 60}
    total = max(5, 5 * round(sum(parts.values()) / 5))
    return {"words": words, "code lines": lines, "exercises": exercises, "capstones": capstones,
            "run seconds": run_seconds, **parts, "minutes": total}


def stated_minutes(notebook) -> int | None:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            match = STATED.search(cell.source)
            if match:
                return int(match.group(1))
    return None


def write(path: pathlib.Path) -> int:
    notebook = nbformat.read(path, as_version=4)
    parts = estimate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and TIME_LINE.search(cell.source):
            cell.source = TIME_LINE.sub(time_sentence(parts), cell.source, count=1)
            nbformat.write(notebook, path)
            return parts["minutes"]
    raise SystemExit(f"{path.name}: no '**Time:**' line to rewrite")


def time_sentence(parts: dict) -> str:
    """The "**Time:**" line a notebook states, built from the parts of the rule."""
    n = parts["exercises"]
    running = "under a minute" if parts["running"] < 1 else f"about {round(parts['running'])} minute" + (
        "s" if round(parts["running"]) != 1 else "")
    return (f"**Time:** about {parts['minutes']} minutes — about {round(parts['reading'])} to read, "
            f"{round(parts['code'])} to work through the code, {parts['exercise minutes']} for the {n} "
            f"exercise{'s' if n != 1 else ''}; the cells computed for {running} on a 2-core CPU "
            "when the notebook was last run.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if a stated time is off by more than 20 %%")
    parser.add_argument("--write", nargs="*", metavar="NOTEBOOK", help="rewrite the Time line (all if none given)")
    args = parser.parse_args(argv)
    if args.write is not None:
        paths = [pathlib.Path(p) for p in args.write] or NOTEBOOKS
        for path in paths:
            print(f"{path.name}: {write(path)} minutes")
        return 0
    failures = []
    print(f"{'notebook':34} {'words':>6} {'code':>5} {'ex.':>4} {'run s':>6} {'rule':>5} {'stated':>7}")
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        parts, stated = estimate(notebook), stated_minutes(notebook)
        print(f"{path.name:34} {parts['words']:6} {parts['code lines']:5} {parts['exercises']:4} "
              f"{parts['run seconds']:6.0f} {parts['minutes']:5} {str(stated):>7}")
        if stated is None or abs(stated - parts["minutes"]) > TOLERANCE * parts["minutes"]:
            failures.append(f"{path.name}: states {stated} minutes, the rule gives {parts['minutes']}")
    if args.check and failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
