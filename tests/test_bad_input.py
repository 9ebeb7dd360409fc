"""Bad input gets a clear error that names the fix; fully padded input stays finite."""
import pytest
import torch

from course_utils.attention import MultiHeadAttention, scaled_dot_product_attention
from course_utils.config import TransformerConfig
from course_utils.embedding import TokenEmbedding
from course_utils.errors import CourseError, CourseTypeError, CourseValueError
from course_utils.layers import DecoderLayer, EncoderLayer
from course_utils.models import (Encoder, InputEmbedding, MaskedLanguageModel, Seq2SeqTransformer,
                                 TransformerClassifier)
from course_utils.positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding

CONFIG = TransformerConfig(vocab_size=20, d_model=16, n_heads=4, d_ff=32, n_layers=1, max_len=8, dropout=0.0)
MODELS = {  # name: (build, call with token ids)
    "classifier": (lambda: TransformerClassifier(CONFIG, n_classes=3), lambda model, ids: model(ids)),
    "classifier (mean)": (lambda: TransformerClassifier(CONFIG, n_classes=3, pooling="mean"),
                          lambda model, ids: model(ids)),
    "mlm": (lambda: MaskedLanguageModel(CONFIG), lambda model, ids: model(ids)),
    "seq2seq": (lambda: Seq2SeqTransformer(CONFIG), lambda model, ids: model(ids, ids)),
}


@pytest.mark.parametrize("build", [lambda: MultiHeadAttention(30, 4), lambda: EncoderLayer(30, 4, 64),
                                   lambda: DecoderLayer(30, 4, 64)])
def test_heads_must_divide_d_model(build):
    with pytest.raises(ValueError, match="not divisible by n_heads=4.*Pick n_heads from"):
        build()


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("ids,error,message", [
    (torch.rand(2, 5), TypeError, "must be integers.*ids.long()"),
    (torch.tensor([[1, 2, 20]]), ValueError, r"\[0, 20\).*vocabulary size"),
    (torch.tensor([[1, -1, 2]]), ValueError, r"\[0, 20\)"),
    (torch.ones(2, 9, dtype=torch.long), ValueError, "exceeds max_len=8.*truncate"),
    (torch.ones(0, 5, dtype=torch.long), ValueError, "empty batch"),
    (torch.ones(5, dtype=torch.long), ValueError, r"\(batch, seq\).*unsqueeze"),
])
def test_models_reject_bad_token_ids(name, ids, error, message):
    build, call = MODELS[name]
    with pytest.raises(error, match=message):
        call(build(), ids)


def test_attention_rejects_wrong_mask_shape_and_dtype():
    attention = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"\(batch, 1, 1, seq\).*padding_mask"):
        attention(x, x, x, torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"\(batch, 1, 1, seq\)"):
        attention(x, x, x, torch.ones(2, 1, 1, 4, dtype=torch.bool), need_weights=True)
    with pytest.raises(TypeError, match="must be bool"):
        attention(x, x, x, torch.zeros(2, 1, 1, 5))


def test_attention_rejects_wrong_feature_size_and_empty_batch():
    attention = MultiHeadAttention(16, 4)
    with pytest.raises(ValueError, match="d_model=16"):
        attention(torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8))
    empty = torch.randn(0, 5, 16)
    with pytest.raises(ValueError, match="empty batch"):
        attention(empty, empty, empty)
    with pytest.raises(ValueError, match="same last dimension"):
        scaled_dot_product_attention(torch.randn(1, 3, 4), torch.randn(1, 3, 5), torch.randn(1, 3, 5))


def test_encoder_rejects_a_wrong_mask():
    with pytest.raises(ValueError, match="does not broadcast"):
        Encoder(CONFIG)(torch.randn(2, 5, 16), torch.ones(3, 1, 1, 5, dtype=torch.bool))


@pytest.mark.parametrize("encoding", [SinusoidalPositionalEncoding, LearnedPositionalEncoding])
def test_positional_encoding_past_max_len_names_the_fix(encoding):
    with pytest.raises(ValueError, match="exceeds max_len=8.*larger max_len"):
        encoding(16, max_len=8)(torch.zeros(1, 9, 16))


