"""Interactive explorers (ipywidgets). Each one also draws its default view once, so a stored notebook keeps a
static picture even where widgets do not render (GitHub, PDF, a notebook run without a browser)."""
from __future__ import annotations

from typing import Callable

from .errors import CourseValueError


def live_explorer(show: Callable[..., None], **controls) -> None:
    """Show ``show(**values)`` for the controls' initial values, then the controls; every change redraws below them.

    The first call draws a plain figure, which a stored notebook keeps as a static picture. Later calls draw into
    an output area under the controls; a ``ValueError`` from ``show`` (e.g. bad text typed by the learner) is
    printed there instead of a figure.

    Args:
        show: draws one view (ending with ``plt.show()``) from keyword arguments named like the controls.
        controls: ipywidgets with a ``value`` (sliders, text boxes, drop-downs), by argument name.
    """
    import ipywidgets as widgets
    from IPython.display import display

    def values() -> dict:
        return {name: control.value for name, control in controls.items()}

    show(**values())
    output = widgets.Output()

    def redraw(_change=None) -> None:
        with output:
            output.clear_output(wait=True)
            try:
                show(**values())
            except ValueError as error:
                print(error)

    for control in controls.values():
        control.observe(redraw, names="value")
    display(widgets.VBox([widgets.HBox(list(controls.values())), output]))


# --- notebook 02: positional-encoding explorer -------------------------------------------------------------------

def parse_dimensions(text: str, d_model: int) -> list[int]:
    """``"0, 1, 10"`` → ``[0, 1, 10]``; raises ``ValueError`` naming the valid range for a bad entry."""
    try:
        dims = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise CourseValueError(f"dimensions must be whole numbers separated by commas, e.g. '0, 1, 10', "
                         f"got {text!r}") from None
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad or not dims:
        raise CourseValueError(f"dimensions must lie in [0, {d_model - 1}] for d_model={d_model}, got {text!r}")
    return dims


