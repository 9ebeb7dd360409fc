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


def train_one_epoch(model, batches, loss_fn, optimizer, scheduler, clip_norm=1.0):
    model.train()
    losses = []
    for batch in batches:
        optimizer.zero_grad()
        loss = loss_fn(model, batch)
        loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        scheduler.step()          # once per optimizer step: warmup and decay count steps
        losses.append(loss.item())
    return losses
