"""Architecture diagrams drawn with matplotlib alone: the Transformer, the multi-head split, LayerNorm placement,
masks, the Q/K/V projections, the sinusoidal rotation and binary masks.

Every figure is built from three shared primitives — a labelled box, an arrow along a polyline and an "N×" frame —
so the pictures share one visual language. ``course_utils.plotting`` re-exports the public functions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.colors import ListedColormap
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Patch
from matplotlib.path import Path
from matplotlib.ticker import MaxNLocator

from .errors import CourseTypeError, CourseValueError
from .masks import padding_mask, target_mask
from .positional import sinusoidal_table
from .validation import check_non_negative_int, check_positive_int, describe

ARCHITECTURE_PARTS = (
    "tokens",
    "embedding",
    "positional encoding",
    "self-attention",
    "masked self-attention",
    "cross-attention",
    "add & norm",
    "norm",
    "add",
    "feed-forward",
    "output projection",
    "softmax",
    "task head",
)
"""Names ``draw_architecture(highlight=...)`` accepts; each names one kind of box (all its copies light up)."""

ARCHITECTURE_VARIANTS = ("encoder-decoder", "encoder", "decoder-only", "decoder-only pre-LN",
                         "decoder-only pre-LN, learned positions")

PART_COLOURS = {
    "tokens": "#ffffff",
    "embedding": "#f8cfc3",
    "positional encoding": "#e3d9f3",
    "self-attention": "#fbd79c",
    "masked self-attention": "#fbd79c",
    "cross-attention": "#fbd79c",
    "add & norm": "#f2efa6",
    "norm": "#f2efa6",
    "add": "#e6e6e6",
    "feed-forward": "#bfe0f5",
    "output projection": "#9fd8cb",
    "softmax": "#cbe7c6",
    "task head": "#cbe7c6",
}
HIGHLIGHT_FACE = "#d1495b"
MUTED_FACE = "#f0f0f0"
INK = "#222222"
MUTED_INK = "#9a9a9a"
STREAM_COLOUR = "#3b6fb6"
UNIT_INCHES = 0.72  # one data unit on the page; figures stay 7–10 inches wide


# --- shared primitives ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Anchor:
    """Where a box sits (centre, width, height), so arrows can attach to its edges."""

    x: float
    y: float
    width: float
    height: float

    @property
    def top(self) -> tuple[float, float]:
        return self.x, self.y + self.height / 2

    @property
    def bottom(self) -> tuple[float, float]:
        return self.x, self.y - self.height / 2

    @property
    def left(self) -> tuple[float, float]:
        return self.x - self.width / 2, self.y

    @property
    def right(self) -> tuple[float, float]:
        return self.x + self.width / 2, self.y


def draw_box(ax: plt.Axes, x: float, y: float, label: str, *, width: float = 3.0, height: float = 0.62,
             face: str = "#ffffff", edge: str = INK, ink: str = INK, linewidth: float = 1.1, bold: bool = False,
             fontsize: float = 9.5, gid: str | None = None, linestyle: str = "-") -> Anchor:
    """A rounded box centred at ``(x, y)`` with its label; ``gid`` tags the patch and the text (e.g. the part)."""
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                boxstyle="round,pad=0,rounding_size=0.12", facecolor=face, edgecolor=edge,
                                linewidth=linewidth, linestyle=linestyle, zorder=3, gid=gid))
    ax.text(x, y, label, ha="center", va="center", fontsize=fontsize, color=ink, zorder=4, gid=gid,
            fontweight="bold" if bold else "normal", linespacing=1.15)
    return Anchor(x, y, width, height)


def draw_arrow(ax: plt.Axes, *points: tuple[float, float], colour: str = INK, linewidth: float = 1.2,
               head: bool = True, linestyle: str = "-", zorder: float = 2) -> None:
    """An arrow along the polyline through ``points`` (two points: a straight arrow)."""
    ax.add_patch(FancyArrowPatch(path=Path(points), arrowstyle="-|>" if head else "-", mutation_scale=11,
                                 color=colour, linewidth=linewidth, linestyle=linestyle, zorder=zorder,
                                 shrinkA=0, shrinkB=0, joinstyle="miter", capstyle="butt"))


def draw_frame(ax: plt.Axes, x0: float, y0: float, x1: float, y1: float, label: str = "N×", *,
               side: str = "left", gid: str = "layer stack") -> None:
    """The grey frame around a repeated layer with its "N×" label on ``side``."""
    ax.add_patch(FancyBboxPatch((x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0,rounding_size=0.2",
                                facecolor="#f6f6f6", edgecolor="#8c8c8c", linewidth=1.0, zorder=1, gid=gid))
    text_x = x0 - 0.15 if side == "left" else x1 + 0.15
    ax.text(text_x, (y0 + y1) / 2, label, ha="right" if side == "left" else "left", va="center", fontsize=13,
            fontweight="bold", color="#555555", gid=gid)


def draw_residual(ax: plt.Axes, sublayer: Anchor, add: Anchor, side: str, *, offset: float = 0.28) -> None:
    """The skip connection: leaves the input arrow just below ``sublayer`` and enters ``add`` from ``side``."""
    sign = -1 if side == "left" else 1
    branch_y = sublayer.y - sublayer.height / 2 - 0.26
    lane_x = sublayer.x + sign * (sublayer.width / 2 + offset)
    edge_x = add.x + sign * add.width / 2
    draw_arrow(ax, (sublayer.x, branch_y), (lane_x, branch_y), (lane_x, add.y), (edge_x, add.y), colour="#555555",
               linewidth=1.0)
    ax.add_patch(Circle((sublayer.x, branch_y), 0.045, color="#555555", zorder=3))


def new_canvas(ax: plt.Axes | None, xlim: tuple[float, float],
               ylim: tuple[float, float]) -> tuple[plt.Figure, plt.Axes]:
    """A blank, equal-aspect drawing area; a new figure sized so one data unit is ``UNIT_INCHES`` wide."""
    if ax is None:
        size = ((xlim[1] - xlim[0]) * UNIT_INCHES, (ylim[1] - ylim[0]) * UNIT_INCHES)
        fig, ax = plt.subplots(figsize=size, constrained_layout=True)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax.figure, ax


# --- draw_architecture ---------------------------------------------------------------------------------------------

ENCODER_LAYER = (("self-attention", "self-attention\n(multi-head)"), ("add & norm", "add & norm"),
                 ("feed-forward", "feed-forward"), ("add & norm", "add & norm"))
DECODER_LAYER = (("masked self-attention", "masked self-attention\n(multi-head)"), ("add & norm", "add & norm"),
                 ("cross-attention", "cross-attention\n(K, V from memory)"), ("add & norm", "add & norm"),
                 ("feed-forward", "feed-forward"), ("add & norm", "add & norm"))
GPT_LAYER = (("masked self-attention", "masked self-attention\n(multi-head)"), ("add & norm", "add & norm"),
             ("feed-forward", "feed-forward"), ("add & norm", "add & norm"))


GPT_PRE_LN_LAYER = (("norm", "norm (LayerNorm)"),
                    ("masked self-attention", "masked self-attention\n(RoPE on Q, K)"),
                    ("add", "add"), ("norm", "norm (LayerNorm)"), ("feed-forward", "feed-forward (SwiGLU)"),
                    ("add", "add"))
"""Pre-LN: each sublayer reads a normalised copy of the stream and adds its output back; the stream itself is
never normalised inside the stack (lesson 04), so the stack ends with a final norm."""
GPT_PRE_LN_GELU_LAYER = (("norm", "norm (LayerNorm)"),
                         ("masked self-attention", "masked self-attention\n(multi-head)"),
                         ("add", "add"), ("norm", "norm (LayerNorm)"), ("feed-forward", "feed-forward (GELU)"),
                         ("add", "add"))
"""Lesson 08's block: the same Pre-LN layout, with plain multi-head attention and a GELU feed-forward."""
ENCODER_PRE_LN_LAYER = (("norm", "norm (LayerNorm)"), ("self-attention", "self-attention\n(multi-head)"),
                        ("add", "add"), ("norm", "norm (LayerNorm)"), ("feed-forward", "feed-forward"), ("add", "add"))
