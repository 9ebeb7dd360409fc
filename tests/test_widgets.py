"""The shared explorer mechanism: a static first picture, redraws on change, bad input shown not raised."""
import ipywidgets as widgets

from course_utils.widgets import live_explorer


def test_live_explorer_draws_once_then_on_every_change_and_reports_bad_input():
    calls = []

    def show(word, count):
        if word == "bad":
            raise ValueError("type a real word")
        calls.append((word, count))

    text, slider = widgets.Text(value="cat"), widgets.IntSlider(value=2)
    live_explorer(show, word=text, count=slider)
    assert calls == [("cat", 2)]
    slider.value = 3
    text.value = "bad"  # must not raise: the message goes to the output area
    text.value = "dog"
    assert calls == [("cat", 2), ("cat", 3), ("dog", 3)]
