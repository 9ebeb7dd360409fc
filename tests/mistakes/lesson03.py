"""Lesson 03 (attention): wrong answers that only break the generic contract, and right answers written differently.
The typical mistakes of each exercise are declared in course_utils/exercises/lesson03.py (``mistakes=``)."""
from course_utils.exercises import lesson03

from . import Alternative, Mistake, plant

PRELUDE = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson03", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson03", exercise, name, code, PRELUDE)


CAUSAL = lesson03.q3.solution

MISTAKES = [
    q("q1", "a list of lists", "def causal_mask(n):\n    return [[j <= i for j in range(n)] for i in range(n)]\n",
      "torch.Tensor"),
    q("q1", "size fixed at 6", "def causal_mask(n):\n"
      "    return torch.ones(6, 6, dtype=torch.bool).tril()[None, None]\n", "shape"),
    q("q1", "the package's causal_mask imported",
      "from course_utils.masks import causal_mask\nmy_prediction = [0, 1]\n", "use your own code"),
    q("q1", "the package's causal_mask wrapped", "from course_utils import masks\n\ndef causal_mask(n):\n"
      "    return masks.causal_mask(n).clone()\n\nmy_prediction = [0, 1]\n", "use your own code"),
    q("q1", "prediction not recorded", lesson03.q1.solution.replace("my_prediction = [0, 1]", "my_prediction = None"),
      "record your prediction"),
    q("q1", "prediction: the right-padding rows", lesson03.q1.solution.replace("my_prediction = [0, 1]",
                                                                              "my_prediction = [3, 4]"),
      "is not what the mask gives"),
    q("q2", "weights not returned", "def padded_self_attention(x, ids):\n    mask = (ids != 0)[:, None, :]\n"
      "    s = (x @ x.transpose(-2, -1) / math.sqrt(x.size(-1))).masked_fill(~mask, torch.finfo(x.dtype).min)\n"
      "    return torch.softmax(s, -1).masked_fill(~mask, 0.0) @ x\n", "tuple"),
    q("q2", "x changed in place", "def padded_self_attention(x, ids):\n    x.masked_fill_((ids == 0)[..., None], 0.0)\n"
      "    mask = (ids != 0)[:, None, :]\n"
      "    s = (x @ x.transpose(-2, -1) / math.sqrt(x.size(-1))).masked_fill(~mask, torch.finfo(x.dtype).min)\n"
      "    w = torch.softmax(s, -1).masked_fill(~mask, 0.0)\n    return w @ x, w\n", "changed"),
    q("q3", "the package's class imported", "from course_utils.attention import MultiHeadAttention as "
      "CausalSelfAttention\n", "use your own class"),
    q("q3", "not an nn.Module", plant(CAUSAL, "class CausalSelfAttention(nn.Module):", "class CausalSelfAttention:"),
      "subclass nn.Module"),
    q("q3", "no dropout parameter", plant(CAUSAL, "def __init__(self, d_model, n_heads, dropout=0.0):",
                                          "def __init__(self, d_model, n_heads):"), "(d_model, n_heads, dropout=0.0)"),
    q("q3", "three projections instead of qkv", plant(CAUSAL, "self.qkv = nn.Linear(d_model, 3 * d_model)",
                                                      "self.w_q = nn.Linear(d_model, d_model)"), "needs exactly"),
    q("q3", "returns only the output", plant(CAUSAL, "return self.out(out), weights", "return self.out(out)"),
      "pair (output, weights)"),
    q("q3", "PyTorch's fused attention", plant(CAUSAL, "out = (self.dropout(weights) @ v)",
                                               "out = (F.scaled_dot_product_attention(q, k, v, allowed))"),
      "scaled_dot_product_attention"),
    q("q3", "weights detached", plant(CAUSAL, "weights = torch.softmax(scores, dim=-1)",
                                      "weights = torch.softmax(scores, dim=-1).detach()"), "gradient"),
    q("q3", "dropout never applied", plant(CAUSAL, "self.dropout(weights) @ v", "weights @ v"), "or none"),
    q("q3", "dropout on the output", plant(plant(CAUSAL, "self.dropout(weights) @ v", "weights @ v"),
                                           "return self.out(out), weights", "return self.dropout(self.out(out)), "
                                                                            "weights"), "other entries"),
]

