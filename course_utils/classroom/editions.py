"""Student and teacher editions of the course, built from this checkout.

* **Student edition** — the course without its answers: exercise solutions withheld in the package copy
  (``q1.solution()`` says so, ``q1.hint()`` and ``q1.check()`` work), outputs of exercise cells cleared, no test
  that needs a solution, no mistake catalogue, no classroom tools (nor their documents: TEACHING.md,
  SECURITY.md and the README's teaching section). A build that still
  contains a solution fails.
* **Teacher edition** — the whole course with every exercise filled in with its solution and executed (each check
  must print ✅, or the build fails), plus teaching notes per lesson (:mod:`.notes`: a 90-minute plan per sitting,
  the lesson's questions with model answers) and a 10-week syllabus (:mod:`.syllabus`, ``syllabus.md``). An exercise
  the notebook has no cells for gets them appended at the end.
"""
from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import nbformat
from nbclient import NotebookClient

import course_utils
from course_utils.errors import CourseValueError
from course_utils.exercises.core import Exercise

from .cells import answer_cells, check_points, checked_exercises, lesson_exercises, notebook_lesson
from .grader import Limits, kernel_environment
from .withheld import left_out_of_student_edition

COURSE_ROOT = Path(course_utils.__file__).resolve().parent.parent
TEACHING_SECTION = "## Teaching with this course"  # the README section of the classroom kit: not for students
SKIPPED_DIRECTORIES = {".git", ".venv", "__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".hypothesis"}
EXECUTION_LIMITS = Limits(notebook_seconds=1800)  # execute_notebook's default


def course_files(root: Path = COURSE_ROOT) -> list[str]:
    """The course's files, relative to ``root``: what git tracks (and untracked files it does not ignore)."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                                capture_output=True, text=True, check=True).stdout.splitlines()
        return sorted(path for path in listed if (root / path).is_file())
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but caches and environments
        return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()
                      and not SKIPPED_DIRECTORIES & set(path.relative_to(root).parts))


def _prepare_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and any(out_dir.iterdir()):
        raise CourseValueError(f"{out_dir} is not empty; give a new or empty folder for the edition "
                               "(nothing is overwritten).")
    out_dir.mkdir(parents=True, exist_ok=True)


def _selected_notebook(path: str, root: Path, lessons: set[str] | None) -> bool:
    if lessons is None or not (path.startswith("notebooks/") and path.endswith(".ipynb")):
        return True
    return notebook_lesson(nbformat.read(root / path, as_version=4)) in lessons


def all_exercises() -> dict[str, Exercise]:
    """``{"lesson03.q1": Exercise, …}`` for every lesson of the package."""
    lessons = sorted(p.stem[len("lesson"):] for p in (COURSE_ROOT / "course_utils" / "exercises").glob("lesson*.py"))
    return {f"lesson{lesson}.{key}": exercise for lesson in lessons
            for key, exercise in lesson_exercises(lesson).items()}


# ---------------------------------------------------------------------------------------------- student edition

def without_section(markdown: str, heading: str) -> str:
    """``markdown`` without the ``## heading`` section (up to the next ``## ``)."""
    start = markdown.find(f"\n{heading}\n")
    if start < 0:
        return markdown
    end = markdown.find("\n## ", start + len(heading) + 2)
    return markdown[:start + 1] + (markdown[end + 1:] if end >= 0 else "")


def _clear_exercise_outputs(notebook) -> None:
    lesson = notebook_lesson(notebook)
    if lesson is None:
        return
    exercise_cells = set(answer_cells(notebook, lesson).values())
    exercise_cells |= {i for i, cell in enumerate(notebook.cells)
                       if cell.cell_type == "code" and checked_exercises(cell.source)}
    for index in exercise_cells:
        cell = notebook.cells[index]
        cell.outputs = []  # the execution count stays: the notebook still reads as run top to bottom
        tags = [tag for tag in cell.metadata.get("tags", []) if tag != "nbval-check-output"]
        if tags:
            cell.metadata["tags"] = tags
        else:
            cell.metadata.pop("tags", None)


def _texts_of(path: Path) -> list[str]:
    """The texts a reader of the file could see: the file itself, its Python string constants, its cells."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    texts = [text]
    if path.suffix == ".py":
        try:
            texts += [node.value for node in ast.walk(ast.parse(text))
                      if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        except SyntaxError:
            pass
    if path.suffix == ".ipynb":
        notebook = nbformat.reads(text, as_version=4)
        for cell in notebook.cells:
            texts.append(cell.source)
            texts += [output.get("text", "") for output in cell.get("outputs", [])]
    return texts


def solution_leaks(folder: Path, secrets: dict[str, str] | None = None) -> list[str]:
    """``"path: lesson03.q1"`` for every secret (default: every exercise solution) found in a file under ``folder``."""
    if secrets is None:
        secrets = {key: exercise.solution for key, exercise in all_exercises().items()}
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        texts = _texts_of(path)
        found += [f"{path.relative_to(folder)}: {key}" for key, secret in secrets.items()
                  if secret.strip() and any(secret.strip() in text for text in texts)]
    return found


def build_student_edition(out_dir: Path, lessons: set[str] | None = None, root: Path = COURSE_ROOT) -> list[str]:
    """Write the student edition to ``out_dir``; returns the files written (relative paths)."""
    _prepare_out_dir(out_dir)
    written = []
    for path in course_files(root):
        if left_out_of_student_edition(path):   # the answers and the classroom kit (see .withheld)
            continue
        if not _selected_notebook(path, root, lessons):
            continue
        target = out_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.endswith(".ipynb"):
            notebook = nbformat.read(root / path, as_version=4)
            _clear_exercise_outputs(notebook)
            nbformat.write(notebook, target)
        elif path == "README.md":
            target.write_text(without_section((root / path).read_text(encoding="utf-8"), TEACHING_SECTION),
                              encoding="utf-8")
        else:
            shutil.copy2(root / path, target)
        written.append(path)
    leaks = solution_leaks(out_dir)
    if leaks:
        raise CourseValueError("the student edition still contains exercise solutions — " + "; ".join(leaks[:5]))
    return written


# ---------------------------------------------------------------------------------------------- teacher edition

def add_missing_exercise_cells(notebook) -> list[str]:
    """Append an answer, a binding and a check cell for each exercise of the lesson the notebook has no answer cell
    for (e.g. a capstone whose cells the lesson does not show yet); returns the exercises added."""
    lesson = notebook_lesson(notebook)
    missing = [key for key in lesson_exercises(lesson) if key not in answer_cells(notebook, lesson)]
    for key in missing:
        exercise = lesson_exercises(lesson)[key]
        notebook.cells += [
            nbformat.v4.new_markdown_cell(f"### Exercise {key} · {exercise.name}\n\n{getattr(exercise, 'task', '')}"),
            nbformat.v4.new_code_cell("\n".join(f"{name} = ...  # your code here" for name in exercise.variables)),
            nbformat.v4.new_code_cell(f"from course_utils.exercises import lesson{lesson}\n\n"
                                      f"{key} = lesson{lesson}.{key}.bind(globals())"),
            nbformat.v4.new_code_cell(f"{key}.check()")]
    return missing


def fill_solutions(notebook) -> list[str]:
    """Put each exercise's solution into its answer cell; returns the exercises filled (``["q1", …]``)."""
    lesson = notebook_lesson(notebook)
    exercises = lesson_exercises(lesson)
    filled = []
    for key, index in answer_cells(notebook, lesson).items():
        notebook.cells[index].source = exercises[key].solution.rstrip("\n")
        filled.append(key)
    return filled


def execute_notebook(notebook, workdir: Path, limits: Limits = EXECUTION_LIMITS) -> None:
    """Restart-and-run-all in a fresh sandboxed kernel (network blocked); a failing cell raises."""
    client = NotebookClient(notebook, timeout=int(limits.cell_seconds * 5), kernel_name="python3",
                            shutdown_kernel="immediate", allow_errors=False)
    client.allow_error_names = []
    client.execute(env=kernel_environment(limits), cwd=str(workdir))


def check_outputs(notebook) -> dict[str, str]:
    """``{"q1": "✅ …", …}``: what each exercise's check cell printed."""
    lesson = notebook_lesson(notebook)
    points = check_points(notebook, lesson_exercises(lesson))
    printed = {}
    for key, index in points.items():
        if index < len(notebook.cells):
            outputs = notebook.cells[index].get("outputs", [])
            printed[key] = "".join(output.get("text", "") for output in outputs).strip()
    return printed


def build_teacher_edition(out_dir: Path, lessons: set[str] | None = None, root: Path = COURSE_ROOT,
                          progress=print) -> list[str]:
    """Write the teacher edition to ``out_dir``; returns the notebooks executed."""
    from .notes import teaching_notes
    from .syllabus import syllabus

    _prepare_out_dir(out_dir)
    executed = []
    for path in course_files(root):
        if not _selected_notebook(path, root, lessons):
            continue
        target = out_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.startswith("notebooks/") and path.endswith(".ipynb"):
            notebook = nbformat.read(root / path, as_version=4)
            if notebook_lesson(notebook) is not None:
                progress(f"executing {path} with every solution filled in …")
                add_missing_exercise_cells(notebook)
                fill_solutions(notebook)
                execute_notebook(notebook, target.parent)
                failed = {k: v for k, v in check_outputs(notebook).items() if not v.startswith("✅")}
                if failed:
                    raise CourseValueError(f"{path}: a solution did not pass its own check: {failed}")
                executed.append(path)
                notes = out_dir / "teaching_notes" / f"lesson{notebook_lesson(notebook)}.md"
                notes.parent.mkdir(exist_ok=True)
                notes.write_text(teaching_notes(notebook), encoding="utf-8")
            nbformat.write(notebook, target)
        else:
            shutil.copy2(root / path, target)
    (out_dir / "syllabus.md").write_text(syllabus(root), encoding="utf-8")
    return executed
