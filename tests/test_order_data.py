"""Lesson 02's order task: one A and one B per sequence, labels that say which comes first, mirrored pairs that make
a model without positions score exactly 50 %, and clear errors for sizes that cannot work."""
import pytest
import torch

from course_utils.attention import MultiHeadAttention
from course_utils.data.order import FIRST_FILLER, MARKER_A, MARKER_B, which_comes_first
from course_utils.errors import CourseTypeError, CourseValueError


def test_every_sequence_holds_one_a_one_b_and_fillers():
    ids, labels = which_comes_first(200, seq_len=7, vocab_size=9, seed=3)
    assert ids.shape == (200, 7) and labels.shape == (200,)
    assert ids.dtype == labels.dtype == torch.int64
    assert ((ids == MARKER_A).sum(1) == 1).all() and ((ids == MARKER_B).sum(1) == 1).all()
    fillers = ids[(ids != MARKER_A) & (ids != MARKER_B)]
    assert fillers.min() >= FIRST_FILLER and fillers.max() <= 8
    assert len(fillers.unique()) == 9 - FIRST_FILLER                        # every filler id is used


def test_the_label_says_whether_a_comes_before_b():
    ids, labels = which_comes_first(100, seed=0)
    a_position = (ids == MARKER_A).int().argmax(1)
    b_position = (ids == MARKER_B).int().argmax(1)
    assert torch.equal(labels, (a_position < b_position).long())


def test_examples_come_in_mirrored_pairs_with_opposite_labels():
    ids, labels = which_comes_first(60, seq_len=6, seed=1)
    first, second = ids[0::2], ids[1::2]
    swapped = first.clone()
    swapped[first == MARKER_A], swapped[first == MARKER_B] = MARKER_B, MARKER_A
    assert torch.equal(second, swapped)
    assert torch.equal(labels[0::2], 1 - labels[1::2]) and labels.sum() == 30


def test_a_model_without_positions_scores_exactly_one_half():
    torch.manual_seed(0)
    ids, labels = which_comes_first(400, seq_len=8, vocab_size=12, seed=2)
    embedding, attention, head = torch.nn.Embedding(12, 16), MultiHeadAttention(16, 2).eval(), torch.nn.Linear(16, 2)
    with torch.no_grad():
        x = embedding(ids)
        predictions = head(attention(x, x, x)[0].mean(1)).argmax(-1)      # permutation-invariant: no positions
    assert torch.equal(predictions[0::2], predictions[1::2])
    assert (predictions == labels).float().mean().item() == 0.5


def test_same_seed_same_draw_other_seed_other_draw():
    assert torch.equal(which_comes_first(10, seed=5)[0], which_comes_first(10, seed=5)[0])
    assert not torch.equal(which_comes_first(10, seed=5)[0], which_comes_first(10, seed=6)[0])


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(n_examples=7), CourseValueError, "n_examples must be even.*mirror"),
    (dict(n_examples=0), CourseValueError, "n_examples must be an int >= 1"),
    (dict(n_examples=4, seq_len=1), CourseValueError, "seq_len must be an int >= 2.*room for A and B"),
    (dict(n_examples=4, vocab_size=3), CourseValueError, "vocab_size must be an int >= 4.*fillers start at 3"),
    (dict(n_examples=4.0), CourseTypeError, "n_examples must be an int"),
])
def test_sizes_that_cannot_work_are_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        which_comes_first(**kwargs)


def test_the_order_model_without_positions_scores_exactly_one_half_and_with_them_learns_the_task():
    """Lesson 02's experiment, as the package keeps it: exactly 50 % without positions (mirrored pairs), exactly
    50 % with positions but without the ReLU (an affine per-token map cannot tie a token to its position), and the
    sinusoidal table lets the model with its ReLU learn the task."""
    import torch.nn as nn

    from course_utils.data.order import OrderModel, train_order_model
    from course_utils.positional import SinusoidalPositionalEncoding

    model, accuracy, losses = train_order_model(lambda: OrderModel(None), seed=3, steps=100)
    assert isinstance(model, OrderModel) and model.positions is None and len(losses) == 100
    assert accuracy == 0.5

    def without_relu():
        model = OrderModel(SinusoidalPositionalEncoding(32, 16))
        model.per_token = nn.Sequential(nn.Linear(32, 64), nn.Linear(64, 64))
        return model

    assert train_order_model(without_relu, seed=4, steps=100)[1] == 0.5
    _, accuracy, losses = train_order_model(lambda: OrderModel(SinusoidalPositionalEncoding(32, 16)), seed=0)
    assert accuracy > 0.95 and sum(losses[-50:]) / 50 < 0.1


def test_train_order_model_is_deterministic_and_refuses_bad_arguments():
    from course_utils.data.order import OrderModel, train_order_model

    none = lambda: OrderModel(None)  # noqa: E731
    assert train_order_model(none, seed=1, steps=5)[2] == train_order_model(none, seed=1, steps=5)[2]
    with pytest.raises(CourseTypeError, match="make_model must be a function.*OrderModel"):
        train_order_model(None, seed=0)
    with pytest.raises(CourseTypeError, match="must return the model"):
        train_order_model(lambda: None, seed=0)
    with pytest.raises(CourseValueError, match="steps must be an int >= 1"):
        train_order_model(none, seed=0, steps=0)
