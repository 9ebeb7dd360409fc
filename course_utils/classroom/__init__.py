"""The classroom kit: a student edition, a teacher edition and an autograder, from this checkout of the course.

Run ``python -m course_utils.classroom --help``. The modules, one idea each:

* :mod:`.cells` — reading a notebook: answer cells, check cells, what each cell defines and uses;
* :mod:`.grader` — grading submissions: one row per exercise; :mod:`.host` — the evaluation host as the grader sees
  it; :mod:`.evaluator` — inside the host: the run, and a fork of it at each exercise's check; :mod:`.guard` — the clean
  start and the watch around a check; :mod:`.integrity` — was PyTorch or a checker replaced?; :mod:`.provenance` —
  was the answer the package's own block?; :mod:`.reach` — does the answer's code reach into Python's machinery?;
  :mod:`.processes` — every process a submission starts, ended; :mod:`.sandbox` — network block and memory cap;
* :mod:`.report` — ``grades.csv`` and feedback pages; :mod:`.editions` — student and teacher editions;
  :mod:`.withheld` — the teacher-only material, named once for both; :mod:`.notes` — teaching notes.
"""
