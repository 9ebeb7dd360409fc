"""Plotting helpers shared by every notebook: attention heatmaps, training curves and architecture diagrams.

The diagrams (``draw_architecture`` and friends, ``draw_qkv_projection``, ``draw_rotation``) and the two-colour
``show_mask`` live in ``course_utils.diagrams`` and are re-exported here, so every picture a lesson draws comes from
``course_utils.plotting``.
"""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import torch

from .diagrams import (  # noqa: F401
    ARCHITECTURE_PARTS,
    ARCHITECTURE_VARIANTS,
    architecture_parts,
    draw_architecture,
    draw_encoder_decoder_masks,
    draw_multihead_split,
    draw_qkv_projection,
    draw_residual_stream,
    draw_rotation,
    show_mask,
)
from .errors import CourseTypeError, CourseValueError
from .training import History
from .validation import describe


def show_heatmaps(matrices, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
                  titles: Sequence[str] | None = None, suptitle: str | None = None, xlabel: str = "key",
                  ylabel: str = "query", ncols: int | None = None, cmap: str = "viridis",
                  panel_size: float = 3.0, vmin: float | None = 0.0, vmax: float | None = None,
                  colorbar: bool = True, colorbar_label: str = "weight", annotate: bool = False,
                  value_format: str = "{:.2f}") -> plt.Figure:
    """Draw one or more matrices (e.g. attention weights, one panel per head) side by side.

    Args:
        matrices: a 2-D ``(rows, cols)`` array/tensor, a 3-D ``(panels, rows, cols)`` one, or a list of 2-D ones.
        row_labels, col_labels: tick labels (e.g. query and key tokens).
        titles: one title per panel (e.g. ``["head 0", "head 1"]``).
        vmin, vmax: colour range; attention weights lie in [0, 1], the default shares ``vmin=0`` across panels.
            For signed matrices (e.g. positional encodings) pass ``vmin=-1, vmax=1, cmap="RdBu_r"``.
        colorbar_label: what the colours mean (``"weight"`` for attention, ``"value"`` for an encoding table).
        annotate: write each entry's value into its cell (useful for matrices up to about 12 × 12).
        value_format: format of those numbers, e.g. ``"{:.2f}"`` or ``"{:.0f}"``.

    Returns:
        The figure (call ``plt.show()`` to display it).
    """
    if isinstance(matrices, torch.Tensor):
        matrices = matrices.detach().float().cpu()
        panels = [matrices] if matrices.dim() == 2 else list(matrices)
    else:
        panels = list(matrices) if not hasattr(matrices, "ndim") or matrices.ndim == 3 else [matrices]
    panels = [torch.as_tensor(p).detach().float().cpu() for p in panels]
    if not panels:
        raise CourseValueError("show_heatmaps got no matrices to draw; pass a 2-D matrix or a list/stack of them")
    if any(p.dim() != 2 for p in panels):
        raise CourseValueError(f"show_heatmaps draws 2-D matrices, got panels of shapes "
                               f"{[tuple(p.shape) for p in panels]}")
    if titles is not None and len(titles) != len(panels):
        raise CourseValueError(f"got {len(titles)} titles for {len(panels)} panels")
    for labels, axis, size in ((row_labels, "row", panels[0].shape[0]), (col_labels, "col", panels[0].shape[1])):
        if labels is not None and len(labels) != size:
            raise CourseValueError(f"got {len(labels)} {axis}_labels for matrices with {size} {axis}s of shape "
                             f"{tuple(panels[0].shape)}; pass one label per {axis} (e.g. the tokens)")
    ncols = ncols or min(len(panels), 4)
    nrows = -(-len(panels) // ncols)
    vmax = vmax if vmax is not None else max(float(p.max()) for p in panels)
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel_size * ncols + 0.8, panel_size * nrows),
                             squeeze=False, constrained_layout=True)
    for i, ax in enumerate(axes.flat):
        if i >= len(panels):
            ax.axis("off")
            continue
        image = ax.imshow(panels[i].numpy(), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        if annotate:
            annotate_cells(ax, panels[i], image, value_format)
        if row_labels is not None:
            ax.set_yticks(range(len(row_labels)), row_labels, fontsize=8)
        if col_labels is not None:
            ax.set_xticks(range(len(col_labels)), col_labels, fontsize=8, rotation=90)
        if titles is not None:
            ax.set_title(titles[i], fontsize=10)
        if i % ncols == 0:
            ax.set_ylabel(ylabel)
        if i // ncols == nrows - 1:
            ax.set_xlabel(xlabel)
    if colorbar:
        fig.colorbar(image, ax=axes, shrink=0.8, label=colorbar_label)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def annotate_cells(ax: plt.Axes, matrix: torch.Tensor, image, value_format: str = "{:.2f}") -> None:
    """Write every entry of ``matrix`` (rows, cols) into its cell, dark text on light cells and vice versa."""
    for row in range(matrix.shape[0]):
        for col in range(matrix.shape[1]):
            value = float(matrix[row, col])
            red, green, blue, _ = image.cmap(image.norm(value))
            colour = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
            ax.text(col, row, value_format.format(value), ha="center", va="center", fontsize=7, color=colour)


def plot_history(history, metrics: Sequence[str] = (), title: str = "Training") -> plt.Figure:
    """Training loss per step (left) and the chosen evaluation metrics (right) of a ``training.History``."""
    if not isinstance(history, History):
        raise CourseTypeError(f"plot_history expects the History that fit returns, got {describe(history)}; pass "
                              "history = fit(...) (for a plain list of losses use plt.plot(losses))")
    n_panels = 2 if metrics else 1
    fig, axes = plt.subplots(1, n_panels, figsize=(5.5 * n_panels, 3.6), squeeze=False, constrained_layout=True)
    axes[0, 0].plot(history.train_loss, lw=1)
    axes[0, 0].set(xlabel="optimizer step", ylabel="training loss", title=f"{title}: loss")
    if metrics:
        for name in metrics:
            steps, values = history.metric(name)
            axes[0, 1].plot(steps, values, marker="o", label=name)
        axes[0, 1].set(xlabel="optimizer step", ylabel="value", title=f"{title}: evaluation")
        axes[0, 1].legend()
    return fig
