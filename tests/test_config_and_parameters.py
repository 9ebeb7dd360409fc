"""The config validates itself and the closed-form parameter counts match the modules."""
import pytest

from course_utils.config import (
    TransformerConfig,
    count_parameters,
    decoder_layer_parameter_count,
    encoder_layer_parameter_count,
)
from course_utils.errors import CourseError
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
    (dict(norm_eps=0.0), "norm_eps"),
    (dict(norm_eps=-1e-5), "norm_eps"),
    (dict(n_token_types=-1), "n_token_types"),
    (dict(scale_embeddings="no"), "scale_embeddings"),
    (dict(embedding_norm=1), "embedding_norm"),
    (dict(final_norm=None), "final_norm"),
    (dict(activation="gelu_new"), "activation must be one of"),
    (dict(d_model=130, n_heads=4, final_norm=False), "not divisible by n_heads"),
])
def test_bad_config_names_the_fix(bad, message):
    from course_utils.interop import PublishedConfig

    published = {"scale_embeddings", "n_token_types", "embedding_norm", "final_norm", "norm_eps"}
    with pytest.raises(CourseError, match=message):
        (PublishedConfig if published & set(bad) else TransformerConfig)(**{**SMALL, **bad})


def test_the_fields_only_published_checkpoints_need_live_with_the_interop_code():
    from dataclasses import fields

    from course_utils.interop import PublishedConfig

    published = ["scale_embeddings", "n_token_types", "embedding_norm", "final_norm", "norm_eps"]
    course = [f.name for f in fields(TransformerConfig)]
    assert len(course) == 16 and not set(published) & set(course)
    assert [f.name for f in fields(PublishedConfig)] == course + published
    assert PublishedConfig(**SMALL) == PublishedConfig(**SMALL)
    assert all(getattr(PublishedConfig(**SMALL), name) == getattr(TransformerConfig, name) for name in published)


def test_switches_for_published_families_default_to_the_course_model():
    """The switches the published families need are off by default: a config that does not name them builds the
    model it always built (same parameter names, shapes and values), a PublishedConfig with its defaults too."""
    import torch

    from course_utils.interop import PublishedConfig
    from course_utils.language_model import DecoderOnlyLM
    from course_utils.models import MaskedLanguageModel

    config = TransformerConfig(**SMALL)
    assert (config.scale_embeddings, config.n_token_types, config.embedding_norm, config.final_norm,
            config.norm_eps, config.pad_id) == (True, 0, False, True, None, 0)
    for make in (lambda c: DecoderOnlyLM(type(c)(**{**SMALL, "norm": "pre"})), MaskedLanguageModel):
        names = {name: tuple(p.shape) for name, p in make(config).state_dict().items()}
        assert not any("token_types" in name or "embedding.norm" in name for name in names)
        torch.manual_seed(0)
        course = make(config).state_dict()
        torch.manual_seed(0)
        assert all(torch.equal(course[k], v) for k, v in make(PublishedConfig(**SMALL)).state_dict().items())
    model = MaskedLanguageModel(config).eval()
    ids = torch.randint(7, 1000, (2, 5))
    assert torch.equal(model.text_encoder.embedding(ids),
                       model.text_encoder.embedding.tokens.lookup(ids) * config.d_model ** 0.5
                       + model.text_encoder.embedding.positions.table[:5])
