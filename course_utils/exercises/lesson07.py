"""Exercises of notebook 07 (translation): teacher-forcing shift, the cross-attention mask, the KV cache."""
from __future__ import annotations

import torch
import torch.nn as nn

from ..masks import padding_mask
from .asserts import as_tensor, close, compare_block, own_function, own_module_class
from .core import Exercise, ExerciseFailure
from .lesson04 import SUBLAYER_SOLUTION, SUBLAYER_STARTER

PAD, BOS, EOS = 0, 5, 6


def example_targets() -> torch.Tensor:
    """``(2, 6)`` target ids ``[BOS] pieces [EOS] [PAD]…`` of different lengths."""
    return torch.tensor([[BOS, 40, 41, 42, EOS, PAD],
                         [BOS, 50, 51, 52, 53, EOS]])


def check_shift_targets(ns) -> None:
    tgt = example_targets()
    result = ns["shift_targets"](tgt.clone())
    if not isinstance(result, tuple) or len(result) != 2:
        raise ExerciseFailure("`shift_targets` should return a pair (decoder_input, labels).")
    decoder_input, labels = result
    for name, value in (("decoder_input", decoder_input), ("labels", labels)):
        if not isinstance(value, torch.Tensor):
            raise ExerciseFailure(f"{name} should be a tensor, got {type(value).__name__}.")
    if torch.equal(decoder_input, tgt) and torch.equal(labels, tgt):
        raise ExerciseFailure("no shift: the decoder input and the labels are both the whole target, so position t "
                              "is scored on the very token it is reading. The decoder learns to copy the token it "
                              "is fed: the training loss falls far faster than a real translator's, while the model "
                              "learns nothing usable — when it generates, there is no correct token to copy. Feed "
                              "decoder_input = tgt[:, :-1] and score against labels = tgt[:, 1:].")
    if torch.equal(decoder_input, tgt[:, 1:]) and torch.equal(labels, tgt[:, :-1]):
        raise ExerciseFailure("shifted the wrong way: the decoder input must start with [BOS] (tgt[:, :-1]) and "
                              "the labels are the next tokens (tgt[:, 1:]).")
    if decoder_input.shape != (2, 5) or labels.shape != (2, 5):
        shapes = f"got {tuple(decoder_input.shape)} and {tuple(labels.shape)}"
        if decoder_input.dim() == 2 and decoder_input.size(0) == 2 and decoder_input.size(1) < 5:
            raise ExerciseFailure(f"both should have shape (batch, tgt_len - 1) = (2, 5), {shapes}: you shifted by "
                                  "more than one position. Each label is the *next* token, one step ahead: "
                                  "tgt[:, :-1] and tgt[:, 1:].")
        if decoder_input.dim() == 2 and decoder_input.size(0) != 2:
            raise ExerciseFailure(f"both should have shape (batch, tgt_len - 1) = (2, 5), {shapes}: you sliced the "
                                  "batch axis (dim 0); slice the sequence axis (dim 1): tgt[:, :-1], tgt[:, 1:].")
        raise ExerciseFailure(f"both should have shape (batch, tgt_len - 1) = (2, 5), {shapes}: "
                              "decoder_input = tgt[:, :-1], labels = tgt[:, 1:].")
    if not (torch.equal(decoder_input, tgt[:, :-1]) and torch.equal(labels, tgt[:, 1:])):
        raise ExerciseFailure("expected decoder_input = tgt[:, :-1] (starts with [BOS]) and labels = tgt[:, 1:] "
                              "(ends with [EOS] or padding).")


