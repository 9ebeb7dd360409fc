"""Inside the evaluation host: the processes that run a submission's code and check its answers.

The grader starts the host once per grading run (:mod:`.host`), as a fresh Python (``python -I -S``: no
``PYTHONPATH``, no ``site``, no ``.pth`` file runs) that imports PyTorch, IPython and the whole course (the copy
without solutions), takes the snapshots of :mod:`.guard`, and then never runs learner code itself. Per notebook it
forks::

    host (one per grading run; never runs learner code; subreaper)
    └── notebook process (one per notebook: reads its job, runs nothing of the learner's itself; subreaper,
        │                 undumpable, optionally its own user id; reports to the grader on a pipe no learner
        │                 process holds)
        ├── the run: every code cell top to bottom, in IPython — how far the notebook gets, and its errors
        └── one evaluation per exercise, one after another: a fresh copy of the clean host, the cells its answer
            needs (and nothing else), then the guarded check (:class:`~.guard.Guard`)

Every learner process starts with its outputs sent to ``/dev/null`` (nothing it prints reaches the grader, however
large), its memory capped, every file descriptor closed but its own progress pipe, and from a state in which no
learner code has run: nothing one evaluation, the run or an earlier notebook did can reach the next. The notebook
process watches the time of each cell and check, kills what runs over, and ends every process below it (see
:mod:`.processes`) before it reports ``done``.

Progress lines from a learner process (``s 3`` a cell starts, ``e 3 NameError: …`` it failed, ``f`` the run is
finished, ``k`` the check starts, ``r {json}`` its result) are read in bounded amounts; they can only be about that
process's own notebook, and a result line is accepted only once, after ``k``.
"""
from __future__ import annotations

import importlib
import json
import operator
import os
import pkgutil
import re
import resource
import select
import signal
import socket
import sys
import time

from .processes import MARKER, become_subreaper, die_with_parent, end_tree, make_undumpable, process_table

ERROR, TIMEOUT = "error", "timeout"
CHECK_STATUSES = ("correct", "incorrect", "not attempted", ERROR)
MESSAGE_LIMIT = 4000          # characters of one message passed on
CELL_ERROR_LIMIT = 300        # characters of one cell's error, for the feedback
PROGRESS_LIMIT = 1 << 20      # bytes of progress read from one learner process; the rest is read and dropped
JOB_LIMIT = 256 << 20         # bytes of one notebook's job
PRELOADED = ("time", "pathlib", "json", "os", "inspect", "tempfile", "copy", "collections", "textwrap", "warnings",
             "itertools", "functools", "random", "string", "re", "dataclasses", "typing", "statistics", "regex",
             "matplotlib", "matplotlib.pyplot", "matplotlib.colors", "IPython.display", "torch.nn.utils",
             "tokenizers", "numpy")
NOT_PRELOADED = ("course_utils.classroom.editions", "course_utils.classroom.notes", "course_utils.classroom.__main__")
_write, _dumps = os.write, json.dumps


# --------------------------------------------------------------------------------------------- the host


def serve(control_fd: int, roots: list[str]) -> None:
    """The host's main loop: set up once, then fork a notebook process for each job the grader sends."""
    make_undumpable()
    become_subreaper()
    if os.environ.get("COURSE_BLOCK_NETWORK") == "1":
        from .sandbox.sitecustomize import block_network
        block_network()
    shell = _setup()
    from .guard import Guard
    guard = Guard(tuple(roots))
    control = socket.socket(fileno=control_fd)
    control.sendall(b"ready\n")
    notebooks: set[int] = set()
    while True:
        ready, _, _ = select.select([control], [], [], 1.0)
        _reap(notebooks)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(control, 64, 2)
        except OSError:
            data, fds = b"", []
        if not data:
            break
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                _notebook_process(fds[0], fds[1], shell, guard)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        notebooks.add(pid)
    end_tree(os.getpid())
    os._exit(0)


