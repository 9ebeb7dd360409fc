"""The package's floors (``course_utils/__init__.py``): every module imports only from its own floor or below."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "course_utils"
FLOORS = [
    ("ground", {"errors", "validation", "masks", "config", "runtime", "lesson_times", "small_loop"}),
    ("blocks", {"embedding", "positional", "attention", "kv_cache", "modern", "layers", "memory"}),
    ("models", {"models", "language_model", "reference", "interop"}),
    ("text and data", {"tokenization", "data"}),
    ("the loop", {"losses", "training", "decoding", "mlm", "ngram", "distributed", "mlm_transfer", "instruct"}),
    ("recipes and commands", {"tasks", "train", "ablation", "mlm_checkpoint", "gpt_checkpoint"}),
    ("pictures", {"plotting", "diagrams", "widgets"}),
    ("teaching", {"exercises"}),
    ("classroom", {"classroom"}),
]
FLOOR = {module: level for level, (_, modules) in enumerate(FLOORS) for module in modules}


def top_level(path: pathlib.Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported_modules(path: pathlib.Path):
    """``(line, top-level course module)`` of every relative import in ``path``."""
    depth = len(path.relative_to(PACKAGE).parts) - 1          # folders below course_utils/
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.level - 1 < depth:                       # a sibling inside the same subpackage
                continue
            names = node.module.split(".")[:1] if node.module else [alias.name for alias in node.names]
            yield from ((node.lineno, name) for name in names)


def test_every_module_has_a_floor():
    modules = {top_level(p) for p in PACKAGE.rglob("*.py")} - {"__init__", "__main__", "py"}
    assert not modules - set(FLOOR), f"put these modules on a floor in this test and in __init__.py: " \
                                     f"{sorted(modules - set(FLOOR))}"


def test_no_import_points_up():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        me = top_level(path)
        if me not in FLOOR:
            continue
        for line, target in imported_modules(path):
            if target in FLOOR and FLOOR[target] > FLOOR[me]:
                upward.append(f"{path.relative_to(PACKAGE)}:{line} ({FLOORS[FLOOR[me]][0]}) imports {target} "
                              f"({FLOORS[FLOOR[target]][0]})")
    assert not upward, "imports from a higher floor:\n" + "\n".join(upward)
