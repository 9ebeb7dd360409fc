"""Typical wrong answers to the exercises of lesson05, each with the phrase its feedback must contain."""
from course_utils.exercises import lesson05

from . import Mistake, plant

PRELUDE = 'import torch\n'


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson05", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'expected count',
      'def p_token_present(vocab_size, seq_len):\n'
      '    return seq_len / vocab_size\n',
      'expected number'),
    q('q1', 'absent',
      'def p_token_present(vocab_size, seq_len):\n'
      '    return (1 - 1 / vocab_size) ** seq_len\n',
      'absent'),
    q('q1', 'every position',
      'def p_token_present(vocab_size, seq_len):\n'
      '    return (1 / vocab_size) ** seq_len\n',
      'every position'),
    q('q1', 'one position',
      'def p_token_present(vocab_size, seq_len):\n'
      '    return 1 / vocab_size\n',
      'one given position'),
    q('q1', 'off by one',
      'def p_token_present(vocab_size, seq_len):\n'
      '    return 1 - (1 - 1 / vocab_size) ** (seq_len - 1)\n',
      'expected'),
    q('q1', 'string',
      'def p_token_present(vocab_size, seq_len):\n'
      "    return 'about 3 %'\n",
      'return a number'),
    q('q2', 'plain mean',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    return hidden.mean(1)\n',
      'plain mean'),
    q('q2', 'divided by full length',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    return (hidden * (ids != 0).float()[..., None]).sum(1) / ids.size(1)\n',
      'full length'),
    q('q2', 'cls',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    return hidden[:, 0]\n',
      '[CLS] pooling'),
    q('q2', 'inverted mask',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    m = (ids == 0).float()\n'
      '    return (hidden * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1)\n',
      'skipped the real tokens'),
    q('q2', 'kept sequence axis',
      'def masked_mean_pool(hidden, ids, pad_id=0):\n'
      '    return hidden * (ids != 0).float()[..., None]\n',
      '(batch, d_model)'),
    q('q3', 'transposed',
      'def confusion_matrix(predictions, labels, n):\n'
      '    m = torch.zeros(n, n, dtype=torch.long)\n'
      '    for t, p in zip(labels, predictions):\n'
      '        m[p, t] += 1\n'
      '    return m\n',
      'swapped'),
    q('q3', 'row-normalised',
      'def confusion_matrix(predictions, labels, n):\n'
      '    m = torch.zeros(n, n)\n'
      '    for t, p in zip(labels, predictions):\n'
      '        m[t, p] += 1\n'
      '    return m / m.sum(1, keepdim=True)\n',
      'counts'),
    q('q3', 'wrong shape',
      'def confusion_matrix(predictions, labels, n):\n'
      '    return torch.bincount(labels * n + predictions, minlength=n * n)\n',
      '(3, 3)'),
    q('q3', 'only correct ones',
      'def confusion_matrix(predictions, labels, n):\n'
      '    m = torch.zeros(n, n, dtype=torch.long)\n'
      '    for t, p in zip(labels, predictions):\n'
      '        m[t, t] += int(t == p)\n'
      '    return m\n',
      'add up'),
]

LOOP = lesson05.q4.solution
MISTAKES += [
    q('q2', 'pad_id ignored (hard-coded 0)',
      "def masked_mean_pool(hidden, ids, pad_id=0):\n    real = (ids != 0).float()\n"
      "    return (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True)\n", 'pad_id'),
    q('q2', '[CLS] excluded from the mean',
      "def masked_mean_pool(hidden, ids, pad_id=0):\n    real = (ids != pad_id).float()\n    real[:, 0] = 0\n"
      "    return (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True)\n", '[CLS] counts'),
    # q4 (capstone): train_one_epoch — bugs planted in the solution
    q('q4', "the package's loop imported", "from course_utils.training import train_one_epoch\n",
      'use your own function'),
    q('q4', 'zero_grad forgotten', plant(LOOP, "        optimizer.zero_grad()\n", ""), 'zero_grad is forgotten'),
    q('q4', 'zero_grad between backward and step',
      plant(plant(LOOP, "        optimizer.zero_grad()\n", ""), "        optimizer.step()\n",
            "        optimizer.zero_grad()\n        optimizer.step()\n"), 'found no gradients'),
    q('q4', 'backward forgotten', plant(LOOP, "        loss.backward()\n", ""), 'found no gradients'),
    q('q4', 'optimizer step forgotten', plant(LOOP, "        optimizer.step()\n", ""), 'never called'),
    q('q4', 'scheduler stepped per epoch',
      plant(plant(LOOP, "        scheduler.step()          # once per optimizer step: warmup and decay count steps\n",
                  ""),
            "    return losses\n", "    scheduler.step()\n    return losses\n"),
      'per epoch instead of per step'),
    q('q4', 'scheduler never stepped', plant(LOOP, "        scheduler.step()          # once per optimizer step: "
                                                   "warmup and decay count steps\n", ""), 'never called'),
    q('q4', 'scheduler before the optimizer',
      plant(plant(LOOP, "        scheduler.step()          # once per optimizer step: warmup and decay count steps\n",
                  ""),
            "        optimizer.step()\n",
            "        scheduler.step()\n        optimizer.step()\n"),
      'before optimizer.step()'),
    q('q4', 'no clipping', plant(LOOP, "            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)\n",
                                 "            pass\n"), 'clip between backward and step'),
    q('q4', 'clipped before backward',
      plant(plant(LOOP, "        if clip_norm is not None:\n"
                        "            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)\n", ""),
            "        loss.backward()\n",
            "        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)\n"
            "        loss.backward()\n"),
      'clip between backward and step'),
    q('q4', 'model.train() forgotten', plant(LOOP, "    model.train()\n", ""), 'call model.train()'),
    q('q4', 'loss tensors returned', plant(LOOP, "losses.append(loss.item())", "losses.append(loss)"), 'Python floats'),
    q('q4', 'nothing returned', plant(LOOP, "    return losses\n", ""), 'return the list'),
    q('q4', 'loss computed twice', plant(LOOP, "        losses.append(loss.item())\n",
                                         "        losses.append(loss_fn(model, batch).item())\n"),
      'once for every batch'),
]
MISTAKES += [
    q('q4', "a wrapper around the package's loop",
      "from course_utils.training import train_one_epoch as package_loop\n\n"
      "def train_one_epoch(*args, **kwargs):\n    return package_loop(*args, **kwargs)\n",
      'hands the work to the package'),
]