def _reap(notebooks: set[int]) -> None:
    """Forget finished notebook processes; kill orphans (what a killed notebook process left) under the host."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        notebooks.discard(pid)
    me = os.getpid()
    for pid, parent in process_table().items():
        if parent == me and pid not in notebooks:
            end_tree(pid, include_root=True)


def _setup():
    """Import what learner cells and checks use, before any learner code exists; return the IPython shell."""
    sys.path[:] = [entry for entry in sys.path if entry not in ("", ".", os.getcwd())]
    import torch  # noqa: F401

    import course_utils
    for module in pkgutil.walk_packages(course_utils.__path__, "course_utils.", onerror=lambda name: None):
        if not module.name.startswith(NOT_PRELOADED) and ".solutions" not in module.name:
            try:
                importlib.import_module(module.name)
            except Exception as failure:  # noqa: BLE001 - a broken module fails the checks that need it, not all
                print(f"host: could not import {module.name}: {type(failure).__name__}: {failure}", flush=True)
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional library missing: the cell that needs it will say so
            pass
    sys.meta_path.insert(0, _Sealed(os.path.dirname(os.path.dirname(course_utils.__file__))))
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    for warm_up in ("%config InlineBackend.figure_format = 'png'", "1 / 0", "import math\nmath.sqrt(4)",
                    "from IPython.display import display, Markdown\ndisplay(Markdown('*'))"):
        shell.run_cell(warm_up, store_history=False)   # IPython loads its magics and traceback printer lazily
    shell.reset(new_session=False)
    return shell


class _Sealed:
    """An import hook placed first: nothing is imported from the course's folder after the host's set-up (every
    module of the course is loaded by then), so a module a notebook writes there — it may be writable — is refused
    rather than run as if it were the course's."""

    def __init__(self, root: str) -> None:
        self.root = os.path.join(os.path.realpath(root), "")

    def find_spec(self, name, path=None, target=None):
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        origin = getattr(spec, "origin", None) or ""
        locations = list(getattr(spec, "submodule_search_locations", None) or [])
        if any(os.path.realpath(place).startswith(self.root) for place in [origin, *locations] if place):
            raise ImportError(f"{name}: the grader does not import new modules from the course's folder")
        return None   # not ours: the usual finders go on


# --------------------------------------------------------------------------------------------- one notebook


class _Child:
    """A learner process and what the notebook process knows of it."""

    def __init__(self, pid: int, fd: int, what: str) -> None:
        self.pid, self.fd, self.what = pid, fd, what
        self.buffer = b""
        self.received = 0
        self.cell: int | None = None
        self.started = time.monotonic()
        self.cell_started = self.started
        self.checking = False
        self.finished = False
        self.result: dict | None = None
        self.interfered = False
        self.flooded = False   # wrote more than PROGRESS_LIMIT bytes into its progress pipe: the rest is dropped
        self.closed = False

    def lines(self) -> list[str]:
        """Whatever complete lines arrived; at most :data:`PROGRESS_LIMIT` bytes are kept in all."""
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return []
        self.received += len(chunk)
        if self.received > PROGRESS_LIMIT:
            self.flooded = True
            return []
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        if len(self.buffer) > 65536:
            self.buffer, self.interfered = b"", True
        return [line.decode("utf-8", "replace") for line in complete]