"""Lessons 04-06's Pre-LN encoder layer: ``x + sublayer(norm(x))`` twice; the stack ends with a final norm."""
TIED_HEAD = (("norm", "final norm (LayerNorm)"),
             ("output projection", "linear (output projection,\ntied to the embedding)"), ("softmax", "softmax"))


def input_parts(tokens_label: str) -> tuple[tuple[str, str], ...]:
    return (("tokens", tokens_label), ("embedding", "token embedding\n× √d_model"),
            ("positional encoding", "+ positional encoding"))


# variant -> columns; a column is (x, inputs below the stack, the repeated layer, heads above it, side of "N×")
VARIANT_LAYOUTS = {
    "encoder-decoder": (
        (2.6, input_parts("source tokens"), ENCODER_LAYER, (), "left"),
        (8.4, input_parts("target tokens\n(shifted right)"), DECODER_LAYER,
         (("output projection", "linear\n(output projection)"), ("softmax", "softmax")), "right"),
    ),
    "encoder": (
        (3.0, input_parts("input tokens"), ENCODER_LAYER,
         (("norm", "final norm (LayerNorm)"),
          ("task head", "task head: pooling\n+ linear (or MLM head)")), "left"),
    ),
    "decoder-only": (
        (3.0, input_parts("input tokens"), GPT_LAYER,
         (("output projection", "linear\n(output projection)"), ("softmax", "softmax")), "left"),
    ),
    "decoder-only pre-LN": (  # RoPE rotates Q and K inside attention: nothing is added to the embedding
        (3.0, (("tokens", "input tokens"), ("embedding", "token embedding\n× √d_model")), GPT_PRE_LN_LAYER,
         TIED_HEAD, "left"),
    ),
    "decoder-only pre-LN, learned positions": (
        (3.0, (("tokens", "input tokens"), ("embedding", "token embedding\n× √d_model"),
               ("positional encoding", "+ positional encoding\n(a learned table)")), GPT_PRE_LN_GELU_LAYER,
         TIED_HEAD, "left"),
    ),
}
VARIANT_TITLES = {"encoder-decoder": "The Transformer (encoder–decoder)",
                  "encoder": "Transformer encoder + task head",
                  "decoder-only": "Decoder-only Transformer (GPT)",
                  "decoder-only pre-LN": "Decoder-only Transformer, Pre-LN",
                  "decoder-only pre-LN, learned positions": "Decoder-only Transformer, Pre-LN, learned positions"}
OUTPUT_CAPTIONS = {"encoder-decoder": "next-token probabilities", "encoder": "class or token logits",
                   "decoder-only": "next-token probabilities", "decoder-only pre-LN": "next-token probabilities",
                   "decoder-only pre-LN, learned positions": "next-token probabilities"}
STEP = 1.0


def architecture_parts(variant: str = "encoder-decoder") -> tuple[str, ...]:
    """The parts ``variant`` draws, in ``ARCHITECTURE_PARTS`` order (what ``highlight`` may name for it)."""
    check_variant(variant)
    present = {part for column in VARIANT_LAYOUTS[variant] for group in column[1:4] for part, _ in group}
    return tuple(part for part in ARCHITECTURE_PARTS if part in present)


def check_variant(variant: str) -> None:
    if variant not in VARIANT_LAYOUTS:
        raise CourseValueError(f"unknown architecture variant {variant!r}; choose one of "
                               f"{', '.join(map(repr, ARCHITECTURE_VARIANTS))}")


def check_highlight(highlight: str | Iterable[str], variant: str) -> tuple[str, ...]:
    names = (highlight,) if isinstance(highlight, str) else tuple(highlight)
    for name in names:
        if not isinstance(name, str):
            raise CourseTypeError(f"highlight takes part names (strings), got {name!r} of type "
                                  f"{type(name).__name__}; e.g. highlight=('self-attention',)")
        if name not in ARCHITECTURE_PARTS:
            raise CourseValueError(f"unknown architecture part {name!r} in highlight; valid names are "
                                   f"{', '.join(map(repr, ARCHITECTURE_PARTS))}")
        if name not in architecture_parts(variant):
            raise CourseValueError(f"the {variant!r} variant has no {name!r}; it draws "
                                   f"{', '.join(map(repr, architecture_parts(variant)))}")
    return names


def draw_column(ax: plt.Axes, x: float, inputs, layer, heads, side: str, residual_side: str,
                style) -> tuple[list[Anchor], list[Anchor], list[Anchor]]:
    """One stack, bottom to top: inputs, the repeated layer in its "N×" frame with residuals, the output heads."""
    boxes, y = [], 0.3
    for index, (part, label) in enumerate((*inputs, *layer, *heads)):
        if index in (len(inputs), len(inputs) + len(layer)):
            y += 0.55  # room for the frame edge
        box = draw_box(ax, x, y, label, gid=part, **style(part))
        if boxes:
            draw_arrow(ax, boxes[-1].top, box.bottom)
        boxes.append(box)
        y += STEP
    layer_boxes = boxes[len(inputs):len(inputs) + len(layer)]
    half = layer_boxes[0].width / 2 + 0.55
    draw_frame(ax, x - half, layer_boxes[0].y - 0.7, x + half, layer_boxes[-1].y + 0.45, side=side)
    start = 0  # a residual runs from the first box after the previous add to the next add
    for index, (part, _) in enumerate(layer):
        if part in ("add & norm", "add"):
            draw_residual(ax, layer_boxes[start], layer_boxes[index], residual_side)
            start = index + 1
    return boxes[:len(inputs)], layer_boxes, boxes[len(inputs) + len(layer):]


