"""Input checks run once, at the door: a forward pass converts its token ids to Python numbers once (one min and
one max), and the generation loops add no check — and so no host synchronisation — per generated token."""
import pytest
import torch

from course_utils.config import TransformerConfig
from course_utils.decoding import beam_search, generate, greedy_decode
from course_utils.errors import CourseValueError
from course_utils.language_model import DecoderOnlyLM
from course_utils.models import Seq2SeqTransformer
from course_utils.validation import check_token_ids, unchecked
from tests.helpers import count_check_syncs

CONFIG = TransformerConfig(40, d_model=16, n_heads=2, d_ff=32, max_len=40, dropout=0.0)
IDS = torch.randint(7, 40, (2, 5), generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    return DecoderOnlyLM(CONFIG).eval()


@pytest.fixture(scope="module")
def translator():
    torch.manual_seed(0)
    return Seq2SeqTransformer(CONFIG).eval()


def test_a_forward_pass_checks_its_token_ids_once(gpt, translator):
    once = count_check_syncs(lambda: check_token_ids(IDS, CONFIG.vocab_size))
    assert once == 2                                          # int(ids.min()), int(ids.max())
    assert count_check_syncs(lambda: gpt(IDS)) == once        # not once per block, embedding and positions
    assert count_check_syncs(lambda: translator(IDS, IDS)) == 2 * once    # source and target, once each


@pytest.mark.parametrize("extra", [{}, {"eos_id": 3, "top_k": 5, "top_p": 0.9, "repetition_penalty": 1.2},
                                   {"use_cache": False, "temperature": 0}])
def test_generate_adds_no_check_per_token(gpt, extra):
    short = count_check_syncs(lambda: generate(gpt, IDS, 1, **extra))
    assert count_check_syncs(lambda: generate(gpt, IDS, 12, **extra)) == short


@pytest.mark.parametrize("decode", [greedy_decode, beam_search])
def test_translator_decoding_adds_no_check_per_token(translator, decode):
    short = count_check_syncs(lambda: decode(translator, IDS, 5, 6, 1))
    assert count_check_syncs(lambda: decode(translator, IDS, 5, 6, 12)) == short


def test_the_checks_still_guard_every_door(gpt):
    """Called directly, an inner block checks its own input; unchecked() is the only way around it."""
    with pytest.raises(CourseValueError, match="must lie in"):
        gpt.embedding(torch.tensor([[1, 99]]))
    with pytest.raises(CourseValueError, match="d_model=16"):
        gpt.blocks[0](torch.randn(1, 3, 8))
    with unchecked(), pytest.raises(IndexError):
        gpt.embedding(torch.tensor([[1, 99]]))                # inside PyTorch now: what the checks prevent
