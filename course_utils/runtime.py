"""Reproducibility and hardware helpers: seeds, device choice, CPU threads, an environment report."""
from __future__ import annotations

__all__ = ["environment_report", "pick_device", "seed_everything", "set_threads"]

import os
import platform
import random

import numpy as np
import torch

from .errors import CourseValueError
from .validation import check_bool, check_int, check_positive_int


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch (CPU and every CUDA device) so a rerun repeats its numbers.

    ``seed`` is an int in ``[0, 2**32)`` (NumPy's range).
    """
    check_int("seed", seed)
    if not 0 <= seed < 2**32:
        raise CourseValueError(f"seed must lie in [0, 2**32) (NumPy's seed range), got {seed}; e.g. seed_everything(0)")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)


def pick_device(prefer_gpu: bool = True) -> torch.device:
    """Return ``cuda`` when a CUDA GPU is available (and preferred), otherwise ``cpu``."""
    check_bool("prefer_gpu", prefer_gpu)
    if prefer_gpu and torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def set_threads(n_threads: int = 1) -> None:
    """Set how many CPU threads one PyTorch operation may use (``torch.set_num_threads``); every lesson calls
    ``set_threads(1)`` at its top (lesson 00): with several threads some sums are added up in another order, so the
    last digits of a result can differ from the printed ones. Larger models of your own may run faster with more:
    time one training step with each setting on your machine.
    """
    check_positive_int("n_threads", n_threads)
    torch.set_num_threads(n_threads)


def environment_report() -> dict[str, str]:
    """Versions, device and thread settings as a flat ``{name: value}`` dict (print it as a table)."""
    import matplotlib

    report = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "device": str(pick_device()),
        "cuda available": str(torch.cuda.is_available()),
        "torch threads": str(torch.get_num_threads()),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "(unset)"),
    }
    if torch.cuda.is_available():
        report["gpu"] = torch.cuda.get_device_name(0)
    return report
