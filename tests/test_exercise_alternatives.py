"""Right answers other than the stored solution are accepted, and a check never raises."""

from course_utils.exercises import lesson01, lesson05, lesson06
from course_utils.exercises.core import CORRECT, INCORRECT


def test_check_prints_and_never_raises(capsys):
    lesson01.q1.bind({"merge_pair": lambda ids, pair, new_id: 1 / 0}).check()
    out = capsys.readouterr().out
    assert "❌" in out and "ZeroDivisionError" in out


def test_merge_solution_agrees_with_the_course_tokenizer():
    from course_utils.tokenization import merge_pair as package_merge_pair

    merge_pair = lesson01.q1.run_solution()["merge_pair"]
    for ids, pair in (([1, 1, 1, 1, 2], (1, 1)), ([3, 4, 3, 4, 3], (4, 3)), ([5], (5, 5))):
        assert merge_pair(ids, pair, 99) == package_merge_pair(ids, pair, 99)


def test_presence_asks_for_a_python_float_not_a_tensor():
    code = "def p_token_present(v, n):\n    return 1 - (1 - 1 / torch.tensor(float(v), dtype=torch.float64)) ** n\n"
    result = lesson05.q1.evaluate_code(code, "import torch\n")
    assert result.status == INCORRECT and "Python float" in result.message


def test_tying_the_embedding_to_the_output_is_accepted_too():
    code = "def tie_weights(model):\n    model.embedding.weight = model.output.weight\n    return model\n"
    result = lesson06.q1.evaluate_code(code)
    assert result.status == CORRECT, result.message
