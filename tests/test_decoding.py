"""Decoding: the KV cache changes nothing but the cost, beam width 1 is greedy, beam search finds the best-scored
hypothesis an exhaustive search finds."""
import itertools

import pytest
import torch

from course_utils import Seq2SeqTransformer, TransformerConfig, seed_everything
from course_utils.decoding import (
    beam_search,
    cross_attention_weights,
    forbid_special_tokens,
    greedy_decode,
    length_penalty,
    repeated_ngram_tokens,
    strip_after_eos,
)

PAD, BOS, EOS = 0, 5, 6


def make_model(seed: int, tgt_vocab_size: int = 12, eos_bias: float = 0.0) -> Seq2SeqTransformer:
    seed_everything(seed)
    config = TransformerConfig(vocab_size=20, tgt_vocab_size=tgt_vocab_size, d_model=32, n_heads=4, d_ff=64,
                               n_layers=2, max_len=32, dropout=0.0)
    model = Seq2SeqTransformer(config).eval()
    with torch.no_grad():
        model.generator.bias[EOS] += eos_bias  # makes rows stop at different steps
    return model


def source_batch(seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(7, 20, (6, 9), generator=generator)
    for row, length in enumerate([9, 7, 5, 3, 8, 1]):  # right padding of different lengths
        src[row, length:] = PAD
    return src


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("eos_bias", [0.0, 2.0])
def test_cached_greedy_equals_full_recompute(seed, eos_bias):
    model = make_model(seed, eos_bias=eos_bias)
    src = source_batch(seed)
    cached = greedy_decode(model, src, BOS, EOS, max_new_tokens=15, use_cache=True)
    full = greedy_decode(model, src, BOS, EOS, max_new_tokens=15, use_cache=False)
    assert torch.equal(cached, full)


def test_repeated_ngram_tokens():
    assert repeated_ngram_tokens([7, 8, 9, 7, 8], 3) == [9]
    assert repeated_ngram_tokens([7, 8, 9, 7, 8], 2) == [9]
    assert sorted(repeated_ngram_tokens([7, 8, 9], 1)) == [7, 8, 9]
    assert repeated_ngram_tokens([7, 8], 3) == []
    assert repeated_ngram_tokens([7, 8, 7, 9, 7], 2) == [8, 9]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_no_repeat_ngram_blocks_every_repeat(n):
    model = make_model(1)  # untrained: greedy output loops
    src = source_batch(1)
    plain = greedy_decode(model, src, BOS, EOS, max_new_tokens=15)
    blocked = greedy_decode(model, src, BOS, EOS, max_new_tokens=15, no_repeat_ngram_size=n)
    assert not torch.equal(plain, blocked), "the untrained model should repeat itself without the rule"
    for row in strip_after_eos(blocked, EOS):
        ngrams = [tuple(row[i:i + n]) for i in range(len(row) - n + 1)]
        assert len(ngrams) == len(set(ngrams))


def test_greedy_stops_and_pads_after_eos():
    model = make_model(0, eos_bias=2.0)
    out = greedy_decode(model, source_batch(0), BOS, EOS, max_new_tokens=15)
    assert out.shape[0] == 6 and out.shape[1] <= 15
    for row in out.tolist():
        assert BOS not in row
        if EOS in row:
            end = row.index(EOS)
            assert all(token == PAD for token in row[end + 1:])
        else:
            assert PAD not in row
    assert any(EOS in row for row in out.tolist()), "the EOS bias should stop some rows"


@pytest.mark.parametrize("seed", [0, 3])
def test_beam_width_one_is_greedy(seed):
    model = make_model(seed, eos_bias=1.5)
    src = source_batch(seed)
    greedy = greedy_decode(model, src, BOS, EOS, max_new_tokens=12)
    beam = beam_search(model, src, BOS, EOS, max_new_tokens=12, beam_size=1).best
    width = max(greedy.size(1), beam.size(1))
    pad = lambda t: torch.nn.functional.pad(t, (0, width - t.size(1)), value=PAD)  # noqa: E731
    assert torch.equal(pad(greedy), pad(beam))


def sequence_log_prob(model, src, sequence):
    """Teacher-forced log P(sequence | src) with the same forbidden tokens as the decoders."""
    tgt_in = torch.tensor([[BOS] + sequence[:-1]])
    logits = forbid_special_tokens(model(src, tgt_in)[0], BOS, PAD)
    return torch.log_softmax(logits, -1)[torch.arange(len(sequence)), sequence].sum()


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_wide_beam_matches_exhaustive_search(alpha):
    model = make_model(4, tgt_vocab_size=9, eos_bias=1.0)
    src = source_batch(4)[1:2]
    words = [t for t in range(9) if t not in (PAD, BOS, EOS)]  # 1, 2, 3, 4, 7, 8
    max_new = 3
    hypotheses = [list(p) + [EOS] for n in range(max_new) for p in itertools.product(words, repeat=n)]
    hypotheses += [list(p) for p in itertools.product(words, repeat=max_new)]  # cut off without EOS
    with torch.no_grad():
        scored = sorted(((sequence_log_prob(model, src, h) / length_penalty(torch.tensor(len(h)), alpha)).item(), h)
                        for h in hypotheses)
    best_score, best = scored[-1]
    assert scored[-2][0] < best_score - 1e-3  # a unique optimum, so the comparison below is meaningful
    beam = beam_search(model, src, BOS, EOS, max_new_tokens=max_new, beam_size=len(hypotheses), alpha=alpha)
    found = beam.best[0].tolist()
    found = found[: found.index(EOS) + 1] if EOS in found else found
    assert found == best
    assert beam.scores[0, 0].item() == pytest.approx(best_score, abs=1e-4)


def test_beam_scores_are_sorted_and_finite_for_real_hypotheses():
    model = make_model(1, eos_bias=1.0)
    out = beam_search(model, source_batch(1), BOS, EOS, max_new_tokens=10, beam_size=4)
    assert out.sequences.shape[:2] == (6, 4)
    assert torch.isfinite(out.scores).all()
    assert (out.scores[:, :-1] >= out.scores[:, 1:]).all()


def test_length_penalty_values():
    assert length_penalty(torch.tensor(1), 0.0).item() == 1.0
    assert length_penalty(torch.tensor(7), 1.0).item() == pytest.approx(2.0)


def test_cross_attention_weights_ignore_source_padding():
    model = make_model(2, eos_bias=1.0)
    src = source_batch(2)
    out = greedy_decode(model, src, BOS, EOS, max_new_tokens=8)
    maps = cross_attention_weights(model, src, out, BOS)
    assert sorted(maps) == ["decoder.layers.0.cross_attn", "decoder.layers.1.cross_attn"]
    weights = maps["decoder.layers.1.cross_attn"]
    assert weights.shape == (6, 4, out.size(1), src.size(1))
    real = (src != PAD)[:, None, None, :]
    assert torch.all(weights.masked_select(~real.expand_as(weights)) == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))


