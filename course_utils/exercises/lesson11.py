"""Exercises of notebook 11 (from a text predictor to an assistant): the response mask of a multi-turn
conversation, the weight of each pair in DPO's gradient, and the capstone: the DPO loss.

Each check draws fresh inputs (:class:`~.asserts.Draw`) and compares the learner's answer with the package's:
:func:`course_utils.instruct.assistant_mask`, :func:`course_utils.losses.dpo_gradient_weight` and
:func:`course_utils.losses.dpo_loss`; each exercise declares its typical mistakes once (see :mod:`.core`).
"""
from __future__ import annotations

import torch

from ..instruct import assistant_mask
from ..losses import dpo_gradient_weight, dpo_loss
from ..tokenization import BOS_ID, EOS_ID, PAD_ID
from .asserts import Case, Draw, check_function, learner_function
from .core import Exercise, Mistake, solution_of


# ---------------------------------------------------------------------------- q1: the mask of a multi-turn chat
def conversation_cases(draw: Draw) -> list[Case]:
    """Batches of right-padded conversations ``[BOS] (<|user|> q… <|assistant|> a… [EOS])×turns``, 1 to 3 turns,
    the chat tokens' ids drawn above the text ids; one answer left without [EOS] (cut at the context's end)."""
    cases = []
    for what, turns, cut in (("one turn", (1, 1), False), ("two turns", (2, 2), False),
                             ("one to three turns", (1, 3), False), ("the last answer cut before its [EOS]",
                                                                     (1, 2), True)):
        user_id = draw.integer(300, 520)
        assistant_id = user_id + draw.integer(1, 3)
        rows = []
        for r in range(draw.integer(2, 4)):
            row = [BOS_ID]
            for _ in range(draw.integer(*turns)):
                row += [user_id] + draw.randint(7, 300, (draw.integer(1, 5),)).tolist() + [assistant_id]
                row += draw.randint(7, 300, (draw.integer(1, 5),)).tolist() + [EOS_ID]
            if cut and r == 0:
                row = row[:-1]
            rows.append(row)
        longest = max(map(len, rows)) + draw.integer(0, 2)
        ids = torch.tensor([row + [PAD_ID] * (longest - len(row)) for row in rows])
        cases.append(Case(f"{what}: ids {tuple(ids.shape)}, user_id={user_id}, assistant_id={assistant_id}",
                          (ids, user_id, assistant_id)))
    return cases


def check_assistant_mask(ns) -> None:
    draw = Draw()
    cases = conversation_cases(draw)
    check_function(learner_function(ns, "assistant_mask"), assistant_mask, cases, "assistant_mask",
                   twins=conversation_cases(draw.twin()), probes=cases, forbidden={
                       "the package's course_utils.instruct.assistant_mask": assistant_mask})


def first_turn_only(ids, user_id, assistant_id):
    mask = assistant_mask(ids, user_id, assistant_id)
    ends = ((ids == EOS_ID) & mask).long().cumsum(1)          # answers finished so far, the current [EOS] included
    return mask & ((ends == 0) | ((ends == 1) & (ids == EOS_ID)))


def everything_after_first_assistant(ids, user_id, assistant_id):
    started = (ids == assistant_id).long().cumsum(1) > 0
    return started & (ids != assistant_id) & (ids != PAD_ID)


Q1_MISTAKES = (
    Mistake("the <|assistant|> token scored", "the <|assistant|> token is part of the prompt — the model reads it, "
            "it never has to produce it. Start the mask at the token *after* it",
            variant=lambda ids, u, a: assistant_mask(ids, u, a) | (ids == a)),
    Mistake("[EOS] not scored", "score the [EOS] that ends each answer too: it is how the model learns to stop "
            "(without it, generation runs on into another turn)",
            variant=lambda ids, u, a: assistant_mask(ids, u, a) & (ids != EOS_ID)),
    Mistake("first answer only", "a conversation has an answer after *every* <|assistant|>: the mask must cover "
            "the later turns too", variant=first_turn_only),
    Mistake("user turns scored", "after the first answer you kept scoring everything — the second <|user|> turn "
            "is the user's text, not the model's. Stop at each answer's [EOS], start again after the next "
            "<|assistant|>", variant=everything_after_first_assistant),
    Mistake("padding scored", "padding after a cut answer is no response token: leave [PAD] out",
            variant=lambda ids, u, a: assistant_mask(ids, u, a) | ((ids == PAD_ID) & (
                (ids == a).long().cumsum(1) > 0))),
)


# ---------------------------------------------------------------------------- q2: each pair's weight in the gradient
def logprob_cases(draw: Draw) -> list[Case]:
    """``(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta)``: sequence log-probabilities
    (negative, tens of nats) for a few pairs, some ranked right and some wrong, at several betas."""
    cases = []
    for beta in (0.1, draw.choice((0.05, 0.3)), 1.0):
        n = draw.integer(3, 8)
        logps = [-(draw.randn(n).abs() * 10 + 5) for _ in range(4)]
        cases.append(Case(f"{n} pairs, beta={beta}", (*logps, beta)))
    return cases


