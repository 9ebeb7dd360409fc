"""The helpers lessons 03–07 share (batching, classification loss/accuracy, timing, character n-grams)."""
import pytest
import torch
import torch.nn as nn

from course_utils.data.batching import ReshuffledEachEpoch, length_bucketed_batches
from course_utils.data.features import char_ngrams
from course_utils.errors import CourseTypeError, CourseValueError
from course_utils.losses import classification_loss
from course_utils.training import best_time, classification_accuracy, predict_classes

SEQUENCES = [[2, 9], [2, 9, 9, 9, 9], [2, 8, 8], [2, 7], [2, 7, 7, 7]]


def test_batches_group_similar_lengths_and_keep_labels_paired():
    batches = length_bucketed_batches(SEQUENCES, 2, labels=[10, 11, 12, 13, 14], shuffle=False)
    assert [tuple(ids.shape) for ids, _ in batches] == [(2, 2), (2, 4), (1, 5)]
    for ids, labels in batches:
        for row, label in zip(ids.tolist(), labels.tolist()):
            original = SEQUENCES[label - 10]
            assert row[:len(original)] == original and set(row[len(original):]) <= {0}


def test_shuffle_is_seeded_and_only_reorders_batches():
    plain = length_bucketed_batches(SEQUENCES, 2, shuffle=False)
    a, b = (length_bucketed_batches(SEQUENCES, 2, shuffle=True, seed=3) for _ in range(2))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert sorted(x.tolist() for x in a) == sorted(x.tolist() for x in plain)


def test_lm_batches_are_the_one_batcher_on_a_seeded_order():
    """lesson 08's lm_batches = length_bucketed_batches of the sequences in a seeded order, batch order shuffled."""
    from course_utils.data.lm_data import lm_batches

    plain = lm_batches(SEQUENCES, 2, shuffle=False)
    assert all(torch.equal(x, y) for x, y in zip(plain, length_bucketed_batches(SEQUENCES, 2, shuffle=False)))
    shuffled = lm_batches(SEQUENCES, 2, shuffle=True, seed=1)
    assert sorted(row for b in shuffled for row in b.tolist()) == sorted(row for b in plain for row in b.tolist())


@pytest.mark.parametrize("kwargs, error", [(dict(sequences=[], batch_size=2), CourseValueError),
                                           (dict(sequences=SEQUENCES, batch_size=0), CourseValueError),
                                           (dict(sequences=SEQUENCES, batch_size=2.0), CourseTypeError),
                                           (dict(sequences=SEQUENCES, batch_size=2, labels=[1, 2]), CourseValueError)])
def test_bad_batching_input_is_named(kwargs, error):
    with pytest.raises(error, match=r"sequences|batch_size|labels"):
        length_bucketed_batches(**kwargs)


def test_reshuffled_each_epoch_changes_order_but_not_content():
    batches = list(range(20))
    wrapped = ReshuffledEachEpoch(batches, seed=0)
    first, second = list(wrapped), list(wrapped)
    assert sorted(first) == sorted(second) == batches and first != second and len(wrapped) == 20
    assert list(ReshuffledEachEpoch(batches, seed=0)) == first
    with pytest.raises(CourseValueError):
        ReshuffledEachEpoch([])


class Lookup(nn.Module):
    """A fake classifier: the logits of example i are row ids[i, 0] of a fixed table."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.tensor([[5.0, 0.0], [0.0, 5.0]]))

    def forward(self, ids):
        return self.table[ids[:, 0]]


def test_classification_helpers():
    model = Lookup()
    batches = [(torch.tensor([[0], [1]]), torch.tensor([0, 1])), (torch.tensor([[1]]), torch.tensor([0]))]
    assert predict_classes(model, batches).tolist() == [0, 1, 1]
    assert classification_accuracy(model, batches) == pytest.approx(2 / 3)
    expected = nn.functional.cross_entropy(model.table[[0, 1]], torch.tensor([0, 1]))
    torch.testing.assert_close(classification_loss(model, batches[0]), expected)
    with pytest.raises(CourseValueError):
        predict_classes(model, [])


def test_best_time_is_the_minimum():
    calls = []
    assert best_time(lambda: calls.append(1), repeats=4) >= 0 and len(calls) == 4
    with pytest.raises(CourseValueError):
        best_time(lambda: None, repeats=0)


def test_char_ngrams():
    assert char_ngrams("ab") == [" ", "a", "b", " ", " a", "ab", "b ", " ab", "ab "]
    assert char_ngrams("ab", orders=(2,)) == [" a", "ab", "b "]
    with pytest.raises(CourseTypeError):
        char_ngrams(["ab"])