def draw_memory_link(ax: plt.Axes, encoder_top: Anchor, cross: Anchor) -> None:
    """The encoder's output (memory) leaving the top of the encoder stack and entering cross-attention as K, V."""
    lane_y = encoder_top.y + encoder_top.height / 2 + 0.6  # just above the encoder's frame
    lane_x = (encoder_top.x + cross.x) / 2
    draw_arrow(ax, encoder_top.top, (encoder_top.x, lane_y), (lane_x, lane_y), (lane_x, cross.y), cross.left,
               linewidth=1.5)
    ax.text((encoder_top.x + lane_x) / 2, lane_y + 0.08, "memory (encoder output)", ha="center", va="bottom",
            fontsize=9, style="italic")
    ax.text(cross.left[0] - 0.6, cross.y + 0.1, "K, V", ha="right", va="bottom", fontsize=8.5, fontweight="bold")
    ax.text(cross.x - 0.12, cross.y - cross.height / 2 - 0.2, "Q", ha="right", va="center", fontsize=8.5,
            fontweight="bold")


def draw_architecture(highlight: str | Iterable[str] = (), variant: str = "encoder-decoder",
                      ax: plt.Axes | None = None, *, norm: str = "post", head: str | None = None,
                      tied: bool = False, output: str | None = None) -> plt.Figure:
    """The Transformer as boxes and arrows, with any of ``ARCHITECTURE_PARTS`` highlighted.

    Args:
        highlight: part names (one string or several) to colour strongly; every other box is greyed out.
            With nothing highlighted, every part has its own colour.
        variant: ``"encoder-decoder"`` (the original paper's figure), ``"encoder"`` (encoder stack, its final norm
            and the task head, lessons 04–06), ``"decoder-only"`` (GPT, Post-LN as in the paper) or
            ``"decoder-only pre-LN"`` (Pre-LN blocks with RoPE and SwiGLU, a final norm, a tied output layer: lesson
            09's parts) or
            ``"decoder-only pre-LN, learned positions"`` (lesson 08's GPT: the same layout with a learned position
            table, plain multi-head attention and a GELU feed-forward).
        ax: draw into this axes instead of a new figure.
        norm: ``"post"`` (the default, add & norm after each sublayer) or ``"pre"`` (a norm before each sublayer,
            then add: the encoder lessons 05-06 train); only the ``"encoder"`` variant takes ``"pre"``.
        head: the text of the ``"encoder"`` variant's task-head box, e.g. ``"MLM head: dense → GELU\n→ LayerNorm →
            Eᵀ + c"`` (lesson 06) or ``"pool ([CLS] | masked mean)\n→ linear → logits"`` (lesson 05).
        tied: draw a dashed link from the token embedding to the head, marked as the same matrix E (weight tying);
            ``"encoder"`` variant only.
        output: the caption above the task head, e.g. ``"token logits"`` (lesson 06); by default the variant's own
            (``"class or token logits"`` for the encoder); ``"encoder"`` variant only.

    Returns:
        The figure (call ``plt.show()`` to display it).
    """
    check_variant(variant)
    names = check_highlight(highlight, variant)
    columns = VARIANT_LAYOUTS[variant]
    if norm not in ("post", "pre"):
        raise CourseValueError(f"unknown norm {norm!r}; choose 'post' (add & norm after each sublayer) or 'pre'")
    if (norm == "pre" or head is not None or tied or output is not None) and variant != "encoder":
        raise CourseValueError(f"norm='pre', head=..., tied=True and output=... redraw the 'encoder' variant, got "
                               f"variant "
                               f"{variant!r}; the decoder-only pre-LN variants already draw their own blocks")
    if variant == "encoder":
        ((x, inputs, layer, heads, side),) = columns
        if norm == "pre":
            layer = ENCODER_PRE_LN_LAYER
            if names and "add & norm" in names:
                raise CourseValueError("norm='pre' draws 'norm' and 'add' boxes, not 'add & norm'; highlight those")
        if head is not None:
            heads = (*heads[:-1], ("task head", head))
        columns = ((x, inputs, layer, heads, side),)
    top_row = max(len(inputs) + len(layer) + len(heads) for _, inputs, layer, heads, _ in columns)
    height = 0.3 + (top_row - 1) * STEP + 2 * 0.55 + 1.0 + (0.6 if names else 0.3)
    width = 11.0 if len(columns) == 2 else 6.0 + 0.6 * tied
    fig, ax = new_canvas(ax, (0.0, width), (-0.15, height))

    def style(part: str) -> dict:
        if not names:
            return dict(face=PART_COLOURS[part])
        if part in names:
            return dict(face=HIGHLIGHT_FACE, edge="#6d0f1c", ink="#ffffff", linewidth=2.6, bold=True)
        return dict(face=MUTED_FACE, edge="#b4b4b4", ink=MUTED_INK)

    stacks = []
    for x, inputs, layer, heads, side in columns:
        residual_side = side if len(columns) == 2 else "right"  # two columns: residuals on the outer sides
        stacks.append(draw_column(ax, x, inputs, layer, heads, side, residual_side, style))
        if heads:
            top = stacks[-1][2][-1].top
            draw_arrow(ax, top, (x, top[1] + 0.45))
            ax.text(x, top[1] + 0.55, output or OUTPUT_CAPTIONS[variant], ha="center", va="bottom", fontsize=9,
                    style="italic", color=INK)
    if tied:
        (_, embedding, *_), _, (*_, task_head) = stacks[0]
        lane_x = embedding.right[0] + 1.0
        draw_arrow(ax, embedding.right, (lane_x, embedding.y), (lane_x, task_head.y), task_head.right,
                   colour=STREAM_COLOUR, linewidth=1.3, linestyle="--")
        ax.text(lane_x + 0.12, (embedding.y + task_head.y) / 2, "tied: the head's Eᵀ is\nthe embedding table E",
                rotation=90, ha="left", va="center", fontsize=8.5, color=STREAM_COLOUR, gid="tied")
    if variant == "encoder-decoder":
        (_, encoder_layer, _), (_, decoder_layer, _) = stacks
        cross = next(box for box, (part, _) in zip(decoder_layer, DECODER_LAYER) if part == "cross-attention")
        draw_memory_link(ax, encoder_layer[-1], cross)
    title = VARIANT_TITLES[variant]
    if names:
        title += "\nhighlighted: " + ", ".join(names)
    ax.set_title(title, fontsize=12)
    return fig


