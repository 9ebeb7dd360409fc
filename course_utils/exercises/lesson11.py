"""Lesson 11: a multi-turn chat's response mask (q1), DPO's per-pair gradient weight (q2), capstone: KL per token."""
import torch

from ..instruct import assistant_mask, mean_token_kl, preference_metrics
from ..losses import dpo_gradient_weight, dpo_loss, dpo_loss_sum
from ..tokenization import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from .asserts import Case, Draw, check_function, learner_function
from .core import Exercise, Mistake, solution_of

AUTOGRAD = {"Tensor.backward": torch.Tensor.backward, "torch.autograd.grad": torch.autograd.grad, "torch.func.vjp":
            torch.func.vjp, "torch.autograd.backward": torch.autograd.backward, "torch.func.grad": torch.func.grad}


def checker(name, reference, make_cases, *also, differentiating=False):
    """``name`` against ``reference``, calling neither it nor ``also`` (nor autograd where ``differentiating``)."""
    forbidden = {f"the package's {f.__module__}.{f.__name__}": f for f in (reference, *also)}
    if differentiating:
        forbidden.update({f"autograd ({what})": f for what, f in AUTOGRAD.items()})

    def check(ns) -> None:
        draw = Draw()
        check_function(learner_function(ns, name), reference, (cases := make_cases(draw)), name,
                       twins=make_cases(draw.twin()), probes=cases, forbidden=forbidden)
    return check


def conversation_cases(draw: Draw) -> list[Case]:
    """Right-padded chats of 1 to 3 turns, an [UNK] in each answer; the last cuts an answer before its [EOS]."""
    cases = []
    for what, turns, cut in (("one turn", (1, 1), 0), ("two turns", (2, 2), 0), ("one to three turns", (1, 3), 0),
                             ("the last answer cut before its [EOS]", (1, 2), 1)):
        assistant_id = (user_id := draw.integer(300, 520)) + draw.integer(1, 3)      # above the text ids
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


def logprob_cases(draw: Draw) -> list[Case]:
    """Four ``(n,)`` sequence log-probabilities (tens of nats; pairs ranked right and wrong) and a beta."""
    return [Case(f"{n} pairs, beta={beta}", (*[-(draw.randn(n).abs() * 10 + 5) for _ in range(4)], beta))
            for beta in (0.1, draw.choice((0.05, 0.3)), 1.0) for n in (draw.integer(3, 8),)]


def kl_cases(draw: Draw) -> list[Case]:
    """Two models as tables (logits = the current token's row), a padded batch, its mask; logits up to the hundreds."""
    cases = []
    for what, scale in (("small logits", 1.0), ("ordinary logits", 3.0), ("logits in the hundreds", 300.0)):
        vocab, rows, seq = draw.integer(8, 20), draw.integer(2, 4), draw.integer(6, 10)
        ids, mask = draw.randint(7, vocab, (rows, seq)), torch.zeros(rows, seq, dtype=torch.bool)
        for r in range(rows):
            start, end = draw.integer(2, seq - 3), draw.integer(seq - 2, seq)
            mask[r, start:end] = True
            ids[r, end:] = PAD_ID
        policy, reference = (torch.nn.Embedding.from_pretrained(draw.randn(vocab, vocab, scale=scale)) for _ in "pr")
        cases.append(Case(f"{what}: ids {tuple(ids.shape)}, vocabulary {vocab}, {int(mask[:, 1:].sum())} response "
                          "positions", (policy, reference, ids, mask)))
    return cases


M, W, K = assistant_mask, dpo_gradient_weight, mean_token_kl                 # the references the variants plant bugs in
q1 = Exercise(
    name="The response mask of a conversation", variables=("assistant_mask",),
    checker=checker("assistant_mask", assistant_mask, conversation_cases),
    hints=("Walk along each row: which token switches scoring on, which switches it off, and is the [EOS] in?",
           "keep a flag per row: on at <|assistant|> (not scored), off at <|user|>; while on, score every token but "
           "[PAD], and switch it off after scoring an [EOS]."),
    solution=solution_of("lesson11", "assistant_mask"),
    success="Correct! Every answer is scored with its [EOS]; user turns, chat tokens and padding are never scored.",
    mistakes=(
        Mistake("the <|assistant|> token scored", "the <|assistant|> token is part of the prompt: the model reads it, "
                "never writes it. Start the mask after it", variant=lambda i, u, a: M(i, u, a) | (i == a)),
        Mistake("[EOS] not scored", "score the [EOS] ending each answer too: it is how the model learns to stop",
                variant=lambda i, u, a: M(i, u, a) & (i != EOS_ID)),
        Mistake("first answer only", "there is an answer after *every* <|assistant|>: cover the later turns too",
                variant=lambda i, u, a: M(i, u, a) & ((i == a).cumsum(1) == 1)),
        Mistake("user turns scored", "you kept scoring the user's turns: stop at each [EOS], start after <|assistant|>",
                variant=lambda i, u, a: ((i == a).long().cumsum(1) > 0) & (i != a) & (i != PAD_ID)),
        Mistake("padding scored", "padding after a cut answer is no response token: leave [PAD] out",
                variant=lambda i, u, a: M(i, u, a) | ((i == PAD_ID) & ((i == a).cumsum(1) > 0)))))
