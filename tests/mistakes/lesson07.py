"""Typical wrong answers to the exercises of lesson07, each with the phrase its feedback must contain, and right
answers written differently (ALTERNATIVES), which must be accepted."""
from course_utils.exercises import lesson07

from . import Alternative, Mistake, plant

PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson07", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson07", exercise, name, code, PRELUDE)


MISTAKES = [
    q('q2', 'special ids hidden too', 'def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n'
                                      '    return ((src_ids != pad_id) & (src_ids >= 7))[:, None, None, :]\n',
      'expected True exactly at real (non-padding) source tokens'),
    q('q2', '2-D',
      'def cross_attention_mask(s, n):\n'
      '    return s != 0\n',
      'does not broadcast'),
    q('q2', 'ints',
      'def cross_attention_mask(s, n):\n'
      '    return (s != 0).long()[:, None, None, :]\n',
      'bool'),
    q('q3', 'stacked',
      'def append_to_cache(c, n):\n'
      '    return torch.cat([c, n.expand(-1, -1, 3, -1)], dim=1)\n',
      'wrong axis'),
]
MISTAKES += [
]

# ------------------------------------------------------------------ new: the classes of wrong answer of issue 21
MISTAKES += [
    # q1: typed-in special ids, batch 1, dtype, mutation
    q('q1', 'float ids',
      'def shift_targets(t):\n'
      '    t = t.float()\n'
      '    return t[:, :-1], t[:, 1:]\n',
      'should be a torch.int64 tensor'),
    q('q1', 'a [BOS] (id 5) prepended although the targets start with one',
      'def shift_targets(t):\n'
      '    bos = torch.full_like(t[:, :1], 5)\n'
      '    return torch.cat([bos, t[:, 1:-1]], dim=1), t[:, 1:]\n',
      'already start with [BOS]'),
    q('q1', '[EOS] (id 6) turned into padding in place',
      'def shift_targets(t):\n'
      '    t[t == 6] = 0\n'
      '    return t[:, :-1], t[:, 1:]\n',
      'changed its input'),
    q('q1', 'sequence length typed in',
      'def shift_targets(t):\n'
      '    return t[:, :5], t[:, 1:6]\n',
      'tgt_len - 1'),
    # q2: pad id typed in, the query axis, float mask, wrong tgt axis
    q('q2', 'mask on the query axis',
      'def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n'
      '    return (src_ids != pad_id)[:, None, :, None]\n',
      'not a mask on the query axis'),
    q('q2', 'float mask',
      'def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n'
      '    return (src_ids != pad_id).float()[:, None, None, :]\n',
      'bool'),
    q('q2', 'expanded to (src_len, src_len)',
      'def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n'
      '    n = src_ids.size(1)\n'
      '    return (src_ids != pad_id)[:, None, None, :].expand(-1, 1, n, n)\n',
      'expected shape'),
    q('q2', 'no pad_id parameter',
      'def cross_attention_mask(src_ids, tgt_len):\n'
      '    return (src_ids != 0)[:, None, None, :]\n',
      'give it the pad_id parameter'),
    # q3: dtype, mutation, a sliding window, the last axis
    q('q3', 'preallocated in float32',
      'def append_to_cache(c, n):\n'
      '    b, h, s, d = c.shape\n'
      '    out = torch.zeros(b, h, s + 1, d)\n'
      '    out[:, :, :s] = c\n'
      '    out[:, :, s:] = n\n'
      '    return out\n',
      'should be a torch.float64 tensor'),
    q('q3', 'cached tensor replaced in place',
      'def append_to_cache(c, n):\n'
      '    c.data = torch.cat([c, n], dim=2)\n'
      '    return c\n',
      'changed its input'),
    q('q3', 'oldest step dropped (a window)',
      'def append_to_cache(c, n):\n'
      '    return torch.cat([c[:, :, 1:], n], dim=2)\n',
      'earlier position'),
    q('q3', 'd_head axis',
      'def append_to_cache(c, n):\n'
      '    return torch.cat([c, n], dim=-1)\n',
      'wrong axis'),
    q('q3', 'cast to float32',
      'def append_to_cache(c, n):\n'
      '    return torch.cat([c.float(), n.float()], dim=2)\n',
      'keep the dtype'),
]

