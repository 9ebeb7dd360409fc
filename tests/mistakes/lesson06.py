"""Typical wrong answers to the exercises of lesson06, each with the phrase its feedback must contain."""
from course_utils.exercises import lesson06

from . import Alternative, Mistake, plant

PRELUDE = 'import torch\n'


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson06", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'all [MASK]',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    return ids.masked_fill(selected, 4), ids.masked_fill(~selected, -100)\n',
      'every selected token became [MASK]'),
    q('q1', 'labels everywhere',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    u = torch.rand(ids.shape, generator=generator)\n'
      '    return ids.masked_fill(selected & (u < 0.8), 4), ids.clone()\n',
      'labels equal `ids` everywhere'),
    q('q1', 'labels from corrupted inputs',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    u = torch.rand(ids.shape, generator=generator)\n'
      '    x = ids.masked_fill(selected & (u < 0.8), 4)\n'
      '    return x, x.masked_fill(~selected, -100)\n',
      '*corrupted* ids'),
    q('q1', 'two independent draws',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    u = torch.rand(ids.shape, generator=generator)\n'
      '    r = torch.randint(7, vocab_size, ids.shape, generator=generator)\n'
      '    v = torch.rand(ids.shape, generator=generator)\n'
      '    x = ids.masked_fill(selected & (u < 0.8), 4)\n'
      '    x = torch.where(selected & (v < 0.1), r, x)\n'
      '    return x, ids.masked_fill(~selected, -100)\n',
      'aim for 80 % / 10 % / 10 %'),
    q('q1', 'random ids include specials',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    u = torch.rand(ids.shape, generator=generator)\n'
      '    r = torch.randint(0, vocab_size, ids.shape, generator=generator)\n'
      '    x = ids.masked_fill(selected & (u < 0.8), 4)\n'
      '    x = torch.where(selected & (u >= 0.8) & (u < 0.9), r, x)\n'
      '    return x, ids.masked_fill(~selected, -100)\n',
      'real token'),
    q('q1', 'touches unselected tokens',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    u = torch.rand(ids.shape, generator=generator)\n'
      '    return ids.masked_fill(u < 0.12, 4), ids.masked_fill(~selected, -100)\n',
      'only selected positions may change'),
    q('q1', 'in place',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    u = torch.rand(ids.shape, generator=generator)\n'
      '    labels = ids.masked_fill(~selected, -100)\n'
      '    ids[selected & (u < 0.8)] = 4\n'
      '    return ids, labels\n',
      'in place'),
    q('q1', 'unseeded',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    u = torch.rand(ids.shape)\n'
      '    r = torch.randint(7, vocab_size, ids.shape)\n'
      '    x = ids.masked_fill(selected & (u < 0.8), 4)\n'
      '    x = torch.where(selected & (u >= 0.8) & (u < 0.9), r, x)\n'
      '    return x, ids.masked_fill(~selected, -100)\n',
      'generator=generator'),
    q('q2', 'ignores the mask',
      'def masked_accuracy(logits, labels):\n'
      '    return (logits.argmax(-1) == labels).float().mean().item()\n',
      'divided by every position'),
    q('q3', 'copy of the values',
      'def tie_weights(model):\n'
      '    model.output.weight.data = model.embedding.weight.data.clone()\n'
      '    return model\n',
      'a copy'),
    q('q3', 'transposed',
      'def tie_weights(model):\n'
      '    model.output.weight = torch.nn.Parameter(model.embedding.weight.t())\n'
      '    return model\n',
      'no transpose needed'),
    q('q3', 'new parameter from the same values',
      'def tie_weights(model):\n'
      '    model.output.weight = torch.nn.Parameter(model.embedding.weight.detach().clone())\n'
      '    return model\n',
      'a copy'),
]
MISTAKES += [
    q('q3', 'tied through .data', "def tie_weights(model):\n"
      "    model.output.weight.data = model.embedding.weight.data\n"
      "    return model\n", 'remain two Parameter objects'),
]

