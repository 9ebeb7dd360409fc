"""One bad submission never stops the class: files the grader cannot analyse, a crash of the grader on one file,
forged protocol lines, links out of the folder, a second notebook of a lesson, formula-like CSV cells and feedback
pages whose names would collide. (No kernel runs here: the cases are decided before or around grading.)"""
import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time

import nbformat
import pytest

from course_utils.classroom import grader, host, report
from course_utils.classroom.cells import parse_cell, program_slice
from course_utils.classroom.grader import ERROR, GradedNotebook, Row
from course_utils.classroom.withheld import withheld_package_root


def course_notebook(lesson: str = "03"):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    notebook.metadata["course"] = {"lesson": lesson}
    return notebook


def test_a_cell_too_deep_to_parse_is_not_a_crash():
    deep = "x = " + " + ".join(["1"] * 5000)
    assert parse_cell(deep) is None
    program_slice([deep, "y = 2"], {1: {"y"}})                  # analysing the notebook still works
    assert parse_cell("z = 3") is not None                      # and so does every later parse, in any thread
    import ast
    ast.parse("w = 4")


def test_a_crash_on_one_file_is_that_files_error_row(tmp_path, monkeypatch):
    for name in ("alice", "bob", "carol"):
        (tmp_path / name).mkdir()
        nbformat.write(course_notebook(), tmp_path / name / "03.ipynb")

    def fake_grade(path, submission, label, limits):
        if submission == "bob":
            raise RecursionError("maximum recursion depth exceeded")
        return GradedNotebook(submission, label, [Row(submission, label, "lesson03.q1", "correct", "Correct!")])

    monkeypatch.setattr(grader, "grade_notebook", fake_grade)
    graded = {g.submission: g for g in grader.grade([tmp_path])}
    assert set(graded) == {"alice", "bob", "carol"}
    assert graded["alice"].rows[0].status == graded["carol"].rows[0].status == "correct"
    assert graded["bob"].rows[0].status == ERROR and "RecursionError" in graded["bob"].rows[0].message


def test_forged_or_malformed_report_lines_never_grade_and_never_crash():
    """The host's report lines carry the notebook's token and a known shape; anything else is ``foreign`` (and a
    notebook with a foreign line gets ``error`` rows, see test_classroom_attacks.py)."""
    token = "t0k3n"
    real = {"kind": "result", "exercise": "q1", "status": "correct", "message": "Correct!"}
    lines = [f"{token} {json.dumps(real)}", json.dumps(real), f"{token} {{not json", "x" * 100,
             f"{token} " + json.dumps({**real, "status": "perfect"}), f"{token} " + json.dumps({**real, "message": 3}),
             f"{token} " + json.dumps({"kind": "run", "stopped_at": "3"}), f"{token} " + json.dumps({"kind": "done"})]
    read, write = os.pipe()
    os.write(write, "\n".join(lines).encode() + b"\n")
    os.close(write)
    reports = list(host._read_reports(read, time.monotonic() + 5, token))
    os.close(read)
    assert reports == [real] + [{"kind": "foreign"}] * 6 + [{"kind": "done"}]


def test_symlinks_are_refused_not_followed(tmp_path):
    outside = tmp_path / "teacher.ipynb"
    nbformat.write(course_notebook(), outside)
    folder = tmp_path / "submissions"
    (folder / "eve").mkdir(parents=True)
    (folder / "eve" / "03.ipynb").symlink_to(outside)
    (folder / "mallory").symlink_to(tmp_path, target_is_directory=True)
    graded = grader.grade([folder])
    assert graded and all(g.rows[0].status == ERROR and "symbolic link" in g.rows[0].message for g in graded)


