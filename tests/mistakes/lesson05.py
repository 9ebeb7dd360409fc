"""Wrong answers to lesson05's exercises that only exercise the generic contract (a wrong type, an input changed in
place, a step skipped or repeated, the package's loop borrowed), and right answers written differently. The typical
mistakes each exercise diagnoses are declared in its table (course_utils/exercises/lesson05.py).
"""
from course_utils.exercises import lesson05

from . import Alternative, Mistake, plant

PRELUDE = 'import torch\n'
LOOP = lesson05.q3.solution
PRESENCE = lesson05.q1.solution
FOUND = "recall_leaves_0_at = 30\n"   # the prediction, written by hand (a wrong one is scored, not refused)
SIZES = "same_update_4x16 = True\nsame_update_8_8_16_32 = False\n"


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
    q('q2', 'padding set to -inf in place',
      'def masked_max_pool(hidden, ids, pad_id=0):\n'
      "    hidden[ids == pad_id] = float('-inf')\n"
      '    return hidden.amax(1)\n',
      'changed its input `hidden` in place'),
    q('q2', 'graph cut by detach',
      'def masked_max_pool(hidden, ids, pad_id=0):\n'
      "    return hidden.detach().masked_fill((ids == pad_id)[..., None], float('-inf')).amax(1)\n",
      'carries no gradient'),
    q('q2', 'float32 forced',
      'def masked_max_pool(hidden, ids, pad_id=0):\n'
      "    return hidden.float().masked_fill((ids == pad_id)[..., None], float('-inf')).amax(1)\n",
      'torch.float64'),
    q('q2', 'ids > 0 as the mask',
      'def masked_max_pool(hidden, ids, pad_id=0):\n'
      "    return hidden.masked_fill((ids <= 0)[..., None], float('-inf')).amax(1)\n",
      'pad_id'),
    q('q1', 'no prediction', plant(PRESENCE, "recall_leaves_0_at = 90",
                                   "recall_leaves_0_at = ..."),
      'now write your prediction in `recall_leaves_0_at`'),
    q('q1', 'the prediction as a string', plant(PRESENCE, "recall_leaves_0_at = 90",
                                                "recall_leaves_0_at = 'step 90'"),
      '`recall_leaves_0_at`'),
    q('q1', 'the prediction as a float', plant(PRESENCE, "recall_leaves_0_at = 90", "recall_leaves_0_at = 90.0"),
      'a step: 15, 30'),
    q('q1', 'the prediction past the run', plant(PRESENCE, "recall_leaves_0_at = 90", "recall_leaves_0_at = 900"),
      'a step: 15, 30'),
    q('q3', "the package's loop imported",
      SIZES + 'from course_utils.training import train_one_epoch as train_accumulated\n',
      'use your own function'),
    q('q3', 'no prediction', plant(LOOP, "same_update_8_8_16_32 = False", "same_update_8_8_16_32 = ..."),
      'now write your prediction in `same_update_8_8_16_32`'),
    q('q3', 'optimizer step forgotten',
      plant(LOOP, "        optimizer.step()\n", ""),
      'ran 0 times'),
    q('q3', 'scheduler never stepped',
      plant(LOOP, "        scheduler.step()                       # once per optimizer step\n", ""),
      'scheduler.step() ran 0'),
    q('q3', 'model.train() forgotten',
      plant(LOOP, "    model.train()\n", ""),
      'call model.train()'),
    q('q3', 'loss tensors returned',
      plant(LOOP, "losses.append(batch_loss.item())", "losses.append(batch_loss)"),
      'Python floats'),
    q('q3', 'nothing returned',
      plant(LOOP, "    return losses\n", ""),
      'returned None'),
    q('q3', 'loss computed twice',
      plant(LOOP, "            losses.append(batch_loss.item())\n",
            "            losses.append(loss_fn(model, batch).item())\n"),
      'once for every batch'),
    q('q3', "a wrapper around the package's loop",
      'from course_utils.training import train_one_epoch as package_loop\n'
      '\n'
      'def train_accumulated(model, batches, loss_fn, optimizer, scheduler, accumulate, clip_norm=1.0):\n'
      '    return package_loop(model, batches, loss_fn, optimizer, scheduler, clip_norm, accumulate=accumulate)\n',
      'hands the work to the package'),
    q('q3', "the package's loop through a module alias",
      'import course_utils.training as T\n'
      '\n'
      'def train_accumulated(model, batches, loss_fn, optimizer, scheduler, accumulate, clip_norm=1.0):\n'
      '    return T.train_one_epoch(model, batches, loss_fn, optimizer, scheduler, clip_norm, accumulate=accumulate)\n',
      "calls the package's course_utils.training.train_one_epoch"),
    q('q3', 'divided by accumulate, not by the group size',
      plant(LOOP, "(batch_loss / len(group)).backward()", "(batch_loss / accumulate).backward()"),
      'shorter last group'),
    q('q3', 'the mean loss returned',
      plant(LOOP, "    return losses\n", "    return sum(losses) / len(losses)\n"),
      'should be a list'),
    q('q3', 'model.training = True instead of model.train()',
      plant(LOOP, "    model.train()\n", "    model.training = True\n"), 'eval mode'),
]

