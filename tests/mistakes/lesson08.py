"""Typical wrong answers to the exercises of lesson08, each with the phrase its feedback must contain, and right
answers written differently (which must be accepted)."""
from course_utils.exercises import lesson08

from . import Alternative, Mistake, plant

PRELUDE = "import torch\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson08", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson08", exercise, name, code, PRELUDE)


SHIFT = lesson08.q1.solution
TEMPERATURE = lesson08.q2.solution
TOP_K = lesson08.q3.solution
TOP_P = lesson08.q4.solution

MISTAKES = [
    # q1: the causal shift
    q('q1', "the package's function",
      'from course_utils.losses import shift_for_lm\n',
      'use your own code'),
    q('q1', "the package's function behind a wrapper",
      'import course_utils.losses as L\n\n'
      'def shift_for_lm(ids):\n'
      '    return L.shift_for_lm(ids)\n',
      'use your own code'),
    q('q1', 'hard-coded sequence length',
      'def shift_for_lm(ids):\n'
      '    return ids[:, :63], ids[:, 1:64]\n',
      'exactly one position'),
    q('q1', 'batch size taken as the length',
      'def shift_for_lm(ids):\n'
      '    n = ids.size(0)\n'
      '    return ids[:, :n - 1], ids[:, 1:n]\n',
      'exactly one position'),
    q('q1', 'float ids',
      'def shift_for_lm(ids):\n'
      '    return ids[:, :-1].float(), ids[:, 1:].float()\n',
      'torch.int64'),
    q('q1', 'special ids rewritten in place',
      'def shift_for_lm(ids):\n'
      '    ids[ids == 6] = 0          # [EOS] is never an input\n'
      '    return ids[:, :-1], ids[:, 1:]\n',
      'in place'),
    q('q1', 'rolled instead of cut',
      'def shift_for_lm(ids):\n'
      '    return ids, ids.roll(-1, dims=1)\n',
      'exactly one position'),
    # q2: temperature
    q('q2', 'logits divided in place',
      'def temperature_probs(logits, temperature):\n'
      '    logits /= temperature\n'
      '    return torch.softmax(logits, dim=-1)\n',
      'in place'),
    q('q2', 'hard-coded temperature',
      'def temperature_probs(logits, temperature):\n'
      '    return torch.softmax(logits / 0.7, dim=-1)\n',
      'differs'),
    q('q2', 'float64 result',
      'def temperature_probs(logits, temperature):\n'
      '    return torch.softmax(logits.double() / temperature, dim=-1)\n',
      'torch.float32'),
    q('q2', 'squeezed rows',
      'def temperature_probs(logits, temperature):\n'
      '    return torch.softmax(logits.squeeze() / temperature, dim=-1)\n',
      'shape'),
    q('q2', "the package's temperature",
      'from course_utils import decoding\n\n'
      'def temperature_probs(logits, temperature):\n'
      '    return torch.softmax(decoding.apply_temperature(logits, temperature), dim=-1)\n',
      'use your own code'),
    # q3: top-k
    q('q3', 'zero instead of -inf',
      plant(TOP_K, "float('-inf')", '0.0'),
      "float('-inf')"),
    q('q3', 'mask returned',
      'def top_k_filter(logits, k):\n'
      '    return logits >= logits.topk(k, dim=-1).values[..., -1:]\n',
      'not a 0/1 or bool mask'),
    q('q3', 'masked_fill_ changes the caller\'s logits',
      plant(TOP_K, 'logits.masked_fill(', 'logits.masked_fill_('),
      'in place'),
    q('q3', 'smallest float instead of -inf',
      plant(TOP_K, "float('-inf')", 'torch.finfo(logits.dtype).min'),
      "not float('-inf')"),
    q('q3', 'probabilities returned',
      plant(TOP_K, "    return logits.masked_fill(logits < kth_largest, float('-inf'))\n",
            "    return torch.softmax(logits.masked_fill(logits < kth_largest, float('-inf')), dim=-1)\n"),
      'returned probabilities'),
    q('q3', 'one threshold for the whole batch',
      plant(TOP_K, '.values[..., -1:]', '.values.min()'),
      'should keep tokens'),
    q('q3', 'float32 output buffer',
      'def top_k_filter(logits, k):\n'
      '    values, indices = logits.topk(k, dim=-1)\n'
      "    return torch.full(logits.shape, float('-inf')).scatter(-1, indices, values)\n",
      'raised'),
    q('q3', 'cast to float32',
      plant(TOP_K, "    return logits.masked_fill(", "    logits = logits.float()\n    return logits.masked_fill("),
      'torch.float64'),
    q('q3', "the package's filter",
      'from course_utils.decoding import next_token_logits\n\n'
      'def top_k_filter(logits, k):\n'
      '    return next_token_logits(logits, torch.zeros(logits.size(0), 1, dtype=torch.long), top_k=k)\n',
      'use your own code'),
    # q4: top-p
    q('q4', 'zero instead of -inf',
      plant(TOP_P, "float('-inf')", '0.0'),
      "float('-inf')"),
    q('q4', 'masked_fill_ changes the caller\'s logits',
      plant(TOP_P, 'logits.masked_fill(', 'logits.masked_fill_('),
      'in place'),
    q('q4', 'strictly below p including the token',
      plant(TOP_P, 'probs.cumsum(dim=-1) - probs < p', 'probs.cumsum(dim=-1) < p'),
      'mass *before* it'),
    q('q4', 'hard-coded p',
      plant(TOP_P, '- probs < p', '- probs < 0.9'),
      'should keep tokens'),
    q('q4', 'probabilities returned',
      plant(TOP_P, "    return logits.masked_fill(~keep, float('-inf'))\n",
            "    return torch.softmax(logits.masked_fill(~keep, float('-inf')), dim=-1)\n"),
      'returned probabilities'),
    q('q4', 'float32 softmax output for float64 logits',
      plant(TOP_P, "    return logits.masked_fill(", "    return logits.float().masked_fill("),
      'torch.float64'),
    q('q4', "the package's filter",
      'import course_utils.decoding as D\n\n'
      'def top_p_filter(logits, p):\n'
      '    return D.top_p_filter(logits, p)\n',
      'use your own code'),
]

