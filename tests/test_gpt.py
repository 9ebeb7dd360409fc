"""The decoder-only language model of lesson 08: equal to the encoder layer under a causal mask (and to PyTorch's),
no look-ahead, KV cache equal to full recompute, the LM task's shift / loss / batches, and bad input refused."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.config import TransformerConfig
from course_utils.data.lm_data import encode_documents, lm_batches, lm_training_batches, split_documents
from course_utils.decoding import distinct_ngram_ratio, sample_perplexity
from course_utils.errors import CourseTypeError, CourseValueError
from course_utils.kv_cache import KVCache
from course_utils.language_model import DecoderOnlyBlock, DecoderOnlyLM, NeuralBigramLM, ladder_rungs
from course_utils.layers import EncoderLayer
from course_utils.losses import lm_loss, shift_for_lm
from course_utils.masks import causal_mask
from course_utils.reference import copy_encoder_layer
from course_utils.tokenization import BOS_ID, EOS_ID, PAD_ID
from course_utils.training import evaluate_lm, train_lm

CONFIG = dict(vocab_size=40, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=24, dropout=0.0)
FAST = settings(max_examples=25, deadline=None)


def build(**overrides) -> DecoderOnlyLM:
    torch.manual_seed(0)
    kwargs = {**CONFIG, **overrides}
    tie = kwargs.pop("tie_weights", True)
    residual = kwargs.pop("with_residual", True)
    feed_forward = kwargs.pop("with_feed_forward", True)
    return DecoderOnlyLM(TransformerConfig(**kwargs), tie, residual, feed_forward).eval()


def random_ids(batch, seq, seed=0, low=7):
    return torch.randint(low, CONFIG["vocab_size"], (batch, seq), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_block_is_the_encoder_layer_with_a_causal_mask(norm):
    block = DecoderOnlyBlock(16, 2, 32, dropout=0.0, norm=norm).eval()
    layer = EncoderLayer(16, 2, 32, dropout=0.0, norm=norm).eval()
    layer.load_state_dict(block.state_dict())  # same parameter names
    x = torch.randn(3, 7, 16)
    torch.testing.assert_close(block(x, causal_mask(7)), layer(x, causal_mask(7)))


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_block_equals_pytorch_encoder_layer_with_causal_mask(norm):
    theirs = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=norm == "pre").eval()
    layer = EncoderLayer(16, 2, 32, dropout=0.0, norm=norm).eval()
    copy_encoder_layer(layer, theirs)
    block = DecoderOnlyBlock(16, 2, 32, dropout=0.0, norm=norm).eval()
    block.load_state_dict(layer.state_dict())
    x = torch.randn(2, 9, 16)
    blocked = nn.Transformer.generate_square_subsequent_mask(9)  # float, -inf above the diagonal
    torch.testing.assert_close(block(x, causal_mask(9)), theirs(x, src_mask=blocked, is_causal=True),
                               atol=1e-5, rtol=1e-5)


@FAST
@given(seq=st.lists(st.integers(7, CONFIG["vocab_size"] - 1), min_size=2, max_size=20),
       cut=st.integers(0, 18), seed=st.integers(0, 2**16), norm=st.sampled_from(["post", "pre"]),
       positional=st.sampled_from(["sinusoidal", "learned"]))
def test_future_tokens_never_change_earlier_logits(seq, cut, seed, norm, positional):
    cut = min(cut, len(seq) - 2)
    changed = list(seq)
    generator = torch.Generator().manual_seed(seed)
    for i in range(cut + 1, len(seq)):
        changed[i] = int(torch.randint(7, CONFIG["vocab_size"], (1,), generator=generator))
    model = build(norm=norm, positional=positional)
    with torch.no_grad():
        before = model(torch.tensor([seq]))[:, :cut + 1]
        after = model(torch.tensor([changed]))[:, :cut + 1]
    torch.testing.assert_close(before, after)


def test_without_the_causal_mask_the_future_does_leak():
    """The property above can fail: a bidirectional mask lets a later token change position 0's output."""
    block = DecoderOnlyBlock(16, 2, 32, dropout=0.0).eval()
    x = torch.randn(1, 6, 16)
    changed = x.clone()
    changed[:, -1] = torch.randn(16)
    assert not torch.allclose(block(x)[:, 0], block(changed)[:, 0])
    torch.testing.assert_close(block(x, causal_mask(6))[:, 0], block(changed, causal_mask(6))[:, 0])