# --- draw_multihead_split ------------------------------------------------------------------------------------------

def format_shape(names: Sequence[str], sizes: dict[str, int]) -> str:
    """``(batch, seq, d_model) = (2, 4, 8)`` for the given dimension names."""
    return f"({', '.join(names)}) = ({', '.join(str(sizes[name]) for name in names)})"


def draw_multihead_split(batch: int = 2, seq: int = 4, d_model: int = 8, n_heads: int = 2,
                         ax: plt.Axes | None = None) -> plt.Figure:
    """How multi-head attention splits ``d_model`` into heads and merges them back, with every shape written out.

    The shapes are computed from the arguments: ``d_head = d_model // n_heads`` (lesson 03).

    Returns:
        The figure (call ``plt.show()`` to display it).
    """
    for name, value in (("batch", batch), ("seq", seq), ("d_model", d_model), ("n_heads", n_heads)):
        check_positive_int(name, value)
    if d_model % n_heads:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise CourseValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}, so the heads cannot "
                               f"share it equally (d_head = d_model / n_heads must be whole); pick n_heads from "
                               f"{divisors}")
    sizes = dict(batch=batch, seq=seq, d_model=d_model, heads=n_heads, d_head=d_model // n_heads)
    model_shape = ("batch", "seq", "d_model")
    split_shape = ("batch", "seq", "heads", "d_head")
    head_shape = ("batch", "heads", "seq", "d_head")
    steps = (  # (box label, shape on the arrow leaving it, note beside that arrow)
        ("input x", model_shape, ""),
        ("linear projections\nW_q, W_k, W_v", model_shape, "each of Q, K, V"),
        ("view: split d_model\ninto heads × d_head", split_shape, ""),
        ("transpose(1, 2)", head_shape, "heads now act like a batch dimension"),
        ("scaled dot-product attention\nfor every head at once", head_shape,
         f"attention weights per head:\n(batch, heads, seq, seq) = ({batch}, {n_heads}, {seq}, {seq})"),
        ("transpose(1, 2) back", split_shape, ""),
        ("merge: contiguous().view\n→ concatenate the heads", model_shape, ""),
        ("output projection W_o", model_shape, ""),
    )
    step = 1.2
    top = 0.6 + (len(steps) - 1) * step + 0.5
    fig, ax = new_canvas(ax, (0.0, 12.6), (-0.6, top + 0.4))
    x = 2.3
    for index, (label, shape, note) in enumerate(steps):
        y = top - 0.5 - index * step
        box = draw_box(ax, x, y, label, width=3.6, height=0.66, gid="step",
                       face=PART_COLOURS["self-attention"] if "attention" in label else "#ffffff")
        end = (x, y - 0.33 - (step - 0.66))
        draw_arrow(ax, box.bottom, end)
        mid_y = (box.bottom[1] + end[1]) / 2
        ax.text(x + 0.25, mid_y, format_shape(shape, sizes), ha="left", va="center", fontsize=9,
                family="monospace", gid="shape")
        if note:
            ax.text(8.0, mid_y, note, ha="left", va="center", fontsize=8.5, style="italic", color="#555555")
    draw_head_split_strip(ax, 8.2, top - 0.5 - 2 * step + 0.15, sizes)
    ax.set_title(f"Multi-head attention: d_model = {d_model} split into {n_heads} heads of d_head = "
                 f"{sizes['d_head']}", fontsize=12)
    return fig


def draw_head_split_strip(ax: plt.Axes, x: float, y: float, sizes: dict[str, int]) -> None:
    """One token's d_model vector drawn as a strip cut into ``heads`` coloured pieces of ``d_head`` each."""
    width, height = 3.2, 0.4
    colours = plt.get_cmap("tab10")
    piece = width / sizes["heads"]
    for head in range(sizes["heads"]):
        ax.add_patch(FancyBboxPatch((x + head * piece, y - height / 2), piece, height, boxstyle="square,pad=0",
                                    facecolor=colours(head % 10), alpha=0.55, edgecolor=INK, linewidth=0.8,
                                    zorder=3))
        if sizes["heads"] <= 8:
            ax.text(x + (head + 0.5) * piece, y, f"h{head}", ha="center", va="center", fontsize=8, zorder=4)
    ax.text(x + width / 2, y - height / 2 - 0.08,
            f"one token's d_model = {sizes['d_model']}\n= {sizes['heads']} heads × d_head = {sizes['d_head']}",
            ha="center", va="top", fontsize=8.5)


# --- draw_residual_stream ------------------------------------------------------------------------------------------

NORM_CHOICES = ("both", "post", "pre")


def draw_residual_stream(norm: str = "both", ax: plt.Axes | None = None) -> plt.Figure:
    """Where the LayerNorm sits: Post-LN ``norm(x + sublayer(x))`` vs Pre-LN ``x + sublayer(norm(x))``.

    The residual stream is the straight blue line. In Post-LN every layer normalises it; in Pre-LN it stays an
    identity path. Both panels end with the one final LayerNorm that follows the course's stack in either placement
    (``TransformerConfig(norm=...)``, lesson 04).

    Args:
        norm: ``"post"``, ``"pre"`` or ``"both"`` (side by side).

    Returns:
        The figure (call ``plt.show()`` to display it).
    """
    if norm not in NORM_CHOICES:
        raise CourseValueError(f"unknown norm {norm!r}; choose one of {', '.join(map(repr, NORM_CHOICES))}")
    placements = ("post", "pre") if norm == "both" else (norm,)
    panel_width = 5.6
    fig, ax = new_canvas(ax, (0.0, panel_width * len(placements)), (-0.3, 7.6))
    for index, placement in enumerate(placements):
        draw_residual_panel(ax, index * panel_width + 1.9, placement)
        if placement == "post":  # the course's Encoder ends a Post-LN stack with a final LayerNorm too
            draw_box(ax, index * panel_width + 1.9, 5.5, "final LayerNorm\n(after the stack)", gid="final layernorm",
                     width=2.0, face=PART_COLOURS["add & norm"])
    return fig


def draw_residual_panel(ax: plt.Axes, x: float, placement: str) -> None:
    """One Post-LN or Pre-LN layer on a vertical residual stream at ``x``; the sublayer branch runs on the right."""
    branch_x, add_y, out_y = x + 1.9, 3.9, 6.3
    ax.text(x, 0.0, "x (layer input)", ha="center", va="center", fontsize=9.5)
    draw_frame(ax, x - 0.75, 0.75, branch_x + 1.45, 4.9, side="left")
    ax.text(x - 0.2, 2.3, "residual stream", rotation=90, ha="right", va="center", fontsize=9,
            color=STREAM_COLOUR, fontweight="bold")
    sublayer_style = dict(width=2.5, face=PART_COLOURS["self-attention"])
    norm_style = dict(width=2.5, face=PART_COLOURS["add & norm"])
    if placement == "post":
        sublayer = draw_box(ax, branch_x, 2.3, "sublayer\n(attention or FFN)", gid="sublayer", **sublayer_style)
        layer_norm = draw_box(ax, x, 4.55, "LayerNorm", gid="layernorm", width=1.3,
                              face=PART_COLOURS["add & norm"])
        draw_arrow(ax, (x, 0.25), (x, add_y - 0.2), colour=STREAM_COLOUR, linewidth=3.5)
        draw_arrow(ax, (x, add_y + 0.2), layer_norm.bottom, colour=STREAM_COLOUR, linewidth=3.5)
        draw_arrow(ax, layer_norm.top, (x, out_y - 0.2), colour=STREAM_COLOUR, linewidth=3.5)
        branch_end = sublayer.bottom
        title = "Post-LN (as built here)\n$x \\leftarrow \\mathrm{LayerNorm}(x + \\mathrm{Sublayer}(x))$"
        caption = "LayerNorm on the stream:\nrenormalised every layer"
    else:
        layer_norm = draw_box(ax, branch_x, 1.75, "LayerNorm", gid="layernorm", **norm_style)
        sublayer = draw_box(ax, branch_x, 2.85, "sublayer\n(attention or FFN)", gid="sublayer", **sublayer_style)
        draw_arrow(ax, layer_norm.top, sublayer.bottom)
        final_norm = draw_box(ax, x, 5.5, "final LayerNorm\n(after the stack)", gid="final layernorm", width=2.0,
                              face=PART_COLOURS["add & norm"])
        draw_arrow(ax, (x, 0.25), (x, add_y - 0.2), colour=STREAM_COLOUR, linewidth=3.5)
        draw_arrow(ax, (x, add_y + 0.2), final_norm.bottom, colour=STREAM_COLOUR, linewidth=3.5)
        draw_arrow(ax, final_norm.top, (x, out_y + 0.3), colour=STREAM_COLOUR, linewidth=3.5)
        branch_end = layer_norm.bottom
        title = "Pre-LN (GPT-2 and most modern models)\n$x \\leftarrow x + \\mathrm{Sublayer}(\\mathrm{LayerNorm}(x))$"
        caption = "identity stream:\nx + Σ sublayer outputs"
    draw_arrow(ax, (x, 1.15), (branch_x, 1.15), branch_end)
    ax.add_patch(Circle((x, 1.15), 0.06, color=STREAM_COLOUR, zorder=3))
    draw_arrow(ax, sublayer.top, (branch_x, add_y), (x + 0.2, add_y))
    ax.add_patch(Circle((x, add_y), 0.2, facecolor="#ffffff", edgecolor=INK, linewidth=1.2, zorder=3))
    ax.text(x, add_y, "+", ha="center", va="center", fontsize=12, fontweight="bold", zorder=4)
    ax.text(x + 1.2, 7.25, title, ha="center", va="center", fontsize=10.5)
    ax.text(branch_x + 1.45, 5.55, caption, ha="right", va="center", fontsize=8.5, style="italic",
            color="#555555")


# --- draw_encoder_decoder_masks ------------------------------------------------------------------------------------

MASK_COLOURS = ("#ececec", HIGHLIGHT_FACE)  # (hidden, may attend): every mask picture uses these two
MASK_CMAP = ListedColormap(list(MASK_COLOURS))
MASK_EXAMPLE_SOURCE = ("I", "like", "tea", "<pad>", "<pad>")
MASK_EXAMPLE_TARGET = ("<bos>", "j'aime", "le", "thé", "<pad>")


def draw_encoder_decoder_masks(ax: plt.Axes | None = None) -> plt.Figure:
    """Which mask each attention of the encoder–decoder uses, with a small example grid of each.

    The grids come from ``masks.padding_mask`` / ``masks.target_mask`` on a padded example pair (row = query,
    column = key; coloured = may attend). Add & norm and the repetition N× are left out to keep the flow visible.

    Returns:
        The figure (call ``plt.show()`` to display it).
    """
    fig, ax = new_canvas(ax, (-0.1, 14.1), (-0.2, 9.4))
    enc_x, dec_x = 4.4, 9.0
    box = dict(width=2.9)
    source = draw_box(ax, enc_x, 0.3, "source tokens (padded)", **box)
    enc_embed = draw_box(ax, enc_x, 1.4, "embedding + positions", face=PART_COLOURS["embedding"], **box)
    enc_attn = draw_box(ax, enc_x, 2.9, "encoder\nself-attention", face=PART_COLOURS["self-attention"],
                        gid="encoder self-attention", **box)
    enc_ffn = draw_box(ax, enc_x, 4.1, "feed-forward", face=PART_COLOURS["feed-forward"], **box)
    target = draw_box(ax, dec_x, 0.3, "target tokens (shifted, padded)", **box)
    dec_embed = draw_box(ax, dec_x, 1.4, "embedding + positions", face=PART_COLOURS["embedding"], **box)
    dec_attn = draw_box(ax, dec_x, 2.9, "decoder masked\nself-attention", face=PART_COLOURS["self-attention"],
                        gid="decoder self-attention", **box)
    cross = draw_box(ax, dec_x, 6.3, "cross-attention\n(K, V from memory)",
                     face=PART_COLOURS["self-attention"], gid="cross-attention", **box)
    dec_ffn = draw_box(ax, dec_x, 7.5, "feed-forward", face=PART_COLOURS["feed-forward"], **box)
    output = draw_box(ax, dec_x, 8.6, "output projection", face=PART_COLOURS["output projection"], **box)
    for lower, upper in ((source, enc_embed), (enc_embed, enc_attn), (enc_attn, enc_ffn), (target, dec_embed),
                         (dec_embed, dec_attn), (dec_attn, cross), (cross, dec_ffn), (dec_ffn, output)):
        draw_arrow(ax, lower.top, upper.bottom)
    draw_arrow(ax, enc_ffn.top, (enc_x, cross.y), cross.left, linewidth=1.5)
    ax.text((enc_x + cross.left[0]) / 2, cross.y + 0.08, "memory", ha="center", va="bottom", fontsize=9,
            style="italic")

    src_ids = example_ids(MASK_EXAMPLE_SOURCE)
    tgt_ids = example_ids(MASK_EXAMPLE_TARGET)
    source_keys = padding_mask(src_ids)[0, 0, 0]
    callouts = (
        (enc_attn, "left", "source padding mask", "padding_mask(src_ids)\n(batch, 1, 1, src_len)",
         source_keys.expand(len(MASK_EXAMPLE_SOURCE), -1), MASK_EXAMPLE_SOURCE, MASK_EXAMPLE_SOURCE),
        (dec_attn, "right", "target mask:\ncausal AND padding", "target_mask(tgt_ids)\n(batch, 1, tgt_len, tgt_len)",
         target_mask(tgt_ids)[0, 0], MASK_EXAMPLE_TARGET, MASK_EXAMPLE_TARGET),
        (cross, "right", "memory mask = source padding", "padding_mask(src_ids)\n(batch, 1, 1, src_len)",
         source_keys.expand(len(MASK_EXAMPLE_TARGET), -1), MASK_EXAMPLE_TARGET, MASK_EXAMPLE_SOURCE),
    )
    for anchor, side, name, code, grid, queries, keys in callouts:
        draw_mask_callout(ax, anchor, side, name, code, grid, queries, keys)
    ax.set_title("Three masks of the encoder–decoder (coloured cell = the query row may attend to the key column)",
                 fontsize=11.5)
    return fig


def example_ids(tokens: Sequence[str]) -> torch.Tensor:
    """Ids for the example tokens with ``<pad>`` as 0, shape ``(1, len(tokens))``."""
    return torch.tensor([[0 if token == "<pad>" else index + 1 for index, token in enumerate(tokens)]])


def draw_mask_callout(ax: plt.Axes, anchor: Anchor, side: str, name: str, code: str, grid, queries, keys) -> None:
    """A mask's name, the code that builds it and its example grid, beside the attention box it feeds."""
    text_x = anchor.x - anchor.width / 2 - 0.7 if side == "left" else anchor.x + anchor.width / 2 + 0.7
    align = "right" if side == "left" else "left"
    ax.text(text_x, anchor.y + 0.25, name, ha=align, va="bottom", fontsize=9.5, fontweight="bold",
            color=HIGHLIGHT_FACE, gid="mask name")
    ax.text(text_x, anchor.y + 0.2, code, ha=align, va="top", fontsize=8, family="monospace")
    cell = 0.24
    grid_width, grid_height = cell * grid.shape[1], cell * grid.shape[0]
    grid_x = text_x - grid_width if side == "left" else text_x + 0.9
    grid_y = anchor.y - 0.75 - grid_height
    inset = ax.inset_axes((grid_x, grid_y, grid_width, grid_height), transform=ax.transData)
    inset.imshow(grid.int().numpy(), cmap=MASK_CMAP, vmin=0, vmax=1)
    inset.set_xticks(range(len(keys)), keys, fontsize=6.5, rotation=90)
    inset.set_yticks(range(len(queries)), queries, fontsize=6.5)
    inset.tick_params(length=0, pad=1)
    inset.set_xticks([i - 0.5 for i in range(1, len(keys))], minor=True)
    inset.set_yticks([i - 0.5 for i in range(1, len(queries))], minor=True)
    inset.grid(which="minor", color="#ffffff", linewidth=1)
    inset.tick_params(which="minor", length=0)
    edge = anchor.left if side == "left" else anchor.right
    draw_arrow(ax, (text_x + (0.1 if side == "left" else -0.1), anchor.y), edge, colour=HIGHLIGHT_FACE,
               linewidth=1.1, linestyle=(0, (3, 2)))


# --- draw_qkv_projection -------------------------------------------------------------------------------------------

def draw_qkv_projection(seq: int = 4, d_model: int = 8, d_k: int = 8, d_v: int | None = None,
                        ax: plt.Axes | None = None) -> plt.Figure:
    """Where queries, keys and values come from and what one attention head does with them, every shape written out.

    ``x (seq, d_model)`` goes through three linear maps, ``W_Q, W_K (d_model, d_k)`` and ``W_V (d_model, d_v)``;
    ``Q Kᵀ / √d_k`` gives the ``(seq, seq)`` scores, a softmax over each row the weights, and ``weights · V`` one
    new ``d_v``-vector per token. One head and one sentence, so no batch dimension (lesson 03 builds each step;
    ``draw_multihead_split`` adds the batch and the heads).

    Args:
        seq, d_model, d_k: the sizes every shape in the picture is computed from.
        d_v: the width of the values and of the output (default ``d_k``, as in the course's heads).
        ax: draw into this axes instead of a new figure.

    Returns:
        The figure (call ``plt.show()`` to display it).
    """
    d_v = d_k if d_v is None else d_v
    for name, value in (("seq", seq), ("d_model", d_model), ("d_k", d_k), ("d_v", d_v)):
        check_positive_int(name, value)
    sizes = dict(seq=seq, d_model=d_model, d_k=d_k, d_v=d_v)
    fig, ax = new_canvas(ax, (0.0, 12.8), (-0.35, 10.3))
    column = {"Q": 2.0, "K": 6.0, "V": 10.0}
    width = dict(width=3.1, height=0.8)
    x_box = draw_box(ax, column["K"], 0.15, "input x: one row per token\n" + format_shape(("seq", "d_model"), sizes),
                     gid="x", **width)
    fan_y = 0.95
    ax.add_patch(Circle((column["K"], fan_y), 0.05, color=INK, zorder=3))
    roles = {"Q": "what each token looks for", "K": "what each token offers", "V": "what each token passes on"}
    tensors = {}
    for name, x in column.items():
        out = "d_v" if name == "V" else "d_k"
        weight = draw_box(ax, x, 1.75, f"linear map $W_{name}$\n" + format_shape(("d_model", out), sizes),
                          gid=f"W_{name}", face=PART_COLOURS["output projection"], **width)
        draw_arrow(ax, x_box.top, (column["K"], fan_y), (x, fan_y), weight.bottom)
        tensors[name] = draw_box(ax, x, 3.55, f"${name} = x\\,W_{name}$\n" + format_shape(("seq", out), sizes),
                                 gid=name, **width)
        draw_arrow(ax, weight.top, tensors[name].bottom)
        ax.text(x + 0.12, (weight.top[1] + tensors[name].bottom[1]) / 2, roles[name], ha="left", va="center",
                fontsize=8, style="italic", color="#555555")
    scores = draw_box(ax, 4.0, 5.55, "scores $= Q K^{\\top} / \\sqrt{d_k}$\n" + format_shape(("seq", "seq"), sizes),
                      gid="scores", face=PART_COLOURS["self-attention"], width=3.3, height=0.8)
    lane_y = 4.55
    draw_arrow(ax, tensors["Q"].top, (column["Q"], lane_y), (3.3, lane_y), (3.3, scores.bottom[1]))
    draw_arrow(ax, tensors["K"].top, (column["K"], lane_y), (4.7, lane_y), (4.7, scores.bottom[1]))
    ax.text(5.9, lane_y + 0.1, f"$K^{{\\top}}$: (d_k, seq) = ({d_k}, {seq})", ha="left", va="bottom", fontsize=8.5)
    ax.text(2.1, lane_y + 0.1, f"$\\sqrt{{d_k}} = \\sqrt{{{d_k}}} \\approx {math.sqrt(d_k):.2f}$", ha="right",
            va="bottom", fontsize=8.5)
    softmax = draw_box(ax, 4.0, 7.15, "softmax over each row (the keys)\nweights " +
                       format_shape(("seq", "seq"), sizes) + ", rows sum to 1", gid="softmax",
                       face=PART_COLOURS["softmax"], width=4.6, height=0.8)
    draw_arrow(ax, scores.top, softmax.bottom)
    output = draw_box(ax, 7.9, 8.75, "output = weights · V\n" + format_shape(("seq", "d_v"), sizes), gid="output",
                      face=PART_COLOURS["self-attention"], width=3.1, height=0.8)
    draw_arrow(ax, softmax.top, (4.0, output.y), output.left)
    draw_arrow(ax, tensors["V"].top, (column["V"], output.y), output.right)
    draw_arrow(ax, output.top, (output.x, output.top[1] + 0.45))
    ax.text(output.x, output.top[1] + 0.5, "one new vector per token: a weighted mix of the values", ha="center",
            va="bottom", fontsize=9, style="italic")
    ax.set_title(f"Queries, keys and values of one head: seq = {seq}, d_model = {d_model}, d_k = {d_k}, d_v = {d_v}",
                 fontsize=11.5)
    return fig


# --- draw_rotation -------------------------------------------------------------------------------------------------

ROTATION_COLOURS = ("#3b6fb6", "#d1495b", "#2a9d5c", "#e08a1e", "#7b4fa8", "#555555")


def check_start_positions(positions: int | Sequence[int]) -> tuple[int, ...]:
    """``positions`` as a tuple of 1 to 6 positions (ints >= 0), one arc each."""
    starts = (positions,) if isinstance(positions, int) and not isinstance(positions, bool) else positions
    if not isinstance(starts, (list, tuple)) or not 1 <= len(starts) <= len(ROTATION_COLOURS):
        raise CourseTypeError(f"positions must be one position or a list of 1 to {len(ROTATION_COLOURS)} positions "
                              f"(ints >= 0), got {describe(positions)}; e.g. positions=(1, 4)")
    return tuple(check_non_negative_int(f"positions[{index}]", p) for index, p in enumerate(starts))


def draw_rotation(positions: int | Sequence[int] = (1, 4), k: int = 2, d_model: int = 64, pair: int = 0,
                  ax: plt.Axes | None = None) -> plt.Figure:
    """A shift by ``k`` positions is one rotation: pair ``pair`` of the sinusoidal encoding on the unit circle.

    Position ``p`` is the point ``(cos pω_i, sin pω_i) = (PE[p, 2i+1], PE[p, 2i])``, read from
    ``positional.sinusoidal_table(·, d_model)``. Each start position gets a radius to ``p`` and to ``p + k`` and an
    arc between them; the legend gives each arc's angle measured from the table, the same ``k·ω_i`` (mod 2π) for
    every start (lesson 02, section 5).

    Args:
        positions: one start position or up to six (ints >= 0); two or more make the "same for every position"
            visible.
        k: the shift, in positions (int >= 1).
        d_model: the width of the table (even); pair ``i`` turns at ``ω_i = 10000^(-2i/d_model)`` per position.
        pair: which (sin, cos) pair to draw, ``0 <= pair < d_model / 2`` (0 is the fastest).
        ax: draw into this axes instead of a new figure.

    Returns:
        The figure (call ``plt.show()`` to display it).
    """
    starts = check_start_positions(positions)
    check_positive_int("k", k)
    check_positive_int("d_model", d_model)
    if d_model % 2:
        raise CourseValueError(f"the sinusoidal table pairs sin/cos dimensions, so d_model must be even, got "
                               f"{d_model}; e.g. d_model={d_model + 1}")
    check_non_negative_int("pair", pair)
    if pair >= d_model // 2:
        raise CourseValueError(f"pair={pair} does not exist for d_model={d_model}: its pairs are 0 .. "
                               f"{d_model // 2 - 1} (dims 2i and 2i+1)")
    table = sinusoidal_table(max(starts) + k + 1, d_model)             # (positions, d_model)
    cosines, sines = table[:, 2 * pair + 1].double(), table[:, 2 * pair].double()
    omega = math.exp(-2 * pair * math.log(10000.0) / d_model)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.6, 6.4), constrained_layout=True)
    fig, ax = new_canvas(ax, (-1.55, 1.55), (-1.3 - 0.12 * len(starts), 1.45))
    circle = [(math.cos(t), math.sin(t)) for t in torch.linspace(0, 2 * math.pi, 200).tolist()]
    ax.plot(*zip(*circle), color="#b4b4b4", linewidth=1.0, zorder=1)
    ax.plot([-1.25, 1.25], [0, 0], color="#d0d0d0", linewidth=0.8, zorder=0)
    ax.plot([0, 0], [-1.25, 1.25], color="#d0d0d0", linewidth=0.8, zorder=0)
    ax.text(1.27, 0, f"cos(p·ω) = PE[p, {2 * pair + 1}]", ha="left", va="center", fontsize=8.5, rotation=90)
    ax.text(0, 1.27, f"sin(p·ω) = PE[p, {2 * pair}]", ha="center", va="bottom", fontsize=8.5)
    ax.plot(cosines.numpy(), sines.numpy(), "o", color="#c8c8c8", markersize=3.5, zorder=2)
    handles = []
    for index, start in enumerate(starts):
        colour, end = ROTATION_COLOURS[index], start + k
        begin_angle = math.atan2(sines[start], cosines[start])
        turned = (math.atan2(sines[end], cosines[end]) - begin_angle) % (2 * math.pi)   # measured on the table
        for p, filled in ((start, True), (end, False)):
            ax.plot([0, cosines[p]], [0, sines[p]], color=colour, linewidth=0.9, linestyle=(0, (3, 2)), zorder=2)
            ax.plot([cosines[p]], [sines[p]], "o", color=colour, markerfacecolor=colour if filled else "#ffffff",
                    markeredgewidth=1.8, markersize=8, zorder=5, gid="position", label=f"p = {p}")
            ax.text(1.14 * cosines[p], 1.14 * sines[p], f"p={p}", ha="center", va="center", fontsize=8.5,
                    color=colour, fontweight="bold")
        radius = 0.42 + 0.13 * index
        arc = [(radius * math.cos(t), radius * math.sin(t))
               for t in torch.linspace(begin_angle, begin_angle + turned, 60).tolist()]
        ax.plot(*zip(*arc), color=colour, linewidth=1.8, zorder=4, gid="rotation")
        draw_arrow(ax, arc[-2], arc[-1], colour=colour, linewidth=1.8, zorder=4)   # the head, at p + k
        handles.append(Patch(color=colour, label=f"p = {start} → {end}: turned by {turned:.3f} rad "
                                                   f"({math.degrees(turned):.1f}°)"))
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, -0.04), fontsize=8.5, frameon=False,
              title="filled: p, hollow: p + k; angles measured on sinusoidal_table", title_fontsize=8.5)
    wrapped = k * omega % (2 * math.pi)
    angle = f"k·ω = {k * omega:.3f} rad" + (f" (= {wrapped:.3f} mod 2π)" if k * omega >= 2 * math.pi else "")
    ax.set_title(f"Pair i = {pair} (dims {2 * pair}, {2 * pair + 1}) of d_model = {d_model}, ω = {omega:.4g} rad "
                 f"per position:\na shift by k = {k} turns every position by the same angle, {angle}", fontsize=10.5)
    return fig


