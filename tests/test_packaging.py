"""requirements.txt (pip) and environment.yml (conda) install the same things; pyproject lists what the code imports."""
import pathlib
import re

import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def requirement_lines(text: str) -> set[str]:
    return {line.strip().lstrip("- ").strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")}


def test_environment_yml_mirrors_requirements_txt():
    requirements = requirement_lines((ROOT / "requirements.txt").read_text())
    environment = (ROOT / "environment.yml").read_text().split("- pip:", 1)[1]
    assert requirement_lines(environment) == requirements


def test_pyproject_depends_on_every_runtime_requirement():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = {re.split(r"[<>=!~ ]", dep)[0].lower() for dep in pyproject["project"]["dependencies"]}
    pinned = {re.split(r"==", line)[0].lower() for line in requirement_lines((ROOT / "requirements.txt").read_text())
              if "==" in line}
    dev = {re.split(r"[<>=!~ ]", dep)[0].lower() for dep in pyproject["project"]["optional-dependencies"]["dev"]}
    assert pinned == declared | dev
