"""Exercises of lesson 11 (the form of an answer: SFT and DPO): the response mask of a multi-turn conversation
(q1), each pair's weight in DPO's gradient (q2), and the capstone, the divergence per token from the reference (q3).

Each check compares the learner's answer with the package's on fresh inputs; each exercise declares its typical
mistakes once (see :mod:`.core`).
"""
from __future__ import annotations

import torch

from ..instruct import assistant_mask, mean_token_kl, preference_metrics
from ..losses import dpo_gradient_weight, dpo_loss, dpo_loss_sum
from ..tokenization import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from .asserts import Case, Draw, check_function, learner_function
from .core import Exercise, Mistake, solution_of


def checker(name, reference, make_cases, *also, differentiating=False):
    """The contract check of ``name`` against the package's ``reference`` on ``make_cases(draw)`` and a twin draw;
    the learner may call neither the reference nor ``also`` (nor autograd where ``differentiating``: the exercise
    asks for a derivative worked out by hand)."""
    forbidden = {f"the package's {f.__module__}.{f.__name__}": f for f in (reference, *also)}
    if differentiating:
        forbidden.update({f"autograd ({what})": f for what, f in (
            ("Tensor.backward", torch.Tensor.backward), ("torch.autograd.grad", torch.autograd.grad),
            ("torch.autograd.backward", torch.autograd.backward), ("torch.func.grad", torch.func.grad),
            ("torch.func.vjp", torch.func.vjp))})

    def check(ns) -> None:
        draw = Draw()
        cases = make_cases(draw)
        check_function(learner_function(ns, name), reference, cases, name, twins=make_cases(draw.twin()), probes=cases,
                       forbidden=forbidden)
    return check


# ---------------------------------------------------------------------------- q1: the mask of a multi-turn chat
def conversation_cases(draw: Draw) -> list[Case]:
    """Right-padded conversations ``[BOS] (<|user|> q… <|assistant|> a… [EOS])×turns``, 1 to 3 turns, the chat
    tokens' ids drawn above the text ids, each answer holding an [UNK] (an answer is any id, id 1 too); in the last
    case the first row's answer is cut before its [EOS]."""
    cases = []
    for what, turns, cut in (("one turn", (1, 1), 0), ("two turns", (2, 2), 0), ("one to three turns", (1, 3), 0),
                             ("the last answer cut before its [EOS]", (1, 2), 1)):
        user_id = draw.integer(300, 520)
        assistant_id = user_id + draw.integer(1, 3)
        rows = []
        for r in range(draw.integer(2, 4)):
            row = [BOS_ID]
            for _ in range(draw.integer(*turns)):
                row += [user_id] + draw.randint(7, 300, (draw.integer(1, 5),)).tolist() + [assistant_id]
                answer = draw.randint(7, 300, (draw.integer(1, 5),)).tolist()
                answer.insert(draw.integer(0, len(answer)), UNK_ID)
                row += answer + [EOS_ID]
            rows.append(row[:-1] if cut and r == 0 else row)
        longest = max(map(len, rows)) + draw.integer(0, 2)
        ids = torch.tensor([row + [PAD_ID] * (longest - len(row)) for row in rows])
        cases.append(Case(f"{what}: ids {tuple(ids.shape)}, user_id={user_id}, assistant_id={assistant_id}",
                          (ids, user_id, assistant_id)))
    return cases


Q1_MISTAKES = (
    Mistake("the <|assistant|> token scored", "the <|assistant|> token is part of the prompt — the model reads it, "
            "it never has to produce it. Start the mask at the token *after* it",
            variant=lambda ids, u, a: assistant_mask(ids, u, a) | (ids == a)),
    Mistake("[EOS] not scored", "score the [EOS] that ends each answer too: it is how the model learns to stop "
            "(without it, generation runs on into another turn)",
            variant=lambda ids, u, a: assistant_mask(ids, u, a) & (ids != EOS_ID)),
    Mistake("first answer only", "a conversation has an answer after *every* <|assistant|>: the mask must cover "
            "the later turns too", variant=lambda ids, u, a: assistant_mask(ids, u, a) & ((ids == a).cumsum(1) == 1)),
    Mistake("user turns scored", "after the first answer you kept scoring everything — the second <|user|> turn "
            "is the user's text, not the model's. Stop at each answer's [EOS], start again after the next "
            "<|assistant|>",
            variant=lambda ids, u, a: ((ids == a).long().cumsum(1) > 0) & (ids != a) & (ids != PAD_ID)),
    Mistake("padding scored", "padding after a cut answer is no response token: leave [PAD] out",
            variant=lambda ids, u, a: assistant_mask(ids, u, a) | ((ids == PAD_ID) & ((ids == a).cumsum(1) > 0))),
)


