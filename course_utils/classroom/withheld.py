"""Teacher-only material, named in one place: what the student edition leaves out, and what the processes that run a
learner's code never get.

The answers — the solution code ``q1.solution()`` prints (``course_utils/exercises/solutions/``) and the catalogue
of right answers written differently and of extra wrong answers (``tests/mistakes/``) with the tests that read it —
are :data:`TEACHER_ONLY`. Both consumers use this module: :mod:`.editions` leaves them (and the classroom kit) out of
the student edition, and the grader's host runs learner code on :func:`withheld_package_root`, a copy of the package
without them. What an exercise ships with the package — its checker, hints and declared table of typical mistakes —
is not an answer: the teaching notes (:mod:`.notes`) read the mistakes from there, so they need nothing withheld.
"""
from __future__ import annotations

import atexit
import fnmatch
import functools
import os
import shutil
import tempfile
from pathlib import Path

import course_utils

TEACHER_ONLY = ("course_utils/exercises/solutions/", "tests/mistakes/", "tests/test_exercise*.py",
                "tests/classroom_helper*.py")
"""The answers: folders end with ``/``, other entries are file patterns (paths relative to the course's root)."""
CLASSROOM_KIT = ("course_utils/classroom/*", "tests/test_classroom*.py", "TEACHING.md", "SECURITY.md")
"""The teacher's tools and their documents: not answers, but not for students either."""
KIT_IN_STUDENT_EDITION = ("course_utils/classroom/__init__.py", "course_utils/classroom/sandbox/*")
"""The offline guard the student edition's own test run loads (``conftest.py``), not the grading tools."""


def teacher_only(path: str) -> bool:
    """Whether ``path`` (relative to the course's root, ``/``-separated; a folder with or without its ``/``) is one
    of the answers."""
    return any((path + "/").startswith(entry) if entry.endswith("/") else fnmatch.fnmatch(path, entry)
               for entry in TEACHER_ONLY)


def left_out_of_student_edition(path: str) -> bool:
    """The answers and the classroom kit (but for what the edition's own tests load)."""
    return teacher_only(path) or (any(fnmatch.fnmatch(path, pattern) for pattern in CLASSROOM_KIT)
                                  and not any(fnmatch.fnmatch(path, pattern) for pattern in KIT_IN_STUDENT_EDITION))


@functools.lru_cache(maxsize=None)
def withheld_package_root() -> Path:
    """A folder holding a copy of ``course_utils`` without the answers (as in the student edition), made once per
    process: the processes that run learner code import this copy, so ``q1.run_solution()``, ``q1.solution()`` or
    the solution modules give the learner nothing (``solution_of()`` says "withheld"). Readable by everyone (the
    grader's ``--as-user``)."""
    root = Path(tempfile.mkdtemp(prefix="course-withheld-"))
    atexit.register(shutil.rmtree, root, True)
    source = Path(course_utils.__file__).resolve().parent
    course = source.parent

    def ignored(folder: str, names: list[str]) -> set[str]:
        relative = Path(folder).relative_to(course).as_posix()
        return {name for name in names if name == "__pycache__" or name.endswith(".pyc")
                or teacher_only(f"{relative}/{name}")}

    shutil.copytree(source, root / source.name, ignore=ignored)
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return root


def lock_away(root: str | Path) -> list[str]:
    """Make every teacher-only file and folder under ``root`` (a copy of the course) readable by its owner only — the
    grading container's recipe does this, so the notebooks' user cannot read the answers; returns what it locked."""
    root = Path(root)
    locked = []
    for folder, names, files in os.walk(root):
        relative = Path(folder).relative_to(root).as_posix()
        for name in [*names, *files]:
            path = name if relative == "." else f"{relative}/{name}"
            if teacher_only(path):
                os.chmod(os.path.join(folder, name), 0o700 if name in names else 0o600)
                locked.append(path)
    return locked
