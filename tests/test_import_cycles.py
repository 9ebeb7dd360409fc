"""The package has no import cycle: no module reaches itself through the modules it imports — at the top, or inside a
function (an import deferred into a function is still a dependency, only hidden). Read from the source, not run."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "course_utils"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source (``from . import x`` names module ``x``)."""
    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(resolve(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.update(resolve(f"{module}.{alias.name}") if f"{module}.{alias.name}" in known else resolve(module)
                         for alias in node.names)
    return found - {None, name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_cycle():
    known = modules()
    graph = {name: imports_of(name, path, known) & set(known) for name, path in known.items()}
    assert len(graph) > 30 and graph["course_utils.classroom.grader"]
    assert cycles(graph) == []


def test_the_check_finds_a_cycle_through_an_import_deferred_into_a_function(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "grader.py").write_text("def grade():\n    from .host import shared_host\n")
    (tmp_path / "pkg" / "host.py").write_text("from pkg import grader\n")
    known = {name: tmp_path / "pkg" / f"{name.split('.')[-1]}.py" for name in ("pkg.grader", "pkg.host")}
    known["pkg"] = tmp_path / "pkg" / "__init__.py"
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    assert graph == {"pkg.grader": {"pkg.host"}, "pkg.host": {"pkg.grader"}, "pkg": set()}
    assert cycles(graph) == [["pkg.grader", "pkg.host"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
