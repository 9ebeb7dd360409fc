"""The classroom grader on a synthetic class: exact CSV rows for right, blank, typical-mistake and tampered notebooks.

The submissions are small notebooks cut from the course's own (the import cell, the exercise binding, the answer and
check cells). The class is graded once, through the command line; each test then checks one student's rows. The
endless loop is graded on its own with a short cell limit.
"""
import csv
from pathlib import Path

import nbformat
import pytest
from classroom_helpers import (
    PRELUDE,
    cell_of,
    check_cell_of,
    expected,
    save_catalogue_notebook,
    small_notebook,
    solutions,
)

from course_utils.classroom.__main__ import main
from course_utils.classroom.cells import lesson_exercises, notebook_lesson
from course_utils.classroom.grader import Limits, grade_notebook


def stopped(status: str, cell: int, first_line: str, why: str) -> tuple[str, str]:
    return status, (f"not graded: the notebook stopped before this exercise, at code cell {cell} (`{first_line}`): "
                    f"{why}.")


LESSON05_MISTAKES = {  # wrong answers written here, for the tampering cases
    "q1": "def p_token_present(vocab_size, seq_len):\n    return seq_len / vocab_size\n",
    "q2": "def masked_max_pool(hidden, ids, pad_id=0):\n    return hidden.amax(dim=1)\n",
}
EVALUATE_REPLACED = ("the notebook replaced `course_utils.exercises.core.Exercise.evaluate`, which the checks rely "
                     "on; remove the code that assigns to it (grading needs PyTorch's and the course's own functions).")
TORCH_REPLACED = EVALUATE_REPLACED.replace("`course_utils.exercises.core.Exercise.evaluate`", "`torch.allclose`")
PROCESS_STOPPED = "the notebook's process stopped (the code exited Python, crashed or ran out of memory)"


