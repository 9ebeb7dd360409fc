"""Inside the evaluation host: the processes that run a submission's code and check its answers.

The grader starts the host once per grading run (:mod:`.host`), as a fresh Python (``python -I -S``: no
``PYTHONPATH``, no ``site``, no ``.pth`` file runs) that imports PyTorch, IPython and the whole course (the copy
without the answers, :mod:`.withheld`), takes the snapshots of :mod:`.guard`, and then never runs learner code itself.
Per notebook it forks::

    host (one per grading run; never runs learner code; subreaper)
    └── notebook process (one per notebook: reads its job, runs nothing of the learner's itself; subreaper,
        │                 undumpable, optionally its own user id; reports to the grader on a pipe no learner
        │                 process holds)
        ├── the run: every code cell top to bottom, in IPython — how far the notebook gets, and its errors
        └── one evaluation per exercise: a fork of the run taken where the exercise's check cell is about to run
            (its namespace exactly as the learner's check saw it), then the guarded check (:class:`~.guard.Guard`)

Every learner process starts with its outputs sent to ``/dev/null`` (nothing it prints reaches the grader, however
large), its memory capped, every file descriptor closed but its own channels, and from a state in which no learner
code has run: nothing a notebook did reaches the next. The run watches, after each cell, what the cell replaced in
the core modules (:mod:`.integrity`); an evaluation refuses to check where a cell its answer needs
(:func:`~.cells.program_slice`) replaced something the checks rely on, and puts back whatever the other cells
replaced. The notebook process watches the time of each cell and check, kills what runs over, and ends every process
below it (see :mod:`.processes`) before it reports ``done``.

Progress lines from a learner process (``s 3`` a cell starts, ``e 3 NameError: …`` it failed, ``f`` the run is
finished, ``k`` the check starts, ``r {json}`` its result) are read in bounded amounts; they can only be about that
process's own notebook, and a result line is accepted only once, after ``k``. An evaluation's progress pipe is made
at its check point and handed to the notebook process over a socket of the run's (``h q1 <pid>`` with the pipe's
read end): the run closes its copy before the next cell runs, so no later cell can write into it, and only the first
hand-over of each exercise counts.
"""
from __future__ import annotations

import array
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
HANDOVER_LIMIT = 256           # bytes of one hand-over message
FD_SIZE = array.array("i").itemsize
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
        if not module.name.startswith(NOT_PRELOADED):   # (the copy has no answers to import: see .withheld)
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
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    run = _fork(_run_notebook, "run", report_fd, job, shell, theirs.fileno(), guard)
    theirs.close()
    expected = {item["key"] for item in job["exercises"]}
    handed: set[str] = set()
    evaluations: list[_Child] = []
    run_deadline = time.monotonic() + notebook_seconds
    check_deadline = run_deadline + cell_seconds   # a check that starts at the end of the run gets its own time
    listening = True
    while run or evaluations:
        now = time.monotonic()
        deadlines = [min(check_deadline, child.cell_started + cell_seconds) for child in evaluations]
        if run:
            deadlines.append(min(run_deadline, run.cell_started + cell_seconds))
        watched = [child.fd for child in [run, *evaluations] if child] + ([ours] if listening else [])
        ready, _, _ = select.select(watched, [], [], max(0.0, min(deadlines) - now))
        if listening and ours in ready:
            listening = _receive_handovers(ours, expected, handed, evaluations)
        for child in [run, *evaluations]:
            if child and child.fd in ready:
                for line in child.lines():
                    _progress(child, line, report, len(job["cells"]))
        now = time.monotonic()
        if run and (run.closed or run.finished or run.flooded or run.interfered
                    or now >= min(run_deadline, run.cell_started + cell_seconds)):
            if listening:   # what the run handed over before it ended is waiting in the socket
                _receive_handovers(ours, expected, handed, evaluations)
                listening = False
            _end_run(run, report, now >= run_deadline, cell_seconds, notebook_seconds)
            run = None
        for evaluation in list(evaluations):
            if (evaluation.closed or evaluation.result is not None or evaluation.flooded or evaluation.interfered
                    or now >= min(check_deadline, evaluation.cell_started + cell_seconds)):
                _end_evaluation(evaluation, report, now >= check_deadline, cell_seconds, notebook_seconds)
                evaluations.remove(evaluation)
                if listening:   # an evaluation handed over but not yet read is no stray
                    listening = _receive_handovers(ours, expected, handed, evaluations)
                _end_strays()
    ours.close()
    end_tree(os.getpid())
    report(kind="done")