MISTAKES += [  # an unstable formula: the scores' maximum not subtracted
    q('q2', 'softmax written without the maximum subtracted',
      'def temperature_probs(logits, temperature):\n'
      '    e = (logits / temperature).exp()\n'
      '    return e / e.sum(-1, keepdim=True)\n',
      'overflows'),
]

ALTERNATIVES = [
    # q1
    right('q1', 'narrow',
          'def shift_for_lm(ids):\n'
          '    n = ids.size(1) - 1\n'
          '    return ids.narrow(1, 0, n), ids.narrow(1, 1, n)\n'),
    right('q1', 'copies returned as a list',
          'def shift_for_lm(ids):\n'
          '    inputs = ids[..., :-1].clone()\n'
          '    targets = ids[..., 1:].clone()\n'
          '    return [inputs, targets]\n'),
    right('q1', 'index_select',
          'def shift_for_lm(ids):\n'
          '    positions = torch.arange(ids.shape[1])\n'
          '    return ids.index_select(1, positions[:-1]), ids.index_select(1, positions[1:])\n'),
    # q2
    right('q2', 'softmax by hand, max subtracted',
          'def temperature_probs(logits, temperature):\n'
          '    z = logits / temperature\n'
          '    z = z - z.max(dim=-1, keepdim=True).values\n'
          '    e = z.exp()\n'
          '    return e / e.sum(dim=-1, keepdim=True)\n'),
    right('q2', 'F.softmax on dim 1 of the 2-D logits',
          'def temperature_probs(logits, temperature):\n'
          '    return F.softmax(logits * (1.0 / temperature), dim=1)\n'),
    right('q2', 'exp of log_softmax',
          'def temperature_probs(logits, temperature):\n'
          '    return torch.exp(F.log_softmax(logits.div(temperature), dim=-1))\n'),
    # q3
    right('q3', 'scatter of topk indices (exactly k)',
          'def top_k_filter(logits, k):\n'
          '    keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, logits.topk(k, dim=-1).indices, True)\n'
          "    return logits.masked_fill(~keep, float('-inf'))\n"),
    right('q3', 'sort and torch.where',
          'def top_k_filter(logits, k):\n'
          '    kth = logits.sort(dim=-1, descending=True).values[:, k - 1:k]\n'
          "    return torch.where(logits >= kth, logits, torch.full_like(logits, float('-inf')))\n"),
    right('q3', 'full_like buffer filled by scatter',
          'def top_k_filter(logits, k):\n'
          '    values, indices = torch.topk(logits, k)\n'
          "    return torch.full_like(logits, float('-inf')).scatter(-1, indices, values)\n"),
    right('q3', 'a loop over rows',
          'def top_k_filter(logits, k):\n'
          '    out = logits.clone()\n'
          '    for row in range(out.shape[0]):\n'
          '        order = sorted(range(out.shape[1]), key=lambda i: -float(logits[row, i]))\n'
          '        for i in order[k:]:\n'
          "            out[row, i] = float('-inf')\n"
          '    return out\n'),
    # q4
    right('q4', "HF's ascending rule",
          'def top_p_filter(logits, p):\n'
          '    sorted_logits, sorted_indices = torch.sort(logits, descending=False)\n'
          '    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)\n'
          '    remove_sorted = cumulative <= (1 - p)\n'
          '    remove_sorted[..., -1:] = False\n'
          '    remove = remove_sorted.scatter(1, sorted_indices, remove_sorted)\n'
          "    return logits.masked_fill(remove, float('-inf'))\n"),
    right('q4', 'first token forced, argsort',
          'def top_p_filter(logits, p):\n'
          '    order = logits.argsort(dim=-1, descending=True)\n'
          '    probs = torch.softmax(logits, dim=-1).gather(-1, order)\n'
          '    keep_sorted = probs.cumsum(dim=-1) - probs < p\n'
          '    keep_sorted[:, 0] = True\n'
          '    keep = torch.empty_like(keep_sorted).scatter_(-1, order, keep_sorted)\n'
          "    return torch.where(keep, logits, float('-inf'))\n"),
    right('q4', 'a loop over rows',
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

# ---------------------------------------------------------------------------- q5 and q6: the capstones
GPT_CODE = lesson08.q5.solution
GENERATE = lesson08.q6.solution
MODEL_PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def capstone(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson08", exercise, name, code, message, MODEL_PRELUDE)


def capstone_right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson08", exercise, name, code, MODEL_PRELUDE)


MISTAKES += [
    # q5 (capstone): the GPT — bugs planted in the solution
    capstone('q5', 'blocks in a dict, run in sorted key order',
             plant(plant(GPT_CODE, "        self.blocks = nn.ModuleList(EncoderLayer(config.d_model, config.n_heads, "
                                   "config.d_ff, config.dropout,\n"
                                   "                                                 norm=\"pre\") for _ in "
                                   "range(config.n_layers))\n",
                         "        self.blocks = nn.ModuleDict({str(i): EncoderLayer(config.d_model, config.n_heads, "
                         "config.d_ff, config.dropout, norm='pre') for i in range(config.n_layers)})\n"),
                   "        for block in self.blocks:\n            x = block(x, mask)\n",
                   "        for key in sorted(self.blocks):\n            x = self.blocks[key](x, mask)\n"),
             'more than 10 blocks'),
    capstone('q5', "the package's model imported", "from course_utils.language_model import DecoderOnlyLM as GPT\n",
             'use your own class'),
    capstone('q5', "the package's model wrapped",
             'import course_utils.language_model as lm\n\n'
             'class GPT(nn.Module):\n'
             '    def __init__(self, config):\n'
             '        super().__init__()\n'
             '        self.inner = lm.DecoderOnlyLM(config)\n\n'
             '    def forward(self, ids):\n'
             '        return self.inner(ids)\n',
             'use your own code'),
    capstone('q5', "the package's block stacked",
             plant(GPT_CODE, "EncoderLayer(config.d_model, config.n_heads, config.d_ff, config.dropout,\n"
                             "                                                 norm=\"pre\")",
                   "__import__('course_utils.language_model', fromlist=['x']).DecoderOnlyBlock(config.d_model, "
                   "config.n_heads, config.d_ff, config.dropout, norm='pre')"),
             'use your own code'),
    capstone('q5', "the package's input embedding",
             plant(GPT_CODE, "        self.embedding = Embedding(config)\n",
                   "        from course_utils.models import make_input_embedding\n"
                   "        self.embedding = make_input_embedding(config)\n"),
             'use your own code'),
    capstone('q5', 'causal mask missing', plant(GPT_CODE, "causal_mask(ids.size(1), device=ids.device) & ", ""),
             'sees the future'),
    capstone('q5', 'causal mask inverted',
             plant(GPT_CODE, "causal_mask(ids.size(1), device=ids.device) &",
                   "~causal_mask(ids.size(1), device=ids.device).transpose(-1, -2) |"),
             'sees the future'),
    capstone('q5', 'padding mask missing', plant(GPT_CODE, " & padding_mask(ids, self.pad_id)", ""),
             'padding mask is missing'),
    capstone('q5', 'pad id 0 typed in', plant(GPT_CODE, "padding_mask(ids, self.pad_id)", "padding_mask(ids, 0)"),
             'you hid id 0'),
    capstone('q5', 'final norm missing', plant(GPT_CODE, "self.lm_head(self.norm(x))", "self.lm_head(x)"),
             'final LayerNorm is missing'),
    capstone('q5', 'final norm after every block',
             plant(plant(GPT_CODE, "            x = block(x, mask)\n",
                         "            x = self.norm(block(x, mask))\n"),
                   "self.lm_head(self.norm(x))", "self.lm_head(x)"),
             'after every block'),
    capstone('q5', 'Post-LN blocks', plant(GPT_CODE, 'norm="pre"', 'norm="post"'), 'Post-LN'),
    capstone('q5', 'token embeddings not scaled', plant(GPT_CODE, "self.tokens.lookup(ids) * self.scale",
                                                        "self.tokens.lookup(ids)"), '√d_model'),
    capstone('q5', 'positions scaled too',
             plant(GPT_CODE, "self.tokens.lookup(ids) * self.scale + self.positions.table(positions)",
                   "(self.tokens.lookup(ids) + self.positions.table(positions)) * self.scale"),
             'positions were multiplied'),
    capstone('q5', 'no positions', plant(GPT_CODE, " + self.positions.table(positions)", ""),
             'no positions are added'),
    capstone('q5', 'positions start at 1', plant(GPT_CODE, "self.positions.table(positions)",
                                                 "self.positions.table(positions + 1)"), 'positions start at 1'),
    capstone('q5', 'head not tied', plant(GPT_CODE, "        self.lm_head.weight = self.embedding.tokens.lookup.weight"
                                                    "              # tied: one matrix in and out\n", ""),
             'not tied'),
    capstone('q5', 'head with a bias', plant(GPT_CODE, "config.vocab_size, bias=False)", "config.vocab_size)"),
             'no bias'),
    capstone('q5', 'one block reused', plant(GPT_CODE, "nn.ModuleList(EncoderLayer(config.d_model, config.n_heads, "
                                                       "config.d_ff, config.dropout,\n"
                                                       "                                                 "
                                                       "norm=\"pre\") for _ in range(config.n_layers))",
                                             "nn.ModuleList([EncoderLayer(config.d_model, config.n_heads, "
                                             "config.d_ff, config.dropout, norm='pre')] * config.n_layers)"),
             'one and the same parameter'),
    capstone('q5', 'blocks not chained',
             plant(plant(GPT_CODE, "        x = self.embedding(ids)\n",
                         "        h = self.embedding(ids)\n        x = h\n"),
                   "x = block(x, mask)", "x = block(h, mask)"),
             'reads the embedding'),
    capstone('q5', 'no dropout after the embedding',
             plant(GPT_CODE, "return self.dropout(self.tokens.lookup(ids) * self.scale + self.positions.table("
                             "positions))",
                   "return self.tokens.lookup(ids) * self.scale + self.positions.table(positions)"),
             'dropout is applied in a different place'),
    capstone('q5', 'embedding dropout probability typed in',
             plant(GPT_CODE, "        self.dropout = nn.Dropout(config.dropout)\n",
                   "        self.dropout = nn.Dropout(0.5)\n"), 'drops with p=0.5'),
    capstone('q5', 'dropout active in eval',
             plant(GPT_CODE, "return self.dropout(self.tokens.lookup(ids) * self.scale + self.positions.table("
                             "positions))",
                   "return F.dropout(self.tokens.lookup(ids) * self.scale + self.positions.table(positions), "
                   "self.dropout.p, training=True)"),
             'dropout is still active'),
    capstone('q5', 'probabilities returned', plant(GPT_CODE, "return self.lm_head(self.norm(x))",
                                                   "return torch.softmax(self.lm_head(self.norm(x)), dim=-1)"),
             'probabilities'),
    capstone('q5', 'last position only', plant(GPT_CODE, "return self.lm_head(self.norm(x))",
                                               "return self.lm_head(self.norm(x))[:, -1]"),
             "last position's logits only"),
    capstone('q5', 'padding_idx missing', plant(GPT_CODE, ", padding_idx=pad_id)", ")"), '[PAD] row'),
    capstone('q5', 'logits squeezed (breaks batch 1)', plant(GPT_CODE, "return self.lm_head(self.norm(x))",
                                                            "return self.lm_head(self.norm(x)).squeeze()"),
             'should have shape'),
    capstone('q5', 'max_len typed in', plant(GPT_CODE, "PositionTable(config.max_len, config.d_model)",
                                             "PositionTable(64, config.d_model)"), 'has shape'),
    capstone('q5', 'float64 logits', plant(GPT_CODE, "return self.lm_head(self.norm(x))",
                                           "return self.lm_head(self.norm(x)).double()"), 'torch.float32'),
    capstone('q5', 'ids embedded as floats cut the graph',
             plant(GPT_CODE, "        x = self.embedding(ids)\n", "        x = self.embedding(ids).detach()\n"),
             'detached intermediate'),
    # q6 (capstone): sampling with a KV cache — bugs planted in the solution
    capstone('q6', "the package's generate imported", "from course_utils.decoding import generate\n",
             'use your own function'),
    capstone('q6', "the package's generate behind a wrapper",
             'import course_utils.decoding as D\n\n'
             'def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None,\n'
             '             generator=None, forbidden_ids=()):\n'
             '    return D.generate(model, prompt_ids, max_new_tokens, temperature, top_k, top_p,\n'
             '                      generator=generator, forbidden_ids=tuple(forbidden_ids))\n',
             'use your own code'),
    capstone('q6', "the package's logits pipeline",
             plant(plant(plant(GENERATE, "            logits = logits / temperature\n",
                               "            from course_utils.decoding import next_token_logits\n"
                               "            logits = next_token_logits(logits, ids, temperature, top_k, top_p)\n"),
                         "logits = top_k_filter(logits, top_k)", "pass"),
                   "logits = top_p_filter(logits, top_p)", "pass"),
             'use your own code'),
    capstone('q6', 'no KV cache',
             plant(plant(GENERATE, "model(step_input, cache)", "model(ids)"), "    cache = model.new_cache()\n", ""),
             'without a KV cache'),
    capstone('q6', 'the whole prefix fed into the cache', plant(GENERATE, "model(step_input, cache)",
                                                                "model(ids, cache)"),
             'the cache already holds'),
    capstone('q6', 'a new cache every step',
             plant(GENERATE, "model(step_input, cache)", "model(step_input, model.new_cache())"),
             'new cache at every step'),
    capstone('q6', 'eval mode forgotten', plant(GENERATE, "    model.eval()\n", ""), 'call model.eval()'),
    capstone('q6', 'model.training = False instead of model.eval()',
             plant(GENERATE, "    model.eval()\n", "    model.training = False\n"), 'switches the top module only'),
    capstone('q6', 'no_grad forgotten', plant(GENERATE, "@torch.no_grad()\n", ""), 'torch.no_grad()'),
    capstone('q6', 'forbidden ids after the filters',
             'import torch\n\n\n'
             '@torch.no_grad()\n'
             'def generate(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None,\n'
             '             generator=None, forbidden_ids=()):\n'
             '    model.eval()\n'
             '    ids, cache = prompt_ids, model.new_cache()\n'
             '    step = ids\n'
             '    for _ in range(max_new_tokens):\n'
             '        logits = model(step, cache)[:, -1].float()\n'
             '        if temperature != 0:\n'
             '            logits = logits / temperature\n'
             '            if top_k is not None:\n'
             '                kth = logits.topk(top_k, dim=-1).values[:, -1:]\n'
             '                logits = logits.masked_fill(logits < kth, float("-inf"))\n'
             '            if top_p is not None:\n'
             '                probs, order = logits.softmax(-1).sort(-1, descending=True)\n'
             '                kept = probs.cumsum(-1) - probs < top_p\n'
             '                keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, kept)\n'
             '                logits = logits.masked_fill(~keep, float("-inf"))\n'
             '        logits[:, list(forbidden_ids)] = float("-inf")   # forbidden last\n'
             '        if temperature == 0:\n'
             '            token = logits.argmax(-1)\n'
             '        else:\n'
             '            token = torch.multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]\n'
             '        ids = torch.cat([ids, token[:, None]], 1)\n'
             '        step = token[:, None]\n'
             '    return ids\n',
             'forbidden ids were set to -inf after'),
    capstone('q6', 'forbidden ids ignored',
             plant(GENERATE, 'logits[:, list(forbidden_ids)] = float("-inf")', "pass"),
             'forbidden id was generated'),
    capstone('q6', 'temperature after the filters',
             plant(plant(GENERATE, "            logits = logits / temperature\n", ""),
                   "            probs = torch.softmax(logits, dim=-1)\n",
                   "            probs = torch.softmax(logits / temperature, dim=-1)\n"),
             'temperature was applied after the filters'),
    capstone('q6', 'top-p before top-k',
             plant(plant(plant(GENERATE, "logits = top_k_filter(logits, top_k)", "TOP_K"),
                         "logits = top_p_filter(logits, top_p)", "logits = top_k_filter(logits, top_k)"),
                   "TOP_K", "logits = top_p_filter(logits, top_p)")
             .replace("if top_k is not None:", "if TOP_P:").replace("if top_p is not None:", "if top_k is not None:")
             .replace("if TOP_P:", "if top_p is not None:"),
             'top-p ran before top-k'),
    capstone('q6', 'temperature ignored', plant(GENERATE, "            logits = logits / temperature\n", ""),
             'temperature changed nothing'),
    capstone('q6', 'temperature multiplied', plant(GENERATE, "logits = logits / temperature",
                                                   "logits = logits * temperature"), 'multiplied the logits'),
    capstone('q6', 'temperature 0 not greedy',
             plant(GENERATE, "        if temperature == 0:\n", "        if temperature is None:\n"),
             'temperature 0 means greedy'),
    capstone('q6', 'top_k ignored', plant(GENERATE, "logits = top_k_filter(logits, top_k)", "pass"),
             'top_k was ignored'),
    capstone('q6', 'top_p ignored', plant(GENERATE, "logits = top_p_filter(logits, top_p)", "pass"),
             'top_p was ignored'),
    capstone('q6', 'the global random state', plant(GENERATE, "torch.multinomial(probs, 1, generator=generator)",
                                                    "torch.multinomial(probs, 1)"), 'global random state'),
    capstone('q6', 'a seed fixed inside', plant(GENERATE, "torch.multinomial(probs, 1, generator=generator)",
                                                "torch.multinomial(probs, 1, generator=torch.Generator()"
                                                ".manual_seed(0))"),
             'does not draw from the generator'),
    capstone('q6', 'always the arg-max', plant(GENERATE, "torch.multinomial(probs, 1, generator=generator)"
                                                         ".squeeze(1)", "probs.argmax(dim=-1)"),
             'took the arg-max although'),
    capstone('q6', 'the first position read', plant(GENERATE, "model(step_input, cache)[:, -1]",
                                                    "model(step_input, cache)[:, 0]"),
             "prompt's *first* position"),
    capstone('q6', 'only the new tokens returned', plant(GENERATE, "    return ids\n",
                                                         "    return ids[:, prompt_ids.size(1):]\n"),
             'only the'),
    capstone('q6', 'sampled from the logits', plant(GENERATE, "torch.multinomial(probs, 1, generator=generator)",
                                                    "torch.multinomial(logits, 1, generator=generator)"),
             'multinomial needs probabilities'),
    capstone('q6', 'token squeezed (breaks batch 1)', plant(GENERATE, ".squeeze(1)", ".squeeze()"),
             'Keep the batch axis'),
    capstone('q6', 'int32 ids returned', plant(GENERATE, "    return ids\n", "    return ids.int()\n"),
             'torch.long'),
]

ALTERNATIVES += [
    # q5: the package's embedding pieces, lesson 04's layer written out, the tie the other way round
    capstone_right('q5', "the package's TokenEmbedding and LearnedPositionalEncoding",
                   'from course_utils.embedding import TokenEmbedding\n'
                   'from course_utils.layers import EncoderLayer\n'
                   'from course_utils.masks import combine_masks, causal_mask, padding_mask\n'
                   'from course_utils.positional import LearnedPositionalEncoding\n\n\n'
                   'class Embedding(nn.Module):\n'
                   '    def __init__(self, config):\n'
                   '        super().__init__()\n'
                   '        self.tokens = TokenEmbedding(config.vocab_size, config.d_model, config.pad_id)\n'
                   '        self.positions = LearnedPositionalEncoding(config.d_model, config.max_len)\n'
                   '        self.dropout = nn.Dropout(config.dropout)\n\n'
                   '    def forward(self, ids):\n'
                   '        return self.dropout(self.positions(self.tokens(ids)))\n\n\n'
                   'class GPT(nn.Module):\n'
                   '    def __init__(self, config):\n'
                   '        super().__init__()\n'
                   '        self.config = config\n'
                   '        self.embedding = Embedding(config)\n'
                   '        self.blocks = nn.ModuleList([EncoderLayer(config.d_model, config.n_heads, config.d_ff,\n'
                   '                                                  dropout=config.dropout, norm=config.norm)\n'
                   '                                     for _ in range(config.n_layers)])\n'
                   '        self.norm = nn.LayerNorm(config.d_model)\n'
                   '        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)\n'
                   '        self.lm_head.weight = self.embedding.tokens.weight\n\n'
                   '    def forward(self, ids):\n'
                   '        mask = combine_masks(causal_mask(ids.shape[1]), padding_mask(ids, self.config.pad_id))\n'
                   '        h = self.embedding(ids)\n'
                   '        for i in range(len(self.blocks)):\n'
                   '            h = self.blocks[i](h, mask)\n'
                   '        return F.linear(self.norm(h), self.lm_head.weight)\n'),
    capstone_right('q5', "lesson 04's layer written out, bare nn.Module containers, the tie the other way",
                   'import math\n'
                   'from course_utils.attention import MultiHeadAttention\n\n\n'
                   'class Residual(nn.Module):\n'
                   '    def __init__(self, d_model, dropout):\n'
                   '        super().__init__()\n'
                   '        self.norm = nn.LayerNorm(d_model)\n'
                   '        self.dropout = nn.Dropout(dropout)\n\n'
                   '    def forward(self, x, sublayer):\n'
                   '        return x + self.dropout(sublayer(self.norm(x)))\n\n\n'
                   'class FeedForward(nn.Module):\n'
                   '    def __init__(self, d_model, d_ff, dropout):\n'
                   '        super().__init__()\n'
                   '        self.linear1 = nn.Linear(d_model, d_ff)\n'
                   '        self.linear2 = nn.Linear(d_ff, d_model)\n'
                   '        self.dropout = nn.Dropout(dropout)\n\n'
                   '    def forward(self, x):\n'
                   '        return self.linear2(self.dropout(torch.relu(self.linear1(x))))\n\n\n'
                   'class Block(nn.Module):\n'
                   '    def __init__(self, c):\n'
                   '        super().__init__()\n'
                   '        self.self_attn = MultiHeadAttention(c.d_model, c.n_heads, c.dropout)\n'
                   '        self.feed_forward = FeedForward(c.d_model, c.d_ff, c.dropout)\n'
                   '        self.attn_block = Residual(c.d_model, c.dropout)\n'
                   '        self.ff_block = Residual(c.d_model, c.dropout)\n\n'
                   '    def forward(self, x, mask):\n'
                   '        x = self.attn_block(x, lambda h: self.self_attn(h, h, h, mask)[0])\n'
                   '        return self.ff_block(x, self.feed_forward)\n\n\n'
                   'class GPT(nn.Module):\n'
                   '    def __init__(self, c):\n'
                   '        super().__init__()\n'
                   '        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)\n'
                   '        self.embedding = nn.Module()\n'
                   '        self.embedding.tokens = nn.Module()\n'
                   '        tokens = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)\n'
                   '        self.embedding.tokens.lookup = tokens\n'
                   '        self.embedding.positions = nn.Module()\n'
                   '        self.embedding.positions.table = nn.Embedding(c.max_len, c.d_model)\n'
                   '        self.embedding.tokens.lookup.weight = self.lm_head.weight\n'
                   '        self.drop = nn.Dropout(c.dropout)\n'
                   '        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layers))\n'
                   '        self.norm = nn.LayerNorm(c.d_model)\n'
                   '        self.d_model, self.pad_id = c.d_model, c.pad_id\n\n'
                   '    def forward(self, ids):\n'
                   '        batch, seq = ids.shape\n'
                   '        allowed = torch.ones(seq, seq, dtype=torch.bool).tril()[None, None]\n'
                   '        allowed = allowed & (ids != self.pad_id)[:, None, None, :]\n'
                   '        x = F.embedding(ids, self.embedding.tokens.lookup.weight, padding_idx=self.pad_id)\n'
                   '        x = x * math.sqrt(self.d_model) + self.embedding.positions.table.weight[:seq]\n'
                   '        x = self.drop(x)\n'
                   '        for block in self.blocks:\n'
                   '            x = block(x, allowed)\n'
                   '        return self.lm_head(self.norm(x))\n'),
    # q6: the package's filters, the prompt fed token by token, a preallocated output, per-row draws
    capstone_right('q6', "the package's filters, F.softmax, index_fill",
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
    capstone_right('q6', 'prompt fed one token at a time, a preallocated output, one draw per row',
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
