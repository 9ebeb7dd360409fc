"""A 10-week syllabus, generated from the notebooks so that it cannot drift from them.

Every number in it is read from the course: the lessons and their titles from ``notebooks/``, each lesson's sittings
and minutes from the course's time rule (:mod:`course_utils.lesson_times`, through :mod:`.notes`), the exercises and
capstones from the exercise package, the questions from the lessons' closing cells. The sittings, in course order,
are cut into ten consecutive weeks so that the busiest week is as light as possible.

The teacher edition writes it to ``syllabus.md``; ``python -m course_utils.classroom.syllabus`` prints it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .cells import lesson_exercises, notebook_lesson
from .notes import (
    COURSE_ROOT,
    DISCUSSION,
    MINUTES_PER_CAPSTONE,
    MINUTES_PER_EXERCISE,
    RULE,
    _exercise_sittings,
    lesson_questions,
    lesson_title,
)

WEEKS = 10


@dataclass(frozen=True)
class Sitting:
    lesson: str
    title: str
    number: int  # 1-based
    of: int      # how many sittings the lesson has
    minutes: int
    small: tuple[str, ...]      # exercises checked in this sitting, e.g. ("q1", "q2")
    capstones: tuple[str, ...]


def course_sittings(root: Path = COURSE_ROOT) -> list[Sitting]:
    """Every sitting of every lesson, in course order."""
    found = []
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        lesson = notebook_lesson(notebook)
        exercises = lesson_exercises(lesson)
        where = _exercise_sittings(notebook, exercises)
        estimate = RULE.estimate(notebook)
        count = len(estimate["sittings"])
        for number, part in enumerate(estimate["sittings"]):
            mine = [key for key in exercises if where[key] == number]
            found.append(Sitting(lesson, lesson_title(notebook), number + 1, count, part["minutes"],
                                 tuple(k for k in mine if not getattr(exercises[k], "task", "")),
                                 tuple(k for k in mine if getattr(exercises[k], "task", ""))))
    return found


def split_weeks(minutes: list[int], weeks: int = WEEKS) -> list[int]:
    """Where each week starts (indices into ``minutes``): ``weeks`` consecutive, non-empty groups whose largest sum
    is as small as possible, and among those the most even (the smallest sum of squared weeks)."""
    if len(minutes) < weeks:
        raise ValueError(f"{len(minutes)} sittings cannot fill {weeks} weeks")
    prefix = [0]
    for m in minutes:
        prefix.append(prefix[-1] + m)

    @functools.lru_cache(maxsize=None)
    def best(start: int, left: int) -> tuple[int, int, tuple[int, ...]]:
        """(largest week, sum of squared weeks, week starts) for the sittings from ``start`` in ``left`` weeks."""
        if left == 1:
            load = prefix[-1] - prefix[start]
            return load, load * load, (start,)
        options = []
        for end in range(start + 1, len(minutes) - left + 2):
            load = prefix[end] - prefix[start]
            largest, squares, starts = best(end, left - 1)
            options.append((max(load, largest), squares + load * load, (start, *starts)))
        return min(options)

    return list(best(0, weeks)[2])


def weeks(root: Path = COURSE_ROOT, n_weeks: int = WEEKS) -> list[list[Sitting]]:
    sittings = course_sittings(root)
    starts = split_weeks([s.minutes for s in sittings], n_weeks) + [len(sittings)]
    return [sittings[a:b] for a, b in zip(starts, starts[1:])]


def _sitting_label(sitting: Sitting) -> str:
    return sitting.title if sitting.of == 1 else f"{sitting.title} (sitting {sitting.number} of {sitting.of})"


def syllabus(root: Path = COURSE_ROOT, n_weeks: int = WEEKS) -> str:
    plan = weeks(root, n_weeks)
    total = sum(s.minutes for week in plan for s in week)
    lines = ["# Syllabus: the course in ten weeks", "",
             f"About {total / 60:.0f} hours of work for a learner in all — about {total / n_weeks / 60:.1f} a week "
             "— by the course's time rule: prose at "
             f"{RULE.WORDS_PER_MINUTE} words and code at {RULE.CODE_LINES_PER_MINUTE} lines a minute, "
             f"{MINUTES_PER_EXERCISE} minutes per small exercise, {MINUTES_PER_CAPSTONE} per capstone, plus the "
             f"time the cells compute. A lesson longer than {RULE.SITTING_MINUTES} minutes is taken in sittings; "
             "its break cell recaps the first. The weeks follow the lessons in order and keep the busiest week as "
             "light as the sittings allow.", "",
             "For each sitting, `teaching_notes/lessonNN.md` has a 90-minute class plan (capstones that do not fit "
             "are homework), the misconceptions the checks catch, and the lesson's questions with model answers.",
             "",
             "**Grading.** Collect the notebooks of the lessons finished that week and run "
             "`python -m course_utils.classroom grade submissions/ --out grades.csv --feedback feedback/`: one row "
             "per exercise (`correct`, `incorrect`, `not attempted`, `error`, `timeout`). To weigh the rows by the "
             f"work they take, count a capstone {MINUTES_PER_CAPSTONE / MINUTES_PER_EXERCISE:.1f} times a small "
             f"exercise ({MINUTES_PER_CAPSTONE} against {MINUTES_PER_EXERCISE} minutes).", "",
             "| week | lessons | learner minutes | small exercises | capstones |", "|---:|---|---:|---:|---:|"]
    for number, week in enumerate(plan, start=1):
        lessons = ", ".join(dict.fromkeys(s.lesson + ("" if s.of == 1 else f" ({s.number}/{s.of})") for s in week))
        lines.append(f"| {number} | {lessons} | {sum(s.minutes for s in week)} | "
                     f"{sum(len(s.small) for s in week)} | {sum(len(s.capstones) for s in week)} |")
    notebooks = {notebook_lesson(nb): nb for nb in (nbformat.read(p, as_version=4)
                                                    for p in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")))}
    for number, week in enumerate(plan, start=1):
        lines += ["", f"## Week {number} — about {sum(s.minutes for s in week)} minutes", ""]
        lines += [f"* **Work through:** {_sitting_label(s)} — about {s.minutes} minutes." for s in week]
        assigned = []
        for s in week:
            exercises = lesson_exercises(s.lesson)
            assigned += [f"lesson {s.lesson} `{key}` {exercises[key].name} ({MINUTES_PER_EXERCISE} min)"
                         for key in s.small]
            assigned += [f"lesson {s.lesson} `{key}` **{exercises[key].name}** ({MINUTES_PER_CAPSTONE} min)"
                         for key in s.capstones]
        lines.append("* **Assign:** " + ("; ".join(assigned) if assigned else "no exercise this week") + ".")
        finished = [s for s in week if s.number == s.of]
        if finished:
            grade = []
            for s in finished:
                keys = list(lesson_exercises(s.lesson))
                grade.append(f"lesson {s.lesson}: rows `lesson{s.lesson}.{keys[0]}` … `lesson{s.lesson}.{keys[-1]}` "
                             f"of `grades.csv` ({len(keys)} exercises)")
            lines.append("* **Grade:** " + "; ".join(grade) + ".")
        else:
            lines.append("* **Grade:** nothing yet — the lesson continues next week; look at `qN.check()` "
                         "messages in class instead.")
        for s in finished:
            questions = len(lesson_questions(notebooks[s.lesson]))
            extra = DISCUSSION.get(s.lesson, [])
            text = (f"* **Discuss (lesson {s.lesson}):** its {questions} closing questions (model answers in "
                    f"`teaching_notes/lesson{s.lesson}.md`)")
            if extra:
                text += f"; for the class: {extra[0][0]}"
            lines.append(text)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(syllabus(), end="")
