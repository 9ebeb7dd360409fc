"""Lesson 07 (translation): wrong answers that only break the generic contract, and right answers written
differently. The typical mistakes of each exercise are declared in course_utils/exercises/lesson07.py
(``mistakes=``)."""
from course_utils.exercises import lesson07

from . import Alternative, Mistake, plant

PRELUDE = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson07", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson07", exercise, name, code, PRELUDE)


COUNT = lesson07.q1.solution
ERRORS = lesson07.q2.solution
DECODE = lesson07.q3.solution

MISTAKES = [
    q("q1", "prediction not recorded", plant(COUNT, "my_bytes_per_piece = 12_288", "my_bytes_per_piece = ..."),
      "record your prediction"),
    q("q1", "a prediction that is not a number", plant(COUNT, "my_bytes_per_piece = 12_288",
                                                        'my_bytes_per_piece = "12 KiB"'), "should be a number"),
    q("q1", "a real cache measured", "import torch\nfrom course_utils import Seq2SeqTransformer, TransformerConfig\n\n"
      "my_bytes_per_piece = 1000\n\n\n"
      "def kv_cache_bytes(d_model, n_layers, n_heads, src_len, positions, bytes_per_number):\n"
      "    c = TransformerConfig(vocab_size=11, tgt_vocab_size=11, d_model=d_model, n_heads=n_heads, d_ff=4,\n"
      "                          n_layers=n_layers, max_len=16, dropout=0.0)\n"
      "    m = Seq2SeqTransformer(c).to({2: torch.bfloat16, 4: torch.float32, 8: torch.float64}[bytes_per_number])\n"
      "    src, cache = torch.full((1, src_len), 7), m.new_cache()\n"
      "    for _ in range(positions):\n"
      "        m.decode(torch.full((1, 1), 5), m.encode(src), src, cache)\n"
      "    return cache.nbytes\n", "a built model or cache"),
    q("q1", "a float count", plant(COUNT, "return per_position * (positions + src_len) * bytes_per_number",
                                   "return per_position * (positions + src_len) * bytes_per_number / 1.0"), "int"),
    q("q2", "prediction not recorded", plant(ERRORS, 'my_prediction = "self"', "my_prediction = ..."),
      "record your prediction"),
    q("q2", "a prediction that is not a choice", plant(ERRORS, 'my_prediction = "self"', "my_prediction = 2"),
      "should be one of"),
    q("q2", "a tensor returned", plant(ERRORS, "    return [(keys[parents], values[parents]) for keys, values in "
                                       "layers]", "    return torch.stack([torch.stack([k[parents], v[parents]]) "
                                       "for k, v in layers])"), "list"),
    q("q2", "a list of lists returned", plant(ERRORS, "    return [(keys[parents], values[parents]) for keys, values "
                                              "in layers]", "    return [[keys[parents]] for keys, values in layers]"),
      "should have 2 items"),
    q("q3", "eval mode forgotten", plant(DECODE, "    model.eval()\n", ""), "training mode"),
    q("q3", "no_grad forgotten", plant(plant(DECODE, "    with torch.no_grad():\n", "    if True:\n"),
                                       "logits = logits.clone()", "logits = logits.detach().clone()"),
      "gradients enabled"),
    q("q3", "cache not used (whole prefix each step)",
      plant(DECODE, "model.decode(prefix[:, -1:], memory, src_ids, cache)", "model.decode(prefix, memory, src_ids)"),
      "feed only the newest token"),
    q("q3", "a fresh cache every step", plant(DECODE, "model.decode(prefix[:, -1:], memory, src_ids, cache)",
                                              "model.decode(prefix, memory, src_ids, model.new_cache())"),
      "feed only the newest token"),
    q("q3", "src_ids changed in place", plant(DECODE, "    model.eval()\n",
                                              "    model.eval()\n    src_ids.clamp_(max=10**6)\n    src_ids += 0\n"
                                              "    src_ids.mul_(1)\n    src_ids[:, 0] += 1\n    src_ids[:, 0] -= 1\n"
                                              "    src_ids[0, 0] = src_ids[0, 0] * 0 + 10**6\n"),
      "changed its input"),
    q("q3", "the package's greedy_decode", "from course_utils.decoding import greedy_decode as cached_greedy_decode\n",
      "course_utils.decoding.greedy_decode"),
    q("q3", "a list of lists returned", plant(DECODE, "    return prefix[:, 1:]", "    return prefix[:, 1:].tolist()"),
      "torch.long tensor"),
]

ALTERNATIVES = [
    right("q1", "per layer and attention, summed", "my_bytes_per_piece = 2 ** 14\n\n\n"
          "def kv_cache_bytes(d_model, n_layers, n_heads, src_len, positions, bytes_per_number):\n"
          "    d_head = d_model // n_heads\n"
          "    per_layer = 2 * n_heads * d_head * positions + 2 * n_heads * d_head * src_len\n"
          "    return sum(per_layer for _ in range(n_layers)) * bytes_per_number\n"),
    right("q2", "index_select, a loop", "my_prediction = \"both\"\n\n\n"
          "def reorder_kv(layers, parents):\n    out = []\n    for k, v in layers:\n"
          "        out.append((k.index_select(0, parents), v.index_select(0, parents)))\n    return out\n"),
    right("q3", "a Python list of finished rows", plant(plant(DECODE, "finished = finished | (next_token == eos_id)",
                                                              "finished = torch.tensor([bool(f) or int(t) == eos_id "
                                                              "for f, t in zip(finished, next_token)])"),
                                                        "if finished.all():", "if all(finished.tolist()):")),
    right("q3", "torch.where for the padding", plant(DECODE, "next_token = logits.argmax(dim=-1).masked_fill(finished, "
                                                             "pad_id)",
                                                     "next_token = torch.where(finished, torch.full_like(finished, "
                                                     "pad_id, dtype=torch.long), logits.argmax(dim=-1))")),
    right("q3", "decorated with no_grad", plant(plant(DECODE, "    with torch.no_grad():\n", "    if True:\n"),
                                                "def cached", "@torch.no_grad()\ndef cached")),
    right("q3", "a list of columns, stacked at the end",
          "def cached_greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
          "    model.eval()\n    columns = []\n    with torch.no_grad():\n"
          "        memory, cache = model.encode(src_ids), model.new_cache()\n"
          "        newest = torch.full((len(src_ids), 1), bos_id, dtype=torch.long)\n"
          "        done = torch.zeros(len(src_ids), dtype=torch.bool)\n"
          "        while len(columns) < max_new_tokens and not done.all():\n"
          "            scores = model.decode(newest, memory, src_ids, cache)[:, -1].clone()\n"
          "            scores[:, bos_id] = scores[:, pad_id] = -math.inf\n"
          "            token = torch.where(done, pad_id, scores.argmax(-1))\n"
          "            columns.append(token)\n            done = done | (token == eos_id)\n"
          "            newest = token[:, None]\n"
          "    return torch.stack(columns, dim=1)\n"),
]
