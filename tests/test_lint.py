"""The code is linted like code: ruff (rules in pyproject.toml) over the package, the tests, the tools, the
benchmarks and every notebook's cells."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_package_tests_tools_and_notebooks_are_lint_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format=concise", "."],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f"ruff found problems (fix them, or `ruff check --fix .`):\n{result.stdout}"
