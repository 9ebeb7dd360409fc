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


LESSON03_MISTAKES = {  # wrong answers written here, for the tampering cases
    "q1": "def attention_weights(query, key):\n    return torch.softmax(query @ key.transpose(-2, -1), dim=-1)\n",
    "q2": ("def masked_weights(query, key, mask):\n"
           "    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))\n"
           "    return torch.softmax(scores.masked_fill(~mask, float('-inf')), dim=-1)\n"),
}
EVALUATE_REPLACED = ("the notebook replaced `course_utils.exercises.core.Exercise.evaluate`, which the checks rely "
                     "on; remove the code that assigns to it (grading needs PyTorch's and the course's own functions).")
TORCH_REPLACED = EVALUATE_REPLACED.replace("`course_utils.exercises.core.Exercise.evaluate`", "`torch.allclose`")
PROCESS_STOPPED = "the notebook's process stopped (the code exited Python, crashed or ran out of memory)"
WRONG_COUNT_PAIRS = "def count_pairs(ids):\n    return {pair: 1 for pair in zip(ids, ids[1:])}\n"


def build_class(folder: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """Write every synthetic submission under ``folder``; return the expected rows of each."""
    want: dict[str, dict[str, tuple[str, str]]] = {}

    def save(name: str, notebook) -> None:
        (folder / name).mkdir(parents=True)
        nbformat.write(notebook, folder / name / f"{notebook_lesson(notebook)}.ipynb")

    save("solved", small_notebook("03", solutions("03")))
    want["solved"] = expected("03", solutions("03"))

    blank = small_notebook("03")
    save("blank", blank)
    want["blank"] = expected("03", {key: blank.cells[cell_of(blank, key)].source for key in lesson_exercises("03")})

    want["typical"] = save_catalogue_notebook(folder, "typical", "03")  # the other lessons: the slow test

    # lesson 01: printed success, the package's own block, a rebound check, a notebook that exits Python
    printer = small_notebook("01", {"q1": WRONG_COUNT_PAIRS + 'print("✅ Count adjacent pairs: Correct!")\n',
                                    "q2": "from course_utils.tokenization import merge_pair\n",
                                    "q4": "import os\nos._exit(0)\n"})
    q3_check = check_cell_of(printer, "q3")
    printer.cells[q3_check].outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                              text="✅ Pad a batch and build its mask: Correct!\n")]
    printer.cells.insert(q3_check, nbformat.v4.new_code_cell('q3.check = lambda: print("✅ Correct!")'))
    save("printer", printer)
    exercises01 = lesson_exercises("01")
    want["printer"] = {
        "lesson01.q1": ("incorrect", exercises01["q1"].evaluate_code(WRONG_COUNT_PAIRS, PRELUDE).message),
        "lesson01.q2": ("incorrect", "course_utils.tokenization.merge_pair"),  # the checker or the grader says so
        "lesson01.q3": ("not attempted", exercises01["q3"].evaluate({}).message),
        "lesson01.q4": stopped("error", cell_of(printer, "q4") + 1, "import os", PROCESS_STOPPED),
    }

    # lesson 03, cells deleted and moved: q1's answer deleted; q2's check deleted (graded at the end); q3's check
    # moved above its answer; q4's answer and check moved to the top, before q4 is even bound; and a cell that asks
    # for more memory than the cap
    shuffled = small_notebook("03", solutions("03"))
    cells = shuffled.cells
    q4_cells = [cells[cell_of(shuffled, "q4")], cells[check_cell_of(shuffled, "q4")]]
    q3_answer, q3_check = cells[cell_of(shuffled, "q3")], cells[check_cell_of(shuffled, "q3")]
    dropped = {id(cells[cell_of(shuffled, "q1")]), id(cells[check_cell_of(shuffled, "q2")])} | set(map(id, q4_cells))
    rest = [cell for cell in cells if id(cell) not in dropped]
    answer_at, check_at = [next(i for i, c in enumerate(rest) if c is cell) for cell in (q3_answer, q3_check)]
    rest[answer_at], rest[check_at] = q3_check, q3_answer
    memory_hog = nbformat.v4.new_code_cell("hog = bytearray(8 * 2**30)  # twice the cap")
    shuffled.cells = rest[:1] + [memory_hog] + q4_cells + rest[1:]
    save("shuffler", shuffled)
    exercises03 = lesson_exercises("03")
    want["shuffler"] = {**expected("03", solutions("03")),
                        "lesson03.q1": ("not attempted", exercises03["q1"].evaluate({}).message),
                        "lesson03.q3": ("not attempted", exercises03["q3"].evaluate({}).message)}

    # lesson 03: a checker replaced in a cell of its own, Exercise.evaluate replaced in an answer cell, torch patched.
    # Each exercise is evaluated with the cells its own answer needs: q2's patch reaches only q2; q3's cell patches
    # torch, which q5's answer cell reads (it is kept in q5's slice), but q4's answer needs neither
    patcher = small_notebook("03", {
        **solutions("03"),
        "q1": LESSON03_MISTAKES["q1"],
        "q2": LESSON03_MISTAKES["q2"] + "from course_utils.exercises.core import Exercise, Result\n"
                                        "Exercise.evaluate = lambda self, namespace: Result('correct', 'Correct!')\n",
        "q3": solutions("03")["q3"] + "torch.allclose = lambda *args, **kwargs: True\n"})
    patcher.cells.insert(cell_of(patcher, "q1"), nbformat.v4.new_code_cell(
        "lesson03.check_attention_weights = lambda namespace: None"))
    save("patcher", patcher)
    q1_verdict = exercises03["q1"].evaluate_code(LESSON03_MISTAKES["q1"], PRELUDE)
    want["patcher"] = {"lesson03.q1": (q1_verdict.status, q1_verdict.message),
                       "lesson03.q2": ("error", EVALUATE_REPLACED), "lesson03.q3": ("error", TORCH_REPLACED),
                       "lesson03.q4": ("correct", "Correct!"), "lesson03.q5": ("error", TORCH_REPLACED)}

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
    assert [row[1] for row in graded_class["rows"] if row[0] == "solved"] == ["03.ipynb"] * len(lesson_exercises("03"))


