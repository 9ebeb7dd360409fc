"""From a text predictor to an assistant (lesson 11): the chat template, supervised fine-tuning (SFT) on the
response tokens, and direct preference optimisation (DPO) against a frozen reference model.

* :func:`load_base_gpt` — the shipped base model (``checkpoints/gpt``: lesson 08's data, lesson 09's block);
* :class:`ChatTokenizer` — the base tokenizer plus two special tokens, ``<|user|>`` and ``<|assistant|>``:
  ``[BOS] <|user|> question <|assistant|> answer [EOS]`` (:meth:`ChatTokenizer.chat_ids`);
* :func:`grow_vocabulary` — the same model with rows added to its (tied) embedding for the new tokens, each new row
  the mean of the old rows;
* :func:`chat_batch` — padded ids and the mask of the response tokens (what the loss scores);
* :func:`train_sft` and :func:`train_dpo` — the two training stages; the losses are
  :func:`course_utils.losses.response_loss` and :func:`course_utils.losses.dpo_loss`;
* :func:`choice_accuracy`, :func:`greedy_answers`, :func:`chrf`, :func:`preference_metrics` — the held-out
  measurements.

The shipped base checkpoint is made by :mod:`course_utils.gpt_checkpoint` from a finished run of the course's
``python -m course_utils.train gpt``.
"""
from __future__ import annotations

__all__ = ["ASSISTANT", "BASE_DIR", "assistant_mask", "ChatTokenizer", "USER", "chat_batch", "choice_accuracy", "chrf",
           "fitting_pairs", "frozen_copy", "InstructData", "greedy_answers", "grow_vocabulary", "load_base_gpt",
           "load_instruct_data", "preference_batch",
           "preference_metrics", "response_scores", "seed_results", "train_dpo", "train_sft"]

import copy
import json
import random
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.nn as nn

from .config import TransformerConfig
from .decoding import generate
from .errors import CourseTypeError, CourseValueError
from .language_model import DecoderOnlyLM
from .losses import dpo_batch_loss_sum, response_logprobs, response_loss
from .tokenization import BOS_ID, EOS_ID, PAD_ID, BPETokenizer
from .training import make_optimizer, make_scheduler, train_one_epoch
from .validation import (
    check_bool,
    check_choice,
    check_int,
    check_module,
    check_non_negative_int,
    check_positive_int,
    check_real,
    check_str,
    check_str_list,
    check_str_tuples,
    check_token_ids,
    describe,
    is_int,
)

BASE_DIR = Path(__file__).parent / "checkpoints" / "gpt"
SEED_RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "instruct_seeds.json"
USER, ASSISTANT = "<|user|>", "<|assistant|>"
SPLITS = ("train", "validation", "test")


# ------------------------------------------------------------------------------------------- the base model
def load_base_gpt(folder: str | Path = BASE_DIR):
    """``(model, tokenizer, meta)`` of the shipped base GPT (weights-only load, eval mode)."""
    folder = check_existing("folder", folder, ("meta.json", "model.pt", "tokenizer.json"))
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    model = DecoderOnlyLM(TransformerConfig(**meta["config"]))
    model.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
    model.eval()
    return model, BPETokenizer.load(folder / "tokenizer.json"), meta


def seed_results(path: str | Path = SEED_RESULTS) -> dict:
    """The stored results of lesson 11's runs over seeds 0-2 (written by ``benchmarks/instruct_seeds.py``)."""
    return json.loads(check_existing("path", path).read_text(encoding="utf-8"))


def check_existing(name: str, path: object, files: tuple[str, ...] = ()) -> Path:
    """``path`` as a :class:`~pathlib.Path` to an existing file, or (with ``files``) a folder holding them."""
    if not isinstance(path, (str, Path)) or str(path) == "":
        raise CourseTypeError(f"{name} must be a str or pathlib.Path, got {describe(path)}")
    path = Path(path)
    if files:
        missing = [f for f in files if not (path / f).is_file()]
    else:
        missing = [] if path.is_file() else [path.name]
    if missing:
        raise CourseValueError(f"{name}={str(path)!r} lacks {missing}; pass the path the default points to, or "
                               "leave the argument out")
    return path


