"""Bad input gets a clear error that names the fix; fully padded input stays finite."""
import pytest
import torch
import torch.nn as nn

from course_utils.attention import MultiHeadAttention, scaled_dot_product_attention
from course_utils.config import TransformerConfig
from course_utils.decoding import beam_search, generate, greedy_decode, length_penalty
from course_utils.embedding import TokenEmbedding
from course_utils.errors import CourseError, CourseTypeError, CourseValueError
from course_utils.kv_cache import KVCache
from course_utils.language_model import DecoderOnlyLM
from course_utils.layers import DecoderLayer, EncoderLayer
from course_utils.losses import classification_loss, masked_lm_loss, translation_loss
from course_utils.mlm import UnigramBaseline, mask_tokens
from course_utils.models import Encoder, InputEmbedding, MaskedLanguageModel, Seq2SeqTransformer, TransformerClassifier
from course_utils.modern import rotate_half
from course_utils.plotting import plot_history
from course_utils.positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding
from course_utils.runtime import seed_everything, set_threads
from course_utils.tokenization import BOS_ID, EOS_ID, WordTokenizer
from course_utils.training import fit, make_loader, train_lm
from course_utils.widgets import draw_attention

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
        attention(x, x, x, torch.ones(2, 1, 1, 4, dtype=torch.bool))
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
    build, call = MODELS[name]
    ids = torch.tensor([[3, 4, 5, 0], [0, 0, 0, 0]])
    out = call(build().to(dtype), ids)
    assert torch.isfinite(out.float()).all()


# ---------------------------------------------------------------- every case of the hardening issue, as a table
def seq2seq():
    return Seq2SeqTransformer(CONFIG).eval()


def gpt():
    return DecoderOnlyLM(CONFIG).eval()


def ids(*shape, high=20, dtype=torch.long):
    return torch.randint(7, high, shape, generator=torch.Generator().manual_seed(0)).to(dtype)


