"""The translator explorer reads typed text by the number grammar and hands the model num2words' English."""
import matplotlib
import pytest
import torch

from course_utils.errors import CourseValueError
from course_utils.widgets import translation_view, translator_explorer

matplotlib.use("Agg")


def fake_translate(calls):
    def translate(english):
        calls.append(english)
        words = english.replace("-", " - ").replace(",", " ,").split()
        return words, ["[BOS]", "x", "[EOS]"], torch.full((3, len(words)), 1 / len(words)), "x"
    return translate


@pytest.mark.parametrize("text, english", [("1,200", "one thousand, two hundred"),
                                           ("Twelve Hundred", "one thousand, two hundred"),
                                           ("forty two", "forty-two"), ("342", "three hundred and forty-two")])
def test_the_model_sees_normalised_english(text, english):
    calls = []
    figure = translation_view(fake_translate(calls), text)
    assert calls == [english]
    assert english in figure.get_suptitle()


@pytest.mark.parametrize("text", ["3.5", "1,2,3", "and and and", "thousand thousand", "seven seven seven",
                                  "1000000", ""])
def test_bad_text_is_refused_before_the_model_runs(text):
    calls = []
    with pytest.raises(CourseValueError, match="Fix: "):
        translation_view(fake_translate(calls), text)
    assert calls == []


def test_explorer_draws_its_default_view_once():
    calls = []
    translator_explorer(fake_translate(calls), "57384")
    assert calls == ["fifty-seven thousand, three hundred and eighty-four"]