# ------------------------------------------------------------------------------------------- chat template
class ChatTokenizer:
    """A :class:`~course_utils.tokenization.BPETokenizer` with two more special tokens: ``<|user|>`` gets id
    ``base.vocab_size`` and ``<|assistant|>`` the next one. Plain text never encodes to them."""

    def __init__(self, base: BPETokenizer) -> None:
        if not isinstance(base, BPETokenizer):
            raise CourseTypeError(f"base must be a BPETokenizer (load_base_gpt()'s tokenizer), got {describe(base)}")
        self.base = base
        self.user_id, self.assistant_id = base.vocab_size, base.vocab_size + 1

    @property
    def vocab_size(self) -> int:
        return self.base.vocab_size + 2

    def encode(self, text: str) -> list[int]:
        return self.base.encode(check_str("text", text))

    def check_ids(self, ids: object) -> list[int]:
        """``ids`` (a list of ints or a 1-D integer tensor) as a list of ids of this tokenizer."""
        if isinstance(ids, torch.Tensor) and ids.dim() == 1 and not (ids.is_floating_point() or ids.is_complex()
                                                                     or ids.dtype == torch.bool):
            ids = ids.tolist()
        if not isinstance(ids, (list, tuple)) or not all(is_int(i) for i in ids):
            raise CourseTypeError(f"ids must be a list of int token ids or a 1-D integer tensor, got {describe(ids)}")
        if any(not 0 <= i < self.vocab_size for i in ids):
            raise CourseValueError(f"ids must lie in [0, {self.vocab_size}) (this chat tokenizer's vocabulary), got "
                                   f"{[i for i in ids if not 0 <= i < self.vocab_size][:3]}")
        return [int(i) for i in ids]

    def decode(self, ids) -> str:
        """Text of ``ids`` with every special token (the chat tokens too) left out."""
        return self.base.decode([i for i in self.check_ids(ids) if i < self.base.vocab_size])

    def prompt_ids(self, question: str) -> list[int]:
        """``[BOS] <|user|> question <|assistant|>``: what the model reads before it answers."""
        return [BOS_ID, self.user_id] + self.encode(question) + [self.assistant_id]

    def chat_ids(self, question: str, answer: str) -> tuple[list[int], int]:
        """``(ids, n_prompt)``: the prompt then ``answer [EOS]``; the response is ``ids[n_prompt:]``."""
        prompt = self.prompt_ids(question)
        return prompt + self.encode(check_str("answer", answer)) + [EOS_ID], len(prompt)

    def render(self, ids) -> str:
        """``ids`` as text with the special tokens shown by name (to read a template)."""
        names = {BOS_ID: "[BOS]", EOS_ID: "[EOS]", PAD_ID: "[PAD]", self.user_id: USER, self.assistant_id: ASSISTANT}
        return "".join(names[i] if i in names else self.base.decode([i]) for i in self.check_ids(ids))


def grow_vocabulary(model: DecoderOnlyLM, n_new: int) -> DecoderOnlyLM:
    """A copy of ``model`` with ``n_new`` more token ids: the (tied) embedding gets ``n_new`` rows, each the mean
    of the old rows, so a new token starts as an "average" token; every other weight is copied."""
    check_module("model", model, DecoderOnlyLM)
    check_positive_int("n_new", n_new)
    old = model.embedding.tokens.weight.detach()
    grown = DecoderOnlyLM(replace(model.config, vocab_size=model.config.vocab_size + n_new),
                          tie_weights=model.lm_head.weight is model.embedding.tokens.weight)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    for key, value in state.items():
        if value.dim() == 2 and value.shape == old.shape and (key.startswith("embedding.tokens") or
                                                              key.startswith("lm_head")):
            state[key] = torch.cat([value, value.mean(dim=0, keepdim=True).expand(n_new, -1)])
    grown.load_state_dict(state)
    grown.train(model.training)
    return grown


