"""Explorer helpers of notebooks 02 and 03: inputs parsed with clear errors, masks applied, figures drawn."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils.attention import MultiHeadAttention  # noqa: E402
from course_utils.widgets import (  # noqa: E402
    PAD_TOKEN,
    attention_for_tokens,
    draw_attention,
    draw_positional_encoding,
    parse_dimensions,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_parse_dimensions():
    assert parse_dimensions("0, 1,10", 16) == [0, 1, 10]
    with pytest.raises(ValueError, match=r"\[0, 15\]"):
        parse_dimensions("3, 16", 16)
    with pytest.raises(ValueError, match="whole numbers"):
        parse_dimensions("a, 1", 16)
    with pytest.raises(ValueError, match=r"\[0, 15\]"):
        parse_dimensions("", 16)


def test_draw_positional_encoding_plots_one_curve_per_dimension():
    fig = draw_positional_encoding(d_model=32, n_positions=50, dims=[0, 1, 7])
    heatmap, curves = fig.axes[0], fig.axes[1]
    assert heatmap.images[0].get_array().shape == (50, 32)
    assert len(curves.lines) == 3


def encode(tokens):
    torch.manual_seed(0)
    table = {word: torch.randn(8) for word in ["a", "b", "c"]}
    table[PAD_TOKEN] = torch.zeros(8)
    return torch.stack([table[t] for t in tokens])[None]


@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding", "causal + padding"])
def test_attention_for_tokens_applies_the_chosen_mask(mask_kind):
    attention = MultiHeadAttention(8, 2).eval()
    tokens, weights, mask = attention_for_tokens(["a", "b", "c"], encode, attention, mask_kind, n_pad=2)
    n = 5 if "padding" in mask_kind else 3
    assert len(tokens) == n and weights.shape == (2, n, n)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, n))
    if mask_kind == "none":
        assert mask is None
    else:
        assert torch.all(weights[:, ~mask] == 0)
    if "causal" in mask_kind:
        assert torch.all(weights[:, 0, 1:] == 0)
    if "padding" in mask_kind:
        assert tokens[-2:] == [PAD_TOKEN, PAD_TOKEN] and torch.all(weights[..., 3:] == 0)


def test_attention_for_tokens_rejects_bad_input():
    attention = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="mask_kind must be one of"):
        attention_for_tokens(["a"], encode, attention, "future")
    with pytest.raises(ValueError, match="empty"):
        attention_for_tokens([], encode, attention)


def test_draw_attention_all_heads_or_one():
    weights = torch.softmax(torch.randn(3, 4, 4), -1)
    tokens = list("wxyz")
    assert sum(bool(ax.images) for ax in draw_attention(tokens, weights, "all").axes) >= 3
    one = draw_attention(tokens, weights, 1)
    assert [ax.get_title() for ax in one.axes if ax.images and ax.get_title()] == ["head 1"]
