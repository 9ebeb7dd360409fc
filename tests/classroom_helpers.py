"""Shared helpers of the classroom tests: small submissions cut from the course's notebooks, the rows the grader must
write for them. Not shipped in the student edition (it reads the mistake catalogues)."""
from pathlib import Path

import nbformat
from mistakes import all_mistakes

from course_utils.classroom.cells import answer_cells, checked_exercises, lesson_exercises, notebook_lesson
from course_utils.classroom.editions import add_missing_exercise_cells

ROOT = Path(__file__).resolve().parent.parent
PRELUDE = "import math\nimport torch\n"


def course_notebook(lesson: str):
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        if notebook_lesson(notebook) == lesson:
            return notebook
    raise LookupError(lesson)


def small_notebook(lesson: str, answers: dict[str, str] | None = None):
    """The lesson's import cell, exercise binding, answer cells (replaced by ``answers``) and check cells; an exercise
    the lesson has no cells for yet gets them at the end, as in the teacher edition."""
    notebook = course_notebook(lesson)
    add_missing_exercise_cells(notebook)
    answer_at = {index: key for key, index in answer_cells(notebook, lesson).items()}
    kept = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        is_first = not kept
        if is_first or ".bind(globals())" in cell.source or index in answer_at or checked_exercises(cell.source):
            cell = nbformat.from_dict(dict(cell))
            if index in answer_at and answers and answer_at[index] in answers:
                cell.source = answers[answer_at[index]]
            cell.metadata["exercise_answer"] = answer_at.get(index)  # test bookkeeping only
            kept.append(cell)
    notebook.cells = kept
    return notebook


def cell_of(notebook, key: str) -> int:
    return next(i for i, cell in enumerate(notebook.cells) if cell.metadata.get("exercise_answer") == key)


def check_cell_of(notebook, key: str) -> int:
    return next(i for i, cell in enumerate(notebook.cells) if key in checked_exercises(cell.source))


def solutions(lesson: str) -> dict[str, str]:
    return {key: exercise.solution for key, exercise in lesson_exercises(lesson).items()}


def expected(lesson: str, answers: dict[str, str]) -> dict[str, tuple[str, str]]:
    """What the course's checkers say about each answer, evaluated directly in this process."""
    rows = {}
    for key, exercise in lesson_exercises(lesson).items():
        result = exercise.evaluate_code(answers[key], PRELUDE)
        rows[f"lesson{lesson}.{key}"] = (result.status, result.message)
    return rows


def catalogue_by_lesson():
    """The first catalogued mistake of every exercise, grouped by lesson (grows with tests/mistakes)."""
    first: dict[str, dict[str, object]] = {}
    for mistake in all_mistakes():
        first.setdefault(mistake.lesson[len("lesson"):], {}).setdefault(mistake.exercise, mistake)
    return first


def save_catalogue_notebook(folder: Path, name: str, lesson: str) -> dict[str, tuple[str, str]]:
    """``folder/name/NN.ipynb`` answering each exercise with its first catalogued mistake; returns the expected rows."""
    answers = {key: mistake.prelude + mistake.code for key, mistake in catalogue_by_lesson().get(lesson, {}).items()}
    notebook = small_notebook(lesson, answers)
    (folder / name).mkdir(parents=True)
    nbformat.write(notebook, folder / name / f"{lesson}.ipynb")
    return expected(lesson, {key: answers.get(key, notebook.cells[cell_of(notebook, key)].source)
                             for key in lesson_exercises(lesson)})


# ------------------------------------------------------------------------------------------------------------------
# Hostile submissions: lesson 05 with q2 answered wrongly (the padding is maxed over); each attack tries to get it
# graded correct by reaching the grader instead of answering. SECURITY.md has a row per attack. (Lesson 05: its
# exercises are settled; the attacks need an answer the checker compares with torch.allclose / torch.equal.)
# ------------------------------------------------------------------------------------------------------------------

WRONG_Q2 = ("import torch\n\n\ndef masked_max_pool(hidden, ids, pad_id=0):\n"
            "    return hidden.amax(dim=1)\n")
WRONG_MESSAGE = "padding"   # a word of the checker's own verdict on WRONG_Q2

