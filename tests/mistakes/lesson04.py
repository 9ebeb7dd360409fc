"""Typical wrong answers to the exercises of lesson04, each with the phrase its feedback must contain."""
from course_utils.exercises import lesson04

from . import Mistake, plant

PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson04", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q('q1', 'quick estimate, weights only',
      'def encoder_layer_parameters(d, f):\n'
      '    return 4 * d * d + 2 * d * f\n',
      'only the weight matrices'),
    q('q1', 'no LayerNorms',
      'def encoder_layer_parameters(d, f):\n'
      '    return 4 * (d * d + d) + d * f + f + f * d + d\n',
      'two LayerNorms are missing'),
    q('q1', 'one LayerNorm',
      'def encoder_layer_parameters(d, f):\n'
      '    return 4 * (d * d + d) + d * f + f + f * d + d + 2 * d\n',
      'one LayerNorm is missing'),
    q('q1', 'no biases',
      'def encoder_layer_parameters(d, f):\n'
      '    return 4 * d * d + 2 * d * f + 4 * d\n',
      'biases of the six linear layers'),
    q('q1', 'd_ff assumed 4·d',
      'def encoder_layer_parameters(d, f):\n'
      '    return 4 * (d * d + d) + 8 * d * d + 4 * d + d + 4 * d\n',
      'off by'),
    q('q1', 'float',
      'def encoder_layer_parameters(d, f):\n'
      '    return float(4 * (d * d + d) + d * f + f + f * d + d + 4 * d)\n',
      'return an int'),
    q('q2', 'Post-LN',
      'def pre_ln_sublayer(x, sublayer, norm):\n'
      '    return norm(x + sublayer(x))\n',
      'that is Post-LN'),
    q('q2', 'no residual',
      'def pre_ln_sublayer(x, sublayer, norm):\n'
      '    return sublayer(norm(x))\n',
      'residual is missing'),
    q('q2', 'normalised output',
      'def pre_ln_sublayer(x, sublayer, norm):\n'
      '    return x + norm(sublayer(x))\n',
      "normalised the sublayer's output"),
    q('q2', 'normalised residual',
      'def pre_ln_sublayer(x, sublayer, norm):\n'
      '    return norm(x) + sublayer(norm(x))\n',
      'raw x'),
    q('q2', 'wrong shape',
      'def pre_ln_sublayer(x, sublayer, norm):\n'
      '    return (x + sublayer(norm(x))).mean(1)\n',
      'keep the shape'),
    q('q2', 'other',
      'def pre_ln_sublayer(x, sublayer, norm):\n'
      '    return x + 2 * sublayer(norm(x))\n',
      'differs'),
    q('q3', 'no eps',
      'def layer_norm(x):\n'
      '    return (x - x.mean(-1, keepdim=True)) / x.var(-1, unbiased=False, keepdim=True).sqrt()\n',
      'eps'),
    q('q3', 'unbiased',
      'def layer_norm(x):\n'
      '    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)\n',
      'unbiased'),
    q('q3', 'batch axis',
      'def layer_norm(x):\n'
      '    return (x - x.mean(0, keepdim=True)) / torch.sqrt(x.var(0, unbiased=False, keepdim=True) + 1e-5)\n',
      "BatchNorm's axis"),
    q('q3', 'sequence axis',
      'def layer_norm(x):\n'
      '    return (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)\n',
      'over the sequence'),
    q('q3', 'centred only',
      'def layer_norm(x):\n'
      '    return x - x.mean(-1, keepdim=True)\n',
      'did not divide'),
    q('q3', 'no keepdim',
      'def layer_norm(x):\n'
      '    return (x - x.mean(-1)) / torch.sqrt(x.var(-1, unbiased=False) + 1e-5)\n',
      'raised'),
]

