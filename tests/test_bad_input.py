"""Bad input gets a clear error that names the fix; fully padded input stays finite."""
import pytest
import torch

from course_utils.attention import MultiHeadAttention, scaled_dot_product_attention
from course_utils.config import TransformerConfig
from course_utils.embedding import TokenEmbedding
from course_utils.layers import DecoderLayer, EncoderLayer
from course_utils.models import Encoder, MaskedLanguageModel, Seq2SeqTransformer, TransformerClassifier
from course_utils.positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding

CONFIG = TransformerConfig(vocab_size=20, d_model=16, n_heads=4, d_ff=32, n_layers=1, max_len=8, dropout=0.0)
MODELS = {  # name: (build, call with token ids)
    "classifier": (lambda: TransformerClassifier(CONFIG, n_classes=3), lambda model, ids: model(ids)),
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
@pytest.mark.parametrize("name", list(MODELS))
def test_fully_padded_sequence_gives_finite_outputs(name, dtype):
    torch.manual_seed(0)
    build, call = MODELS[name]
    ids = torch.tensor([[3, 4, 5, 0], [0, 0, 0, 0]])
    out = call(build().to(dtype), ids)
    assert torch.isfinite(out.float()).all()
