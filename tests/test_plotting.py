"""show_heatmaps: one panel per matrix, labels where asked, clear errors for bad input."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course_utils.plotting import show_heatmaps  # noqa: E402

TOKENS = ["the", "cat", "sat"]


def image_axes(fig):
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_one_panel_per_head_with_token_labels_and_titles():
    weights = torch.softmax(torch.randn(4, 3, 3), dim=-1)  # (heads, q, k)
    fig = show_heatmaps(weights, TOKENS, TOKENS, titles=[f"head {h}" for h in range(4)], ncols=2)
    panels = image_axes(fig)
    assert len(panels) == 4
    assert [ax.get_title() for ax in panels] == ["head 0", "head 1", "head 2", "head 3"]
    assert [t.get_text() for t in panels[0].get_yticklabels()] == TOKENS
    assert [t.get_text() for t in panels[3].get_xticklabels()] == TOKENS
    np.testing.assert_allclose(panels[2].images[0].get_array(), weights[2].numpy())


def test_single_matrix_numpy_and_list_inputs():
    assert len(image_axes(show_heatmaps(np.eye(3)))) == 1
    assert len(image_axes(show_heatmaps([np.eye(3), np.ones((3, 3))]))) == 2
    assert len(image_axes(show_heatmaps(torch.eye(3, dtype=torch.bool)))) == 1  # boolean masks draw as 0/1


def test_unused_grid_cells_are_hidden():
    fig = show_heatmaps(torch.rand(3, 2, 2), ncols=2)  # 2 × 2 grid, 3 panels
    assert len(image_axes(fig)) == 3
    assert sum(not ax.axison for ax in fig.axes) == 1


def test_colour_range_and_colorbar_label():
    fig = show_heatmaps(torch.rand(5, 8) * 2 - 1, vmin=-1, vmax=1, cmap="RdBu_r", colorbar_label="value")
    image = image_axes(fig)[0].images[0]
    assert image.get_clim() == (-1, 1)
    assert any(ax.get_ylabel() == "value" for ax in fig.axes)


def test_annotate_writes_every_value():
    matrix = torch.tensor([[0.25, 0.75], [1.0, 0.0]])
    fig = show_heatmaps(matrix, annotate=True)
    texts = sorted(t.get_text() for t in image_axes(fig)[0].texts)
    assert texts == ["0.00", "0.25", "0.75", "1.00"]


@pytest.mark.parametrize("bad, message", [
    (torch.rand(2, 2, 3, 3), "2-D matrices"),
    ([], "no matrices"),
])
def test_bad_shapes_raise_clear_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        show_heatmaps(bad)


def test_label_and_title_count_mismatch_raise():
    with pytest.raises(ValueError, match="2 titles for 3 panels"):
        show_heatmaps(torch.rand(3, 2, 2), titles=["a", "b"])
    with pytest.raises(ValueError, match="one label per row"):
        show_heatmaps(torch.rand(3, 3), row_labels=["a", "b"])
    with pytest.raises(ValueError, match="one label per col"):
        show_heatmaps(torch.rand(3, 3), col_labels=TOKENS + ["extra"])
