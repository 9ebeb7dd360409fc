"""Reference solutions of lesson 11's exercises: what `qN.solution()` shows (see core.solution_of)."""


import torch
import torch.nn.functional as F


def assistant_mask(ids, user_id, assistant_id):
    from course_utils.tokenization import EOS_ID, PAD_ID

    mask = torch.zeros(ids.shape, dtype=torch.bool)
    for row, tokens in enumerate(ids.tolist()):
        scoring = False
        for t, token in enumerate(tokens):
            if token == assistant_id:        # the answer starts after this token
                scoring = True
            elif token == user_id:           # a user turn: read, never scored
                scoring = False
            elif scoring and token != PAD_ID:
                mask[row, t] = True
                scoring = token != EOS_ID    # [EOS] is scored, then the turn is over
    return mask


def dpo_weight(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta=0.1):
    margin = (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected)
    return torch.sigmoid(-beta * margin)     # d(-log sigmoid(z))/dz = -sigmoid(-z), z = beta * margin


def mean_token_kl(policy, reference, ids, mask):
    with torch.no_grad():
        log_p = F.log_softmax(policy(ids[:, :-1]).float(), dim=-1)      # (batch, seq - 1, vocab)
        log_q = F.log_softmax(reference(ids[:, :-1]).float(), dim=-1)
        kl = (log_p.exp() * (log_p - log_q)).sum(-1)                       # (batch, seq - 1): one KL per position
        return float(kl[mask[:, 1:]].mean())                               # the positions predicting the response
