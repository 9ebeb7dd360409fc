"""The processes a submission starts, and ending every one of them (Linux).

Each notebook is graded by a process of its own that makes itself a *child subreaper* (``PR_SET_CHILD_SUBREAPER``):
whatever the notebook's code starts — a ``subprocess``, an ``os.fork`` child, a daemon that forks twice and calls
``setsid`` to leave its session — stays below it in the process tree, because an orphan is re-parented to the
nearest subreaper instead of to ``init``. :func:`end_tree` stops that whole tree (``SIGSTOP`` first, so nothing forks
while it is collected) and kills it. A process started by the notebook with a clean environment is found by the
tree; one started with the inherited environment also carries the marker :data:`MARKER` (:func:`marked`), for the
grader's last sweep. What the tree cannot hold: a process another program starts on the notebook's behalf (``at``,
``cron``, ``systemd-run --user``, an already running ``tmux`` server) — run untrusted classes in the container.

:func:`make_undumpable` (``PR_SET_DUMPABLE`` 0) makes a process's memory, file descriptors and ``/proc`` entries
unreachable for other processes of the same user that lack ``CAP_SYS_PTRACE``: no ``ptrace``, no ``/proc/PID/mem``,
no opening its pipes through ``/proc/PID/fd``.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import time

PR_SET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 3, 4, 36
MARKER = "COURSE_GRADING_MARKER"   # NAME=value in the environment of every process a grading run starts

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


def prctl(option: int, value: int = 0) -> int:
    result = _libc.prctl(option, value, 0, 0, 0)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def make_undumpable() -> None:
    """Other processes of this user can no longer read or write this one's memory or reach its file descriptors."""
    prctl(PR_SET_DUMPABLE, 0)


def is_dumpable() -> bool:
    return prctl(PR_GET_DUMPABLE) != 0


def become_subreaper() -> None:
    """Orphaned descendants of this process become its children, not ``init``'s."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent() -> None:
    """This process gets ``SIGKILL`` when the thread that started it exits."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def process_table() -> dict[int, int]:
    """``{pid: parent pid}`` of every process this one can see."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            parent = _parent_of(int(entry))
            if parent is not None:
                table[int(entry)] = parent
    return table


def descendants(root: int, table: dict[int, int] | None = None) -> list[int]:
    """Every process below ``root`` in the tree (children first)."""
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, parent in table.items():
        children.setdefault(parent, []).append(pid)
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if pid != root and pid not in found:
            found.append(pid)
            stack.extend(children.get(pid, []))
    return found


def _signal_all(pids, number: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, number)


def reap_children() -> None:
    """Collect the exit status of every finished child of this process (no zombies left)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_tree(root: int, include_root: bool = False, rounds: int = 50) -> int:
    """Stop and kill every process below ``root`` (and ``root`` itself if asked); returns how many were killed.

    Stopped first, then killed, round after round until none is left, so a process that forks while it is being
    collected cannot slip away; orphans of a subreaper ``root`` come back under it and are found in the next round.
    """
    killed: set[int] = set()
    for _ in range(rounds):
        found = descendants(root)
        if include_root and root not in killed:
            found.append(root)
        found = [pid for pid in found if pid != os.getpid()]
        if not found:
            break
        _signal_all(found, signal.SIGSTOP)
        more = [pid for pid in descendants(root) if pid not in found and pid != os.getpid()]
        _signal_all(found + more, signal.SIGKILL)
        killed.update(found + more)
        if os.getpid() == root or os.getpid() in (_parent_of(pid) for pid in found + more):
            deadline = time.monotonic() + 1
            while time.monotonic() < deadline and any(_alive(pid) for pid in found + more):
                reap_children()
                time.sleep(0.005)
        else:
            time.sleep(0.01)
    if os.getpid() == root:
        reap_children()
    return len(killed)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def marked(value: str) -> list[int]:
    """The processes (other than this one) whose environment carries ``MARKER=value``."""
    needle = f"{MARKER}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    found.append(int(entry))
        except OSError as failure:   # gone, or not ours to read
            if failure.errno not in (errno.ENOENT, errno.ESRCH, errno.EACCES, errno.EPERM):
                raise
    return found


def kill_marked(value: str) -> int:
    """Kill every process carrying ``MARKER=value`` and everything below it; returns how many were found."""
    found = marked(value)
    _signal_all(found, signal.SIGSTOP)
    for pid in found:
        end_tree(pid, include_root=True, rounds=5)
    return len(found)