BAD_CALLS = {  # case: (call, expected error class, message pattern)
    "plot_history of a plain dict (was AttributeError)": (
        lambda: plot_history({"train_loss": [1.0, 0.5]}), CourseTypeError, "expects the History that fit returns"),
    "draw_attention of head 5 on 2 heads (was IndexError)": (
        lambda: draw_attention(["a", "b"], torch.rand(2, 2, 2), head=5), CourseValueError, r"head index in \[0, 2\)"),
    "length_penalty of a negative length (was accepted)": (
        lambda: length_penalty(torch.tensor([3, -1]), 0.6), CourseValueError, "length must be >= 0"),
    "WordTokenizer.train on whitespace only (was accepted)": (
        lambda: WordTokenizer.train(["   ", "\n\t"]), CourseValueError, "found no word"),
    "scaled_dot_product_attention with float64 query, float32 key/value (was silently promoted)": (
        lambda: scaled_dot_product_attention(torch.rand(1, 2, 3, dtype=torch.float64), torch.rand(1, 2, 3),
                                             torch.rand(1, 2, 3)), CourseTypeError, "must have one dtype"),
    "fit with a per-example loss (was 'Boolean value of Tensor')": (
        lambda: fit(nn.Linear(3, 1), [(torch.ones(2, 3), torch.zeros(2, 1))],
                    lambda model, batch: (model(batch[0]) - batch[1]).pow(2), progress=False),
        CourseTypeError, "must return a scalar"),
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
                                       r"positional must be one of \('sinusoidal', 'learned', 'rope'\), "
                                       r"got 'sinusiodal'"),
    "TokenEmbedding negative vocab": (lambda: TokenEmbedding(-3, 4), CourseValueError,
                                      "vocab_size must be an int >= 1"),
    "TokenEmbedding zero d_model": (lambda: TokenEmbedding(10, 0), CourseValueError, "d_model must be an int >= 1"),
    "MultiHeadAttention n_heads=0": (lambda: MultiHeadAttention(16, 0), CourseValueError,
                                     "n_heads must be an int >= 1"),
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
                           CourseTypeError,
                           r"cache must be a KVCache with cross-attention entries for 1 layers.*new_cache\(\)"),
    "cache of another batch": (lambda: cache_of_another_batch(), CourseValueError, "holds keys for 2 rows but"),
    "positions past max_len in decode": (lambda: seq2seq().decode(ids(1, 9), torch.zeros(1, 5, 16), ids(1, 5)),
                                         CourseValueError, "exceed the context of max_len=8"),
    "negative positional offset": (lambda: SinusoidalPositionalEncoding(16, 8)(torch.zeros(1, 3, 16), offset=-1),
                                   CourseValueError, "offset must be an int >= 0"),
    "a decoder-only cache handed to the translator": (
        lambda: seq2seq().decode(ids(2, 1), torch.zeros(2, 5, 16), ids(2, 5), cache=KVCache(1)),
        CourseTypeError, r"cache must be a KVCache with cross-attention entries"),
    "float max_new_tokens": (lambda: greedy_decode(seq2seq(), ids(2, 5), BOS_ID, EOS_ID, 5.0), CourseTypeError,
                             "max_new_tokens must be an int, got 5.0"),
    "float beam_size": (lambda: beam_search(seq2seq(), ids(2, 5), BOS_ID, EOS_ID, 5, beam_size=2.0), CourseTypeError,
                        "beam_size must be an int, got 2.0"),
    "max_new_tokens past max_len": (lambda: greedy_decode(seq2seq(), ids(2, 5), BOS_ID, EOS_ID, 9), CourseValueError,
                                    "max_new_tokens=9 exceeds the model's max_len=8"),
    "source past max_len": (lambda: beam_search(seq2seq(), ids(1, 9), BOS_ID, EOS_ID, 3), CourseValueError,
                            "sequence length 9 exceeds max_len=8"),
    "decode with a non-model": (lambda: greedy_decode("model", ids(2, 5), BOS_ID, EOS_ID, 3), CourseTypeError,
                                "encoder–decoder nn.Module with encode/decode/new_cache"),
    "fit(epochs=0)": (lambda: fit(nn.Linear(2, 1), [torch.zeros(1, 2)], lambda m, b: m(b).sum(), epochs=0,
                                  progress=False), CourseValueError, "epochs must be >= 1"),
    "fit on an empty list": (lambda: fit(nn.Linear(2, 1), [], lambda m, b: m(b).sum(), progress=False),
                             CourseValueError, "train_batches is empty"),
    "fit(lr=-1)": (lambda: fit(nn.Linear(2, 1), [torch.zeros(1, 2)], lambda m, b: m(b).sum(), lr=-1.0,
                               progress=False), CourseValueError, r"lr must lie in \(0.0, inf\)"),
    "make_loader(batch_size=0)": (lambda: make_loader(torch.zeros(4, 2), batch_size=0), CourseValueError,
                                  "batch_size must be an int >= 1"),
    "unigram baseline out-of-range id": (lambda: UnigramBaseline([[7, 25]], vocab_size=20), CourseValueError,
                                         r"outside the vocabulary \[0, 20\)"),
    "mask_tokens with float ids": (lambda: mask_tokens(torch.rand(2, 5), 20), CourseTypeError, "must be integers"),
    "masked_lm_loss with labels outside the logits": (lambda: masked_lm_loss(torch.zeros(1, 3, 20),
                                                                             torch.tensor([[25, -100, 8]])),
                                                      CourseValueError, r"labels must be ids in \[0, 20\)"),
    "set_threads(0)": (lambda: set_threads(0), CourseValueError, "n_threads must be an int >= 1"),
    "train_lm on a next token outside the model's vocabulary": (
        lambda: train_lm(gpt(), [[8, 10_000]], steps=1), CourseValueError,
        r"next-token targets must be ids in \[0, 20\).*vocab_size >= 10001"),
    "classification labels as floats": (lambda: classification_loss(TransformerClassifier(CONFIG, 3),
                                                                    (ids(2, 5), torch.tensor([0.0, 2.0]))),
                                        CourseTypeError, r"labels must be integers.*labels.long\(\)"),
    "a class label the classifier has no logit for": (
        lambda: classification_loss(TransformerClassifier(CONFIG, 3), (ids(2, 5), torch.tensor([0, 3]))),
        CourseValueError, r"labels must lie in \[0, 3\) — the model scores 3 classes"),
    "translation loss on an empty batch": (lambda: translation_loss(seq2seq(), (ids(0, 5), ids(0, 4))),
                                           CourseValueError, "empty batch"),
    "translation loss with label_smoothing=1": (lambda: translation_loss(seq2seq(), (ids(2, 5), ids(2, 4)), 1.0),
                                                CourseValueError, r"label_smoothing must lie in \[0.0, 1.0\)"),
    "a decoder-only cache for another number of layers": (lambda: gpt()(ids(2, 3), cache=KVCache(2)),
                                                          CourseTypeError, "cache must be a KVCache for 1 layers"),
    "generate with an eos_id outside the vocabulary": (lambda: generate(gpt(), ids(2, 3), 2, eos_id=20),
                                                       CourseValueError, r"eos_id=20 must be a valid id in \[0, 20\)"),
    "cache.reorder with float rows": (lambda: KVCache(1).reorder(torch.tensor([1.0, 0.0])), CourseTypeError,
                                      "rows must be integer row indices"),
    "rotate_half of an odd width": (lambda: rotate_half(torch.zeros(2, 5)), CourseValueError,
                                    r"shape \(..., d\) with an even d"),
    "seed_everything(-1)": (lambda: seed_everything(-1), CourseValueError, r"seed must lie in \[0, 2\*\*32\)"),
}


