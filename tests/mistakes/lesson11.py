"""Typical wrong answers to the exercises of lesson11 that no declared table holds, each with the phrase its
feedback must contain, and right answers written differently (which must be accepted)."""
from course_utils.exercises import lesson11

from . import Alternative, Mistake, plant

PRELUDE = "import torch\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson11", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson11", exercise, name, code, PRELUDE)


MASK = lesson11.q1.solution
WEIGHT = lesson11.q2.solution
KL = lesson11.q3.solution

MISTAKES = [
    q('q1', 'ints instead of bools', plant(MASK, "    return mask", "    return mask.long()"), 'torch.bool'),
    q('q1', 'an [UNK] in an answer left out', plant(MASK, "    return mask", "    return mask & (ids != 1)"),
      'assistant_mask'),
    q('q2', 'autograd.grad through the loss', "def dpo_weight(pc, pr, rc, rr, beta=0.1):\n"
      "    pc = pc.detach().clone().requires_grad_(True)\n"
      "    loss = -F.logsigmoid(beta * ((pc - rc) - (pr - rr))).sum()\n"
      "    (grad,) = torch.autograd.grad(loss, pc)\n"
      "    return -grad / beta\n", 'autograd'),
    q('q2', 'backward through the loss', "def dpo_weight(pc, pr, rc, rr, beta=0.1):\n"
      "    pc = pc.detach().clone().requires_grad_(True)\n"
      "    (-F.logsigmoid(beta * ((pc - rc) - (pr - rr))).sum()).backward()\n"
      "    return -pc.grad / beta\n", 'autograd'),
    q('q2', 'a float', plant(WEIGHT, "    return torch.sigmoid(-beta * margin)",
                             "    return float(torch.sigmoid(-beta * margin)[0])"), 'torch.Tensor'),
    q('q3', 'a tensor', plant(KL, "        return float(kl[mask[:, 1:]].mean())",
                              "        return kl[mask[:, 1:]].mean()"), 'float'),
    q('q3', 'log of a softmax that rounds to 0', plant(
        KL, "        log_p = F.log_softmax(policy(ids[:, :-1]).float(), dim=-1)",
        "        log_p = torch.log(torch.softmax(policy(ids[:, :-1]).float(), dim=-1))"), 'nan'),
]

ALTERNATIVES = [
    right('q1', 'vectorised with cumulative sums',
          "def assistant_mask(ids, user_id, assistant_id):\n"
          "    mask = torch.zeros(ids.shape, dtype=torch.bool)\n"
          "    for r in range(ids.size(0)):\n"
          "        row = ids[r].tolist()\n"
          "        starts = [t for t, x in enumerate(row) if x == assistant_id]\n"
          "        for s in starts:\n"
          "            t = s + 1\n"
          "            while t < len(row) and row[t] not in (user_id, assistant_id, 0):\n"
          "                mask[r, t] = True\n"
          "                if row[t] == 6:\n"
          "                    break\n"
          "                t += 1\n"
          "    return mask\n"),
    right('q2', 'the margin spelled out per side', "def dpo_weight(pc, pr, rc, rr, beta=0.1):\n"
          "    chosen, rejected = pc - rc, pr - rr\n"
          "    return 1 / (1 + torch.exp(beta * (chosen - rejected)))\n"),
    right('q3', 'full logits, sliced after', "@torch.no_grad()\n"
          "def mean_token_kl(policy, reference, ids, mask):\n"
          "    p = policy(ids).log_softmax(-1)[:, :-1]\n"
          "    q = reference(ids).log_softmax(-1)[:, :-1]\n"
          "    kl = F.kl_div(q, p, log_target=True, reduction='none').sum(-1)\n"
          "    keep = mask[:, 1:]\n"
          "    return (kl * keep).sum().item() / keep.sum().item()\n"),
]