# Wrong answers of the kinds the adversarial review found passing: right only on one input, wrong type or dtype,
# inputs changed in place, the generator ignored or replayed, the package's function handed in.
CORRUPT = lesson06.q1.solution
MISTAKES += [
    q('q1', 'vocabulary size hard-coded', plant(CORRUPT, "torch.randint(7, vocab_size,", "torch.randint(7, 300,"),
      'vocab_size argument'),
    q('q1', 'randint upper bound vocab_size - 1',
      plant(CORRUPT, "torch.randint(7, vocab_size,", "torch.randint(7, vocab_size - 1,"), 'exclusive'),
    q('q1', 'random tokens taken from the batch',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    labels = ids.masked_fill(~selected, -100)\n'
      '    u = torch.rand(ids.shape, generator=generator)\n'
      '    pool = ids[selected]\n'
      '    random_ids = pool[torch.randint(0, len(pool), ids.shape, generator=generator)]\n'
      '    inputs = ids.masked_fill(selected & (u < 0.8), 4)\n'
      '    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)\n'
      '    return inputs, labels\n',
      'not uniform'),
    q('q1', "BERT's [MASK] id 103", plant(CORRUPT, "(u < 0.8), 4)", "(u < 0.8), 103)"), '[MASK] has id 4'),
    q('q1', 'generator reseeded inside',
      plant(CORRUPT, "    u = torch.rand(ids.shape, generator=generator)\n",
            "    generator.manual_seed(0)\n    u = torch.rand(ids.shape, generator=generator)\n"),
      'fixed seed inside'),
    q('q1', 'one random number for the whole batch',
      plant(CORRUPT, "u = torch.rand(ids.shape, generator=generator)", "u = torch.rand(1, generator=generator)"),
      'one random number decided'),
    q('q1', 'same number of selected tokens per row assumed',
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    labels = ids.masked_fill(~selected, -100)\n'
      '    chosen = ids[selected].view(ids.size(0), -1)\n'
      '    u = torch.rand(chosen.shape, generator=generator)\n'
      '    r = torch.randint(7, vocab_size, chosen.shape, generator=generator)\n'
      '    chosen = torch.where(u < 0.8, torch.full_like(chosen, 4), torch.where(u < 0.9, r, chosen))\n'
      '    inputs = ids.clone()\n'
      '    inputs[selected] = chosen.flatten()\n'
      '    return inputs, labels\n',
      'different numbers of selected positions'),
    q('q1', 'float labels', plant(CORRUPT, "labels = ids.masked_fill(~selected, -100)",
                                  "labels = ids.float().masked_fill(~selected, -100)"), 'torch.int64'),
    q('q1', "the package's mask_tokens",
      'from course_utils.mlm import mask_tokens\n\n'
      'def corrupt_selected(ids, selected, vocab_size, generator):\n'
      '    inputs, labels = mask_tokens(ids.masked_fill(~selected, 0), vocab_size, generator, select_prob=1.0)\n'
      '    return torch.where(selected, inputs, ids), labels\n',
      "calls the package's course_utils.mlm.mask_tokens"),
    q('q2', '0-d tensor returned',
      'def masked_accuracy(logits, labels):\n'
      '    s = labels != -100\n'
      '    return (logits.argmax(-1)[s] == labels[s]).float().mean()\n',
      'Python float'),
    q('q2', 'logits changed in place',
      'def masked_accuracy(logits, labels):\n'
      '    logits[labels == -100] = float("-inf")\n'
      '    s = labels != -100\n'
      '    return (logits.argmax(-1)[s] == labels[s]).float().mean().item()\n',
      'changed its input `logits` in place'),
    q('q2', "the package's masked_accuracy",
      'from course_utils import mlm\n\n'
      'def masked_accuracy(logits, labels):\n'
      '    return mlm.masked_accuracy(logits, labels)\n',
      "calls the package's course_utils.mlm.masked_accuracy"),
    q('q3', 'model not returned', 'def tie_weights(model):\n    model.output.weight = model.embedding.weight\n',
      'returned None'),
    q('q3', 'output layer returned',
      'def tie_weights(model):\n    model.output.weight = model.embedding.weight\n    return model.output\n',
      'not the model it was given'),
    q('q3', 'a new Parameter around the embedding weight',
      'def tie_weights(model):\n'
      '    model.output.weight = torch.nn.Parameter(model.embedding.weight)\n'
      '    return model\n',
      'remain two Parameter objects'),
    q('q3', 'a new output layer without bias',
      'def tie_weights(model):\n'
      '    vocab_size, d_model = model.embedding.weight.shape\n'
      '    model.output = torch.nn.Linear(d_model, vocab_size, bias=False)\n'
      '    model.output.weight = model.embedding.weight\n'
      '    return model\n',
      'bias changed'),
    q('q3', 'a fresh shared matrix',
      'def tie_weights(model):\n'
      '    shared = torch.nn.Parameter(torch.randn(model.embedding.weight.shape))\n'
      '    model.embedding.weight = shared\n'
      '    model.output.weight = shared\n'
      '    return model\n',
      'new Parameter'),
    q('q3', 'values copied with copy_',
      'def tie_weights(model):\n'
      '    with torch.no_grad():\n'
      '        model.output.weight.copy_(model.embedding.weight)\n'
      '    return model\n',
      'a copy'),
]

