"""Typical wrong answers to the exercises of lesson04, each with the phrase its feedback must contain."""
from course_utils.exercises import lesson04

from . import Alternative, Mistake, plant

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
      'assumed d_ff = 4·d_model'),
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
      plant(ENCODER, "nn.ModuleList(package_layers.EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm=norm)\n"
                     "                                    for _ in range(n_layers))",
            "nn.ModuleList([package_layers.EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm=norm)]"
            " * n_layers)"),
      'one and the same parameter'),
    q('q5', 'layers not chained', plant(ENCODER, "        for layer in self.layers:\n            x = layer(x, mask)\n"
                                                 "        return self.norm(x)",
                                        "        for layer in self.layers:\n            h = layer(x, mask)\n"
                                        "        return self.norm(h)"), 'previous layer'),
    q('q5', 'mask not passed on', plant(ENCODER, "x = layer(x, mask)", "x = layer(x)"), 'mask is not passed on'),
]

# ---------------------------------------------------------------------------------------------------------------
# Wrong answers of the kinds that passed the fixed-input checkers (issue 21): fixed sizes, wrong types, inputs
# changed in place, a cut graph, dropout misplaced, the package's block handed in under another path.
# ---------------------------------------------------------------------------------------------------------------
RIGHT_COUNT = "4 * (d * d + d) + d * f + f + f * d + d + 4 * d"
MISTAKES += [
    q('q1', 'true division makes a float', f'def encoder_layer_parameters(d, f):\n    return ({RIGHT_COUNT}) / 1\n',
      'return an int'),
    q('q1', 'float power loses digits on huge sizes',
      'def encoder_layer_parameters(d, f):\n'
      '    return int(4 * (d ** 2.0 + d) + 2.0 * d * f + f + d + 4 * d)\n',
      'lost digits'),
    q('q1', 'np.int32 overflows on huge sizes',
      'import numpy as np\n\n'
      'def encoder_layer_parameters(d, f):\n'
      '    d, f = np.int32(d), np.int32(f)\n'
      f'    return {RIGHT_COUNT}\n',
      'lost digits'),
    q('q1', 'a float tensor',
      f'def encoder_layer_parameters(d, f):\n    return torch.tensor(float({RIGHT_COUNT}))\n',
      'return an int'),
    q('q1', "the package's count under another name",
      'from course_utils import config as C\n\n'
      'def encoder_layer_parameters(d, f):\n    return C.encoder_layer_parameter_count(d, f)\n',
      'use your own code'),
    q('q1', 'a built layer counted',
      'import course_utils.layers as CL\n\n'
      'def encoder_layer_parameters(d, f):\n'
      '    return sum(p.numel() for p in CL.EncoderLayer(d, 1, f).parameters())\n',
      'use your own code'),
    q('q1', 'torch layer counted',
      'def encoder_layer_parameters(d, f):\n'
      '    return sum(p.numel() for p in nn.TransformerEncoderLayer(d, 1, f).parameters())\n',
      'use your own code'),
    q('q1', 'three attention projections',
      'def encoder_layer_parameters(d, f):\n    return 3 * (d * d + d) + d * f + f + f * d + d + 4 * d\n',
      'only three attention projections'),
    q('q1', 'arguments swapped',
      'def encoder_layer_parameters(f, d):\n    return 4 * (d * d + d) + d * f + f + f * d + d + 4 * d\n',
      'swapped'),
    q('q2', 'residual added in place',
      'def pre_ln_sublayer(x, sublayer, norm):\n    x += sublayer(norm(x))\n    return x\n',
      'changed its input `x` in place'),
    q('q2', 'sublayer branch detached',
      'def pre_ln_sublayer(x, sublayer, norm):\n    return x + sublayer(norm(x)).detach()\n',
      'no gradient reaches'),
    q('q2', 'under no_grad',
      'def pre_ln_sublayer(x, sublayer, norm):\n    with torch.no_grad():\n        return x + sublayer(norm(x))\n',
      'carries no gradient'),
    q('q2', 'residual detached',
      'def pre_ln_sublayer(x, sublayer, norm):\n    return x.detach() + sublayer(norm(x))\n',
      'gradient of x'),
    q('q2', 'a LayerNorm of its own instead of norm',
      'def pre_ln_sublayer(x, sublayer, norm):\n    return x + sublayer(F.layer_norm(x, x.shape[-1:]))\n',
      'use the `norm` you are given'),
    q('q2', 'norm ignored',
      'def pre_ln_sublayer(x, sublayer, norm):\n    return x + sublayer(x)\n',
      'the norm is never applied'),
    q('q2', 'hard-coded shape',
      'def pre_ln_sublayer(x, sublayer, norm):\n    return (x + sublayer(norm(x))).view(2, 5, 8)\n',
      'raised RuntimeError'),
    q('q2', 'float64 result',
      'def pre_ln_sublayer(x, sublayer, norm):\n    return x.double() + sublayer(norm(x)).double()\n',
      'torch.float64'),
    q('q2', "the package's residual block",
      'from course_utils.layers import ResidualSublayer\n\n'
      'def pre_ln_sublayer(x, sublayer, norm):\n'
      '    block = ResidualSublayer(x.size(-1), 0.0, "pre")\n'
      '    block.norm = norm\n'
      '    return block(x, sublayer)\n',
      'use your own code'),
    q('q2', 'norm applied twice',
      'def pre_ln_sublayer(x, sublayer, norm):\n    return x + sublayer(norm(norm(x)))\n',
      'applied twice'),
    q('q3', 'batch_norm with the tokens as channels',
      'def layer_norm(x):\n'
      '    b, s, d = x.shape\n'
      '    return F.batch_norm(x.reshape(1, b * s, d), None, None, training=True).reshape(b, s, d)\n',
      'use your own code'),
    q('q3', 'rms_norm of the centred tokens',
      'def layer_norm(x):\n'
      '    return F.rms_norm(x - x.mean(-1, keepdim=True), x.shape[-1:], eps=1e-5)\n',
      'use your own code'),
    q('q3', 'centred in place',
      'def layer_norm(x):\n'
      '    x -= x.mean(-1, keepdim=True)\n'
      '    return x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)\n',
      'changed its input `x` in place'),
    q('q3', 'F.layer_norm', 'def layer_norm(x):\n    return F.layer_norm(x, x.shape[-1:])\n', 'use your own code'),
    q('q3', 'nn.LayerNorm without affine',
      'def layer_norm(x):\n    return nn.LayerNorm(x.size(-1), elementwise_affine=False)(x)\n', 'use your own code'),
    q('q3', 'torch.layer_norm under another name',
      'from torch import layer_norm as ln\n\n'
      'def layer_norm(x):\n    return ln(x, [x.shape[-1]])\n', 'use your own code'),
    q('q3', 'eps argument ignored',
      'def layer_norm(x, eps=1e-5):\n'
      '    m = x.mean(-1, keepdim=True)\n'
      '    return (x - m) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)\n',
      'ignores it'),
    q('q3', 'RMSNorm instead of LayerNorm',
      'def layer_norm(x):\n    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5)\n', 'RMSNorm'),
    q('q3', 'hard-coded d_model',
      'def layer_norm(x):\n'
      '    m = x.sum(-1, keepdim=True) / 6\n'
      '    v = ((x - m) ** 2).sum(-1, keepdim=True) / 6\n'
      '    return (x - m) / torch.sqrt(v + 1e-5)\n',
      'a fixed number'),
    q('q3', 'float32 forced',
      'def layer_norm(x):\n'
      '    x = x.float()\n'
      '    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)\n',
      'should be a torch.float64 tensor'),
    q('q3', 'eps 1e-6',
      'def layer_norm(x):\n'
      '    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-6)\n',
      'ε = 1e-06'),
    q('q3', 'divided by the variance',
      'def layer_norm(x):\n'
      '    return (x - x.mean(-1, keepdim=True)) / (x.var(-1, unbiased=False, keepdim=True) + 1e-5)\n',
      'divided by the variance'),
]