def chat_batch(tokenizer: ChatTokenizer, examples, max_len: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, response_mask)``, both ``(batch, longest)``: each ``(question, answer)`` of ``examples`` in the chat
    template, right-padded with [PAD]; ``response_mask`` is True at the answer's tokens and its [EOS] (the only
    targets the fine-tuning loss scores). ``max_len``: refuse longer examples (the model's context + 1)."""
    check_module("tokenizer", tokenizer, ChatTokenizer)
    if max_len is not None:
        check_positive_int("max_len", max_len)
    examples = check_str_tuples("examples", examples, ("question", "answer"))
    encoded = [tokenizer.chat_ids(*example) for example in examples]
    longest = max(len(ids) for ids, _ in encoded)
    if max_len is not None and longest > max_len:
        raise CourseValueError(f"an example has {longest} ids, more than max_len={max_len}; drop it (see "
                               "fitting_pairs) or use a model with a longer context")
    ids = torch.full((len(encoded), longest), PAD_ID, dtype=torch.long)
    mask = torch.zeros(len(encoded), longest, dtype=torch.bool)
    for row, (sequence, n_prompt) in enumerate(encoded):
        ids[row, :len(sequence)] = torch.tensor(sequence)
        mask[row, n_prompt:len(sequence)] = True
    return ids, mask


def assistant_mask(ids: torch.Tensor, user_id: int, assistant_id: int, eos_id: int = EOS_ID,
                   pad_id: int = PAD_ID) -> torch.Tensor:
    """Bool ``(batch, seq)``: True at every assistant turn's tokens of a (multi-turn) conversation — from the token
    after each ``<|assistant|>`` up to and including the [EOS] that ends the turn; False on the chat tokens, the user
    turns and padding (lesson 11, exercise 1)."""
    check_token_ids(ids, torch.iinfo(torch.long).max, name="ids")
    for name, value in (("user_id", user_id), ("assistant_id", assistant_id), ("eos_id", eos_id), ("pad_id", pad_id)):
        check_non_negative_int(name, value)
    mask = torch.zeros(ids.shape, dtype=torch.bool)
    for row, tokens in enumerate(ids.tolist()):
        inside = False
        for t, token in enumerate(tokens):
            if token == assistant_id:
                inside = True
            elif token == user_id:
                inside = False
            elif inside and token != pad_id:
                mask[row, t] = True
                inside = token != eos_id
    return mask.to(ids.device)


def fitting_pairs(pairs, tokenizer: ChatTokenizer, max_len: int, max_question: int = 24) -> list:
    """The QA pairs whose question has at most ``max_question`` ids and whose answer at most
    ``max_len - 3 - max_question``: then *any* question with *any* answer fits the template in ``max_len + 1``
    ids (the model reads ``max_len``), distractors included."""
    from .data.stdlib_qa import check_qa_pairs

    pairs = check_qa_pairs(pairs)
    check_module("tokenizer", tokenizer, ChatTokenizer)
    check_positive_int("max_len", max_len)
    check_positive_int("max_question", max_question)
    max_answer = max_len - 3 - max_question
    if max_answer < 1:
        raise CourseValueError(f"max_question={max_question} leaves no room for an answer in max_len={max_len}")
    return [p for p in pairs
            if len(tokenizer.encode(p.question)) <= max_question and len(tokenizer.encode(p.answer)) <= max_answer]


def preference_batch(tokenizer: ChatTokenizer, triples) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, response_mask)`` of ``(question, chosen, rejected)`` triples: the chosen rows first, then the
    rejected rows in the same order (:func:`course_utils.losses.dpo_batch_loss_sum` reads them in halves)."""
    triples = check_str_tuples("triples", triples, ("question", "chosen", "rejected"))
    return chat_batch(tokenizer, [(q, c) for q, c, _ in triples] + [(q, r) for q, _, r in triples])


@dataclass
class InstructData:
    """Lesson 11's data for a tokenizer and context: the QA pairs of each split that fit (:func:`fitting_pairs`)
    and the two distractor pools, restricted to sentences that fit as answers."""

    tokenizer: ChatTokenizer
    train: list
    validation: list
    test: list
    siblings: dict
    prose: dict

    def examples(self, split: str = "train") -> list[tuple[str, str]]:
        return [(pair.question, pair.answer) for pair in getattr(self, check_choice("split", split, SPLITS))]


def load_instruct_data(tokenizer: ChatTokenizer, max_len: int = 64, max_question: int = 24,
                       seed: int = 0) -> InstructData:
    """The stdlib QA split (by module, ``seed``) for ``tokenizer`` and a context of ``max_len``."""
    from .data.stdlib_qa import load_stdlib_qa, prose_pool, sibling_pool

    check_module("tokenizer", tokenizer, ChatTokenizer)
    split = load_stdlib_qa(seed=seed)
    parts = [fitting_pairs(getattr(split, name), tokenizer, max_len, max_question) for name in SPLITS]
    max_answer = max_len - 3 - max_question
    prose = {module: [s for s in sentences if len(tokenizer.encode(s)) <= max_answer]
             for module, sentences in prose_pool().items()}
    return InstructData(tokenizer, *parts, sibling_pool([p for part in parts for p in part]), prose)


# ------------------------------------------------------------------------------------------- measurements
@torch.no_grad()
def response_scores(model: nn.Module, tokenizer: ChatTokenizer, examples, batch_size: int = 256) -> torch.Tensor:
    """``(n,)`` log-probability of each ``(question, answer)``'s answer (and [EOS]) given its prompt."""
    check_module("model", model)
    check_module("tokenizer", tokenizer, ChatTokenizer)
    check_positive_int("batch_size", batch_size)
    examples = check_str_tuples("examples", examples, ("question", "answer"))
    was_training = model.training
    model.eval()
    order = sorted(range(len(examples)), key=lambda i: len(examples[i][0]) + len(examples[i][1]))
    scores = torch.empty(len(examples))
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        scores[chunk] = response_logprobs(model, chat_batch(tokenizer, [examples[i] for i in chunk])).cpu()
    model.train(was_training)
    return scores


