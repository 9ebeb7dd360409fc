"""The lesson-time command: ``python tools/lesson_times.py [--check | --write NOTEBOOK...]``.

The rule and the command live in the package, :mod:`course_utils.lesson_times`; this file only runs it.
"""
import sys

from course_utils.lesson_times import main

if __name__ == "__main__":
    sys.exit(main())
