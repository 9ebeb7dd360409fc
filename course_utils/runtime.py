"""Reproducibility and hardware helpers: seeds, device choice, CPU threads, an environment report."""
from __future__ import annotations

import os
import platform
import random

import numpy as np
import torch


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and PyTorch (CPU and every CUDA device) so a rerun repeats its numbers."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)


def pick_device(prefer_gpu: bool = True) -> torch.device:
    """Return ``cuda`` when a CUDA GPU is available (and preferred), otherwise ``cpu``."""
    if prefer_gpu and torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def set_threads(n_threads: int = 1) -> None:
    """Set PyTorch's intra-op CPU threads.

    Small models on a laptop are often *faster* with one thread per process, because thread start-up costs more
    than the tiny matrix products save; measure on your machine (``notebooks/00_setup.ipynb`` shows how).
    """
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
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
