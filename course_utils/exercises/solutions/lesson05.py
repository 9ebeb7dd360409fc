"""Reference solutions of lesson 05's exercises: what `qN.solution()` shows (see core.solution_of)."""

import torch


def p_token_present(vocab_size, seq_len):
    return 1 - (1 - 1 / vocab_size) ** seq_len


def masked_mean_pool(hidden, ids, pad_id=0):
    real = (ids != pad_id).to(hidden.dtype)                  # (batch, seq)
    return (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True).clamp(min=1)


def confusion_matrix(predictions, labels, n_classes):
    flat = torch.bincount(labels * n_classes + predictions, minlength=n_classes * n_classes)
    return flat.reshape(n_classes, n_classes)               # row = true class, column = predicted


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
