"""The sandbox every grading kernel starts in: this folder goes first on the kernel's ``PYTHONPATH``, so Python loads
its ``sitecustomize`` at start-up (see that module)."""
from pathlib import Path

SANDBOX_PATH = Path(__file__).resolve().parent
