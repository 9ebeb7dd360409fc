"""What the grader writes: ``grades.csv`` (one row per exercise) and one feedback page per student."""
from __future__ import annotations

import csv
import hashlib
import os
import re
from dataclasses import astuple
from pathlib import Path

from .cells import lesson_exercises
from .grader import CSV_COLUMNS, GradedNotebook

SYMBOLS = {"correct": "✅", "incorrect": "❌", "not attempted": "✍️", "error": "⚠️", "timeout": "⏱️"}


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula (``=HYPERLINK(...)``, ``+1``)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class CsvWriter:
    """``grades.csv`` written as grading goes: the header at once, each notebook's rows as soon as it is graded (and
    flushed), so an interrupted run keeps what it graded. No cell starts like a spreadsheet formula (file names and
    messages come from the submissions)."""

    def __init__(self, path: Path) -> None:
        self.handle = open(path, "w", newline="", encoding="utf-8")
        self.writer = csv.writer(self.handle)
        self.writer.writerow(CSV_COLUMNS)
        self.handle.flush()

    def add(self, notebook: GradedNotebook) -> None:
        self.writer.writerows([spreadsheet_safe(str(value)) for value in astuple(row)] for row in notebook.rows)
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> "CsvWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_csv(graded: list[GradedNotebook], path: Path) -> None:
    """``grades.csv`` of notebooks already graded (see :class:`CsvWriter`), replacing ``path`` in one step (an
    interruption leaves the old file or the new one, never half of one)."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    with CsvWriter(partial) as writer:
        for notebook in graded:
            writer.add(notebook)
    os.replace(partial, path)


def feedback_name(submission: str) -> str:
    """A file name for the submission's feedback page: the name itself when it is plain (letters, digits, ``_.-``),
    else a cleaned name with a short hash of the original, so two submissions never share a page."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", submission).strip(".") or "_"
    if cleaned == submission:
        return cleaned
    return f"{cleaned}-{hashlib.sha256(submission.encode('utf-8')).hexdigest()[:8]}"


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
        page = folder / f"{feedback_name(submission)}.md"
        page.write_text(feedback_page(submission, notebooks), encoding="utf-8")
        pages.append(page)
    return pages
