"""Typical wrong answers to the exercises of lesson07, each with the phrase its feedback must contain."""
from course_utils.exercises import lesson07

from . import Mistake, plant

PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson07", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'no shift',
      'def shift_targets(t):\n'
      '    return t, t\n',
      'no shift'),
    q('q1', 'wrong direction',
      'def shift_targets(t):\n'
      '    return t[:, 1:], t[:, :-1]\n',
      'wrong way'),
    q('q1', 'batch axis',
      'def shift_targets(t):\n'
      '    return t[:-1], t[1:]\n',
      'sequence axis'),
    q('q1', 'labels not shifted',
      'def shift_targets(t):\n'
      '    return t[:, :-1], t[:, :-1]\n',
      'tgt[:, 1:]'),
    q('q1', 'not a pair',
      'def shift_targets(t):\n'
      '    return t[:, :-1]\n',
      'pair'),
    q('q2', 'inverted',
      'def cross_attention_mask(s, n):\n'
      '    return (s == 0)[:, None, None, :]\n',
      'inverted'),
    q('q2', 'causal',
      'def cross_attention_mask(s, n):\n'
      '    return (s != 0)[:, None, None, :] & torch.ones(n, s.size(1), dtype=torch.bool).tril()\n',
      'not causal'),
    q('q2', 'no mask',
      'def cross_attention_mask(s, n):\n'
      '    return torch.ones(s.shape[0], 1, 1, s.shape[1], dtype=torch.bool)\n',
      'nothing is masked'),
    q('q2', '2-D',
      'def cross_attention_mask(s, n):\n'
      '    return s != 0\n',
      'does not broadcast'),
    q('q2', 'ints',
      'def cross_attention_mask(s, n):\n'
      '    return (s != 0).long()[:, None, None, :]\n',
      'bool'),
    q('q3', 'replace',
      'def append_to_cache(c, n):\n'
      '    return n\n',
      'only the new step'),
    q('q3', 'heads axis',
      'def append_to_cache(c, n):\n'
      '    return torch.cat([c, n], dim=1)\n',
      'wrong axis'),
    q('q3', 'stacked',
      'def append_to_cache(c, n):\n'
      '    return torch.cat([c, n.expand(-1, -1, 3, -1)], dim=1)\n',
      'wrong axis'),
    q('q3', 'new first',
      'def append_to_cache(c, n):\n'
      '    return torch.cat([n, c], dim=2)\n',
      'went first'),
]
MISTAKES += [
    q('q1', 'shifted by two positions', "def shift_targets(t):\n    return t[:, :-2], t[:, 2:]\n",
      'more than one position'),
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
    # q5 (capstone): greedy_decode
    q('q5', "the package's decoder imported", "from course_utils.decoding import greedy_decode\n",
      'use your own function'),
    q('q5', 'eval mode forgotten', plant(DECODE, "    model.eval()\n", ""), 'call model.eval()'),
    q('q5', 'no_grad forgotten', plant(DECODE, "@torch.no_grad()\n", ""), 'torch.no_grad()'),
    q('q5', 'target not shifted (no [BOS] start)',
      plant(DECODE, "prefix = torch.full((src_ids.size(0), 1), bos_id, dtype=torch.long)", "prefix = src_ids[:, :1]"),
      'start with [BOS]'),
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
]