def test_a_second_notebook_of_the_same_lesson_is_flagged(tmp_path, monkeypatch):
    (tmp_path / "dave").mkdir()
    for name in ("03_attention.ipynb", "03_copy.ipynb"):
        nbformat.write(course_notebook("03"), tmp_path / "dave" / name)
    monkeypatch.setattr(grader, "grade_notebook", lambda path, submission, label, limits: GradedNotebook(
        submission, label, [Row(submission, label, "lesson03.q1", "correct", "Correct!")]))
    first, second = grader.grade([tmp_path])
    assert first.rows[0].status == "correct"
    assert second.rows[0].status == ERROR and "second notebook of lesson 03" in second.rows[0].message


@pytest.mark.parametrize("text", ["=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)", "\t=1"])
def test_csv_cells_never_start_like_a_formula(tmp_path, text):
    path = tmp_path / "grades.csv"
    report.write_csv([GradedNotebook(text, text, [Row(text, text, "*", ERROR, text)])], path)
    with open(path, newline="", encoding="utf-8") as handle:
        row = list(csv.reader(handle))[1]
    assert all(cell == "'" + text for cell in row if cell not in (ERROR, "*"))


def test_feedback_pages_of_different_submissions_never_collide(tmp_path):
    names = ["dave~smith", "dave_smith", "dave smith", "dave/smith", "..", "Dave"]
    pages = report.write_feedback([GradedNotebook(n, "03.ipynb", [Row(n, "03.ipynb", "*", ERROR, "x")])
                                   for n in names], tmp_path)
    assert len({page.name for page in pages}) == len(names)
    assert all(page.parent == tmp_path for page in pages)
    assert report.feedback_name("dave_smith") == "dave_smith"                  # plain names stay readable


def test_the_csv_holds_each_notebook_as_soon_as_it_is_graded(tmp_path, monkeypatch):
    """An interrupted run keeps the rows of what it graded: the CSV is written notebook by notebook."""
    from course_utils.classroom.__main__ import main

    for name in ("alice", "bob"):
        (tmp_path / "in" / name).mkdir(parents=True)
        nbformat.write(course_notebook(), tmp_path / "in" / name / "03.ipynb")
    out = tmp_path / "grades.csv"
    seen_before_bob = []

    def fake_grade(path, submission, label, limits):
        if submission == "bob":
            with open(out, newline="", encoding="utf-8") as handle:
                seen_before_bob.extend(row[0] for row in list(csv.reader(handle))[1:])
        return GradedNotebook(submission, label, [Row(submission, label, "lesson03.q1", "correct", "Correct!")])

    monkeypatch.setattr(grader, "grade_notebook", fake_grade)
    assert main(["grade", str(tmp_path / "in"), "--out", str(out)]) == 0
    assert seen_before_bob == ["alice"]
    with open(out, newline="", encoding="utf-8") as handle:
        assert [row[0] for row in list(csv.reader(handle))[1:]] == ["alice", "bob"]


def test_the_processes_that_run_learner_code_have_no_solution_to_give(tmp_path):
    """A submission that asks the package for the answers (run_solution, the solution strings) earns nothing: the
    processes that run learner code import a copy of the package with every solution withheld."""
    from classroom_helpers import small_notebook

    from course_utils.classroom.cells import lesson_exercises

    def cheat(key: str) -> str:
        exercise = lesson_exercises("05")[key]
        return ("from course_utils.exercises import lesson05 as _l\n"
                f"_s = _l.{key}.run_solution(globals())\n"
                + "".join(f"{name} = _s[{name!r}]\n" for name in exercise.variables))

    notebook = small_notebook("05", {key: cheat(key) for key in lesson_exercises("05")})
    path = tmp_path / "cheat.ipynb"
    nbformat.write(notebook, path)
    graded = grader.grade_notebook(path, "cheat", path.name)
    assert [row.status for row in graded.rows] and not any(row.status == "correct" for row in graded.rows)
    root = withheld_package_root()
    assert not (root / "course_utils" / "exercises" / "solutions").exists()
    from course_utils.exercises import lesson05, lesson09
    sources = [path.read_text(encoding="utf-8") for path in root.rglob("*.py")]
    for exercise in (lesson05.q3, lesson09.q3):
        definition = exercise.solution.split("\n\n\n")[-1].strip()  # the class the learner must write
        assert not any(definition in source for source in sources)