LAYER = lesson07.q4.solution
DECODE = lesson07.q5.solution
MISTAKES += [
    # q4 (capstone): DecoderLayer — bugs planted in the solution
    q('q4', "the package's class imported", "from course_utils.layers import DecoderLayer\n", 'use your own class'),
    q('q4', 'cross-attention with queries and keys swapped',
      plant(LAYER, "self.cross_attn(h, memory, memory, memory_mask)", "self.cross_attn(memory, h, h, memory_mask)"),
      'queries from the decoder side'),
    q('q4', 'memory mask missing', plant(LAYER, "self.cross_attn(h, memory, memory, memory_mask)",
                                         "self.cross_attn(h, memory, memory)"), 'memory mask is missing'),
    q('q4', 'masks swapped', plant(plant(LAYER, "self.self_attn(h, h, h, tgt_mask)", "self.self_attn(h, h, h, MEMORY)"),
                                   "self.cross_attn(h, memory, memory, memory_mask)",
                                   "self.cross_attn(h, memory, memory, tgt_mask)").replace("MEMORY", "memory_mask"),
      'tgt_mask belongs to self-attention'),
    q('q4', 'no causal mask in self-attention',
      plant(LAYER, "self.self_attn(h, h, h, tgt_mask)", "self.self_attn(h, h, h)"),
      'ignores tgt_mask'),
    q('q4', 'cross-attention attends to the decoder itself',
      plant(LAYER, "self.cross_attn(h, memory, memory, memory_mask)", "self.cross_attn(h, h, h)"), 'encoder memory'),
    q('q4', 'cross-attention before self-attention',
      plant(LAYER, "        y = self.self_attn_block(y, lambda h: self.self_attn(h, h, h, tgt_mask)[0])\n"
                   "        # queries from the decoder, keys and values from the encoder memory\n"
                   "        y = self.cross_attn_block(y, lambda h: "
                   "self.cross_attn(h, memory, memory, memory_mask)[0])\n",
            "        y = self.cross_attn_block(y, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0])\n"
            "        y = self.self_attn_block(y, lambda h: self.self_attn(h, h, h, tgt_mask)[0])\n"), 'wrong order'),
    q('q4', 'one attention module for both',
      plant(LAYER, "self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)",
            "self.cross_attn = self.self_attn"),
      'one and the same parameter'),
    q('q4', 'always Post-LN',
      plant(LAYER, "        if self.pre:\n            return x + self.dropout(sublayer(self.norm(x)))   # Pre-LN\n",
            ""),
      "with norm='pre' you computed Post-LN"),
    q('q4', 'residual around the normalised input',
      plant(LAYER, "            return x + self.dropout(sublayer(self.norm(x)))   # Pre-LN\n",
            "            h = self.norm(x)\n            return h + self.dropout(sublayer(h))\n"), 'raw'),
    q('q4', 'LayerNorm on the sublayer output',
      plant(LAYER, "        return self.norm(x + self.dropout(sublayer(x)))        # Post-LN\n",
            "        return x + self.norm(self.dropout(sublayer(x)))\n"),
      'LayerNorm is in the wrong place'),
    q('q4', 'cross-attention block renamed', plant(LAYER, "self.cross_attn_block", "self.memory_block"),
      'no parameter `cross_attn_block.norm.weight`'),
    q('q4', 'dropout active in eval',
      plant(plant(plant(LAYER, "        self.dropout = nn.Dropout(dropout)\n\n    def forward(self, x, s",
                        "        self.p = dropout\n\n    def forward(self, x, s"),
                  "self.dropout(sublayer(self.norm(x)))", "F.dropout(sublayer(self.norm(x)), self.p)"),
            "self.dropout(sublayer(x))", "F.dropout(sublayer(x), self.p)"),
      'dropout is still active'),
    # q4: new — the package's block reached another way, value from the decoder side, typed-in sizes, dropout
    # placement, a cut graph, an input changed in place, GELU
    q('q4', "the package's block subclassed under another import path",
      "import course_utils.layers as L\n\n"
      "class DecoderLayer(L.DecoderLayer.__mro__[0]):\n"
      "    pass\n",
      'use your own class'),
    q('q4', "the package's forward borrowed by a class of one's own",
      "import course_utils.layers as L\n"
      "from course_utils.attention import MultiHeadAttention\n\n"
      "class DecoderLayer(nn.Module):\n"
      "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
      "        super().__init__()\n"
      "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
      "        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
      "        self.feed_forward = L.PositionwiseFeedForward(d_model, d_ff, dropout)\n"
      "        self.self_attn_block = L.ResidualSublayer(d_model, dropout, norm)\n"
      "        self.cross_attn_block = L.ResidualSublayer(d_model, dropout, norm)\n"
      "        self.ff_block = L.ResidualSublayer(d_model, dropout, norm)\n\n"
      "    def forward(self, y, memory, tgt_mask=None, memory_mask=None):\n"
      "        return getattr(L, 'Decoder' + 'Layer').forward(self, y, memory, tgt_mask, memory_mask)\n",
      "calls the package's course_utils.layers.DecoderLayer"),
    q('q4', "torch's TransformerDecoderLayer wrapped",
      "class DecoderLayer(nn.Module):\n"
      "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
      "        super().__init__()\n"
      "        self.layer = nn.TransformerDecoderLayer(d_model, n_heads, d_ff, dropout, batch_first=True,\n"
      "                                                norm_first=norm == 'pre')\n\n"
      "    def forward(self, y, memory, tgt_mask=None, memory_mask=None):\n"
      "        return self.layer(y, memory)\n",
      'torch.nn.TransformerDecoderLayer'),
    q('q4', 'cross-attention values from the decoder side',
      plant(LAYER, "self.cross_attn(h, memory, memory, memory_mask)", "self.cross_attn(h, memory, h, memory_mask)"),
      'keys and values from the memory'),
    q('q4', 'd_model typed in', plant(LAYER, "self.norm = nn.LayerNorm(d_model)", "self.norm = nn.LayerNorm(24)"),
      "the package's has"),
    q('q4', 'no dropout on the residual branch',
      plant(plant(LAYER, "x + self.dropout(sublayer(self.norm(x)))", "x + sublayer(self.norm(x))"),
            "self.norm(x + self.dropout(sublayer(x)))", "self.norm(x + sublayer(x))"),
      'dropout is applied in a different place'),
    q('q4', 'no dropout inside the feed-forward',
      plant(LAYER, "self.linear2(self.dropout(F.relu(self.linear1(x))))", "self.linear2(F.relu(self.linear1(x)))"),
      'dropout is applied in a different place'),
    q('q4', 'the feed-forward input detached',
      plant(LAYER, "return self.ff_block(y, self.feed_forward)", "return self.ff_block(y.detach(), self.feed_forward)"),
      'no gradient reaches'),
    q('q4', 'Pre-LN residual added in place',
      plant(LAYER, "            return x + self.dropout(sublayer(self.norm(x)))   # Pre-LN\n",
            "            x += self.dropout(sublayer(self.norm(x)))\n            return x\n"),
      'changed its input `y` in place'),
    q('q4', 'GELU in the feed-forward', plant(LAYER, "F.relu(self.linear1(x))", "F.gelu(self.linear1(x))"),
      'not GELU'),
    # q5 (capstone): greedy_decode
    q('q5', "the package's decoder imported", "from course_utils.decoding import greedy_decode\n",
      'use your own function'),
    q('q5', 'eval mode forgotten', plant(DECODE, "    model.eval()\n", ""), 'call model.eval()'),
    q('q5', 'model.training = False instead of model.eval()',
      plant(DECODE, "    model.eval()\n", "    model.training = False\n"), 'switches the top module only'),
    q('q5', 'no_grad forgotten', plant(DECODE, "@torch.no_grad()\n", ""), 'torch.no_grad()'),
    q('q5', 'target not shifted (no [BOS] start)',
      plant(DECODE, "prefix = torch.full((batch, 1), bos_id, dtype=torch.long, device=device)",
            "prefix = src_ids[:, :1]"),
      'start with bos_id'),
    q('q5', 'choices not fed back', plant(DECODE, "model.decode(prefix, memory, src_ids)",
                                          "model.decode(prefix[:, :1], memory, src_ids)"), 'grow by the token chosen'),
    q('q5', 'first position read instead of the last',
      plant(DECODE, "[:, -1]        # the next", "[:, 0]        # the next"),
      'logits[:, -1]'),
    q('q5', 'EOS not handled', plant(plant(DECODE, ".masked_fill(finished, pad_id)", ""),
                                     "        if finished.all():\n            break\n", ""),
      'fill the rest of it with pad_id'),
    q('q5', 'finished rows not padded', plant(DECODE, ".masked_fill(finished, pad_id)", ""),
      'fill the rest of it with pad_id'),
    q('q5', 'stops at the first [EOS]', plant(DECODE, "finished.all()", "finished.any()"), 'every* row'),
    q('q5', 'never stops early', plant(DECODE, "        if finished.all():\n            break\n", ""),
      'stop as soon as all rows'),
    q('q5', '[BOS] returned', plant(DECODE, "return prefix[:, 1:]", "return prefix"), 'starts with [BOS]'),
]
MISTAKES += [
    q('q5', "a wrapper around the package's decoder",
      "from course_utils.decoding import greedy_decode as package_decode\n\n"
      "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
      "    return package_decode(model.eval(), src_ids, bos_id, eos_id, max_new_tokens, pad_id)\n",
      'hands the work to the package'),
    # q5: new — the package reached another way, typed-in ids, the last row finishing first, specials, batch 1,
    # the cache misused, sampling, un-finishing rows
    q('q5', 'beam search of width 1 under another import path',
      "import course_utils.decoding as D\n\n"
      "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
      "    search = getattr(D, 'beam' + '_search')\n"
      "    return search(model.eval(), src_ids, bos_id, eos_id, max_new_tokens, 1, 0.0, pad_id).best\n",
      "calls the package's course_utils.decoding.beam_search"),
    q('q5', "the package's greedy_decode reached through a module attribute",
      "import course_utils\n\n"
      "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
      "    model.eval()\n"
      "    run = vars(course_utils.decoding)['greedy_decode']\n"
      "    return run(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id)\n",
      "calls the package's course_utils.decoding.greedy_decode"),
    q('q5', 'finished rows filled with 0 (pad id typed in)', plant(DECODE, ".masked_fill(finished, pad_id)",
                                                                   ".masked_fill(finished, 0)"),
      'use the pad_id argument'),
    q('q5', 'finished rows filled with eos_id', plant(DECODE, ".masked_fill(finished, pad_id)",
                                                      ".masked_fill(finished, eos_id)"),
      'that is eos_id'),
    q('q5', 'stops when the last row finishes', plant(DECODE, "finished.all()", "finished[-1]"),
      'when the *last* row finished'),
    q('q5', '[BOS] and [PAD] not excluded', plant(DECODE, "        logits[:, [bos_id, pad_id]] = float(\"-inf\")"
                                                          "                   # [BOS] and [PAD] are not words\n", ""),
      'Set the logits of bos_id and pad_id (the arguments) to -inf'),
    q('q5', 'only [BOS] excluded', plant(DECODE, "logits[:, [bos_id, pad_id]]", "logits[:, [bos_id]]"),
      'generated [PAD]'),
    q('q5', 'the default ids typed in', plant(DECODE, "logits[:, [bos_id, pad_id]]", "logits[:, [5, 0]]"),
      'logits of bos_id and pad_id (the arguments)'),
    q('q5', 'logits squeezed (breaks batch 1)',
      plant(DECODE, "model.decode(prefix, memory, src_ids)[:, -1]", "model.decode(prefix, memory, src_ids)[:, -1]"
                                                                      ".squeeze()"),
      'no .squeeze()'),
    q('q5', 'a row un-finishes after its [EOS]', plant(DECODE, "finished |= next_token == eos_id",
                                                       "finished = next_token == eos_id"),
      'never un-finish a row'),
    q('q5', 'KV cache fed the whole prefix',
      plant(plant(DECODE, "    for _ in range(max_new_tokens):\n",
                  "    cache = model.new_cache()\n    for _ in range(max_new_tokens):\n"),
            "model.decode(prefix, memory, src_ids)", "model.decode(prefix, memory, src_ids, cache)"),
      'only the newest token'),
    q('q5', 'samples instead of taking the arg-max',
      plant(DECODE, "logits.argmax(dim=-1)",
            "torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=torch.Generator().manual_seed(0))[:, 0]"),
      "take the arg-max"),
    q('q5', 'one step short', plant(DECODE, "range(max_new_tokens)", "range(max_new_tokens - 1)"),
      'or at max_new_tokens'),
    q('q5', 'eval mode set after encoding',
      plant(plant(DECODE, "    model.eval()\n", ""), "    batch, device", "    model.eval()\n    batch, device"),
      'call model.eval()'),
    q('q5', 'gradients switched off on the parameters instead of no_grad',
      plant(plant(DECODE, "@torch.no_grad()\n", ""), "    model.eval()\n", "    model.eval().requires_grad_(False)\n"),
      'torch.no_grad()'),
    q('q5', 'int32 ids', plant(DECODE, "return prefix[:, 1:]", "return prefix[:, 1:].int()"),
      'token ids are torch.long'),
    q('q5', 'the source changed in place',
      plant(DECODE, "    memory = model.encode(src_ids)", "    src_ids[src_ids == pad_id] = pad_id\n"
                                                          "    src_ids.clamp_(max=src_ids.max() - 1)\n"
                                                          "    memory = model.encode(src_ids)"),
      'changed its input `src_ids`'),
]

