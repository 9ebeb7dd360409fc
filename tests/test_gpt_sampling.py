"""Sampling from the language model (lesson 08): each filter keeps exactly the right tokens, greedy is the limit of
low temperature, a seeded generator reproduces, the KV cache changes nothing, bad arguments get course errors."""
import math

import pytest
import torch

from course_utils.config import TransformerConfig
from course_utils.decoding import (
    apply_repetition_penalty,
    apply_temperature,
    generate,
    next_token_logits,
    top_k_filter,
    top_p_filter,
)
from course_utils.errors import CourseTypeError, CourseValueError
from course_utils.language_model import DecoderOnlyLM
from course_utils.tokenization import BOS_ID, PAD_ID

PROBS = torch.tensor([[0.05, 0.5, 0.15, 0.3]])  # ranked: id 1 (0.5), id 3 (0.3), id 2 (0.15), id 0 (0.05)
LOGITS = PROBS.log()


def kept(logits):
    return set(torch.isfinite(logits[0]).nonzero().flatten().tolist())


def model():
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=32, dropout=0.0)
    return DecoderOnlyLM(config).eval()


PROMPT = torch.tensor([[5, 9, 12], [5, 20, 21]])


@pytest.mark.parametrize("k, expected", [(1, {1}), (2, {1, 3}), (3, {1, 2, 3}), (4, {0, 1, 2, 3}), (10, {0, 1, 2, 3})])
def test_top_k_keeps_the_k_most_probable(k, expected):
    assert kept(top_k_filter(LOGITS, k)) == expected


def test_top_k_keeps_exactly_k_under_ties():
    assert len(kept(top_k_filter(torch.zeros(1, 6), 2))) == 2


@pytest.mark.parametrize("p, expected", [(0.3, {1}), (0.5, {1}), (0.7, {1, 3}), (0.9, {1, 2, 3}),
                                         (0.97, {0, 1, 2, 3}), (1.0, {0, 1, 2, 3})])
def test_top_p_keeps_the_smallest_set_reaching_p(p, expected):
    assert kept(top_p_filter(LOGITS, p)) == expected


def test_filters_keep_the_kept_logits_unchanged():
    filtered = top_p_filter(LOGITS, 0.7)
    torch.testing.assert_close(filtered[0, [1, 3]], LOGITS[0, [1, 3]])


def test_temperature_reshapes_the_distribution():
    sharp = torch.softmax(apply_temperature(LOGITS, 0.5), -1)
    flat = torch.softmax(apply_temperature(LOGITS, 2.0), -1)
    torch.testing.assert_close(torch.softmax(apply_temperature(LOGITS, 1.0), -1), PROBS)
    assert sharp[0, 1] > PROBS[0, 1] > flat[0, 1]
    torch.testing.assert_close(sharp, PROBS ** 2 / (PROBS ** 2).sum())


def test_repetition_penalty_lowers_seen_tokens_only():
    logits = torch.tensor([[2.0, -1.0, 0.5]])
    out = apply_repetition_penalty(logits, torch.tensor([[0, 1]]), 2.0)
    torch.testing.assert_close(out, torch.tensor([[1.0, -2.0, 0.5]]))


def test_generate_cached_equals_uncached():
    lm = model()
    for kwargs in ({"temperature": 0.0}, {"temperature": 1.0, "top_k": 5}, {"temperature": 0.8, "top_p": 0.9,
                                                                            "repetition_penalty": 1.3}):
        cached = generate(lm, PROMPT, 12, generator=torch.Generator().manual_seed(1), use_cache=True, **kwargs)
        uncached = generate(lm, PROMPT, 12, generator=torch.Generator().manual_seed(1), use_cache=False, **kwargs)
        assert torch.equal(cached, uncached), kwargs


def test_greedy_picks_the_argmax_of_the_model():
    lm = model()
    out = generate(lm, PROMPT, 6, temperature=0.0)
    assert torch.equal(out[:, :3], PROMPT) and out.shape == (2, 9)
    with torch.no_grad():
        for t in range(3, 9):
            logits = lm(out[:, :t])[:, -1]
            logits[:, [PAD_ID, BOS_ID]] = float("-inf")                 # never generated
            assert torch.equal(out[:, t], logits.argmax(-1))


