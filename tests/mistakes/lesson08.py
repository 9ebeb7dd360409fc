"""Typical wrong answers to the exercises of lesson08, each with the phrase its feedback must contain, and right
answers written differently (which must be accepted)."""
from course_utils.exercises import lesson08

from . import Alternative, Mistake, plant

PRELUDE = "import torch\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson08", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson08", exercise, name, code, PRELUDE)


TOP_P = lesson08.q2.solution

MISTAKES = [
    # q1: training pairs from a stream
    q('q1', "the package's shift behind a wrapper",
      'import course_utils.losses as L\n\n'
      'def training_pairs(stream, starts, block):\n'
      '    return L.shift_for_lm(stream[starts[:, None] + torch.arange(block + 1)])\n',
      'use your own code'),
    q('q1', 'hard-coded block',
      'def training_pairs(stream, starts, block):\n'
      '    idx = starts[:, None] + torch.arange(8)\n'
      '    return stream[idx], stream[idx + 1]\n',
      'shape'),
    q('q1', 'float ids',
      'def training_pairs(stream, starts, block):\n'
      '    idx = starts[:, None] + torch.arange(block)\n'
      '    return stream[idx].float(), stream[idx + 1].float()\n',
      'torch.int64'),
    q('q1', 'rolled instead of cut',
      'def training_pairs(stream, starts, block):\n'
      '    inputs = stream[starts[:, None] + torch.arange(block)]\n'
      '    return inputs, inputs.roll(-1, dims=1)\n',
      'differ'),
    q('q1', 'bug named as the right target',
      'colleague_target_offset = 1\n' + lesson08.q1.solution.split('colleague_target_offset = -1', 1)[1],
      'that is the right target'),
    q('q1', 'bug named as a copy of the input',
      'colleague_target_offset = 0\n' + lesson08.q1.solution.split('colleague_target_offset = -1', 1)[1],
      'every target would equal its input'),
    q('q1', 'right pairs, bug not named',
      lesson08.q1.solution.replace('colleague_target_offset = -1', ''),
      'name the colleague'),
    # q2: top-p
    q('q2', 'zero instead of -inf',
      plant(TOP_P, "float('-inf')", '0.0'),
      "float('-inf')"),
    q('q2', 'masked_fill_ changes the caller\'s logits',
      plant(TOP_P, 'logits.masked_fill(', 'logits.masked_fill_('),
      'in place'),
    q('q2', 'strictly below p including the token',
      plant(TOP_P, 'probs.cumsum(dim=-1) - probs < p', 'probs.cumsum(dim=-1) < p'),
      'mass *before* it'),
    q('q2', 'hard-coded p',
      plant(TOP_P, '- probs < p', '- probs < 0.9'),
      'should keep tokens'),
    q('q2', 'probabilities returned',
      plant(TOP_P, "    return logits.masked_fill(~keep, float('-inf'))\n",
            "    return torch.softmax(logits.masked_fill(~keep, float('-inf')), dim=-1)\n"),
      'returned probabilities'),
    q('q2', 'float32 softmax output for float64 logits',
      plant(TOP_P, "    return logits.masked_fill(", "    return logits.float().masked_fill("),
      'torch.float64'),
    q('q2', "the package's filter",
      'import course_utils.decoding as D\n\n'
      'def top_p_filter(logits, p):\n'
      '    return D.top_p_filter(logits, p)\n',
      'use your own code'),
]

