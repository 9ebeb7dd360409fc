"""Positional encodings: the paper's formula, the relative-position rotation, buffers, learned tables, errors."""
import math

import pytest
import torch

from course_utils.positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding, sinusoidal_table


def test_table_matches_the_paper_formula_in_float64():
    max_len, d_model = 50, 16
    table = sinusoidal_table(max_len, d_model)
    assert table.shape == (max_len, d_model) and table.dtype == torch.float32
    for pos in (0, 1, 7, 49):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def rotation_blocks(offset: int, d_model: int) -> torch.Tensor:
    """Block-diagonal (d_model, d_model) matrix rotating each (sin, cos) pair by offset · ω_i."""
    frequency = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    rotation = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, omega in enumerate(frequency):
        c, s = math.cos(offset * omega), math.sin(offset * omega)
        # [sin(a + b), cos(a + b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a]
        rotation[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    return rotation


@pytest.mark.parametrize("offset", [1, 5, 17])
def test_shift_by_k_is_one_fixed_rotation_for_every_position(offset):
    d_model, max_len = 16, 64
    table = sinusoidal_table(max_len, d_model).double()
    rotated = table[:-offset] @ rotation_blocks(offset, d_model).T
    torch.testing.assert_close(rotated, table[offset:], atol=1e-5, rtol=0)


def test_dot_product_depends_only_on_the_distance():
    table = sinusoidal_table(100, 32)
    similarity = table @ table.T
    for distance in (0, 3, 10):
        diagonal = torch.diagonal(similarity, offset=distance)
        torch.testing.assert_close(diagonal, diagonal[0].expand_as(diagonal), atol=1e-4, rtol=0)
    assert similarity[0, 0].item() == pytest.approx(16.0, abs=1e-4)  # d_model / 2 pairs of sin² + cos²


def test_odd_d_model_is_rejected():
    with pytest.raises(ValueError, match="must be even"):
        sinusoidal_table(10, 7)


def test_sinusoidal_table_is_a_buffer_not_a_parameter():
    encoding = SinusoidalPositionalEncoding(8, max_len=20)
    assert list(encoding.parameters()) == []
    assert "table" in dict(encoding.named_buffers())
    assert "table" not in encoding.state_dict()  # rebuilt from the formula, so not saved


def test_sinusoidal_forward_adds_the_right_rows_with_offset():
    encoding = SinusoidalPositionalEncoding(8, max_len=20)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(encoding(x), x + sinusoidal_table(20, 8)[:5])
    torch.testing.assert_close(encoding(x, offset=3), x + sinusoidal_table(20, 8)[3:8])


@pytest.mark.parametrize("encoding_class", [SinusoidalPositionalEncoding, LearnedPositionalEncoding])
def test_past_max_len_raises_a_clear_error(encoding_class):
    encoding = encoding_class(8, max_len=10)
    encoding(torch.zeros(1, 10, 8))  # exactly max_len is fine
    with pytest.raises(ValueError, match=r"exceeds max_len=10.*larger max_len"):
        encoding(torch.zeros(1, 11, 8))
    with pytest.raises(ValueError, match="exceeds max_len=10"):
        encoding(torch.zeros(1, 4, 8), offset=7)


@pytest.mark.parametrize("encoding_class", [SinusoidalPositionalEncoding, LearnedPositionalEncoding])
def test_wrong_input_shape_raises(encoding_class):
    with pytest.raises(ValueError, match=r"\(batch, seq, d_model=8\)"):
        encoding_class(8, max_len=10)(torch.zeros(5, 8))
    with pytest.raises(ValueError, match=r"d_model=8"):
        encoding_class(8, max_len=10)(torch.zeros(1, 5, 6))


def test_learned_encoding_is_trainable_and_adds_its_rows():
    encoding = LearnedPositionalEncoding(8, max_len=12)
    params = dict(encoding.named_parameters())
    assert list(params) == ["table.weight"] and params["table.weight"].shape == (12, 8)
    assert params["table.weight"].std().item() == pytest.approx(0.02, rel=0.3)
    x = torch.randn(2, 4, 8)
    torch.testing.assert_close(encoding(x, offset=2), x + encoding.table.weight[2:6])
    encoding(x).sum().backward()
    grad = encoding.table.weight.grad
    assert grad[:4].abs().sum() > 0 and grad[4:].abs().sum() == 0  # only the used positions learn


def test_sinusoidal_extends_without_changing_existing_positions():
    torch.testing.assert_close(sinusoidal_table(200, 16)[:50], sinusoidal_table(50, 16))
