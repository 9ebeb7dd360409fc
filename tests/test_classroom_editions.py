"""Student and teacher editions: no solution leaks into the student's copy; the teacher's is filled in and annotated."""
import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from mistakes import all_mistakes

from course_utils.classroom import notes, syllabus
from course_utils.classroom.cells import answer_cells, checked_exercises, lesson_exercises, notebook_lesson
from course_utils.classroom.editions import (
    add_missing_exercise_cells,
    all_exercises,
    build_student_edition,
    fill_solutions,
)
from course_utils.classroom.notes import (
    PLAN_MINUTES,
    lesson_questions,
    ninety_minute_plans,
    teaching_notes,
    unanswered,
)
from course_utils.exercises.core import WITHHELD

ROOT = Path(__file__).resolve().parent.parent
COURSE_NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def visible_texts(path: Path) -> list[str]:
    """A file as text, its Python string constants (implicit concatenation joined), its notebook cells."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    texts = [text]
    if path.suffix == ".py":
        texts += [node.value for node in ast.walk(ast.parse(text))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    if path.suffix == ".ipynb":
        for cell in nbformat.reads(text, as_version=4).cells:
            texts += [cell.source] + [output.get("text", "") for output in cell.get("outputs", [])]
    return texts


@pytest.fixture(scope="module")
def student_edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "edition"
    build_student_edition(out)
    return out


def test_no_solution_string_anywhere_in_the_student_edition(student_edition):
    solutions = {key: exercise.solution.strip() for key, exercise in all_exercises().items()}
    assert len(solutions) >= 24
    leaks = []
    for path in (p for p in student_edition.rglob("*") if p.is_file()):
        texts = visible_texts(path)
        leaks += [f"{path.relative_to(student_edition)}: {key}" for key, solution in solutions.items()
                  if any(solution in text for text in texts)]
    assert leaks == []


def test_no_mistake_catalogue_and_no_solution_tests_in_the_student_edition(student_edition):
    assert not (student_edition / "tests" / "mistakes").exists()
    assert not list((student_edition / "tests").glob("test_exercise*.py"))
    shipped = {p.relative_to(student_edition / "course_utils" / "classroom").as_posix()
               for p in (student_edition / "course_utils" / "classroom").rglob("*.py")}
    assert shipped == {"__init__.py", "sandbox/__init__.py", "sandbox/sitecustomize.py"}, \
        "only the offline guard of the classroom kit goes to students (their test run loads it), no grading tools"
    shown_by_the_lessons = "".join(cell.source for path in COURSE_NOTEBOOKS
                                   for cell in nbformat.read(path, as_version=4).cells)
    shown_by_the_lessons += "".join(f"{e.hint}{getattr(e, 'task', '')}" for e in all_exercises().values())
    catalogue = [m.code.strip() for m in all_mistakes() if m.code.strip() not in shown_by_the_lessons]
    for path in (p for p in student_edition.rglob("*") if p.is_file()):
        texts = visible_texts(path)
        assert not any(code in text for code in catalogue for text in texts), path


def test_exercise_cells_are_cleared_and_the_rest_kept(student_edition):
    for path in COURSE_NOTEBOOKS:
        course = nbformat.read(path, as_version=4)
        student = nbformat.read(student_edition / "notebooks" / path.name, as_version=4)
        assert student.metadata["course"] == course.metadata["course"]
        lesson = notebook_lesson(student)
        exercise_cells = set(answer_cells(student, lesson).values()) | {
            i for i, cell in enumerate(student.cells) if cell.cell_type == "code" and checked_exercises(cell.source)}
        assert len(exercise_cells) >= 2 * len(answer_cells(course, lesson))
        for index, (kept, original) in enumerate(zip(student.cells, course.cells)):
            assert kept.source == original.source
            if index in exercise_cells:
                assert kept.outputs == [] and "nbval-check-output" not in kept.metadata.get("tags", [])
            elif kept.cell_type == "code":
                assert kept.outputs == original.outputs


def test_student_package_withholds_solutions_but_hints_and_checks_work(student_edition):
    code = ("from course_utils.exercises import lesson05\n"
            "q2 = lesson05.q2.bind(globals())\n"
            "q2.solution()\nq2.hint()\nq2.check()\n"
            "def masked_max_pool(hidden, ids, pad_id=0):\n"
            "    return hidden.masked_fill((ids == pad_id)[..., None], float('-inf')).amax(1)\n"
            "q2.check()\n")
    env = {**os.environ, "PYTHONPATH": str(student_edition)}
    printed = subprocess.run([sys.executable, "-c", code], cwd=student_edition, env=env, capture_output=True,
                             text=True, check=True).stdout
    from course_utils.exercises.lesson05 import q2
    assert printed.splitlines() == [f"📖 Solution ({q2.name}):", WITHHELD,
                                    f"💡 Hint 1 ({q2.name}): {q2.hints[0]}  (More: .hint(2).)",
                                    f"✍️ {q2.name}: {q2.evaluate({}).message}",
                                    *f"✅ {q2.name}: {q2.success}".splitlines()]


def test_student_edition_runs_its_own_tests(student_edition):
    result = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider",
                             "tests/test_network_guard.py"], cwd=student_edition,
                            env={**os.environ, "PYTHONPATH": str(student_edition)}, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:]


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.name)
def test_teacher_fill_puts_every_solution_in_its_answer_cell(path):
    notebook = nbformat.read(path, as_version=4)
    lesson = notebook_lesson(notebook)
    added = add_missing_exercise_cells(notebook)
    assert add_missing_exercise_cells(notebook) == []  # once is enough
    answers = answer_cells(notebook, lesson)
    assert sorted(answers) == sorted(lesson_exercises(lesson)) and set(added) <= set(answers)
    assert sorted(fill_solutions(notebook)) == sorted(answers)
    assert answer_cells(notebook, lesson) == {}  # no placeholder left
    for key, index in answers.items():
        assert notebook.cells[index].source == lesson_exercises(lesson)[key].solution.rstrip("\n")


def lesson_headings(notebook) -> list[str]:
    return [line[3:].strip() for cell in notebook.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("## ")]


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.name)
def test_teaching_notes_plan_ninety_minutes_per_sitting(path):
    notebook = nbformat.read(path, as_version=4)
    plans = ninety_minute_plans(notebook)
    assert len(plans) == len(notes.RULE.sittings(notebook))
    for plan in plans:
        assert sum(minutes for minutes, _ in plan.rows) == PLAN_MINUTES and all(m > 0 for m, _ in plan.rows)
    assert [activity[2:].split(" — GPU only")[0] for plan in plans for _, activity in plan.rows
            if activity.startswith("§ ")] == [h for h in lesson_headings(notebook)
                                               if not h.startswith(notes.CLOSING_SECTIONS)
                                               and "exercise" not in h.lower()]
    exercises = lesson_exercises(notebook_lesson(notebook))
    capstones = [key for key, exercise in exercises.items() if getattr(exercise, "task", "")]
    budgeted = [(m, activity) for plan in plans for m, activity in plan.rows + plan.homework
                if activity.startswith("Capstone ")]
    assert sorted(activity.split(" ")[1] for _, activity in budgeted) == sorted(capstones)
    assert {m for m, _ in budgeted} <= {notes.MINUTES_PER_CAPSTONE}
    notes_text = teaching_notes(notebook)
    for exercise in exercises.values():
        assert exercise.name in notes_text and exercise.solution.strip() not in notes_text
    assert "## The lesson's questions, with model answers" in notes_text and "## Discussion questions" in notes_text


def test_the_plan_uses_the_time_rule_of_the_lesson_times_tool():
    """One source of truth: the plan's minutes per exercise and capstone are the tool's constants."""
    from course_utils import lesson_times as tool

    assert (notes.MINUTES_PER_EXERCISE, notes.MINUTES_PER_CAPSTONE) == (tool.MINUTES_PER_EXERCISE,
                                                                        tool.MINUTES_PER_CAPSTONE) == (8, 30)


def with_gpu_section(source: str = "if torch.cuda.is_available():\n    print('timed on the GPU')"):
    """Lesson 06 with a section whose one code cell is ``source`` inserted before its closing sections."""
    notebook = nbformat.read(ROOT / "notebooks" / "06_masked_language_model.ipynb", as_version=4)
    at = next(i for i, c in enumerate(notebook.cells) if c.cell_type == "markdown"
              and c.source.startswith("## " + notes.CLOSING_SECTIONS[0]))
    notebook.cells[at:at] = [nbformat.v4.new_markdown_cell("## On a GPU\n\nThe same step, timed on a GPU."),
                             nbformat.v4.new_code_cell(source)]
    return notebook


def test_gpu_only_sections_get_at_most_two_minutes_and_say_so():
    labelled = [(m, a) for plan in ninety_minute_plans(with_gpu_section()) for m, a in plan.rows if "GPU only" in a]
    assert len(labelled) == 1 and labelled[0][0] <= 2
    assert notes.gpu_only_cell("def f():\n    pass\nif torch.cuda.is_available():\n    f()\nelse:\n    print('no')")
    assert not notes.gpu_only_cell("device = pick_device()\nif torch.cuda.is_available():\n    print(device)")
    assert not notes.gpu_only_cell("x = torch.ones(3)")


def test_a_gpu_section_that_runs_on_a_cpu_is_not_called_gpu_only():
    runs_on_a_cpu = with_gpu_section("x = 1\nif torch.cuda.is_available():\n    print('timed on the GPU')")
    assert not [a for plan in ninety_minute_plans(runs_on_a_cpu) for _, a in plan.rows if "GPU only" in a]


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.name)
def test_every_question_of_a_lesson_has_a_model_answer_in_the_teacher_notes(path):
    notebook = nbformat.read(path, as_version=4)
    questions = lesson_questions(notebook)
    assert questions, "the lesson ends with 'Check your understanding' or 'Why?' questions"
    assert unanswered(notebook) == []
    text = teaching_notes(notebook)
    for question, answer in questions:
        assert question in text and answer in text
    assert "Without a model answer" not in text


def test_a_question_without_an_answer_is_listed():
    notebook = nbformat.read(ROOT / "notebooks" / "05_classifier.ipynb", as_version=4)
    questions = lesson_questions(notebook)
    last = questions[-1][0]
    n = len(questions)
    cell = next(c for c in notebook.cells if c.cell_type == "markdown" and "Answers" in c.source and "<details" in
                c.source)
    cell.source = re.sub(rf"^{n}\. .*?(?=^{n + 1}\. |</details>)", "", cell.source, flags=re.MULTILINE | re.DOTALL)
    missing = unanswered(notebook)
    assert len(missing) == 1 and last.startswith(missing[0][:40].rstrip("…"))
    assert f"Without a model answer in the notebook: {missing[0]}" in teaching_notes(notebook)


def test_the_discussion_questions_have_model_answers():
    lessons = {notebook_lesson(nbformat.read(path, as_version=4)) for path in COURSE_NOTEBOOKS}
    assert set(notes.DISCUSSION) == lessons
    for lesson, pairs in notes.DISCUSSION.items():
        assert pairs and all(question.strip() and len(answer.split()) >= 15 for question, answer in pairs), lesson


def test_the_syllabus_is_ten_weeks_of_every_sitting_exercise_and_lesson():
    weeks = syllabus.weeks()
    assert len(weeks) == syllabus.WEEKS and all(weeks)
    sittings = [s for week in weeks for s in week]
    assert sittings == syllabus.course_sittings()
    for path in COURSE_NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        lesson = notebook_lesson(notebook)
        mine = [s for s in sittings if s.lesson == lesson]
        assert [s.minutes for s in mine] == [p["minutes"] for p in notes.RULE.estimate(notebook)["sittings"]]
        assigned = [key for s in mine for key in s.small + s.capstones]
        assert sorted(assigned) == sorted(lesson_exercises(lesson))
    text = syllabus.syllabus()
    assert text.count("\n## Week ") == syllabus.WEEKS
    for path in COURSE_NOTEBOOKS:
        lesson = notebook_lesson(nbformat.read(path, as_version=4))
        assert text.count(f"* **Grade:** lesson {lesson}:") + text.count(f"; lesson {lesson}: rows") == 1
        assert text.count(f"* **Discuss (lesson {lesson}):**") == 1


def test_the_syllabus_follows_the_notebooks(tmp_path):
    """Generated, not written: a lesson taken out of the course leaves the syllabus."""
    (tmp_path / "notebooks").mkdir()
    for path in COURSE_NOTEBOOKS:
        if not path.name.startswith("10_"):
            shutil.copy(path, tmp_path / "notebooks" / path.name)
    text = syllabus.syllabus()
    split = any(sitting.of > 1 for sitting in syllabus.course_sittings())
    assert ("(sitting 1 of 2)" in text) == split and "lesson 10" in text
    assert "lesson 10" not in syllabus.syllabus(tmp_path)


def test_the_weeks_split_evenly():
    assert syllabus.split_weeks([60, 60, 60, 60, 120], 2) == [0, 3]  # 180 | 180
    assert syllabus.split_weeks([100, 20, 20, 20, 20, 100], 3) == [0, 1, 5]  # 100 | 80 | 100
    assert syllabus.split_weeks([100, 50, 50, 100], 2) == [0, 2]
    with pytest.raises(ValueError):
        syllabus.split_weeks([10], 2)


def test_student_readme_leaves_out_the_teaching_section_only(student_edition):
    readme = (student_edition / "README.md").read_text(encoding="utf-8")
    course = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Teaching with this course" in course and "## Teaching with this course" not in readme
    assert [line for line in course.splitlines() if line.startswith("## ") and "Teaching" not in line] == [
        line for line in readme.splitlines() if line.startswith("## ")]
