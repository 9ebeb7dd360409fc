"""Wrong answers to lesson05's exercises that only exercise the generic contract (a wrong type, an input changed in
place, a step skipped or repeated, the package's loop borrowed), and right answers written differently. The typical
mistakes each exercise diagnoses are declared in its table (course_utils/exercises/lesson05.py).
"""
from course_utils.exercises import lesson05

from . import Alternative, Mistake, plant

PRELUDE = 'import torch\n'
LOOP = lesson05.q4.solution


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson05", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'string',
      'def p_token_present(vocab_size, seq_len):\n'
      "    return 'about 3 %'\n",
      'should be a number'),
    q('q1', '0-d tensor instead of a float',
      'def p_token_present(vocab_size, seq_len):\n'
      '    return 1 - (1 - 1 / torch.tensor(vocab_size, dtype=torch.float64)) ** seq_len\n',
      'Python float'),
    q('q2', 'padding zeroed in place',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    hidden[ids == pad_id] = 0\n'
      '    return hidden.sum(1) / (ids != pad_id).sum(1, keepdim=True)\n',
      'changed its input `hidden` in place'),
    q('q2', 'graph cut by detach',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    real = (ids != pad_id).to(hidden.dtype)\n'
      '    return (hidden.detach() * real[..., None]).sum(1) / real.sum(1, keepdim=True)\n',
      'carries no gradient'),
    q('q2', 'float32 forced',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    real = (ids != pad_id).float()\n'
      '    return (hidden.float() * real[..., None]).sum(1) / real.sum(1, keepdim=True)\n',
      'torch.float64'),
    q('q2', 'ids > 0 as the mask',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    real = (ids > 0).to(hidden.dtype)\n'
      '    return (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True)\n',
      'pad_id'),
    q('q3', 'three classes hard-coded',
      'def confusion_matrix(predictions, labels, n_classes):\n'
      '    m = torch.zeros(3, 3, dtype=torch.long)\n'
      '    for t, p in zip(labels.tolist(), predictions.tolist()):\n'
      '        m[t, p] += 1\n'
      '    return m\n',
      'should have shape ('),
    q('q3', 'labels changed in place',
      'def confusion_matrix(predictions, labels, n_classes):\n'
      '    flat = labels.mul_(n_classes).add_(predictions)\n'
      '    return torch.bincount(flat, minlength=n_classes ** 2).reshape(n_classes, n_classes)\n',
      'changed its input `labels` in place'),
    q('q4', "the package's loop imported",
      'from course_utils.training import train_one_epoch as train_accumulated\n',
      'use your own function'),
    q('q4', 'optimizer step forgotten',
      plant(LOOP, "        optimizer.step()\n", ""),
      'ran 0 times'),
    q('q4', 'scheduler never stepped',
      plant(LOOP, "        scheduler.step()                       # once per optimizer step\n", ""),
      'scheduler.step() ran 0'),
    q('q4', 'model.train() forgotten',
      plant(LOOP, "    model.train()\n", ""),
      'call model.train()'),
    q('q4', 'loss tensors returned',
      plant(LOOP, "losses.append(batch_loss.item())", "losses.append(batch_loss)"),
      'Python floats'),
    q('q4', 'nothing returned',
      plant(LOOP, "    return losses\n", ""),
      'returned None'),
    q('q4', 'loss computed twice',
      plant(LOOP, "            losses.append(batch_loss.item())\n",
            "            losses.append(loss_fn(model, batch).item())\n"),
      'once for every batch'),
    q('q4', "a wrapper around the package's loop",
      'from course_utils.training import train_one_epoch as package_loop\n'
      '\n'
      'def train_accumulated(model, batches, loss_fn, optimizer, scheduler, accumulate, clip_norm=1.0):\n'
      '    return package_loop(model, batches, loss_fn, optimizer, scheduler, clip_norm, accumulate=accumulate)\n',
      'hands the work to the package'),
    q('q4', "the package's loop through a module alias",
      'import course_utils.training as T\n'
      '\n'
      'def train_accumulated(model, batches, loss_fn, optimizer, scheduler, accumulate, clip_norm=1.0):\n'
      '    return T.train_one_epoch(model, batches, loss_fn, optimizer, scheduler, clip_norm, accumulate=accumulate)\n',
      "calls the package's course_utils.training.train_one_epoch"),
    q('q4', 'divided by accumulate, not by the group size',
      plant(LOOP, "(batch_loss / len(group)).backward()", "(batch_loss / accumulate).backward()"),
      'shorter last group'),
    q('q4', 'the mean loss returned',
      plant(LOOP, "    return losses\n", "    return sum(losses) / len(losses)\n"),
      'should be a list'),
    q('q4', 'model.training = True instead of model.train()',
      plant(LOOP, "    model.train()\n", "    model.training = True\n"), 'eval mode'),
]