RESIDUAL_INIT = "        self.dropout = nn.Dropout(dropout)\n\n    def forward(self, x, sublayer):\n"
MISTAKES += [
    q('q4', 'hard-coded d_model in the norms', plant(LAYER, "self.norm = nn.LayerNorm(d_model)",
                                                     "self.norm = nn.LayerNorm(24)"), 'has shape (24,)'),
    q('q4', 'hard-coded heads', plant(LAYER, "MultiHeadAttention(d_model, n_heads, dropout)",
                                      "MultiHeadAttention(d_model, 2, dropout)"), 'n_heads'),
    q('q4', 'dropout argument ignored', plant(LAYER, "nn.Dropout(dropout)", "nn.Dropout(0.1)"), 'p=0.1'),
    q('q4', 'no dropout on the residual branch',
      plant(plant(LAYER, "x + self.dropout(sublayer(self.norm(x)))", "x + sublayer(self.norm(x))"),
            "self.norm(x + self.dropout(sublayer(x)))", "self.norm(x + sublayer(x))"),
      'different place'),
    q('q4', "dropout after the feed-forward's second linear",
      plant(LAYER, "self.linear2(self.dropout(F.relu(self.linear1(x))))",
            "self.dropout(self.linear2(F.relu(self.linear1(x))))"), 'different place'),
    q('q4', 'attention built without dropout', plant(LAYER, "MultiHeadAttention(d_model, n_heads, dropout)",
                                                      "MultiHeadAttention(d_model, n_heads)"),
      'built with dropout=0.0'),
    q('q4', 'Pre-LN residual added in place',
      plant(LAYER, PRE, "            x += self.dropout(sublayer(self.norm(x)))\n            return x\n"),
      'changed its input `x` in place'),
    q('q4', 'mask inverted', plant(LAYER, "self.self_attn(h, h, h, mask)[0]",
                                   "self.self_attn(h, h, h, None if mask is None else ~mask)[0]"),
      'the mask is inverted'),
    q('q4', "the package's layer wrapped",
      "import torch.nn as nn\nimport course_utils.layers as CL\n\n\n"
      "class EncoderLayer(nn.Module):\n"
      "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
      "        super().__init__()\n"
      "        inner = CL.EncoderLayer(d_model, n_heads, d_ff, dropout, norm=norm)\n"
      "        self.self_attn, self.feed_forward = inner.self_attn, inner.feed_forward\n"
      "        self.attn_block, self.ff_block = inner.attn_block, inner.ff_block\n\n"
      "    def forward(self, x, mask=None):\n"
      "        return CL.EncoderLayer.forward(self, x, mask)\n",
      'use your own code'),
    q('q4', "the package's residual block",
      "import course_utils.layers as CL\n"
      + plant(LAYER, "        self.attn_block = Residual(d_model, dropout, norm)\n"
                     "        self.ff_block = Residual(d_model, dropout, norm)\n",
              "        self.attn_block = CL.ResidualSublayer(d_model, dropout, norm)\n"
              "        self.ff_block = CL.ResidualSublayer(d_model, dropout, norm)\n"),
      'ResidualSublayer'),
    q('q4', "torch's encoder layer",
      "import torch.nn as nn\n\n\n"
      "class EncoderLayer(nn.TransformerEncoderLayer):\n"
      "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
      "        super().__init__(d_model, n_heads, d_ff, dropout, batch_first=True, norm_first=norm == 'pre')\n\n"
      "    def forward(self, x, mask=None):\n"
      "        return super().forward(x, src_key_padding_mask=None if mask is None else ~mask[:, 0, 0])\n",
      'use your own code'),
    q('q5', 'n_layers hard-coded', plant(ENCODER, "for _ in range(n_layers))", "for _ in range(3))"),
      "parameters the package's block does not"),
    q('q5', 'dropout not passed to the layers',
      plant(ENCODER, "package_layers.EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm=norm)",
            "package_layers.EncoderLayer(d_model, n_heads, d_ff, norm=norm)"), 'p=0.1'),
    q('q5', 'norm not passed to the layers',
      plant(ENCODER, "package_layers.EncoderLayer(d_model, n_heads, d_ff, dropout=dropout, norm=norm)",
            "package_layers.EncoderLayer(d_model, n_heads, d_ff, dropout=dropout)"), 'pass norm on'),
    q('q5', 'final norm for Pre-LN only',
      plant(plant(ENCODER, "        self.norm = nn.LayerNorm(d_model)\n",
                  "        self.norm = nn.LayerNorm(d_model)\n        self.pre = norm == 'pre'\n"),
            "return self.norm(x)   # once, after the stack", "return self.norm(x) if self.pre else x"),
      'final LayerNorm is missing'),
    q('q5', 'dropout on the input',
      plant(plant(ENCODER, "        self.norm = nn.LayerNorm(d_model)\n",
                  "        self.norm = nn.LayerNorm(d_model)\n        self.drop = nn.Dropout(dropout)\n"),
            "        for layer in self.layers:\n", "        x = self.drop(x)\n        for layer in self.layers:\n"),
      'different place'),
    q('q5', "the package's encoder wrapped",
      "import torch.nn as nn\nfrom course_utils import models\nfrom course_utils.config import TransformerConfig\n\n\n"
      "class Encoder(nn.Module):\n"
      "    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
      "        super().__init__()\n"
      "        inner = models.Encoder(TransformerConfig(vocab_size=1, d_model=d_model, n_heads=n_heads, d_ff=d_ff,\n"
      "                                                 n_layers=n_layers, dropout=dropout, norm=norm))\n"
      "        self.layers, self.norm = inner.layers, inner.norm\n\n"
      "    def forward(self, x, mask=None):\n"
      "        return models.Encoder.forward(self, x, mask)\n",
      'use your own code'),
    q('q5', "torch's encoder stack",
      "import torch.nn as nn\nimport course_utils.layers as CL\n\n\n"
      "class Encoder(nn.Module):\n"
      "    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
      "        super().__init__()\n"
      "        layer = CL.EncoderLayer(d_model, n_heads, d_ff, dropout, norm=norm)\n"
      "        self.stack = nn.TransformerEncoder(nn.Identity(), 1, enable_nested_tensor=False)\n"
      "        self.stack.layers = nn.ModuleList()\n"
      "        self.layers = nn.ModuleList(CL.EncoderLayer(d_model, n_heads, d_ff, dropout, norm=norm)\n"
      "                                    for _ in range(n_layers))\n"
      "        self.norm = nn.LayerNorm(d_model)\n"
      "        del layer\n\n"
      "    def forward(self, x, mask=None):\n"
      "        for layer in self.layers:\n"
      "            x = layer(x, mask)\n"
      "        return self.norm(self.stack(x))\n",
      'use your own code'),
]