ALTERNATIVES = [
    right("q1", "comparison of positions", "def causal_mask(n):\n"
          "    positions = torch.arange(n)\n    return (positions[None, :] <= positions[:, None]).view(1, 1, n, n)\n\n"
          "my_prediction = (1, 0)\n"),
    right("q1", "torch.tril of floats", "def causal_mask(n):\n"
          "    return torch.tril(torch.ones(n, n)).bool().unsqueeze(0).unsqueeze(0)\n\nmy_prediction = [0, 1]\n"),
    right("q2", "einsum and torch.where", "def padded_self_attention(x, ids):\n"
          "    real = (ids != 0).unsqueeze(1)                       # (batch, 1, seq)\n"
          "    s = torch.einsum('bqd,bkd->bqk', x, x) / x.size(-1) ** 0.5\n"
          "    s = torch.where(real, s, torch.full_like(s, torch.finfo(s.dtype).min))\n"
          "    w = torch.where(real, s.softmax(-1), torch.zeros_like(s))\n    return w @ x, w\n"),
    right("q2", "-1e9 fill, zeroed after", "def padded_self_attention(x, ids):\n    mask = (ids != 0)[:, None, :]\n"
          "    s = (x @ x.transpose(1, 2) / math.sqrt(x.shape[-1])).masked_fill(mask == 0, -1e9)\n"
          "    w = F.softmax(s, dim=2) * mask\n    return torch.bmm(w, x), w\n"),
    right("q3", "split, reshape and permute", plant(plant(CAUSAL, "self.qkv(x).chunk(3, dim=-1)",
                                                          "self.qkv(x).split(d_model, dim=-1)"),
                                                    "t.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)",
                                                    "t.reshape(batch, seq, self.n_heads, -1).permute(0, 2, 1, 3)")),
    right("q3", "einsum scores and F.dropout", plant(plant(CAUSAL, "scores = q @ k.transpose(-2, -1)",
                                                           "scores = torch.einsum('bhqd,bhkd->bhqk', q, k)"),
                                                     "self.dropout(weights) @ v",
                                                     "F.dropout(weights, self.dropout.p, self.training) @ v")),
    right("q3", "-inf fill, zeroed after the softmax", plant(CAUSAL, "torch.finfo(scores.dtype).min", "float('-inf')")),
    right("q3", "section 6's attention called", "def attention(q, k, v, mask=None, dropout_p=0.0, training=False):\n"
          "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
          "    if mask is not None:\n"
          "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
          "    weights = torch.softmax(scores, dim=-1)\n"
          "    if mask is not None:\n"
          "        weights = weights.masked_fill(~mask, 0.0)\n"
          "    weights = F.dropout(weights, p=dropout_p, training=training)\n"
          "    return weights @ v, weights\n\n\n"
          "class CausalSelfAttention(nn.Module):\n"
          "    def __init__(self, d_model, n_heads, dropout=0.0):\n"
          "        super().__init__()\n"
          "        self.h, self.p = n_heads, dropout\n"
          "        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)\n\n"
          "    def forward(self, x, mask=None):\n"
          "        b, n, d = x.shape\n"
          "        q, k, v = (t.view(b, n, self.h, d // self.h).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))\n"
          "        allowed = torch.ones(n, n, dtype=torch.bool).tril()[None, None]\n"
          "        if mask is not None:\n"
          "            allowed = allowed & mask\n"
          "        out, weights = attention(q, k, v, allowed, self.p, self.training)\n"
          "        return self.out(out.transpose(1, 2).reshape(b, n, d)), weights\n"),
    right("q2", "-inf fill, zeroed after the softmax", plant(lesson03.q2.solution, "torch.finfo(scores.dtype).min",
                                                             "float('-inf')")),
]