def choice_accuracy(model: nn.Module, tokenizer: ChatTokenizer, items) -> float:
    """Share of ``(question, options, right)`` items whose right option gets the highest log-probability."""
    items = check_choice_items(items)
    n_options = len(items[0][1])
    scores = response_scores(model, tokenizer, [(q, option) for q, options, _ in items for option in options])
    picked = scores.view(len(items), n_options).argmax(dim=1)
    return float((picked == torch.tensor([right for _, _, right in items])).float().mean())


def check_choice_items(items: object) -> list:
    """``items`` as a non-empty list of ``(question, options, right)``: a str, a list of at least two str (as many
    in every item) and the index of the right one."""
    fix = "build them with course_utils.data.stdlib_qa.choice_items"
    if not isinstance(items, (list, tuple)) or not items:
        raise CourseTypeError(f"items must be a non-empty list of (question, options, right) tuples, got "
                              f"{describe(items)}; {fix}")
    for i, item in enumerate(items):
        if not (isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[0], str)
                and isinstance(item[1], (list, tuple)) and len(item[1]) == len(items[0][1]) >= 2
                and all(isinstance(o, str) for o in item[1]) and is_int(item[2]) and 0 <= item[2] < len(item[1])):
            raise CourseValueError(f"items[{i}] must be (question, options, right): a str, a list of at least two "
                                   f"str (as many as items[0] has) and the right option's index, got "
                                   f"{describe(item)}; {fix}")
    return list(items)


