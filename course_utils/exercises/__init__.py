"""Self-checking exercises: the mechanism (:mod:`.core`) and one module per lesson (``lessonNN``)."""
from .core import Exercise, ExerciseFailure, Result

__all__ = ["Exercise", "ExerciseFailure", "Result"]