# --- show_mask -----------------------------------------------------------------------------------------------------

def check_binary_mask(mask: object) -> torch.Tensor:
    """``mask`` as a 2-D ``(q_len, k_len)`` bool tensor: bool or 0/1 values; leading size-1 dimensions dropped."""
    if isinstance(mask, torch.Tensor):
        grid = mask.detach().cpu()
    elif hasattr(mask, "ndim") and hasattr(mask, "dtype"):   # a NumPy array
        grid = torch.as_tensor(mask)
    else:
        raise CourseTypeError(f"show_mask draws a mask tensor (bool, or 0/1), got {describe(mask)}; pass e.g. "
                              "causal_mask(5)")
    original = tuple(grid.shape)
    while grid.dim() > 2 and grid.size(0) == 1:
        grid = grid[0]
    if grid.dim() != 2:
        fix = ("a row of allowed keys (k_len,) is one query: draw mask[None], or expand it to every query with "
               "mask.expand(q_len, -1)" if grid.dim() < 2 else
               "pick one: mask[i, 0] for row i of a (batch, 1, q_len, k_len) mask, "
               "mask[i, 0].expand(q_len, -1) for a padding mask (batch, 1, 1, k_len)")
        raise CourseValueError(f"show_mask draws one (q_len, k_len) mask (or (1, 1, q_len, k_len)), got shape "
                               f"{original}; {fix}")
    if grid.numel() == 0:
        raise CourseValueError(f"show_mask got an empty mask of shape {original}; a mask needs at least one query "
                               "and one key")
    if grid.dtype == torch.bool:
        return grid
    if grid.is_complex():
        raise CourseTypeError(f"show_mask draws a yes/no mask (bool, or 0/1), got dtype {grid.dtype}")
    yes_or_no = (grid == 0) | (grid == 1)
    if not bool(yes_or_no.all()):
        others = sorted({float(v) for v in grid[~yes_or_no].flatten()[:1000].tolist()}, key=str)[:4]
        raise CourseValueError(f"show_mask draws a yes/no mask (bool, or 0/1 numbers), got values such as "
                               f"{', '.join(f'{v:g}' for v in others)}; for attention weights or scores use "
                               "show_heatmaps")
    return grid == 1