def test_strip_after_eos():
    assert strip_after_eos(torch.tensor([[7, 8, EOS, PAD], [9, 9, 9, 9]]), EOS) == [[7, 8], [9, 9, 9, 9]]


def test_bad_inputs_name_the_fix():
    model = make_model(0)
    with pytest.raises(ValueError, match=r"unsqueeze\(0\)"):
        greedy_decode(model, torch.tensor([7, 8, 9]), BOS, EOS, 5)
    with pytest.raises(TypeError, match="long tensor"):
        greedy_decode(model, torch.rand(2, 3), BOS, EOS, 5)
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(model, source_batch(0), BOS, EOS, 5, beam_size=0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        greedy_decode(model, source_batch(0), BOS, EOS, 0)


def reference_beam_search(model, src, beam_size, max_new_tokens, alpha):
    """Beam search written from its definition, one hypothesis at a time and without a cache: every live hypothesis is
    extended by every token ([BOS] and [PAD] excluded), a finished one only by [PAD] at no cost (it stops growing),
    the ``beam_size`` best by summed log-probability survive; at the end each is scored by
    ``log P / length_penalty(length up to and including [EOS])``. Returns ``[(score, log_prob, tokens)]``, best
    first."""
    memory = model.encode(src)
    beams = [([], 0.0, False)]
    for _ in range(max_new_tokens):
        candidates = []
        for tokens, log_prob, finished in beams:
            if finished:
                candidates.append((tokens + [PAD], log_prob, True))
                continue
            prefix = torch.tensor([[BOS] + tokens])
            logits = model.decode(prefix, memory, src)[0, -1].double()
            logits[[BOS, PAD]] = float("-inf")
            step = torch.log_softmax(logits, -1)
            candidates += [(tokens + [token], log_prob + float(step[token]), token == EOS)
                           for token in range(step.numel()) if token not in (BOS, PAD)]
        beams = sorted(candidates, key=lambda c: c[1], reverse=True)[:beam_size]
        if all(finished for _, _, finished in beams):
            break
    scored = []
    for tokens, log_prob, _ in beams:
        length = len([t for t in tokens if t != PAD])
        scored.append((log_prob / length_penalty(torch.tensor(length), alpha).item(), log_prob, tokens))
    return sorted(scored, key=lambda s: s[0], reverse=True)


@pytest.mark.parametrize("seed, beam_size, alpha", [(0, 2, 0.6), (1, 3, 0.0), (2, 4, 1.0), (3, 3, 0.6), (5, 2, 2.0)])
def test_beam_search_equals_its_definition(seed, beam_size, alpha):
    """Finished hypotheses stop growing and keep their score, lengths count up to [EOS], and a hypothesis that ended
    early is ranked against the longer ones by the length-penalised score — for every row and every beam."""
    model = make_model(seed, tgt_vocab_size=10, eos_bias=1.5)
    src = source_batch(seed)[:3]
    out = beam_search(model, src, BOS, EOS, max_new_tokens=7, beam_size=beam_size, alpha=alpha)
    with torch.no_grad():
        for row in range(src.size(0)):
            expected = reference_beam_search(model, src[row:row + 1], beam_size, 7, alpha)
            for beam, (score, log_prob, tokens) in enumerate(expected):
                got = out.sequences[row, beam].tolist()
                assert got[:len(tokens)] == tokens and set(got[len(tokens):]) <= {PAD}, (row, beam)
                assert out.scores[row, beam].item() == pytest.approx(score, abs=1e-4)
                assert out.log_probs[row, beam].item() == pytest.approx(log_prob, abs=1e-4)