# ---------------------------------------------------------------------------- q2: each pair's weight in the gradient
def logprob_cases(draw: Draw) -> list[Case]:
    """Four ``(n,)`` sequence log-probabilities (negative, tens of nats; pairs ranked right and wrong) and a beta."""
    cases = []
    for beta in (0.1, draw.choice((0.05, 0.3)), 1.0):
        n = draw.integer(3, 8)
        cases.append(Case(f"{n} pairs, beta={beta}", (*[-(draw.randn(n).abs() * 10 + 5) for _ in range(4)], beta)))
    return cases


W = dpo_gradient_weight
Q2_MISTAKES = (
    Mistake("sign flipped", "this weight is largest for the pairs the policy already ranks right. Differentiate "
            "−log σ(β·m): the derivative of log σ(z) is σ(−z), so the weight is σ(−β·m)",
            variant=lambda pc, pr, rc, rr, b: W(pc, pr, rc, rr, -b)),
    Mistake("beta left out of the sigmoid", "the margin enters the loss as β·m: the sigmoid reads β·m too",
            variant=lambda pc, pr, rc, rr, b: W(pc, pr, rc, rr, 1.0)),
    Mistake("beta multiplied in", "the task defines w without the β outside: d loss / d policy_chosen = −β·w",
            variant=lambda pc, pr, rc, rr, b: b * W(pc, pr, rc, rr, b)),
    Mistake("reference left out", "the margin is measured against the reference: m = (pc − rc) − (pr − rr)",
            variant=lambda pc, pr, rc, rr, b: W(pc, pr, torch.zeros_like(rc), torch.zeros_like(rr), b)),
)


# ---------------------------------------------------------------------------- q3 (capstone): the KL per token
def kl_cases(draw: Draw) -> list[Case]:
    """Two models reduced to tables (``nn.Embedding`` of width vocab: logits = the current token's row), a padded
    batch and its response mask; the last case has logits large enough to overflow a naive softmax."""
    cases = []
    for what, scale in (("small logits", 1.0), ("ordinary logits", 3.0), ("logits in the hundreds", 300.0)):
        vocab, rows, seq = draw.integer(8, 20), draw.integer(2, 4), draw.integer(6, 10)
        ids = draw.randint(7, vocab, (rows, seq))
        mask = torch.zeros(rows, seq, dtype=torch.bool)
        for r in range(rows):
            start, end = draw.integer(2, seq - 3), draw.integer(seq - 2, seq)
            mask[r, start:end] = True
            ids[r, end:] = PAD_ID
        policy, reference = (torch.nn.Embedding.from_pretrained(draw.randn(vocab, vocab, scale=scale))
                             for _ in range(2))
        cases.append(Case(f"{what}: ids {tuple(ids.shape)}, vocabulary {vocab}, {int(mask[:, 1:].sum())} response "
                          "positions", (policy, reference, ids, mask)))
    return cases


Q3_MISTAKES = (
    Mistake("KL the wrong way round", "you computed KL(reference ‖ policy): the task asks for KL(policy ‖ "
            "reference), the expectation under the *policy's* distribution (weights p_policy, not p_reference)",
            variant=lambda p, r, ids, mask: mean_token_kl(r, p, ids, mask)),
    Mistake("mask not shifted", "the logits at position t predict token t + 1: the positions to average are those "
            "whose *next* token is a response token, mask[:, 1:] against logits of ids[:, :-1]",
            variant=lambda p, r, ids, mask: mean_token_kl(
                p, r, ids, torch.cat([mask[:, :1] & False, mask[:, :-1]], 1))),
    Mistake("prompt positions averaged too", "average over the response positions only (the mask), not over every "
            "real token: the prompt is the same for both models and dilutes the divergence",
            variant=lambda p, r, ids, mask: mean_token_kl(p, r, ids, ids != PAD_ID)),
    Mistake("summed over positions", "average over the response positions (divide by their number), so the value "
            "does not grow with the batch",
            variant=lambda p, r, ids, mask: mean_token_kl(p, r, ids, mask) * float(mask[:, 1:].sum())),
)

