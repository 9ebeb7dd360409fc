"""Encoder/decoder layers and the full encoder–decoder equal PyTorch's own modules with copied weights."""
import math

import pytest
import torch
import torch.nn as nn

from course_utils.config import TransformerConfig, count_parameters
from course_utils.errors import CourseError, CourseTypeError, CourseValueError
from course_utils.layers import DecoderLayer, EncoderLayer
from course_utils.masks import causal_mask, padding_mask
from course_utils.models import (
    Decoder,
    Encoder,
    InputEmbedding,
    MaskedLanguageModel,
    Seq2SeqTransformer,
    TransformerClassifier,
)
from course_utils.positional import sinusoidal_table
from course_utils.reference import copy_decoder, copy_decoder_layer, copy_encoder, copy_encoder_layer

D_MODEL, N_HEADS, D_FF = 16, 4, 32
SRC = torch.tensor([[5, 6, 7, 8, 9, 3], [4, 5, 6, 0, 0, 0]])
TGT = torch.tensor([[1, 8, 4, 2, 0], [1, 3, 5, 7, 2]])


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_pytorch(norm, activation):
    theirs = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, activation=activation,
                                        batch_first=True, norm_first=norm == "pre").eval()
    ours = EncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, activation=activation, norm=norm).eval()
    copy_encoder_layer(ours, theirs)
    x = torch.randn(2, 6, D_MODEL)
    expected = theirs(x, src_key_padding_mask=SRC == 0)
    torch.testing.assert_close(ours(x, padding_mask(SRC)), expected)


def test_layers_refuse_a_flat_padding_mask_even_when_batch_equals_seq():
    ids = torch.tensor([[5, 6, 0], [4, 0, 0], [7, 8, 9]])   # batch 3 == seq 3: `ids != 0` would broadcast silently
    x, memory = torch.randn(3, 3, D_MODEL), torch.randn(3, 3, D_MODEL)
    encoder_layer, decoder_layer = EncoderLayer(D_MODEL, N_HEADS, D_FF), DecoderLayer(D_MODEL, N_HEADS, D_FF)
    with pytest.raises(CourseValueError, match=r"padding_mask\(ids\)"):
        encoder_layer(x, ids != 0)
    with pytest.raises(CourseValueError, match=r"padding_mask\(ids\)"):
        decoder_layer(x, memory, causal_mask(3), ids != 0)
    assert encoder_layer(x, padding_mask(ids)).shape == (3, 3, D_MODEL)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_decoder_layer_matches_pytorch(norm):
    theirs = nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, batch_first=True,
                                        norm_first=norm == "pre").eval()
    ours = DecoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, norm=norm).eval()
    copy_decoder_layer(ours, theirs)
    y, memory = torch.randn(2, 5, D_MODEL), torch.randn(2, 6, D_MODEL)
    expected = theirs(y, memory, tgt_mask=~causal_mask(5)[0, 0], tgt_key_padding_mask=TGT == 0,
                      memory_key_padding_mask=SRC == 0)
    out = ours(y, memory, causal_mask(5) & padding_mask(TGT), padding_mask(SRC))
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_encoder_and_decoder_stacks_match_nn_transformer(norm):
    config = TransformerConfig(vocab_size=10, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF, n_layers=2,
                               dropout=0.0, norm=norm)
    theirs = nn.Transformer(D_MODEL, N_HEADS, 2, 2, D_FF, dropout=0.0, batch_first=True,
                            norm_first=norm == "pre").eval()
    encoder, decoder = Encoder(config).eval(), Decoder(config).eval()
    copy_encoder(encoder, theirs.encoder)
    copy_decoder(decoder, theirs.decoder)
    src, tgt = torch.randn(2, 6, D_MODEL), torch.randn(2, 5, D_MODEL)
    expected = theirs(src, tgt, tgt_mask=~causal_mask(5)[0, 0], src_key_padding_mask=SRC == 0,
                      tgt_key_padding_mask=TGT == 0, memory_key_padding_mask=SRC == 0)
    memory = encoder(src, padding_mask(SRC))
    out = decoder(tgt, memory, causal_mask(5) & padding_mask(TGT), padding_mask(SRC))
    torch.testing.assert_close(out, expected)


