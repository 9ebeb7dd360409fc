"""Lesson 08's generation explorer: a static first view from the default settings, the settings passed through."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from course_utils.widgets import draw_generation, generation_explorer  # noqa: E402


def test_draw_generation_shows_bars_and_samples():
    fig = draw_generation("The value", [(" is", 0.5), (" of", 0.2)], [" is one.", " of it."], title="T 1")
    bars, text = fig.axes
    assert len(bars.patches) == 2
    assert "The value is one." in text.texts[0].get_text()
    plt.close(fig)


def test_explorer_passes_the_settings_and_top_k_zero_means_off():
    calls = []

    def distribution(prompt, temperature, top_k, top_p):
        calls.append((prompt, temperature, top_k, top_p))
        return [(" a", 1.0)]

    generation_explorer(distribution, lambda *settings: [" a."], prompt="Hi", temperature=0.5, top_k=0, top_p=0.9)
    assert calls == [("Hi", 0.5, None, 0.9)]
    plt.close("all")
