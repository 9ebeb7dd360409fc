"""Typical wrong answers to the exercises of lesson 03 (attention), each with the phrase its feedback must contain."""
from course_utils.exercises import lesson03

from . import Mistake, plant

PRELUDE = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson03", exercise, name, code, message, PRELUDE)


SCORES = "    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
MHA = lesson03.q5.solution

MISTAKES = [
    # q1: scaled dot-product weights
    q("q1", "missing sqrt(d_k)", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)\n",
      "√d_k scale is missing"),
    q("q1", "divided by d_k", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k.transpose(-2, -1) / q.size(-1), -1)\n", "square root"),
    q("q1", "scaled by sqrt(k_len)", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(k.size(-2)), -1)\n", "√k_len"),
    q("q1", "scaled by sqrt(batch)", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(0)), -1)\n", "√batch"),
    q("q1", "softmax over queries", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-2)\n", "wrong axis"),
    q("q1", "no softmax", "def attention_weights(q, k):\n    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n",
      "torch.softmax"),
    q("q1", "no transpose", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k / math.sqrt(q.size(-1)), dim=-1)\n",
      "transpose"),
    q("q1", "key @ query", "def attention_weights(q, k):\n"
      "    return torch.softmax(k @ q.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)\n", "(batch, q_len, k_len)"),
    # q2: masking without NaN
    q("q2", "minus infinity gives NaN", "def masked_weights(q, k, mask):\n" + SCORES
      + "    return torch.softmax(s.masked_fill(~mask, float('-inf')), dim=-1)\n", "NaN"),
    q("q2", "mask == 0 with -inf", "def masked_weights(q, k, mask):\n" + SCORES
      + "    return torch.softmax(s.masked_fill(mask == 0, float('-inf')), dim=-1)\n", "NaN"),
    q("q2", "convention inverted", "def masked_weights(q, k, mask):\n" + SCORES
      + "    w = torch.softmax(s.masked_fill(mask, torch.finfo(s.dtype).min), dim=-1)\n"
      + "    return w.masked_fill(mask, 0.0)\n", "inverted"),
    q("q2", "blocked score set to 0", "def masked_weights(q, k, mask):\n" + SCORES
      + "    return torch.softmax(s.masked_fill(~mask, 0.0), dim=-1)\n", "does not block"),
    q("q2", "fully masked row left uniform", "def masked_weights(q, k, mask):\n" + SCORES
      + "    return torch.softmax(s.masked_fill(~mask, torch.finfo(s.dtype).min), dim=-1)\n", "fully masked"),
    q("q2", "missing scale", "def masked_weights(q, k, mask):\n    s = q @ k.transpose(-2, -1)\n"
      + "    w = torch.softmax(s.masked_fill(~mask, torch.finfo(s.dtype).min), dim=-1)\n"
      + "    return w.masked_fill(~mask, 0.0)\n", "√d_k"),
    q("q2", "mask ignored", "def masked_weights(q, k, mask):\n" + SCORES + "    return torch.softmax(s, dim=-1)\n",
      "blocked keys"),
    q("q2", "mask after softmax, not renormalised", "def masked_weights(q, k, mask):\n" + SCORES
      + "    return torch.softmax(s, dim=-1).masked_fill(~mask, 0.0)\n", "renormalising"),
    q("q2", "boolean indexing", "def masked_weights(q, k, mask):\n" + SCORES
      + "    s[~mask] = torch.finfo(s.dtype).min\n    w = torch.softmax(s, dim=-1)\n"
      + "    return w.masked_fill(~mask, 0.0)\n", "masked_fill"),
    # q3: split heads
    q("q3", "view straight to heads", "def split_heads(x, h):\n    b, s, d = x.shape\n"
      "    return x.view(b, h, s, d // h)\n",
      "scrambled"),
    q("q3", "strided heads", "def split_heads(x, h):\n    b, s, d = x.shape\n"
      "    return x.view(b, s, d // h, h).permute(0, 3, 1, 2)\n", "stride"),
    q("q3", "forgot transpose", "def split_heads(x, h):\n    b, s, d = x.shape\n    return x.view(b, s, h, d // h)\n",
      ".transpose(1, 2) to (batch, heads, seq, d_head)"),
    q("q3", "seq and d_head swapped", "def split_heads(x, h):\n    b, s, d = x.shape\n"
      "    return x.view(b, s, h, d // h).permute(0, 2, 3, 1)\n", "swapped the seq and d_head axes"),
    # q4: merge heads
    q("q4", "view without contiguous", "def merge_heads(x):\n    b, h, s, d = x.shape\n"
      "    return x.transpose(1, 2).view(b, s, h * d)\n", ".contiguous()"),
    q("q4", "no transpose back", "def merge_heads(x):\n    b, h, s, d = x.shape\n    return x.reshape(b, s, h * d)\n",
      "mixed up"),
    q("q4", "wrong shape", "def merge_heads(x):\n    return x.transpose(1, 2)\n", "(batch, seq, d_model)"),
    # q5 (capstone): MultiHeadAttention — bugs planted in the solution
    q("q5", "the package's class imported", "from course_utils.attention import MultiHeadAttention\n",
      "use your own class"),
    q("q5", "a subclass of the package's class", "import course_utils\n\n"
      "class MultiHeadAttention(course_utils.MultiHeadAttention):\n    pass\n", "use your own class"),
    q("q5", "not an nn.Module", plant(MHA, "class MultiHeadAttention(nn.Module):", "class MultiHeadAttention:"),
      "subclass nn.Module"),
    q("q5", "no dropout parameter", plant(MHA, "def __init__(self, d_model, n_heads, dropout=0.0):",
                                          "def __init__(self, d_model, n_heads):"), "(d_model, n_heads, dropout=0.0)"),
    q("q5", "projection renamed", plant(MHA, "self.w_q", "self.query_proj"), "no parameter `w_q.weight`"),
    q("q5", "projections without bias", plant(MHA, "nn.Linear(d_model, d_model)", "nn.Linear(d_model, d_model, "
                                                                                   "bias=False)"),
      "no parameter `w_q.bias`"),
    q("q5", "returns only the output", plant(MHA, "return self.w_o(out), weights", "return self.w_o(out)"),
      "pair (output, weights)"),
    q("q5", "missing scale", plant(MHA, " / math.sqrt(self.d_head)", ""), "√d_head scale is missing"),
    q("q5", "scaled by sqrt(d_model)", plant(MHA, "math.sqrt(self.d_head)", "math.sqrt(self.n_heads * self.d_head)"),
      "scaled by √d_model"),
    q("q5", "divided by d_k", plant(MHA, "math.sqrt(self.d_head)", "self.d_head"), "divided by d_head"),
    q("q5", "scaled by sqrt(k_len)", plant(MHA, "math.sqrt(self.d_head)", "math.sqrt(k.size(-2))"), "√k_len"),
    q("q5", "transpose instead of split", plant(MHA, "x.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)",
                                                "x.view(batch, self.n_heads, seq, self.d_head)"),
      "heads are not split right"),
    q("q5", "mask convention inverted", plant(MHA, "~mask", "mask"), "inverted"),
    q("q5", "mask broadcast on the query axis", plant(MHA, "        if mask is not None:\n            scores",
                                                      "        if mask is not None:\n"
                                                      "            mask = mask.transpose(-2, -1)\n            scores",
                                                      1), "hides queries instead of keys"),
    q("q5", "mask given an extra axis", plant(MHA, "        if mask is not None:\n            scores",
                                              "        if mask is not None:\n"
                                              "            mask = mask.unsqueeze(1)\n            scores", 1),
      "do not unsqueeze"),
    q("q5", "boolean-index masking", plant(MHA, "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
                                           "scores[~mask] = torch.finfo(scores.dtype).min"), "Boolean indexing"),
    q("q5", "softmax over the wrong axis", plant(MHA, "torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)"),
      "wrong axis"),
    q("q5", "-inf fill gives NaN", plant(plant(MHA, "torch.finfo(scores.dtype).min", "float('-inf')"),
                                         "            weights = weights.masked_fill(~mask, 0.0)", "            pass"),
      "NaN"),
    q("q5", "fully masked row left uniform", plant(MHA, "            weights = weights.masked_fill(~mask, 0.0)",
                                                   "            pass"), "uniform row"),
    q("q5", "blocked scores set to 0", plant(MHA, "torch.finfo(scores.dtype).min", "0.0"), "does not block"),
    q("q5", "masked after the softmax", plant(MHA, "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
                                              "pass"), "renormalising"),
    q("q5", "keys projected with w_q", plant(MHA, "self.split(self.w_k(key))", "self.split(self.w_q(key))"),
      "projected with w_q"),
    q("q5", "heads merged without transposing back", plant(MHA, "out.transpose(1, 2).contiguous().view(",
                                                           "out.reshape("), "merging the heads"),
    q("q5", "output projection missing", plant(MHA, "return self.w_o(out), weights", "return out, weights"),
      "output projection is missing"),
    q("q5", "weights detached", plant(MHA, "weights = torch.softmax(scores, dim=-1)",
                                      "weights = torch.softmax(scores, dim=-1).detach()"), "cuts the graph"),
    q("q5", "dropout active in eval", plant(MHA, "self.dropout(weights) @ v", "F.dropout(weights, self.p) @ v")
      .replace("self.dropout = nn.Dropout(dropout)", "self.p = dropout"), "dropout is still active"),
    q("q5", "dropout never applied", plant(MHA, "self.dropout(weights) @ v", "weights @ v"), "never used"),
]