def test_a_submission_cannot_plant_a_startup_file_configuration_or_cache_for_the_next(tmp_path):
    """IPython in the host reads no startup file, and each notebook has its own IPython, Jupyter and matplotlib
    folders and its own copy of the course's data cache: what one notebook writes there never reaches the next."""
    planted, seen = tmp_path / "planted.txt", tmp_path / "seen.txt"
    plant = f"open({str(planted)!r}, 'w').write('ran')"
    folders = ("IPYTHONDIR", "JUPYTER_CONFIG_DIR", "MPLCONFIGDIR", "COURSE_UTILS_CACHE_DIR", "XDG_CACHE_HOME")
    first = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, pathlib\n"
        "for home in (os.environ.get('IPYTHONDIR', ''), os.path.expanduser('~/.ipython')):\n"
        "    if home:\n"
        "        startup = pathlib.Path(home) / 'profile_default' / 'startup'\n"
        "        startup.mkdir(parents=True, exist_ok=True)\n"
        f"        (startup / '00-course-grader-test.py').write_text({plant!r})\n"
        f"for variable in {folders!r}:\n"
        "    pathlib.Path(os.environ[variable]).mkdir(parents=True, exist_ok=True)\n"
        "    (pathlib.Path(os.environ[variable]) / 'planted-by-first').write_text('x')\n")])
    second = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, pathlib\n"
        f"found = [v for v in {folders!r} if (pathlib.Path(os.environ[v]) / 'planted-by-first').exists()]\n"
        f"open({str(seen)!r}, 'w').write(repr(found))\n")])
    for notebook in (first, second):
        notebook.metadata["course"] = {"lesson": "03"}
    nbformat.write(first, tmp_path / "first.ipynb")
    nbformat.write(second, tmp_path / "second.ipynb")
    try:
        for name in ("first", "second"):
            grader.grade_notebook(tmp_path / f"{name}.ipynb", name, f"{name}.ipynb")
        assert not planted.exists()
        assert seen.read_text() == "[]"
    finally:
        home_startup = os.path.expanduser("~/.ipython/profile_default/startup/00-course-grader-test.py")
        if os.path.exists(home_startup):
            os.remove(home_startup)


ESCAPES = {  # each starts a process meant to outlive grading: it writes its marker once the test says "go"
    "fork": "if os.fork() == 0:\n    late('{marker}')\n",
    "setsid_double_fork": ("if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        late('{marker}')\n"
                           "    os._exit(0)\n"),
    "popen_new_session_clean_environment": (
        "subprocess.Popen([sys.executable, '-c', WAIT + 'late(%r)' % {marker!r}], env={{}},"
        " start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"),
}
WAIT = ("import os, time\n"
        "def late(path):\n"
        "    go = os.path.join(os.path.dirname(path), 'go')\n"
        "    deadline = time.time() + 60\n"
        "    while not os.path.exists(go) and time.time() < deadline:\n"
        "        time.sleep(0.1)\n"
        "    open(path, 'w').write('outlived')\n"
        "    os._exit(0)\n")
LATE = f"import subprocess, sys\nWAIT = {WAIT!r}\n{WAIT}"