def _receive_handovers(sock: socket.socket, expected: set[str], handed: set[str], evaluations: list) -> bool:
    """Take every hand-over waiting in ``sock`` (``h q1 <pid>`` and the read end of that evaluation's progress
    pipe); ``False`` once the socket is closed. Only the first hand-over of an exercise counts, and only for a
    process below this one: a later one (or one that is not well formed) is dropped, its pipe closed."""
    while True:
        try:   # (socket.recv_fds would ignore MSG_DONTWAIT)
            data, ancillary, _, _ = sock.recvmsg(HANDOVER_LIMIT, socket.CMSG_LEN(2 * FD_SIZE), socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fds = [fd for level, kind, payload in ancillary if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
               for fd in array.array("i", payload[:len(payload) - len(payload) % FD_SIZE])]
        if not data and not fds:
            return False
        parts = data.decode("ascii", "replace").split()
        valid = (len(fds) == 1 and len(parts) == 3 and parts[0] == "h" and parts[1] in expected
                 and parts[1] not in handed and parts[2].isdigit() and _below_me(int(parts[2])))
        if not valid:
            for fd in fds:
                os.close(fd)
            continue
        handed.add(parts[1])
        child = _Child(int(parts[2]), fds[0], parts[1])
        _Running.pids.add(child.pid)
        evaluations.append(child)


def _below_me(pid: int) -> bool:
    """Whether ``pid`` is a process below this one (an evaluation, under the run or already re-parented here)."""
    table, me = process_table(), os.getpid()
    for _ in range(64):
        parent = table.get(pid)
        if parent is None or parent <= 1:
            return False
        if parent == me:
            return True
        pid = parent
    return False


def _end_strays(keep=()) -> None:
    """Kill the processes an ended evaluation left behind (re-parented to this subreaper), so the next one starts
    alone (the run, still going, keeps its own)."""
    me = os.getpid()
    for pid, parent in process_table().items():
        if parent == me and pid not in keep and pid not in _Running.pids:
            end_tree(pid, include_root=True)


class _Running:
    pids: set[int] = set()


def _fork(target, what: str, report_fd: int, job: dict, shell, handover_fd: int, guard) -> _Child:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            _isolate((write_end, handover_fd), job)
            target(write_end, job, shell, handover_fd, guard)
        finally:
            os._exit(0)
    os.close(write_end)
    _Running.pids.add(pid)
    return _Child(pid, read_end, what)


def _close_all_but(keep: tuple[int, ...]) -> None:
    """Close every file descriptor above 2 but ``keep``."""
    start = 3
    for fd in sorted(keep):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def _isolate(keep: tuple[int, ...], job: dict) -> None:
    """A learner process's start: outputs to ``/dev/null``, only its own channels open, memory capped."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _close_all_but(keep)
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
        status, message = (TIMEOUT if timed_out else ERROR), (
            "not graded: the grader's check of this exercise stopped before it began ("
            + ("it ran out of time" if timed_out else "its process stopped: the notebook's code exited Python, "
               "crashed or ran out of memory") + "); ask your teacher to look at the notebook.")
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


def _run_notebook(out: int, job: dict, shell, handover_fd: int, guard) -> None:
    """Every cell top to bottom. Where an exercise's check cell is about to run (or after the last cell, for an
    exercise whose check cell is gone), fork its evaluation (:func:`_hand_over`). What the verdicts rest on is taken
    into this frame before the first cell runs, and after each cell the run notes which cell replaced what in the
    core modules (``blame``)."""
    import builtins

    from .cells import lesson_exercises
    from .guard import Guard, guard_state

    guard.remember_environment()
    lesson_exercises(job["lesson"])
    handover = socket.socket(fileno=handover_fd)
    context = {"check": Guard.check, "check_code": Guard.check.__code__, "state_of": guard_state,
               "state_code": guard_state.__code__, "pairs": guard.full.builtins, "get": vars(builtins).get,
               "put": vars(builtins).__setitem__, "blame": {}}
    context["before"] = guard_state(guard)
    blame, intact, current, ident = context["blame"], guard.core.intact, guard.core.current, id
    at: dict[int, list] = {}
    for item in job["exercises"]:
        at.setdefault(item["at"], []).append(item)
    cells = job["cells"]
    seen: dict[str, int] = {}
    for index in range(len(cells) + 1):
        for item in at.get(index, ()):
            try:
                _hand_over(handover, item, job, shell, guard, context)
            except OSError:   # no process left to fork (the notebook's limits): that exercise does not report
                pass
        if index == len(cells):
            break
        _send(out, f"s {index}")
        error = _run_cell(shell, cells[index])
        if error:
            _send(out, f"e {index} {error}")
        if intact():
            seen = {}
            continue
        now = {name: ident(value) for name, value in current().items()}
        for name, value in now.items():
            if seen.get(name) != value:
                blame.setdefault(name, []).append(index)
        seen = now
    _send(out, "f")


def _hand_over(handover: socket.socket, item: dict, job: dict, shell, guard, context: dict) -> None:
    """Fork the evaluation of ``item`` here, as a grandchild (re-parented to the notebook process at once, so that
    ending the run does not end it), and hand its progress pipe to the notebook process; the run keeps no end of
    it."""
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:
        try:
            pid = os.fork()
            if pid == 0:
                try:
                    _close_all_but((write_end,))
                    _evaluate_here(write_end, job, shell, item, guard, context)
                finally:
                    os._exit(0)
            socket.send_fds(handover, [f"h {item['key']} {pid}".encode("ascii")], [read_end])
        finally:
            os._exit(0)
    os.close(write_end)
    os.close(read_end)
    try:
        os.waitpid(middle, 0)
    except ChildProcessError:
        pass


GUARD_CHANGED = ("the notebook's code changed the grader's own guard{when} (its objects, or the code it runs); "
                 "that is not a grade — ask your teacher to look at the notebook.")


def _evaluate_here(out: int, job: dict, shell, item: dict, guard, context: dict) -> None:
    """The guarded check, in a fork of the run taken at the exercise's check point: the namespace is the one the
    learner's check cell saw, and no thread of the run's is in it (a fork keeps only the thread that forks). First the
    builtins are put back (with nothing but a loop and bound methods), the guard's state compared with the one the
    run took before its first cell, and what the cells replaced in the modules sorted out: replaced by a cell the
    answer needs (its program slice) — ``error``, naming it; replaced by any other cell — put back, so the answer is
    graded as it is."""
    from .cells import lesson_exercises

    check, check_code, state_of, state_code = (context["check"], context["check_code"], context["state_of"],
                                               context["state_code"])
    pairs, get, put, before, blame = context["pairs"], context["get"], context["put"], context["before"], \
        context["blame"]
    same, every, mapping, length = operator.is_, all, map, len
    replaced: list[str] = []
    note = replaced.append
    for key, value in pairs:   # the builtins first, with nothing but a loop and bound methods of a dict and a list
        if get(key, pairs) is not value:
            note("builtins." + key)
            put(key, value)
    _send(out, "k")
    intact = check.__code__ is check_code and state_of.__code__ is state_code
    if intact:
        after = state_of(guard)
        intact = length(after) == length(before) and every(mapping(same, after, before))
    if not intact:
        _send(out, "r " + _dumps({"status": ERROR, "message": GUARD_CHANGED.format(when="")}))
        return
    needed = set(item["cells"])
    changed = sorted(set(guard.full.changes()) | set(replaced))
    blamed = [name for name in changed if needed.intersection(blame.get(name, ()))]
    stuck = guard.full.restore([name for name in changed if name not in blamed]) if not blamed else []
    if blamed or stuck:
        _send(out, "r " + _dumps({"status": ERROR, "message": _replaced_message(blamed or stuck)}))
        return
    exercise = lesson_exercises(job["lesson"])[item["key"]]
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