def _notebook_process(job_fd: int, report_fd: int, shell, guard) -> None:
    become_subreaper()
    job = json.loads(_read_all(job_fd))
    os.close(job_fd)
    scratch = job["scratch"]
    if job.get("user") is not None:
        _become(int(job["user"]), scratch)
    make_undumpable()
    die_with_parent()
    os.environ[MARKER] = job["marker"]
    if job.get("check_seed") is None:
        os.environ.pop("COURSE_CHECK_SEED", None)
    else:
        os.environ["COURSE_CHECK_SEED"] = job["check_seed"]
    for variable, folder in (("TMPDIR", ""), ("IPYTHONDIR", "ipython"), ("JUPYTER_CONFIG_DIR", "jupyter-config"),
                             ("JUPYTER_DATA_DIR", "jupyter-data"), ("MPLCONFIGDIR", "matplotlib"),
                             ("XDG_CACHE_HOME", "cache"), ("COURSE_UTILS_CACHE_DIR", "cache")):
        os.environ[variable] = os.path.join(scratch, folder)   # this notebook's own: nothing it writes there is
    if job.get("user") is not None:                           # read by another notebook
        os.environ["HOME"] = scratch
    os.chdir(scratch)

    token = job["token"]

    def report(**fields) -> None:
        data = (token + " " + _dumps(fields) + "\n").encode("utf-8")
        while data:
            data = data[_write(report_fd, data):]

    report(kind="started", pid=os.getpid())
    limits = job["limits"]
    cell_seconds, notebook_seconds = limits["cell_seconds"], limits["notebook_seconds"]
    run = _fork(_run_notebook, "run", report_fd, job, shell, None, guard) if job.get("run", True) else None
    pending = list(job["exercises"])
    evaluation: _Child | None = None
    evaluation_deadline = time.monotonic() + notebook_seconds
    run_deadline = time.monotonic() + notebook_seconds
    while run or evaluation or pending:
        if evaluation is None and pending:
            item = pending.pop(0)
            if time.monotonic() >= evaluation_deadline:
                report(kind="result", exercise=item["key"], status=TIMEOUT, message=(
                    f"not graded: the grader spent the notebook's {notebook_seconds:g} s re-running the cells "
                    "the answers need before it reached this one."))
                continue
            evaluation = _fork(_evaluate_exercise, item["key"], report_fd, job, shell, item, guard)
            evaluation.item = item
        now = time.monotonic()
        deadlines = []
        if run:
            deadlines.append(min(run_deadline, run.cell_started + cell_seconds))
        if evaluation:
            deadlines.append(min(evaluation_deadline, evaluation.cell_started + cell_seconds))
        watched = [child.fd for child in (run, evaluation) if child]
        ready, _, _ = select.select(watched, [], [], max(0.0, min(deadlines) - now))
        for child in (run, evaluation):
            if child and child.fd in ready:
                for line in child.lines():
                    _progress(child, line, report, len(job["cells"]))
        now = time.monotonic()
        if run and (run.closed or run.finished or run.flooded or run.interfered
                    or now >= min(run_deadline, run.cell_started + cell_seconds)):
            _end_run(run, report, now >= run_deadline, cell_seconds, notebook_seconds)
            run = None
        if evaluation and (evaluation.closed or evaluation.result is not None or evaluation.flooded
                           or evaluation.interfered
                           or now >= min(evaluation_deadline, evaluation.cell_started + cell_seconds)):
            _end_evaluation(evaluation, report, now >= evaluation_deadline, cell_seconds, notebook_seconds)
            evaluation = None
            _end_strays()
    end_tree(os.getpid())
    report(kind="done")


def _end_strays(keep=()) -> None:
    """Kill the processes an ended evaluation left behind (re-parented to this subreaper), so the next one starts
    alone (the run, still going, keeps its own)."""
    me = os.getpid()
    for pid, parent in process_table().items():
        if parent == me and pid not in keep and pid not in _Running.pids:
            end_tree(pid, include_root=True)


class _Running:
    pids: set[int] = set()


def _fork(target, what: str, report_fd: int, job: dict, shell, item, guard) -> _Child:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            _isolate(write_end, job)
            target(write_end, job, shell, item, guard)
        finally:
            os._exit(0)
    os.close(write_end)
    _Running.pids.add(pid)
    return _Child(pid, read_end, what)