# ------------------------------------------------------------------ right answers written differently
MHA_OWN = (  # an attention of one's own, with the package's interface and attribute names
    "import math\n\nimport torch\nimport torch.nn as nn\n\n\n"
    "class MultiHeadAttention(nn.Module):\n"
    "    def __init__(self, d_model, n_heads, dropout=0.0):\n"
    "        super().__init__()\n"
    "        self.n_heads, self.d_head = n_heads, d_model // n_heads\n"
    "        self.w_q = nn.Linear(d_model, d_model)\n"
    "        self.w_k = nn.Linear(d_model, d_model)\n"
    "        self.w_v = nn.Linear(d_model, d_model)\n"
    "        self.w_o = nn.Linear(d_model, d_model)\n"
    "        self.dropout = nn.Dropout(dropout)\n\n"
    "    def split(self, x):\n"
    "        batch, seq, _ = x.shape\n"
    "        return x.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)\n\n"
    "    def forward(self, query, key, value, mask=None):\n"
    "        q, k, v = self.split(self.w_q(query)), self.split(self.w_k(key)), self.split(self.w_v(value))\n"
    "        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)\n"
    "        if mask is not None:\n"
    "            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
    "        weights = torch.softmax(scores, dim=-1)\n"
    "        if mask is not None:\n"
    "            weights = weights.masked_fill(~mask, 0.0)\n"
    "        out = self.dropout(weights) @ v\n"
    "        batch, _, q_len, _ = out.shape\n"
    "        out = out.transpose(1, 2).contiguous().view(batch, q_len, self.n_heads * self.d_head)\n"
    "        return self.w_o(out), weights\n"
)
MISTAKES += [
    q('q4', 'cross-attention in training mode only',
      plant(LAYER, "        y = self.cross_attn_block(y, lambda h: self.cross_attn(h, memory, memory, "
                   "memory_mask)[0])\n",
            "        if self.training:\n"
            "            y = self.cross_attn_block(y, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0])\n"),
      'computes differently in train mode and in eval mode'),
]

