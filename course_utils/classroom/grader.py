"""Grading submitted notebooks: one row per exercise, from the grader's own checks, never from printed output.

Each notebook goes through two fresh kernels (``nbclient``), both with the teacher's limits, the network blocked and
errors allowed:

1. **the run** — the submission exactly as handed in, top to bottom, like *Restart & Run All*. It tells how far the
   notebook gets: an exercise whose check point lies after a cell that ran out of time, or after which the kernel
   died, gets ``timeout`` / ``error``.
2. **the evaluation** (side by side with the run) — a kernel where the grader's :class:`~.evaluator.Evaluator` is
   imported *first* (fresh checkers, an integrity snapshot of PyTorch and the course), then only the learner cells
   the answers depend on (a program slice, :func:`~.cells.program_slice`), and at each exercise's check point the
   grader's own probe.
   Cells that only print, rebind ``q1``, or patch things the answers do not need never run there; a patch that does
   run is caught by the snapshot.

An exercise's check point is its last check cell (``q1.check()``), where the learner saw the result; if the learner
deleted it, the end of the notebook.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import signal
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

import course_utils
from course_utils.exercises.core import NOT_ATTEMPTED

from .cells import check_points, lesson_exercises, notebook_lesson, program_slice
from .sandbox import SANDBOX_PATH

ERROR, TIMEOUT = "error", "timeout"
STATUSES = ("correct", "incorrect", NOT_ATTEMPTED, ERROR, TIMEOUT)
CSV_COLUMNS = ("submission", "notebook", "exercise", "status", "message")
SETUP_SECONDS = 300  # the evaluator's imports and snapshot, before any learner code: not the learner's time


@dataclass(frozen=True)
class Limits:
    """What one submission may use. Defaults: 120 s per cell, 900 s per notebook (each kernel), 4 GiB of memory."""
    cell_seconds: float = 120.0
    notebook_seconds: float = 900.0
    memory_bytes: int = 4 * 2**30


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
    cell_errors: list[str] = field(default_factory=list)  # "code cell 4: NameError: name 'x' is not defined"
    seconds: float = 0.0


@dataclass
class Execution:
    """What a kernel did with a list of cells: their outputs, and where it stopped early (if it did)."""
    outputs: list[list[dict]]
    stopped_at: int | None = None  # index of the cell that ran out of time or during which the kernel died
    stop_reason: str = ""          # TIMEOUT or ERROR
    stop_message: str = ""


@functools.lru_cache(maxsize=None)
def withheld_package_root() -> Path:
    """A folder holding a copy of ``course_utils`` without ``exercises/solutions`` (as in the student edition), made
    once per grading process: the kernels that run learner code import this copy, so ``q1.run_solution()``,
    ``q1.solution()`` or the solution modules give the learner nothing."""
    root = Path(tempfile.mkdtemp(prefix="course-withheld-"))
    atexit.register(shutil.rmtree, root, True)
    source = Path(course_utils.__file__).resolve().parent
    target = root / source.name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.rmtree(target / "exercises" / "solutions")  # solution_of() then says "withheld"
    return root


def kernel_environment(limits: Limits, package_root: Path | None = None) -> dict[str, str]:
    """The grader's environment plus the sandbox: network blocked, memory capped, and ``course_utils`` from
    ``package_root`` (default: the grader's own package)."""
    package_root = str(package_root or Path(course_utils.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SANDBOX_PATH), package_root, env.get("PYTHONPATH")]))
    env["COURSE_BLOCK_NETWORK"] = "1"
    env["COURSE_MEMORY_LIMIT_BYTES"] = str(int(limits.memory_bytes))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TQDM_DISABLE", "1")
    env.setdefault("MPLBACKEND", "agg")
    return env


