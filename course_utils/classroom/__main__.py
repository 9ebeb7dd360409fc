"""``python -m course_utils.classroom {student,teacher,grade}``: see ``--help`` and TEACHING.md."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from course_utils.errors import CourseError, CourseValueError

from .grader import STATUSES, Limits


def _lessons(text: str | None) -> set[str] | None:
    return None if text is None else {part.strip().zfill(2) for part in text.split(",") if part.strip()}


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(
        prog="python -m course_utils.classroom",
        description="Classroom kit of the course: build a student or a teacher edition, grade submitted notebooks.")
    commands = main.add_subparsers(dest="command", required=True)

    student = commands.add_parser("student", help="write the student edition (solutions withheld) to OUT_DIR",
                                  description="Copy the course to OUT_DIR with every exercise solution withheld "
                                              "(q1.solution() says so; hint() and check() work), outputs of exercise "
                                              "cells cleared, and no test or file that contains a solution.")
    student.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="a new or empty folder")
    student.add_argument("--lessons", help="only these lessons' notebooks, e.g. 03,04 (default: all)")

    teacher = commands.add_parser("teacher", help="write the teacher edition (solutions filled in, executed, "
                                                  "teaching notes) to OUT_DIR",
                                  description="Copy the course to OUT_DIR with every exercise filled in with its "
                                              "solution and executed (every check must print ✅), plus "
                                              "teaching_notes/lessonNN.md (a 90-minute plan per sitting, the "
                                              "misconceptions the checks catch, discussion questions with "
                                              "model answers) and syllabus.md (ten weeks). Executing all eleven "
                                              "notebooks takes several minutes on a laptop CPU.")
    teacher.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="a new or empty folder")
    teacher.add_argument("--lessons", help="only these lessons' notebooks, e.g. 03,04 (default: all)")

    grade = commands.add_parser("grade", help="grade submitted notebooks into a CSV (and feedback pages)",
                                description="Grade notebooks (files, or folders of them: folder/alice/03.ipynb is "
                                            "submission 'alice'). The lesson is read from the notebook's metadata, "
                                            "not its file name. Each notebook runs in fresh processes forked "
                                            "from a clean host, with the network blocked and the limits below; "
                                            "the grader checks every exercise itself and ignores what the notebook "
                                            "printed. CSV columns: "
                                            "submission,notebook,exercise,status,message; status is one of "
                                            + ", ".join(STATUSES) + ".")
    grade.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION")
    grade.add_argument("--out", type=Path, required=True, help="the CSV to write, e.g. grades.csv")
    grade.add_argument("--feedback", type=Path, metavar="DIR", help="also write DIR/<submission>.md per student")
    defaults = Limits()
    grade.add_argument("--cell-timeout", type=float, default=defaults.cell_seconds,
                       help=f"seconds one cell may run (default {defaults.cell_seconds:g})")
    grade.add_argument("--notebook-timeout", type=float, default=defaults.notebook_seconds,
                       help=f"seconds one notebook may run (default {defaults.notebook_seconds:g})")
    grade.add_argument("--memory-gb", type=float, default=defaults.memory_bytes / 2**30,
                       help=f"memory one process of a notebook may use, in GiB (default "
                            f"{defaults.memory_bytes / 2**30:g})")
    grade.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="grade N notebooks at the same time (default 1; a notebook keeps up to two "
                            "processes busy, its run and its evaluations)")
    grade.add_argument("--as-user", type=int, metavar="UID",
                       help="run the notebooks' code as user id UID (UID+1 … for --jobs): it can then write "
                            "nothing but its scratch folder and reach neither the grader nor other submissions. "
                            "Needs a grader running as root (the container recipe, tools/grading.Dockerfile, does)")
    return main


def main(argv: list[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    try:
        if arguments.command == "student":
            from .editions import build_student_edition

            written = build_student_edition(arguments.out_dir, _lessons(arguments.lessons))
            print(f"student edition: {len(written)} files in {arguments.out_dir}; no exercise solution in it")
        elif arguments.command == "teacher":
            from .editions import build_teacher_edition

            executed = build_teacher_edition(arguments.out_dir, _lessons(arguments.lessons))
            print(f"teacher edition: {len(executed)} notebooks filled in and executed, teaching notes in "
                  f"{arguments.out_dir / 'teaching_notes'}")
        else:
            from .grader import grade
            from .report import CsvWriter, write_csv, write_feedback

            if arguments.as_user is not None and os.geteuid() != 0:
                raise CourseValueError("--as-user needs a grader running as root (see tools/grading.Dockerfile)")
            if arguments.as_user is None and os.geteuid() == 0:
                print("warning: grading as root without --as-user: the notebooks' code runs as root too, and could "
                      "reach the grader; pass --as-user UID (e.g. 65534), or use the container recipe",
                      file=sys.stderr)
            limits = Limits(arguments.cell_timeout, arguments.notebook_timeout, int(arguments.memory_gb * 2**30),
                            user=arguments.as_user)
            started = time.monotonic()
            with CsvWriter(arguments.out) as csv_rows:   # each notebook's rows as soon as it is graded

                def progress(graded):
                    csv_rows.add(graded)
                    summary = ", ".join(f"{row.exercise} {row.status}" for row in graded.rows)
                    print(f"{graded.seconds:6.1f} s  {graded.submission} / {graded.notebook}: {summary}", flush=True)

                graded = grade(arguments.submissions, limits, progress, jobs=max(1, arguments.jobs))
            if arguments.jobs > 1:
                write_csv(graded, arguments.out)   # the same rows, now in the order of the submissions
            print(f"{len(graded)} notebooks graded in {time.monotonic() - started:.1f} s → {arguments.out}")
            if arguments.feedback:
                pages = write_feedback(graded, arguments.feedback)
                print(f"{len(pages)} feedback pages → {arguments.feedback}")
    except CourseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from .processes import make_undumpable

    make_undumpable()   # the grader's command: no process of the same user can read its memory or open its pipes
    sys.exit(main())
