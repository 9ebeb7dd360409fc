"""Every typical wrong answer in the mistake catalogues (tests/mistakes/lessonNN.py) is rejected with its message.

Each entry is a right answer with a bug in it (often the solution itself with a planted bug), so these tests also
prove that every checker can fail.
"""
import importlib

import pytest
from mistakes import all_alternatives, all_mistakes

from course_utils.exercises.core import CORRECT, INCORRECT, Exercise
from tests.helpers import EXERCISES

MISTAKES = all_mistakes()
ALTERNATIVES = all_alternatives()


def exercise_of(mistake) -> Exercise:
    return getattr(importlib.import_module(f"course_utils.exercises.{mistake.lesson}"), mistake.exercise)


@pytest.mark.parametrize("mistake", MISTAKES, ids=[f"{m.lesson}.{m.exercise}:{m.name}" for m in MISTAKES])
def test_mistake_is_rejected_with_its_message(mistake):
    result = exercise_of(mistake).evaluate_code(mistake.code, mistake.prelude)
    assert result.status == INCORRECT, f"accepted although wrong: {result.message}"
    assert mistake.message in result.message, result.message


@pytest.mark.parametrize("alternative", ALTERNATIVES,
                         ids=[f"{a.lesson}.{a.exercise}:{a.name}" for a in ALTERNATIVES])
def test_right_answer_written_differently_is_accepted(alternative):
    result = exercise_of(alternative).evaluate_code(alternative.code, alternative.prelude)
    assert result.status == CORRECT, result.message


@pytest.mark.slow  # the whole catalogue twice more: minutes; the default run already draws per test id
@pytest.mark.parametrize("seed", [11, 12])
def test_rejections_do_not_depend_on_the_drawn_inputs(seed, monkeypatch):
    """Each checker draws fresh inputs per check: a mistake is rejected, a right answer accepted, whatever the draw
    (the default run draws one seed per test id, so every entry already meets a draw of its own)."""
    monkeypatch.setenv("COURSE_CHECK_SEED", str(seed))
    accepted = [f"{m.lesson}.{m.exercise}:{m.name}" for m in MISTAKES
                if exercise_of(m).evaluate_code(m.code, m.prelude).status != INCORRECT]
    rejected = [f"{a.lesson}.{a.exercise}:{a.name}" for a in ALTERNATIVES
                if exercise_of(a).evaluate_code(a.code, a.prelude).status != CORRECT]
    assert not accepted and not rejected, (accepted, rejected)


def test_no_declared_mistake_is_written_twice():
    """A bug an exercise declares in its table is tested through the declared variant (tests/mistakes/__init__.py,
    declared_mistakes), never written again as code in the catalogue: no catalogue entry of an exercise carries the
    name of one of its declared mistakes. (Other wrong answers of the same class may stay, to show the class is
    caught beyond the variant.)"""
    declared = {(m.lesson, m.exercise, m.name.lower()) for m in MISTAKES if "_exercise.planted(" in m.code}
    twice = [f"{m.lesson}.{m.exercise}:{m.name}" for m in MISTAKES if "_exercise.planted(" not in m.code
             and (m.lesson, m.exercise, m.name.lower()) in declared]
    assert not twice, twice


def test_catalogue_names_are_unique():
    keys = [(m.lesson, m.exercise, m.name) for m in MISTAKES]
    assert len(keys) == len(set(keys))
    keys = [(a.lesson, a.exercise, a.name) for a in ALTERNATIVES]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("lesson,name,exercise", EXERCISES, ids=[f"{e[0]}.{e[1]}" for e in EXERCISES])
def test_every_exercise_has_right_answers_written_differently(lesson, name, exercise):
    assert any((a.lesson, a.exercise) == (lesson, name) for a in ALTERNATIVES), f"{lesson}.{name}: no alternatives"


def test_every_exercise_has_a_catalogue_so_every_checker_is_shown_to_fail():
    covered = {(m.lesson, m.exercise) for m in MISTAKES}
    missing = [f"{lesson}.{name}" for lesson, name, _ in EXERCISES if (lesson, name) not in covered]
    assert not missing, f"exercises without typical mistakes: {missing}"


CLASSIC_BUGS = {  # the classic Transformer bugs a capstone's catalogue must hold
    "lesson06.q3": ["pieces chosen one by one", "first piece only", "specials chosen", "no word forced",
                    "select_prob hard-coded", "generator ignored", "labels everywhere"],
    "lesson07.q3": ["target not shifted (no [BOS] start)", "EOS not handled", "stops at the first [EOS]",
                    "[BOS]/[PAD] generated", "no_grad forgotten", "eval mode forgotten"],
}


def test_capstone_catalogues_hold_the_classic_bugs():
    names = {(f"{m.lesson}.{m.exercise}", m.name) for m in MISTAKES}
    missing = [(exercise, bug) for exercise, bugs in CLASSIC_BUGS.items() for bug in bugs
               if (exercise, bug) not in names]
    assert not missing, missing
