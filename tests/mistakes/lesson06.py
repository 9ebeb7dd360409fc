"""Wrong answers to lesson06's exercises that only the generic contract catches (the typical mistakes are declared
in course_utils/exercises/lesson06.py), and right answers written differently, which must be accepted."""
from . import Alternative, Mistake

PRELUDE = 'import torch\n'


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson06", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'a deep copy returned',
      'import copy\n\n'
      'def tie_weights(model):\n'
      '    model = copy.deepcopy(model)\n'
      '    model.output.weight = model.embedding.weight\n'
      '    return model\n',
      'return the model'),
    q('q1', 'a new output layer',
      'def tie_weights(model):\n'
      '    d_model = model.embedding.weight.shape[1]\n'
      '    model.output = torch.nn.Linear(d_model, model.embedding.weight.shape[0])\n'
      '    model.output.weight = model.embedding.weight\n'
      '    return model\n',
      "bias changed"),
    q('q1', 'returned in eval mode',
      'def tie_weights(model):\n'
      '    model.output.weight = model.embedding.weight\n'
      '    return model.eval()\n',
      'in eval mode'),
    q('q1', 'the embedding rescaled before tying',
      'def tie_weights(model):\n'
      '    model.embedding.weight.data.mul_(2.0)\n'
      '    model.output.weight = model.embedding.weight\n'
      '    return model\n',
      "neither the embedding's values nor the output layer's"),
    q('q2', '[MASK] read as [MASK] or [SEP]',
      'def accuracy_by_fate(logits, inputs, labels):\n'
      '    hit, sel = logits.argmax(-1) == labels, labels != -100\n'
      '    fates = {"[MASK]": (inputs == 4) | (inputs == 3), "random": (inputs != 4) & (inputs != labels),\n'
      '             "unchanged": inputs == labels}\n'
      '    return {k: hit[sel & w].float().mean().item() for k, w in fates.items()}\n',
      "['[MASK]'] should be"),
    q('q2', 'tensors, not floats',
      'def accuracy_by_fate(logits, inputs, labels):\n'
      '    hit, sel = logits.argmax(-1) == labels, labels != -100\n'
      '    return {"[MASK]": hit[sel & (inputs == 4)].float().mean(),\n'
      '            "random": hit[sel & (inputs != 4) & (inputs != labels)].float().mean(),\n'
      '            "unchanged": hit[sel & (inputs == labels)].float().mean()}\n',
      'float'),
    q('q2', "the package's function",
      'from course_utils.mlm import accuracy_at_mask, masked_accuracy\n\n'
      'def accuracy_by_fate(logits, inputs, labels):\n'
      '    return {"[MASK]": accuracy_at_mask(logits, inputs, labels),\n'
      '            "random": masked_accuracy(logits, labels.masked_fill((inputs == 4) | (inputs == labels), -100)),\n'
      '            "unchanged": masked_accuracy(logits, labels.masked_fill(inputs != labels, -100))}\n',
      "calls the package's course_utils.mlm.accuracy_at_mask"),
    q('q2', 'a list, not a dict',
      'def accuracy_by_fate(logits, inputs, labels):\n'
      '    hit, sel = logits.argmax(-1) == labels, labels != -100\n'
      '    return [hit[sel & w].float().mean().item() for w in (inputs == 4, (inputs != 4) & (inputs != labels),\n'
      '                                                         inputs == labels)]\n',
      'dict'),
    q('q3', "the package's function",
      'from course_utils import mlm\n\n'
      'def whole_word_mask(ids, starts, vocab_size, generator, select_prob=0.15):\n'
      '    return mlm.whole_word_mask(ids, starts, vocab_size, generator, select_prob)\n',
      "calls the package's course_utils.mlm.whole_word_mask"),
    q('q3', 'BOS and EOS taken for real pieces',
      'from course_utils.exercises.solutions import lesson06 as s\n'
      'import inspect\n'
      'exec(inspect.getsource(s.whole_word_mask).replace("real = ids >= 7", "real = ids >= 5"))\n',
      'got a label'),
    q('q3', 'random ids one short of vocab_size',
      'from course_utils.exercises.solutions import lesson06 as s\n'
      'import inspect\n'
      'exec(inspect.getsource(s.whole_word_mask).replace("randint(7, vocab_size,", "randint(7, vocab_size - 1,"))\n',
      'random replacement ids should be drawn from every id in'),
    q('q3', 'float labels',
      'def whole_word_mask(ids, starts, vocab_size, generator, select_prob=0.15):\n'
      '    return ids.clone(), torch.full(ids.shape, -100.0)\n',
      'two torch.long tensors'),
    q('q3', 'nothing chosen',
      'def whole_word_mask(ids, starts, vocab_size, generator, select_prob=0.15):\n'
      '    return ids.clone(), torch.full_like(ids, -100)\n',
      'one word, chosen at random'),
]

