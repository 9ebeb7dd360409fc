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
    q("q1", "prediction not recorded", plant(COUNT, "my_ratio = 4_204_032 / 3_152_384", "my_ratio = ..."),
      "record your prediction"),
    q("q1", "a count instead of a ratio", plant(COUNT, "my_ratio = 4_204_032 / 3_152_384", "my_ratio = 4_204_032"),
      "is not a ratio"),
    q("q1", "the package's DecoderLayer counted", "from course_utils.config import count_parameters\n"
      "from course_utils.layers import DecoderLayer\n\nmy_ratio = 1.5\n\n\n"
      "def decoder_layer_parameters(d_model, d_ff):\n"
      "    return count_parameters(DecoderLayer(d_model, 1, d_ff, dropout=0.0))\n",
      "course_utils.layers.DecoderLayer (a built layer"),
    q("q1", "a layer built from nn.Linear and counted", "my_ratio = 1.5\n\n\n"
      "def decoder_layer_parameters(d_model, d_ff):\n"
      "    parts = [nn.Linear(d_model, d_model) for _ in range(8)]\n"
      "    parts += [nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)]\n"
      "    parts += [nn.LayerNorm(d_model) for _ in range(3)]\n"
      "    return sum(p.numel() for part in parts for p in part.parameters())\n",
      "torch.nn.Linear (a built layer"),
    q("q1", "a float count", plant(COUNT, "return 2 * attention + feed_forward + layer_norms",
                                   "return float(2 * attention + feed_forward + layer_norms)"), "int"),
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
    right("q1", "sum of the parts as a list", "my_ratio = 1.3336\n\n\ndef decoder_layer_parameters(d, f):\n"
          "    parts = [4 * d * d + 4 * d] * 2 + [d * f + f, f * d + d] + [2 * d] * 3\n    return sum(parts)\n"),
    right("q1", "an honest prediction far from the count", "my_ratio = 2\n\n\n"
          "def decoder_layer_parameters(d_model, d_ff):\n"
          "    encoder_layer = 4 * d_model * d_model + 4 * d_model\n"
          "    encoder_layer += 2 * d_model * d_ff + d_ff + d_model + 4 * d_model\n"
          "    return encoder_layer + 4 * d_model * d_model + 6 * d_model\n"),
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