q2 = Exercise(
    name="How hard DPO pushes each pair", variables=("dpo_weight",),
    checker=checker("dpo_weight", dpo_gradient_weight, logprob_cases, dpo_loss, dpo_loss_sum, differentiating=True),
    hints=("Differentiate −log σ(z) with respect to z first; then z = β·m and m = (pc − rc) − (pr − rr).",
           "d/dz [−log σ(z)] = −σ(−z) (as σ'(z) = σ(z)σ(−z)); the chain rule gives d loss / d pc = −β·σ(−β·m)."),
    solution=solution_of("lesson11", "dpo_weight"),
    success="Correct! w = σ(−β·m) reads the margin m against the reference, not the ranking. Now my_prediction.",
    mistakes=(
        Mistake("sign flipped", "this weight is largest for the pairs with the largest margin m. d/dz log σ(z) = "
                "σ(−z), so w = σ(−β·m)", variant=lambda pc, pr, rc, rr, b: W(pc, pr, rc, rr, -b)),
        Mistake("beta left out of the sigmoid", "the margin enters the loss as β·m: the sigmoid reads β·m too",
                variant=lambda pc, pr, rc, rr, b: W(pc, pr, rc, rr, 1.0)),
        Mistake("beta multiplied in", "the task defines w without the β outside: d loss / d policy_chosen = −β·w",
                variant=lambda pc, pr, rc, rr, b: b * W(pc, pr, rc, rr, b)),
        Mistake("reference left out", "the margin is measured against the reference: m = (pc − rc) − (pr − rr)",
                variant=lambda pc, pr, rc, rr, b: W(pc, pr, torch.zeros_like(rc), torch.zeros_like(rr), b))))
q3 = Exercise(
    name="Capstone: how far the policy moved", variables=("mean_token_kl",),
    checker=checker("mean_token_kl", mean_token_kl, kl_cases, preference_metrics),
    hints=("Both models read ids[:, :-1]; compare their log-probabilities over the vocabulary, weighted by the policy.",
           "KL(p ‖ q) = Σ_v p_v (log p_v − log q_v) at each position; which function gives log p without a probability "
           "that rounds to 0? Which slice of the mask lines up with the positions you scored?"),
    solution=solution_of("lesson11", "mean_token_kl"),
    success="Correct! Equal to the package's mean_token_kl. Swap the two models to measure the other direction.",
    task=("### Capstone — how far did DPO move the model? (about 30 minutes)\n\nSection 6's penalty is β times a KL "
          "between whole answers sampled from the policy; sampling is slow, so measure a stand-in per token. Write "
          "`mean_token_kl(policy, reference, ids, mask)`: two language models (ids `(batch, seq)` → logits `(batch, "
          "seq, vocab)`), a chat batch and its response mask as `chat_batch` returns them. Return a Python float in "
          "nats: KL(policy ‖ reference) of the next-token distributions, exact over the vocabulary, averaged over the "
          "positions whose next token is a response token, both models reading the given ids. It must stay finite "
          "for logits in the hundreds.\n\nThen, on the held-out right answers, measure KL(dpo ‖ frozen); predict, as "
          "numbers, KL(frozen ‖ dpo) and the KL of a β = 1 model trained like `dpo`; measure both.\n\nStuck? "
          "`q3.hint()`, then `q3.solution()`, or `from course_utils.instruct import mean_token_kl`."),
    starter="def mean_token_kl(policy, reference, ids, mask):\n    # your code here\n    raise NotImplementedError\n",
    mistakes=(
        Mistake("KL the wrong way round", "you computed KL(reference ‖ policy): the task asks for KL(policy ‖ "
                "reference), weighted by the *policy's* probabilities", variant=lambda p, r, ids, m: K(r, p, ids, m)),
        Mistake("mask not shifted", "the logits at position t predict token t + 1: average where the *next* token "
                "is a response token, mask[:, 1:] against the logits of ids[:, :-1]",
                variant=lambda p, r, ids, m: K(p, r, ids, torch.cat([m[:, :1] & False, m[:, :-1]], 1))),
        Mistake("prompt positions averaged too", "average over the response positions only (the mask): the prompt "
                "dilutes the divergence", variant=lambda p, r, ids, m: K(p, r, ids, ids != PAD_ID)),
        Mistake("summed over positions", "average over the response positions (divide by their number), so the value "
                "does not grow with the batch", variant=lambda p, r, ids, m: K(p, r, ids, m) * float(m[:, 1:].sum()))))