@torch.no_grad()
def greedy_answers(model: DecoderOnlyLM, tokenizer: ChatTokenizer, questions, max_new_tokens: int = 40) -> list[str]:
    """The model's greedy answer to each question (prompts of equal length decoded together, stop at [EOS])."""
    check_module("model", model, DecoderOnlyLM)
    check_module("tokenizer", tokenizer, ChatTokenizer)
    check_positive_int("max_new_tokens", max_new_tokens)
    prompts = [tokenizer.prompt_ids(q) for q in check_str_list("questions", questions)]
    answers: list[str] = [""] * len(prompts)
    by_length: dict[int, list[int]] = {}
    for i, prompt in enumerate(prompts):
        by_length.setdefault(len(prompt), []).append(i)
    forbidden = [PAD_ID, BOS_ID, tokenizer.user_id, tokenizer.assistant_id]
    for length, rows in sorted(by_length.items()):
        new = min(max_new_tokens, model.config.max_len - length)
        if new < 1:
            continue
        out = generate(model, torch.tensor([prompts[i] for i in rows]), new, temperature=0.0, eos_id=EOS_ID,
                       forbidden_ids=forbidden)
        for row, ids in zip(rows, out[:, length:].tolist()):
            answers[row] = tokenizer.decode(ids[:ids.index(EOS_ID)] if EOS_ID in ids else ids).strip()
    return answers


def chrf(hypotheses: list[str], references: list[str]) -> float:
    """Corpus chrF (character n-gram F-score, 0–100) of ``hypotheses`` against one reference each (sacrebleu)."""
    import sacrebleu

    hypotheses, references = check_str_list("hypotheses", hypotheses), check_str_list("references", references)
    if len(hypotheses) != len(references):
        raise CourseValueError(f"chrf needs one reference per hypothesis, got {len(hypotheses)} hypotheses and "
                               f"{len(references)} references")
    return float(sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score)


