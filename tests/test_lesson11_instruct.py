"""Lesson 11: the chat template, the response-only loss and the DPO loss equal their definitions on random inputs;
the reference model stays frozen; the grown vocabulary keeps the base model's logits; bad input gets course errors;
the data is split by module."""
import copy
import random

import pytest
import torch
import torch.nn.functional as F

from course_utils import losses
from course_utils.config import TransformerConfig
from course_utils.data import stdlib_qa
from course_utils.errors import CourseError
from course_utils.instruct import (
    ChatTokenizer,
    chat_batch,
    frozen_copy,
    grow_vocabulary,
    load_base_gpt,
    preference_batch,
    preference_metrics,
    response_scores,
    train_dpo,
    train_sft,
)
from course_utils.language_model import DecoderOnlyLM
from course_utils.tokenization import BOS_ID, EOS_ID, PAD_ID


@pytest.fixture(scope="module")
def base():
    return load_base_gpt()


@pytest.fixture(scope="module")
def tokenizer(base):
    return ChatTokenizer(base[1])


def tiny_model(vocab_size=30, seed=0):
    torch.manual_seed(seed)
    return DecoderOnlyLM(TransformerConfig(vocab_size=vocab_size, d_model=16, n_heads=2, d_ff=24, n_layers=1,
                                           max_len=40, dropout=0.0, norm="pre", positional="rope",
                                           activation="swiglu"))


def logprobs_by_definition(logits, targets, mask):
    """log p of each row's masked targets, one position at a time (float64)."""
    rows = []
    for b in range(logits.size(0)):
        total = torch.zeros((), dtype=torch.float64)
        for t in range(logits.size(1)):
            if mask[b, t]:
                total += torch.log(torch.softmax(logits[b, t].double(), -1)[targets[b, t]])
        rows.append(total)
    return torch.stack(rows)


def test_sequence_logprobs_is_the_sum_over_the_masked_positions_only():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 7, 11, generator=g) * 3
    targets = torch.randint(0, 11, (3, 7), generator=g)
    mask = torch.rand(3, 7, generator=g) > 0.4
    got = losses.sequence_logprobs(logits, targets, mask)
    torch.testing.assert_close(got.double(), logprobs_by_definition(logits, targets, mask), rtol=1e-5, atol=1e-5)
    # what stands at unmasked positions (padding, prompt) changes nothing
    other = logits.clone()
    other[~mask] = torch.randn(int((~mask).sum()), 11, generator=g) * 10
    torch.testing.assert_close(losses.sequence_logprobs(other, targets, mask), got)


def test_chat_template_and_response_mask(tokenizer):
    ids, n_prompt = tokenizer.chat_ids("What does textwrap.dedent do?", "Remove common leading whitespace.")
    assert ids[:2] == [BOS_ID, tokenizer.user_id] and ids[n_prompt - 1] == tokenizer.assistant_id
    assert ids[-1] == EOS_ID and tokenizer.decode(ids[n_prompt:]) == "Remove common leading whitespace."
    assert tokenizer.render(ids).startswith("[BOS]<|user|>What does")
    examples = [("What does a.b do?", "Return the answer to everything."), ("What does x.yy do?", "Stop.")]
    batch_ids, mask = chat_batch(tokenizer, examples)
    for row, (question, answer) in enumerate(examples):
        sequence, n = tokenizer.chat_ids(question, answer)
        expected = torch.zeros(batch_ids.size(1), dtype=torch.bool)
        expected[n:len(sequence)] = True            # the answer's tokens and its [EOS]; never the prompt or padding
        assert torch.equal(mask[row], expected)
        assert torch.equal(batch_ids[row, :len(sequence)], torch.tensor(sequence))
        assert (batch_ids[row, len(sequence):] == PAD_ID).all()


def test_response_loss_is_cross_entropy_over_the_response_tokens_only(base, tokenizer):
    model = grow_vocabulary(base[0], 2)
    ids, mask = chat_batch(tokenizer, [("What does os.getcwd do?", "Return the current directory."),
                                       ("What does abc.xyz do?", "Make a new object from nothing at all.")])
    logits = model(ids[:, :-1])
    targets = ids[:, 1:].masked_fill(~mask[:, 1:], -100)
    expected = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100)
    torch.testing.assert_close(losses.response_loss(model, (ids, mask)), expected)
    assert losses.response_target_count((ids, mask)) == int(mask.sum())   # position 0 ([BOS]) is never a response


