"""The evaluation host as the grader sees it: start it, hand it a notebook, read its reports, end it.

The host (:mod:`.evaluator`) is a fresh Python — ``python -I -S`` on the solution-free copy of the course, in a
session of its own — started once per grading run. The grader talks to it over a Unix socket that only the host
holds; for each notebook it passes two new pipes along it: one for the notebook's job, one for the reports. The
write end of the report pipe is held by the notebook process only (the learner processes it forks close it before
running anything), and the notebook process and the host are undumpable, so no learner process can write into the
grader's reports, read the job or reach the grader. The reports are still read in bounded amounts and each line is
checked before it counts.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import select
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

import course_utils

from .processes import MARKER, end_tree, kill_marked
from .withheld import withheld_package_root

SETUP_SECONDS = 300          # the host's imports and snapshots: not any learner's time
REPORT_LIMIT = 16 << 20      # bytes read from one notebook's reports
LINE_LIMIT = 1 << 20         # bytes of one report line
BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[3]); "
        "from course_utils.classroom.evaluator import serve; serve(int(sys.argv[1]), json.loads(sys.argv[2]))")
KINDS = {"started", "cell_error", "run", "result", "done"}
STATUSES = ("correct", "incorrect", "not attempted", "error", "timeout")


class HostError(RuntimeError):
    """The evaluation host could not start or stopped answering."""


def host_path(package_root: Path) -> list[str]:
    """``sys.path`` of the host: the solution-free course first, then the grader's own path without the teacher's
    course folder (its tests, its solutions), the current folder or the user's site-packages."""
    course_root = Path(course_utils.__file__).resolve().parent.parent
    entries = [str(package_root)]
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        resolved = Path(entry).resolve()
        library = resolved.name in ("site-packages", "dist-packages")
        inside_course = resolved == course_root or course_root in resolved.parents
        if (inside_course and not library) or (resolved == Path.cwd().resolve() and not library):
            continue
        if (resolved / "course_utils").exists() or str(resolved) in entries:
            continue
        entries.append(str(resolved))
    return entries