# ---------------------------------------------------------------------------- declarations
q1 = Exercise(
    name="The response mask of a conversation",
    variables=("assistant_mask",),
    checker=checker("assistant_mask", assistant_mask, conversation_cases),
    hints=("Walk along each row: which token switches scoring on, which switches it off, and is the [EOS] in?",
           "for each row, keep a flag: set it on at <|assistant|> (that token not scored), off at <|user|>; while it "
           "is on, score every token that is not [PAD], and switch it off after scoring an [EOS]."),
    solution=solution_of("lesson11", "assistant_mask"),
    mistakes=Q1_MISTAKES,
    success="Correct! Every answer of the conversation is scored, with its [EOS]; the user's turns, the chat "
            "tokens and the padding are read but never scored.",
)

q2 = Exercise(
    name="How hard DPO pushes each pair",
    variables=("dpo_weight",),
    checker=checker("dpo_weight", dpo_gradient_weight, logprob_cases, dpo_loss, dpo_loss_sum, differentiating=True),
    hints=("Differentiate −log σ(z) with respect to z first; then z = β·m and m = (pc − rc) − (pr − rr).",
           "d/dz [−log σ(z)] = −σ(−z) (because σ'(z) = σ(z)σ(−z)); the chain rule gives d loss / d pc = −β·σ(−β·m), "
           "so w is σ(−β·m), computed elementwise on the (n_pairs,) tensors."),
    solution=solution_of("lesson11", "dpo_weight"),
    mistakes=Q2_MISTAKES,
    success="Correct! A pair ranked right by a wide margin gets a weight near 0, one ranked wrong a weight near 1: "
            "DPO spends its steps on the pairs it still gets wrong, while SFT's loss pushes every answer up forever. "
            "Now measure it: run the cell below, which takes autograd's gradient beside your w.",
)

q3 = Exercise(
    name="Capstone: how far the policy moved",
    variables=("mean_token_kl",),
    checker=checker("mean_token_kl", mean_token_kl, kl_cases, preference_metrics),
    hints=("Both models read ids[:, :-1]; at each position turn each model's logits into log-probabilities over the "
           "vocabulary, then compare the two distributions, weighting by the policy's.",
           "KL(p ‖ q) = Σ_v p_v (log p_v − log q_v) at each position; which function gives log p without ever "
           "forming a probability that rounds to 0? Which slice of the mask lines up with the positions you scored?"),
    solution=solution_of("lesson11", "mean_token_kl"),
    mistakes=Q3_MISTAKES,
    success="Correct! Equal to the package's course_utils.instruct.mean_token_kl, also where the logits are in the "
            "hundreds. Swap the two models to measure the other direction (KL is not symmetric in general).",
    task=(
        "### Capstone — how far did DPO move the model? (about 30 minutes)\n\nβ weighs section 6's KL penalty, a KL "
        "between whole answers the policy samples; measure a per-token proxy. Write "
        "`mean_token_kl(policy, reference, ids, mask)`: two language models (a LongTensor `(batch, seq)` → logits "
        "`(batch, seq, vocab)`), a chat batch and its response mask as `chat_batch` returns them. "
        "Return a Python float in nats: KL(policy ‖ reference) of the two models' next-token distributions, exact "
        "over the vocabulary, averaged over the positions whose next token is a response token, both models reading "
        "the given ids (teacher forcing). It must stay finite for logits in the hundreds.\n\n"
        "After the check, on the held-out right answers: measure KL(dpo ‖ frozen). Then predict, as numbers, "
        "KL(frozen ‖ dpo) and the KL of a β = 1 model trained like `dpo`; measure both.\n\n"
        "Stuck? `q3.hint()`, then `q3.solution()`, or `from course_utils.instruct import mean_token_kl`."),
    starter=("def mean_token_kl(policy, reference, ids, mask):\n"
             "    # your code here\n"
             "    raise NotImplementedError\n"),
)