def test_seq2seq_model_uses_the_same_stacks_as_nn_transformer():
    config = TransformerConfig(vocab_size=12, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF, n_layers=2,
                               dropout=0.0, max_len=16)
    model = Seq2SeqTransformer(config).eval()
    theirs = nn.Transformer(D_MODEL, N_HEADS, 2, 2, D_FF, dropout=0.0, batch_first=True).eval()
    copy_encoder(model.encoder, theirs.encoder)
    copy_decoder(model.decoder, theirs.decoder)
    hidden = theirs(model.src_embedding(SRC), model.tgt_embedding(TGT), tgt_mask=~causal_mask(5)[0, 0],
                    src_key_padding_mask=SRC == 0, tgt_key_padding_mask=TGT == 0, memory_key_padding_mask=SRC == 0)
    torch.testing.assert_close(model(SRC, TGT), model.generator(hidden))


def test_input_embedding_scales_tokens_by_sqrt_d_model_then_adds_positions():
    embedding = InputEmbedding(vocab_size=12, d_model=D_MODEL, max_len=8, dropout=0.0).eval()
    expected = embedding.tokens.weight[TGT] * math.sqrt(D_MODEL) + sinusoidal_table(8, D_MODEL)[:TGT.size(1)]
    torch.testing.assert_close(embedding(TGT), expected)


def test_seed_001_forward_shape_and_initial_loss():
    config = TransformerConfig(vocab_size=100, d_model=64, n_heads=4, d_ff=256, n_layers=2, dropout=0.0)
    model = Seq2SeqTransformer(config)
    src = torch.tensor([[3, 5, 7, 2, 0, 0, 0], [1, 4, 6, 8, 9, 2, 0]])
    tgt = torch.tensor([[1, 8, 4, 2, 0, 0], [1, 3, 5, 7, 2, 0]])
    logits = model(src, tgt)
    assert logits.shape == (2, 6, 100)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 100), tgt.reshape(-1))
    assert abs(loss.item() - math.log(100)) < 1.0


def test_kv_cache_decoding_equals_full_recompute():
    config = TransformerConfig(vocab_size=12, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF, n_layers=2,
                               dropout=0.0, max_len=16)
    model = Seq2SeqTransformer(config).eval()
    memory = model.encode(SRC)
    full = model.decode(TGT, memory, SRC)[:, :, :]
    cache = model.new_cache()
    steps = [model.decode(TGT[:, t:t + 1], memory, SRC, cache) for t in range(TGT.size(1))]
    real = TGT != 0  # cached decoding does not mask target padding; compare real positions
    torch.testing.assert_close(torch.cat(steps, 1)[real], full[real])


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_classifier_output_shape(pooling):
    config = TransformerConfig(vocab_size=12, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF, n_layers=1)
    assert TransformerClassifier(config, n_classes=3, pooling=pooling)(SRC).shape == (2, 3)


def test_mlm_weight_tying_shares_the_embedding_and_saves_parameters():
    config = TransformerConfig(vocab_size=50, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF, n_layers=1)
    tied, untied = MaskedLanguageModel(config, tie_weights=True), MaskedLanguageModel(config, tie_weights=False)
    assert tied.output.weight is tied.text_encoder.embedding.tokens.weight
    assert count_parameters(untied) - count_parameters(tied) == 50 * D_MODEL
    assert tied(SRC).shape == (2, 6, 50)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_bias_free_layers_match_pytorch(norm):
    theirs_encoder = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, batch_first=True, bias=False,
                                                norm_first=norm == "pre").eval()
    ours_encoder = EncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, norm=norm, bias=False).eval()
    copy_encoder_layer(ours_encoder, theirs_encoder)
    theirs_decoder = nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, batch_first=True, bias=False,
                                                norm_first=norm == "pre").eval()
    ours_decoder = DecoderLayer(D_MODEL, N_HEADS, D_FF, dropout=0.0, norm=norm, bias=False).eval()
    copy_decoder_layer(ours_decoder, theirs_decoder)
    x, y = torch.randn(2, 6, D_MODEL), torch.randn(2, 5, D_MODEL)
    torch.testing.assert_close(ours_encoder(x, padding_mask(SRC)), theirs_encoder(x, src_key_padding_mask=SRC == 0))
    torch.testing.assert_close(ours_decoder(y, x, causal_mask(5), padding_mask(SRC)),
                               theirs_decoder(y, x, tgt_mask=~causal_mask(5)[0, 0], memory_key_padding_mask=SRC == 0))


