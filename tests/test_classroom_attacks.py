"""The grader out of reach of learner code: a hostile class, one attack per notebook, earns nothing.

Every notebook answers lesson 05's q2 wrongly (the padding is averaged in) and tries to get it graded ``correct``
anyway — by forging the grader's report, reaching its objects, fooling the comparison or blinding a guard (the
attacks are in tests/classroom_helpers.py; SECURITY.md has a row for each). The class is graded once,
two notebooks at a time; each test reads one notebook's rows. The other exercises of each notebook are right, and
must still be graded: q1, checked before the attack's cell, ``correct``; q3, checked in a process where the
attack's cell ran, ``correct`` or an ``error`` that names what the cell did — never a wrong verdict.

The answer is checked in the process as the learner's check cell found it, so a rebinding between the answer and
its check — ``globals()["f"] = …``, ``exec``, a function called in between — is graded as the learner saw it.

The *controls* show that the attacks on the check itself are real: a plain ``evaluate`` in the learner's process —
what the grader did before it moved the check out of the learner's kernel — is fooled by them.
"""
import os

import nbformat
import pytest
import torch
from classroom_helpers import (
    DISPATCH_MODE,
    FUNCTION_MODE,
    INT_SUBCLASS,
    PIPES,
    PROFILE_BLIND,
    REBINDINGS,
    SELF_RESTORING,
    TENSOR_SUBCLASS,
    WRONG_MESSAGE,
    WRONG_Q2,
    attack_notebooks,
    check_cell_of,
    rebinding_notebook,
    small_notebook,
    solutions,
)

from course_utils.classroom.grader import Limits, grade, grade_notebook
from course_utils.exercises import lesson04, lesson05

BEFORE = "lesson05.q1"                  # checked before the attack's cell runs
AFTER = ("lesson05.q3",)  # a right answer checked after it, in the process it ran in


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "search").mkdir()
    want = attack_notebooks(folder / "submissions", str(folder / "search"))
    rule = small_notebook("05", solutions("05"))  # the grade is for the state at the check point
    rule.cells.insert(check_cell_of(rule, "q2") + 1, nbformat.v4.new_code_cell(WRONG_Q2))
    notebooks = {"rebound_after_check": rule}
    late = small_notebook("05", {**solutions("05"), "q2": WRONG_Q2})
    late.cells.insert(check_cell_of(late, "q2") + 1, nbformat.v4.new_code_cell(solutions("05")["q2"]))
    notebooks["fixed_after_check"] = late
    for how in REBINDINGS:   # right, then rebound to a wrong one above the check; and the other way round
        notebooks[f"spoiled_{how}"] = rebinding_notebook(how, solutions("05")["q2"], WRONG_Q2)
        notebooks[f"repaired_{how}"] = rebinding_notebook(how, WRONG_Q2, solutions("05")["q2"])
    for name, notebook in notebooks.items():
        (folder / "submissions" / name).mkdir()
        nbformat.write(notebook, folder / "submissions" / name / "05.ipynb")
    graded = grade([folder / "submissions"], jobs=2)
    got = {g.submission: {row.exercise: (row.status, row.message) for row in g.rows} for g in graded}
    assert set(want) <= set(got)
    return got


ATTACKS = ["connection_file", "pipes", "function_mode", "dispatch_mode", "self_restoring", "tensor_subclass",
           "gc_reach", "json_module", "builtins", "thread", "profile_blind", "trace_blind"]


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_attack_earns_a_grade_and_the_rest_is_still_graded(hostile_class, attack):
    rows = hostile_class[attack]
    assert rows["lesson05.q2"][0] != "correct", rows["lesson05.q2"]
    if attack != "pipes":   # forged lines in the grader's channel void the whole notebook (see below)
        assert rows[BEFORE] == ("correct", lesson05.q1.success), rows
        for key in AFTER:
            status, message = rows[key]
            assert status == "correct" or (status == "error" and message), rows