def test_no_process_a_submission_starts_outlives_its_grading(tmp_path):
    """A fork, a daemon that forks twice and leaves its session (setsid), a subprocess in a new session with an
    empty environment — started both in a cell of their own (the run) and in the answer itself while it is checked
    (its evaluation): all are gone when the notebook is graded (the notebook process is their subreaper and ends its
    whole tree)."""
    from classroom_helpers import check_cell_of as check_cell_of_key
    from classroom_helpers import small_notebook, solutions

    markers = {f"{name}_{where}": tmp_path / f"{name}_{where}.txt" for name in ESCAPES for where in ("run", "answer")}
    spawn = {where: LATE + "".join(code.format(marker=str(markers[f"{name}_{where}"]))
                                   for name, code in ESCAPES.items())
             for where in ("run", "answer")}
    spawning_answer = "_spawned = []\n\n\ndef _spawn():\n" + "".join(   # spawns on its first call
        "    " + line + "\n" for line in spawn["answer"].splitlines()) + "\n\n" + solutions("05")["q1"].replace(
        "def p_token_present(vocab_size, seq_len):\n",
        "def p_token_present(vocab_size, seq_len):\n    if not _spawned:\n        _spawned.append(1)\n"
        "        _spawn()\n")
    notebook = small_notebook("05", {**solutions("05"), "q1": spawning_answer})
    notebook.cells.insert(check_cell_of_key(notebook, "q1") + 1, nbformat.v4.new_code_cell(spawn["run"]))
    nbformat.write(notebook, tmp_path / "05.ipynb")
    graded = grader.grade_notebook(tmp_path / "05.ipynb", "spawner", "05.ipynb")
    statuses = {row.exercise: row.status for row in graded.rows}
    assert statuses["lesson05.q1"] == "error"   # right, but its cell reaches into `os`
    assert statuses["lesson05.q2"] == "error"   # right, but a cell above its check reaches into `os`
    (tmp_path / "go").write_text("go")
    time.sleep(2)
    assert sorted(path.name for path in markers.values() if path.exists()) == []


def test_control_a_process_group_kill_leaves_a_setsid_daemon_running(tmp_path):
    """What the grader did before: kill the kernel's process group. A daemon that left the session survives it."""
    marker = tmp_path / "outlived.txt"
    code = LATE + ESCAPES["setsid_double_fork"].format(marker=str(marker)) + "time.sleep(30)\n"
    process = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    (tmp_path / "go").write_text("go")
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists()


def test_what_a_notebook_prints_never_reaches_the_grader(tmp_path):
    """50 MB printed four ways, a 5 MB exception message and 50 MB written into its own progress pipe: the grader's
    memory does not grow with it (outputs go to /dev/null at the source, progress and reports are read in bounded
    amounts, a long error is cut with a note)."""
    flood = ("import os, sys\n"
             "print('x' * 50_000_000)\n"
             "sys.stdout.write('y' * 50_000_000)\n"
             "os.write(1, b'z' * 50_000_000)\n"
             "os.write(2, b'w' * 50_000_000)\n")
    pipe_flood = ("import os\n"
                  "for fd in os.listdir('/proc/self/fd'):\n"
                  "    try:\n"
                  "        if int(fd) > 2 and os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):\n"
                  "            os.write(int(fd), b'q' * 50_000_000)\n"
                  "    except OSError:\n"
                  "        pass\n")
    notebook = course_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(flood), nbformat.v4.new_code_cell("raise ValueError('v' * 5_000_000)"),
                      nbformat.v4.new_code_cell(pipe_flood)]
    nbformat.write(notebook, tmp_path / "loud.ipynb")
    grader.grade_notebook(tmp_path / "loud.ipynb", "warm-up", "loud.ipynb")   # the host is started, caches filled
    with open("/proc/self/clear_refs", "w") as handle:   # reset this process's peak memory (VmHWM)
        handle.write("5")
    before = _memory("VmRSS")
    graded = grader.grade_notebook(tmp_path / "loud.ipynb", "loud", "loud.ipynb")
    assert _memory("VmHWM") - before < 20 * 2**20
    [error] = [line for line in graded.cell_errors if "ValueError" in line]
    assert len(error) < 400 and error.endswith("(cut by the grader)")
    assert {row.status for row in graded.rows} == {"error"}
    assert "progress channel" in graded.rows[0].message


def _memory(field: str) -> int:
    with open("/proc/self/status") as handle:
        return int(next(line.split()[1] for line in handle if line.startswith(field + ":"))) * 1024


