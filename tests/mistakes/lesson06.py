"""Typical wrong answers to the exercises of lesson06, each with the phrase its feedback must contain."""
from . import Mistake

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
    q('q2', 'counts hits over all positions',
      'def masked_accuracy(logits, labels):\n'
      '    s = labels != -100\n'
      '    return ((logits.argmax(-1) == labels) & s).sum().item() / s.numel()\n',
      'divided by every position'),
    q('q2', 'percentage',
      'def masked_accuracy(logits, labels):\n'
      '    s = labels != -100\n'
      '    return 100 * (logits.argmax(-1)[s] == labels[s]).float().mean().item()\n',
      'percentage'),
    q('q2', 'max instead of argmax',
      'def masked_accuracy(logits, labels):\n'
      '    s = labels != -100\n'
      '    return (logits.max(-1).values[s] == labels[s]).float().mean().item()\n',
      'argmax(dim=-1)'),
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