ALTERNATIVES = [
    right('q1', 'narrow', "def shift_targets(tgt_ids):\n"
                          "    n = tgt_ids.size(1) - 1\n"
                          "    return tgt_ids.narrow(1, 0, n), tgt_ids.narrow(1, 1, n)\n"),
    right('q1', 'a list of copies', "def shift_targets(tgt_ids):\n"
                                    "    return [tgt_ids[..., :-1].clone(), tgt_ids[..., 1:].contiguous()]\n"),
    right('q1', 'index_select with arange', "def shift_targets(tgt_ids):\n"
                                            "    idx = torch.arange(tgt_ids.size(1))\n"
                                            "    return (tgt_ids.index_select(1, idx[:-1]), "
                                            "tgt_ids.index_select(1, idx[1:]))\n"),
    right('q2', 'unsqueeze twice', "def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n"
                                   "    return (src_ids != pad_id).unsqueeze(1).unsqueeze(2)\n"),
    right('q2', 'expanded over the target positions',
          "def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n"
          "    keep = ~(src_ids == pad_id)\n"
          "    return keep.view(src_ids.size(0), 1, 1, -1).expand(-1, 1, tgt_len, -1)\n"),
    right('q2', "the package's padding_mask", "from course_utils.masks import padding_mask\n\n"
                                              "def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n"
                                              "    return padding_mask(src_ids, pad_id)\n"),
    right('q2', 'from lengths (right padding)',
          "def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n"
          "    lengths = (src_ids != pad_id).sum(dim=1, keepdim=True)\n"
          "    keep = torch.arange(src_ids.size(1)) < lengths\n"
          "    return keep[:, None, None, :]\n"),
    right('q3', 'negative axis', "def append_to_cache(cached, new):\n    return torch.cat((cached, new), dim=-2)\n"),
    right('q3', 'preallocated like the cache', "def append_to_cache(cached, new):\n"
                                               "    b, h, s, d = cached.shape\n"
                                               "    out = cached.new_empty(b, h, s + new.size(2), d)\n"
                                               "    out[:, :, :s] = cached\n"
                                               "    out[:, :, s:] = new\n"
                                               "    return out\n"),
    right('q3', 'torch.concat on the positions', "def append_to_cache(cached, new):\n"
                                                 "    return torch.concat([cached, new], 2)\n"),
    # q4: the package's sublayers (ResidualSublayer, PositionwiseFeedForward) assembled by hand
    right('q4', "assembled from the package's sublayers",
          "from course_utils.attention import MultiHeadAttention\n"
          "from course_utils.layers import PositionwiseFeedForward, ResidualSublayer\n\n"
          "class DecoderLayer(nn.Module):\n"
          "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
          "        super().__init__()\n"
          "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
          "        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
          "        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)\n"
          "        self.self_attn_block = ResidualSublayer(d_model, dropout, norm)\n"
          "        self.cross_attn_block = ResidualSublayer(d_model, dropout, norm)\n"
          "        self.ff_block = ResidualSublayer(d_model, dropout, norm)\n\n"
          "    def forward(self, y, memory, tgt_mask=None, memory_mask=None):\n"
          "        y = self.self_attn_block(y, lambda h: self.self_attn(h, h, h, tgt_mask)[0])\n"
          "        y = self.cross_attn_block(y, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0])\n"
          "        return self.ff_block(y, self.feed_forward)\n"),
    # q4: lesson 03's own attention, plain containers for the norms, F.dropout with training=self.training, a
    # buffer, the residual written inline
    right('q4', "own attention, inline residuals, F.dropout and a buffer",
          "import math\n\n" + MHA_OWN + "\n\n"
          "class DecoderLayer(nn.Module):\n"
          "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
          "        super().__init__()\n"
          "        self.p, self.pre = dropout, norm == 'pre'\n"
          "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
          "        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
          "        self.feed_forward = nn.Module()\n"
          "        self.feed_forward.linear1 = nn.Linear(d_model, d_ff)\n"
          "        self.feed_forward.linear2 = nn.Linear(d_ff, d_model)\n"
          "        for name in ('self_attn_block', 'cross_attn_block', 'ff_block'):\n"
          "            block = nn.Module()\n"
          "            block.norm = nn.LayerNorm(d_model)\n"
          "            setattr(self, name, block)\n"
          "        self.register_buffer('steps', torch.zeros((), dtype=torch.long))\n\n"
          "    def drop(self, x):\n"
          "        return F.dropout(x, self.p, training=self.training)\n\n"
          "    def residual(self, block, x, f):\n"
          "        if self.pre:\n"
          "            return x + self.drop(f(block.norm(x)))\n"
          "        return block.norm(x + self.drop(f(x)))\n\n"
          "    def ffn(self, h):\n"
          "        return self.feed_forward.linear2(self.drop(torch.relu(self.feed_forward.linear1(h))))\n\n"
          "    def forward(self, y, memory, tgt_mask=None, memory_mask=None):\n"
          "        y = self.residual(self.self_attn_block, y, lambda h: self.self_attn(h, h, h, tgt_mask)[0])\n"
          "        y = self.residual(self.cross_attn_block, y,\n"
          "                          lambda h: self.cross_attn(h, memory, memory, memory_mask)[0])\n"
          "        return self.residual(self.ff_block, y, self.ffn)\n"),
    # q5: the KV cache exactly as the package uses it
    right('q5', 'with the KV cache',
          "@torch.no_grad()\n"
          "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
          "    model.eval()\n"
          "    memory = model.encode(src_ids)\n"
          "    cache = model.new_cache()\n"
          "    prefix = torch.full((src_ids.size(0), 1), bos_id, dtype=torch.long, device=src_ids.device)\n"
          "    finished = torch.zeros(src_ids.size(0), dtype=torch.bool, device=src_ids.device)\n"
          "    for _ in range(max_new_tokens):\n"
          "        logits = model.decode(prefix[:, -1:], memory, src_ids, cache)[:, -1]\n"
          "        logits[:, [bos_id, pad_id]] = float('-inf')\n"
          "        token = logits.argmax(-1).masked_fill(finished, pad_id)\n"
          "        prefix = torch.cat([prefix, token[:, None]], dim=1)\n"
          "        finished |= token == eos_id\n"
          "        if finished.all():\n"
          "            break\n"
          "    return prefix[:, 1:]\n"),
    # q5: the model's forward, inference_mode, topk, where(), a while loop, the training mode restored
    right('q5', 'forward, inference_mode, topk and a while loop',
          "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
          "    was_training = model.training\n"
          "    model.train(False)\n"
          "    with torch.inference_mode():\n"
          "        out = src_ids.new_full((len(src_ids), 1), bos_id)\n"
          "        done = src_ids.new_zeros(len(src_ids)).bool()\n"
          "        while out.size(1) - 1 < max_new_tokens and not bool(done.all()):\n"
          "            scores = model(src_ids, out)[:, -1, :]\n"
          "            scores = scores.index_fill(1, torch.tensor([bos_id, pad_id]), -float('inf'))\n"
          "            best = scores.topk(1, dim=1).indices[:, 0]\n"
          "            best = torch.where(done, torch.full_like(best, pad_id), best)\n"
          "            out = torch.cat((out, best.unsqueeze(1)), dim=1)\n"
          "            done = done | (best == eos_id)\n"
          "    model.train(was_training)\n"
          "    return out[:, 1:]\n"),
    # q5: one sentence at a time, padded to the longest output
    right('q5', 'one row at a time',
          "@torch.no_grad()\n"
          "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
          "    model.eval()\n"
          "    rows = []\n"
          "    for i in range(src_ids.size(0)):\n"
          "        src = src_ids[i:i + 1]\n"
          "        memory = model.encode(src)\n"
          "        ids = [bos_id]\n"
          "        for _ in range(max_new_tokens):\n"
          "            logits = model.decode(torch.tensor([ids]), memory, src)[0, -1].clone()\n"
          "            logits[bos_id] = logits[pad_id] = float('-inf')\n"
          "            ids.append(int(logits.argmax()))\n"
          "            if ids[-1] == eos_id:\n"
          "                break\n"
          "        rows.append(ids[1:])\n"
          "    width = max(len(r) for r in rows)\n"
          "    return torch.tensor([r + [pad_id] * (width - len(r)) for r in rows], dtype=torch.long)\n"),
]
MISTAKES += [
    q('q5', 'eos id typed in', plant(DECODE, "finished |= next_token == eos_id", "finished |= next_token == 6"),
      'the eos_id argument'),
]