def test_jobs_grade_side_by_side_and_keep_the_order(tmp_path, monkeypatch):
    """``--jobs 3``: notebooks graded at the same time, each written to the CSV as it finishes; at the end the CSV
    holds every row in the order of the submissions, as with one job."""
    from course_utils.classroom.__main__ import main

    names = ["ann", "ben", "cat", "dan", "eve"]
    for name in names:
        (tmp_path / "in" / name).mkdir(parents=True)
        nbformat.write(course_notebook(), tmp_path / "in" / name / "03.ipynb")
    out = tmp_path / "grades.csv"
    delays = {"ann": 0.6, "ben": 0.1, "cat": 0.4, "dan": 0.0, "eve": 0.2}
    running, most, seen_during = [0], [0], []
    lock = threading.Lock()

    def fake_grade(path, submission, label, limits):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(delays[submission])
        with open(out, newline="", encoding="utf-8") as handle:
            seen_during.append(len(list(csv.reader(handle))))
        with lock:
            running[0] -= 1
        return GradedNotebook(submission, label, [Row(submission, label, "lesson03.q1", "correct", "Correct!")])

    monkeypatch.setattr(grader, "grade_notebook", fake_grade)
    assert main(["grade", str(tmp_path / "in"), "--out", str(out), "--jobs", "3"]) == 0
    assert most[0] == 3 and max(seen_during) > 1   # side by side, and rows were there before the end
    with open(out, newline="", encoding="utf-8") as handle:
        assert [row[0] for row in list(csv.reader(handle))[1:]] == names


def test_the_snapshot_names_a_replaced_module_and_rewritten_code():
    """What the guard compares: ``sys.modules`` entries, module attributes and the code of the core's functions,
    by identity (here in this process, undone at once)."""
    import types

    import torch.nn.functional as F

    from course_utils.classroom.integrity import Snapshot

    full, core = Snapshot(), Snapshot(core=True)
    module, code = sys.modules["json"], F.softmax.__code__
    try:
        sys.modules["json"] = types.ModuleType("json")
        F.softmax.__code__ = (lambda input, dim=None, _stacklevel=3, dtype=None: input).__code__
        assert not full.intact() and not core.intact()
        assert {"sys.modules['json']", "torch.nn.functional.softmax"} <= set(full.changes())
        assert "torch.nn.functional.softmax" in core.changes()
    finally:
        sys.modules["json"], F.softmax.__code__ = module, code
    assert full.intact() and core.intact()


def test_a_module_planted_in_the_course_copy_is_never_imported(tmp_path):
    """The host loaded the whole course before any notebook ran; a module a notebook writes into the course's
    folder (it may be writable) is refused, in that notebook and in the next."""
    plant = ("import os, course_utils\n"
             "folder = os.path.dirname(os.path.dirname(course_utils.__file__))\n"
             "open(os.path.join(folder, 'planted_by_a_notebook.py'), 'w').write('x = 1')\n"
             "import planted_by_a_notebook\n")
    notebook = course_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(plant), nbformat.v4.new_code_cell("import planted_by_a_notebook")]
    nbformat.write(notebook, tmp_path / "plant.ipynb")
    try:
        graded = grader.grade_notebook(tmp_path / "plant.ipynb", "plant", "plant.ipynb")
        errors = [error for error in graded.cell_errors if "ImportError" in error]
        assert len(errors) == 2 and all("new modules from the course's folder" in error for error in errors)
    finally:
        planted = withheld_package_root() / "planted_by_a_notebook.py"
        if planted.exists():
            planted.unlink()


