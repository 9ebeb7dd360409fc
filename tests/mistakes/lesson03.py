"""Typical wrong answers to the exercises of lesson 03 (attention), each with the phrase its feedback must contain."""
from course_utils.exercises import lesson03

from . import Alternative, Mistake, plant

PRELUDE = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson03", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson03", exercise, name, code, PRELUDE)


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

MISTAKES += [
    # q1: answers right only on one fixed input, or breaking the contract (dtype, shape, inputs, own work)
    q("q1", "scale hard-coded as 4.0", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k.transpose(-2, -1) / 4.0, dim=-1)\n", "not a fixed number"),
    q("q1", "scale hard-coded as sqrt(16)", "def attention_weights(q, k):\n"
      "    d_k = 16\n    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)\n",
      "not a fixed number"),
    q("q1", "squeezed result", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1).squeeze()\n", ".squeeze()"),
    q("q1", "float64 result", "def attention_weights(q, k):\n"
      "    return torch.softmax((q @ k.transpose(-2, -1)).double() / math.sqrt(q.size(-1)), dim=-1)\n", "float64"),
    q("q1", "float32 forced", "def attention_weights(q, k):\n"
      "    return torch.softmax(q.float() @ k.float().transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)\n",
      "should be a torch.float64 tensor"),
    q("q1", "query scaled in place", "def attention_weights(q, k):\n    q /= math.sqrt(q.size(-1))\n"
      "    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)\n", "changed its input `query` in place"),
    q("q1", "the package's attention", "import course_utils.attention as A\n\ndef attention_weights(q, k):\n"
      "    return A.scaled_dot_product_attention(q[:, None], k[:, None], k[:, None])[1][:, 0]\n",
      "use your own code"),
    q("q1", "scaled by sqrt(q_len)", "def attention_weights(q, k):\n"
      "    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(1)), -1)\n", "√q_len"),
    # q2
    q("q2", "scale hard-coded as sqrt(16)", "def masked_weights(q, k, mask):\n"
      "    s = q @ k.transpose(-2, -1) / math.sqrt(16)\n"
      "    w = torch.softmax(s.masked_fill(~mask, torch.finfo(s.dtype).min), dim=-1)\n"
      "    return w.masked_fill(~mask, 0.0)\n", "not a fixed number"),
    q("q2", "the caller's mask inverted in place", "def masked_weights(q, k, mask):\n" + SCORES
      + "    blocked = mask.logical_not_()\n"
      + "    w = torch.softmax(s.masked_fill(blocked, torch.finfo(s.dtype).min), dim=-1)\n"
      + "    return w.masked_fill(blocked, 0.0)\n", "changed its input `mask` in place"),
    q("q2", "-1e9 fill, no zeroing", "def masked_weights(q, k, mask):\n" + SCORES
      + "    return torch.softmax(s.masked_fill(~mask, -1e9), dim=-1)\n", "uniform row"),
    q("q2", "squeezed result", "def masked_weights(q, k, mask):\n" + SCORES
      + "    w = torch.softmax(s.masked_fill(~mask, torch.finfo(s.dtype).min), dim=-1)\n"
      + "    return w.masked_fill(~mask, 0.0).squeeze()\n", ".squeeze()"),
    q("q2", "float64 result", "def masked_weights(q, k, mask):\n" + SCORES
      + "    s = s.double().masked_fill(~mask, torch.finfo(torch.float64).min)\n"
      + "    return torch.softmax(s, dim=-1).masked_fill(~mask, 0.0)\n", "float64"),
    q("q2", "the package's attention", "from course_utils.attention import scaled_dot_product_attention as sdpa\n\n"
      "def masked_weights(q, k, mask):\n    return sdpa(q[:, None], k[:, None], k[:, None], mask[:, None])[1][:, 0]\n",
      "use your own code"),
    # q3
    q("q3", "sizes hard-coded", "def split_heads(x, h):\n    return x.view(2, 5, 4, 3).transpose(1, 2)\n",
      "not fixed numbers"),
    q("q3", "d_head hard-coded", "def split_heads(x, h):\n    b, s, d = x.shape\n"
      "    return x.view(b, s, -1, 3).transpose(1, 2)\n", "not fixed numbers"),
    q("q3", "squeezed result", "def split_heads(x, h):\n    b, s, d = x.shape\n"
      "    return x.view(b, s, h, d // h).transpose(1, 2).squeeze()\n", ".squeeze()"),
    q("q3", "float32 forced", "def split_heads(x, h):\n    b, s, d = x.shape\n"
      "    return x.float().view(b, s, h, d // h).transpose(1, 2)\n", "should be a torch.float64 tensor"),
    q("q3", "the package's split_heads", "import importlib\n\ndef split_heads(x, h):\n"
      "    block = getattr(importlib.import_module('course_utils.attention'), 'MultiHeadAttention')(x.size(-1), h)\n"
      "    return block.split_heads(x)\n", "use your own code"),
    # q4
    q("q4", "permute without contiguous", "def merge_heads(x):\n    b, h, s, d = x.shape\n"
      "    return x.permute(0, 2, 1, 3).view(b, s, h * d)\n", ".contiguous()"),
    q("q4", "sizes hard-coded", "def merge_heads(x):\n    return x.transpose(1, 2).reshape(2, 5, 12)\n",
      "not fixed numbers"),
    q("q4", "squeezed result", "def merge_heads(x):\n    b, h, s, d = x.shape\n"
      "    return x.transpose(1, 2).reshape(b, s, h * d).squeeze()\n", ".squeeze()"),
    q("q4", "d_head moved with the heads", "def merge_heads(x):\n    b, h, s, d = x.shape\n"
      "    return x.permute(0, 2, 3, 1).reshape(b, s, h * d)\n", "stay together"),
    q("q4", "the package's merge_heads", "import course_utils\n\ndef merge_heads(x):\n"
      "    return course_utils.attention.MultiHeadAttention(x.size(1) * x.size(-1), x.size(1)).merge_heads(x)\n",
      "use your own code"),
    # q5
    q("q5", "values computed from the key", plant(MHA, "self.split(self.w_v(value))", "self.split(self.w_v(key))"),
      "computed from `key`"),
    q("q5", "n_heads hard-coded", plant(MHA, "self.n_heads, self.d_head = n_heads, d_model // n_heads",
                                        "self.n_heads, self.d_head = 4, d_model // 4"), "not fixed numbers"),
    q("q5", "scale hard-coded", plant(MHA, "math.sqrt(self.d_head)", "math.sqrt(6)"), "not a fixed number"),
    q("q5", "merged output squeezed", plant(MHA, "self.n_heads * self.d_head)",
                                            "self.n_heads * self.d_head).squeeze()"), ".squeeze()"),
    q("q5", "the package's block inside", "import torch.nn as nn\nfrom course_utils import attention\n\n"
      "class MultiHeadAttention(nn.Module):\n    def __init__(self, d_model, n_heads, dropout=0.0):\n"
      "        super().__init__()\n        self.inner = attention.MultiHeadAttention(d_model, n_heads, dropout)\n"
      "        self.w_q, self.w_k, self.w_v, self.w_o = (self.inner.w_q, self.inner.w_k, self.inner.w_v,\n"
      "                                                  self.inner.w_o)\n\n"
      "    def forward(self, query, key, value, mask=None):\n"
      "        return self.inner(query, key, value, mask, need_weights=True)\n", "use your own code"),
    q("q5", "the package's class by getattr", "import importlib\n"
      "MultiHeadAttention = getattr(importlib.import_module('course_utils.attention'), 'MultiHeadAttention')\n",
      "use your own class"),
    q("q5", "a subclass of torch's MultiheadAttention", "import torch.nn as nn\n\n"
      "class MultiHeadAttention(nn.MultiheadAttention):\n    def __init__(self, d_model, n_heads, dropout=0.0):\n"
      "        super().__init__(d_model, n_heads, dropout=dropout, batch_first=True)\n", "torch.nn.MultiheadAttention"),
    q("q5", "torch's multi_head_attention_forward", plant(
        MHA, "    def forward(self, query, key, value, mask=None):\n",
        "    def forward(self, query, key, value, mask=None):\n"
        "        if mask is None:\n"
        "            t = [x.transpose(0, 1) for x in (query, key, value)]\n"
        "            out, w = F.multi_head_attention_forward(\n"
        "                *t, self.n_heads * self.d_head, self.n_heads, None,\n"
        "                torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias]), None, None, False, 0.0,\n"
        "                self.w_o.weight, self.w_o.bias, training=self.training, use_separate_proj_weight=True,\n"
        "                q_proj_weight=self.w_q.weight, k_proj_weight=self.w_k.weight,\n"
        "                v_proj_weight=self.w_v.weight, average_attn_weights=False)\n"
        "            return out.transpose(0, 1), w\n"), "torch.nn.functional.multi_head_attention_forward"),
    q("q5", "torch's fused attention for the output", plant(
        MHA, "out = self.dropout(weights) @ v ",
        "out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask) if mask is None else weights @ v"),
      "torch.nn.functional.scaled_dot_product_attention"),
    q("q5", "dropout on the output", plant(plant(MHA, "self.dropout(weights) @ v", "weights @ v"),
                                           "return self.w_o(out), weights",
                                           "return self.dropout(self.w_o(out)), weights"),
      "dropout is applied in a different place"),
    q("q5", "dropout on the scores", plant(plant(MHA, "self.dropout(weights) @ v", "weights @ v"),
                                           "weights = torch.softmax(scores, dim=-1)",
                                           "weights = torch.softmax(self.dropout(scores), dim=-1)"),
      "dropout is applied in a different place"),
    q("q5", "float64 weights", plant(MHA, "        self.dropout = nn.Dropout(dropout)\n",
                                     "        self.dropout = nn.Dropout(dropout)\n        self.double()\n"),
      "float32"),
    q("q5", "the caller's mask changed in place", plant(
        plant(MHA, "        if mask is not None:\n            scores", "        if mask is not None:\n"
                   "            mask = mask.logical_not_()\n            scores", 1), "~mask", "mask"),
      "changed its input `mask` in place"),
    q("q5", "dropout probability hard-coded", plant(MHA, "nn.Dropout(dropout)", "nn.Dropout(0.1)"),
      "a probability of its own"),
    q("q5", "dropout probability halved", plant(MHA, "nn.Dropout(dropout)", "nn.Dropout(dropout / 2)"),
      "instead of 1 / (1 - p)"),
    q("q5", "hand-made dropout without rescaling", plant(
        MHA, "out = self.dropout(weights) @ v",
        "out = (weights * (torch.rand_like(weights) >= self.dropout.p) if self.training else weights) @ v"),
      "instead of 1 / (1 - p)"),
    q("q5", "mask ignored", plant(MHA, "        if mask is not None:\n            scores", "        if False:\n"
                                  "            scores", 1).replace("        if mask is not None:\n            weights",
                                                                     "        if False:\n            weights"),
      "the mask is not applied"),
    q("q5", "a fixed seed inside forward",
      plant(MHA, "        q, k, v = ", "        torch.manual_seed(0)\n        q, k, v = "),
      "seeds the random generator itself"),
    q("q5", "dropout on the values", plant(MHA, "self.dropout(weights) @ v", "weights @ self.dropout(v)"),
      "dropout is applied in a different place"),
    q("q5", "query scaled in place", plant(MHA, "        q, k, v = ", "        query /= 1.0\n        q, k, v = "),
      "in place"),
]

