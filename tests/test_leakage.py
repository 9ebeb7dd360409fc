"""Information may not leak: future target tokens and padding never change what real positions compute."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.config import TransformerConfig
from course_utils.masks import padding_mask
from course_utils.models import Encoder, Seq2SeqTransformer, TransformerClassifier

CONFIG = TransformerConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=24, dropout=0.0)
FAST = settings(max_examples=25, deadline=None)


def build(model_class, *args, norm="post", **kwargs):
    torch.manual_seed(0)
    config = TransformerConfig(**{**CONFIG.__dict__, "norm": norm})
    return model_class(config, *args, **kwargs).eval()


MODELS = {norm: build(Seq2SeqTransformer, norm=norm) for norm in ("post", "pre")}
token = st.integers(min_value=1, max_value=CONFIG.vocab_size - 1)


@FAST
@given(tgt=st.lists(token, min_size=2, max_size=10), src=st.lists(token, min_size=1, max_size=10),
       cut=st.integers(min_value=0, max_value=8), seed=st.integers(0, 2**16), norm=st.sampled_from(["post", "pre"]))
def test_future_target_tokens_do_not_change_earlier_outputs(tgt, src, cut, seed, norm):
    cut = min(cut, len(tgt) - 2)
    changed = list(tgt)
    generator = torch.Generator().manual_seed(seed)
    for i in range(cut + 1, len(tgt)):
        changed[i] = int(torch.randint(1, CONFIG.vocab_size, (1,), generator=generator))
    src_ids = torch.tensor([src])
    model = MODELS[norm]
    with torch.no_grad():
        before = model(src_ids, torch.tensor([tgt]))[:, : cut + 1]
        after = model(src_ids, torch.tensor([changed]))[:, : cut + 1]
    torch.testing.assert_close(before, after)


@FAST
@given(src=st.lists(token, min_size=1, max_size=8), tgt=st.lists(token, min_size=1, max_size=8),
       extra_padding=st.integers(1, 8))
def test_source_padding_does_not_change_translation_logits(src, tgt, extra_padding):
    """Covers the encoder's self-attention and the decoder's cross-attention over source padding."""
    model = MODELS["post"]
    with torch.no_grad():
        short = model(torch.tensor([src]), torch.tensor([tgt]))
        padded = model(torch.tensor([src + [0] * extra_padding]), torch.tensor([tgt]))
    torch.testing.assert_close(short, padded)


@FAST
@given(lengths=st.lists(st.integers(1, 10), min_size=1, max_size=4), seed=st.integers(0, 2**16))
def test_encoder_outputs_at_real_positions_ignore_padded_vectors(lengths, seed):
    encoder = build(Encoder)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.tensor([[1] * n + [0] * (10 - n) for n in lengths])
    x = torch.randn(len(lengths), 10, CONFIG.d_model, generator=generator)
    noisy = x.clone()
    noisy[ids == 0] = torch.randn(int((ids == 0).sum()), CONFIG.d_model, generator=generator) * 10
    mask = padding_mask(ids)
    with torch.no_grad():
        real = ids != 0
        torch.testing.assert_close(encoder(x, mask)[real], encoder(noisy, mask)[real])


@pytest.mark.parametrize("pooling", ["cls", "mean"])
@FAST
@given(tokens=st.lists(token, min_size=1, max_size=12), extra_padding=st.integers(1, 10))
def test_classifier_ignores_padding(pooling, tokens, extra_padding):
    classifier = build(TransformerClassifier, 3, pooling=pooling)
    with torch.no_grad():
        torch.testing.assert_close(classifier(torch.tensor([tokens])),
                                   classifier(torch.tensor([tokens + [0] * extra_padding])))


def test_padding_leaks_when_the_mask_is_switched_off():
    """The property above is not vacuous: without the padding mask the logits do change."""
    classifier = build(TransformerClassifier, 3, pooling="mean", mask_padding=False)
    with torch.no_grad():
        assert not torch.allclose(classifier(torch.tensor([[5, 6, 7]])), classifier(torch.tensor([[5, 6, 7, 0, 0]])))