def run_cells(sources: list[str], limits: Limits, workdir: str, setup_seconds: float | None = None) -> Execution:
    """Execute ``sources`` one cell after another in a fresh kernel on the solution-free package copy; stop at a
    timeout or a dead kernel.

    ``setup_seconds``: the first cell is the grader's own set-up and gets this limit instead of the learner's.
    """
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    client = NotebookClient(notebook, timeout=limits.cell_seconds, allow_errors=True, kernel_name="python3",
                            shutdown_kernel="immediate", interrupt_on_timeout=False, startup_timeout=120)
    execution = Execution(outputs=[[] for _ in sources])
    deadline = time.monotonic() + limits.notebook_seconds
    session: list[int] = []   # the kernel's process group: whatever the learner's code started in it ends with it
    try:
        with private_jupyter_dirs() as env_dirs, client.setup_kernel(
                env={**kernel_environment(limits, withheld_package_root()), **env_dirs}, cwd=workdir):
            group = os.getpgid(client.km.provisioner.process.pid)
            if group != os.getpgid(0):   # the kernel leads its own session (jupyter_client starts it so)
                session.append(group)
            for index, cell in enumerate(notebook.cells):
                is_setup = index == 0 and setup_seconds is not None
                remaining = deadline - time.monotonic()
                limit = setup_seconds if is_setup else min(limits.cell_seconds, remaining)
                client.timeout = max(1, int(limit))
                cell_started = time.monotonic()
                try:
                    if remaining <= 0 and not is_setup:
                        raise CellTimeoutError("notebook time limit")
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    per_notebook = remaining < limits.cell_seconds
                    execution.stopped_at, execution.stop_reason = index, TIMEOUT
                    execution.stop_message = (f"the notebook ran past its {limits.notebook_seconds:g} s limit"
                                              if per_notebook else
                                              f"it ran past the {limits.cell_seconds:g} s limit of one cell")
                    break
                except DeadKernelError:
                    execution.stopped_at, execution.stop_reason = index, ERROR
                    execution.stop_message = "the kernel stopped (the code exited Python or ran out of memory)"
                    break
                finally:
                    execution.outputs[index] = list(cell.outputs)
                    if is_setup:  # the grader's own set-up does not count against the notebook's time
                        deadline += time.monotonic() - cell_started
    except (DeadKernelError, RuntimeError, OSError) as failure:  # the kernel did not start, or died on shutdown
        if execution.stopped_at is None:
            execution.stopped_at, execution.stop_reason = 0, ERROR
            execution.stop_message = f"the kernel could not run the notebook ({type(failure).__name__}: {failure})"
    finally:
        for group in session:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)
    return execution


@contextlib.contextmanager
def private_jupyter_dirs():
    """Fresh IPython and Jupyter directories for one kernel (removed afterwards): a startup file or configuration
    one submission writes there never runs for another."""
    with tempfile.TemporaryDirectory(prefix="course-kernel-home-") as home:
        yield {"IPYTHONDIR": os.path.join(home, "ipython"), "JUPYTER_CONFIG_DIR": os.path.join(home, "config"),
               "JUPYTER_DATA_DIR": os.path.join(home, "data"), "MPLCONFIGDIR": os.path.join(home, "matplotlib")}


def _first_line(source: str) -> str:
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return line if len(line) <= 50 else line[:47] + "…"


def _cell_errors(outputs: list[list[dict]], numbers: list[int], sources: list[str]) -> list[str]:
    found = []
    for cell_outputs, number, source in zip(outputs, numbers, sources):
        for output in cell_outputs:
            if output.get("output_type") == "error":
                found.append(f"code cell {number} (`{_first_line(source)}`): {output['ename']}: {output['evalue']}")
    return found


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


def grade_notebook(path: Path, submission: str, notebook_label: str, limits: Limits = Limits()) -> GradedNotebook:
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

    with tempfile.TemporaryDirectory(prefix="course-run-") as run_dir, \
            tempfile.TemporaryDirectory(prefix="course-evaluate-") as evaluate_dir, ThreadPoolExecutor(2) as pool:
        # the two kernels are independent: run them side by side, then keep the evaluations the run reached
        running = pool.submit(run_cells, sources, limits, run_dir)
        evaluating = pool.submit(_evaluate, notebook, lesson, exercises, points, limits, evaluate_dir)
        run, results = running.result(), evaluating.result()
    stopped_cell = code[run.stopped_at] if run.stopped_at is not None else None

    rows = []
    for key in exercises:
        if stopped_cell is None or points[key] <= stopped_cell:
            status, message = results[key]
        else:
            where = sources[run.stopped_at]
            status = run.stop_reason
            message = (f"not graded: the notebook stopped before this exercise, at code cell {run.stopped_at + 1} "
                       f"(`{_first_line(where)}`): {run.stop_message}.")
        rows.append(Row(submission, notebook_label, f"lesson{lesson}.{key}", status, message))
    numbers = list(range(1, len(sources) + 1))
    return GradedNotebook(submission, notebook_label, rows, _cell_errors(run.outputs, numbers, sources),
                          time.monotonic() - started)