ALTERNATIVES = [
    Alternative('lesson05', 'q1', 'ratio to the power',
                FOUND + 'def p_token_present(vocab_size, seq_len):\n'
                '    return 1.0 - ((vocab_size - 1) / vocab_size) ** seq_len\n'),
    Alternative('lesson05', 'q1', 'expm1 and log1p',
                FOUND + 'import math\n\ndef p_token_present(vocab_size, seq_len):\n'
                '    return -math.expm1(seq_len * math.log1p(-1 / vocab_size))\n'),
    Alternative('lesson05', 'q1', 'numpy float64',
                FOUND + 'import numpy as np\n\ndef p_token_present(vocab_size, seq_len):\n'
                '    return 1 - np.power(1 - 1 / np.float64(vocab_size), seq_len)\n'),
    Alternative('lesson05', 'q1', 'a loop over the positions',
                FOUND + 'def p_token_present(vocab_size, seq_len):\n'
                '    absent = 1.0\n'
                '    for _ in range(seq_len):\n'
                '        absent *= 1 - 1 / vocab_size\n'
                '    return 1 - absent\n'),
    Alternative('lesson05', 'q1', 'float64 tensor turned into a float',
                FOUND + 'def p_token_present(vocab_size, seq_len):\n'
                '    miss = 1 - 1 / torch.tensor(vocab_size, dtype=torch.float64)\n'
                '    return (1 - miss ** seq_len).item()\n', PRELUDE),
    Alternative('lesson05', 'q2', 'torch.where and max(...).values',
                'def masked_max_pool(hidden, ids, pad_id=0):\n'
                '    real = (ids != pad_id).unsqueeze(-1)\n'
                "    low = torch.tensor(float('-inf'), dtype=hidden.dtype)\n"
                '    return torch.where(real, hidden, low).max(dim=1).values\n',
                PRELUDE),
    Alternative('lesson05', 'q2', 'a loop over the rows',
                'def masked_max_pool(hidden, ids, pad_id=0):\n'
                '    return torch.stack([hidden[b][ids[b] != pad_id].max(dim=0).values for b in range(len(ids))])\n',
                PRELUDE),
    Alternative('lesson05', 'q2', 'the dtype minimum instead of -inf',
                'def masked_max_pool(hidden, ids, pad_id=0):\n'
                '    low = torch.finfo(hidden.dtype).min\n'
                '    return hidden.masked_fill((ids == pad_id).unsqueeze(2), low).amax(1)\n', PRELUDE),
    Alternative('lesson05', 'q3', 'a counter instead of groups, model.zero_grad',
                SIZES + 'import torch\n\n'
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