def test_right_padding_does_not_change_real_positions():
    model = build()
    ids = random_ids(1, 6)
    padded = torch.cat([ids, torch.full((1, 4), PAD_ID)], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(model(ids), model(padded)[:, :6])


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_kv_cache_equals_full_recompute(norm, positional):
    model = build(norm=norm, positional=positional)
    ids = random_ids(3, 10)
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache()
        pieces = [model(ids[:, :4], cache)]  # a prompt, then one token at a time
        for t in range(4, 10):
            pieces.append(model(ids[:, t:t + 1], cache))
    assert cache.length == 10 and cache.batch_size == 3
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-5)


def test_tied_output_layer_shares_the_embedding_matrix():
    tied, untied = build(tie_weights=True), build(tie_weights=False)
    assert tied.lm_head.weight is tied.embedding.tokens.weight
    saved = sum(p.numel() for p in untied.parameters()) - sum(p.numel() for p in tied.parameters())
    assert saved == CONFIG["vocab_size"] * CONFIG["d_model"]


def test_final_norm_only_for_pre_ln():
    assert isinstance(build(norm="pre").norm, nn.LayerNorm)
    assert isinstance(build(norm="post").norm, nn.Identity)


def test_ladder_rungs_have_the_named_pieces():
    no_residual = build(with_residual=False, with_feed_forward=False, n_layers=1)
    block = no_residual.blocks[0]
    assert block.feed_forward is None and not hasattr(block, "attn_block")
    assert no_residual(random_ids(2, 5)).shape == (2, 5, CONFIG["vocab_size"])
    bigram = NeuralBigramLM(CONFIG["vocab_size"])
    ids = random_ids(1, 5)
    torch.testing.assert_close(bigram(ids)[0, 2], bigram(ids[:, 2:3])[0, 0])  # sees only the current token


def test_ladder_rungs_add_one_piece_each():
    config = TransformerConfig(**{**CONFIG, "positional": "rope", "activation": "swiglu", "n_kv_heads": 1})
    rungs = ladder_rungs(config, more_layers=3)
    assert list(rungs) == ["bigram", "+ one attention head", "+ multi-head (2)", "+ feed-forward",
                           "+ residual & LayerNorm", "+ more layers (3)"]
    models = {name: build_rung() for name, build_rung in rungs.items()}
    assert isinstance(models["bigram"], NeuralBigramLM)
    one_head, multi_head, feed_forward, residual, deeper = (models[n] for n in list(rungs)[1:])
    assert one_head.blocks[0].self_attn.n_heads == 1 and multi_head.blocks[0].self_attn.n_heads == 2
    assert all(len(m.blocks) == 1 for m in (one_head, multi_head, feed_forward, residual)) and len(deeper.blocks) == 3
    assert multi_head.blocks[0].feed_forward is None and feed_forward.blocks[0].feed_forward is not None
    assert not feed_forward.blocks[0].with_residual and residual.blocks[0].with_residual
    assert all(m.blocks[0].self_attn.rope_base is not None for m in (one_head, residual))   # the config's switches
    assert rungs["+ one attention head"]() is not one_head                                 # a fresh model per call