def test_files_of_every_odd_shape_get_their_own_rows_and_the_class_is_still_graded(tmp_path):
    """Binary junk, UTF-16, odd or missing metadata, megabytes of source and odd file names: each file gets rows of
    its own (an ``error`` row where it cannot be graded) and the honest notebook beside them is graded as usual."""
    folder = tmp_path / "class"
    folder.mkdir()
    nbformat.write(course_notebook(), folder / "honest.ipynb")
    (folder / "junk.ipynb").write_bytes(bytes(range(256)) * 64)
    (folder / "utf16.ipynb").write_bytes(nbformat.writes(course_notebook()).encode("utf-16"))
    for name, lesson in (("lesson-list", ["03"]), ("lesson-int", 3), ("lesson-unknown", "99"),
                         ("lesson-path", "../03")):
        odd = course_notebook()
        odd.metadata["course"] = {"lesson": lesson}
        nbformat.write(odd, folder / f"{name}.ipynb")
    no_metadata = course_notebook()
    del no_metadata.metadata["course"]
    nbformat.write(no_metadata, folder / "no-metadata.ipynb")
    huge = course_notebook()
    huge.cells.append(nbformat.v4.new_code_cell("# " + "x" * 4_000_000))
    nbformat.write(huge, folder / "huge.ipynb")
    nbformat.write(course_notebook(), folder / "späce and\ttab 'quote'.ipynb")
    graded = {g.submission: g for g in grader.grade([folder], grader.Limits(cell_seconds=20))}
    assert len(graded) == 10 and all(g.rows for g in graded.values())
    for name in ("junk", "utf16", "lesson-list", "lesson-int", "lesson-unknown", "lesson-path", "no-metadata"):
        assert [row.status for row in graded[name].rows] == [ERROR], (name, graded[name].rows)
        assert graded[name].rows[0].message, name
    for name in ("honest", "huge"):
        assert {row.status for row in graded[name].rows} == {"not attempted"}, graded[name].rows
    odd_name = next(g for name, g in graded.items() if name.startswith("sp"))
    assert {row.status for row in odd_name.rows} == {"not attempted"}
    out = tmp_path / "grades.csv"
    report.write_csv(list(graded.values()), out)
    assert len(list(csv.reader(out.open(encoding="utf-8")))) == 1 + sum(len(g.rows) for g in graded.values())


def test_teacher_only_material_is_named_once_for_the_edition_the_grader_and_the_container(tmp_path):
    """One list (course_utils/classroom/withheld.py): the student edition leaves it out, the grader's copy of the
    package has none of it, the container's recipe locks it away."""
    from course_utils.classroom import withheld

    for path in ("course_utils/exercises/solutions", "course_utils/exercises/solutions/lesson05.py",
                 "tests/mistakes/lesson05.py", "tests/classroom_helpers.py"):
        assert withheld.teacher_only(path) and withheld.left_out_of_student_edition(path), path
    for path in ("course_utils/exercises/lesson05.py", "course_utils/classroom/grader.py", "tests/test_attention.py"):
        assert not withheld.teacher_only(path), path
    assert withheld.left_out_of_student_edition("course_utils/classroom/grader.py")
    assert not withheld.left_out_of_student_edition("course_utils/classroom/sandbox/sitecustomize.py")
    copy = withheld_package_root() / "course_utils"
    assert (copy / "exercises" / "lesson05.py").exists() and not (copy / "exercises" / "solutions").exists()
    (tmp_path / "course_utils" / "exercises" / "solutions").mkdir(parents=True)
    (tmp_path / "course_utils" / "exercises" / "solutions" / "lesson05.py").write_text("answer = 1\n")
    (tmp_path / "course_utils" / "exercises" / "lesson05.py").write_text("q1 = 1\n")
    assert sorted(withheld.lock_away(tmp_path)) == ["course_utils/exercises/solutions",
                                                    "course_utils/exercises/solutions/lesson05.py"]
    assert os.stat(tmp_path / "course_utils" / "exercises" / "solutions" / "lesson05.py").st_mode & 0o077 == 0
    assert os.stat(tmp_path / "course_utils" / "exercises" / "lesson05.py").st_mode & 0o044 == 0o044
