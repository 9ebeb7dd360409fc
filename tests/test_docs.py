"""The four documents (README for learners, TEACHING, MAINTAINING, SECURITY) keep their promises: every link
resolves (files and headings), every path and `python -m` command they name exists, and the README stays short."""
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ["README.md", "TEACHING.md", "MAINTAINING.md", "SECURITY.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`((?:course_utils|tests|tools|benchmarks|notebooks)/[\w./*-]+)`")
MODULE = re.compile(r"python -m ((?:course_utils|tests)[\w.]*)")


def anchor(heading: str) -> str:
    """GitHub's anchor for a markdown heading."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {anchor(line) for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_links_resolve(name):
    problems = []
    for target in LINK.findall((ROOT / name).read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, fragment = target.partition("#")
        path = ROOT / name if not file else (ROOT / file)
        if not path.exists():
            problems.append(f"{target}: no such file")
        elif fragment and fragment not in anchors(path):
            problems.append(f"{target}: no heading with that anchor")
    assert not problems, problems


@pytest.mark.parametrize("name", DOCUMENTS)
def test_named_paths_and_commands_exist(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    missing = [path for path in CODE_PATH.findall(text)
               if not any(ROOT.glob(path.rstrip("/"))) and not (ROOT / path).exists()]
    missing += [module for module in MODULE.findall(text) if importlib.util.find_spec(module) is None]
    assert not missing, missing


def test_readme_is_for_learners_and_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README has {len(lines)} lines; move maintainers' or teachers' material out"