ALTERNATIVES = [
    # q1
    right('q1', 'a loop over starts, stacked',
          'colleague_target_offset = -1\n'
          'def training_pairs(stream, starts, block):\n'
          '    rows = [stream[s:s + block + 1] for s in starts.tolist()]\n'
          '    windows = torch.stack(rows)\n'
          '    return windows[:, :-1], windows[:, 1:]\n'),
    right('q1', 'unfold, as a list',
          'colleague_target_offset = torch.tensor(-1)\n'
          'def training_pairs(stream, starts, block):\n'
          '    windows = stream.unfold(0, block + 1, 1)[starts]\n'
          '    return [windows[:, :block].clone(), windows[:, 1:].clone()]\n'),
    # q2
    right('q2', "HF's ascending rule",
          'def top_p_filter(logits, p):\n'
          '    sorted_logits, sorted_indices = torch.sort(logits, descending=False)\n'
          '    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)\n'
          '    remove_sorted = cumulative <= (1 - p)\n'
          '    remove_sorted[..., -1:] = False\n'
          '    remove = remove_sorted.scatter(1, sorted_indices, remove_sorted)\n'
          "    return logits.masked_fill(remove, float('-inf'))\n"),
    right('q2', 'first token forced, argsort',
          'def top_p_filter(logits, p):\n'
          '    order = logits.argsort(dim=-1, descending=True)\n'
          '    probs = torch.softmax(logits, dim=-1).gather(-1, order)\n'
          '    keep_sorted = probs.cumsum(dim=-1) - probs < p\n'
          '    keep_sorted[:, 0] = True\n'
          '    keep = torch.empty_like(keep_sorted).scatter_(-1, order, keep_sorted)\n'
          "    return torch.where(keep, logits, float('-inf'))\n"),
    right('q2', 'a loop over rows',
          'def top_p_filter(logits, p):\n'
          '    out = logits.clone()\n'
          '    probs = torch.softmax(logits, dim=-1)\n'
          '    for row in range(logits.shape[0]):\n'
          '        mass = 0.0\n'
          '        for i in probs[row].argsort(descending=True).tolist():\n'
          '            if mass >= p:\n'
          "                out[row, i] = float('-inf')\n"
          '            mass += float(probs[row, i])\n'
          '    return out\n'),
]


# ---------------------------------------------------------------------------- q3: the capstone
GENERATE = lesson08.q3.solution
MODEL_PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def capstone(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson08", exercise, name, code, message, MODEL_PRELUDE)


def capstone_right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson08", exercise, name, code, MODEL_PRELUDE)


MISTAKES += [
    # q3 (capstone): generating past the context — bugs planted in the solution (the declared ones live in Q3_MISTAKES)
    capstone('q3', "the package's generate imported", "from course_utils.decoding import generate as generate_long\n",
             "course_utils.decoding.generate"),
    capstone('q3', 'no KV cache while the row fits', plant(GENERATE, "        if ids.size(1) <= max_len:",
                                                           "        if False:"), 'rule needs'),
    capstone('q3', 'the cache kept growing past max_len',
             plant(GENERATE, "        if ids.size(1) <= max_len:", "        if True:"), 'cannot grow past max_len'),
    capstone('q3', 'the whole row fed into the cache', plant(GENERATE, "logits = model(step, cache)",
                                                             "logits = model(ids, model.new_cache())"), 'rule needs'),
    capstone('q3', 'eval mode forgotten', plant(GENERATE, "    model.eval()\n", ""), 'model.eval()'),
    capstone('q3', 'no_grad forgotten', plant(GENERATE, "@torch.no_grad()\n", ""), 'torch.no_grad()'),
    capstone('q3', 'only the new tokens returned', plant(GENERATE, "    return ids\n",
                                                         "    return ids[:, prompt_ids.size(1):]\n"), 'shape'),
    capstone('q3', 'int32 ids returned', plant(GENERATE, "    return ids\n", "    return ids.int()\n"), 'long ids'),
]

ALTERNATIVES += [
    # q3: the two phases as two loops, the window read with narrow
    capstone_right('q3', 'two loops, narrow',
                   '@torch.no_grad()\n'
                   'def generate_long(model, prompt_ids, max_new_tokens):\n'
                   '    model.eval()\n'
                   '    L = model.config.max_len\n'
                   '    ids, cache, step, left = prompt_ids.clone(), model.new_cache(), prompt_ids, max_new_tokens\n'
                   '    while left and ids.size(1) <= L:\n'
                   '        nxt = model(step, cache)[:, -1].argmax(-1, keepdim=True)\n'
                   '        ids, step, left = torch.cat([ids, nxt], 1), nxt, left - 1\n'
                   '    for _ in range(left):\n'
                   '        window = ids.narrow(1, ids.size(1) - L, L)\n'
                   '        ids = torch.cat([ids, model(window)[:, -1].argmax(-1, keepdim=True)], 1)\n'
                   '    return ids\n'),
]
