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
