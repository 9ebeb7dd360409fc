"""Grading submitted notebooks: one row per exercise, from the grader's own checks, never from printed output.

Each notebook is handed to the evaluation host (:mod:`.host`, :mod:`.evaluator`): a fresh Python process, started
once per grading run, that has imported PyTorch and the course (a copy without the answers, :mod:`.withheld`) and
never runs learner code itself. For each notebook it forks a notebook process, which forks, with the teacher's limits,
**the run** — the submission exactly as handed in, every code cell top to bottom, like *Restart & Run All*. It tells
how far the notebook gets (an exercise whose check point lies after a cell that ran out of time, or after which the
notebook's process died, gets ``timeout`` / ``error``; the cells' errors go to the feedback), and at each exercise's
check point it forks **that exercise's evaluation**: the process exactly as the learner's check cell found it — the
answer as the learner last bound it, however it was bound (``globals()["f"] = …``, ``exec``, a function called in
between) — which runs the exercise's check under the grader's guard (:mod:`.guard`).

The verdicts come back as plain JSON lines on a pipe no learner process holds. An exercise's check point is its last
check cell (``q1.check()``), where the learner saw the result; if the learner deleted it, the end of the notebook.
The grade is for the state at the check point: a later cell that changes the answer changes nothing, a later
``q1.check()`` cell moves the check point. The cells the answer needs (a program slice,
:func:`~.cells.program_slice`) decide only whom a replaced checker or PyTorch function is blamed on: replaced there,
the exercise is ``error``; replaced by any other cell, it is put back before the check. A ``correct`` checked after
a cell that reaches into Python's machinery (:mod:`.reach`) is not counted (``error``): that cell ran in the process
that checks.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

import course_utils
from course_utils.exercises.core import NOT_ATTEMPTED

from .cells import check_points, lesson_exercises, notebook_lesson, program_slice
from .host import shared_host
from .reach import course_statements, reaching
from .sandbox import SANDBOX_PATH

ERROR, TIMEOUT = "error", "timeout"
STATUSES = ("correct", "incorrect", NOT_ATTEMPTED, ERROR, TIMEOUT)
CSV_COLUMNS = ("submission", "notebook", "exercise", "status", "message")
NOTEBOOK_SLACK_SECONDS = 120   # on top of the notebook's own limits, before the grader gives up on its host


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Defaults: 120 s per cell and per check, 900 s per notebook (its run), 4 GiB of
    memory per process, files up to 2 GiB.

    ``user``: run the notebook's processes under this user id (the grader must run as root, as in the container
    recipe; with ``--jobs N`` the ids ``user`` … ``user + N - 1``): they can then write nothing but their scratch
    folder and reach no other process."""
    cell_seconds: float = 120.0
    notebook_seconds: float = 900.0
    memory_bytes: int = 4 * 2**30
    file_bytes: int = 2 * 2**30
    user: int | None = None


@dataclass(frozen=True)
class Row:
    submission: str
    notebook: str
    exercise: str
    status: str
    message: str


@dataclass
class GradedNotebook:
    submission: str
    notebook: str
    rows: list[Row]
    cell_errors: list[str] = field(default_factory=list)  # "code cell 4 (`x = y`): NameError: name 'y' is not …"
    seconds: float = 0.0


def kernel_environment(limits: Limits, package_root: Path | None = None) -> dict[str, str]:
    """The environment of a Jupyter kernel that runs the course's own notebooks (the teacher edition): the grader's
    environment plus the sandbox — network blocked, memory capped — and ``course_utils`` from ``package_root``
    (default: the grader's own package). Submissions are not run in Jupyter kernels (see the module docstring)."""
    package_root = str(package_root or Path(course_utils.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SANDBOX_PATH), package_root, env.get("PYTHONPATH")]))
    env["COURSE_BLOCK_NETWORK"] = "1"
    env["COURSE_MEMORY_LIMIT_BYTES"] = str(int(limits.memory_bytes))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TQDM_DISABLE", "1")
    env.setdefault("MPLBACKEND", "agg")
    return env


