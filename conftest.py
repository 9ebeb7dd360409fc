"""Test-session setup shared by the unit tests and the notebooks run under nbval.

* Blocks outbound network access here and in every notebook kernel (the classroom grader's guard,
  course_utils/classroom/sandbox/sitecustomize.py: kernels inherit PYTHONPATH and load it at start-up).
* One CPU thread per process unless the caller chose otherwise: two notebooks run at once (pytest-xdist), and on
  a 2-core machine two threads each made them fight for the cores (measured in benchmarks/README.md).
* ``slow``-marked checks run only with ``COURSE_SLOW_TESTS=1``.
* ``COURSE_GPU_CELLS=1`` asks for the notebooks' GPU cells to run: the session stops at once unless CUDA is
  available, so a "passed" run with that variable set means every GPU-gated cell really executed on a GPU
  (``COURSE_GPU_CELLS=1 pytest -n 1 notebooks/``).
* Exercise checks draw fresh random inputs per call; in test kernels they draw from ``COURSE_CHECK_SEED=0``, the
  seed the notebooks' stored outputs were executed with (a demo of a wrong answer names the input it failed on).
  Unit tests under ``tests/`` set a seed of their own per test.
* No tqdm progress bars in test kernels: a live bar sends hundreds of widget messages, and on a busy machine nbval
  gave up waiting for a cell's output (its fixed 5 s wait); learners still see the bars.
"""
import importlib.util
import os
import pathlib

import pytest

GUARD = pathlib.Path(__file__).parent / "course_utils" / "classroom" / "sandbox" / "sitecustomize.py"

os.environ["COURSE_BLOCK_NETWORK"] = "1"
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GUARD.parent), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("COURSE_CHECK_SEED", "0")  # the inputs an exercise check draws; stored notebook outputs use 0

_spec = importlib.util.spec_from_file_location("course_network_guard", GUARD)
network_guard = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(network_guard)  # installs the guard in this process

NOTEBOOK_SECONDS: dict[str, float] = {}
NBVAL_OUTPUT_WAIT_SECONDS = 60


def pytest_configure(config):
    if os.environ.get("COURSE_GPU_CELLS") == "1":
        import torch

        if not torch.cuda.is_available():
            pytest.exit("COURSE_GPU_CELLS=1 needs a CUDA GPU, and torch.cuda.is_available() is False here; "
                        "install the CUDA build of PyTorch (README, GPU install) or unset COURSE_GPU_CELLS", 2)


def pytest_collection_modifyitems(items):
    """Give nbval longer than its fixed 5 s to collect a finished cell's output on a loaded CI machine;
    skip ``slow`` checks unless COURSE_SLOW_TESTS=1."""
    run_slow = os.environ.get("COURSE_SLOW_TESTS") == "1"
    for item in items:
        if hasattr(item, "output_timeout"):
            item.output_timeout = NBVAL_OUTPUT_WAIT_SECONDS
        if not run_slow and item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.skip(reason="slow check: set COURSE_SLOW_TESTS=1 to run it"))


def pytest_runtest_logreport(report):
    """Add up the time of every cell (setup + call + teardown) per notebook."""
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        NOTEBOOK_SECONDS[path] = NOTEBOOK_SECONDS.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if NOTEBOOK_SECONDS:
        terminalreporter.section("notebook execution times (nbval)")
        for path, seconds in sorted(NOTEBOOK_SECONDS.items()):
            terminalreporter.write_line(f"{seconds:7.1f} s  {path}")
        terminalreporter.write_line(f"{sum(NOTEBOOK_SECONDS.values()):7.1f} s  all notebooks (summed)")