def test_greedy_decode_checks_max_len_before_decoding_a_single_step():
    model = seq2seq()
    calls = []
    model.decode = lambda *args, **kwargs: calls.append(args)  # would record every decoding step
    with pytest.raises(CourseValueError, match="exceeds the model's max_len"):
        greedy_decode(model, ids(2, 5), BOS_ID, EOS_ID, max_new_tokens=50)
    assert calls == []


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


def silent_batch_equals_seq_mask():
    batch_ids = torch.tensor([[8, 9, 10, 0], [8, 9, 0, 0], [8, 9, 10, 11], [8, 0, 0, 0]])  # batch == seq == 4
    EncoderLayer(16, 4, 32, dropout=0.0).eval()(torch.randn(4, 4, 16), batch_ids != 0)


def mask_that_enlarges_the_batch():
    x = torch.randn(1, 5, 16)
    MultiHeadAttention(16, 4).eval()(x, x, x, torch.ones(3, 1, 1, 5, dtype=torch.bool))


def copy_from_bias_free_attention():
    from course_utils.reference import copy_attention
    copy_attention(MultiHeadAttention(16, 4), torch.nn.MultiheadAttention(16, 4, bias=False, batch_first=True))


def copy_across_norm_placement():
    from course_utils.reference import copy_encoder_layer
    copy_encoder_layer(EncoderLayer(16, 4, 32, norm="post"),
                       torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=True))


def pad_batch_call(*args, **kwargs):
    from course_utils.tokenization import pad_batch
    return lambda: pad_batch(*args, **kwargs)


ISSUE_CASES_IN_ATTENTION_AND_TOKENIZATION = {  # case: (call, may it work instead of raising a course error?)
    "a (batch, seq) mask when batch == seq": (silent_batch_equals_seq_mask, False),
    "a mask that enlarges the batch": (mask_that_enlarges_the_batch, False),
    "copy from nn.MultiheadAttention(bias=False)": (copy_from_bias_free_attention, True),
    "copy across a norm_first mismatch": (copy_across_norm_placement, False),
    "pad_batch with float ids": (pad_batch_call([[7.5, 8.2]]), False),
    "pad_batch with a negative max_len": (pad_batch_call([[7, 8, 9]], max_len=-1), False),
}


@pytest.mark.parametrize("case", list(ISSUE_CASES_IN_ATTENTION_AND_TOKENIZATION))
def test_issue_cases_in_attention_and_tokenization_raise_a_course_error(case):
    call, may_work = ISSUE_CASES_IN_ATTENTION_AND_TOKENIZATION[case]
    try:
        call()
    except CourseError:
        return
    assert may_work, f"{case}: accepted silently"