EINSUM_WEIGHTS = ("def attention_weights(query, key):\n"
                  "    scores = torch.einsum('bqd,bkd->bqk', query, key) * query.shape[-1] ** -0.5\n"
                  "    return scores.softmax(-1)\n")
MHA_BUFFER = plant(plant(MHA, " / math.sqrt(self.d_head)", " * self.scale"),
                   "        self.dropout = nn.Dropout(dropout)\n",
                   "        self.dropout = nn.Dropout(dropout)\n"
                   "        self.register_buffer('scale', torch.tensor(self.d_head ** -0.5))\n")
MHA_EINSUM = """import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        self.h = n_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.drop = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        def heads(x):                                                     # (b, s, h, d)
            return x.unflatten(-1, (self.h, -1))
        q, k, v = heads(self.w_q(query)), heads(self.w_k(key)), heads(self.w_v(value))
        q = q * q.shape[-1] ** -0.5                                       # scale the queries first
        scores = torch.einsum('bqhd,bkhd->bhqk', q, k)
        if mask is not None:
            scores = scores.masked_fill(mask == False, float('-inf'))    # noqa: E712
        weights = torch.nan_to_num(scores.softmax(dim=-1), nan=0.0)
        out = torch.einsum('bhqk,bkhd->bqhd', self.drop(weights), v).flatten(2)
        return self.w_o(out), weights
"""
MHA_LOOP = """import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        self.n_heads, self.p = n_heads, dropout
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        d_head = q.size(-1) // self.n_heads
        per_head = []
        for h in range(self.n_heads):
            part = slice(h * d_head, (h + 1) * d_head)
            scores = q[..., part] @ k[..., part].transpose(1, 2) / math.sqrt(d_head)
            if mask is not None:
                scores = torch.where(mask[:, 0], scores, torch.tensor(-1e9))
            w = scores.softmax(-1)
            per_head.append(w if mask is None else w * mask[:, 0])
        weights = torch.stack(per_head, dim=1)                            # (b, h, q, k)
        dropped = F.dropout(weights, self.p, self.training)
        out = torch.cat([dropped[:, h] @ v[..., h * d_head:(h + 1) * d_head] for h in range(self.n_heads)], -1)
        return self.w_o(out), dropped
"""

