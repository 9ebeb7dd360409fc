"""The one mask convention: bool, True = may attend."""
import pytest
import torch

from course_utils.masks import causal_mask, combine_masks, padding_mask, target_mask


def test_padding_mask_marks_real_tokens():
    ids = torch.tensor([[4, 5, 0], [0, 0, 0]])
    mask = padding_mask(ids)
    assert mask.shape == (2, 1, 1, 3) and mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True, True, False], [False, False, False]]


def test_causal_mask_is_lower_triangular():
    assert causal_mask(3)[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, True]]


@pytest.mark.parametrize("q_len, past", [(1, 0), (1, 7), (3, 2), (5, 0), (4, 9)])
def test_causal_mask_with_cached_positions_follows_the_definition(q_len, past):
    """Query i sits at absolute position past + i and may see exactly the keys 0 .. past + i."""
    mask = causal_mask(q_len, past=past)
    assert mask.shape == (1, 1, q_len, past + q_len) and mask.dtype == torch.bool
    expected = [[key <= past + query for key in range(past + q_len)] for query in range(q_len)]
    assert mask[0, 0].tolist() == expected


def test_causal_mask_with_a_cache_is_the_last_rows_of_the_full_mask():
    full = causal_mask(9)
    for past in range(9):
        assert torch.equal(causal_mask(9 - past, past=past), full[:, :, past:])


def test_combined_target_mask_hides_future_and_padding():
    mask = target_mask(torch.tensor([[1, 7, 0]]))
    assert mask.shape == (1, 1, 3, 3)
    assert mask[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]
    assert combine_masks(None, None) is None


def test_padding_mask_rejects_1d_ids_with_a_fix():
    with pytest.raises(ValueError, match="unsqueeze"):
        padding_mask(torch.tensor([1, 2, 3]))