def small_vocabulary_model(seed: int = 0):
    """A model over 12 ids, so [PAD] (0) and [BOS] (1) carry real probability under sampling."""
    torch.manual_seed(seed)
    config = TransformerConfig(vocab_size=12, d_model=16, n_heads=2, d_ff=32, n_layers=2, max_len=40, dropout=0.0,
                               norm="pre")
    return DecoderOnlyLM(config).eval()


def test_pad_and_bos_are_never_generated_and_the_cache_changes_nothing_over_60_seeds():
    lm, prompt = small_vocabulary_model(), torch.tensor([[5, 7, 9], [8, 8, 3], [11, 2, 6]])
    for seed in range(60):
        cached = generate(lm, prompt, 20, generator=torch.Generator().manual_seed(seed))
        uncached = generate(lm, prompt, 20, generator=torch.Generator().manual_seed(seed), use_cache=False)
        assert torch.equal(cached, uncached), seed
        assert not torch.isin(cached[:, 3:], torch.tensor([PAD_ID, BOS_ID])).any(), seed


def test_forbidden_ids_can_be_chosen():
    lm, prompt = small_vocabulary_model(), torch.tensor([[5, 7, 9]])
    out = generate(lm, prompt, 30, forbidden_ids=[PAD_ID, BOS_ID, 4, 5], generator=torch.Generator().manual_seed(0))
    assert not torch.isin(out[:, 3:], torch.tensor([PAD_ID, BOS_ID, 4, 5])).any()
    with pytest.raises(CourseValueError, match="forbidden_ids"):
        generate(lm, prompt, 3, forbidden_ids=list(range(12)))
    with pytest.raises(CourseValueError, match=r"forbidden_ids\[0\]"):
        generate(lm, prompt, 3, forbidden_ids=[12])


def reference_next_token_probabilities(logits, previous_ids, temperature, top_k, top_p, penalty):
    """The documented pipeline, written from its definition one row at a time: [PAD] and [BOS] removed, every id
    already present (prompt and generated) penalised, divided by the temperature, the top-k kept, the nucleus kept."""
    rows = []
    for row, previous in zip(logits.double(), previous_ids.tolist()):
        row = row.clone()
        row[[PAD_ID, BOS_ID]] = float("-inf")
        for token in set(previous):
            row[token] = row[token] / penalty if row[token] > 0 else row[token] * penalty
        row = row / temperature
        if top_k is not None:
            threshold = row.sort(descending=True).values[min(top_k, row.numel()) - 1]
            row[row < threshold] = float("-inf")
        if top_p is not None:
            probs = torch.softmax(row, -1)
            order = probs.argsort(descending=True).tolist()
            mass, keep = 0.0, []
            for token in order:
                keep.append(token)
                mass += float(probs[token])
                if mass >= top_p:
                    break
            row[[t for t in range(row.numel()) if t not in keep]] = float("-inf")
        rows.append(torch.softmax(row, -1))
    return torch.stack(rows)


@pytest.mark.parametrize("temperature, top_k, top_p, penalty", [(1.0, None, None, 1.0), (0.7, None, None, 1.0),
                                                                 (1.4, 5, None, 1.0), (0.9, None, 0.8, 1.0),
                                                                 (1.2, 6, 0.9, 1.5), (0.5, None, None, 2.0)])