def _isolate(keep_fd: int, job: dict) -> None:
    """A learner process's start: outputs to ``/dev/null``, only its progress pipe open, memory capped."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL if number != signal.SIGINT else signal.default_int_handler)
    die_with_parent()
    memory = int(job["limits"]["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (max(memory, _address_space() + (64 << 20)),) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(job["limits"]["file_bytes"]),) * 2)


def _address_space() -> int:
    with open("/proc/self/status") as handle:
        match = re.search(r"VmSize:\s+(\d+) kB", handle.read())
    return int(match[1]) * 1024 if match else 0


def _become(uid: int, scratch: str) -> None:
    """Give up root for good: the notebook's processes run as ``uid``, which owns nothing but ``scratch``."""
    for folder, names, files in os.walk(scratch):
        for name in [folder, *(os.path.join(folder, entry) for entry in names + files)]:
            os.lchown(name, uid, uid)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    resource.setrlimit(resource.RLIMIT_NPROC, (512, 512))


def _progress(child: _Child, line: str, report, cells: int) -> None:
    kind, _, rest = line.partition(" ")
    if kind == "s" and rest.isdigit() and int(rest) < cells and not child.checking:
        child.cell, child.cell_started = int(rest), time.monotonic()
    elif kind == "e" and child.what == "run":
        number, _, text = rest.partition(" ")
        if number.isdigit() and int(number) < cells:
            report(kind="cell_error", cell=int(number), text=text[:CELL_ERROR_LIMIT + 30])
    elif kind == "f" and child.what == "run":
        child.finished = True
    elif kind == "k" and child.what != "run" and not child.checking:
        child.checking, child.cell_started = True, time.monotonic()
    elif kind == "r" and child.checking and child.result is None:
        try:
            result = json.loads(rest)
        except ValueError:
            result = None
        if isinstance(result, dict) and result.get("status") in CHECK_STATUSES and isinstance(result.get("message"),
                                                                                                 str):
            child.result = result
        else:
            child.interfered = True
    else:
        child.interfered = True


FLOODED = ("the notebook's code wrote into the grader's progress channel (more than it may, or lines the grader did "
           "not expect); the grader read no further")


def _end_run(run: _Child, report, notebook_time: bool, cell_seconds: float, notebook_seconds: float) -> None:
    finished = run.finished and not run.interfered and not run.flooded
    end_tree(run.pid, include_root=True)
    _Running.pids.discard(run.pid)
    os.close(run.fd)
    if finished:
        report(kind="run", stopped_at=None)
    elif run.flooded or run.interfered:
        report(kind="run", stopped_at=run.cell or 0, reason=ERROR, message=FLOODED)
    elif run.closed:
        report(kind="run", stopped_at=run.cell or 0, reason=ERROR,
               message="the notebook's process stopped (the code exited Python, crashed or ran out of memory)")
    else:
        report(kind="run", stopped_at=run.cell or 0, reason=TIMEOUT,
               message=(f"the notebook ran past its {notebook_seconds:g} s limit" if notebook_time else
                        f"it ran past the {cell_seconds:g} s limit of one cell"))


def _end_evaluation(child: _Child, report, notebook_time: bool, cell_seconds: float,
                    notebook_seconds: float) -> None:
    timed_out = not child.closed and child.result is None and not child.flooded and not child.interfered
    end_tree(child.pid, include_root=True)
    _Running.pids.discard(child.pid)
    os.close(child.fd)
    key = child.what
    if child.flooded or child.interfered:
        status, message = ERROR, f"not graded: {FLOODED}; ask your teacher to look at the notebook."
    elif child.result is not None:
        status, message = child.result["status"], child.result["message"][:MESSAGE_LIMIT]
    elif child.checking:
        status, message = (TIMEOUT, f"the check of your answer ran past the {cell_seconds:g} s limit: your code is "
                                    "too slow, or never returns.") if timed_out else \
            (ERROR, "your code stopped Python while it was being checked (an exit, a crash or running out of "
                    "memory); ask your teacher to look at the notebook.")
    else:
        why = ((f"the notebook ran past its {notebook_seconds:g} s limit" if notebook_time else
                f"it ran past the {cell_seconds:g} s limit of one cell") if timed_out else
               "the notebook's process stopped (the code exited Python, crashed or ran out of memory)")
        status, message = (TIMEOUT if timed_out else ERROR), (
            f"not graded: while the grader re-ran the cells this answer needs, {why}.")
    report(kind="result", exercise=key, status=status, message=message)