def draw_positional_encoding(d_model: int = 64, n_positions: int = 100, dims=(0, 1, 10, 11, 40)):
    """Heatmap of the sinusoidal table ``(n_positions, d_model)`` (left) and chosen columns against position (right).

    Returns the matplotlib figure.
    """
    import math

    import matplotlib.pyplot as plt

    from .positional import sinusoidal_table

    table = sinusoidal_table(n_positions, d_model)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6), constrained_layout=True,
                                      gridspec_kw={"width_ratios": [1, 1.3]})
    image = left.imshow(table.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    left.set(xlabel="dimension", ylabel="position", title=f"PE table: {n_positions} positions × d_model={d_model}")
    fig.colorbar(image, ax=left, label="value")
    for dim in dims:
        wavelength = 2 * math.pi * 10000 ** ((dim - dim % 2) / d_model)
        kind = "sin" if dim % 2 == 0 else "cos"
        right.plot(table[:, dim].numpy(), label=f"dim {dim} ({kind}, wavelength {wavelength:.0f})")
    right.set(xlabel="position", ylabel="PE value", title="chosen dimensions", ylim=(-1.1, 1.1))
    right.legend(fontsize=7, loc="lower left")
    return fig


def positional_encoding_explorer(d_model: int = 64, n_positions: int = 100, dims: str = "0, 1, 10, 11, 40") -> None:
    """Sliders for ``d_model`` and the number of positions, a text box for the dimensions to plot."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    def show(d_model: int, n_positions: int, dims: str) -> None:
        draw_positional_encoding(d_model, n_positions, parse_dimensions(dims, d_model))
        plt.show()

    live_explorer(show,
                  d_model=widgets.IntSlider(value=d_model, min=8, max=512, step=8, description="d_model"),
                  n_positions=widgets.IntSlider(value=n_positions, min=10, max=1000, step=10, description="positions"),
                  dims=widgets.Text(value=dims, description="dimensions", continuous_update=False))


# --- notebook 03: attention explorer -----------------------------------------------------------------------------

MASK_KINDS = ("none", "causal", "padding", "causal + padding")
PAD_TOKEN = "[PAD]"


def attention_for_tokens(tokens: list[str], encode, attention, mask_kind: str = "none", n_pad: int = 3):
    """Run ``attention`` (a :class:`~course_utils.attention.MultiHeadAttention`) as self-attention on ``tokens``.

    Args:
        tokens: the sentence's tokens; ``n_pad`` ``[PAD]`` tokens are appended when ``mask_kind`` has padding.
        encode: ``list[str] -> (1, seq, d_model)`` vectors (must accept ``"[PAD]"``).
        mask_kind: one of ``MASK_KINDS``.

    Returns:
        ``(tokens, weights (heads, seq, seq), mask (seq, seq) bool or None)``.
    """
    import torch

    from .masks import causal_mask, combine_masks

    if mask_kind not in MASK_KINDS:
        raise CourseValueError(f"mask_kind must be one of {MASK_KINDS}, got {mask_kind!r}")
    if not tokens:
        raise CourseValueError("the sentence is empty; type at least one word")
    if "padding" in mask_kind:
        tokens = list(tokens) + [PAD_TOKEN] * n_pad
    real = torch.tensor([token != PAD_TOKEN for token in tokens])
    padding = real[None, None, None, :] if "padding" in mask_kind else None
    causal = causal_mask(len(tokens)) if "causal" in mask_kind else None
    mask = combine_masks(padding, causal)
    x = encode(tokens)
    with torch.no_grad():
        _, weights = attention(x, x, x, mask)
    return tokens, weights[0], (None if mask is None else mask.expand(1, 1, len(tokens), len(tokens))[0, 0])


def draw_attention(tokens: list[str], weights, head: int | str = "all"):
    """Heatmaps of ``weights (heads, q, k)``: every head (``head="all"``) or one head. Returns the figure."""
    from .plotting import show_heatmaps

    n_heads = weights.size(0)
    if head != "all" and (isinstance(head, bool) or not isinstance(head, (int, str)) or not str(head).isdigit()
                          or int(head) >= n_heads):
        raise CourseValueError(f"head must be 'all' or a head index in [0, {n_heads}), got {head!r}; these weights "
                               f"have {n_heads} heads")
    if head == "all":
        return show_heatmaps(weights, tokens, tokens, titles=[f"head {h}" for h in range(weights.size(0))],
                             panel_size=2.8, suptitle="attention weights (rows: queries, columns: keys)")
    return show_heatmaps(weights[int(head)], tokens, tokens, titles=[f"head {head}"], panel_size=4.0,
                         annotate=len(tokens) <= 12)


def attention_explorer(encode, attention, sentence: str = "the cat sat on the mat because it was tired",
                       tokenize=str.split, head: int | str = "all", mask_kind: str = "none") -> None:
    """Type a sentence, pick a head and a mask, see the attention weights.

    Args:
        encode: ``list[str] -> (1, seq, d_model)`` vectors for the tokens (``"[PAD]"`` included).
        attention: a :class:`~course_utils.attention.MultiHeadAttention` (its weights are what you see).
        tokenize: ``str -> list[str]``.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    def show(sentence: str, head: int | str, mask_kind: str) -> None:
        tokens, weights, _ = attention_for_tokens(tokenize(sentence), encode, attention, mask_kind)
        draw_attention(tokens, weights, head)
        plt.show()

    live_explorer(show,
                  sentence=widgets.Text(value=sentence, description="sentence", continuous_update=False,
                                        layout=widgets.Layout(width="420px")),
                  head=widgets.Dropdown(options=["all"] + list(range(attention.n_heads)), value=head,
                                        description="head"),
                  mask_kind=widgets.Dropdown(options=list(MASK_KINDS), value=mask_kind, description="mask"))


# --- notebook 06: fill-mask explorer -----------------------------------------------------------------------------

def draw_fill_mask(text: str, predictions: list[list[tuple[str, float]]]):
    """One bar chart per ``[MASK]`` in ``text``: its top-k tokens and their probabilities. Returns the figure.

    ``predictions`` is what :func:`course_utils.mlm.fill_mask` returns: one list of ``(token, probability)`` per mask.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(predictions), figsize=(3.6 * len(predictions) + 0.6, 2.8), squeeze=False,
                             constrained_layout=True)
    for number, (ax, top) in enumerate(zip(axes[0], predictions), start=1):
        tokens = [repr(token) for token, _ in top][::-1]  # repr shows the leading space BPE tokens carry
        probabilities = [probability for _, probability in top][::-1]
        ax.barh(tokens, probabilities, color="tab:blue")
        ax.set(xlabel="probability", xlim=(0, min(1.0, 1.2 * max(probabilities) + 0.01)), title=f"[MASK] #{number}")
    fig.suptitle(text if len(text) <= 90 else text[:87] + "...", fontsize=9)
    return fig


def fill_mask_explorer(predict, text: str = "The [MASK] returns a new list.", k: int = 5) -> None:
    """A text box: type a sentence containing ``[MASK]`` and see the model's top-``k`` guesses for each mask.

    Args:
        predict: ``predict(text, k) -> [[(token, probability), ...], ...]``, e.g.
            ``lambda text, k: mlm.fill_mask(model, tokenizer, text, k)``; it may raise ``ValueError`` for bad text
            (the message is shown under the box).
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    def show(text: str, k: int) -> None:
        draw_fill_mask(text, predict(text, k))
        plt.show()

    live_explorer(show,
                  text=widgets.Text(value=text, description="sentence", continuous_update=False,
                                    layout=widgets.Layout(width="520px")),
                  k=widgets.IntSlider(value=k, min=1, max=10, description="top-k"))


# --- notebook 08: generation explorer -------------------------------------------------------------------------------

def draw_generation(prompt: str, distribution: list[tuple[str, float]], samples: list[str], title: str = ""):
    """The next-token distribution after the prompt (bars) and sampled continuations (text). Returns the figure.

    ``distribution``: ``(token, probability)`` pairs, most probable first, as sampling would see them.
    """
    import textwrap

    import matplotlib.pyplot as plt

    fig, (bars, text) = plt.subplots(1, 2, figsize=(12, 3.4), constrained_layout=True,
                                     gridspec_kw={"width_ratios": [1, 1.6]})
    tokens = [repr(token) for token, _ in distribution][::-1]  # repr shows the leading space BPE tokens carry
    probabilities = [probability for _, probability in distribution][::-1]
    bars.barh(tokens, probabilities, color="tab:blue")
    bars.set(xlabel="probability", xlim=(0, min(1.0, 1.2 * max(probabilities) + 0.01)),
             title="next token after the prompt")
    text.axis("off")
    lines = [f"{i + 1}. " + "\n    ".join(textwrap.wrap(prompt + sample, 70)) for i, sample in enumerate(samples)]
    text.text(0.0, 1.0, "\n".join(lines), va="top", family="monospace", fontsize=8)
    text.set_title("sampled continuations", loc="left")
    fig.suptitle(title, fontsize=10)
    return fig


def generation_explorer(next_token_distribution, sample, prompt: str = "The function returns",
                        temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> None:
    """A prompt box and sliders for temperature, top-k (0 = off) and top-p: the filtered next-token distribution and
    a few sampled continuations.

    Args:
        next_token_distribution: ``(prompt, temperature, top_k, top_p) -> [(token, probability), ...]``.
        sample: ``(prompt, temperature, top_k, top_p) -> [continuation, ...]``.
        Both may raise ``ValueError`` for a prompt they cannot use (the message is shown under the controls).
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    def show(prompt: str, temperature: float, top_k: int, top_p: float) -> None:
        settings = (prompt, temperature, top_k or None, top_p)
        title = f"temperature {temperature:g}, top-k {top_k or 'off'}, top-p {top_p:g}"
        draw_generation(prompt, next_token_distribution(*settings), sample(*settings), title)
        plt.show()

    live_explorer(show,
                  prompt=widgets.Text(value=prompt, description="prompt", continuous_update=False,
                                      layout=widgets.Layout(width="360px")),
                  temperature=widgets.FloatSlider(value=temperature, min=0.0, max=2.0, step=0.1,
                                                  description="temperature", continuous_update=False),
                  top_k=widgets.IntSlider(value=top_k, min=0, max=50, description="top-k", continuous_update=False),
                  top_p=widgets.FloatSlider(value=top_p, min=0.05, max=1.0, step=0.05, description="top-p",
                                            continuous_update=False))