def test_generate_samples_from_the_documented_distribution(monkeypatch, temperature, top_k, top_p, penalty):
    """Every step's sampling distribution equals the pipeline written from its definition — on the model's own
    logits, at the temperature asked, with the penalty covering the tokens generated so far."""
    lm, prompt = small_vocabulary_model(seed=3), torch.tensor([[5, 7, 9], [8, 8, 3]])
    drawn = []
    original = torch.multinomial

    def recording(probs, *args, **kwargs):
        drawn.append(probs.clone())
        return original(probs, *args, **kwargs)

    monkeypatch.setattr(torch, "multinomial", recording)
    out = generate(lm, prompt, 6, temperature=temperature, top_k=top_k, top_p=top_p, repetition_penalty=penalty,
                   generator=torch.Generator().manual_seed(0))
    monkeypatch.undo()
    assert len(drawn) == 6
    with torch.no_grad():
        for step, probs in enumerate(drawn):
            seen = out[:, :3 + step]
            expected = reference_next_token_probabilities(lm(seen)[:, -1], seen, temperature, top_k, top_p, penalty)
            torch.testing.assert_close(probs.double(), expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("seed", range(8))
def test_top_p_of_one_keeps_every_token(seed):
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(4, 50, generator=generator) * 30       # some probabilities far below float32 resolution
    assert torch.isfinite(top_p_filter(logits, 1.0)).all()


def test_low_temperature_sampling_equals_greedy():
    lm = model()
    greedy = generate(lm, PROMPT, 10, temperature=0.0)
    cold = generate(lm, PROMPT, 10, temperature=1e-4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(greedy, cold)


def test_seeded_generator_reproduces_and_another_seed_differs():
    lm = model()
    runs = [generate(lm, PROMPT, 15, generator=torch.Generator().manual_seed(s)) for s in (7, 7, 8)]
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])


def test_top_k_1_is_greedy():
    lm = model()
    assert torch.equal(generate(lm, PROMPT, 8, top_k=1, generator=torch.Generator().manual_seed(3)),
                       generate(lm, PROMPT, 8, temperature=0.0))


def test_sampled_tokens_respect_the_filters():
    logits = torch.randn(1, 30)
    allowed = kept(next_token_logits(logits, torch.tensor([[0]]), temperature=1.0, top_k=4))
    samples = {int(torch.multinomial(torch.softmax(next_token_logits(logits, torch.tensor([[0]]), 1.0, 4), -1), 1))
               for _ in range(200)}
    assert samples <= allowed and len(allowed) == 4


def test_stops_at_eos_and_pads_after():
    lm = model()
    first = generate(lm, PROMPT, 6, temperature=0.0)
    eos = int(first[0, 3])  # the first generated token of row 0: pretend it is [EOS]
    out = generate(lm, PROMPT, 6, temperature=0.0, eos_id=eos)
    assert out[0, 3] == eos and (out[0, 4:] == PAD_ID).all()


@pytest.mark.parametrize("kwargs, error, phrase", [
    ({"temperature": -0.5}, CourseValueError, "temperature"),
    ({"temperature": math.nan}, CourseTypeError, "temperature"),
    ({"top_k": 0}, CourseValueError, "top_k"),
    ({"top_k": 2.5}, CourseTypeError, "top_k"),
    ({"top_p": 0.0}, CourseValueError, "top_p"),
    ({"top_p": 1.5}, CourseValueError, "top_p"),
    ({"repetition_penalty": 0.5}, CourseValueError, "repetition_penalty"),
    ({"generator": 0}, CourseTypeError, "Generator"),
    ({"use_cache": 1}, CourseTypeError, "use_cache"),
    ({"max_new_tokens": 0}, CourseValueError, "max_new_tokens"),
    ({"max_new_tokens": 40}, CourseValueError, "at most 29"),
])
def test_bad_arguments_get_course_errors(kwargs, error, phrase):
    kwargs = {"max_new_tokens": 4, **kwargs}
    with pytest.raises(error, match=phrase):
        generate(model(), PROMPT, **kwargs)


def test_bad_prompts_and_models():
    with pytest.raises(CourseValueError, match="padding id"):
        generate(model(), torch.tensor([[5, PAD_ID]]), 3)
    with pytest.raises(CourseValueError, match="unsqueeze"):
        generate(model(), torch.tensor([5, 6]), 3)
    with pytest.raises(CourseTypeError, match="DecoderOnlyLM"):
        generate(torch.nn.Linear(2, 2), PROMPT, 3)
    with pytest.raises(CourseValueError, match="rows, vocab"):
        top_k_filter(torch.zeros(4), 2)
    with pytest.raises(CourseValueError, match="temperature 0 means greedy"):
        apply_temperature(LOGITS, 0.0)
