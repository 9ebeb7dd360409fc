"""draw_architecture's encoder options (norm placement, head text, tying link): lessons 05 and 06 draw their own
models with them; the default drawing is unchanged."""
import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402

from course_utils.errors import CourseValueError  # noqa: E402
from course_utils.plotting import draw_architecture  # noqa: E402


def texts(fig, gid=None):
    return [t.get_text() for ax in fig.axes for t in ax.texts if gid is None or t.get_gid() == gid]


def test_lesson_06_model_pre_ln_mlm_head_and_tying():
    head = "MLM head: dense → GELU\n→ LayerNorm → Eᵀ + c"
    fig = draw_architecture(highlight="task head", variant="encoder", norm="pre", head=head, tied=True)
    assert texts(fig, "task head") == [head]
    assert texts(fig, "add & norm") == [] and len(texts(fig, "add")) == 2
    assert len(texts(fig, "norm")) == 3                      # two in the layer, the final one
    assert len(texts(fig, "tied")) == 1
    assert fig.get_figwidth() <= 10.5


def test_default_encoder_is_unchanged_and_lesson_05_head_text():
    assert len(texts(draw_architecture(variant="encoder"), "add & norm")) == 2
    fig = draw_architecture(variant="encoder", head="pool ([CLS] | masked mean)\n→ linear → logits")
    assert texts(fig, "task head") == ["pool ([CLS] | masked mean)\n→ linear → logits"] and not texts(fig, "tied")


@pytest.mark.parametrize("kwargs, message", [
    (dict(variant="decoder-only", norm="pre"), "redraw the 'encoder' variant"),
    (dict(variant="encoder", norm="middle"), "unknown norm 'middle'"),
    (dict(variant="encoder", norm="pre", highlight="add & norm"), "not 'add & norm'"),
])
def test_encoder_options_reject_what_they_cannot_draw(kwargs, message):
    with pytest.raises(CourseValueError, match=message):
        draw_architecture(**kwargs)
