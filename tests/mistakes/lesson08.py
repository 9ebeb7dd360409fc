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
          'def training_pairs(stream, starts, block):\n'
          '    rows = [stream[s:s + block + 1] for s in starts.tolist()]\n'
          '    windows = torch.stack(rows)\n'
          '    return windows[:, :-1], windows[:, 1:]\n'),
    right('q1', 'unfold, as a list',
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
    # q3 (capstone): sampling with a KV cache — bugs planted in the solution (the declared ones live in Q3_MISTAKES)
    capstone('q3', "the package's generate imported", "from course_utils.decoding import generate\n",
             'use your own function'),
    capstone('q3', "the package's generate behind a wrapper",
             'import course_utils.decoding as D\n\n'
             'def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None,\n'
             '             generator=None, forbidden_ids=()):\n'
             '    return D.generate(model, prompt_ids, max_new_tokens, temperature, top_k, top_p,\n'
             '                      generator=generator, forbidden_ids=tuple(forbidden_ids))\n',
             'use your own code'),
    capstone('q3', "the package's logits pipeline",
             plant(plant(plant(GENERATE, "            logits = logits / temperature\n",
                               "            from course_utils.decoding import next_token_logits\n"
                               "            logits = next_token_logits(logits, ids, temperature, top_k, top_p)\n"),
                         "logits = top_k_filter(logits, top_k)", "pass"),
                   "logits = decoding.top_p_filter(logits, top_p)", "pass"),
             'use your own code'),
    capstone('q3', 'no KV cache',
             plant(plant(GENERATE, "model(step_input, cache)", "model(ids)"), "    cache = model.new_cache()\n", ""),
             'without a KV cache'),
    capstone('q3', 'the whole prefix fed into the cache', plant(GENERATE, "model(step_input, cache)",
                                                                "model(ids, cache)"),
             'the cache already holds'),
    capstone('q3', 'a new cache every step',
             plant(GENERATE, "model(step_input, cache)", "model(step_input, model.new_cache())"),
             'new cache at every step'),
    capstone('q3', 'eval mode forgotten', plant(GENERATE, "    model.eval()\n", ""), 'call model.eval()'),
    capstone('q3', 'model.training = False instead of model.eval()',
             plant(GENERATE, "    model.eval()\n", "    model.training = False\n"), 'switches the top module only'),
    capstone('q3', 'no_grad forgotten', plant(GENERATE, "@torch.no_grad()\n", ""), 'torch.no_grad()'),
    capstone('q3', 'temperature 0 not greedy',
             plant(GENERATE, "        if temperature == 0:\n", "        if temperature is None:\n"),
             'temperature 0 means greedy'),
    capstone('q3', 'the global random state', plant(GENERATE, "torch.multinomial(probs, 1, generator=generator)",
                                                    "torch.multinomial(probs, 1)"), 'global random state'),
    capstone('q3', 'a seed fixed inside', plant(GENERATE, "torch.multinomial(probs, 1, generator=generator)",
                                                "torch.multinomial(probs, 1, generator=torch.Generator()"
                                                ".manual_seed(0))"),
             'does not draw from the generator'),
    capstone('q3', 'only the new tokens returned', plant(GENERATE, "    return ids\n",
                                                         "    return ids[:, prompt_ids.size(1):]\n"),
             'only the'),
    capstone('q3', 'sampled from the logits', plant(GENERATE, "torch.multinomial(probs, 1, generator=generator)",
                                                    "torch.multinomial(logits, 1, generator=generator)"),
             'multinomial needs probabilities'),
    capstone('q3', 'token squeezed (breaks batch 1)', plant(GENERATE, ".squeeze(1)", ".squeeze()"),
             'Keep the batch axis'),
    capstone('q3', 'int32 ids returned', plant(GENERATE, "    return ids\n", "    return ids.int()\n"),
             'torch.long'),
]

ALTERNATIVES += [
    # q3: the package's filters, the prompt fed token by token, a preallocated output, per-row draws
    capstone_right('q3', "the package's filters, F.softmax, index_fill",
                   'from course_utils import decoding\n\n\n'
                   '@torch.no_grad()\n'
                   'def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None,\n'
                   '             generator=None, forbidden_ids=()):\n'
                   '    model.eval()\n'
                   '    cache = model.new_cache()\n'
                   '    out = prompt_ids\n'
                   '    logits_all = model(prompt_ids, cache)\n'
                   '    banned = torch.tensor(list(forbidden_ids), dtype=torch.long)\n'
                   '    for step in range(max_new_tokens):\n'
                   '        logits = logits_all[:, -1, :].float().index_fill(1, banned, float("-inf"))\n'
                   '        if temperature == 0:\n'
                   '            nxt = logits.argmax(-1, keepdim=True)\n'
                   '        else:\n'
                   '            logits = decoding.apply_temperature(logits, temperature)\n'
                   '            if top_k:\n'
                   '                logits = decoding.top_k_filter(logits, top_k)\n'
                   '            if top_p is not None:\n'
                   '                logits = decoding.top_p_filter(logits, top_p)\n'
                   '            probs = F.softmax(logits, dim=-1)\n'
                   '            nxt = torch.multinomial(probs, num_samples=1, generator=generator)\n'
                   '        out = torch.cat((out, nxt), dim=-1)\n'
                   '        if step < max_new_tokens - 1:\n'
                   '            logits_all = model(nxt, cache)\n'
                   '    return out\n'),
    capstone_right('q3', 'prompt fed one token at a time, a preallocated output, one draw per row',
                   'def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None,\n'
                   '             generator=None, forbidden_ids=()):\n'
                   '    model.eval()\n'
                   '    batch, prompt_len = prompt_ids.shape\n'
                   '    out = torch.zeros(batch, prompt_len + max_new_tokens, dtype=torch.long)\n'
                   '    out[:, :prompt_len] = prompt_ids\n'
                   '    with torch.inference_mode():\n'
                   '        cache = model.new_cache()\n'
                   '        for t in range(prompt_len - 1):\n'
                   '            model(prompt_ids[:, t:t + 1], cache)\n'
                   '        current = prompt_ids[:, -1:]\n'
                   '        for t in range(prompt_len, prompt_len + max_new_tokens):\n'
                   '            scores = model(current, cache)[:, -1].to(torch.float32)\n'
                   '            allowed = torch.ones(scores.shape[-1], dtype=torch.bool)\n'
                   '            for i in forbidden_ids:\n'
                   '                allowed[i] = False\n'
                   '            scores = scores.masked_fill(~allowed, float("-inf"))\n'
                   '            if temperature == 0:\n'
                   '                chosen = scores.max(dim=-1).indices\n'
                   '            else:\n'
                   '                scores = scores / temperature\n'
                   '                if top_k is not None:\n'
                   '                    kth = scores.topk(top_k, dim=-1).values[:, -1:]\n'
                   '                    scores = scores.masked_fill(scores < kth, float("-inf"))\n'
                   '                if top_p is not None:\n'
                   '                    p, order = scores.softmax(-1).sort(-1, descending=True)\n'
                   '                    kept = p.cumsum(-1) - p < top_p\n'
                   '                    keep = torch.zeros_like(p, dtype=torch.bool).scatter(-1, order, kept)\n'
                   '                    scores = scores.masked_fill(~keep, float("-inf"))\n'
                   '                probs = scores.softmax(dim=-1)\n'
                   '                chosen = torch.stack([torch.multinomial(row, 1, generator=generator)[0]\n'
                   '                                      for row in probs])\n'
                   '            out[:, t] = chosen\n'
                   '            current = out[:, t:t + 1]\n'
                   '    return out\n'),
]
