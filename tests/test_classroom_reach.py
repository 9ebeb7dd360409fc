"""The grader's static scan (course_utils/classroom/reach.py): no honest answer is flagged, every way into Python's
machinery that the attacks use is. No process is started here."""
import nbformat
import pytest
from classroom_helpers import (
    BUILTINS,
    DISPATCH_MODE,
    FUNCTION_MODE,
    GC_REACH,
    INT_SUBCLASS,
    JSON_MODULE,
    PIPES,
    PROFILE_BLIND,
    ROOT,
    TENSOR_SUBCLASS,
    THREAD,
    TRACE_BLIND,
    connection_file_attack,
)
from mistakes import all_alternatives

from course_utils.classroom.cells import notebook_lesson
from course_utils.classroom.editions import all_exercises
from course_utils.classroom.reach import course_statements, reaching, reaching_in


def test_no_solution_and_no_right_answer_written_differently_is_flagged():
    flagged = {key: reaching_in(exercise.solution) for key, exercise in all_exercises().items()}
    assert {key: found for key, found in flagged.items() if found} == {}
    alternatives = {f"{a.lesson}.{a.exercise} {a.name}": reaching_in(a.prelude + a.code) for a in all_alternatives()}
    assert {name: found for name, found in alternatives.items() if found} == {}


def test_the_course_notebooks_own_cells_are_never_held_against_the_learner():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        known = course_statements(notebook_lesson(notebook))
        cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
        assert reaching(cells, known) == [], path.name


@pytest.mark.parametrize("attack", [BUILTINS, DISPATCH_MODE, FUNCTION_MODE, GC_REACH, INT_SUBCLASS, JSON_MODULE,
                                    PIPES, PROFILE_BLIND, TENSOR_SUBCLASS, THREAD, TRACE_BLIND,
                                    connection_file_attack(["/nowhere"])],
                         ids=["builtins", "dispatch_mode", "function_mode", "gc", "int_subclass", "json_module",
                              "pipes", "profile_blind", "tensor_subclass", "thread", "trace_blind", "connection_file"])
def test_the_attacks_reach_in(attack):
    assert reaching_in(attack)


@pytest.mark.parametrize("code, found", [
    ("import gc", "`import gc`"),
    ("import ctypes", "`import ctypes`"),
    ("from torch.overrides import TorchFunctionMode", "`from torch.overrides import TorchFunctionMode`"),
    ("torch._C._set_grad_enabled(False)", "`torch._C._set_grad_enabled`"),
    ("from course_utils.classroom import guard", "`from course_utils.classroom import guard`"),
    ("exec('x = 1')", "`exec`"),
    ("f = getattr", "`getattr` with a computed or special name"),
    ("getattr(torch, name)", "`getattr` with a computed or special name"),
    ("x = globals()", "`globals()`"),
    ("globals()[name] = f", "`globals()`"),
    ("globals()['__builtins__']", "`globals()`"),
    ("globals()['get_ipython']().user_ns", "`globals()`"),
    ("globals()['gc'].get_objects()", "`globals()`"),
    ("torch.__dict__['allclose'] = f", "`torch.__dict__`"),
    ("vars(torch)['allclose'] = f", "`vars`"),
    ("m.__dict__['x'] = f", "`.__dict__`"),
    ("self.__class__ = Fake", "`.__class__`"),
    ("getattr(self, '__class__')", "the string '__class__'"),
    ("class A:\n    def __eq__(self, other):\n        return True", "defining `__eq__`"),
    ("import operator\noperator.attrgetter('x')", "`.attrgetter`"),
    ("!ls", "an IPython magic or shell command (`system`)"),
    ("%run evil.py", "an IPython magic or shell command (`run_line_magic`)"),
    ("%time import gc", "`import gc`"),
    ("torch.load(f, weights_only=False)", "`weights_only=False`"),
    ("x = 1 + " + " + ".join(["1"] * 5000), "a cell too deep for the grader to read"),
])
def test_each_way_in_is_named(code, found):
    assert found in reaching_in(code)


@pytest.mark.parametrize("code", [
    "q1 = lesson03.q1.bind(globals())", "getattr(model.embedding, 'weight')", "setattr(self, name, layer)",
    "name = type(self).__name__", "super().__init__()", "%config InlineBackend.figure_format = 'png'",
    "%time y = torch.ones(3)", "torch.load(path)", "if __name__ == '__main__':\n    pass", "x = (",
    "globals()['masked_mean_pool'] = other", "f = globals()['f']",
])
def test_ordinary_code_is_not_flagged(code):
    assert reaching_in(code) == []