ALTERNATIVES = [
    right("q1", "einsum, times d_k ** -0.5", EINSUM_WEIGHTS),
    right("q1", "queries scaled first by a tensor sqrt", "def attention_weights(query, key):\n"
          "    d_k = torch.tensor(query.shape[-1])\n"
          "    return F.softmax(torch.matmul(query / d_k.sqrt(), key.mT), dim=2)\n"),
    right("q1", "exp and normalise by hand", "def attention_weights(query, key):\n"
          "    s = torch.bmm(query, key.permute(0, 2, 1)) / math.sqrt(query.shape[2])\n"
          "    e = torch.exp(s - s.amax(dim=-1, keepdim=True))\n    return e / e.sum(dim=-1, keepdim=True)\n"),
    right("q2", "-inf, then NaN set to zero", "def masked_weights(query, key, mask):\n"
          "    s = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))\n"
          "    w = torch.softmax(s.masked_fill(mask.logical_not(), float('-inf')), dim=-1)\n"
          "    return torch.nan_to_num(w, nan=0.0)\n"),
    right("q2", "torch.where and a product with the mask", "def masked_weights(query, key, mask):\n"
          "    s = torch.einsum('bqd,bkd->bqk', query, key) / query.shape[-1] ** 0.5\n"
          "    s = torch.where(mask, s, torch.tensor(-1e9, dtype=s.dtype))\n"
          "    return s.softmax(-1) * mask\n"),
    right("q2", "in-place fill on the new scores", "def masked_weights(query, key, mask):\n"
          "    s = query @ key.transpose(-2, -1)\n    s /= math.sqrt(query.size(-1))\n"
          "    s.masked_fill_(~mask, torch.finfo(s.dtype).min)\n    w = s.softmax(-1)\n"
          "    w.masked_fill_(~mask, 0)\n    return w\n"),
    right("q3", "unflatten and permute", "def split_heads(x, n_heads):\n"
          "    return x.unflatten(-1, (n_heads, -1)).permute(0, 2, 1, 3)\n"),
    right("q3", "stack of chunks", "def split_heads(x, n_heads):\n"
          "    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)\n"),
    right("q3", "reshape with numpy ints", "import numpy as np\n\ndef split_heads(x, n_heads):\n"
          "    b, s, d = (np.int64(n) for n in x.shape)\n"
          "    return x.reshape(int(b), int(s), n_heads, int(d // n_heads)).transpose(2, 1)\n"),
    right("q4", "permute and reshape", "def merge_heads(x):\n"
          "    return x.permute(0, 2, 1, 3).reshape(x.size(0), x.size(2), -1)\n"),
    right("q4", "cat of heads", "def merge_heads(x):\n    return torch.cat(x.unbind(dim=1), dim=-1)\n"),
    right("q4", "transpose and flatten", "def merge_heads(x):\n    return x.transpose(1, 2).flatten(start_dim=2)\n"),
    right("q5", "scale kept as a registered buffer", MHA_BUFFER),
    right("q5", "einsum, -inf and nan_to_num", MHA_EINSUM),
    right("q5", "a loop over the heads, weights returned after dropout", MHA_LOOP),
    right("q5", "dropout head by head in a loop", plant(MHA, "out = self.dropout(weights) @ v",
                                                       "out = torch.stack([self.dropout(weights[:, h]) for h in "
                                                       "range(self.n_heads)], dim=1) @ v")),
    right("q5", "reshape and minus infinity", plant(plant(MHA, "x.view(batch, seq", "x.reshape(batch, seq"),
                                                    "torch.finfo(scores.dtype).min", "float('-inf')")),
]
