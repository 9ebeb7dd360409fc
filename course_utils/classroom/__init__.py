"""The classroom kit: a student edition, a teacher edition and an autograder, from this checkout of the course.

Run ``python -m course_utils.classroom --help``. The modules, one idea each:

* :mod:`.cells` — reading a notebook: answer cells, check cells, what each cell defines and uses;
* :mod:`.grader` — grading submissions in fresh kernels; :mod:`.evaluator` — the grader's side inside the
  evaluation kernel; :mod:`.integrity` — was PyTorch or a checker replaced?; :mod:`.provenance` — was the answer
  the package's own block?; :mod:`.sandbox` — network block and memory cap of every kernel;
* :mod:`.report` — ``grades.csv`` and feedback pages; :mod:`.editions` — student and teacher editions;
  :mod:`.notes` — teaching notes.
"""