@torch.no_grad()
def mean_token_kl(policy: nn.Module, reference: nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> float:
    """Mean over the response positions of ``KL(policy(.|context) || reference(.|context))`` in nats, the
    contexts being the given responses read by teacher forcing (an exact sum over the vocabulary per position)."""
    log_p = torch.log_softmax(policy(ids[:, :-1]).float(), dim=-1)
    log_q = torch.log_softmax(reference(ids[:, :-1]).float(), dim=-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)            # (batch, seq - 1)
    scored = mask[:, 1:]
    return float(kl[scored].mean())


@torch.no_grad()
def preference_metrics(policy: nn.Module, reference: nn.Module, tokenizer: ChatTokenizer, triples,
                       beta: float = 0.1) -> dict[str, float]:
    """On ``(question, chosen, rejected)`` triples: ``accuracy`` (share where the policy gives the chosen answer
    the higher log-probability), ``margin`` (mean implicit reward margin ``beta·((pc − rc) − (pr − rr))``) and
    ``kl`` (:func:`mean_token_kl` on the chosen answers)."""
    check_module("policy", policy)
    check_module("reference", reference)
    check_module("tokenizer", tokenizer, ChatTokenizer)
    check_real("beta", beta, low=0.0, low_inclusive=False)
    triples = check_str_tuples("triples", triples, ("question", "chosen", "rejected"))
    chosen = [(q, c) for q, c, _ in triples]
    rejected = [(q, r) for q, _, r in triples]
    pc, pr = response_scores(policy, tokenizer, chosen), response_scores(policy, tokenizer, rejected)
    rc, rr = response_scores(reference, tokenizer, chosen), response_scores(reference, tokenizer, rejected)
    was = policy.training, reference.training
    policy.eval()
    reference.eval()
    kls, counts = [], []
    for start in range(0, len(chosen), 256):
        ids, mask = chat_batch(tokenizer, chosen[start:start + 256])
        kls.append(mean_token_kl(policy, reference, ids, mask))
        counts.append(int(mask[:, 1:].sum()))
    policy.train(was[0])
    reference.train(was[1])
    return {"accuracy": float((pc > pr).float().mean()),
            "margin": float((beta * ((pc - rc) - (pr - rr))).mean()),
            "kl": sum(k * n for k, n in zip(kls, counts)) / sum(counts)}


# ------------------------------------------------------------------------------------------- training
def check_training(model: object, tokenizer: object, name: str, data: object, fields: tuple[str, ...], steps: object,
                   batch_size: object, lr: object, seed: object, warmup_steps: object) -> list:
    check_module("model", model)
    check_module("tokenizer", tokenizer, ChatTokenizer)
    check_positive_int("steps", steps)
    check_positive_int("batch_size", batch_size)
    check_real("lr", lr, low=0.0, low_inclusive=False)
    check_int("seed", seed)
    check_non_negative_int("warmup_steps", warmup_steps)
    return check_str_tuples(name, data, fields)


def batch_draws(n: int, steps: int, batch_size: int, seed: int) -> list[list[int]]:
    """The example indices of every step: passes over a ``random.Random(seed)`` permutation, reshuffled each pass."""
    rng, order, draws = random.Random(seed), [], []
    for _ in range(steps):
        if len(order) < batch_size:
            fresh = list(range(n))
            rng.shuffle(fresh)
            order += fresh
        draws.append(order[:batch_size])
        order = order[batch_size:]
    return draws


def train_sft(model: nn.Module, tokenizer: ChatTokenizer, examples, steps: int, batch_size: int = 32,
              lr: float = 1e-3, seed: int = 0, response_only: bool = True, warmup_steps: int = 10) -> list[float]:
    """Fine-tune ``model`` in place on ``(question, answer)`` examples for ``steps`` AdamW steps (warmup, cosine,
    clipping at 1); the loss is :func:`course_utils.losses.response_loss`. ``response_only=False`` scores every
    real token after [BOS] (prompt included) instead: the mistake the lesson measures. Returns the losses."""
    examples = check_training(model, tokenizer, "examples", examples, ("question", "answer"), steps, batch_size,
                              lr, seed, warmup_steps)
    check_bool("response_only", response_only)
    optimizer = make_optimizer(model, lr=lr, weight_decay=0.0)
    scheduler = make_scheduler(optimizer, min(warmup_steps, steps - 1), steps, "cosine")
    batches = [chat_batch(tokenizer, [examples[i] for i in rows])
               for rows in batch_draws(len(examples), steps, batch_size, seed)]
    if not response_only:
        batches = [(ids, ids != PAD_ID) for ids, _ in batches]
    losses = train_one_epoch(model, batches, response_loss, optimizer, scheduler, clip_norm=1.0)  # lesson 05's loop
    model.eval()
    return losses


def frozen_copy(model: nn.Module) -> nn.Module:
    """An independent copy of ``model`` in eval mode whose parameters never receive gradients (DPO's reference)."""
    reference = copy.deepcopy(check_module("model", model))
    reference.requires_grad_(False)
    return reference.eval()


def train_dpo(policy: nn.Module, tokenizer: ChatTokenizer, triples, steps: int, batch_size: int = 32,
              lr: float = 1e-4, beta: float = 0.1, seed: int = 0,
              warmup_steps: int = 10) -> tuple[nn.Module, list[float]]:
    """DPO: train ``policy`` in place on ``(question, chosen, rejected)`` triples against a frozen copy of its
    starting weights; returns ``(reference, losses)``. Each step scores the batch's chosen and rejected answers
    with both models and takes an AdamW step on :func:`course_utils.losses.dpo_batch_loss_sum` / pairs."""
    triples = check_training(policy, tokenizer, "triples", triples, ("question", "chosen", "rejected"), steps,
                             batch_size, lr, seed, warmup_steps)
    check_real("beta", beta, low=0.0, low_inclusive=False)
    reference = frozen_copy(policy)
    optimizer = make_optimizer(policy, lr=lr, weight_decay=0.0)
    scheduler = make_scheduler(optimizer, min(warmup_steps, steps - 1), steps, "cosine")
    batches = [preference_batch(tokenizer, [triples[i] for i in rows])
               for rows in batch_draws(len(triples), steps, batch_size, seed)]

    def pair_loss(model: nn.Module, batch) -> torch.Tensor:
        ids, mask = batch
        with torch.no_grad():
            reference_logps = response_logprobs(reference, (ids, mask))
        return dpo_batch_loss_sum(model, (ids, mask, reference_logps), beta) / (len(ids) // 2)

    losses = train_one_epoch(policy, batches, pair_loss, optimizer, scheduler, clip_norm=1.0)  # lesson 05's loop
    policy.eval()
    return reference, losses