def show_mask(mask, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
              title: str | None = None, *, xlabel: str = "key position", ylabel: str = "query position",
              labels: tuple[str, str] = ("may attend", "hidden"), legend: bool = True,
              ax: plt.Axes | None = None) -> plt.Figure:
    """A mask as two colours with a legend: coloured = the query row may attend to the key column, grey = hidden.

    Args:
        mask: a ``(q_len, k_len)`` tensor, bool or 0/1 numbers (True / 1 = may attend, the course's convention);
            size-1 leading dimensions are dropped, so ``causal_mask(5)`` ``(1, 1, 5, 5)`` works as it is.
        row_labels, col_labels: tick labels (e.g. the tokens); without them the ticks are the integer positions.
        title: the panel's title.
        labels: the legend's words for True and for False.
        legend: draw the legend (turn it off on all but one of several panels).
        ax: draw into this axes instead of a new figure (several masks side by side).

    Returns:
        The figure (call ``plt.show()`` to display it).
    """
    grid = check_binary_mask(mask)
    q_len, k_len = grid.shape
    for names, axis, size in ((row_labels, "row", q_len), (col_labels, "col", k_len)):
        if names is not None and len(names) != size:
            raise CourseValueError(f"got {len(names)} {axis}_labels for a mask of shape {tuple(grid.shape)}; pass "
                                   f"one label per {axis} (e.g. the tokens)")
    if (not isinstance(labels, (tuple, list)) or len(labels) != 2
            or not all(isinstance(label, str) for label in labels)):
        raise CourseTypeError(f"labels must be two strings (the words for True and for False), got "
                              f"{describe(labels)}; e.g. labels=('may attend', 'hidden')")
    if ax is None:
        side = min(max(0.34 * max(q_len, k_len), 2.6), 6.5)
        _, ax = plt.subplots(figsize=(side + (2.0 if legend else 0.4), side), constrained_layout=True)
    ax.imshow(grid.int().numpy(), cmap=MASK_CMAP, vmin=0, vmax=1)
    for names, size, axis in ((col_labels, k_len, ax.xaxis), (row_labels, q_len, ax.yaxis)):
        if names is not None:
            axis.set_ticks(range(size), names, fontsize=8)
        elif size <= 16:                                           # every position, as an integer
            axis.set_ticks(range(size), [str(i) for i in range(size)], fontsize=8 if size > 9 else None)
        else:
            axis.set_major_locator(MaxNLocator(integer=True))
    if col_labels is not None:
        ax.tick_params(axis="x", labelrotation=90)
    ax.set_xticks([i - 0.5 for i in range(1, k_len)], minor=True)
    ax.set_yticks([i - 0.5 for i in range(1, q_len)], minor=True)
    ax.grid(which="minor", color="#ffffff", linewidth=1.2)
    ax.tick_params(which="minor", length=0)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    if title is not None:
        ax.set_title(title, fontsize=10)
    if legend:
        handles = [Patch(facecolor=MASK_COLOURS[1], edgecolor="#8c8c8c", label=labels[0]),
                   Patch(facecolor=MASK_COLOURS[0], edgecolor="#8c8c8c", label=labels[1])]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=9)
    return ax.figure
