"""Helpers the tests share (and ``benchmarks/validation_overhead.py``): every exercise of the course, and a counter of
the host synchronisations the course's own input checks make.

Host synchronisations: a check synchronises with an accelerator when it turns a tensor into a Python value
(``int(ids.min())``, ``bool(mask.any())``, ``.item()``, ``.tolist()``). :func:`count_check_syncs` counts those
conversions made from inside a ``check_*`` function of the package while ``call()`` runs — on a CPU, where they cost
nothing, as on a GPU.
"""
from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys
from typing import Callable

import torch

import course_utils.exercises as exercises_package
from course_utils.exercises.core import Exercise

LESSONS = sorted(m.name for m in pkgutil.iter_modules(exercises_package.__path__) if m.name.startswith("lesson"))
EXERCISES = [(lesson, name, exercise) for lesson in LESSONS
             for name, exercise in vars(importlib.import_module(f"course_utils.exercises.{lesson}")).items()
             if isinstance(exercise, Exercise)]
"""``(lesson, name, exercise)`` for every exercise of every lesson, in lesson order."""

CONVERSIONS = ("__int__", "__bool__", "__float__", "__index__", "item", "tolist")


def _inside_a_check() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name.startswith("check") and "course_utils" in code.co_filename:
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def counting_check_syncs():
    """Yields a one-element list whose entry counts conversions made inside the package's checks."""
    count = [0]
    originals = {name: getattr(torch.Tensor, name) for name in CONVERSIONS}

    def wrap(name):
        original = originals[name]

        def counted(self, *args, **kwargs):
            if _inside_a_check():
                count[0] += 1
            return original(self, *args, **kwargs)
        return counted

    for name in CONVERSIONS:
        setattr(torch.Tensor, name, wrap(name))
    try:
        yield count
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)


def count_check_syncs(call: Callable[[], object]) -> int:
    with counting_check_syncs() as count:
        call()
    return count[0]