def _evaluate(notebook, lesson, exercises, points, limits, workdir) -> dict[str, tuple[str, str]]:
    """Phase 2: the grader's evaluator first, then the slice of learner cells, with a probe at each check point."""
    token = secrets.token_hex(16)
    cells = notebook.cells
    sources = [cell.source if cell.cell_type == "code" else "" for cell in cells]
    needed: dict[int, set[str]] = {}
    probes: dict[int, list[str]] = {}
    for key, point in points.items():
        needed.setdefault(point, set()).update(exercises[key].variables)
        probes.setdefault(point, []).append(key)
    kept = program_slice(sources, needed)

    program = [f"from course_utils.classroom.evaluator import Evaluator as _CourseGrader\n"
               f"_course_grader = _CourseGrader({lesson!r}, {token!r})\ndel _CourseGrader"]
    probe_of_cell: dict[int, list[str]] = {}
    for index in range(len(cells) + 1):
        if index in probes:
            probe_of_cell[len(program)] = probes[index]
            program.append(f"_course_grader.probe({probes[index]!r}, globals())")
        if index in kept:
            program.append(sources[index])
    execution = run_cells(program, limits, workdir, setup_seconds=SETUP_SECONDS)

    results: dict[str, tuple[str, str]] = {}
    for position, keys in probe_of_cell.items():
        reports = [report for output in execution.outputs[position] for report in _protocol_reports(output, token)]
        for key in keys:
            mine = [report for report in reports if report.get("exercise") == key]
            if len(mine) > 1 or any(report.get("exercise") not in keys for report in reports):
                results[key] = (ERROR, "the grader received more reports for this exercise than it sent (the "
                                       "notebook's code printed in its name); ask your teacher to look at the "
                                       "notebook.")
            elif mine:
                results[key] = (mine[0]["status"], mine[0]["message"])
        for key in keys:
            if key in results:
                continue
            if execution.stopped_at is not None and execution.stopped_at <= position:
                results[key] = (execution.stop_reason, f"not graded: while the grader re-ran the cells this answer "
                                                       f"needs, {execution.stop_message}.")
            else:
                results[key] = (ERROR, "the grader's check of this exercise did not report back (the notebook's code "
                                       "interfered with it); ask your teacher to look at the notebook.")
    return results


def _protocol_reports(output: dict, token: str) -> list[dict]:
    """The grader's reports in one cell output: lines ``<token> {json}`` with a known status and a str message.
    Anything else — a line the learner's code printed that only looks like one — is not a report but is returned as
    ``{"exercise": None}`` so that the caller treats the exercise as interfered with."""
    if output.get("name") != "stdout":
        return []
    reports = []
    for line in str(output.get("text", "")).splitlines():
        if not line.startswith(token + " "):
            continue
        try:
            report = json.loads(line[len(token) + 1:])
        except ValueError:
            report = None
        valid = (isinstance(report, dict) and isinstance(report.get("exercise"), str)
                 and report.get("status") in STATUSES and isinstance(report.get("message"), str))
        reports.append(report if valid else {"exercise": None})
    return reports


def find_submissions(paths: list[Path]) -> list[tuple[str, str, Path]]:
    """``(submission, notebook label, path)`` for every file given or inside a folder given.

    In a folder, ``alice/03_attention.ipynb`` is submission ``alice``, notebook ``03_attention.ipynb``; a file
    directly in the folder (or given by itself), ``bob.ipynb``, is submission ``bob``. Hidden files and
    ``.ipynb_checkpoints`` are skipped. Symbolic links inside a folder are listed too — :func:`grade` refuses them
    (an ``error`` row) instead of following them out of the folder.
    """
    found = []
    for path in paths:
        if path.is_dir():
            for file in sorted(path.rglob("*")):
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


def grade(paths: list[Path], limits: Limits = Limits(), progress=None) -> list[GradedNotebook]:
    """Grade every submission; ``progress(graded)`` is called after each notebook.

    Each file is graded on its own: whatever goes wrong with one (a file the grader cannot analyse, a crash of the
    grader itself) becomes that file's ``error`` row, and the others are graded as usual.
    """
    graded = []
    roots = [path for path in paths if path.is_dir()]
    lessons_seen: dict[tuple[str, str], str] = {}
    for submission, label, path in find_submissions(paths):
        started = time.monotonic()
        try:
            refusal = _refusal(submission, label, path, roots, lessons_seen)
            result = (GradedNotebook(submission, label, [Row(submission, label, "*", ERROR, refusal)])
                      if refusal else grade_notebook(path, submission, label, limits))
        except Exception as failure:  # the grader's own failure on this file: never the whole class's
            result = GradedNotebook(submission, label, [Row(
                submission, label, "*", ERROR, f"the grader could not grade this file ({type(failure).__name__}: "
                                               f"{str(failure)[:200]}); ask your teacher to look at it")])
        result.seconds = time.monotonic() - started
        graded.append(result)
        if progress:
            progress(graded[-1])
    return graded