def trusted_roots(package_root: Path) -> list[str]:
    """Folders whose code is not the learner's: the standard library, the installed packages, the course copy."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots |= {entry for entry in host_path(package_root) if "site-packages" in entry or "lib/python" in entry}
    return sorted(str(Path(root).resolve()) for root in roots | {str(package_root)})


def host_environment(scratch: Path, marker: str) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("PYTHON", "JUPYTER", "IPYTHON"))}
    environment.update({
        "COURSE_BLOCK_NETWORK": "1", "TQDM_DISABLE": "1", "MPLBACKEND": "agg", MARKER: marker,
        "IPYTHONDIR": str(scratch / "ipython"), "JUPYTER_CONFIG_DIR": str(scratch / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(scratch / "jupyter-data"), "MPLCONFIGDIR": str(scratch / "matplotlib"),
        "TMPDIR": str(scratch)})
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        environment.setdefault(key, "1")
    return environment


class Host:
    """One evaluation host (see the module docstring). ``evaluate(job)`` may be called from several threads."""

    def __init__(self, package_root: Path) -> None:
        self.marker = secrets.token_hex(12)
        self.scratch = Path(tempfile.mkdtemp(prefix="course-host-"))
        self.lock = threading.Lock()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.log = self.scratch / "host.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", BOOT, str(theirs.fileno()),
                 json.dumps(trusted_roots(package_root)), json.dumps(host_path(package_root))],
                pass_fds=(theirs.fileno(),), env=host_environment(self.scratch, self.marker), cwd=self.scratch,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        theirs.close()
        self.control = ours
        ready, _, _ = select.select([ours], [], [], SETUP_SECONDS)
        answer = ours.recv(64) if ready else b""
        if answer != b"ready\n":
            self.close()
            raise HostError(f"the evaluation host did not start: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            text = self.log.read_bytes()[-2000:].decode("utf-8", "replace").strip()
        except OSError:
            text = ""
        return text.splitlines()[-1] if text else "no output"

    def alive(self) -> bool:
        return self.process.poll() is None

    def evaluate(self, job: dict, seconds: float):
        """Send one notebook's job; yield its validated reports until ``done`` (or ``seconds`` run out, or the host
        stops answering). Every process the notebook started is gone when this returns."""
        job_read, job_write = os.pipe()
        report_read, report_write = os.pipe()
        notebook_pid, done = None, False
        try:
            with self.lock:
                try:
                    socket.send_fds(self.control, [b"job"], [job_read, report_write])
                except OSError as failure:
                    raise HostError(f"the evaluation host stopped answering ({failure})") from None
            os.close(job_read)
            os.close(report_write)
            job_read = report_write = -1
            writer = threading.Thread(target=_write_all, args=(job_write, json.dumps(job).encode("utf-8")),
                                      daemon=True)
            writer.start()
            job_write = -1
            deadline = time.monotonic() + seconds
            for report in _read_reports(report_read, deadline, job["token"]):
                if report["kind"] == "started" and notebook_pid is None:
                    notebook_pid = report["pid"]
                    continue
                if report["kind"] == "done":
                    done = True
                yield report
                if done:
                    return
        finally:
            for fd in (job_read, job_write, report_read, report_write):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            if notebook_pid and not done:   # it ran out of time or stopped answering (after done it is gone)
                end_tree(notebook_pid, include_root=True)
            kill_marked(job["marker"])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.control.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        end_tree(self.process.pid, include_root=True)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)
        kill_marked(self.marker)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass   # the notebook process is gone: its reports say so
    finally:
        os.close(fd)


def _read_reports(fd: int, deadline: float, token: str):
    """Report lines, parsed and checked, from ``fd`` until it closes or ``deadline``; at most :data:`REPORT_LIMIT`
    bytes in all and :data:`LINE_LIMIT` per line. A line without this notebook's ``token``, or not a well-formed
    report, is not the notebook process's: it comes out as ``{"kind": "foreign"}``."""
    prefix = token.encode("ascii") + b" "
    buffer, received = b"", 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        received += len(chunk)
        if received > REPORT_LIMIT:
            yield {"kind": "foreign"}
            return
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        if len(buffer) > LINE_LIMIT:
            buffer = b""
            yield {"kind": "foreign"}
        for line in lines:
            report = parse_report(line[len(prefix):]) if line.startswith(prefix) else None
            yield report if report is not None else {"kind": "foreign"}


def parse_report(line: bytes) -> dict | None:
    """One report line as a dict, or ``None`` if it is not a well-formed report."""
    try:
        report = json.loads(line)
    except ValueError:
        return None
    if not isinstance(report, dict) or report.get("kind") not in KINDS:
        return None
    kind = report["kind"]
    if kind == "started":
        return report if isinstance(report.get("pid"), int) and report["pid"] > 1 else None
    if kind == "cell_error":
        return report if isinstance(report.get("cell"), int) and isinstance(report.get("text"), str) else None
    if kind == "run":
        stopped = report.get("stopped_at")
        if stopped is None:
            return report
        valid = (isinstance(stopped, int) and report.get("reason") in ("error", "timeout")
                 and isinstance(report.get("message"), str))
        return report if valid else None
    if kind == "result":
        valid = (isinstance(report.get("exercise"), str) and report.get("status") in STATUSES
                 and isinstance(report.get("message"), str))
        return report if valid else None
    return report


_shared: dict[str, Host] = {}
_shared_lock = threading.Lock()
_closing_registered = []


def shared_host() -> Host:
    """The host of this grading process, started on first use (and again if it stopped)."""
    with _shared_lock:
        host = _shared.get("host")
        if host is None or not host.alive():
            if host is not None:
                host.close()
            host = _shared["host"] = Host(withheld_package_root())
            if not _closing_registered:
                atexit.register(close_shared_host)
                _closing_registered.append(True)
        return host


def close_shared_host() -> None:
    with _shared_lock:
        host = _shared.pop("host", None)
    if host is not None:
        host.close()