def build_class(folder: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """Write every synthetic submission under ``folder``; return the expected rows of each."""
    want: dict[str, dict[str, tuple[str, str]]] = {}

    def save(name: str, notebook) -> None:
        (folder / name).mkdir(parents=True)
        nbformat.write(notebook, folder / name / f"{notebook_lesson(notebook)}.ipynb")

    save("solved", small_notebook("05", solutions("05")))
    want["solved"] = expected("05", solutions("05"))

    blank = small_notebook("05")
    save("blank", blank)
    want["blank"] = expected("05", {key: blank.cells[cell_of(blank, key)].source for key in lesson_exercises("05")})

    want["typical"] = save_catalogue_notebook(folder, "typical", "05")  # the other lessons: the slow test

    # lesson 05: printed success, a rebound check with a stored ✅ output, a notebook that exits Python
    printer = small_notebook("05", {"q1": LESSON05_MISTAKES["q1"] + 'print("✅ Probability of presence: Correct!")\n',
                                    "q3": "import os\nos._exit(0)\n"})
    q2_check = check_cell_of(printer, "q2")
    printer.cells[q2_check].outputs = [nbformat.v4.new_output("stream", name="stdout", text="✅ Correct!\n")]
    printer.cells.insert(q2_check, nbformat.v4.new_code_cell('q2.check = lambda: print("✅ Correct!")'))
    save("printer", printer)
    exercises05 = lesson_exercises("05")
    want["printer"] = {
        "lesson05.q1": ("incorrect", exercises05["q1"].evaluate_code(LESSON05_MISTAKES["q1"], PRELUDE).message),
        **{f"lesson05.{key}": ("not attempted", exercises05[key].evaluate_code(
            printer.cells[cell_of(printer, key)].source, PRELUDE).message) for key in ("q2",)},
    }
    exits = cell_of(printer, "q3")   # every exercise checked after that cell: stopped there
    want["printer"].update({f"lesson05.{key}": stopped("error", exits + 1, "import os", PROCESS_STOPPED)
                            for key in lesson_exercises("05") if check_cell_of(printer, key) > exits})

    # lesson 05, cells deleted and moved: q1's check deleted (graded at the end); q2's check moved above its answer;
    # q3's answer and check moved to the top, before lesson05 is even imported; and a cell that asks for more memory
    # than the cap
    shuffled = small_notebook("05", solutions("05"))
    cells = shuffled.cells
    q3_cells = [cells[cell_of(shuffled, "q3")], cells[check_cell_of(shuffled, "q3")]]
    q2_answer, q2_check = cells[cell_of(shuffled, "q2")], cells[check_cell_of(shuffled, "q2")]
    dropped = {id(cells[check_cell_of(shuffled, "q1")])} | set(map(id, q3_cells))
    rest = [cell for cell in cells if id(cell) not in dropped]
    answer_at, check_at = [next(i for i, c in enumerate(rest) if c is cell) for cell in (q2_answer, q2_check)]
    rest[answer_at], rest[check_at] = q2_check, q2_answer
    memory_hog = nbformat.v4.new_code_cell("hog = bytearray(8 * 2**30)  # twice the cap")
    shuffled.cells = rest[:1] + [memory_hog] + q3_cells + rest[1:]
    save("shuffler", shuffled)
    want["shuffler"] = {**expected("05", solutions("05")),
                        "lesson05.q2": ("not attempted", exercises05["q2"].evaluate({}).message)}

    # lesson 05: a checker replaced in a cell of its own, Exercise.evaluate replaced in an answer cell, torch patched.
    # What a cell the answer needs replaced makes the exercise an error, named; what any other cell replaced is put
    # back before the check: q1 is graded as it is, q3 is not blamed for q2's Exercise.evaluate but for its own
    # torch.allclose
    patcher = small_notebook("05", {
        **solutions("05"),
        "q1": LESSON05_MISTAKES["q1"],
        "q2": LESSON05_MISTAKES["q2"] + "from course_utils.exercises.core import Exercise, Result\n"
                                        "Exercise.evaluate = lambda self, namespace: Result('correct', 'Correct!')\n",
        "q3": solutions("05")["q3"] + "import torch\ntorch.allclose = lambda *args, **kwargs: True\n"})
    patcher.cells.insert(cell_of(patcher, "q1"), nbformat.v4.new_code_cell(
        "lesson05.check_p_token_present = lambda namespace: None"))
    save("patcher", patcher)
    q1_verdict = exercises05["q1"].evaluate_code(LESSON05_MISTAKES["q1"], PRELUDE)
    want["patcher"] = {"lesson05.q1": (q1_verdict.status, q1_verdict.message),
                       "lesson05.q2": ("error", EVALUATE_REPLACED), "lesson05.q3": ("error", TORCH_REPLACED)}

    (folder / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    stranger = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('hello')")])
    nbformat.write(stranger, folder / "stranger.ipynb")
    want["stranger"] = {"*": ("error", "not a course notebook: `metadata.course.lesson` is missing (hand in the "
                                       "course's notebook)")}
    return want


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    want = build_class(folder / "submissions")
    out = folder / "grades.csv"
    assert main(["grade", str(folder / "submissions"), "--out", str(out), "--feedback", str(folder / "feedback")]) == 0
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    got: dict[str, dict[str, tuple[str, str]]] = {}
    for submission, _notebook, exercise, status, message in rows[1:]:
        got.setdefault(submission, {})[exercise] = (status, message)
    return {"header": rows[0], "rows": rows[1:], "got": got, "want": want, "feedback": folder / "feedback"}


def test_csv_has_the_documented_columns_and_one_row_per_exercise(graded_class):
    assert graded_class["header"] == ["submission", "notebook", "exercise", "status", "message"]
    assert {row[3] for row in graded_class["rows"]} <= {"correct", "incorrect", "not attempted", "error", "timeout"}
    assert [row[1] for row in graded_class["rows"] if row[0] == "solved"] == ["05.ipynb"] * len(lesson_exercises("05"))


@pytest.mark.parametrize("student", ["solved", "blank"])
def test_right_and_blank_answers_get_the_checkers_verdict(graded_class, student):
    assert graded_class["got"][student] == graded_class["want"][student]


def test_one_catalogued_mistake_per_exercise_is_incorrect(graded_class):
    assert graded_class["got"]["typical"] == graded_class["want"]["typical"]
    assert {status for status, _ in graded_class["got"]["typical"].values()} == {"incorrect"}


def test_printed_success_rebound_check_and_exiting_python(graded_class):
    assert graded_class["got"]["printer"] == graded_class["want"]["printer"]


def test_the_package_block_is_not_the_learners_own(graded_class):
    status, message = graded_class["got"]["typical"]["lesson05.q3"]   # the catalogue's q3: the package's loop
    assert status == "incorrect" and "course_utils.training.train_one_epoch" in message and "your own" in message


def test_deleted_and_moved_exercise_cells_and_a_memory_hog(graded_class):
    assert graded_class["got"]["shuffler"] == graded_class["want"]["shuffler"]
    page = (graded_class["feedback"] / "shuffler.md").read_text(encoding="utf-8")
    assert "code cell 2 (`hog = bytearray(8 * 2**30)  # twice the cap`): MemoryError" in page


def test_replaced_checker_evaluate_and_torch(graded_class):
    assert graded_class["got"]["patcher"] == graded_class["want"]["patcher"]


def test_endless_loop_times_out(tmp_path):
    """A first cell that never ends: every exercise after it is ``timeout`` (a 3 s cell limit keeps this short)."""
    looper = small_notebook("05", solutions("05"))
    looper.cells.insert(0, nbformat.v4.new_code_cell("while True:\n    pass"))
    nbformat.write(looper, tmp_path / "looper.ipynb")
    graded = grade_notebook(tmp_path / "looper.ipynb", "looper", "looper.ipynb", Limits(cell_seconds=3))
    loop_stop = stopped("timeout", 1, "while True:", "it ran past the 3 s limit of one cell")
    assert [(row.exercise, row.status, row.message) for row in graded.rows] == [
        (f"lesson05.{key}", *loop_stop) for key in lesson_exercises("05")]


def test_invalid_json_and_foreign_notebooks_get_one_error_row(graded_class):
    assert graded_class["got"]["stranger"] == graded_class["want"]["stranger"]
    [(status, message)] = graded_class["got"]["broken"].values()
    assert list(graded_class["got"]["broken"]) == ["*"] and status == "error"
    assert message.startswith("not a valid notebook (NotJSONError")


def test_no_tampered_notebook_earns_correct_for_a_wrong_or_missing_answer(graded_class):
    got = graded_class["got"]
    assert got["printer"]["lesson05.q1"][0] != "correct" and got["patcher"]["lesson05.q2"][0] != "correct"


def test_feedback_page_per_student_with_messages_and_hints(graded_class):
    pages = sorted(path.stem for path in graded_class["feedback"].glob("*.md"))
    assert pages == sorted(graded_class["got"])
    page = (graded_class["feedback"] / "typical.md").read_text(encoding="utf-8")
    q1 = lesson_exercises("05")["q1"]  # answered with a catalogued mistake
    assert f"0 of {len(lesson_exercises('05'))} exercises correct." in page
    assert graded_class["want"]["typical"]["lesson05.q1"][1] in page and q1.hint in page



def test_no_reference_solution_counts_as_the_package_block_but_the_package_block_does():
    from course_utils.classroom.editions import all_exercises
    from course_utils.classroom.provenance import borrowed_block
    from course_utils.tokenization import merge_pair

    for key, exercise in all_exercises().items():
        namespace = exercise.run_solution()
        assert [borrowed_block(v, namespace[v]) for v in exercise.variables] == [None] * len(exercise.variables), key
    wrapper = {}
    exec("from course_utils import tokenization\n"
         "def merge_pair(ids, pair, new_id):\n    return tokenization.merge_pair(ids, pair, new_id)\n", wrapper)
    assert borrowed_block("merge_pair", merge_pair) == "course_utils.tokenization.merge_pair"
    assert borrowed_block("merge_pair", wrapper["merge_pair"]) == "course_utils.tokenization.merge_pair"


def test_checks_draw_from_the_seed_of_the_grading_call_not_of_the_host(tmp_path, monkeypatch):
    """The grader's host outlives one call: a later call with another ``COURSE_CHECK_SEED`` draws that seed's
    inputs, as the checker does in the learner's own kernel (the messages name the drawn sizes)."""
    messages = []
    for seed in ("11", "12"):
        monkeypatch.setenv("COURSE_CHECK_SEED", seed)
        folder = tmp_path / seed
        want = save_catalogue_notebook(folder, "mistakes", "05")
        graded = grade_notebook(folder / "mistakes" / "05.ipynb", "mistakes", "05.ipynb")
        assert {row.exercise: (row.status, row.message) for row in graded.rows} == want
        messages.append(want)
    assert messages[0] != messages[1]          # the two seeds draw other inputs
