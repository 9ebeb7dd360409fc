"""Time estimates for the lessons, from one stated rule for the target learner (``tools/lesson_times.py`` is the
same command).

    python -m course_utils.lesson_times     # print the table (and each sitting of a split lesson)
    python -m course_utils.lesson_times --check    # exit 1 if a stated time is off by more than 20 %, a sitting passes
                                            # 2 hours, or a code cell has no stored run time
    python -m course_utils.lesson_times --write [NOTEBOOK ...]   # rewrite the "**Time:**" line of the notebooks

The target learner is a second-year student who reads every cell, runs it and works out what it did. The rule
(minutes), per sitting:

    prose words / 100  +  code lines / 8  +  8 per small exercise  +  30 per capstone  +  the stored run time,

where an exercise whose heading states its own time (``### Exercise 3 · TinyMLP (about 15 minutes)``, or a line
starting ``**Exercise 3 — … (about 15 minutes)``) counts that time instead;

rounded to the nearest 5 minutes (at least 5); a lesson's total is the sum of its sittings. Prose = every markdown
cell; code lines = non-blank lines of code cells; an exercise = a distinct ``qN`` whose ``qN.check()`` the notebook
calls, counted in the sitting of its first check; a capstone = a markdown cell that starts an exercise with
``**Capstone`` or a ``## Capstone`` heading; run time = the sum over code cells of the execution timestamps
that ``jupyter nbconvert --execute``
stores in each cell's metadata. A code cell without them is reported (never counted as 0 s in silence): execute the
notebook before writing its time.

A lesson whose estimate passes 2 hours is taken in sittings of at most 2 hours: a markdown cell whose first line is
``### Break — end of the first sitting`` (a recap of what the first sitting built and what the next one does) ends a
sitting; the cell counts in the sitting it ends. ``--write`` also rewrites its ``**Coming back later?**`` line from
the stored run time of the cells above it (what a learner who closed the notebook must run again).
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
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE = 100, 8
MINUTES_PER_EXERCISE, MINUTES_PER_CAPSTONE = 8, 30
SITTING_MINUTES = 120  # the longest sitting the rule allows; a longer lesson gets a break cell
TOLERANCE = 0.20
TIME_LINE = re.compile(r"^\*\*Time:?\*\*:?.*$", re.MULTILINE)
STATED = re.compile(r"\*\*Time:?\*\*:?\s*about\s+(\d+)\s+minutes")
CHECK_CALL = re.compile(r"\b(q\d+)\.check\(\)")
CAPSTONE = re.compile(r"^\s*(?:#+\s+|\*\*)Capstone", re.MULTILINE)
ANNOUNCED = re.compile(r"^(?:#+\s|\*\*).*?\bExercise\s+(\d+)\b.*?\(about (\d+) minutes\)", re.MULTILINE)
BREAK = re.compile(r"\A\s*###\s+Break\b")
RESUME_LINE = re.compile(r"^\*\*Coming back later\?\*\*.*$", re.MULTILINE)
ORDINALS = ("first", "second", "third", "fourth")


def break_heading(sitting: int) -> str:
    """The first line of the cell that ends sitting ``sitting`` (1-based)."""
    return f"### Break — end of the {ORDINALS[sitting - 1]} sitting"


def is_break(cell) -> bool:
    return cell.cell_type == "markdown" and bool(BREAK.match(cell.source))


def _parse(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def run_seconds(cell) -> float | None:
    """Seconds the code cell ran when the notebook was last executed, or ``None`` where no timing is stored."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    return max(0.0, (_parse(end) - _parse(start)).total_seconds())


def sittings(notebook) -> list[list]:
    """The notebook's cells, cut after each break cell."""
    parts: list[list] = [[]]
    for cell in notebook.cells:
        parts[-1].append(cell)
        if is_break(cell):
            parts.append([])
    return parts if parts[-1] or len(parts) == 1 else parts[:-1]


def round_minutes(minutes: float) -> int:
    return max(5, 5 * round(minutes / 5))