# --------------------------------------------------------------------------------------------- learner processes


def _send(fd: int, line: str) -> None:
    data = (line.replace("\n", " ") + "\n").encode("utf-8", "replace")
    while data:
        data = data[_write(fd, data):]


def _run_cell(shell, source: str) -> str:
    """Run one cell as Jupyter would; its error as ``"Name: message"`` ("" if none)."""
    result = shell.run_cell(source, store_history=False)
    error = result.error_before_exec or result.error_in_exec
    if error is None:
        return ""
    message = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {message[0] if message else ''}"
    return text if len(text) <= CELL_ERROR_LIMIT else text[:CELL_ERROR_LIMIT - 30] + " … (cut by the grader)"


def _run_notebook(out: int, job: dict, shell, item, guard) -> None:
    for index, source in enumerate(job["cells"]):
        _send(out, f"s {index}")
        error = _run_cell(shell, source)
        if error:
            _send(out, f"e {index} {error}")
    _send(out, "f")


GUARD_CHANGED = ("the notebook's code changed the grader's own guard{when} (its objects, or the code it runs); "
                 "that is not a grade — ask your teacher to look at the notebook.")


def _evaluate_exercise(out: int, job: dict, shell, item: dict, guard) -> None:
    """The cells the answer needs, then the guarded check. What the verdict rests on is taken into this frame's
    locals before the first cell runs (the learner's code cannot rebind them) and compared afterwards: the guard's
    state (:func:`~.guard.guard_state`), the code of the functions that compare it, and the builtins, which are put
    back first, without calling anything."""
    import builtins

    from .cells import lesson_exercises
    from .guard import Guard, guard_state

    exercise = lesson_exercises(job["lesson"])[item["key"]]
    guard.remember_environment()
    check, check_code, state_of, state_code = Guard.check, Guard.check.__code__, guard_state, guard_state.__code__
    pairs, get, put = guard.full.builtins, vars(builtins).get, vars(builtins).__setitem__
    same, every, mapping, length = operator.is_, all, map, len
    before = state_of(guard)
    cells = job["cells"]
    for index in item["cells"]:
        _send(out, f"s {index}")
        _run_cell(shell, cells[index])
    replaced: list[str] = []
    note = replaced.append
    for key, value in pairs:   # the builtins first, with nothing but a loop and bound methods of a dict and a list
        if get(key, pairs) is not value:
            note(key)
            put(key, value)
    _send(out, "k")
    intact = check.__code__ is check_code and state_of.__code__ is state_code
    if intact:
        after = state_of(guard)
        intact = length(after) == length(before) and every(mapping(same, after, before))
    if not intact or replaced:
        message = (GUARD_CHANGED.format(when="") if not intact else
                   _replaced_message([f"builtins.{key}" for key in replaced]))
        _send(out, "r " + _dumps({"status": ERROR, "message": message}))
        return
    result = check(guard, exercise, shell.user_ns)
    for key, value in pairs:
        if get(key, pairs) is not value:
            put(key, value)
    after = state_of(guard) if state_of.__code__ is state_code and check.__code__ is check_code else ()
    if length(after) != length(before) or not every(mapping(same, after, before)):
        result_status, result_message = ERROR, GUARD_CHANGED.format(when=" while it was being checked")
    else:
        result_status, result_message = result.status, result.message
    _send(out, "r " + _dumps({"status": result_status, "message": result_message}))


def _replaced_message(names: list[str]) -> str:
    from .guard import _replaced

    return _replaced(names)


def _read_all(fd: int) -> bytes:
    parts, size = [], 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > JOB_LIMIT:
            raise ValueError("job too large")
        parts.append(chunk)


if __name__ == "__main__":
    serve(int(sys.argv[1]), json.loads(sys.argv[2]))