def test_the_grader_has_no_kernel_to_connect_to(hostile_class):
    """The connection-file attack forged every report of the old grader's evaluation kernel; now nothing runs in
    a Jupyter kernel, and the answer gets the checker's own verdict."""
    status, message = hostile_class["connection_file"]["lesson05.q2"]
    assert status == "incorrect" and WRONG_MESSAGE in message


def test_forged_lines_in_the_grader_channel_void_the_notebook_instead_of_grading_it(hostile_class):
    """Run as root here, the notebook's code can open the notebook process's pipes through /proc and write forged
    reports: without the notebook's token they are not reports, and their presence (in the reports, or in the run's
    progress) turns every exercise into ``error`` (``--as-user`` keeps the code out of those pipes altogether: see
    the next test)."""
    rows = hostile_class["pipes"]
    if os.geteuid() == 0:
        assert {status for status, _ in rows.values()} == {"error"}
        assert all("did not send" in message or "progress channel" in message for _, message in rows.values())
    else:  # another user's undumpable processes: the pipes cannot even be opened
        assert rows["lesson05.q2"][0] == "incorrect"


@pytest.mark.skipif(os.geteuid() != 0, reason="--as-user needs a grader running as root")
def test_as_another_user_the_code_reaches_neither_the_grader_nor_the_teachers_files(tmp_path):
    teacher_file = tmp_path / "grades.csv"
    teacher_file.write_text("teacher's\n")
    os.chmod(tmp_path, 0o755)
    notebook = small_notebook("05", {**solutions("05"), "q2": WRONG_Q2})
    notebook.cells.append(nbformat.v4.new_code_cell(PIPES))   # after every check: the other grades stand
    notebook.cells.append(nbformat.v4.new_code_cell(f"open({str(teacher_file)!r}, 'w').write('forged')"))
    nbformat.write(notebook, tmp_path / "05.ipynb")
    graded = grade_notebook(tmp_path / "05.ipynb", "eve", "05.ipynb", Limits(user=61000))
    statuses = {row.exercise: row.status for row in graded.rows}
    assert statuses == {"lesson05.q1": "correct", "lesson05.q2": "incorrect", "lesson05.q3": "correct"}
    assert teacher_file.read_text() == "teacher's\n"
    assert any("PermissionError" in error for error in graded.cell_errors)


def test_modes_left_active_are_switched_off_before_the_check(hostile_class):
    for attack in ("function_mode", "dispatch_mode"):
        status, message = hostile_class[attack]["lesson05.q2"]
        assert status == "incorrect" and WRONG_MESSAGE in message


def test_a_patch_that_undoes_itself_is_caught_while_the_check_runs(hostile_class):
    status, message = hostile_class["self_restoring"]["lesson05.q2"]
    assert status == "error" and "`torch.allclose`" in message and "put them back" in message


def test_values_that_lie_about_equality_are_refused(hostile_class):
    status, message = hostile_class["tensor_subclass"]["lesson05.q2"]
    assert status == "error" and "`Liar`, a subclass of torch.Tensor" in message
    status, message = hostile_class["int_subclass"]["lesson04.q1"]
    assert status == "error" and "`Liar`, a subclass of builtins.int" in message


def test_patched_modules_and_builtins_are_named(hostile_class):
    assert hostile_class["json_module"]["lesson05.q2"][0] == "error"
    assert "`json.dumps`" in hostile_class["json_module"]["lesson05.q2"][1]
    assert "`builtins.all`" in hostile_class["builtins"]["lesson05.q2"][1]


def test_threads_hooks_and_the_grader_objects_are_out_of_reach(hostile_class):
    status, message = hostile_class["thread"]["lesson05.q2"]   # a fork keeps only the thread that forks
    assert status == "incorrect" and WRONG_MESSAGE in message
    assert "sys.setprofile" in hostile_class["profile_blind"]["lesson05.q2"][1]
    assert "sys.settrace" in hostile_class["trace_blind"]["lesson05.q2"][1]
    status, message = hostile_class["gc_reach"]["lesson05.q2"]
    assert status == "error" and "changed the grader's own guard" in message


