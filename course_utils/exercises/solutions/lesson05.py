"""Reference solutions of lesson 05's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch


def p_token_present(vocab_size, seq_len):
    return 1 - (1 - 1 / vocab_size) ** seq_len   # 1 minus P(every one of the seq_len positions misses it)


recall_leaves_0_at = 90   # seeds 0-2: 90, 90, 105 — as at 32 ids, though 4 times fewer token-99 sequences went by


def masked_max_pool(hidden, ids, pad_id=0):
    padding = (ids == pad_id)[..., None]                     # (batch, seq, 1)
    return hidden.masked_fill(padding, float("-inf")).amax(dim=1)   # a [PAD] can never be the largest


same_update_4x16 = True        # the mean of 4 equal batch means is the mean over the 64 strings
same_update_8_8_16_32 = False  # a mean of unequal batch means weights the strings of small batches more


def train_accumulated(model, batches, loss_fn, optimizer, scheduler, accumulate, clip_norm=1.0):
    model.train()
    batches = list(batches)
    losses = []
    for start in range(0, len(batches), accumulate):
        group = batches[start:start + accumulate]
        optimizer.zero_grad()                  # once per group: the group's gradients add up in .grad
        for batch in group:
            batch_loss = loss_fn(model, batch)
            (batch_loss / len(group)).backward()     # the sum of the divided gradients is the group's mean
            losses.append(batch_loss.item())
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        scheduler.step()                       # once per optimizer step
    return losses