@pytest.mark.parametrize("student", ["solved", "blank"])
def test_right_and_blank_answers_get_the_checkers_verdict(graded_class, student):
    assert graded_class["got"][student] == graded_class["want"][student]


def test_one_catalogued_mistake_per_exercise_is_incorrect(graded_class):
    assert graded_class["got"]["typical"] == graded_class["want"]["typical"]
    assert {status for status, _ in graded_class["got"]["typical"].values()} == {"incorrect"}


def test_printed_success_package_block_rebound_check_and_exiting_python(graded_class):
    got, want = dict(graded_class["got"]["printer"]), dict(graded_class["want"]["printer"])
    (status, message), (want_status, names) = got.pop("lesson01.q2"), want.pop("lesson01.q2")
    assert got == want
    assert status == want_status and names in message and "your own" in message


def test_deleted_and_moved_exercise_cells_and_a_memory_hog(graded_class):
    assert graded_class["got"]["shuffler"] == graded_class["want"]["shuffler"]
    page = (graded_class["feedback"] / "shuffler.md").read_text(encoding="utf-8")
    assert "code cell 2 (`hog = bytearray(8 * 2**30)  # twice the cap`): MemoryError" in page


def test_replaced_checker_evaluate_and_torch(graded_class):
    assert graded_class["got"]["patcher"] == graded_class["want"]["patcher"]


def test_endless_loop_times_out(tmp_path):
    """A first cell that never ends: every exercise after it is ``timeout`` (a 3 s cell limit keeps this short)."""
    looper = small_notebook("03", solutions("03"))
    looper.cells.insert(0, nbformat.v4.new_code_cell("while True:\n    pass"))
    nbformat.write(looper, tmp_path / "looper.ipynb")
    graded = grade_notebook(tmp_path / "looper.ipynb", "looper", "looper.ipynb", Limits(cell_seconds=3))
    loop_stop = stopped("timeout", 1, "while True:", "it ran past the 3 s limit of one cell")
    assert [(row.exercise, row.status, row.message) for row in graded.rows] == [
        (f"lesson03.{key}", *loop_stop) for key in lesson_exercises("03")]


def test_invalid_json_and_foreign_notebooks_get_one_error_row(graded_class):
    assert graded_class["got"]["stranger"] == graded_class["want"]["stranger"]
    [(status, message)] = graded_class["got"]["broken"].values()
    assert list(graded_class["got"]["broken"]) == ["*"] and status == "error"
    assert message.startswith("not a valid notebook (NotJSONError")


def test_no_tampered_notebook_earns_correct_for_a_wrong_or_missing_answer(graded_class):
    got = graded_class["got"]
    assert got["printer"]["lesson01.q1"][0] != "correct" and got["patcher"]["lesson03.q2"][0] != "correct"


def test_feedback_page_per_student_with_messages_and_hints(graded_class):
    pages = sorted(path.stem for path in graded_class["feedback"].glob("*.md"))
    assert pages == sorted(graded_class["got"])
    page = (graded_class["feedback"] / "typical.md").read_text(encoding="utf-8")
    q1 = lesson_exercises("03")["q1"]  # answered with a catalogued mistake
    assert f"0 of {len(lesson_exercises('03'))} exercises correct." in page
    assert graded_class["want"]["typical"]["lesson03.q1"][1] in page and q1.hint in page



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
        want = save_catalogue_notebook(folder, "mistakes", "03")
        graded = grade_notebook(folder / "mistakes" / "03.ipynb", "mistakes", "03.ipynb")
        assert {row.exercise: (row.status, row.message) for row in graded.rows} == want
        messages.append(want)
    assert messages[0] != messages[1]          # the two seeds draw other inputs