def check_cross_attention_mask(ns) -> None:
    src = torch.tensor([[20, 21, 22, PAD, PAD], [23, 24, 25, 26, 27]])
    tgt_len = 4
    got = ns["cross_attention_mask"](src, tgt_len)
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return a tensor, got {type(got).__name__}.")
    if got.dtype != torch.bool:
        raise ExerciseFailure(f"the course's masks are bool (True = may attend), got {got.dtype}; compare ids with "
                              "`!=` to get a bool tensor.")
    target_shape = (2, 1, tgt_len, 5)
    try:
        full = torch.broadcast_to(got, target_shape)
    except RuntimeError:
        raise ExerciseFailure(f"shape {tuple(got.shape)} does not broadcast to the cross-attention scores "
                              "(batch, heads, tgt_len, src_len); a (batch, src_len) padding mask needs "
                              "[:, None, None, :] → (batch, 1, 1, src_len).") from None
    expected = padding_mask(src, PAD).expand(target_shape)
    if torch.equal(full, expected):
        return
    if torch.equal(full, ~expected):
        raise ExerciseFailure("inverted: in this course True means *may attend*, so real tokens are True and "
                              "padding is False (src != pad_id).")
    if torch.equal(full, expected & torch.ones(tgt_len, 5, dtype=torch.bool).tril()):
        raise ExerciseFailure("cross-attention is not causal: the whole source sentence is known before decoding "
                              "starts, so every target position may see every real source word. Only hide "
                              "source padding.")
    if full.all():
        raise ExerciseFailure("nothing is masked: the decoder would attend to the source's [PAD] positions, and "
                              "a translation would change with the amount of padding. Hide the keys where "
                              "src == pad_id.")
    raise ExerciseFailure("expected True exactly at real (non-padding) source tokens, for every target position.")