def check_dpo_weight(ns) -> None:
    draw = Draw()
    cases = logprob_cases(draw)
    check_function(learner_function(ns, "dpo_weight"), dpo_gradient_weight, cases, "dpo_weight",
                   twins=logprob_cases(draw.twin()), probes=cases,
                   forbidden={"the package's course_utils.losses.dpo_gradient_weight": dpo_gradient_weight})


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


# ---------------------------------------------------------------------------- q3 (capstone): the DPO loss
def check_dpo_loss(ns) -> None:
    draw = Draw()
    cases = logprob_cases(draw)
    check_function(learner_function(ns, "dpo_loss"), dpo_loss, cases, "dpo_loss",
                   twins=logprob_cases(draw.twin()), probes=cases,
                   forbidden={"the package's course_utils.losses.dpo_loss": dpo_loss})


Q3_MISTAKES = (
    Mistake("beta's sign flipped, or chosen and rejected swapped", "your loss falls as the policy prefers the "
            "*rejected* answer: the margin is chosen minus rejected, m = (pc − rc) − (pr − rr), and the loss is "
            "−log σ(+β·m) (flipping β's sign or swapping the two answers gives the same wrong loss)",
            variant=lambda pc, pr, rc, rr, b: dpo_loss(pr, pc, rr, rc, b)),
    Mistake("reference left out", "without the reference, the loss only asks for pc > pr and can drift anywhere; "
            "subtract each reference log-probability from the policy's",
            variant=lambda pc, pr, rc, rr, b: dpo_loss(pc, pr, torch.zeros_like(rc), torch.zeros_like(rr), b)),
    Mistake("summed over pairs", "average over the pairs (.mean()), so the loss does not grow with the batch",
            variant=lambda pc, pr, rc, rr, b: dpo_loss(pc, pr, rc, rr, b) * pc.numel()),
)

# ---------------------------------------------------------------------------- declarations
q1 = Exercise(
    name="The response mask of a conversation",
    variables=("assistant_mask",),
    checker=check_assistant_mask,
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
    checker=check_dpo_weight,
    hints=("Differentiate −log σ(z) with respect to z first; then z = β·m and m = (pc − rc) − (pr − rr).",
           "d/dz [−log σ(z)] = −σ(−z) (because σ'(z) = σ(z)σ(−z)); the chain rule gives d loss / d pc = −β·σ(−β·m), "
           "so w is σ(−β·m), computed elementwise on the (n_pairs,) tensors."),
    solution=solution_of("lesson11", "dpo_weight"),
    mistakes=Q2_MISTAKES,
    success="Correct! A pair ranked right by a wide margin gets a weight near 0, one ranked wrong a weight near 1: "
            "DPO spends its steps on the pairs it still gets wrong, while SFT's loss pushes every answer up forever.",
)

q3 = Exercise(
    name="Capstone: the DPO loss",
    variables=("dpo_loss",),
    checker=check_dpo_loss,
    hints=("Section 6's formula, one line per quantity: the two log-ratios, the margin, the loss per pair, the mean.",
           "chosen log-ratio = pc − rc; rejected log-ratio = pr − rr; margin = their difference; per pair: −logsigmoid "
           "(β·margin) with torch.nn.functional.logsigmoid; return the mean over pairs."),
    solution=solution_of("lesson11", "dpo_loss"),
    mistakes=Q3_MISTAKES,
    success="Correct! Equal to the package's course_utils.losses.dpo_loss, also where β·m is large enough for "
            "−log(sigmoid(·)) to overflow.",
    task=(
        "**Capstone — the DPO loss.** Write `dpo_loss(policy_chosen, policy_rejected, reference_chosen, "
        "reference_rejected, beta)`. Each of the first four is a float tensor `(n_pairs,)` of sequence "
        "log-probabilities `log π(y | x)` — the policy's and the frozen reference's, of the chosen and of the "
        "rejected answer of each pair. Return a scalar tensor: the mean over the pairs of "
        "`−log σ(β·((policy_chosen − reference_chosen) − (policy_rejected − reference_rejected)))`, and keep it "
        "finite when `β·margin` is very negative. The package's `dpo_loss` is refused.\n\n"
        "Checked against the package on random pairs and betas, also scaled ×1000: `q3.check()`. Stuck? "
        "`q3.hint()`; once you have tried, `q3.solution()` shows it, and "
        "`from course_utils.losses import dpo_loss` is the package's copy to move on with."),
    starter=("def dpo_loss(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta=0.1):\n"
             "    # your code here\n"
             "    raise NotImplementedError\n"),
)