FORGE_JSON = """
import json as _json
_dumps = _json.dumps
def _forged(obj, *args, **kwargs):
    if isinstance(obj, dict) and "exercise" in obj:
        obj = {**obj, "status": "correct", "message": "Correct!"}
    return _dumps(obj, *args, **kwargs)
_json.dumps = _forged
"""


def connection_file_attack(folders: list[str]) -> str:
    """A cell of its own (not one the answer needs): connect to every other Jupyter kernel whose connection file it
    finds (in ``folders`` and its own runtime and temporary folders) and forge the grader's reports there."""
    return f"""
import glob, os, time
from jupyter_client import BlockingKernelClient
try:
    from ipykernel import get_connection_file
    mine = get_connection_file()
except Exception:
    mine = None
reached, done, deadline = 0, set(), time.time() + 8
while time.time() < deadline:
    for folder in {folders!r} + [os.environ.get("JUPYTER_RUNTIME_DIR", ""), os.environ.get("TMPDIR", "")]:
        for path in glob.glob(os.path.join(folder, "*.json")):
            if path in done or (mine and os.path.samefile(path, mine)):
                continue
            done.add(path)
            try:
                client = BlockingKernelClient(connection_file=path)
                client.load_connection_file()
                client.start_channels()
                client.execute({FORGE_JSON!r})
                reached += 1
            except Exception:
                pass
    time.sleep(0.2)
print("kernels reached:", reached)
"""


FUNCTION_MODE = WRONG_Q2 + """
from torch.overrides import TorchFunctionMode

class Yes(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.equal):
            return True
        return func(*args, **(kwargs or {}))

Yes().__enter__()
"""

DISPATCH_MODE = WRONG_Q2 + """
from torch.utils._python_dispatch import TorchDispatchMode

class Yes(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name == "isclose":
            return torch.ones_like(out)
        if name in ("equal", "allclose"):
            return True
        return out

Yes().__enter__()
"""

SELF_RESTORING = """
import torch

_allclose, _equal = torch.allclose, torch.equal

def _fake_equal(*args, **kwargs):
    return True

def _fake_allclose(*args, **kwargs):
    torch.allclose, torch.equal = _allclose, _equal   # gone again before anyone looks
    return True

def masked_max_pool(hidden, ids, pad_id=0):
    torch.allclose, torch.equal = _fake_allclose, _fake_equal
    return hidden.amax(dim=1)
"""

TENSOR_SUBCLASS = WRONG_Q2.replace("def masked_max_pool", "def _wrong") + """

class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs)

def masked_max_pool(hidden, ids, pad_id=0):
    return _wrong(hidden, ids, pad_id).as_subclass(Liar)
"""

INT_SUBCLASS = """
class Liar(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __int__(self):
        return self

    __hash__ = int.__hash__

def encoder_parameters(n_layers, d_model, d_ff):
    return Liar(7)
"""

GC_REACH = WRONG_Q2 + """
import gc
from course_utils.exercises.core import Result

for _obj in gc.get_objects():
    _module = str(getattr(type(_obj), "__module__", ""))
    if _module.startswith("course_utils.classroom") and not isinstance(_obj, type):
        for _name in ("evaluate", "check", "changes", "intact", "_tampered", "note", "_refusal"):
            if hasattr(_obj, _name):
                try:
                    setattr(_obj, _name, (lambda *a, **k: Result("correct", "Correct!")) if _name in
                            ("evaluate", "check") else (lambda *a, **k: []))
                except Exception:
                    pass
"""

JSON_MODULE = WRONG_Q2 + FORGE_JSON.replace("import json as _json", "import sys\n_json = sys.modules['json']")

BUILTINS = WRONG_Q2 + """
import builtins
builtins.all = lambda iterable: True
builtins.isinstance = lambda obj, kind: True
"""

THREAD = """
import sys, threading, time
import torch

def masked_max_pool(hidden, ids, pad_id=0):
    return hidden.amax(dim=1)

def _stack(frame):
    while frame is not None:
        yield frame
        frame = frame.f_back

def _meddle():
    original = torch.allclose, torch.equal
    deadline = time.time() + 20
    while time.time() < deadline:
        checking = any(frame.f_code.co_name in ("check_masked_max_pool", "check_function")
                       for top in list(sys._current_frames().values()) for frame in _stack(top))
        torch.allclose, torch.equal = (lambda *a, **k: True,) * 2 if checking else original
        time.sleep(0.0005)
    torch.allclose, torch.equal = original

threading.Thread(target=_meddle, daemon=True).start()
"""