def example_cache(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """cached keys ``(2, 4, 3, 8)`` = (batch, heads, steps so far, d_head) and the new step's ``(2, 4, 1, 8)``."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(2, 4, 3, 8, generator=generator), torch.randn(2, 4, 1, 8, generator=generator)


def check_append_to_cache(ns) -> None:
    cached, new = example_cache()
    try:
        got = ns["append_to_cache"](cached.clone(), new.clone())
    except RuntimeError as error:
        if "Sizes of tensors must match" not in str(error):
            raise
        raise ExerciseFailure("concatenated along the wrong axis (the other axes do not match): the layout is "
                              "(batch, heads, seq, d_head), so positions are dim 2.") from None
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return the grown cache as a tensor, got {type(got).__name__}.")
    expected = torch.cat([cached, new], dim=2)
    if got.shape == expected.shape and torch.equal(got, expected):
        return
    if got.shape == new.shape:
        raise ExerciseFailure("you kept only the new step: the cache must hold the keys of *every* earlier "
                              "position, or the new token cannot attend to them. Concatenate old and new.")
    if got.shape == expected.shape and torch.equal(got, torch.cat([new, cached], dim=2)):
        raise ExerciseFailure("the new step went first: positions must stay in order, old ones then the new one.")
    if got.shape != expected.shape and got.numel() >= expected.numel():
        raise ExerciseFailure(f"concatenated along the wrong axis (got {tuple(got.shape)}): the layout is "
                              "(batch, heads, seq, d_head), so positions are dim 2.")
    raise ExerciseFailure(f"expected shape {tuple(expected.shape)} = cached positions + 1, got {tuple(got.shape)}.")


q1 = Exercise(
    name="Teacher forcing: shift the targets",
    variables=("shift_targets",),
    checker=check_shift_targets,
    hint="The decoder reads [BOS] w1 w2 … and must predict w1 w2 … [EOS]: drop the last column for the input and "
         "the first column for the labels.",
    solution="def shift_targets(tgt_ids):\n    return tgt_ids[:, :-1], tgt_ids[:, 1:]\n",
)

q2 = Exercise(
    name="The cross-attention mask",
    variables=("cross_attention_mask",),
    checker=check_cross_attention_mask,
    hint="Only the source's padding is hidden; (src_ids != pad_id) with two new axes gives (batch, 1, 1, src_len).",
    solution=("def cross_attention_mask(src_ids, tgt_len, pad_id=0):\n"
              "    return (src_ids != pad_id)[:, None, None, :]\n"),
)

q3 = Exercise(
    name="Grow the KV cache by one step",
    variables=("append_to_cache",),
    checker=check_append_to_cache,
    hint="torch.cat([...], dim=2): the cache is (batch, heads, seq, d_head) and the new step adds one position.",
    solution="import torch\n\ndef append_to_cache(cached, new):\n    return torch.cat([cached, new], dim=2)\n",
)


# ---------------------------------------------------------------------------- q4 (capstone): DecoderLayer
# Sizes with no two equal: batch 2, tgt_len 3, src_len 7, d_model 24, heads 4, d_head 6, d_ff 40.
TGT_LEN, SRC_LEN = 3, 7
DECODER_LAYER_LAYOUT = ("self_attn and cross_attn (MultiHeadAttentions with w_q, w_k, w_v, w_o), feed_forward.linear1 "
                        "and feed_forward.linear2, self_attn_block.norm, cross_attn_block.norm and ff_block.norm "
                        "(one nn.LayerNorm(d_model) per sublayer)")


def example_decoder_inputs(seed: int = 0):
    """``(description, y (2, 3, 24), memory (2, 7, 24), tgt_mask, memory_mask)`` with every mask shape the decoder
    uses: causal ``(1, 1, 3, 3)``, causal + target padding ``(2, 1, 3, 3)``, source padding ``(2, 1, 1, 7)``."""
    from .lesson04 import BATCH, D_MODEL

    generator = torch.Generator().manual_seed(seed)
    y = torch.randn(BATCH, TGT_LEN, D_MODEL, generator=generator) * 2 + 1
    memory = torch.randn(BATCH, SRC_LEN, D_MODEL, generator=generator)
    causal = torch.ones(TGT_LEN, TGT_LEN, dtype=torch.bool).tril()[None, None]
    target_padding = torch.tensor([[True] * TGT_LEN, [True] * 2 + [False]])[:, None, None, :]
    source_padding = torch.tensor([[True] * SRC_LEN, [True] * 4 + [False] * 3])[:, None, None, :]
    return [(f"y {tuple(y.shape)}, memory {tuple(memory.shape)}, no masks", y, memory, None, None),
            (f"causal tgt_mask {tuple(causal.shape)}, padding memory_mask {tuple(source_padding.shape)}",
             y, memory, causal, source_padding),
            (f"causal + padding tgt_mask {tuple((causal & target_padding).shape)}, padding memory_mask "
             f"{tuple(source_padding.shape)}", y, memory, causal & target_padding, source_padding)]


def decoder_layer_mistake(block, y, memory, tgt_mask, memory_mask, kind: str, *, use_tgt_mask: bool = True,
                          use_memory_mask: bool = True, cross_keys_from_y: bool = False,
                          cross_first: bool = False) -> torch.Tensor:
    """The package decoder layer's weights wired as ``kind`` (see lesson04.connect), or with another typical bug."""
    from .lesson04 import connect

    def self_attention(h):
        return block.self_attn(h, h, h, tgt_mask if use_tgt_mask else None)[0]

    def cross_attention(h):
        source = h if cross_keys_from_y else memory
        return block.cross_attn(h, source, source, memory_mask if use_memory_mask and not cross_keys_from_y
                                else None)[0]
    steps = [(self_attention, block.self_attn_block.norm), (cross_attention, block.cross_attn_block.norm)]
    if cross_first:
        steps.reverse()
    for sublayer, norm in steps + [(block.feed_forward, block.ff_block.norm)]:
        y = connect(kind, y, sublayer, norm)
    return y


def diagnose_decoder_layer(block, y, memory, tgt_mask, memory_mask, norm: str, got: torch.Tensor) -> str | None:
    from .lesson04 import CONNECTION_MISTAKES, WIRING_MISTAKES

    candidates = [({"kind": kind}, message) for kind, message in {**CONNECTION_MISTAKES[norm],
                                                                  **WIRING_MISTAKES}.items()]
    candidates += [
        ({"use_memory_mask": False}, "the memory mask is missing: cross-attention must hide the source's padding, "
                                     "self.cross_attn(h, memory, memory, memory_mask)."),
        ({"use_tgt_mask": False}, "self-attention ignores tgt_mask, so every position sees the future tokens it "
                                  "must predict: self.self_attn(h, h, h, tgt_mask)."),
        ({"cross_keys_from_y": True}, "cross-attention attends to the decoder's own states: its keys and values "
                                      "must come from the encoder memory, self.cross_attn(h, memory, memory, "
                                      "memory_mask)."),
        ({"cross_first": True}, "the sublayers are in the wrong order: masked self-attention, then "
                                "cross-attention, then the feed-forward network."),
    ]
    with torch.no_grad():
        for knobs, message in candidates:
            try:
                wrong = decoder_layer_mistake(block, y, memory, tgt_mask, memory_mask, **{"kind": norm, **knobs})
            except (RuntimeError, ValueError):
                continue
            if close(got, wrong):
                return message
    return None


def decoder_error_hint(message: str) -> str | None:
    if f"({TGT_LEN})" in message and f"({SRC_LEN})" in message or "does not broadcast" in message:
        return ("target length (3) and source length (7) got mixed up: cross-attention takes its queries from "
                "the decoder side and its keys/values from the memory — self.cross_attn(h, memory, memory, "
                "memory_mask) — and tgt_mask belongs to self-attention, memory_mask to cross-attention.")
    return None


def check_decoder_layer(ns) -> None:
    from ..layers import DecoderLayer as PackageLayer
    from .lesson03 import check_dropout
    from .lesson04 import D_FF, D_MODEL, LAYER_SIGNATURE, N_HEADS, paired_layers

    learner_class = own_module_class(ns["DecoderLayer"], "DecoderLayer", "course_utils.layers.DecoderLayer")
    for norm in ("post", "pre"):
        package, learner = paired_layers(PackageLayer, learner_class, "DecoderLayer", norm, DECODER_LAYER_LAYOUT)
        for case, y, memory, tgt_mask, memory_mask in example_decoder_inputs():
            def diagnose(got, package=package, y=y, memory=memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         norm=norm):
                return diagnose_decoder_layer(package, y, memory, tgt_mask, memory_mask, norm, got)
            compare_block(package, learner, "DecoderLayer", f"norm={norm!r}, {case}",
                          {"y": y, "memory": memory, "tgt_mask": tgt_mask, "memory_mask": memory_mask},
                          diagnose, decoder_error_hint)
        memory = example_decoder_inputs()[0][2]
        check_dropout(learner_class, package, "DecoderLayer", LAYER_SIGNATURE, (D_MODEL, N_HEADS, D_FF),
                      lambda module, y, memory=memory: module(y, memory), example_decoder_inputs()[0][1], norm=norm)


DECODER_LAYER_SOLUTION = (
    SUBLAYER_SOLUTION +
    "\n"
    "\n"
    "class DecoderLayer(nn.Module):\n"
    "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm=\"post\"):\n"
    "        super().__init__()\n"
    "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
    "        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
    "        self.feed_forward = FeedForward(d_model, d_ff, dropout)\n"
    "        self.self_attn_block = Residual(d_model, dropout, norm)\n"
    "        self.cross_attn_block = Residual(d_model, dropout, norm)\n"
    "        self.ff_block = Residual(d_model, dropout, norm)\n"
    "\n"
    "    def forward(self, y, memory, tgt_mask=None, memory_mask=None):\n"
    "        y = self.self_attn_block(y, lambda h: self.self_attn(h, h, h, tgt_mask)[0])\n"
    "        # queries from the decoder, keys and values from the encoder memory\n"
    "        y = self.cross_attn_block(y, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0])\n"
    "        return self.ff_block(y, self.feed_forward)\n"
)

q4 = Exercise(
    name="Capstone: your own DecoderLayer",
    variables=("DecoderLayer",),
    checker=check_decoder_layer,
    hint="Three residual blocks in order: masked self-attention self.self_attn(h, h, h, tgt_mask)[0], "
         "cross-attention self.cross_attn(h, memory, memory, memory_mask)[0], then the feed-forward — each "
         "post: norm(y + dropout(f(y))) or pre: y + dropout(f(norm(y))), each with its own LayerNorm. Stuck? "
         "`from course_utils.layers import DecoderLayer` and move on.",
    solution=DECODER_LAYER_SOLUTION,
    success="Correct! Same outputs and gradients as course_utils.layers.DecoderLayer, Post-LN and Pre-LN, with "
            "causal, padding and memory masks, in train and eval mode.",
    task=(
        "**Capstone — your own `DecoderLayer`.** Write `DecoderLayer(d_model, n_heads, d_ff, dropout=0.1, "
        "norm=\"post\")` with `forward(y, memory, tgt_mask=None, memory_mask=None)`: `y (batch, tgt_len, d_model)` "
        "and the encoder output `memory (batch, src_len, d_model)` → `(batch, tgt_len, d_model)`. Three sublayers, "
        "each inside a residual connection with its own LayerNorm (Post-LN or Pre-LN, as in lesson 04):\n\n"
        "1. masked self-attention over `y` with `tgt_mask` (causal, and target padding);\n"
        "2. cross-attention: queries from the decoder, keys and values from `memory`, with `memory_mask` (source "
        "padding, `(batch, 1, 1, src_len)`);\n"
        "3. the feed-forward network.\n\n"
        "Attribute names — the package's: `self_attn`, `cross_attn` (two `MultiHeadAttention`s — yours from lesson "
        "03 or the package's), `feed_forward.linear1`, `feed_forward.linear2`, `self_attn_block.norm`, "
        "`cross_attn_block.norm`, `ff_block.norm`. The starter has the `FeedForward` and `Residual` skeletons "
        "of lesson 04: paste your versions in.\n\n"
        "How it is checked: for `norm=\"post\"` and `\"pre\"` the checker builds "
        "`course_utils.layers.DecoderLayer(24, 4, 40)`, copies its weights into yours, and compares outputs and "
        "gradients for `y (2, 3, 24)`, `memory (2, 7, 24)` without masks, with a causal `tgt_mask (1, 1, 3, 3)` and "
        "with causal + target padding `(2, 1, 3, 3)`, each with a source padding `memory_mask (2, 1, 1, 7)`, in "
        "train mode and — with `dropout=0.5` — in eval mode. `q4.hint()` and `q4.solution()` help; stuck? "
        "`from course_utils.layers import DecoderLayer` and move on."
    ),
    starter=(
        "import torch.nn as nn\n"
        "\n"
        "from course_utils.attention import MultiHeadAttention  # or paste yours from lesson 03\n"
        "\n"
        "\n"
        + SUBLAYER_STARTER +
        "\n"
        "\n"
        "class DecoderLayer(nn.Module):\n"
        "    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm=\"post\"):\n"
        "        super().__init__()\n"
        "        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
        "        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)\n"
        "        # feed_forward (.linear1, .linear2); self_attn_block, cross_attn_block, ff_block "
        "(each its own .norm)\n"
        "        raise NotImplementedError\n"
        "\n"
        "    def forward(self, y, memory, tgt_mask=None, memory_mask=None):\n"
        "        raise NotImplementedError  # masked self-attention, cross-attention to memory, feed-forward\n"
    ),
)


# ---------------------------------------------------------------------------- q5 (capstone): greedy_decode
SCRIPT_PAD, SCRIPT_BOS, SCRIPT_EOS, OFF_SCRIPT, SCRIPT_VOCAB = 0, 1, 2, 11, 12
SCRIPTS = {  # first source id -> the tokens the model "wants" to produce, in order; it keeps talking after [EOS]
    20: [5, 6, SCRIPT_EOS, 7, 8, 9, 5, 6, 7],
    21: [7, 7, 8, 9, SCRIPT_EOS, 5, 6, 7, 8],
    22: [8, 9, 5, 6, 7, 8, 9, 5, 6],  # never ends by itself
}


class ScriptedTranslator(nn.Module):
    """A stand-in encoder–decoder with the package's interface whose next token is fixed by a script.

    At position ``t`` it predicts ``script[t]`` if the decoder input there is what a correct greedy decoder feeds
    (``[BOS]`` at 0, then the previous scripted token) and :data:`OFF_SCRIPT` otherwise — so a decoder that does not
    start with [BOS] or does not feed its choices back goes off script. It records, for every call, whether it ran
    in training mode and with gradients enabled.
    """

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.calls: list[tuple[bool, bool]] = []

    def encode(self, src_ids: torch.Tensor) -> torch.Tensor:
        self.calls.append((self.training, torch.is_grad_enabled()))
        return src_ids.float()[..., None] * self.scale  # (batch, src_len, 1)

    def new_cache(self):
        return None

    def decode(self, tgt_in_ids: torch.Tensor, memory: torch.Tensor, src_ids: torch.Tensor,
               cache=None) -> torch.Tensor:
        self.calls.append((self.training, torch.is_grad_enabled()))
        batch, length = tgt_in_ids.shape
        logits = torch.zeros(batch, length, SCRIPT_VOCAB)
        for row in range(batch):
            script = SCRIPTS[int(src_ids[row, 0])]
            for t in range(length):
                fed = [SCRIPT_BOS] + script
                token = script[t] if t < len(script) and int(tgt_in_ids[row, t]) == fed[t] else OFF_SCRIPT
                logits[row, t, token] = 5.0
        return logits * self.scale + memory.mean() * 0.0


def example_sources() -> list[tuple[str, torch.Tensor, int]]:
    """``(description, src_ids, max_new_tokens)``: rows that end at different steps, and a row that never ends."""
    src = torch.tensor([[20, 13, 14, SCRIPT_PAD], [21, 15, 16, 17], [22, 13, SCRIPT_PAD, SCRIPT_PAD]])
    return [("three sources, max_new_tokens=6 (the third never produces [EOS])", src, 6),
            ("the first two sources, max_new_tokens=8 (both end before the limit)", src[:2], 8)]


def check_greedy_decode(ns) -> None:
    from ..decoding import greedy_decode as package_decode

    decode = own_function(ns["greedy_decode"], "greedy_decode", "course_utils.decoding.greedy_decode")
    for case, src, max_new_tokens in example_sources():
        reference = ScriptedTranslator().eval()
        expected = package_decode(reference, src, SCRIPT_BOS, SCRIPT_EOS, max_new_tokens, pad_id=SCRIPT_PAD,
                                  use_cache=False)
        model = ScriptedTranslator().train()  # handed over in training mode, as right after fit
        got = decode(model, src.clone(), SCRIPT_BOS, SCRIPT_EOS, max_new_tokens)
        if not model.calls:
            raise ExerciseFailure("greedy_decode never called model.encode / model.decode.")
        if any(training for training, _ in model.calls):
            raise ExerciseFailure(f"{case}: the model ran in training mode: call model.eval() first — otherwise "
                                  "dropout changes every step's prediction.")
        if any(grad for _, grad in model.calls):
            raise ExerciseFailure(f"{case}: the model ran with gradients enabled: decoding needs no backward pass, "
                                  "so wrap it in torch.no_grad() (or decorate the function with @torch.no_grad()) "
                                  "— otherwise every step's graph is kept in memory.")
        got = as_tensor(got, "greedy_decode")
        if got.dim() != 2 or got.size(0) != src.size(0):
            raise ExerciseFailure(f"{case}: return generated ids of shape (batch, steps) = {tuple(expected.shape)}, "
                                  f"got {tuple(got.shape)}.")
        if got.dtype != torch.long:
            raise ExerciseFailure(f"{case}: token ids are torch.long, got {got.dtype}.")
        if got.size(1) == expected.size(1) + 1 and bool((got[:, 0] == SCRIPT_BOS).all()):
            raise ExerciseFailure(f"{case}: your output starts with [BOS]; return only the generated tokens, "
                                  "prefix[:, 1:].")
        fed_back = int((got == OFF_SCRIPT).sum())
        if fed_back:
            raise ExerciseFailure(f"{case}: the model went off script ({fed_back} unexpected tokens): the decoder "
                                  "input must start with [BOS] and grow by the token chosen at each step, and each "
                                  "step reads the logits of the *last* position, logits[:, -1].")
        if got.size(1) > 1 and bool((got == got[:, :1]).all()) and not torch.equal(got, expected):
            raise ExerciseFailure(f"{case}: every step produced the first token again ({got[:, 0].tolist()}): the "
                                  "decoder input must grow by the token chosen at each step (torch.cat it to the "
                                  "prefix), and each step reads the logits of the *last* position, logits[:, -1].")
        head = got[:, :expected.size(1)]
        if got.size(1) >= expected.size(1) and bool((head[expected == SCRIPT_PAD] != SCRIPT_PAD).any()) and \
                torch.equal(head.masked_fill(expected == SCRIPT_PAD, SCRIPT_PAD), expected):
            raise ExerciseFailure(f"{case}: after a row's [EOS] you kept its later tokens: [EOS] ends a row, fill "
                                  "the rest of it with pad_id (keep a `finished` flag per row).")
        if got.size(1) > expected.size(1):
            raise ExerciseFailure(f"{case}: you ran {got.size(1)} steps, but every row had produced [EOS] after "
                                  f"{expected.size(1)}: stop as soon as all rows are finished.")
        if got.size(1) < expected.size(1):
            raise ExerciseFailure(f"{case}: you stopped after {got.size(1)} steps; a row that has not produced "
                                  f"[EOS] goes on (here until step {expected.size(1)}): stop only when *every* row "
                                  "is finished, or at max_new_tokens.")
        if not torch.equal(got, expected):
            raise ExerciseFailure(f"{case}: expected {expected.tolist()}, got {got.tolist()}: at each step pick "
                                  "logits[:, -1].argmax(-1), pad rows that are finished, append, stop when all are.")


q5 = Exercise(
    name="Capstone: your own greedy decoder",
    variables=("greedy_decode",),
    checker=check_greedy_decode,
    hint="model.eval(); under torch.no_grad(): memory = model.encode(src_ids); prefix = a (batch, 1) column of "
         "bos_id; finished = all False. Each step: logits = model.decode(prefix, memory, src_ids)[:, -1]; "
         "next = logits.argmax(-1).masked_fill(finished, pad_id); append; finished |= next == eos_id; break when "
         "finished.all(). Return prefix[:, 1:]. Stuck? `from course_utils.decoding import greedy_decode`.",
    solution=(
        "import torch\n"
        "\n"
        "\n"
        "@torch.no_grad()\n"
        "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
        "    model.eval()\n"
        "    memory = model.encode(src_ids)                                    # once per sentence\n"
        "    prefix = torch.full((src_ids.size(0), 1), bos_id, dtype=torch.long)  # (batch, 1 + steps)\n"
        "    finished = torch.zeros(src_ids.size(0), dtype=torch.bool)\n"
        "    for _ in range(max_new_tokens):\n"
        "        logits = model.decode(prefix, memory, src_ids)[:, -1]        # the next token's scores\n"
        "        next_token = logits.argmax(dim=-1).masked_fill(finished, pad_id)\n"
        "        prefix = torch.cat([prefix, next_token[:, None]], dim=1)\n"
        "        finished |= next_token == eos_id\n"
        "        if finished.all():\n"
        "            break\n"
        "    return prefix[:, 1:]\n"
    ),
    success="Correct! Same tokens as course_utils.decoding.greedy_decode: shifted start, [EOS] handled, "
            "eval mode, no gradients.",
    task=(
        "**Capstone — your own greedy decoder.** Write `greedy_decode(model, src_ids, bos_id, eos_id, "
        "max_new_tokens, pad_id=0)` for a model with the package's interface (`model.encode(src_ids)` → memory, "
        "`model.decode(tgt_in_ids, memory, src_ids)` → logits `(batch, tgt_len, vocab)`). Return the generated ids "
        "`(batch, steps)` without the [BOS]:\n\n"
        "* the decoder input starts as a column of `bos_id` and grows by the token chosen at every step (each "
        "step reads the logits of the last position and takes the arg-max);\n"
        "* a row that has produced `eos_id` is finished: from then on it gets `pad_id`; stop as soon as every row "
        "is finished, or after `max_new_tokens`;\n"
        "* decode in eval mode (`model.eval()`) and without gradients (`torch.no_grad()`).\n\n"
        "How it is checked: on a scripted stand-in model whose rows end at different steps (one never ends), your "
        "tokens are compared with `course_utils.decoding.greedy_decode`'s; the model hands itself over in training "
        "mode and records whether it ran in eval mode and without gradients. `q5.hint()` and `q5.solution()` help; "
        "stuck? `from course_utils.decoding import greedy_decode` and move on."
    ),
    starter=(
        "def greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
        "    # eval mode, no gradients; start from [BOS]; pick logits[:, -1].argmax(-1); pad finished rows; stop\n"
        "    raise NotImplementedError\n"
    ),
)