def test_train_lm_trains_on_lm_training_batches():
    sequences = [[BOS_ID] + [7 + (i + j) % 5 for j in range(1 + i % 6)] + [EOS_ID] for i in range(20)]
    batches = lm_training_batches(sequences, steps=7, batch_size=8, seed=3)
    assert len(batches) == 7                                               # 3 batches an epoch, the third cut
    epochs = [lm_batches(sequences, 8, seed=3 + epoch) for epoch in range(3)]
    assert all(torch.equal(a, b) for a, b in zip(batches, [b for epoch in epochs for b in epoch]))
    losses_seen = []
    model = build(n_layers=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("course_utils.training.lm_loss", lambda m, batch: losses_seen.append(batch) or lm_loss(m, batch))
        train_lm(model, sequences, steps=7, batch_size=8, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(losses_seen, batches)) and len(losses_seen) == 7


def test_shift_and_loss():
    ids = torch.tensor([[BOS_ID, 9, 10, EOS_ID, PAD_ID], [BOS_ID, 11, 12, 13, EOS_ID]])
    inputs, targets = shift_for_lm(ids)
    assert torch.equal(inputs, ids[:, :-1]) and torch.equal(targets, ids[:, 1:])
    model = build()
    logits = model(inputs)
    keep = targets != PAD_ID
    expected = F.cross_entropy(logits[keep], targets[keep])
    torch.testing.assert_close(lm_loss(model, ids), expected)
    result = evaluate_lm(model, [ids])
    assert result["n_tokens"] == 7
    assert math.isclose(result["perplexity"], math.exp(expected.item()), rel_tol=1e-5)


def test_split_documents_by_blocks_is_a_partition():
    docs = [f"document {i}" for i in range(205)]
    train, val, test = split_documents(docs, block_size=10, seed=3)
    assert sorted(train + val + test) == sorted(docs)
    assert not set(train) & set(val) and not set(val) & set(test)
    assert len(val) >= 10 and len(test) >= 10
    index = {d: i for i, d in enumerate(docs)}
    assert all(index[d] // 10 == index[val[0]] // 10 for d in val[:10])  # whole blocks


def test_encode_and_batch():
    class Bytes:
        def encode(self, text):
            return [7 + b for b in text.encode()]
    sequences = encode_documents(Bytes(), ["ab", "abcdef", "a"], max_len=4)
    assert sequences[0] == [BOS_ID, 7 + 97, 7 + 98, EOS_ID]
    assert len(sequences[1]) == 5 and sequences[1][-1] != EOS_ID  # cut at max_len + 1
    batches = lm_batches(sequences, batch_size=2, seed=0)
    rows = sorted(tuple(x for x in row.tolist() if x != PAD_ID) for b in batches for row in b)
    assert rows == sorted(tuple(s) for s in sequences)


@pytest.mark.parametrize("call, error, phrase", [
    (lambda m: m(torch.zeros(2, 30, dtype=torch.long) + 7), CourseValueError, "max_len"),
    (lambda m: m(torch.rand(2, 3)), CourseTypeError, "integers"),
    (lambda m: m(torch.tensor([7, 8])), CourseValueError, "unsqueeze"),
    (lambda m: m(random_ids(2, 3), cache={}), CourseTypeError, "KVCache"),
])
def test_bad_model_input(call, error, phrase):
    with pytest.raises(error, match=phrase):
        call(build())


def test_cache_for_another_batch_is_refused():
    model = build()
    cache = model.new_cache()
    model(random_ids(2, 3), cache)
    with pytest.raises(CourseValueError, match="new_cache"):
        model(random_ids(3, 1), cache)


def test_cache_overflowing_the_context_is_refused():
    model = build()
    cache = model.new_cache()
    model(random_ids(1, 20), cache)
    with pytest.raises(CourseValueError, match="max_len"):
        model(random_ids(1, 5), cache)


def test_kv_cache_class():
    assert KVCache(2).length == 0 and KVCache(2).batch_size is None
    with pytest.raises(CourseValueError):
        KVCache(-1)


def test_bad_task_input():
    with pytest.raises(CourseValueError, match="at least 2 tokens"):
        shift_for_lm(torch.tensor([[BOS_ID]]))
    with pytest.raises(CourseValueError, match="padding"):
        evaluate_lm(build(), [torch.tensor([[BOS_ID, PAD_ID]])])
    with pytest.raises(CourseValueError, match="blocks"):
        split_documents(["a", "b"], block_size=1)
    with pytest.raises(CourseValueError, match="nothing for the test"):
        split_documents(["a"] * 50, fractions=(0.6, 0.4))
    with pytest.raises(CourseValueError, match="no sequences"):
        lm_batches([], 4)


def test_train_lm_runs_exactly_the_steps_and_learns():
    sequences = [[BOS_ID] + [7 + (i + j) % 5 for j in range(6)] + [EOS_ID] for i in range(40)]
    model = build(n_layers=1)
    before = evaluate_lm(model, lm_batches(sequences, 8, shuffle=False))["loss"]
    history = train_lm(model, sequences, steps=30, batch_size=8, lr=1e-2, warmup_steps=3,
                       validation=lm_batches(sequences, 8, shuffle=False), eval_every=10)
    assert len(history.train_loss) == 30 and [s for s, _ in history.evaluations] == [10, 20, 30]
    assert history.final["loss"] < before - 0.5
    assert history.cpu_seconds > 0 and history.seconds > 0


def test_distinct_ngrams_and_sample_perplexity():
    assert distinct_ngram_ratio([[1, 2, 1, 2, 1]], 2) == 0.5
    assert distinct_ngram_ratio([[1, 2, 3]], 1) == 1.0
    with pytest.raises(CourseValueError, match="no 2-grams"):
        distinct_ngram_ratio([[1]], 2)
    model = build()
    ids = random_ids(2, 8)
    with torch.no_grad():
        log_probs = torch.log_softmax(model(ids[:, :-1]), -1).gather(-1, ids[:, 1:, None])[:, 2:]
    assert math.isclose(sample_perplexity(model, ids, 3), math.exp(-log_probs.mean().item()), rel_tol=1e-5)