def announced_minutes(notebook) -> dict[str, int]:
    """``{"q3": 15}`` for an exercise heading that states its own time: ``### Exercise 3 · … (about 15 minutes)`` or
    a line ``**Exercise 3 — … (about 15 minutes).**``."""
    return {f"q{number}": int(minutes) for cell in notebook.cells if cell.cell_type == "markdown"
            for number, minutes in ANNOUNCED.findall(cell.source)}


def _estimate_cells(cells, seen: set[str], announced: dict[str, int]) -> dict:
    markdown = [c.source for c in cells if c.cell_type == "markdown"]
    code = [c for c in cells if c.cell_type == "code"]
    words = sum(len(text.split()) for text in markdown)
    lines = sum(1 for c in code for line in c.source.splitlines() if line.strip())
    names = [name for c in code for name in CHECK_CALL.findall(c.source)]
    new = [name for name in dict.fromkeys(names) if name not in seen]
    seen.update(new)
    exercises = len(new)
    plain = [name for name in new if name not in announced]
    capstones = min(len(plain), sum(len(CAPSTONE.findall(text)) for text in markdown))
    timed = [run_seconds(c) for c in code]
    seconds = sum(s for s in timed if s is not None)
    parts = {"reading": words / WORDS_PER_MINUTE, "code": lines / CODE_LINES_PER_MINUTE,
             "exercise minutes": MINUTES_PER_EXERCISE * (len(plain) - capstones) + MINUTES_PER_CAPSTONE * capstones
             + sum(announced[name] for name in new if name in announced),
             "running": seconds / 60}
    return {"words": words, "code lines": lines, "exercises": exercises, "capstones": capstones,
            "run seconds": seconds, "untimed cells": sum(s is None for s in timed), **parts,
            "minutes": round_minutes(sum(parts.values()))}


def estimate(notebook) -> dict:
    """The parts of the rule for one notebook (an ``nbformat`` node): the counts and minutes of the whole lesson,
    ``"sittings"`` (the same for each sitting) and ``"minutes"``, the rounded total (the sum of the sittings)."""
    seen: set[str] = set()
    announced = announced_minutes(notebook)
    per_sitting = [_estimate_cells(cells, seen, announced) for cells in sittings(notebook)]
    whole = {key: sum(part[key] for part in per_sitting) for key in per_sitting[0] if key != "minutes"}
    return {**whole, "minutes": sum(part["minutes"] for part in per_sitting), "sittings": per_sitting}


def problems(notebook, name: str = "notebook") -> list[str]:
    """What keeps the rule from being applied honestly: cells without a stored run time, a sitting past 2 hours, a
    break cell without its heading, its recap (3 to 5 bullets) or its "Coming back later?" line."""
    parts = estimate(notebook)
    found = []
    if parts["untimed cells"]:
        found.append(f"{name}: {parts['untimed cells']} code cell(s) have no stored run time; execute the notebook "
                     "(jupyter nbconvert --execute --inplace) so that its run time is known")
    for number, sitting in enumerate(parts["sittings"], start=1):
        if sitting["minutes"] > SITTING_MINUTES:
            found.append(f"{name}: sitting {number} takes about {sitting['minutes']} minutes, past "
                         f"{SITTING_MINUTES}; add a cell starting '{break_heading(number)}' at a section boundary")
    breaks = [cell.source for cell in notebook.cells if is_break(cell)]
    for number, text in enumerate(breaks, start=1):
        bullets = len(re.findall(r"^\* ", text, re.MULTILINE))
        if not text.lstrip().startswith(break_heading(number)):
            found.append(f"{name}: break {number} must start with '{break_heading(number)}'")
        if not 3 <= bullets <= 5 or not RESUME_LINE.search(text):
            found.append(f"{name}: break {number} needs a recap of 3 to 5 bullets ('* ') and a line starting "
                         f"'**Coming back later?**' (it has {bullets} bullets)")
    return found


def stated_minutes(notebook) -> int | None:
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            match = STATED.search(cell.source)
            if match:
                return int(match.group(1))
    return None


def _running(minutes: float) -> str:
    return "under a minute" if minutes < 1 else f"about {round(minutes)} minute" + (
        "s" if round(minutes) != 1 else "")