def dpo_by_definition(pc, pr, rc, rr, beta):
    """Rafailov et al. (2023), eq. 7: −log σ(β log πθ(yw|x)/πref(yw|x) − β log πθ(yl|x)/πref(yl|x)), averaged."""
    return -torch.log(torch.sigmoid(beta * (pc - rc) - beta * (pr - rr))).mean()


@pytest.mark.parametrize("beta", [0.05, 0.1, 1.0, 3.0])
def test_dpo_loss_equals_its_definition(beta):
    g = torch.Generator().manual_seed(int(beta * 100))
    pc, pr, rc, rr = (-(torch.rand(9, generator=g, dtype=torch.float64) * 30) for _ in range(4))
    torch.testing.assert_close(losses.dpo_loss(pc, pr, rc, rr, beta), dpo_by_definition(pc, pr, rc, rr, beta))
    # the chosen answer gaining probability against the reference lowers the loss
    assert losses.dpo_loss(pc + 1, pr, rc, rr, beta) < losses.dpo_loss(pc, pr, rc, rr, beta)
    # equal policy and reference: log 2 whatever the log-probabilities
    torch.testing.assert_close(losses.dpo_loss(pc, pr, pc, pr, beta), torch.tensor(0.6931471805599453,
                                                                                      dtype=torch.float64))


def test_dpo_loss_is_stable_where_the_naive_formula_overflows():
    big = torch.tensor([-2000.0])
    zero = torch.zeros(1)
    assert torch.isfinite(losses.dpo_loss(big, zero, zero, zero, 1.0))


def test_dpo_batch_reads_the_chosen_rows_first(base, tokenizer):
    model = grow_vocabulary(base[0], 2)
    triples = [("What does a.b do?", "Return a value.", "This module is old and should not be used."),
               ("What does c.d do?", "Close the file.", "The tests run on every platform.")]
    ids, mask = preference_batch(tokenizer, triples)
    reference = torch.tensor([-30.0, -20.0, -25.0, -40.0])
    logps = losses.response_logprobs(model, (ids, mask))
    expected = -F.logsigmoid(0.5 * ((logps[:2] - reference[:2]) - (logps[2:] - reference[2:]))).sum()
    torch.testing.assert_close(losses.dpo_batch_loss_sum(model, (ids, mask, reference), 0.5), expected)
    # and the chosen rows are the chosen answers
    torch.testing.assert_close(logps[:2], response_scores(model, tokenizer, [(q, c) for q, c, _ in triples]))


def test_dpo_trains_the_policy_against_a_frozen_reference(base, tokenizer):
    policy = grow_vocabulary(base[0], 2)
    start = copy.deepcopy(policy.state_dict())
    triples = [("What does a.b do?", "Return a value.", "This module is old."),
               ("What does c.d do?", "Close the file.", "The tests run on every platform."),
               ("What does e.f do?", "Open a socket.", "See the manual for details.")]
    reference, history = train_dpo(policy, tokenizer, triples, steps=6, batch_size=3, lr=3e-3, beta=0.5, seed=0)
    assert reference is not policy
    assert all(not p.requires_grad for p in reference.parameters())
    for name, weight in reference.state_dict().items():
        assert torch.equal(weight, start[name]), f"the reference's {name} moved"
    assert any(not torch.equal(w, start[n]) for n, w in policy.state_dict().items())
    assert history[-1] < history[0] and abs(history[0] - 0.6931) < 1e-3   # starts at log 2: policy = reference
    metrics = preference_metrics(policy, reference, tokenizer, triples, beta=0.5)
    assert metrics["margin"] > 0 and metrics["kl"] > 0 and metrics["accuracy"] == 1.0