MISTAKES += [
    q('q3', 'bias zeroed while tying', 'def tie_weights(model):\n'
                                       '    model.output.weight = model.embedding.weight\n'
                                       '    if model.output.bias is not None:\n'
                                       '        model.output.bias.data.zero_()\n'
                                       '    return model\n', 'also changed `output.bias`'),
]

MISTAKES += [  # classes no single input shows: state kept across calls, an unstable formula
    q('q2', 'accuracy cached per shape',
      '_cache = {}\n\n\ndef masked_accuracy(logits, labels):\n'
      '    if tuple(logits.shape) not in _cache:\n'
      '        s = labels != -100\n'
      '        _cache[tuple(logits.shape)] = (logits.argmax(-1)[s] == labels[s]).float().mean().item()\n'
      '    return _cache[tuple(logits.shape)]\n',
      'something is kept across calls'),
]

ALTERNATIVES = [
    Alternative('lesson06', 'q1', 'random ids drawn first, clone and index',
                'def corrupt_selected(ids, selected, vocab_size, generator):\n'
                '    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n'
                '    u = torch.rand(ids.shape, generator=generator)\n'
                '    inputs = ids.clone()\n'
                '    to_mask = selected & (u < 0.8)\n'
                '    to_random = selected & (u >= 0.8) & (u < 0.9)\n'
                '    inputs[to_mask] = 4\n'
                '    inputs[to_random] = random_ids[to_random]\n'
                '    labels = torch.full_like(ids, -100)\n'
                '    labels[selected] = ids[selected]\n'
                '    return inputs, labels\n', PRELUDE),
    Alternative('lesson06', 'q1', 'conditional second draw',
                'def corrupt_selected(ids, selected, vocab_size, generator):\n'
                '    u = torch.rand(ids.shape, generator=generator)\n'
                '    v = torch.rand(ids.shape, generator=generator)\n'
                '    to_mask = selected & (u < 0.8)\n'
                '    to_random = selected & ~to_mask & (v < 0.5)\n'
                '    n = int(to_random.sum())\n'
                '    inputs = ids.masked_fill(to_mask, 4)\n'
                '    inputs[to_random] = torch.randint(7, vocab_size, (n,), generator=generator)\n'
                '    return inputs, torch.where(selected, ids, torch.full_like(ids, -100))\n', PRELUDE),
    Alternative('lesson06', 'q1', 'multinomial fates',
                'def corrupt_selected(ids, selected, vocab_size, generator):\n'
                '    fate = torch.multinomial(torch.tensor([0.8, 0.1, 0.1]), ids.numel(), replacement=True,\n'
                '                             generator=generator).view(ids.shape)\n'
                '    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n'
                '    inputs = torch.where(selected & (fate == 0), torch.full_like(ids, 4), ids)\n'
                '    inputs = torch.where(selected & (fate == 1), random_ids, inputs)\n'
                '    return inputs, ids.masked_fill(~selected, -100)\n', PRELUDE),
    Alternative('lesson06', 'q1', 'a loop over the selected positions',
                'def corrupt_selected(ids, selected, vocab_size, generator):\n'
                '    inputs, labels = ids.clone(), torch.full_like(ids, -100)\n'
                '    for row, col in selected.nonzero().tolist():\n'
                '        labels[row, col] = ids[row, col]\n'
                '        u = torch.rand((), generator=generator).item()\n'
                '        if u < 0.8:\n'
                '            inputs[row, col] = 4\n'
                '        elif u < 0.9:\n'
                '            inputs[row, col] = int(torch.randint(7, vocab_size, (), generator=generator))\n'
                '    return inputs, labels\n', PRELUDE),
    Alternative('lesson06', 'q2', 'sum of hits over the count',
                'def masked_accuracy(logits, labels):\n'
                '    hits = (logits.argmax(dim=2) == labels).sum()\n'
                '    return hits.item() / (labels != -100).sum().item()\n'),
    Alternative('lesson06', 'q2', 'selected logits first, float()',
                'def masked_accuracy(logits, labels):\n'
                '    keep = labels.ne(-100)\n'
                '    predictions = logits[keep].argmax(-1)\n'
                '    return float((predictions == labels[keep]).double().mean())\n'),
    Alternative('lesson06', 'q2', 'a loop over the positions',
                'def masked_accuracy(logits, labels):\n'
                '    right = total = 0\n'
                '    for b in range(labels.shape[0]):\n'
                '        for t in range(labels.shape[1]):\n'
                '            if labels[b, t] != -100:\n'
                '                total += 1\n'
                '                right += int(logits[b, t].argmax() == labels[b, t])\n'
                '    return right / total\n'),
    Alternative('lesson06', 'q3', 'the output weight shared into the embedding',
                'def tie_weights(model):\n    model.embedding.weight = model.output.weight\n    return model\n'),
    Alternative('lesson06', 'q3', 'register_parameter',
                'def tie_weights(model):\n'
                '    model.output.register_parameter("weight", model.embedding.weight)\n'
                '    return model\n'),
    Alternative('lesson06', 'q3', 'setattr',
                'def tie_weights(model):\n'
                '    setattr(model.output, "weight", getattr(model.embedding, "weight"))\n'
                '    return model\n'),
]

