"""Right answers other than the stored solution are accepted, and the solutions agree with the package."""
import torch

from course_utils.exercises import lesson01, lesson02, lesson03, lesson05, lesson06
from course_utils.exercises.core import CORRECT, INCORRECT


def test_check_prints_and_never_raises(capsys):
    lesson01.q1.bind({"count_pairs": lambda ids: 1 / 0}).check()
    out = capsys.readouterr().out
    assert "❌" in out and "ZeroDivisionError" in out


def test_merge_solution_agrees_with_the_course_tokenizer():
    from course_utils.tokenization import merge_pair as package_merge_pair

    merge_pair = lesson01.q2.run_solution()["merge_pair"]
    for ids, pair in (([1, 1, 1, 1, 2], (1, 1)), ([3, 4, 3, 4, 3], (4, 3)), ([5], (5, 5))):
        assert merge_pair(ids, pair, 99) == package_merge_pair(ids, pair, 99)


def test_table_solution_agrees_with_the_package():
    from course_utils.positional import sinusoidal_table

    torch.testing.assert_close(lesson02.q2.run_solution()["sinusoidal_pe"](30, 16), sinusoidal_table(30, 16))


def test_masked_solution_matches_the_package():
    from course_utils.attention import scaled_dot_product_attention

    query, key = lesson03.example_query_key()
    mask = lesson03.example_mask()
    weights = lesson03.q2.run_solution()["masked_weights"](query, key, mask)
    expected = scaled_dot_product_attention(query[:, None], key[:, None], key[:, None], mask[:, None])[1][:, 0]
    torch.testing.assert_close(weights, expected)
    assert not torch.isnan(weights).any() and weights[1, 0].abs().sum() == 0


def test_presence_asks_for_a_python_float_not_a_tensor():
    code = "def p_token_present(v, n):\n    return 1 - (1 - 1 / torch.tensor(float(v), dtype=torch.float64)) ** n\n"
    result = lesson05.q1.evaluate_code(code, "import torch\n")
    assert result.status == INCORRECT and "Python float" in result.message


def test_tying_the_embedding_to_the_output_is_accepted_too():
    code = "def tie_weights(model):\n    model.embedding.weight = model.output.weight\n    return model\n"
    result = lesson06.q3.evaluate_code(code)
    assert result.status == CORRECT, result.message


def test_minus_infinity_with_zeroing_after_the_softmax_is_accepted():
    code = lesson03.q5.solution.replace("torch.finfo(scores.dtype).min", "float('-inf')")
    result = lesson03.q5.evaluate_code(code)
    assert result.status == CORRECT, result.message
