"""The checker machinery every exercise uses (course_utils/exercises/asserts.py, core.py): each guarantee shown to
hold, and shown to fail when it should."""
import numpy as np
import pytest
import torch
import torch.nn as nn

from course_utils.exercises.asserts import (
    Case,
    Draw,
    OwnWork,
    backpropagate_both,
    check_function,
    copy_weights,
    difference,
)
from course_utils.exercises.core import INCORRECT, Exercise, ExerciseFailure, solution_of


def test_draw_is_reproducible_from_its_seed_and_distinct_sizes_differ():
    a, b = Draw(5), Draw(5)
    assert a.distinct(4, 1, 9) == b.distinct(4, 1, 9) and torch.equal(a.randn(3), b.randn(3))
    sizes = Draw(6).distinct(5, 2, 8, avoid=(4,))
    assert len(set(sizes)) == 5 and 4 not in sizes


def test_draw_without_a_seed_reads_the_environment(monkeypatch):
    monkeypatch.setenv("COURSE_CHECK_SEED", "77")
    assert Draw().seed == 77


@pytest.mark.parametrize("got,expected,ok", [
    (3, 3, True), (np.int64(3), 3, True), (torch.tensor(3), 3, True), (3.0, 3, False), (True, 1, False),
    (0.5, 0.5, True), (np.float32(0.5), 0.5, True), (torch.tensor(0.5), 0.5, False),
    ([1, 2], [1, 2], True), ((1, 2), [1, 2], True), (torch.arange(1, 3), [1, 2], True), ([1, 3], [1, 2], False),
    (torch.ones(2, dtype=torch.float64), torch.ones(2), False), (torch.ones(2), torch.ones(2), True),
    (torch.ones(2, 1), torch.ones(2), False), (torch.ones(2, dtype=torch.long), torch.ones(2, dtype=torch.long), True),
    (torch.tensor([float("nan"), 1.0]), torch.ones(2), False),
])
def test_difference_accepts_what_a_reasonable_learner_writes_and_nothing_else(got, expected, ok):
    assert (difference(got, expected) is None) == ok


def test_a_difference_names_the_index_and_both_values():
    expected = torch.zeros(2, 3)
    got = expected.clone()
    got[1, 2] = 0.25
    message = difference(got, expected)
    assert "(1, 2)" in message and "0.25" in message and "expected 0" in message


def package_function(x):
    return x * 2


def test_own_work_notices_the_forbidden_block_under_any_name():
    import importlib

    alias = importlib.import_module(__name__).package_function
    with OwnWork({"the package's doubling": package_function}) as guard:
        (lambda x: alias(x))(1)
    assert guard.used == "the package's doubling"
    with OwnWork({"the package's doubling": package_function}) as guard:
        (lambda x: x * 2)(1)
    assert guard.used is None


def test_own_work_notices_a_subclass_of_a_forbidden_class():
    class Learner(nn.MultiheadAttention):
        pass
    with OwnWork({"torch's nn.MultiheadAttention": nn.MultiheadAttention}) as guard:
        Learner(4, 2)
    assert guard.used


def test_check_function_refuses_mutation_and_a_forbidden_call_and_names_the_case():
    cases = [Case("a batch of one", (torch.ones(1, 3),))]
    check_function(lambda x: x * 2, package_function, cases, "double")
    with pytest.raises(ExerciseFailure, match="changed its input `x` in place"):
        check_function(lambda x: x.mul_(2), package_function, cases, "double")
    with pytest.raises(ExerciseFailure, match="calls the package's doubling"):
        check_function(lambda x: package_function(x), package_function, cases, "double",
                       forbidden={"the package's doubling": package_function})
    with pytest.raises(ExerciseFailure, match="on a batch of one: .*differs"):
        check_function(lambda x: x * 3, package_function, cases, "double")


class Block(nn.Module):
    def __init__(self, late_dropout=False, p=0.5):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.dropout = nn.Dropout(p)
        self.late = late_dropout

    def forward(self, x):
        return self.linear(x) if self.late else self.linear(self.dropout(x))


def test_copy_weights_ignores_buffers_and_refuses_float64_parameters():
    package, learner = Block(), Block()
    learner.register_buffer("scale", torch.tensor(2.0))
    copy_weights(package, learner, "Block", "linear")
    assert torch.equal(learner.linear.weight, package.linear.weight)
    with pytest.raises(ExerciseFailure, match="float64"):
        copy_weights(package, Block().double(), "Block", "linear")


def checker_with_a_bug_of_its_own(namespace):
    namespace["answer"](1)
    return None + 1  # the checker's own bug, not the learner's


def test_a_crash_of_the_checker_is_not_blamed_on_the_learner():
    exercise = Exercise("x", ("answer",), checker_with_a_bug_of_its_own, ("a", "b"), "answer = abs\n")
    result = exercise.evaluate({"answer": abs})
    assert result.status == INCORRECT and "Your code raised" not in result.message and "checker" in result.message
    learner = exercise.evaluate_code("def answer(x):\n    return x.nonexistent\n")
    assert learner.message.startswith("Your code raised AttributeError")


def test_solution_of_collects_the_definitions_and_their_imports():
    code = solution_of("lesson03", "causal_mask", "CausalSelfAttention")
    assert code.startswith("import") and "def causal_mask" in code and "class CausalSelfAttention" in code
    assert "def padded_self_attention" not in code
    scope = {}
    exec(code, scope)
    assert issubclass(scope["CausalSelfAttention"], nn.Module)



def test_backpropagating_both_explains_a_cut_graph_and_an_in_place_change():
    package, learner = nn.Linear(3, 4), nn.Linear(3, 4)
    learner.load_state_dict(package.state_dict())
    x = torch.randn(2, 3)
    backpropagate_both(package, package(x), learner, learner(x), "Block", "on batch 2")
    assert torch.equal(package.weight.grad, learner.weight.grad)            # the same probe reached both
    with pytest.raises(ExerciseFailure, match="on batch 2: the output of your `Block` carries no gradient"):
        backpropagate_both(package, package(x), learner, learner(x).detach(), "Block", "on batch 2")

    def in_place(x):
        weights = torch.sigmoid(learner(x))
        weights.mul_(2)                                   # sigmoid's backward needs its output: now changed
        return weights

    with pytest.raises(ExerciseFailure, match="backpropagating through your `Block` fails .*An in-place operation"):
        backpropagate_both(package, torch.sigmoid(package(x)) * 2, learner, in_place(x), "Block", "on batch 2")