def encoder_layer_pair(ours_kwargs, theirs_kwargs):
    ours = EncoderLayer(D_MODEL, N_HEADS, D_FF, **ours_kwargs)
    theirs = nn.TransformerEncoderLayer(**{"d_model": D_MODEL, "nhead": N_HEADS, "dim_feedforward": D_FF,
                                           "batch_first": True, **theirs_kwargs})
    return ours, theirs


@pytest.mark.parametrize("ours_kwargs, theirs_kwargs, message", [
    ({"norm": "pre"}, {}, "norm_first"),
    ({}, {"norm_first": True}, "norm_first"),
    ({"activation": "gelu"}, {}, "activation"),
    ({}, {"activation": nn.GELU(approximate="tanh")}, "activation"),
    ({}, {"bias": False}, "bias"),
    ({}, {"layer_norm_eps": 1e-6}, "eps"),
    ({}, {"dim_feedforward": 2 * D_FF}, "shape of linear1.weight"),
])
def test_layer_copy_refuses_a_layer_that_computes_something_else(ours_kwargs, theirs_kwargs, message):
    ours, theirs = encoder_layer_pair(ours_kwargs, theirs_kwargs)
    with pytest.raises(CourseValueError, match=message):
        copy_encoder_layer(ours, theirs)


def test_decoder_layer_copy_refuses_a_norm_placement_mismatch():
    theirs = nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_FF, batch_first=True, norm_first=True)
    with pytest.raises(CourseValueError, match="norm='pre'"):
        copy_decoder_layer(DecoderLayer(D_MODEL, N_HEADS, D_FF), theirs)


def test_stack_copy_refuses_another_layer_count_or_a_missing_final_norm():
    config = TransformerConfig(vocab_size=10, d_model=D_MODEL, n_heads=N_HEADS, d_ff=D_FF, n_layers=2)
    layer = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_FF, batch_first=True)
    with pytest.raises(CourseValueError, match="number of layers"):
        copy_encoder(Encoder(config), nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(D_MODEL),
                                                            enable_nested_tensor=False))
    with pytest.raises(CourseValueError, match="final LayerNorm"):
        copy_encoder(Encoder(config), nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
    decoder_layer = nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_FF, batch_first=True)
    with pytest.raises(CourseValueError, match="number of layers"):
        copy_decoder(Decoder(config), nn.TransformerDecoder(decoder_layer, 1, norm=nn.LayerNorm(D_MODEL)))


@pytest.mark.parametrize("build, message", [
    (lambda: EncoderLayer(D_MODEL, N_HEADS, 0), "d_ff must be an int >= 1"),
    (lambda: EncoderLayer(D_MODEL, N_HEADS, D_FF, dropout=1.5), "dropout"),
    (lambda: DecoderLayer(D_MODEL, N_HEADS, D_FF, bias="no"), "bias"),
    (lambda: EncoderLayer(D_MODEL, N_HEADS, D_FF, norm="middle"), "norm must be one of"),
])
def test_layer_constructors_name_the_bad_argument(build, message):
    with pytest.raises(CourseError, match=message):
        build()


def test_decoder_layer_names_a_wrong_cache_and_wrong_memory():
    layer = DecoderLayer(D_MODEL, N_HEADS, D_FF)
    y = torch.randn(2, 1, D_MODEL)
    with pytest.raises(CourseTypeError, match=r"new_cache\(\)"):
        layer(y, torch.randn(2, 6, D_MODEL), self_cache={})
    with pytest.raises(CourseValueError, match="memory"):
        layer(y, torch.randn(6, D_MODEL))
