"""Lesson 04: wrong answers that only the generic contract catches (the typical mistakes are declared beside each
exercise in course_utils/exercises/lesson04.py), and right answers written differently, which must be accepted."""
from . import Alternative, Mistake, plant

PRELUDE = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
           "from course_utils.attention import MultiHeadAttention\n"
           "from course_utils.layers import EncoderLayer, PositionwiseFeedForward\n")
COUNT = ("def encoder_parameters(n, d, f):\n"
         "    return n * (4 * (d * d + d) + d * f + f + f * d + d + 4 * d) + 2 * d\n")
BATCH_NORM = ("def masked_batch_norm(x, real, eps=1e-5):\n"
              "    tokens = x[real]\n"
              "    mean = tokens.mean(dim=0)\n"
              "    var = tokens.var(dim=0, unbiased=False)\n"
              "    return torch.where(real[..., None], (x - mean) / torch.sqrt(var + eps), 0.0)\n")
STREAM = ("def stream_norms(encoder, x, mask):\n"
          "    real = mask[:, 0, 0, :]\n    norms = []\n    for layer in encoder.layers:\n"
          "        x = layer(x, mask)\n        norms.append(x[real].norm(dim=-1).mean())\n"
          "    return torch.stack(norms)\n")
PARALLEL = ("class ParallelEncoderLayer(nn.Module):\n"
            "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1):\n        super().__init__()\n"
            "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
            "        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)\n"
            "        self.norm = nn.LayerNorm(d_model)\n        self.dropout = nn.Dropout(dropout)\n\n"
            "    def forward(self, x, mask=None):\n        h = self.norm(x)\n"
            "        return x + self.dropout(self.self_attn(h, h, h, mask)[0]) + self.dropout(self.feed_forward(h))\n")


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson04", exercise, name, code, message, PRELUDE)


def a(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson04", exercise, name, code, PRELUDE)


MISTAKES = [
    q("q1", "the package's count", "from course_utils.config import count_parameters, TransformerConfig\n"
      "from course_utils.models import Encoder\n\n\ndef encoder_parameters(n, d, f):\n"
      "    return count_parameters(Encoder(TransformerConfig(vocab_size=2, d_model=d, n_heads=1, d_ff=f, "
      "n_layers=n)))\n", "use your own code"),
    q("q1", "a float tensor",
      COUNT.replace("    return ", "    return torch.tensor(").rstrip() + ", dtype=torch.float64)\n",
      "should be an int"),
    q("q2", "F.batch_norm on the real tokens", "def masked_batch_norm(x, real, eps=1e-5):\n"
      "    out = torch.zeros_like(x)\n"
      "    out[real] = F.batch_norm(x[real], None, None, training=True, eps=eps)\n    return out\n",
      "use your own code"),
    q("q2", "centred in place", plant(BATCH_NORM, "    return torch.where", "    x -= mean\n    return torch.where"),
      "in place"),
    q("q2", "a list", BATCH_NORM.replace("0.0)\n", "0.0).tolist()\n"), "torch.Tensor"),
    q("q3", "a list of floats", STREAM.replace("return torch.stack(norms)", "return [n.item() for n in norms]"),
      "torch.Tensor"),
    q("q4", "dropout active in eval", plant(PARALLEL, "self.dropout(self.feed_forward(h))",
                                            "F.dropout(self.feed_forward(h), 0.5, training=True)"), "differs"),
    q("q4", "no dropout at all", PARALLEL.replace("self.dropout(", "(").replace(
        "PositionwiseFeedForward(d_model, d_ff, dropout)", "PositionwiseFeedForward(d_model, d_ff)").replace(
        "MultiHeadAttention(d_model, n_heads, dropout)", "MultiHeadAttention(d_model, n_heads)"), "drops nothing"),
    q("q4", "the package's EncoderLayer inside", PARALLEL.replace(
        "        h = self.norm(x)\n", "        EncoderLayer(x.size(-1), 1, 4)(x)\n        h = self.norm(x)\n"),
      "use your own code"),
    q("q4", "output detached", PARALLEL.replace("return x + ", "return (x + ").rstrip() + ").detach()\n",
      "gradient"),
]

ALTERNATIVES = [
    a("q1", "one expression", COUNT),
    a("q1", "from parts", "def encoder_parameters(n_layers, d_model, d_ff):\n"
      "    linear = lambda i, o: i * o + o\n    norm = 2 * d_model\n"
      "    layer = 4 * linear(d_model, d_model) + linear(d_model, d_ff) + linear(d_ff, d_model) + 2 * norm\n"
      "    return n_layers * layer + norm\n"),
    a("q2", "the reference", BATCH_NORM),
    a("q2", "weighted sums", "def masked_batch_norm(x, real, eps=1e-5):\n"
      "    w = real[..., None].float()\n    n = w.sum((0, 1))\n"
      "    mean = (x * w).sum((0, 1)) / n\n    var = ((x - mean) ** 2 * w).sum((0, 1)) / n\n"
      "    return (x - mean) / (var + eps).sqrt() * w\n"),
    a("q3", "the reference", STREAM),
    a("q3", "masked sums", STREAM.replace("norms.append(x[real].norm(dim=-1).mean())",
                                          "norms.append((x.norm(dim=-1) * real).sum() / real.sum())")),
    a("q4", "the reference", PARALLEL),
    a("q4", "branches summed first", PARALLEL.replace(
        "        return x + self.dropout(self.self_attn(h, h, h, mask)[0]) + self.dropout(self.feed_forward(h))\n",
        "        branches = self.dropout(self.self_attn(h, h, h, mask)[0]) + self.dropout(self.feed_forward(h))\n"
        "        return branches + x\n")),
]
