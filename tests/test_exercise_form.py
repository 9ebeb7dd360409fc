"""The declared form of an exercise (course_utils/exercises/core.py): a contract check, the package's reference, and
one table of typical mistakes that names the bug — shown on a toy exercise whose reference is a doubling."""
import pytest
import torch

from course_utils.exercises.asserts import Case, check_function
from course_utils.exercises.core import CORRECT, INCORRECT, NOT_ATTEMPTED, Exercise, ExerciseFailure, Mistake


def reference_double(x):
    return x * 2


CASES = [Case("a row of three", (torch.tensor([1.0, -2.0, 3.0]),)), Case("a column", (torch.randn(4, 1),))]


def check_double(ns):
    check_function(ns["double"], reference_double, CASES, "double", forbidden={"the reference": torch.mul})


TOY = Exercise(
    name="Double", variables=("double",), checker=check_double, hints=("a", "b"), solution="",
    mistakes=(
        Mistake("tripled", "you multiplied by 3, not 2", variant=lambda x: reference_double(x) * 1.5),
        Mistake("sign lost", "the sign is lost: no abs()", variant=lambda x: reference_double(x).abs(),
                shows=lambda case, got, answer: bool((got >= 0).all())),
    ),
)


def test_a_declared_variant_is_rejected_with_its_message():
    for mistake in TOY.mistakes:
        result = TOY.evaluate({"double": mistake.variant})
        assert result.status == INCORRECT and mistake.message in result.message, result.message
    assert TOY.planted("tripled") is TOY.mistakes[0].variant


def test_a_variant_declared_in_the_course_may_call_the_reference_the_learner_may_not():
    from course_utils.exercises import lesson03
    planted = lesson03.q1.evaluate({"causal_mask": lesson03.q1.planted("diagonal hidden"), "my_prediction": [0]})
    assert "a token may see itself" in planted.message, planted.message   # the variant calls causal_mask
    wrapper = lesson03.q1.evaluate_code("from course_utils.masks import causal_mask as package_mask\n\n"
                                        "def causal_mask(n):\n    return package_mask(n)\n", "import torch\n")
    assert "the package's course_utils.masks.causal_mask" in wrapper.message, wrapper.message


def test_a_learner_answer_with_the_bug_is_named_and_an_unknown_one_gets_the_contract_message():
    assert "multiplied by 3" in TOY.evaluate_code("def double(x):\n    return x + x + x\n").message
    assert "the sign is lost" in TOY.evaluate_code("def double(x):\n    return 2 * x.abs() + 1\n").message
    unknown = TOY.evaluate_code("def double(x):\n    return x * 2 + 1\n")
    assert unknown.status == INCORRECT and "differs" in unknown.message and "on a row of three" in unknown.message
    borrowed = TOY.evaluate({"double": lambda x: torch.mul(x, 2)})
    assert "calls the reference" in borrowed.message


def test_a_crash_is_an_output_a_declared_mistake_can_name():
    exercise = Exercise("Double", ("double",), check_double, ("a", "b"), "", mistakes=(
        Mistake("a list", "tensors, not lists", variant=lambda x: reference_double(x.tolist()) + 1),))
    result = exercise.evaluate_code("def double(x):\n    return [2 * v for v in x.tolist()] + 1\n")
    assert result.status == INCORRECT and "tensors, not lists" in result.message


def test_not_implemented_error_from_inside_pytorch_is_an_error_not_a_missing_answer():
    stub = TOY.evaluate_code("def double(x):\n    raise NotImplementedError\n")
    assert stub.status == NOT_ATTEMPTED
    inside = TOY.evaluate_code("def double(x):\n    return torch.ones(2).to_sparse().view(-1) * 2\n",
                               "import torch\n")
    assert inside.status == INCORRECT and "NotImplementedError" in inside.message, inside.message


def test_the_right_answer_passes_and_a_mistake_name_must_exist():
    assert TOY.evaluate_code("def double(x):\n    return x + x\n").status == CORRECT
    with pytest.raises(LookupError):
        TOY.planted("no such mistake")


# ------------------------------------------------------------------------------------------------------------------
# Classes of wrong answers closed in the shared contract check (asserts.py), each shown on a toy answer.
# ------------------------------------------------------------------------------------------------------------------

SCORES = [Case("scores (3, 5)", (torch.randn(3, 5, generator=torch.Generator().manual_seed(0)),))]


def test_an_unstable_formula_is_rejected_on_large_inputs():
    from course_utils.exercises.asserts import check_function

    def naive_softmax(x):
        return x.exp() / x.exp().sum(-1, keepdim=True)

    check_function(lambda x: torch.softmax(x, -1), lambda x: torch.softmax(x, -1), SCORES, "softmax")
    with pytest.raises(ExerciseFailure, match="×1000.*inf or NaN.*subtract the maximum"):
        check_function(naive_softmax, lambda x: torch.softmax(x, -1), SCORES, "softmax")


def test_state_kept_across_calls_of_one_shape_is_rejected():
    from course_utils.exercises.asserts import Draw, check_function

    def cases(draw):
        return [Case("x (2, 3)", (draw.randn(2, 3),))]

    remembered = {}

    def cached_double(x):
        return remembered.setdefault(tuple(x.shape), x * 2)

    draw = Draw(1)
    with pytest.raises(ExerciseFailure, match="previous input of the same shape: something is kept across calls"):
        check_function(cached_double, reference_double, cases(draw), "double", twins=cases(draw.twin()))


def test_constants_that_show_only_on_some_inputs_are_rejected():
    import torch.nn.functional as F

    def norm(eps):
        return lambda x: (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, unbiased=False) + eps).sqrt()

    with pytest.raises(ExerciseFailure, match="×0.001.*a constant that only matters here"):
        check_function(norm(1e-12), norm(1e-5), SCORES, "layer_norm")
    with pytest.raises(ExerciseFailure, match="×1000.*a constant that only matters here"):
        check_function(F.relu6, F.relu, SCORES, "activation")


class Switchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        return torch.relu(self.linear(x)) if self.training else self.linear(x)



def test_offset_and_block_scale_refusals_can_be_named_by_a_mistake_table():
    from course_utils.exercises.asserts import check_block_scales
    from course_utils.exercises.core import Mismatch

    def variance(x):
        return ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1)

    def cancelling(x):
        return (x ** 2).mean(-1) - x.mean(-1) ** 2

    with pytest.raises(Mismatch, match=r"\+ 10000.*cancels catastrophically") as refused:
        check_function(cancelling, variance, SCORES, "variance", offsets=(1e4,))
    assert Mistake("E[x²] − E[x]²", "named", variant=cancelling).names(refused.value)
    x = SCORES[0].args[0]
    with pytest.raises(ExerciseFailure, match="×1000.*a constant that only matters here") as plain:
        check_block_scales(torch.nn.functional.relu6, torch.relu, x, "block", "x (3, 5)")
    assert not isinstance(plain.value, Mismatch)   # unchanged for a lesson that passes no `mismatch`
    with pytest.raises(Mismatch, match="×1000.*a constant that only matters here"):
        check_block_scales(torch.nn.functional.relu6, torch.relu, x, "block", "x (3, 5)",
                           mismatch=lambda message: Mismatch(message, SCORES[0], None, None, None, None))