def test_embedding_rejects_float_ids():
    with pytest.raises(TypeError, match="did not pass embeddings"):
        TokenEmbedding(10, 4)(torch.zeros(1, 3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", [name for name in MODELS if name != "classifier"])  # [CLS] pooling refuses [PAD]
def test_fully_padded_sequence_gives_finite_outputs(name, dtype):
    torch.manual_seed(0)
    build, call = MODELS[name]
    ids = torch.tensor([[3, 4, 5, 0], [0, 0, 0, 0]])
    out = call(build().to(dtype), ids)
    assert torch.isfinite(out.float()).all()


# ---------------------------------------------------------------- every case of the hardening issue, as a table
def seq2seq():
    return Seq2SeqTransformer(CONFIG).eval()


def ids(*shape, high=20, dtype=torch.long):
    return torch.randint(7, high, shape, generator=torch.Generator().manual_seed(0)).to(dtype)


BAD_CALLS = {  # case: (call, expected error class, message pattern)
    "config tgt_vocab_size=0": (lambda: TransformerConfig(vocab_size=20, tgt_vocab_size=0), CourseValueError,
                                "tgt_vocab_size must be an int >= 1, got 0"),
    "config negative d_ff": (lambda: TransformerConfig(vocab_size=20, d_ff=-5), CourseValueError, "d_ff.*>= 1"),
    "config float d_model": (lambda: TransformerConfig(vocab_size=20, d_model=16.0), CourseTypeError,
                             "d_model must be an int, got 16.0"),
    "config bool n_layers": (lambda: TransformerConfig(vocab_size=20, n_layers=True), CourseTypeError,
                             "n_layers must be an int, got True"),
    "config float pad_id": (lambda: TransformerConfig(vocab_size=20, pad_id=0.0), CourseTypeError,
                            "pad_id must be an int"),
    "config pad_id outside vocab": (lambda: TransformerConfig(vocab_size=20, pad_id=20), CourseValueError,
                                    r"pad_id=20 must be a valid id in \[0, 20\)"),
    "config pad_id outside tgt vocab": (lambda: TransformerConfig(vocab_size=20, pad_id=9, tgt_vocab_size=8),
                                        CourseValueError, r"\[0, 8\) of the target vocabulary"),
    "config dropout 1.5": (lambda: TransformerConfig(vocab_size=20, dropout=1.5), CourseValueError,
                           r"dropout must lie in \[0.0, 1.0\), got 1.5"),
    "config n_heads float": (lambda: TransformerConfig(vocab_size=20, d_model=16, n_heads=4.0), CourseTypeError,
                             "n_heads must be an int"),
    "InputEmbedding positional typo": (lambda: InputEmbedding(20, 16, 8, positional="sinusiodal"), CourseValueError,
                                       r"positional must be one of \('sinusoidal', 'learned'\), got 'sinusiodal'"),
    "TokenEmbedding negative vocab": (lambda: TokenEmbedding(-3, 4), CourseValueError, "vocab_size must be an int >= 1"),
    "TokenEmbedding zero d_model": (lambda: TokenEmbedding(10, 0), CourseValueError, "d_model must be an int >= 1"),
    "MultiHeadAttention n_heads=0": (lambda: MultiHeadAttention(16, 0), CourseValueError, "n_heads must be an int >= 1"),
    "classifier n_classes float": (lambda: TransformerClassifier(CONFIG, n_classes=3.0), CourseTypeError, "n_classes"),
    "classifier gets a dict config": (lambda: TransformerClassifier(vars(CONFIG), 3), CourseTypeError,
                                      r"TransformerConfig\(\*\*d\)"),
    "[CLS] pooling on a leading [PAD]": (lambda: TransformerClassifier(CONFIG, 3)(torch.tensor([[0, 8, 9], [2, 8, 9]])),
                                         CourseValueError, r"row 0 starts with \[PAD\].*\[CLS\] token first"),
    "fp64 input to an fp32 encoder": (lambda: Encoder(CONFIG)(torch.randn(2, 5, 16, dtype=torch.float64)),
                                      CourseTypeError, r"float32 weights but x is torch.float64.*model.double\(\)"),
    "ids passed to the encoder": (lambda: Encoder(CONFIG)(ids(2, 5, 16)), CourseTypeError, "embedding first"),
    "src/tgt batch mismatch": (lambda: seq2seq()(ids(2, 5), ids(3, 4)), CourseValueError,
                               "batch sizes disagree: src_ids has 2, tgt_in_ids has 3"),
    "wrong cache object": (lambda: seq2seq().decode(ids(2, 1), torch.zeros(2, 5, 16), ids(2, 5), cache={}),
                           CourseTypeError, r"cache must be a list of 1.*new_cache\(\)"),
    "cache of another batch": (lambda: cache_of_another_batch(), CourseValueError, "holds keys for 2 rows but"),
    "positions past max_len in decode": (lambda: seq2seq().decode(ids(1, 9), torch.zeros(1, 5, 16), ids(1, 5)),
                                         CourseValueError, "exceed max_len=8"),
    "negative positional offset": (lambda: SinusoidalPositionalEncoding(16, 8)(torch.zeros(1, 3, 16), offset=-1),
                                   CourseValueError, "offset must be an int >= 0"),
}


def cache_of_another_batch():
    model = seq2seq()
    cache = model.new_cache()
    model.decode(ids(2, 1), model.encode(ids(2, 5)), ids(2, 5), cache)
    model.decode(ids(3, 1), model.encode(ids(3, 5)), ids(3, 5), cache)


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_call_raises_a_course_error_that_names_the_fix(case):
    call, error, message = BAD_CALLS[case]
    with pytest.raises(error, match=message) as caught:
        call()
    assert isinstance(caught.value, CourseError)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32])
@pytest.mark.parametrize("name", list(MODELS))
def test_any_integer_dtype_of_ids_gives_the_same_output(name, dtype):
    build, call = MODELS[name]
    torch.manual_seed(0)
    model = build().eval()
    batch = torch.tensor([[2, 8, 9, 0], [2, 10, 11, 12]])
    torch.testing.assert_close(call(model, batch.to(dtype)), call(model, batch), rtol=0, atol=0)
