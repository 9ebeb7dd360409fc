"""The exercise mechanism, shown on notebook 00's exercises (their right answers written differently and
contract-only wrong answers: tests/mistakes/lesson00.py)."""
from course_utils.exercises import lesson00
from course_utils.exercises.core import CORRECT, INCORRECT, NOT_ATTEMPTED


def test_solutions_pass():
    for exercise in (lesson00.q1, lesson00.q2, lesson00.q3, lesson00.q4):
        result = exercise.evaluate(exercise.run_solution())
        assert result.status == CORRECT, (exercise.name, result.message)


def test_placeholder_is_not_attempted_and_never_raises(capsys):
    bound = lesson00.q4.bind({"fixed_squared_error": ...})
    bound.check()
    assert "Not attempted" in capsys.readouterr().out


def test_not_implemented_counts_as_not_attempted():
    def fixed_squared_error(predictions, targets):
        raise NotImplementedError
    assert lesson00.q4.evaluate({"fixed_squared_error": fixed_squared_error}).status == NOT_ATTEMPTED


def test_crashing_learner_code_is_reported_not_raised():
    result = lesson00.q4.evaluate({"fixed_squared_error": lambda predictions, targets: predictions.nonexistent})
    assert result.status == INCORRECT and "AttributeError" in result.message


def test_hint_and_solution_print(capsys):
    bound = lesson00.q4.bind({})
    bound.hint()
    bound.solution()
    out = capsys.readouterr().out
    assert "shape" in out and "def fixed_squared_error" in out