ALTERNATIVES = [
    Alternative('lesson06', 'q1', 'the output weight shared into the embedding',
                'def tie_weights(model):\n    model.embedding.weight = model.output.weight\n    return model\n'),
    Alternative('lesson06', 'q1', 'register_parameter',
                'def tie_weights(model):\n'
                '    model.output.register_parameter("weight", model.embedding.weight)\n'
                '    return model\n'),
    Alternative('lesson06', 'q1', 'setattr',
                'def tie_weights(model):\n'
                '    setattr(model.output, "weight", getattr(model.embedding, "weight"))\n'
                '    return model\n'),
    Alternative('lesson06', 'q2', 'sums of hits over counts',
                'def accuracy_by_fate(logits, inputs, labels):\n'
                '    hit = logits.argmax(dim=2).eq(labels)\n'
                '    out = {}\n'
                '    for name, where in (("[MASK]", inputs.eq(4)), ("random", inputs.ne(4) & inputs.ne(labels)),\n'
                '                        ("unchanged", inputs.eq(labels))):\n'
                '        where = where & labels.ne(-100)\n'
                '        out[name] = hit[where].sum().item() / where.sum().item()\n'
                '    return out\n'),
    Alternative('lesson06', 'q2', 'a loop over the positions',
                'def accuracy_by_fate(logits, inputs, labels):\n'
                '    right, total = {}, {}\n'
                '    for b in range(labels.shape[0]):\n'
                '        for t in range(labels.shape[1]):\n'
                '            if labels[b, t] == -100:\n'
                '                continue\n'
                '            x = int(inputs[b, t])\n'
                '            fate = "[MASK]" if x == 4 else "unchanged" if x == int(labels[b, t]) else "random"\n'
                '            total[fate] = total.get(fate, 0) + 1\n'
                '            right[fate] = right.get(fate, 0) + int(logits[b, t].argmax() == labels[b, t])\n'
                '    return {fate: right.get(fate, 0) / total[fate] for fate in ("[MASK]", "random", "unchanged")}\n'),
    Alternative('lesson06', 'q3', 'a loop over rows and words, one fate per word',
                'def whole_word_mask(ids, starts, vocab_size, generator, select_prob=0.15):\n'
                '    inputs, labels = ids.clone(), torch.full_like(ids, -100)\n'
                '    for row in range(ids.shape[0]):\n'
                '        words, current = [], None\n'
                '        for col in range(ids.shape[1]):\n'
                '            if ids[row, col] < 7:\n'
                '                continue\n'
                '            if starts[row, col]:\n'
                '                current = [col]\n'
                '                words.append(current)\n'
                '            elif current is not None:\n'
                '                current.append(col)\n'
                '        if not words:\n'
                '            continue\n'
                '        chosen = [w for w in words if torch.rand((), generator=generator) < select_prob]\n'
                '        if not chosen:\n'
                '            chosen = [words[int(torch.randint(len(words), (), generator=generator))]]\n'
                '        for word in chosen:\n'
                '            fate = torch.rand((), generator=generator).item()\n'
                '            for col in word:\n'
                '                labels[row, col] = ids[row, col]\n'
                '                if fate < 0.8:\n'
                '                    inputs[row, col] = 4\n'
                '                elif fate < 0.9:\n'
                '                    inputs[row, col] = int(torch.randint(7, vocab_size, (), generator=generator))\n'
                '    return inputs, labels\n', PRELUDE),
    Alternative('lesson06', 'q3', 'word numbers compared on a square table',
                'def whole_word_mask(ids, starts, vocab_size, generator, select_prob=0.15):\n'
                '    real = ids >= 7\n'
                '    starts = starts & real\n'
                '    word = torch.cumsum(starts.long(), 1) * real\n'
                '    u = torch.rand(ids.shape, generator=generator)\n'
                '    picked = starts & (u < select_prob)\n'
                '    for row in torch.nonzero(starts.any(1) & ~picked.any(1)).flatten().tolist():\n'
                '        options = torch.nonzero(starts[row]).flatten()\n'
                '        k = torch.randint(len(options), (1,), generator=generator)\n'
                '        picked[row, options[k]] = True\n'
                '    picked_numbers = torch.where(picked, word, torch.zeros_like(word))\n'
                '    same = (word[:, :, None] == picked_numbers[:, None, :]) & (word[:, :, None] > 0)\n'
                '    selected = same.any(-1)\n'
                '    fate = torch.rand(ids.shape, generator=generator)\n'
                '    swap = torch.randint(7, vocab_size, ids.shape, generator=generator)\n'
                '    inputs = torch.where(selected & (fate < 0.8), torch.full_like(ids, 4), ids)\n'
                '    inputs = torch.where(selected & (fate >= 0.8) & (fate < 0.9), swap, inputs)\n'
                '    return inputs, torch.where(selected, ids, torch.full_like(ids, -100))\n', PRELUDE),
]