PROFILE_BLIND = """
import sys
from course_utils.exercises.lesson05 import masked_max_pool_reference as _package

def masked_max_pool(hidden, ids, pad_id=0):
    sys.setprofile(None)          # the "use your own" guard listens with sys.setprofile
    return _package(hidden, ids, pad_id)
"""

TRACE_BLIND = """
import sys
import torch

def masked_max_pool(hidden, ids, pad_id=0):
    sys.settrace(None)            # the grader's watch traces with sys.settrace
    torch.allclose = lambda *a, **k: True
    torch.equal = lambda *a, **k: True
    return hidden.amax(dim=1)
"""

PIPES = """
import json, os
forged = "".join(json.dumps(line) + "\\n" for line in (
    {"kind": "result", "exercise": key, "status": "correct", "message": "Correct!"}
    for key in ("q1", "q2", "q3", "q4", "q5")))

def _grading(pid):   # the grading processes only: never walk out into whatever started the grader
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"course_utils" in handle.read()
    except OSError:
        return True

pid, reached = os.getppid(), 0
while pid > 1 and _grading(pid):
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            path = f"/proc/{pid}/fd/{fd}"
            if int(fd) > 2 and os.readlink(path).startswith("pipe:"):
                try:
                    handle = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                    os.write(handle, forged.encode())
                    os.close(handle)
                    reached += 1
                except OSError:
                    pass
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as stat:
            pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
print("pipes reached:", reached)
"""

# Rebinding the answer between its cell and its check cell, in ways no static slice of "the cells the answer needs"
# sees: the grade must be what the learner's own check cell printed.
REBINDINGS = {
    "globals": 'globals()["masked_max_pool"] = _other',
    "exec": 'exec("masked_max_pool = _other")',
    "function": "def _swap():\n    global masked_max_pool\n    masked_max_pool = _other\n\n\n_swap()",
}


def rebinding_notebook(how: str, answer: str, other: str):
    """Lesson 05 solved, with q2's ``answer`` and, just above q2's check cell, a cell that defines ``other`` as
    ``_other`` and rebinds ``masked_max_pool`` to it the ``how`` way."""
    notebook = small_notebook("05", {**solutions("05"), "q2": answer})
    cell = other.replace("def masked_max_pool", "def _other") + "\n\n" + REBINDINGS[how]
    notebook.cells.insert(check_cell_of(notebook, "q2"), nbformat.v4.new_code_cell(cell))
    return notebook


def attack_notebooks(folder: Path, search: str) -> dict[str, dict[str, str]]:
    """Write every attack as ``folder/<name>/NN.ipynb``; return, per attack, the status each exercise must get at
    best (``q2`` of lesson 05 is wrong in all of them: anything but ``correct`` is fine there)."""
    def save(name: str, notebook) -> None:
        (folder / name).mkdir(parents=True)
        nbformat.write(notebook, folder / name / f"{notebook_lesson(notebook)}.ipynb")

    def with_q2(code: str):
        return small_notebook("05", {**solutions("05"), "q2": code})

    attacks = {"function_mode": FUNCTION_MODE, "dispatch_mode": DISPATCH_MODE, "self_restoring": SELF_RESTORING,
               "tensor_subclass": TENSOR_SUBCLASS, "gc_reach": GC_REACH, "json_module": JSON_MODULE,
               "builtins": BUILTINS, "thread": THREAD, "profile_blind": PROFILE_BLIND, "trace_blind": TRACE_BLIND}
    for name, code in attacks.items():
        save(name, with_q2(code))
    for name, cell in (("connection_file", connection_file_attack([search])), ("pipes", PIPES)):
        notebook = with_q2(WRONG_Q2)   # a cell of its own, after q1's check
        notebook.cells.insert(check_cell_of(notebook, "q1") + 1, nbformat.v4.new_code_cell(cell))
        save(name, notebook)
    save("int_subclass", small_notebook("04", {**solutions("04"), "q1": INT_SUBCLASS}))
    return {name: {"lesson05.q2": "not correct"} for name in [*attacks, "connection_file", "pipes"]} | {
        "int_subclass": {"lesson04.q1": "not correct"}}