def _first_line(source: str) -> str:
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return line if len(line) <= 50 else line[:47] + "…"


def _cell_error(number: int, source: str, text: str) -> str:
    """``code cell 4 (`x = y`): NameError: name 'y' is not defined`` (``text`` is ``Name: message``)."""
    return f"code cell {number} (`{_first_line(source)}`): {text.rstrip()}"


def read_notebook(path: Path):
    """The notebook, or the reason it cannot be graded."""
    try:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
    except Exception as failure:  # invalid JSON, not a notebook, unreadable file: all the same to the teacher
        return None, f"not a valid notebook ({type(failure).__name__}: {str(failure).splitlines()[0][:120]})"
    lesson = notebook_lesson(notebook)
    if lesson is None:
        return None, "not a course notebook: `metadata.course.lesson` is missing (hand in the course's notebook)"
    try:
        if not re.fullmatch(r"\d\d", lesson):
            raise ImportError(lesson)
        lesson_exercises(lesson)
    except ImportError:
        return None, f"lesson {lesson!r} in `metadata.course.lesson` has no exercises in this course"
    return notebook, ""


def build_job(notebook, lesson: str, exercises, points: dict[str, int], limits: Limits) -> dict:
    """What the host needs for one notebook: its code cells, and per exercise where it is checked (``at``: the
    position of its check cell in the list of code cells, or their number for the end) and the code cells its answer
    needs (the slice up to its check point; a checker or PyTorch function replaced there is the answer's doing)."""
    code = [index for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    position = {index: number for number, index in enumerate(code)}
    sources = [cell.source if cell.cell_type == "code" else "" for cell in notebook.cells]
    items = []
    for key, exercise in exercises.items():
        kept = program_slice(sources, {points[key]: set(exercise.variables)})
        items.append({"key": key, "at": position.get(points[key], len(code)),
                      "cells": sorted(position[index] for index in kept if index < points[key] and index in position)})
    return {"lesson": lesson, "cells": [notebook.cells[index].source for index in code], "exercises": items,
            "limits": {"cell_seconds": limits.cell_seconds, "notebook_seconds": limits.notebook_seconds,
                       "memory_bytes": limits.memory_bytes, "file_bytes": limits.file_bytes},
            "marker": secrets.token_hex(12), "token": secrets.token_hex(16),
            # the host outlives one grading call: the checks draw from the seed of the call that grades (if any)
            "check_seed": os.environ.get("COURSE_CHECK_SEED")}


def grade_notebook(path: Path, submission: str, notebook_label: str, limits: Limits = Limits(),
                   host=None) -> GradedNotebook:
    """Grade one file: a row per exercise of its lesson, or one ``*`` row if it cannot be graded."""
    started = time.monotonic()
    notebook, problem = read_notebook(path)
    if notebook is None:
        return GradedNotebook(submission, notebook_label, [Row(submission, notebook_label, "*", ERROR, problem)],
                              seconds=time.monotonic() - started)
    lesson = notebook_lesson(notebook)
    exercises = lesson_exercises(lesson)
    code = [index for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    sources = [notebook.cells[index].source for index in code]
    points = check_points(notebook, exercises)  # index into notebook.cells, or len(cells) for "the end"
    job = build_job(notebook, lesson, exercises, points, limits)
    known = course_statements(lesson)
    reached = {item["key"]: reaching(sources[:item["at"]], known) for item in job["exercises"]}

    run_stop: dict | None = None
    results: dict[str, tuple[str, str]] = {}
    cell_errors: list[str] = []
    foreign = False       # a line on the report pipe that the notebook process did not write
    host_failure = ""
    doubled: set[str] = set()
    with _scratch(limits) as (scratch, user):
        job["scratch"], job["user"] = scratch, user
        seconds = limits.notebook_seconds + 2 * limits.cell_seconds + NOTEBOOK_SLACK_SECONDS
        try:
            for report in (host or shared_host()).evaluate(job, seconds):
                kind = report["kind"]
                if kind == "cell_error" and 0 <= report["cell"] < len(sources) and len(cell_errors) < 200:
                    cell_errors.append(_cell_error(report["cell"] + 1, sources[report["cell"]], report["text"]))
                elif kind == "run":
                    foreign = foreign or run_stop is not None
                    run_stop = run_stop or report
                elif kind == "result" and report["exercise"] in exercises:
                    if report["exercise"] in results:
                        doubled.add(report["exercise"])
                    results.setdefault(report["exercise"], (report["status"], report["message"]))
                elif kind == "foreign" or kind == "result":
                    foreign = True
        except Exception as failure:  # noqa: BLE001 - the host failed: what came back stands, the rest is an error
            host_failure = f"{type(failure).__name__}: {str(failure)[:300]}"
            cell_errors.append(f"the grader's evaluation stopped ({host_failure})")
    stopped = run_stop.get("stopped_at") if run_stop else None
    if stopped is not None and not 0 <= stopped < len(code):
        stopped = 0
    stopped_cell = code[stopped] if stopped is not None else None

    rows = []
    for key in exercises:
        if run_stop is None:
            status, message = ERROR, ("not graded: the grader could not run the notebook to the end (its evaluation "
                                      f"stopped answering{': ' + host_failure if host_failure else ''}); ask your "
                                      "teacher to look at the notebook.")
        elif stopped_cell is None or points[key] <= stopped_cell:
            status, message = results.get(key, (ERROR, "the grader's check of this exercise did not report back "
                                                       "(the notebook's code interfered with it); ask your teacher "
                                                       "to look at the notebook."))
            if foreign or key in doubled:
                status, message = ERROR, ("the grader received reports about this notebook that it did not send "
                                          "(the notebook's code wrote into the grader's channel); ask your teacher "
                                          "to look at the notebook.")
            elif status == "correct" and reached[key]:
                status, message = ERROR, reach_message(reached[key])
        else:
            status = run_stop["reason"]
            message = (f"not graded: the notebook stopped before this exercise, at code cell {stopped + 1} "
                       f"(`{_first_line(sources[stopped])}`): {run_stop['message']}.")
        rows.append(Row(submission, notebook_label, f"lesson{lesson}.{key}", status, message))
    return GradedNotebook(submission, notebook_label, rows, cell_errors, time.monotonic() - started)


def reach_message(constructs: list[str]) -> str:
    shown = ", ".join(constructs[:3]) + (" …" if len(constructs) > 3 else "")
    return (f"the check passed, but cells above it reach into Python's machinery ({shown}), which can fake a "
            "check's result, so the grader does not count it: remove that code, or ask your teacher to look at the "
            "notebook.")


class _Users:
    """The user ids handed out to notebooks graded at the same time (``Limits.user``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.free: dict[int, list[int]] = {}
        self.issued: dict[int, int] = {}

    def take(self, base: int) -> int:
        with self.lock:
            free = self.free.setdefault(base, [])
            if free:
                return free.pop()
            self.issued[base] = self.issued.get(base, 0) + 1
            return base + self.issued[base] - 1

    def give_back(self, base: int, user: int) -> None:
        with self.lock:
            self.free.setdefault(base, []).append(user)


_users = _Users()


@contextlib.contextmanager
def _scratch(limits: Limits):
    """A private folder for one notebook's processes (removed afterwards) and the user id they run as (or None).
    It holds the notebook's own copy of the course's data cache (the documentation corpus lessons 05–06 read), so
    that what one notebook writes there never reaches another, nor the teacher's cache."""
    from course_utils.data.pydoc_corpus import cache_dir

    user = _users.take(limits.user) if limits.user is not None else None
    folder = tempfile.mkdtemp(prefix="course-notebook-")
    cache = Path(folder) / "cache"
    cache.mkdir()
    with contextlib.suppress(OSError):
        for entry in cache_dir().glob("*.json"):
            if entry.is_file() and not entry.is_symlink() and entry.stat().st_size < 256 * 2**20:
                shutil.copyfile(entry, cache / entry.name)
    try:
        yield folder, user
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if user is not None:
            _users.give_back(limits.user, user)


def find_submissions(paths: list[Path]) -> list[tuple[str, str, Path]]:
    """``(submission, notebook label, path)`` for every file given or inside a folder given.

    In a folder, ``alice/03_attention.ipynb`` is submission ``alice``, notebook ``03_attention.ipynb``; a file
    directly in the folder (or given by itself), ``bob.ipynb``, is submission ``bob``. In a folder only ``.ipynb``
    files count (a ``glossary.md`` or a PDF beside the notebooks is not a submission); a file given by itself is
    graded whatever its name. Hidden files and ``.ipynb_checkpoints`` are skipped. Symbolic links inside a folder
    are listed too — :func:`grade` refuses them (an ``error`` row) instead of following them out of the folder.
    """
    found = []
    for path in paths:
        if path.is_dir():
            for file in sorted(path.rglob("*.ipynb")):
                relative = file.relative_to(path)
                if (file.is_file() or file.is_symlink()) and not any(part.startswith(".") for part in relative.parts):
                    submission = relative.parts[0] if len(relative.parts) > 1 else file.stem
                    found.append((submission, str(Path(*relative.parts[1:])) if len(relative.parts) > 1
                                  else file.name, file))
        else:
            found.append((path.stem, path.name, path))
    return found


def _refusal(submission: str, label: str, path: Path, roots: list[Path],
             lessons_seen: dict[tuple[str, str], str]) -> str:
    """Why this file is not graded ("" if it is): a link out of (or inside) the folder, or a second notebook of a
    lesson this submission already handed in."""
    inside = [part for part in (path, *path.parents) if any(root in part.parents for root in roots)]
    if any(part.is_symlink() for part in inside):
        return "a symbolic link: the grader does not follow links (hand in the notebook file itself)"
    notebook, _ = read_notebook(path)
    lesson = notebook_lesson(notebook) if notebook is not None else None
    if lesson is not None:
        first = lessons_seen.setdefault((submission, lesson), label)
        if first != label:
            return (f"a second notebook of lesson {lesson} in this submission: only {first} is graded (hand in one "
                    "notebook per lesson)")
    return ""


def grade(paths: list[Path], limits: Limits = Limits(), progress=None, jobs: int = 1) -> list[GradedNotebook]:
    """Grade every submission; ``progress(graded)`` is called as each notebook is graded (from one thread at a
    time); the list returned is in the order of :func:`find_submissions`, whatever ``jobs`` is.

    ``jobs``: how many notebooks are graded at the same time. Each file is graded on its own: whatever goes wrong
    with one (a file the grader cannot analyse, a crash of the grader itself) becomes that file's ``error`` row, and
    the others are graded as usual.
    """
    roots = [path for path in paths if path.is_dir()]
    lessons_seen: dict[tuple[str, str], str] = {}
    work = []
    for submission, label, path in find_submissions(paths):
        try:
            refusal = _refusal(submission, label, path, roots, lessons_seen)
        except Exception as failure:  # noqa: BLE001 - the grader's own failure on this file: never the whole class's
            refusal = _crash_message(failure)
        work.append((submission, label, path, refusal))
    reporting = threading.Lock()

    def one(submission: str, label: str, path: Path, refusal: str) -> GradedNotebook:
        started = time.monotonic()
        try:
            result = (GradedNotebook(submission, label, [Row(submission, label, "*", ERROR, refusal)])
                      if refusal else grade_notebook(path, submission, label, limits))
        except Exception as failure:  # noqa: BLE001 - the grader's own failure on this file: never the class's
            result = GradedNotebook(submission, label, [Row(submission, label, "*", ERROR, _crash_message(failure))])
        result.seconds = time.monotonic() - started
        if progress:
            with reporting:
                progress(result)
        return result

    if jobs <= 1:
        return [one(*item) for item in work]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(one, *item): index for index, item in enumerate(work)}
        graded: list[GradedNotebook | None] = [None] * len(work)
        for future in as_completed(futures):
            graded[futures[future]] = future.result()
    return graded


def _crash_message(failure: BaseException) -> str:
    return (f"the grader could not grade this file ({type(failure).__name__}: {str(failure)[:200]}); ask your "
            "teacher to look at it")
