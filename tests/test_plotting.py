"""show_heatmaps and the architecture diagrams: the right panels, boxes and labels; clear errors for bad input."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from course_utils.diagrams import (  # noqa: E402
    HIGHLIGHT_FACE,
    MASK_COLOURS,
    MASK_EXAMPLE_SOURCE,
    MASK_EXAMPLE_TARGET,
    MUTED_FACE,
)
from course_utils.errors import CourseTypeError, CourseValueError  # noqa: E402
from course_utils.masks import causal_mask, padding_mask, target_mask  # noqa: E402
from course_utils.plotting import (  # noqa: E402
    ARCHITECTURE_PARTS,
    ARCHITECTURE_VARIANTS,
    architecture_parts,
    draw_architecture,
    draw_encoder_decoder_masks,
    draw_multihead_split,
    draw_qkv_projection,
    draw_residual_stream,
    draw_rotation,
    show_heatmaps,
    show_mask,
)
from course_utils.positional import sinusoidal_table  # noqa: E402

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


# --- architecture diagrams -----------------------------------------------------------------------------------------

EXPECTED_PARTS = {
    "encoder-decoder": {"tokens", "embedding", "positional encoding", "self-attention", "masked self-attention",
                        "cross-attention", "add & norm", "feed-forward", "output projection", "softmax"},
    "encoder": {"tokens", "embedding", "positional encoding", "self-attention", "add & norm", "feed-forward",
                "norm", "task head"},
    "decoder-only": {"tokens", "embedding", "positional encoding", "masked self-attention", "add & norm",
                     "feed-forward", "output projection", "softmax"},
    "decoder-only pre-LN": {"tokens", "embedding", "masked self-attention", "norm", "add", "feed-forward",
                            "output projection", "softmax"},
    "decoder-only pre-LN, learned positions": {"tokens", "embedding", "positional encoding", "masked self-attention",
                                               "norm", "add", "feed-forward", "output projection", "softmax"},
}


def boxes(fig):
    """The part boxes of an architecture figure: (part, patch) for every box tagged with a part name."""
    return [(patch.get_gid(), patch) for ax in fig.axes for patch in ax.patches
            if isinstance(patch, FancyBboxPatch) and patch.get_gid() in ARCHITECTURE_PARTS]


def texts(fig, gid=None):
    return [t.get_text().replace("\n", " ") for ax in fig.axes for t in ax.texts if gid is None or t.get_gid() == gid]


@pytest.mark.parametrize("draw", [
    lambda: draw_architecture(),
    lambda: draw_architecture(variant="encoder"),
    lambda: draw_architecture(variant="decoder-only"),
    lambda: draw_architecture(variant="decoder-only pre-LN"),
    lambda: draw_architecture(variant="decoder-only pre-LN, learned positions"),
    lambda: draw_multihead_split(),
    lambda: draw_residual_stream(),
    lambda: draw_encoder_decoder_masks(),
    lambda: draw_qkv_projection(),
    lambda: draw_rotation(),
    lambda: show_mask(causal_mask(5)),
])
def test_every_diagram_returns_a_figure_of_notebook_width(draw):
    fig = draw()
    assert isinstance(fig, plt.Figure)
    assert 4 <= fig.get_figwidth() <= 10.5


def test_parts_per_variant_are_the_documented_ones():
    assert ARCHITECTURE_VARIANTS == tuple(EXPECTED_PARTS)
    assert set(ARCHITECTURE_PARTS) == set.union(*EXPECTED_PARTS.values())
    for variant, parts in EXPECTED_PARTS.items():
        assert set(architecture_parts(variant)) == parts


@pytest.mark.parametrize("variant", ARCHITECTURE_VARIANTS)
def test_every_part_of_the_variant_is_a_labelled_box(variant):
    fig = draw_architecture(variant=variant)
    assert {part for part, _ in boxes(fig)} == EXPECTED_PARTS[variant]
    for part in EXPECTED_PARTS[variant]:
        labels = texts(fig, gid=part)
        assert labels and all(part in label for label in labels), (part, labels)


def test_highlight_colours_exactly_the_named_boxes():
    plain = draw_architecture()
    assert not any(patch.get_facecolor() == to_rgba(HIGHLIGHT_FACE) for _, patch in boxes(plain))
    highlight = ("self-attention", "add & norm")
    fig = draw_architecture(highlight=highlight)
    strong = [part for part, patch in boxes(fig) if patch.get_facecolor() == to_rgba(HIGHLIGHT_FACE)]
    muted = [part for part, patch in boxes(fig) if patch.get_facecolor() == to_rgba(MUTED_FACE)]
    assert sorted(strong) == ["add & norm"] * 5 + ["self-attention"]  # 2 add & norm in the encoder, 3 in the decoder
    assert len(strong) + len(muted) == len(boxes(fig))
    assert "self-attention, add & norm" in fig.axes[0].get_title()


def test_highlight_accepts_one_name_as_a_string():
    fig = draw_architecture(highlight="task head", variant="encoder")
    assert [part for part, patch in boxes(fig) if patch.get_facecolor() == to_rgba(HIGHLIGHT_FACE)] == ["task head"]


def test_bad_highlight_and_variant_raise_course_errors():
    with pytest.raises(CourseValueError, match="unknown architecture part 'attention'.*'self-attention'"):
        draw_architecture(highlight=("attention",))
    with pytest.raises(CourseValueError, match="'encoder' variant has no 'cross-attention'"):
        draw_architecture(highlight=("cross-attention",), variant="encoder")
    with pytest.raises(CourseTypeError, match="part names"):
        draw_architecture(highlight=(3,))
    with pytest.raises(CourseValueError, match="unknown architecture variant 'gpt'.*'decoder-only'"):
        draw_architecture(variant="gpt")


def test_drawing_into_a_given_axes_uses_its_figure():
    fig, ax = plt.subplots()
    assert draw_architecture(ax=ax) is fig
    assert draw_residual_stream("pre", ax=ax) is fig


def test_split_diagram_writes_the_shapes_of_its_arguments():
    fig = draw_multihead_split(batch=3, seq=5, d_model=12, n_heads=4)
    shapes = [label.split(" = ")[1] for label in texts(fig, gid="shape")]
    model, split, heads = "(3, 5, 12)", "(3, 5, 4, 3)", "(3, 4, 5, 3)"
    assert shapes == [model, model, split, heads, heads, split, model, model]
    assert "(batch, heads, seq, seq) = (3, 4, 5, 5)" in " ".join(texts(fig))
    assert "d_head = 3" in fig.axes[0].get_title()


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(d_model=10, n_heads=3), CourseValueError, r"d_model=10 is not divisible by n_heads=3.*\[1, 2, 5, 10\]"),
    (dict(n_heads=0), CourseValueError, "n_heads must be an int >= 1"),
    (dict(seq=4.0), CourseTypeError, "seq must be an int"),
])
def test_split_diagram_rejects_bad_sizes(kwargs, error, message):
    with pytest.raises(error, match=message):
        draw_multihead_split(**kwargs)


@pytest.mark.parametrize("norm, layer_norms, final_norms", [("both", 2, 2), ("post", 1, 1), ("pre", 1, 1)])
def test_residual_stream_panels(norm, layer_norms, final_norms):
    fig = draw_residual_stream(norm)
    assert len(texts(fig, gid="layernorm")) == layer_norms
    assert len(texts(fig, gid="final layernorm")) == final_norms
    titles = " ".join(texts(fig))
    assert ("Post-LN" in titles) == (norm != "pre") and ("Pre-LN" in titles) == (norm != "post")


def test_residual_stream_rejects_an_unknown_norm():
    with pytest.raises(CourseValueError, match="unknown norm 'middle'.*'pre'"):
        draw_residual_stream("middle")


def test_mask_diagram_names_each_mask_and_draws_the_real_masks():
    fig = draw_encoder_decoder_masks()
    assert texts(fig, gid="mask name") == ["source padding mask", "target mask: causal AND padding",
                                           "memory mask = source padding"]
    src = torch.tensor([[0 if t == "<pad>" else i + 1 for i, t in enumerate(MASK_EXAMPLE_SOURCE)]])
    tgt = torch.tensor([[0 if t == "<pad>" else i + 1 for i, t in enumerate(MASK_EXAMPLE_TARGET)]])
    grids = [inset.images[0].get_array() for inset in fig.axes[0].child_axes]
    source_keys = padding_mask(src)[0, 0, 0].int().numpy()
    np.testing.assert_array_equal(grids[0], np.tile(source_keys, (src.shape[1], 1)))
    np.testing.assert_array_equal(grids[1], target_mask(tgt)[0, 0].int().numpy())
    np.testing.assert_array_equal(grids[2], np.tile(source_keys, (tgt.shape[1], 1)))
    assert grids[1][0].tolist() == [1, 0, 0, 0, 0]  # the first target token sees only itself


@pytest.mark.parametrize("variant, expected", [("encoder-decoder", 5), ("encoder", 2), ("decoder-only", 2),
                                               ("decoder-only pre-LN", 2),
                                               ("decoder-only pre-LN, learned positions", 2)])
def test_one_residual_per_sublayer_and_pre_ln_skips_enter_the_add_boxes(variant, expected):
    fig = draw_architecture(variant=variant)
    residuals = [p for ax in fig.axes for p in ax.patches
                 if isinstance(p, FancyArrowPatch) and to_rgba(p.get_edgecolor()) == to_rgba("#555555")]
    assert len(residuals) == expected
    if variant.startswith("decoder-only pre-LN"):   # each skip leaves below a norm box and enters an add box
        part_boxes = boxes(fig)
        norm_bottoms = [p.get_y() for part, p in part_boxes if part == "norm"]
        add_centres = [p.get_y() + p.get_height() / 2 for part, p in part_boxes if part == "add"]
        for arrow in residuals:
            ys = arrow.get_path().vertices[:, 1]
            assert any(0 < bottom - ys[0] < 0.5 for bottom in norm_bottoms), ys
            assert any(abs(ys[3] - centre) < 1e-6 for centre in add_centres), ys   # (lane, add.y) → the add box


# --- the Q/K/V projection ------------------------------------------------------------------------------------------

def test_qkv_diagram_writes_the_shapes_of_its_arguments():
    fig = draw_qkv_projection(seq=10, d_model=8, d_k=4, d_v=6)
    expected = {"x": "(seq, d_model) = (10, 8)", "W_Q": "(d_model, d_k) = (8, 4)", "W_K": "(d_model, d_k) = (8, 4)",
                "W_V": "(d_model, d_v) = (8, 6)", "Q": "(seq, d_k) = (10, 4)", "K": "(seq, d_k) = (10, 4)",
                "V": "(seq, d_v) = (10, 6)", "scores": "(seq, seq) = (10, 10)", "softmax": "(seq, seq) = (10, 10)",
                "output": "(seq, d_v) = (10, 6)"}
    for gid, shape in expected.items():
        labels = texts(fig, gid=gid)
        assert len(labels) == 1 and shape in labels[0], (gid, labels)
        assert len([p for p in fig.axes[0].patches if p.get_gid() == gid]) == 1   # one box each
    assert "W_Q" in texts(fig, gid="W_Q")[0] and "softmax" in texts(fig, gid="softmax")[0]
    assert "weights · V" in texts(fig, gid="output")[0]
    assert "\\sqrt{4}" in " ".join(texts(fig))                                  # √d_k with the argument's d_k
    assert "d_v = 6" in fig.axes[0].get_title()


def test_qkv_diagram_defaults_d_v_to_d_k():
    fig = draw_qkv_projection(seq=3, d_model=16, d_k=2)
    assert "(seq, d_v) = (3, 2)" in texts(fig, gid="V")[0]


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(seq=0), CourseValueError, "seq must be an int >= 1"),
    (dict(d_k=2.0), CourseTypeError, "d_k must be an int"),
    (dict(d_v=-1), CourseValueError, "d_v must be an int >= 1"),
])
def test_qkv_diagram_rejects_bad_sizes(kwargs, error, message):
    with pytest.raises(error, match=message):
        draw_qkv_projection(**kwargs)


# --- a shift is a rotation -----------------------------------------------------------------------------------------

def rotation_arcs(fig):
    return [line for line in fig.axes[0].lines if line.get_gid() == "rotation"]


@pytest.mark.parametrize("positions, k, d_model, pair", [((1, 4), 2, 64, 0), ((0, 3, 7), 5, 64, 2), (9, 3, 16, 7)])
def test_rotation_points_are_the_tables_and_every_arc_turns_by_k_omega(positions, k, d_model, pair):
    fig = draw_rotation(positions, k=k, d_model=d_model, pair=pair)
    starts = (positions,) if isinstance(positions, int) else positions
    table = sinusoidal_table(max(starts) + k + 1, d_model)
    drawn = [line.get_xydata()[0] for line in fig.axes[0].lines if line.get_gid() == "position"]
    expected = [(table[p, 2 * pair + 1].item(), table[p, 2 * pair].item()) for s in starts for p in (s, s + k)]
    np.testing.assert_allclose(drawn, expected, atol=1e-6)                 # x = cos = PE[p, 2i+1], y = sin = PE[p, 2i]
    omega = 10000 ** (-2 * pair / d_model)
    arcs = rotation_arcs(fig)
    assert len(arcs) == len(starts)
    for start, arc in zip(starts, arcs):
        points = arc.get_xydata()
        angles = np.unwrap(np.arctan2(points[:, 1], points[:, 0]))
        assert angles[-1] - angles[0] == pytest.approx(k * omega % (2 * np.pi), abs=1e-4)
        assert angles[0] == pytest.approx(np.angle(np.exp(1j * start * omega)), abs=1e-4)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(legend) == len(starts) and len({text.split(": ")[1] for text in legend}) == 1  # one angle for all
    assert f"k = {k}" in fig.axes[0].get_title()


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(pair=32), CourseValueError, r"pair=32 does not exist for d_model=64.*0 \.\. 31"),
    (dict(d_model=7), CourseValueError, "d_model must be even"),
    (dict(k=0), CourseValueError, "k must be an int >= 1"),
    (dict(positions=(1, -2)), CourseValueError, r"positions\[1\] must be an int >= 0"),
    (dict(positions=()), CourseTypeError, "1 to 6 positions"),
    (dict(positions="1"), CourseTypeError, "1 to 6 positions"),
    (dict(positions=(1.5,)), CourseTypeError, r"positions\[0\] must be an int"),
])
def test_rotation_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        draw_rotation(**kwargs)


# --- binary masks --------------------------------------------------------------------------------------------------

def test_mask_draws_two_colours_with_a_legend_and_no_colour_bar():
    mask = causal_mask(5)                                                   # (1, 1, 5, 5) bool
    fig = show_mask(mask, title="causal")
    (ax,) = fig.axes                                                        # no colour-bar axes
    image = ax.images[0]
    np.testing.assert_array_equal(image.get_array(), mask[0, 0].int().numpy())
    assert image.cmap.N == 2 and image.get_clim() == (0, 1)
    assert [to_rgba(image.cmap(v)) for v in (0, 1)] == [to_rgba(c) for c in MASK_COLOURS]
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["may attend", "hidden"]
    assert [to_rgba(h.get_facecolor()) for h in legend.legend_handles] == [to_rgba(MASK_COLOURS[1]),
                                                                           to_rgba(MASK_COLOURS[0])]
    assert list(ax.get_xticks()) == [0, 1, 2, 3, 4] and list(ax.get_yticks()) == [0, 1, 2, 3, 4]
    assert ax.get_title() == "causal"


@pytest.mark.parametrize("mask", [
    torch.tensor([[1, 0], [1, 1]]), torch.tensor([[1.0, 0.0], [1.0, 1.0]]), np.array([[True, False], [True, True]]),
    torch.tensor([[[[1, 0], [1, 1]]]], dtype=torch.uint8),
])
def test_mask_accepts_bool_and_zero_one_values(mask):
    fig = show_mask(mask)
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), [[1, 0], [1, 1]])


def test_mask_labels_legend_words_and_long_masks():
    fig = show_mask(causal_mask(3)[0, 0], TOKENS, TOKENS, labels=("visible", "future"))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == TOKENS
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["visible", "future"]
    long_ax = show_mask(torch.ones(40, 40, dtype=torch.bool), legend=False).axes[0]
    assert long_ax.get_legend() is None
    assert all(float(tick).is_integer() for tick in long_ax.get_xticks()) and len(long_ax.get_xticks()) < 40


def test_masks_side_by_side_share_one_figure():
    fig, axes = plt.subplots(1, 2)
    for i, ax in enumerate(axes):
        assert show_mask(padding_mask(torch.tensor([[5, 6, 0]])).expand(-1, 1, 3, -1)[0, 0], ax=ax,
                         legend=i == 1) is fig
    assert axes[0].get_legend() is None and axes[1].get_legend() is not None


@pytest.mark.parametrize("bad, error, message", [
    (padding_mask(torch.tensor([[5, 0], [5, 6]])), CourseValueError, r"got shape \(2, 1, 1, 2\).*mask\[i, 0\]"),
    (torch.ones(3, dtype=torch.bool), CourseValueError, r"got shape \(3,\).*mask\[None\]"),
    (torch.ones(2, 3, 3, dtype=torch.bool), CourseValueError, "one \\(q_len, k_len\\) mask"),
    (torch.softmax(torch.randn(3, 3), -1), CourseValueError, "yes/no mask.*show_heatmaps"),
    (torch.zeros(0, 3, dtype=torch.bool), CourseValueError, "empty mask"),
    ([[True, False]], CourseTypeError, "mask tensor"),
    (torch.ones(2, 2, dtype=torch.complex64), CourseTypeError, "complex64"),
])
def test_mask_rejects_what_is_not_one_binary_mask(bad, error, message):
    with pytest.raises(error, match=message):
        show_mask(bad)


def test_mask_rejects_wrong_label_counts_and_legend_words():
    with pytest.raises(CourseValueError, match="2 row_labels for a mask of shape \\(3, 3\\)"):
        show_mask(causal_mask(3), row_labels=["a", "b"])
    with pytest.raises(CourseTypeError, match="two strings"):
        show_mask(causal_mask(3), labels="may attend")


def test_lesson_08_block_is_drawn_with_its_own_parts():
    labels = texts(draw_architecture(variant="decoder-only pre-LN, learned positions"))
    assert "masked self-attention (multi-head)" in labels and "feed-forward (GELU)" in labels
    assert "+ positional encoding (a learned table)" in labels
    assert not any("RoPE" in label or "SwiGLU" in label for label in labels)