ALTERNATIVES = [
    Alternative('lesson05', 'q1', 'ratio to the power',
                'def p_token_present(vocab_size, seq_len):\n'
                '    return 1.0 - ((vocab_size - 1) / vocab_size) ** seq_len\n'),
    Alternative('lesson05', 'q1', 'expm1 and log1p',
                'import math\n\ndef p_token_present(vocab_size, seq_len):\n'
                '    return -math.expm1(seq_len * math.log1p(-1 / vocab_size))\n'),
    Alternative('lesson05', 'q1', 'numpy float64',
                'import numpy as np\n\ndef p_token_present(vocab_size, seq_len):\n'
                '    return 1 - np.power(1 - 1 / np.float64(vocab_size), seq_len)\n'),
    Alternative('lesson05', 'q1', 'a loop over the positions',
                'def p_token_present(vocab_size, seq_len):\n'
                '    absent = 1.0\n'
                '    for _ in range(seq_len):\n'
                '        absent *= 1 - 1 / vocab_size\n'
                '    return 1 - absent\n'),
    Alternative('lesson05', 'q1', 'float64 tensor turned into a float',
                'def p_token_present(vocab_size, seq_len):\n'
                '    miss = 1 - 1 / torch.tensor(vocab_size, dtype=torch.float64)\n'
                '    return (1 - miss ** seq_len).item()\n', PRELUDE),
    Alternative('lesson05', 'q2', 'mask as .float()',
                'def masked_mean_pool(hidden, ids, pad_id=0):\n'
                '    real = (ids != pad_id).float()\n'
                '    return (hidden * real.unsqueeze(-1)).sum(dim=1) / real.sum(dim=1).unsqueeze(-1)\n'),
    Alternative('lesson05', 'q2', 'einsum',
                'def masked_mean_pool(hidden, ids, pad_id=0):\n'
                '    real = (ids != pad_id).to(hidden.dtype)\n'
                '    return torch.einsum("bsd,bs->bd", hidden, real) / real.sum(1, keepdim=True)\n', PRELUDE),
    Alternative('lesson05', 'q2', 'a loop over the rows',
                'def masked_mean_pool(hidden, ids, pad_id=0):\n'
                '    return torch.stack([hidden[b][ids[b] != pad_id].mean(dim=0) for b in range(len(ids))])\n',
                PRELUDE),
    Alternative('lesson05', 'q2', 'masked_fill and an integer count',
                'def masked_mean_pool(hidden, ids, pad_id=0):\n'
                '    pad = (ids == pad_id).unsqueeze(-1)\n'
                '    return hidden.masked_fill(pad, 0).sum(1) / (~pad).sum(1)\n'),
    Alternative('lesson05', 'q3', 'a loop',
                'def confusion_matrix(predictions, labels, n_classes):\n'
                '    m = torch.zeros(n_classes, n_classes, dtype=torch.long)\n'
                '    for t, p in zip(labels.tolist(), predictions.tolist()):\n'
                '        m[t][p] += 1\n'
                '    return m\n', PRELUDE),
    Alternative('lesson05', 'q3', 'int32 with index_put_',
                'def confusion_matrix(predictions, labels, n_classes):\n'
                '    m = torch.zeros((n_classes, n_classes), dtype=torch.int32)\n'
                '    return m.index_put_((labels, predictions), torch.ones_like(labels, dtype=torch.int32),\n'
                '                        accumulate=True)\n', PRELUDE),
    Alternative('lesson05', 'q3', 'one-hot product',
                'import torch.nn.functional as F\n\ndef confusion_matrix(predictions, labels, n_classes):\n'
                '    return F.one_hot(labels, n_classes).T @ F.one_hot(predictions, n_classes)\n', PRELUDE),
    Alternative('lesson05', 'q3', 'bincount per true class',
                'def confusion_matrix(predictions, labels, n_classes):\n'
                '    return torch.stack([torch.bincount(predictions[labels == t], minlength=n_classes)\n'
                '                        for t in range(n_classes)])\n', PRELUDE),
    Alternative('lesson05', 'q4', 'a counter instead of groups, model.zero_grad',
                'import torch\n\n'
                'def train_accumulated(model, batches, loss_fn, optimizer, scheduler, accumulate, clip_norm=1.0):\n'
                '    model.train()\n'
                '    batches = list(batches)\n'
                '    losses = []\n'
                '    model.zero_grad()\n'
                '    for i, batch in enumerate(batches):\n'
                '        size = min(accumulate, len(batches) - (i // accumulate) * accumulate)\n'
                '        loss = loss_fn(model, batch)\n'
                '        (loss / size).backward()\n'
                '        losses.append(float(loss))\n'
                '        if (i + 1) % accumulate == 0 or i + 1 == len(batches):\n'
                '            if clip_norm:\n'
                '                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=clip_norm)\n'
                '            optimizer.step()\n'
                '            scheduler.step()\n'
                '            model.zero_grad()\n'
                '    return losses\n'),
]
