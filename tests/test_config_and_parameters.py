"""The config validates itself and the closed-form parameter counts match the modules."""
import pytest

from course_utils.config import (
    TransformerConfig,
    count_parameters,
    decoder_layer_parameter_count,
    encoder_layer_parameter_count,
)
from course_utils.layers import DecoderLayer, EncoderLayer
from course_utils.models import Seq2SeqTransformer, TransformerClassifier

SMALL = dict(vocab_size=1000, d_model=128, n_heads=4, d_ff=512, n_layers=2, max_len=64)  # seed 000
BASE = dict(vocab_size=37000, d_model=512, n_heads=8, d_ff=2048, n_layers=6, max_len=512)  # the paper's base


@pytest.mark.parametrize("d_model,d_ff", [(128, 512), (512, 2048)])
def test_layer_counts_match_closed_form(d_model, d_ff):
    assert count_parameters(EncoderLayer(d_model, 8 if d_model == 512 else 4, d_ff)) == \
        encoder_layer_parameter_count(d_model, d_ff)
    assert count_parameters(DecoderLayer(d_model, 8 if d_model == 512 else 4, d_ff)) == \
        decoder_layer_parameter_count(d_model, d_ff)


def test_classifier_count_matches_closed_form():
    config = TransformerConfig(**SMALL)
    d = config.d_model
    expected = (config.vocab_size * d + config.n_layers * encoder_layer_parameter_count(d, config.d_ff)
                + 2 * d + d * 2 + 2)  # embedding, layers, final norm, head
    assert count_parameters(TransformerClassifier(config, n_classes=2)) == expected


def test_base_seq2seq_is_about_the_papers_size():
    config = TransformerConfig(**BASE)
    d = config.d_model
    expected = (2 * config.vocab_size * d + 6 * encoder_layer_parameter_count(d, 2048)
                + 6 * decoder_layer_parameter_count(d, 2048) + 2 * 2 * d + config.vocab_size * (d + 1))
    assert count_parameters(Seq2SeqTransformer(config)) == expected


@pytest.mark.parametrize("bad,message", [
    (dict(d_model=130, n_heads=4), "not divisible by n_heads"),
    (dict(norm="middle"), "norm must be one of"),
    (dict(activation="tanh"), "activation must be one of"),
    (dict(dropout=1.5), "dropout"),
    (dict(pad_id=5000), "pad_id"),
    (dict(n_layers=0), "n_layers"),
])
def test_bad_config_names_the_fix(bad, message):
    with pytest.raises(ValueError, match=message):
        TransformerConfig(**{**SMALL, **bad})