def test_sft_lowers_the_response_loss_and_response_only_differs(base, tokenizer):
    examples = [("What does a.b do?", "Return a value."), ("What does c.d do?", "Close the file.")]
    masked, full = grow_vocabulary(base[0], 2), grow_vocabulary(base[0], 2)
    before = losses.response_loss(masked, chat_batch(tokenizer, examples)).item()
    history = train_sft(masked, tokenizer, examples, steps=5, batch_size=2, lr=3e-3, seed=0)
    train_sft(full, tokenizer, examples, steps=5, batch_size=2, lr=3e-3, seed=0, response_only=False)
    assert history[-1] < before
    assert not torch.equal(masked.lm_head.weight, full.lm_head.weight)


def test_grown_vocabulary_keeps_every_old_logit_and_adds_mean_rows(base):
    model = base[0]
    grown = grow_vocabulary(model, 2)
    ids = torch.randint(7, 512, (2, 12), generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(grown(ids)[..., :512], model(ids))
    table = grown.embedding.tokens.weight
    torch.testing.assert_close(table[512], model.embedding.tokens.weight.mean(0))
    assert grown.lm_head.weight is table and table.shape == (514, model.config.d_model)


def test_frozen_copy_is_independent():
    model = tiny_model()
    reference = frozen_copy(model)
    with torch.no_grad():
        model.lm_head.weight.add_(1.0)
    assert not torch.equal(reference.lm_head.weight, model.lm_head.weight)
    assert not reference.training


@pytest.mark.parametrize("call", [
    lambda: losses.dpo_loss(torch.zeros(3), torch.zeros(3), torch.zeros(3), torch.zeros(2)),
    lambda: losses.dpo_loss(torch.zeros(3), torch.zeros(3), torch.zeros(3), torch.zeros(3), beta=0.0),
    lambda: losses.dpo_loss(torch.zeros(3), torch.zeros(3), torch.zeros(3), torch.zeros(3), beta=-0.1),
    lambda: losses.dpo_loss(torch.zeros(3, dtype=torch.long), torch.zeros(3), torch.zeros(3), torch.zeros(3)),
    lambda: losses.sequence_logprobs(torch.zeros(2, 3, 5), torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 3)),
    lambda: losses.sequence_logprobs(torch.zeros(2, 3, 5), torch.full((2, 3), 5), torch.ones(2, 3).bool()),
    lambda: losses.response_loss(tiny_model(), (torch.ones(2, 5, dtype=torch.long), torch.ones(2, 5))),
    lambda: losses.response_loss(tiny_model(), (torch.ones(2, 5, dtype=torch.long),
                                                 torch.zeros(2, 5, dtype=torch.bool))),
    lambda: losses.response_loss(tiny_model(), torch.ones(2, 5, dtype=torch.long)),
])
def test_bad_input_gets_course_errors(call):
    with pytest.raises(CourseError):
        call()


def test_chat_batch_bad_input(tokenizer):
    with pytest.raises(CourseError):
        chat_batch(tokenizer, ["just a question"])
    with pytest.raises(CourseError):
        chat_batch(tokenizer, [])
    with pytest.raises(CourseError):
        chat_batch(tokenizer, [("q?", "a " * 80)], max_len=65)
    with pytest.raises(CourseError):
        ChatTokenizer("not a tokenizer")


def test_qa_split_is_by_module_and_items_hold_one_right_answer():
    split = stdlib_qa.load_stdlib_qa()
    modules = [split.modules(name) for name in ("train", "validation", "test")]
    assert not (modules[0] & modules[1]) and not (modules[0] & modules[2]) and not (modules[1] & modules[2])
    assert len(split.train) > len(split.test) > 100
    answers = {p.question: p.answer for p in split.test}
    for question, options, right in stdlib_qa.choice_items(split.test, stdlib_qa.sibling_pool(split.test), 3):
        assert options[right] == answers[question] and len(set(options)) == 4
    for question, chosen, rejected in stdlib_qa.preference_pairs(split.test, stdlib_qa.prose_pool()):
        assert chosen == answers[question] != rejected
    pair = split.test[0]
    assert pair.question == f"What does {pair.name} do?"
    assert random.Random(0).random() == random.Random(0).random()
