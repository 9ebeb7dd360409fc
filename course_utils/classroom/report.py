"""What the grader writes: ``grades.csv`` (one row per exercise) and one feedback page per student."""
from __future__ import annotations

import csv
import re
from dataclasses import astuple
from pathlib import Path

from .cells import lesson_exercises
from .grader import CSV_COLUMNS, GradedNotebook

SYMBOLS = {"correct": "✅", "incorrect": "❌", "not attempted": "✍️", "error": "⚠️", "timeout": "⏱️"}


def write_csv(graded: list[GradedNotebook], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for notebook in graded:
            writer.writerows(astuple(row) for row in notebook.rows)


def _exercise(key: str):
    """``"lesson03.q1"`` → the Exercise (for its title and hint), or ``None`` for the ``*`` rows."""
    match = re.fullmatch(r"lesson(\d\d)\.(q\w+)", key)
    return lesson_exercises(match[1]).get(match[2]) if match else None


def feedback_page(submission: str, notebooks: list[GradedNotebook]) -> str:
    """A Markdown page for one student: every exercise, its result and message, a hint where it did not pass."""
    rows = [row for notebook in notebooks for row in notebook.rows]
    passed = sum(row.status == "correct" for row in rows)
    lines = [f"# Feedback for {submission}", "",
             f"{passed} of {len(rows)} exercises correct.", ""]
    for notebook in notebooks:
        lines += [f"## {notebook.notebook}", ""]
        for row in notebook.rows:
            exercise = _exercise(row.exercise)
            title = f"{row.exercise} — {exercise.name}" if exercise else "the notebook"
            lines.append(f"* {SYMBOLS.get(row.status, '')} **{title}**: {row.status}. {row.message}")
            if exercise and row.status != "correct":
                lines.append(f"  * 💡 Hint: {exercise.hint}")
        if notebook.cell_errors:
            lines += ["", "Cells that raised an error when the notebook ran top to bottom:", ""]
            lines += [f"* {error}" for error in notebook.cell_errors]
        lines.append("")
    return "\n".join(lines)


def write_feedback(graded: list[GradedNotebook], folder: Path) -> list[Path]:
    """``folder/<submission>.md`` for every submission; returns the pages written."""
    folder.mkdir(parents=True, exist_ok=True)
    by_submission: dict[str, list[GradedNotebook]] = {}
    for notebook in graded:
        by_submission.setdefault(notebook.submission, []).append(notebook)
    pages = []
    for submission, notebooks in by_submission.items():
        page = folder / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', submission)}.md"
        page.write_text(feedback_page(submission, notebooks), encoding="utf-8")
        pages.append(page)
    return pages
