"""Test-session setup shared by the unit tests and the notebooks run under nbval.

* Blocks outbound network access here and in every notebook kernel (see tests/network_guard/sitecustomize.py:
  kernels inherit PYTHONPATH and load it at start-up).
* One CPU thread per process unless the caller chose otherwise: two notebooks run at once (pytest-xdist), and on
  a 2-core machine two threads each made them fight for the cores (measured in benchmarks/README.md).
* No tqdm progress bars in test kernels: a live bar sends hundreds of widget messages, and on a busy machine nbval
  gave up waiting for a cell's output (its fixed 5 s wait); learners still see the bars.
"""
import importlib.util
import os
import pathlib

GUARD = pathlib.Path(__file__).parent / "tests" / "network_guard" / "sitecustomize.py"

os.environ["COURSE_BLOCK_NETWORK"] = "1"
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GUARD.parent), os.environ.get("PYTHONPATH")]))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

_spec = importlib.util.spec_from_file_location("course_network_guard", GUARD)
network_guard = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(network_guard)  # installs the guard in this process

NOTEBOOK_SECONDS: dict[str, float] = {}
NBVAL_OUTPUT_WAIT_SECONDS = 60


def pytest_collection_modifyitems(items):
    """Give nbval longer than its fixed 5 s to collect a finished cell's output on a loaded CI machine."""
    for item in items:
        if hasattr(item, "output_timeout"):
            item.output_timeout = NBVAL_OUTPUT_WAIT_SECONDS


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