LAYER = lesson04.q4.solution
ENCODER = lesson04.q5.solution
PRE = "            return x + self.dropout(sublayer(self.norm(x)))   # Pre-LN\n"
POST = "        return self.norm(x + self.dropout(sublayer(x)))        # Post-LN\n"
MISTAKES += [
    q('q3', 'eps outside the square root',
      "def layer_norm(x):\n    m = x.mean(-1, keepdim=True)\n"
      "    return (x - m) / (x.var(-1, unbiased=False, keepdim=True).sqrt() + 1e-5)\n", 'inside'),
    # q4 (capstone): EncoderLayer — bugs planted in the solution
    q('q4', "the package's class imported", "from course_utils.layers import EncoderLayer\n", 'use your own class'),
    q('q4', 'no norm parameter', plant(LAYER, 'def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm="post"):',
                                       'def __init__(self, d_model, n_heads, d_ff, dropout=0.1):'),
      "(d_model, n_heads, d_ff, dropout=0.1, norm='post')"),
    q('q4', 'always Post-LN', plant(LAYER, "        if self.pre:\n" + PRE, ""), "with norm='pre' you computed Post-LN"),
    q('q4', 'always Pre-LN', plant(LAYER, "        if self.pre:\n" + PRE + POST, PRE.replace("    ", "", 1)),
      "with norm='post' you computed Pre-LN"),
    q('q4', 'residual around the normalised input',
      plant(LAYER, PRE, "            h = self.norm(x)\n            return h + self.dropout(sublayer(h))\n"), 'raw'),
    q('q4', 'LayerNorm on the sublayer output',
      plant(LAYER, POST, "        return x + self.norm(self.dropout(sublayer(x)))\n"),
      'LayerNorm is in the wrong place'),
    q('q4', 'residual missing', plant(LAYER, POST, "        return self.norm(self.dropout(sublayer(x)))\n"),
      'residual connection is missing'),
    q('q4', 'extra LayerNorm at the end of a Pre-LN layer',
      plant(plant(LAYER, "        self.ff_block = Residual(d_model, dropout, norm)\n",
                  "        self.ff_block = Residual(d_model, dropout, norm)\n"
                  "        self.final_norm = nn.LayerNorm(d_model)\n"),
            "        return self.ff_block(x, self.feed_forward)\n",
            "        return self.final_norm(self.ff_block(x, self.feed_forward))\n"), 'once, after the last layer'),
    q('q4', 'one LayerNorm shared by both sublayers', plant(LAYER, "self.ff_block = Residual(d_model, dropout, norm)",
                                                            "self.ff_block = self.attn_block"),
      'one and the same parameter'),
    q('q4', 'mask not passed to self-attention',
      plant(LAYER, "self.self_attn(h, h, h, mask)[0]", "self.self_attn(h, h, h)[0]"),
      'mask never reaches self-attention'),
    q('q4', 'attention pair not unpacked',
      plant(LAYER, "self.self_attn(h, h, h, mask)[0]", "self.self_attn(h, h, h, mask)"),
      'take [0]'),
    q('q4', 'feed-forward first',
      plant(LAYER, "        x = self.attn_block(x, lambda h: self.self_attn(h, h, h, mask)[0])\n"
                   "        return self.ff_block(x, self.feed_forward)\n",
            "        x = self.ff_block(x, self.feed_forward)\n"
            "        return self.attn_block(x, lambda h: self.self_attn(h, h, h, mask)[0])\n"),
      'wrong order'),
    q('q4', 'no ReLU in the feed-forward', plant(LAYER, "F.relu(self.linear1(x))", "self.linear1(x)"), 'no ReLU'),
    q('q4', 'GELU instead of ReLU', plant(LAYER, "F.relu(self.linear1(x))", "F.gelu(self.linear1(x))"), 'not GELU'),
    q('q4', 'feed-forward layers renamed', plant(LAYER, "self.linear1", "self.fc1"),
      'no parameter `feed_forward.linear1.weight`'),
    q('q4', 'dropout active in eval',
      plant(plant(plant(LAYER, "self.dropout = nn.Dropout(dropout)\n\n    def forward(self, x, s",
                        "self.p = dropout\n\n    def forward(self, x, s"),
                  "self.dropout(sublayer(self.norm(x)))", "F.dropout(sublayer(self.norm(x)), self.p)"),
            "self.dropout(sublayer(x))", "F.dropout(sublayer(x), self.p)"),
      'dropout is still active'),
    q('q4', 'output detached', plant(LAYER, "return self.ff_block(x, self.feed_forward)",
                                     "return self.ff_block(x, self.feed_forward).detach()"), 'cuts the graph'),
    # q5 (capstone): Encoder
    q('q5', "the package's class imported", "from course_utils.models import Encoder\n", 'use your own class'),
    q('q5', 'final norm missing', plant(ENCODER, "return self.norm(x)   # once, after the stack", "return x"),
      'final LayerNorm is missing'),
    q('q5', 'final norm defined nowhere', plant(plant(ENCODER, "        self.norm = nn.LayerNorm(d_model)\n", ""),
                                                "return self.norm(x)   # once, after the stack", "return x"),
      'no parameter `norm.weight`'),
    q('q5', 'final norm after every layer',
      plant(ENCODER, "            x = layer(x, mask)\n        return self.norm(x)",
            "            x = self.norm(layer(x, mask))\n        return x"),
      'after every layer'),
    q('q5', 'one layer repeated',
      plant(ENCODER, "nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm=norm)\n"
                     "                                    for _ in range(n_layers))",
            "nn.ModuleList([EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm=norm)] * n_layers)"),
      'one and the same parameter'),
    q('q5', 'layers not chained', plant(ENCODER, "        for layer in self.layers:\n            x = layer(x, mask)\n"
                                                 "        return self.norm(x)",
                                        "        for layer in self.layers:\n            h = layer(x, mask)\n"
                                        "        return self.norm(h)"), 'previous layer'),
    q('q5', 'mask not passed on', plant(ENCODER, "x = layer(x, mask)", "x = layer(x)"), 'mask is not passed on'),
]
