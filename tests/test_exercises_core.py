"""The exercise mechanism, shown on notebook 00's warm-ups: solutions pass, common mistakes fail with a reason."""
import torch

from course_utils.exercises import lesson00
from course_utils.exercises.core import CORRECT, INCORRECT, NOT_ATTEMPTED


def test_solutions_pass():
    for exercise in (lesson00.q1, lesson00.q2, lesson00.q3):
        result = exercise.evaluate(exercise.run_solution())
        assert result.status == CORRECT, (exercise.name, result.message)


def test_placeholder_is_not_attempted_and_never_raises(capsys):
    bound = lesson00.q1.bind({"token_batch": ...})
    bound.check()
    assert "Not attempted" in capsys.readouterr().out


def test_not_implemented_counts_as_not_attempted():
    def device_of(tensor):
        raise NotImplementedError
    assert lesson00.q2.evaluate({"device_of": device_of}).status == NOT_ATTEMPTED


def test_wrong_dtype_and_range_are_named():
    float_ids = lesson00.q1.evaluate({"token_batch": torch.rand(4, 10)})
    assert float_ids.status == INCORRECT and "torch.long" in float_ids.message
    off_by_one = lesson00.q1.evaluate({"token_batch": torch.arange(961, 1001).view(4, 10)})
    assert "exclusive" in off_by_one.message
    wrong_shape = lesson00.q1.evaluate({"token_batch": torch.randint(0, 1000, (10, 4))})
    assert "(4, 10)" in wrong_shape.message


def test_seeding_once_is_caught():
    def same_draws():
        torch.manual_seed(0)
        return torch.rand(3), torch.rand(3)
    result = lesson00.q3.evaluate({"same_draws": same_draws})
    assert result.status == INCORRECT and "each" in result.message


def test_crashing_learner_code_is_reported_not_raised():
    result = lesson00.q2.evaluate({"device_of": lambda t: t.nonexistent})
    assert result.status == INCORRECT and "AttributeError" in result.message


def test_hint_and_solution_print(capsys):
    bound = lesson00.q2.bind({})
    bound.hint()
    bound.solution()
    out = capsys.readouterr().out
    assert ".device" in out and "def device_of" in out