def resume_sentence(seconds_before: float) -> str:
    """The "**Coming back later?**" line of a break cell, from the stored run time of the cells above it."""
    return ("**Coming back later?** Run every cell above this one first (in JupyterLab: *Run → Run All Above "
            "Selected Cell*); the cells below use what they computed. That takes "
            f"{_running(seconds_before / 60)}.")


def write(path: pathlib.Path) -> int:
    notebook = nbformat.read(path, as_version=4)
    parts = estimate(notebook)
    if parts["untimed cells"]:
        raise SystemExit("; ".join(problems(notebook, path.name)))
    seconds = 0.0
    for cell in notebook.cells:
        if is_break(cell):
            cell.source = RESUME_LINE.sub(resume_sentence(seconds), cell.source, count=1)
        elif cell.cell_type == "code":
            seconds += run_seconds(cell) or 0.0
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and TIME_LINE.search(cell.source):
            cell.source = TIME_LINE.sub(time_sentence(parts), cell.source, count=1)
            nbformat.write(notebook, path)
            return parts["minutes"]
    raise SystemExit(f"{path.name}: no '**Time:**' line to rewrite")


def _number_words(numbers: list[int]) -> str:
    return " and ".join(str(n) for n in numbers) if len(numbers) < 3 else \
        ", ".join(str(n) for n in numbers[:-1]) + f" and {numbers[-1]}"


def time_sentence(parts: dict) -> str:
    """The "**Time:**" line a notebook states, built from the parts of the rule."""
    n, capstones = parts["exercises"], parts["capstones"]
    sittings_minutes = [sitting["minutes"] for sitting in parts["sittings"]]
    count = ("two", "three", "four")[len(sittings_minutes) - 2] if len(sittings_minutes) > 1 else ""
    split = f", in {count} sittings of about {_number_words(sittings_minutes)} minutes" if count else ""
    running = _running(parts["running"])
    exercises = f"{n} exercises" if n != 1 else "capstone" if capstones else "exercise"
    if capstones and n > 1:
        exercises += (f" (about {capstones * MINUTES_PER_CAPSTONE} of them for the capstone" if capstones == 1 else
                      f" (about {capstones * MINUTES_PER_CAPSTONE} of them for the {capstones} capstones") + ")"
    reading = max(parts["minutes"] - round(parts["code"]) - parts["exercise minutes"], 0)  # the parts add up
    return (f"**Time:** about {parts['minutes']} minutes{split} — about {reading} to read, "
            f"{round(parts['code'])} to work through the code, {parts['exercise minutes']} for the {exercises}; "
            f"running every cell takes {running}.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="fail if a stated time is off by more than 20 %%, a sitting passes 2 hours or a code "
                             "cell has no stored run time")
    parser.add_argument("--write", nargs="*", metavar="NOTEBOOK", help="rewrite the Time line (all if none given)")
    args = parser.parse_args(argv)
    if args.write is not None:
        paths = [pathlib.Path(p) for p in args.write] or NOTEBOOKS
        for path in paths:
            print(f"{path.name}: {write(path)} minutes")
        return 0
    failures = []
    print(f"{'notebook':34} {'words':>6} {'code':>5} {'ex.':>4} {'caps.':>5} {'run s':>6} {'rule':>5} "
          f"{'stated':>7}  sittings")
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        parts, stated = estimate(notebook), stated_minutes(notebook)
        split = " + ".join(str(sitting["minutes"]) for sitting in parts["sittings"])
        print(f"{path.name:34} {parts['words']:6} {parts['code lines']:5} {parts['exercises']:4} "
              f"{parts['capstones']:5} {parts['run seconds']:6.0f} {parts['minutes']:5} {str(stated):>7}  {split}")
        failures += problems(notebook, path.name)
        if stated is None or abs(stated - parts["minutes"]) > TOLERANCE * parts["minutes"]:
            failures.append(f"{path.name}: states {stated} minutes, the rule gives {parts['minutes']}")
    if failures:
        print("\n".join(failures), file=sys.stderr)
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