# Capstone q4: BERT masking as a whole (selection + step 2 + 80/10/10 + labels), token for token with the package.
MASKING = lesson06.q4.solution
STEP_2 = ("    if empty.any():                                                # then, and only then, a second draw\n"
          "        scores = torch.rand(ids.shape, generator=generator).masked_fill(~real, -1.0)\n"
          "        best = torch.arange(ids.size(1)) == scores.argmax(dim=1, keepdim=True)   # (batch, seq)\n"
          "        selected = selected | (empty[:, None] & best)\n")
MISTAKES += [
    q('q4', 'padding excluded, other specials selected', plant(MASKING, "real = ids >= 7", "real = ids != 0"),
      'only real tokens, ids >= 7, may be selected'),
    q('q4', 'special ids assumed 0, 1, 2',
      plant(MASKING, "real = ids >= 7", "real = (ids != 0) & (ids != 1) & (ids != 2)"),
      'only real tokens, ids >= 7, may be selected'),
    q('q4', 'select_prob hard-coded', plant(MASKING, "< select_prob)", "< 0.15)"), 'use the select_prob argument'),
    q('q4', 'step 2 missing', plant(MASKING, STEP_2, ""), 'none was selected'),
    q('q4', 'step 2 also in rows without text',
      plant(MASKING, "empty = real.any(dim=1) & ~selected.any(dim=1)", "empty = ~selected.any(dim=1)"),
      'has no real token, yet a position of it was selected'),
    q('q4', 'step 2 drawn even when no row needs it',
      plant(MASKING, STEP_2,
            "    scores = torch.rand(ids.shape, generator=generator).masked_fill(~real, -1.0)\n"
            "    best = torch.arange(ids.size(1)) == scores.argmax(dim=1, keepdim=True)\n"
            "    selected = selected | (empty[:, None] & best)\n"),
      'although no row needed it'),
    q('q4', 'step 2 picks the first real token',
      plant(MASKING, STEP_2,
            "    first = torch.arange(ids.size(1)) == real.long().argmax(dim=1, keepdim=True)\n"
            "    selected = selected | (empty[:, None] & first)\n"),
      'selected its first real token'),
    q('q4', 'random ids drawn before u',
      plant(MASKING,
            "    u = torch.rand(ids.shape, generator=generator)                 # one number decides 80/10/10\n"
            "    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n",
            "    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n"
            "    u = torch.rand(ids.shape, generator=generator)\n"),
      'before the 80/10/10 numbers'),
    q('q4', 'selection numbers reused for the 80/10/10 decision',
      'def mask_tokens(ids, vocab_size, generator, select_prob=0.15):\n'
      '    real = ids >= 7\n'
      '    first = torch.rand(ids.shape, generator=generator)\n'
      '    selected = real & (first < select_prob)\n'
      '    empty = real.any(dim=1) & ~selected.any(dim=1)\n'
      '    if empty.any():\n'
      '        scores = torch.rand(ids.shape, generator=generator).masked_fill(~real, -1.0)\n'
      '        selected = selected | (empty[:, None] & (torch.arange(ids.size(1)) == scores.argmax(1, keepdim=True)))\n'
      '    u = first / select_prob\n'
      '    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n'
      '    inputs = ids.masked_fill(selected & (u < 0.8), 4)\n'
      '    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)\n'
      '    return inputs, ids.masked_fill(~selected, -100)\n',
      "reused the selection's uniform numbers"),
    q('q4', 'random ids drawn only where needed',
      plant(MASKING,
            "    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n"
            "    inputs = ids.masked_fill(selected & (u < 0.8), 4)              # 4 = [MASK]\n"
            "    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)\n",
            "    inputs = ids.masked_fill(selected & (u < 0.8), 4)\n"
            "    swap = selected & (u >= 0.8) & (u < 0.9)\n"
            "    inputs[swap] = torch.randint(7, vocab_size, (int(swap.sum()),), generator=generator)\n"),
      'only for the positions that need one'),
    q('q4', 'random draw skipped when unused',
      plant(MASKING,
            "    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n"
            "    inputs = ids.masked_fill(selected & (u < 0.8), 4)              # 4 = [MASK]\n"
            "    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)\n",
            "    inputs = ids.masked_fill(selected & (u < 0.8), 4)\n"
            "    swap = selected & (u >= 0.8) & (u < 0.9)\n"
            "    if swap.any():\n"
            "        random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n"
            "        inputs = torch.where(swap, random_ids, inputs)\n"),
      'another amount of random numbers'),
    q('q4', 'labels everywhere', plant(MASKING, "labels = ids.masked_fill(~selected, -100)", "labels = ids.clone()"),
      'labels equal `ids` everywhere'),
    q('q4', 'labels from the corrupted ids',
      plant(MASKING, "    return inputs, labels\n", "    return inputs, inputs.masked_fill(~selected, -100)\n"),
      '*corrupted* ids'),
    q('q4', 'ignore index -1', plant(MASKING, "masked_fill(~selected, -100)", "masked_fill(~selected, -1)"),
      'the ignore index is -100'),
    q('q4', 'labels only where the token changed',
      plant(MASKING, "    return inputs, labels\n", "    return inputs, labels.masked_fill(inputs == ids, -100)\n"),
      'labelled only the positions that changed'),
    q('q4', 'random ids include specials',
      plant(MASKING, "torch.randint(7, vocab_size,", "torch.randint(0, vocab_size,"), 'real token'),
    q('q4', 'randint upper bound vocab_size - 1',
      plant(MASKING, "torch.randint(7, vocab_size,", "torch.randint(7, vocab_size - 1,"), 'exclusive'),
    q('q4', 'vocabulary size hard-coded',
      plant(MASKING, "torch.randint(7, vocab_size,", "torch.randint(7, 500,"), 'outside the vocabulary'),
    q('q4', "BERT's [MASK] id 103", plant(MASKING, "(u < 0.8), 4)", "(u < 0.8), 103)"), '[MASK] has id 4'),
    q('q4', 'all selected tokens masked',
      plant(MASKING, "inputs = ids.masked_fill(selected & (u < 0.8), 4)", "inputs = ids.masked_fill(selected, 4)"),
      '80 % / 10 % / 10 %'),
    q('q4', 'two independent draws for the fates',
      plant(MASKING, "(u >= 0.8) & (u < 0.9), random_ids",
            "(torch.rand(ids.shape, generator=generator) < 0.1), random_ids"),
      '80 % / 10 % / 10 %'),
    q('q4', 'one random number for the whole batch',
      plant(MASKING, "u = torch.rand(ids.shape, generator=generator)  ", "u = torch.rand(1, generator=generator)  "),
      '80 % / 10 % / 10 %'),
    q('q4', 'random and unchanged ranges swapped',
      plant(MASKING, "(u >= 0.8) & (u < 0.9), random_ids", "(u >= 0.9), random_ids"), 'swapped the random and'),
    q('q4', "two conditional draws (Hugging Face's recipe)",
      plant(MASKING,
            "    inputs = ids.masked_fill(selected & (u < 0.8), 4)              # 4 = [MASK]\n"
            "    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)\n",
            "    to_mask = selected & (u < 0.8)\n"
            "    to_random = selected & ~to_mask & (torch.rand(ids.shape, generator=generator) < 0.5)\n"
            "    inputs = torch.where(to_random, random_ids, ids.masked_fill(to_mask, 4))\n"),
      'draw ONE uniform tensor u'),
    q('q4', 'generator ignored', MASKING.replace(", generator=generator)", ")"), 'global random state'),
    q('q4', 'generator reseeded inside',
      plant(MASKING, "    real = ids >= 7 ", "    generator.manual_seed(0)\n    real = ids >= 7 "),
      'fixed seed inside'),
    q('q4', 'a copy of the generator',
      plant(MASKING, "    real = ids >= 7 ",
            "    generator = torch.Generator().manual_seed(generator.initial_seed())\n    real = ids >= 7 "),
      'returned the first masks again'),
    q('q4', 'ids changed in place',
      plant(MASKING, "    inputs = ids.masked_fill(selected & (u < 0.8), 4)              # 4 = [MASK]\n",
            "    ids[selected & (u < 0.8)] = 4\n    inputs = ids\n"),
      'in place'),
    q('q4', 'float labels', plant(MASKING, "labels = ids.masked_fill(", "labels = ids.float().masked_fill("),
      'torch.int64'),
    q('q4', 'a fixed count per row',
      'def mask_tokens(ids, vocab_size, generator, select_prob=0.15):\n'
      '    real = ids >= 7\n'
      '    scores = torch.rand(ids.shape, generator=generator).masked_fill(~real, -1.0)\n'
      '    k = (real.sum(1) * select_prob).round().long().clamp(min=1)\n'
      '    rank = scores.argsort(dim=1, descending=True).argsort(dim=1)\n'
      '    selected = real & (rank < k[:, None])\n'
      '    u = torch.rand(ids.shape, generator=generator)\n'
      '    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n'
      '    inputs = ids.masked_fill(selected & (u < 0.8), 4)\n'
      '    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)\n'
      '    return inputs, ids.masked_fill(~selected, -100)\n',
      'your selection differs'),
    q('q4', "the package's mask_tokens",
      'from course_utils import mlm\n\n'
      'def mask_tokens(ids, vocab_size, generator, select_prob=0.15):\n'
      '    return mlm.mask_tokens(ids, vocab_size, generator, select_prob)\n',
      "calls the package's course_utils.mlm.mask_tokens"),
    q('q4', 'select_prob without a default',
      plant(MASKING, "select_prob=0.15):", "select_prob):"), 'Give select_prob its default'),
]

