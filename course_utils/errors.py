"""The course's own errors: raised by the validation of every public entry point.

Each message says what was expected, what came, and how to fix it. Catch ``CourseError`` to catch any of them;
they also subclass the built-in ``ValueError`` / ``TypeError``, so ``except ValueError`` keeps working.
"""
from __future__ import annotations


class CourseError(Exception):
    """Base class of every input error the course raises on purpose."""


class CourseValueError(CourseError, ValueError):
    """A value of the right type but outside what the function accepts (a size, a shape, a range)."""


class CourseTypeError(CourseError, TypeError):
    """A value of the wrong type or dtype."""