# ---------------------------------------------------------------------------------------------------------------
# Right answers written differently: each must be accepted.
# ---------------------------------------------------------------------------------------------------------------


def alt(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson04", exercise, name, code, PRELUDE)


OWN_ATTENTION = (  # a lesson 03 answer: the package's names, dropout on the weights, finite fill, zeroed rows
    "import math\n\n\n"
    "class MultiHeadAttention(nn.Module):\n"
    "    def __init__(self, d_model, n_heads, dropout=0.0):\n"
    "        super().__init__()\n"
    "        self.n_heads, self.d_head = n_heads, d_model // n_heads\n"
    "        self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)\n"
    "        self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)\n"
    "        self.dropout = nn.Dropout(dropout)\n\n"
    "    def forward(self, query, key, value, mask=None):\n"
    "        b = query.size(0)\n"
    "        q, k, v = (w(t).view(b, -1, self.n_heads, self.d_head).transpose(1, 2)\n"
    "                   for w, t in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))\n"
    "        scores = torch.einsum('bhqd,bhkd->bhqk', q, k) / math.sqrt(self.d_head)\n"
    "        if mask is not None:\n"
    "            scores = scores.masked_fill(~mask, float('-inf'))\n"
    "        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)\n"
    "        if mask is not None:\n"
    "            weights = weights.masked_fill(~mask, 0.0)\n"
    "        weights = self.dropout(weights)\n"
    "        out = (weights @ v).transpose(1, 2).reshape(b, -1, self.n_heads * self.d_head)\n"
    "        return self.w_o(out), weights\n\n\n"
)

ALTERNATIVES = [
    alt('q1', 'np.int64 arithmetic',
        'import numpy as np\n\n'
        'def encoder_layer_parameters(d_model, d_ff):\n'
        '    d, f = np.int64(d_model), np.int64(d_ff)\n'
        '    return 4 * (d * d + d) + 2 * d * f + f + d + 2 * (2 * d)\n'),
    alt('q1', 'layer by layer',
        'def encoder_layer_parameters(d_model, d_ff):\n'
        '    linears = [(d_model, d_model)] * 4 + [(d_model, d_ff), (d_ff, d_model)]\n'
        '    return sum(i * o + o for i, o in linears) + sum(2 * d_model for _ in range(2))\n'),
    alt('q1', 'a 0-d integer tensor',
        'def encoder_layer_parameters(d_model, d_ff):\n'
        '    d, f = torch.tensor(d_model), torch.tensor(d_ff)\n'
        '    return 4 * d * d + 2 * d * f + 9 * d + f\n'),
    alt('q2', 'sublayer output first', 'def pre_ln_sublayer(x, sublayer, norm):\n    return sublayer(norm(x)) + x\n'),
    alt('q2', 'torch.add in steps',
        'def pre_ln_sublayer(x, sublayer, norm):\n'
        '    h = norm(x)\n    h = sublayer(h)\n    return torch.add(x, h)\n'),
    alt('q2', 'norm called twice, sublayer once',
        'def pre_ln_sublayer(x, sublayer, norm):\n'
        '    out = x.clone()\n    out = out + sublayer(norm(x))\n    return out\n'),
    alt('q3', 'var_mean and rsqrt',
        'def layer_norm(x):\n'
        '    var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)\n'
        '    return (x - mean) * torch.rsqrt(var + 1e-5)\n'),
    alt('q3', 'E[x²] − E[x]²',
        'def layer_norm(x):\n'
        '    m = x.mean(-1, keepdim=True)\n'
        '    v = (x * x).mean(-1, keepdim=True) - m * m\n'
        '    return (x - m) / (v + 1e-5).sqrt()\n'),
    alt('q3', 'eps argument honoured, by hand sums',
        'def layer_norm(x, eps=1e-5):\n'
        '    n = x.shape[-1]\n'
        '    centred = x - x.sum(dim=-1, keepdim=True) / n\n'
        '    return centred / ((centred ** 2).sum(dim=-1, keepdim=True) / n + eps) ** 0.5\n'),
    alt('q4', "lesson 03's own attention, functional dropout in the feed-forward",
        OWN_ATTENTION
        + plant(plant(plant(LAYER, "from course_utils.attention import MultiHeadAttention\n", ""),
                      "self.linear2(self.dropout(F.relu(self.linear1(x))))",
                      "self.linear2(F.dropout(F.relu(self.linear1(x)), self.p, self.training))"),
                "        self.linear2 = nn.Linear(d_ff, d_model)\n        self.dropout = nn.Dropout(dropout)\n",
                "        self.linear2 = nn.Linear(d_ff, d_model)\n        self.p = dropout\n")),
    alt('q4', "no Residual class: the package's feed-forward, one shared dropout, a buffer",
        "import torch.nn as nn\n\n"
        "from course_utils.attention import MultiHeadAttention\n"
        "from course_utils.layers import PositionwiseFeedForward\n\n\n"
        "class NormHolder(nn.Module):\n"
        "    def __init__(self, d_model):\n"
        "        super().__init__()\n"
        "        self.norm = nn.LayerNorm(d_model)\n\n\n"
        "class EncoderLayer(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
        "        super().__init__()\n"
        "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
        "        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)\n"
        "        self.attn_block, self.ff_block = NormHolder(d_model), NormHolder(d_model)\n"
        "        self.drop = nn.Dropout(dropout)\n"
        "        self.pre = norm == 'pre'\n"
        "        self.register_buffer('one', torch.ones(()))\n\n"
        "    def forward(self, x, mask=None):\n"
        "        if self.pre:\n"
        "            h = self.attn_block.norm(x)\n"
        "            x = x + self.drop(self.self_attn(h, h, h, mask=mask)[0])\n"
        "            return x + self.drop(self.feed_forward(self.ff_block.norm(x))) * self.one\n"
        "        x = self.attn_block.norm(x + self.drop(self.self_attn(x, x, x, mask)[0]))\n"
        "        return self.ff_block.norm(x + self.drop(self.feed_forward(x)))\n"),
    alt('q5', 'own layers from q4 inside',
        LAYER + "\n\n" + plant(ENCODER, "package_layers.EncoderLayer", "EncoderLayer")),
    alt('q5', 'layers appended in a loop, mask by keyword',
        "import torch.nn as nn\n\n"
        "from course_utils.layers import EncoderLayer\n\n\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self, n_layers, d_model, n_heads, d_ff, dropout=0.1, norm='post'):\n"
        "        super().__init__()\n"
        "        self.layers = nn.ModuleList()\n"
        "        for _ in range(n_layers):\n"
        "            self.layers.append(EncoderLayer(d_model, n_heads, d_ff, dropout, norm=norm))\n"
        "        self.norm = nn.LayerNorm(d_model)\n\n"
        "    def forward(self, x, mask=None):\n"
        "        for i in range(len(self.layers)):\n"
        "            x = self.layers[i](x, mask=mask)\n"
        "        return self.norm(x)\n"),
]