# Capstone q5: the masked-LM loss, written from log-probabilities.
LOSS = lesson06.q5.solution
MISTAKES += [
    q('q5', 'python float', plant(LOSS, "return -picked.mean()", "return -picked.mean().item()"), 'Python float'),
    q('q5', 'F.cross_entropy with ignore_index',
      'import torch.nn.functional as F\n\n'
      'def mlm_loss(logits, labels):\n'
      '    return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100)\n',
      'torch.nn.functional.cross_entropy'),
    q('q5', 'nn.CrossEntropyLoss',
      'def mlm_loss(logits, labels):\n'
      '    return torch.nn.CrossEntropyLoss()(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))\n',
      'torch.nn.functional.cross_entropy'),
    q('q5', 'F.nll_loss', 'import torch.nn.functional as F\n\n'
      'def mlm_loss(logits, labels):\n'
      '    keep = labels != -100\n'
      '    return F.nll_loss(torch.log_softmax(logits[keep], -1), labels[keep])\n',
      'torch.nn.functional.nll_loss'),
    q('q5', "the package's masked_lm_loss",
      'from course_utils import losses\n\n'
      'def mlm_loss(logits, labels):\n'
      '    return losses.masked_lm_loss(logits, labels)\n',
      "calls the package's course_utils.losses.masked_lm_loss"),
    q('q5', 'logits changed in place',
      'def mlm_loss(logits, labels):\n'
      '    selected = labels != -100\n'
      '    logits.sub_(logits.max(-1, keepdim=True).values)\n'
      '    log_probs = logits - logits.exp().sum(-1, keepdim=True).log()\n'
      '    return -log_probs[selected].gather(1, labels[selected][:, None]).mean()\n',
      'in place'),
    q('q5', 'graph cut by torch.tensor',
      plant(LOSS, "return -picked.mean()", "return torch.tensor(-picked.mean().item(), requires_grad=True)"),
      'no graph back to `logits`'),
    q('q5', 'logsumexp detached',
      'def mlm_loss(logits, labels):\n'
      '    keep = labels != -100\n'
      '    z = logits[keep]\n'
      '    picked = z.gather(1, labels[keep][:, None])[:, 0]\n'
      '    return (z.logsumexp(-1).detach() - picked).mean()\n',
      'the gradient with respect to `logits` differs'),
    q('q5', 'vocabulary size hard-coded',
      'def mlm_loss(logits, labels):\n'
      '    flat, targets = logits.view(-1, 500), labels.view(-1)\n'
      '    keep = targets != -100\n'
      '    return -torch.log_softmax(flat[keep], -1).gather(1, targets[keep][:, None]).mean()\n',
      'never a fixed number'),
    q('q5', 'float64 result', plant(LOSS, "torch.log_softmax(logits[selected], dim=-1)",
                                    "torch.log_softmax(logits[selected].double(), dim=-1)"), 'torch.float32'),
    q('q5', 'shape (1,)', plant(LOSS, "return -picked.mean()", "return -picked.mean(0)"), '0-d tensor'),
    q('q5', 'gather at -100',
      'def mlm_loss(logits, labels):\n'
      '    nll = -torch.log_softmax(logits, -1).gather(-1, labels[..., None])[..., 0]\n'
      '    return nll[labels != -100].mean()\n',
      'which is no index'),
]