def test_the_grade_is_for_the_state_at_the_check_point(hostile_class):
    """A right answer that a later cell replaces with a wrong one keeps its grade, and a wrong one fixed after its
    check cell does not become right: the grader checks where the learner checked (a later ``q1.check()`` cell
    would move that point)."""
    assert hostile_class["rebound_after_check"]["lesson05.q2"] == ("correct", "Correct!")
    assert hostile_class["fixed_after_check"]["lesson05.q2"][0] == "incorrect"


@pytest.mark.parametrize("how", list(REBINDINGS))
def test_an_answer_rebound_above_its_check_is_graded_as_the_check_cell_saw_it(hostile_class, how):
    """A right answer rebound to a wrong one between its cell and its check cell — through ``globals()``, ``exec``
    or a function called there — is graded what the learner's check printed (❌), whatever a slice of "the cells
    the answer needs" would say; and a wrong one repaired that way is graded right, unless the repair is code the
    grader does not count (``exec`` runs text no scan can read)."""
    status, message = hostile_class[f"spoiled_{how}"]["lesson05.q2"]
    assert status == "incorrect" and WRONG_MESSAGE in message
    assert hostile_class[f"spoiled_{how}"]["lesson05.q1"] == ("correct", lesson05.q1.success)
    status, message = hostile_class[f"repaired_{how}"]["lesson05.q2"]
    if how == "exec":
        assert status == "error" and "`exec`" in message
    else:
        assert (status, message) == ("correct", "Correct!")
    status, message = hostile_class[f"spoiled_{how}"]["lesson05.q2"]
    assert (status, _diagnosis(message)) == _own_check(how, solutions("05")["q2"], WRONG_Q2)
    assert _own_check(how, WRONG_Q2, solutions("05")["q2"]) == ("correct", "Correct!")


def _diagnosis(message: str) -> str:
    return message.split(" — ", 1)[-1]   # without the input drawn for it


def _own_check(how: str, answer: str, other: str) -> tuple[str, str]:
    """What the learner's own ``q2.check()`` says after the answer cell and the rebinding cell (run here)."""
    namespace: dict = {}
    exec(answer, namespace)
    exec(other.replace("def masked_max_pool", "def _other") + "\n\n" + REBINDINGS[how], namespace)
    result = lesson05.q2.evaluate(namespace)
    return result.status, _diagnosis(result.message)


# ------------------------------------------------------------------------------------------------- controls


def _fooled(code: str, exercise=lesson05.q2) -> str:
    """The status a plain ``evaluate`` in this process gives ``code`` (then the process is put back in order)."""
    allclose, equal = torch.allclose, torch.equal
    try:
        return exercise.evaluate_code(code).status
    finally:
        while torch._C._len_torch_function_stack():
            torch._C._pop_torch_function_stack()
        while torch._C._len_torch_dispatch_stack():
            torch._C._pop_torch_dispatch_stack(None)
        torch.allclose, torch.equal = allclose, equal


@pytest.mark.parametrize("code", [FUNCTION_MODE, DISPATCH_MODE, SELF_RESTORING, PROFILE_BLIND],
                         ids=["function_mode", "dispatch_mode", "self_restoring", "profile_blind"])
def test_control_in_the_learners_own_process_the_attack_fools_the_check(code):
    assert _fooled(WRONG_Q2) == "incorrect"
    assert _fooled(code) == "correct"


def test_control_the_int_and_tensor_subclasses_are_already_refused_by_the_checker():
    """The checkers turn a count into ``int`` and compare tensors as plain tensors, so these fail even unguarded;
    the guard still names them (above)."""
    assert _fooled(INT_SUBCLASS, lesson04.q1) == "incorrect"
    assert _fooled(TENSOR_SUBCLASS) == "incorrect"