MISTAKES += [  # an unstable formula: right on ordinary logits only
    q('q5', 'log of softmax plus a small constant',
      plant(LOSS, "torch.log_softmax(logits[selected], dim=-1)",
            "torch.log(torch.softmax(logits[selected], dim=-1) + 1e-12)"),
      'right on ordinary logits, wrong on large ones'),
]

ALTERNATIVES += [
    Alternative('lesson06', 'q4', 'clone, index and a loop over the rows for step 2',
                'def mask_tokens(ids, vocab_size, generator, select_prob=0.15):\n'
                '    real = ids >= 7\n'
                '    selected = (torch.rand(ids.shape, generator=generator) < select_prob) & real\n'
                '    need = [r for r in range(ids.size(0)) if real[r].any() and not selected[r].any()]\n'
                '    if need:\n'
                '        scores = torch.rand(ids.shape, generator=generator)\n'
                '        scores = torch.where(real, scores, torch.full_like(scores, -1.0))\n'
                '        for r in need:\n'
                '            selected[r, scores[r].argmax()] = True\n'
                '    u = torch.rand(ids.shape, generator=generator)\n'
                '    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n'
                '    inputs = ids.clone()\n'
                '    inputs[selected & (u < 0.8)] = 4\n'
                '    swap = selected & (u >= 0.8) & (u < 0.9)\n'
                '    inputs[swap] = random_ids[swap]\n'
                '    labels = torch.full_like(ids, -100)\n'
                '    labels[selected] = ids[selected]\n'
                '    return inputs, labels\n', PRELUDE),
    Alternative('lesson06', 'q4', "exercise 1's corrupt_selected reused",
                'def corrupt_selected(ids, selected, vocab_size, generator):\n'
                '    u = torch.rand(ids.shape, generator=generator)\n'
                '    r = torch.randint(7, vocab_size, ids.shape, generator=generator)\n'
                '    x = torch.where(selected & (u < 0.8), torch.full_like(ids, 4), ids)\n'
                '    x = torch.where(selected & (u >= 0.8) & (u < 0.9), r, x)\n'
                '    return x, torch.where(selected, ids, torch.full_like(ids, -100))\n'
                '\n'
                'def mask_tokens(ids, vocab_size, generator, select_prob=0.15):\n'
                '    real = ids.ge(7)\n'
                '    chosen = real.logical_and(torch.rand(ids.shape, generator=generator).lt(select_prob))\n'
                '    lonely = real.any(1).logical_and(chosen.any(1).logical_not())\n'
                '    if bool(lonely.any()):\n'
                '        best = (torch.rand(ids.shape, generator=generator) * real).argmax(1)\n'
                '        chosen = chosen.clone()\n'
                '        rows = lonely.nonzero().flatten()\n'
                '        chosen[rows, best[rows]] = True\n'
                '    return corrupt_selected(ids, chosen, vocab_size, generator)\n', PRELUDE),
    Alternative('lesson06', 'q4', 'one-hot pick, -inf fill and an offset randint',
                'import torch.nn.functional as F\n\n'
                'def mask_tokens(ids, vocab_size, generator, select_prob=0.15):\n'
                '    batch, seq = ids.shape\n'
                '    real = ids >= 7\n'
                '    selected = torch.rand(batch, seq, generator=generator).lt(select_prob) & real\n'
                '    empty = real.any(-1) & ~selected.any(-1)\n'
                '    if empty.sum() > 0:\n'
                '        scores = torch.rand(batch, seq, generator=generator).masked_fill(~real, float("-inf"))\n'
                '        pick = F.one_hot(scores.argmax(-1), seq).bool()\n'
                '        selected = selected | (pick & empty.unsqueeze(-1))\n'
                '    fate = torch.rand(batch, seq, generator=generator)\n'
                '    swap = torch.randint(0, vocab_size - 7, (batch, seq), generator=generator) + 7\n'
                '    out = torch.where(selected & (fate < 0.8), torch.tensor(4), ids)\n'
                '    out = torch.where(selected & (0.8 <= fate) & (fate < 0.9), swap, out)\n'
                '    return out, torch.where(selected, ids, torch.tensor(-100))\n', PRELUDE),
    Alternative('lesson06', 'q5', 'logsumexp minus the picked logit, flattened',
                'def mlm_loss(logits, labels):\n'
                '    flat = logits.reshape(-1, logits.size(-1))\n'
                '    targets = labels.reshape(-1)\n'
                '    keep = targets != -100\n'
                '    z = flat[keep]\n'
                '    picked = z[torch.arange(len(z)), targets[keep]]\n'
                '    return (torch.logsumexp(z, dim=-1) - picked).mean()\n', PRELUDE),
    Alternative('lesson06', 'q5', 'clamped gather, masked sum over the count',
                'def mlm_loss(logits, labels):\n'
                '    keep = (labels != -100).to(logits.dtype)\n'
                '    log_probs = torch.nn.functional.log_softmax(logits, dim=2)\n'
                '    nll = -log_probs.gather(2, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)\n'
                '    return (nll * keep).sum() / keep.sum()\n', PRELUDE),
    Alternative('lesson06', 'q5', 'one-hot labels',
                'import torch.nn.functional as F\n\n'
                'def mlm_loss(logits, labels):\n'
                '    keep = labels != -100\n'
                '    one_hot = F.one_hot(labels[keep], logits.size(-1)).to(logits.dtype)\n'
                '    return -(one_hot * logits[keep].log_softmax(-1)).sum(-1).mean()\n', PRELUDE),
    Alternative('lesson06', 'q5', 'a loop over the positions, float64 inside',
                'def mlm_loss(logits, labels):\n'
                '    terms = []\n'
                '    for b in range(labels.shape[0]):\n'
                '        for t in range(labels.shape[1]):\n'
                '            if labels[b, t] != -100:\n'
                '                z = logits[b, t].double()\n'
                '                terms.append(torch.logsumexp(z, 0) - z[labels[b, t]])\n'
                '    return torch.stack(terms).mean().float()\n', PRELUDE),
]
