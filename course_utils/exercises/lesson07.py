"""Exercises of lesson 07 (translation): the bytes a KV cache holds (q1), a beam whose cache forgets its parents
(q2), the capstone, batched greedy decoding with the cache (q3); in the form of :mod:`.core`."""
from __future__ import annotations

import math
from typing import Any

import torch

from ..models import Seq2SeqTransformer
from .asserts import Case, Draw, attempt, call_learner, check_function, own_function, same_content, snapshot
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of

DEFAULT_PAD, DEFAULT_BOS, DEFAULT_EOS = 0, 5, 6  # the course's ids (course_utils.tokenization); checks use others


def prediction_missing(answer, args: tuple, record: str) -> None:
    """Refuse a missing prediction, unless ``answer(*args)`` is the untouched stub ("not attempted")."""
    try:
        answer(*args)
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 — the answer is checked once the prediction is recorded
        pass
    raise ExerciseFailure(record)


def special_ids(draw: Draw, vocab: int) -> tuple[int, int, int]:
    """``(bos, eos, pad)``: three different ids, none the course's default for its role (5, 6, 0 typed in show)."""
    while True:
        bos, eos, pad = draw.distinct(3, 0, vocab - 1)
        if bos != DEFAULT_BOS and eos != DEFAULT_EOS and pad != DEFAULT_PAD:
            return bos, eos, pad


# --------------------- q1 (predict, then measure): the bytes a KV cache holds — a real cache's nbytes is the reference

DTYPES = {2: torch.bfloat16, 4: torch.float32, 8: torch.float64}   # bytes per number -> a dtype of that size
BASE = dict(d_model=512, n_layers=6, n_heads=8, bytes_per_number=2)   # the 2017 base model, 16-bit numbers


def measured_cache_bytes(d_model: int, n_layers: int, n_heads: int, src_len: int, positions: int,
                         bytes_per_number: int) -> int:
    """``nbytes`` of one sentence's KV cache in a random Seq2SeqTransformer of these sizes and bytes per number."""
    from ..config import TransformerConfig
    from ..models import Seq2SeqTransformer

    config = TransformerConfig(vocab_size=11, tgt_vocab_size=11, d_model=d_model, n_heads=n_heads, d_ff=4,
                               n_layers=n_layers, max_len=max(src_len, positions) + 1, dropout=0.0)
    model = Seq2SeqTransformer(config).to(DTYPES[bytes_per_number]).eval()
    src = torch.randint(7, 11, (1, src_len), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        memory, cache = model.encode(src), model.new_cache()
        for _ in range(positions):
            model.decode(torch.full((1, 1), DEFAULT_BOS), memory, src, cache)
    return cache.nbytes


def check_kv_cache_bytes(ns) -> None:
    """The prediction recorded (not graded), the formula against real caches, then the three side by side."""
    from ..kv_cache import KVCache, LayerCache
    from ..models import Seq2SeqTransformer

    guess, formula = ns.get("my_bytes_per_piece"), ns["kv_cache_bytes"]
    record = ("record your prediction in its cell first: `my_bytes_per_piece` = the bytes one sentence's cache "
              "grows by per generated piece in the 2017 base model (d_model 512, 6 layers, 8 heads, 16-bit numbers).")
    if guess is Ellipsis:
        prediction_missing(formula, (8, 2, 2, 3, 4, 4), record)
    try:
        guess = None if guess is None else float(guess)
    except (TypeError, ValueError):
        raise ExerciseFailure(f"`my_bytes_per_piece` should be a number such as 1024, got {guess!r}.") from None
    if guess is not None and not guess > 0:
        raise ExerciseFailure(f"`my_bytes_per_piece` = {guess:g}: a growing cache holds more bytes: a positive number.")
    draw = Draw()
    cases = []
    for bytes_per_number in (2, 8, 4):
        d_head, n_heads, n_layers = draw.choice((2, 4)), draw.integer(2, 3), draw.integer(3, 4)   # 2 layers: K and V
        src_len, positions = draw.distinct(2, 1, 6)
        args = (d_head * n_heads, n_layers, n_heads, src_len, positions, bytes_per_number)
        cases.append(Case(f"d_model {args[0]}, {n_layers} layers, {n_heads} heads, source {src_len} tokens, "
                          f"{positions} positions fed, {bytes_per_number} bytes per number", args))
    built = {f"{where} (a built model or cache; predict with a formula instead)": block for where, block in (
        ("course_utils.models.Seq2SeqTransformer", Seq2SeqTransformer), ("course_utils.kv_cache.KVCache", KVCache),
        ("course_utils.kv_cache.LayerCache", LayerCache))}
    check_function(formula, measured_cache_bytes, cases, "kv_cache_bytes", probes=cases, forbidden=built, scales=())
    if guess is None:
        raise ExerciseFailure(record)
    per_piece = formula(src_len=20, positions=2, **BASE) - formula(src_len=20, positions=1, **BASE)
    measured = measured_cache_bytes(src_len=20, positions=2, **BASE) - measured_cache_bytes(src_len=20, positions=1,
                                                                                               **BASE)
    print(f"bytes per generated piece, base model, 16-bit: your prediction {guess:,.0f}; your formula {per_piece:,}; "
          f"measured (cache.nbytes after 2 positions - after 1) {measured:,}\n"
          f"one sentence, 20 source tokens, 25 pieces: {formula(src_len=20, positions=25, **BASE):,} bytes")


def cache_bytes_with(pairs: int = 2, layers: bool = True, per_head: bool = False, self_part: bool = True,
                     cross_part: bool = True, fixed_bytes: int | None = None):
    """The right count with one slip (keys only, one layer, d_model per head, a part left out, bytes typed in)."""
    def variant(d_model, n_layers, n_heads, src_len, positions, bytes_per_number):
        length = positions * self_part + src_len * cross_part
        return (pairs * (n_layers if layers else 1) * d_model * (n_heads if per_head else 1) * length
                * (fixed_bytes or bytes_per_number))
    return variant


Q1_MISTAKES = (
    Mistake("cross-attention's cache forgotten", "cross-attention caches its keys and values too: the memory "
            "projected once per layer, src_len positions of them", cache_bytes_with(cross_part=False)),
    Mistake("self-attention's cache forgotten", "the growing part is self-attention's: keys and values of every "
            "target position fed so far, in every layer", cache_bytes_with(self_part=False)),
    Mistake("keys only", "a cache keeps keys *and* values: two tensors per attention", cache_bytes_with(pairs=1)),
    Mistake("one layer", "every decoder layer has its own attentions and so its own cache: times n_layers",
            cache_bytes_with(layers=False)),
    Mistake("d_model per head", "the heads split d_model: each holds d_model / n_heads numbers per position, so all "
            "heads together hold d_model, not n_heads x d_model", cache_bytes_with(per_head=True)),
    Mistake("4 bytes typed in", "use bytes_per_number: a float32 number is 4 bytes, but bfloat16 or float16 is 2 and "
            "float64 8", cache_bytes_with(fixed_bytes=4)),
)


# q2 (find the bug, then predict and measure): a beam's cache must follow its parents — KVCache.reorder is the rule

CHOICES = ("self", "cross", "both")


def package_reorder(layers, parents):
    """:meth:`course_utils.kv_cache.LayerCache.reorder` on every ``(keys, values)`` pair."""
    from ..kv_cache import LayerCache

    out = []
    for keys, values in layers:
        layer = LayerCache()
        layer.append(keys, values)
        layer.reorder(parents)
        out.append((layer.keys, layer.values))
    return out


def reorder_cases(draw: Draw) -> list[Case]:
    """1 to 3 layers' (keys, values) of 4 different sizes; parents drawn with repeats, as a beam's are."""
    cases = []
    for n_layers in (1, draw.integer(2, 3), draw.integer(2, 3)):
        rows, heads, length, d_head = draw.distinct(4, 2, 7)
        layers = [(draw.randn(rows, heads, length, d_head), draw.randn(rows, heads, length, d_head))
                  for _ in range(n_layers)]
        parents = draw.randint(0, rows, (rows,))
        parents[0] = rows - 1   # never the identity
        cases.append(Case(f"{n_layers} layer(s) of (keys, values) {(rows, heads, length, d_head)}, parents "
                          f"{parents.tolist()}", (layers, parents)))
    return cases


def check_reorder_kv(ns) -> None:
    """The prediction recorded (one of three, not graded), then the function against the package's reorder."""
    guess, reorder = ns.get("my_prediction"), ns["reorder_kv"]
    record = ('record your prediction in its cell first: `my_prediction = "self"`, `"cross"` or `"both"`: which '
              "cached keys and values must follow the parents for beam's answers to come back; then the function.")
    cases = reorder_cases(Draw())
    if guess is Ellipsis:
        prediction_missing(reorder, cases[0].args, record)
    if guess is not None and guess not in CHOICES:
        raise ExerciseFailure(f"`my_prediction` should be one of {CHOICES}, got {guess!r}.")
    check_function(reorder, package_reorder, cases, "reorder_kv", probes=reorder_cases(Draw()), scales=())
    if guess is None:
        raise ExerciseFailure(record)


Q2_MISTAKES = (
    Mistake("nothing reordered", "every row kept its own keys and values: that is the forgetful cache's bug; row i "
            "must take row parents[i] of every tensor",
            lambda layers, parents: [(k, v) for k, v in layers]),
    Mistake("values left behind", "the keys follow the parents but the values do not: a hypothesis would attend "
            "with its parent's keys to another row's values; index both",
            lambda layers, parents: [(k[parents], v) for k, v in layers]),
    Mistake("first layer only", "every layer caches its own keys and values: reorder each pair in the list, not "
            "only the first", lambda layers, parents: [(k[parents], v[parents]) if i == 0 else (k, v)
                                                        for i, (k, v) in enumerate(layers)]),
)

# ------------- q3 (capstone): batched greedy decoding with the KV cache — the package's greedy_decode is the reference

class Translator(Seq2SeqTransformer):
    """The package's model, recording each call's mode and grad mode (``calls``) and each decode's new positions and
    whether a cache came (``fed``). With a ``script`` (first source id -> tokens) its greedy path is set by hand: while
    a row's decoder input is [BOS] then its script, the script's next token wins by far (``tempt[(first id, t)]``:
    [BOS] or [PAD] scored above it), and any other prefix leads to ``off_script``; a row whose memory is not its
    source's gets the model's own scores."""

    def __init__(self, config, script: dict[int, list[int]] | None = None, bos: int | None = None,
                 off_script: int | None = None, tempt: dict[tuple[int, int], int] | None = None) -> None:
        super().__init__(config)
        self.script, self.bos, self.off_script, self.tempt = script, bos, off_script, tempt or {}
        self.source_memory: dict[int, torch.Tensor] = {}   # first source id -> that row's memory
        self.calls: list[tuple[bool, bool]] = []
        self.fed: list[tuple[int, bool]] = []

    def encode(self, src_ids):
        self.calls.append((any(m.training for m in self.modules()), torch.is_grad_enabled()))
        return super().encode(src_ids)

    def decode(self, tgt_in_ids, memory, src_ids, cache=None):
        self.calls.append((any(m.training for m in self.modules()), torch.is_grad_enabled()))
        self.fed.append((tgt_in_ids.size(-1) if tgt_in_ids.dim() else 0, cache is not None))
        logits = super().decode(tgt_in_ids, memory, src_ids, cache)
        if self.script is None:
            return logits
        fed = tgt_in_ids
        if cache is not None:   # the prefix so far, kept beside the cache's keys and values
            fed = cache.tokens = torch.cat([getattr(cache, "tokens", fed[:, :0]), fed], dim=1)
        bonus = torch.zeros_like(logits)
        for row in range(fed.size(0)):
            key = int(src_ids[row, 0])
            script, source = self.script.get(key, []), self.source_memory.get(key)
            if source is None or source.shape != memory[row].shape or not torch.allclose(memory[row], source,
                                                                                          atol=1e-5):
                bonus[row, :, self.off_script] = -10.0   # the model's own scores, never the off-script token
                continue
            expected = [self.bos] + script
            for i, t in enumerate(range(fed.size(1) - logits.size(1), fed.size(1))):
                on_script = t < len(script) and fed[row, :t + 1].tolist() == expected[:t + 1]
                bonus[row, i, script[t] if on_script else self.off_script] = 10.0
                if on_script and (key, t) in self.tempt:
                    bonus[row, i, self.tempt[key, t]] = 11.0
        return logits.tanh() + bonus   # the model's own scores below the script break the ties


class DecodeCase:
    """One input of the greedy-decoding check: a model factory, the arguments, and the package's answer."""

    def __init__(self, description: str, make_model, src: torch.Tensor, bos: int, eos: int, max_new_tokens: int,
                 pad: int | None) -> None:
        from ..decoding import greedy_decode

        self.description, self.make_model, self.src = description, make_model, src
        self.bos, self.eos, self.max_new_tokens, self.pad = bos, eos, max_new_tokens, pad
        model = make_model().eval()
        self.off_script = model.off_script
        self.expected = greedy_decode(model, src, bos, eos, max_new_tokens, pad_id=DEFAULT_PAD if pad is None else pad)

    def args(self) -> tuple:
        """What the learner's function is called with (pad_id left out where the case tests its default)."""
        args = (self.src.clone(), self.bos, self.eos, self.max_new_tokens)
        return args if self.pad is None else args + (self.pad,)


def random_translator(draw: Draw, src_vocab: int, tgt_vocab: int, pad: int, source: torch.Tensor | None = None,
                      **script) -> tuple[Any, Any]:
    """``(config, make_model)``: a small random :class:`Translator` (dropout on), the same weights at every call;
    a scripted one also knows the memory of its ``source``."""
    from ..config import TransformerConfig

    n_heads, d_head = draw.distinct(2, 2, 4)
    config = TransformerConfig(vocab_size=src_vocab, tgt_vocab_size=tgt_vocab, d_model=n_heads * d_head,
                               n_heads=n_heads, d_ff=draw.integer(9, 20), n_layers=draw.integer(1, 2), max_len=16,
                               dropout=draw.choice([0.2, 0.3, 0.4]), positional="learned",
                               norm=draw.choice(["post", "pre"]), pad_id=pad)
    seed = draw.integer(0, 2 ** 31 - 1)

    def make_model():
        torch.manual_seed(seed)
        model = Translator(config, **script)
        with torch.no_grad():  # larger embeddings: outputs that depend on the prefix, not one token repeated
            for name, p in model.named_parameters():
                if "embedding" in name:
                    p.mul_(3.0)
            if source is not None:   # the memory a right answer passes: eval mode, no gradients
                model.source_memory = dict(zip(source[:, 0].tolist(), Seq2SeqTransformer.encode(model.eval(),
                                                                                                 source)))
        return model

    return config, make_model


def scripted_case(draw: Draw, what: str, finish: list[int | None], max_new_tokens: int, *, default_pad: bool = False,
                  tempt: bool = False, every_word: bool = False) -> DecodeCase:
    """A scripted batch: row ``i`` produces [EOS] at step ``finish[i]`` (1-based; ``None``: never); ``every_word``:
    12 ids, each of the 8 words said once before the [EOS], so an id forbidden beyond bos_id and pad_id shows."""
    vocab = 12 if every_word else draw.integer(12, 40)
    bos, eos, pad = special_ids(draw, vocab)
    if default_pad:
        pad = DEFAULT_PAD
        while DEFAULT_PAD in (bos, eos):
            bos, eos, _ = special_ids(draw, vocab)
    off_script = draw.choice([i for i in range(vocab) if i not in (bos, eos, pad)])
    words = [i for i in range(vocab) if i not in (bos, eos, pad, off_script)]
    firsts = draw.distinct(len(finish), 0, vocab - 1, avoid=(pad,))
    scripts, temptations = {}, {}
    for first, end in zip(firsts, finish):
        script = [draw.choice(words) for _ in range(max_new_tokens + 3)]  # it keeps talking after its [EOS]
        if every_word:
            script[:len(words)] = draw.rng.sample(words, len(words))
        if end is not None:
            script[end - 1] = eos
        scripts[first] = script
    if tempt:  # [BOS] and [PAD] scored above the script, before the rows' [EOS]
        for row, (first, end) in enumerate(zip(firsts, finish)):
            last = (end or max_new_tokens) - 1
            if last >= 1:
                temptations[first, draw.integer(0, last - 1)] = bos if row % 2 == 0 else pad
    src_len = draw.integer(2, 5)
    rows = []
    for first in firsts:
        n = draw.integer(1, src_len - 1)
        rows.append([first] + [draw.choice(words) for _ in range(n)] + [pad] * (src_len - 1 - n))
    src = torch.tensor(rows)
    _, make_model = random_translator(draw, vocab, vocab, pad, script=scripts, bos=bos, off_script=off_script,
                                      tempt=temptations, source=src)
    ends = ", ".join("never" if end is None else f"step {end}" for end in finish)
    pad_text = "pad_id left at its default 0" if default_pad else f"pad_id {pad}"
    description = (f"a scripted model, {what}: batch {len(finish)}, max_new_tokens {max_new_tokens}, bos_id {bos}, "
                   f"eos_id {eos}, {pad_text}; [EOS] per row: {ends}"
                   + ("; [BOS]/[PAD] scored above the script at some steps" if temptations else ""))
    return DecodeCase(description, make_model, src, bos, eos, max_new_tokens, None if default_pad else pad)


def real_model_case(draw: Draw, batch: int) -> DecodeCase:
    """A small random Translator without a script, source padding, other special ids, an [EOS] it produces."""
    from ..decoding import greedy_decode

    for _ in range(8):
        tgt_vocab, src_vocab = draw.distinct(2, 12, 30)
        max_new_tokens = draw.integer(5, 9)
        bos, _, pad = special_ids(draw, min(tgt_vocab, src_vocab))  # pad_id: an id of both vocabularies
        config, make_model = random_translator(draw, src_vocab, tgt_vocab, pad)
        src_len = draw.integer(3, 7)
        words = [i for i in range(src_vocab) if i != pad]
        lengths = [src_len] + [draw.integer(1, src_len - 1) for _ in range(batch - 1)]
        src = torch.tensor([[draw.choice(words) for _ in range(n)] + [pad] * (src_len - n) for n in lengths])
        model = make_model().eval()
        free = greedy_decode(model, src, bos, bos, max_new_tokens, pad_id=pad)  # [BOS] is never generated
        eos = choose_eos(draw, free, (bos, pad))
        if eos is None or not clear_margins(model, src, bos, eos, max_new_tokens, pad):
            continue
        finish = [(row.tolist().index(eos) + 1) if eos in row.tolist() else None for row in free]
        ends = ", ".join("never" if end is None else f"step {end}" for end in finish)
        padded = ", ".join(str(i) for i, n in enumerate(lengths) if n < src_len)
        description = (f"a random Seq2SeqTransformer (d_model {config.d_model}, {config.n_heads} heads, "
                       f"{config.n_layers} layer{'s' * (config.n_layers > 1)}, {config.norm}-LN, dropout "
                       f"{config.dropout}, target vocabulary {tgt_vocab}) handed over in train mode: batch {batch}"
                       + (f" (source padding in rows {padded})" if padded else "")
                       + f", max_new_tokens {max_new_tokens}, bos_id {bos}, eos_id {eos}, pad_id {pad}; [EOS] per "
                       f"row: {ends}")
        return DecodeCase(description, make_model, src, bos, eos, max_new_tokens, pad)
    raise RuntimeError("checker bug: no random model with clear arg-max margins was found")


def choose_eos(draw: Draw, free: torch.Tensor, special: tuple[int, int]) -> int | None:
    """The id to call [EOS] so that rows finish at different steps (some never, the last row early if it can)."""
    scored = []
    for token in sorted(set(free.flatten().tolist()) - set(special)):
        finish = [(row.index(token) + 1) if token in row else None for row in free.tolist()]
        outcomes = len(set(finish))
        last_first = finish[-1] is not None and all(f is None or f >= finish[-1] for f in finish) and len(finish) > 1
        early = any(f is not None and f < free.size(1) for f in finish)
        late = all(f is None or f >= 2 for f in finish)  # at least one step before a row ends
        scored.append((outcomes + 2 * last_first + early + late, token))
    if not scored:
        return None
    best = max(score for score, _ in scored)
    return draw.choice([token for score, token in scored if score == best])


def clear_margins(model, src, bos: int, eos: int, max_new_tokens: int, pad: int, margin: float = 1e-3) -> bool:
    """Whether every arg-max of the package's greedy run wins by ``margin`` (float noise cannot flip a token)."""
    from ..decoding import greedy_decode

    with torch.no_grad():
        out = greedy_decode(model, src, bos, eos, max_new_tokens, pad_id=pad)
        if not torch.equal(out, greedy_decode(model, src, bos, eos, max_new_tokens, pad_id=pad, use_cache=False)):
            return False
        prefix = torch.cat([torch.full((src.size(0), 1), bos), out[:, :-1]], dim=1)
        logits = model.decode(prefix, model.encode(src), src).clone()
        logits[..., [bos, pad]] = float("-inf")
        top = logits.topk(2, dim=-1).values
        gap = top[..., 0] - top[..., 1]
        live = torch.ones_like(out, dtype=torch.bool)
        live[:, 1:] = (out[:, :-1] != eos).cumprod(dim=1).bool()
    return bool((gap[live] > margin).all())


def decode_cases(draw: Draw) -> list[DecodeCase]:
    """Scripted edge cases first (smallest first), two random real models, a row that says every word, then a
    scripted batch again in reverse order: the same shapes, so nothing may be kept per shape between calls."""
    n = draw.integer(3, 5)
    every = scripted_case(draw, "every row ending before the limit, the first one first", [2, n + 1, n], n + 3)
    return [
        scripted_case(draw, "one step only", [None], 1),
        scripted_case(draw, "one row that ends before the limit", [n - 1], n + 1),
        scripted_case(draw, "the last row finishing first", [n, n - 2], n + 2, default_pad=True),
        scripted_case(draw, "the last row finishing first, the middle one never", [n - 1, None, 2], n + 1, tempt=True),
        every,
        real_model_case(draw, 1),
        real_model_case(draw, draw.integer(3, 4)),
        scripted_case(draw, "one row that says every word once", [9], 10, every_word=True),
        DecodeCase(f"{every.description}; its rows again in reverse order, the same shapes", every.make_model,
                   every.src.flip(0), every.bos, every.eos, every.max_new_tokens, every.pad),
    ]


NAME = "cached_greedy_decode"   # not greedy_decode: the notebook keeps the package's for its own cells


def forbidden_decoders() -> dict:
    from ..decoding import beam_search, generate, greedy_decode

    return {"the package's course_utils.decoding.greedy_decode": greedy_decode,
            "the package's course_utils.decoding.beam_search": beam_search,
            "the package's course_utils.decoding.generate": generate}


def decode_error_hint(error: BaseException) -> str | None:
    text = str(error)
    if isinstance(error, TypeError) and "positional argument" in text:
        return ("The function is cached_greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0): "
                "give it exactly these parameters")
    if "Tensors must have same number of dimensions" in text or "zero-dim" in text or "too many indices" in text:
        return ("With batch 1 too, keep the batch axis: logits[:, -1] is (batch, vocab), argmax(dim=-1) gives "
                "(batch,), and next_token[:, None] is the column to append (no .squeeze())")
    return None


def planted(start: str = "bos", forbid: str = "arguments", finished: str = "pad", stop: str = "all",
            keep_bos: bool = False, eos: str = "argument"):
    """Greedy decoding with the KV cache and one step changed (the defaults give the package's tokens)."""
    def cached_greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):
        model.eval()
        with torch.no_grad():
            memory, cache = model.encode(src_ids), model.new_cache()
            first = {"bos": bos_id, "pad": pad_id, "eos": eos_id}[start]
            prefix = torch.full((src_ids.size(0), 1), first, dtype=torch.long)
            done = torch.zeros(src_ids.size(0), dtype=torch.bool)
            end = DEFAULT_EOS if eos == "typed" else eos_id
            for _ in range(max_new_tokens):
                logits = model.decode(prefix[:, -1:], memory, src_ids, cache)[:, -1].clone()
                if forbid != "nothing":
                    logits[:, [DEFAULT_BOS, DEFAULT_PAD] if forbid == "typed" else [bos_id, pad_id]] = -math.inf
                token = logits.argmax(-1)
                if finished == "pad":
                    token = token.masked_fill(done, pad_id)
                prefix = torch.cat([prefix, token[:, None]], dim=1)
                done |= token == end
                if (stop == "all" and done.all()) or (stop == "any" and done.any()):
                    break
            return prefix if keep_bos else prefix[:, 1:]
    return cached_greedy_decode


def run_decode(answer, case: DecodeCase) -> Any:
    """The answer's tokens on a fresh copy of the case's model (a crash comes back as :class:`Raised`)."""
    return attempt(answer, NAME, (case.make_model().train(), *case.args()), {}, forbidden_decoders())


def check_source_kept(case: DecodeCase, args: tuple) -> None:
    if not same_content(snapshot(case.src), args[0]):
        raise ExerciseFailure(f"on {case.description}: your `cached_greedy_decode` changed its input `src_ids` in "
                              "place; the caller still needs it.")


def check_contract(case: DecodeCase, model, args: tuple, got: Any) -> None:
    """What the tokens alone cannot show: the input kept, eval mode, no gradients, the cache used; then the type."""
    where = f"on {case.description}"
    check_source_kept(case, args)
    if not model.calls:
        raise ExerciseFailure(f"{where}: your `cached_greedy_decode` never called model.encode / model.decode.")
    if any(training for training, _ in model.calls):
        raise ExerciseFailure(f"{where}: the model ran in training mode: call model.eval() first (dropout would "
                              "change every step's prediction).")
    if any(grad for _, grad in model.calls):
        raise ExerciseFailure(f"{where}: the model ran with gradients enabled: decode under torch.no_grad(), or every "
                              "step's graph is kept in memory.")
    if any(width != 1 or not cached for width, cached in model.fed):
        widths = sorted({width for width, _ in model.fed})
        raise ExerciseFailure(f"{where}: model.decode was called with {widths} new positions"
                              + ("" if all(cached for _, cached in model.fed) else " and without a cache")
                              + ": make one cache = model.new_cache() before the loop and feed only the newest "
                              "token each step, model.decode(prefix[:, -1:], memory, src_ids, cache).")
    if not isinstance(got, torch.Tensor) or got.dtype != torch.long or got.dim() != 2 \
            or got.size(0) != case.expected.size(0):
        what = f"{got.dtype}, shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__
        raise ExerciseFailure(f"{where}: return the generated ids as a torch.long tensor (batch, steps) = "
                              f"{tuple(case.expected.shape)}, got {what}.")


def check_greedy_decode(ns) -> None:
    decode = ns[NAME]
    if decode not in {mistake.variant for mistake in Q3_MISTAKES}:   # a declared variant stands in for a learner's
        own_function(decode, NAME, "course_utils.decoding.greedy_decode")
    cases = decode_cases(Draw())
    for case in cases:
        model = case.make_model().train()   # handed over in training mode, as right after fit
        args = case.args()
        try:
            got = call_learner(decode, NAME, case.description, model, *args, forbidden=forbidden_decoders(),
                               error_hint=decode_error_hint)
        except ExerciseFailure:   # the model may refuse a source changed in place: name that first
            check_source_kept(case, args)
            raise
        check_contract(case, model, args, got)
        if not torch.equal(got, case.expected):
            shown = f"expected {case.expected.tolist()}, got {got.tolist()}"
            kept = (" Right on this batch in its first order, wrong on the same shapes again: something is kept "
                    "across calls (memory or a cache remembered per shape?); build everything from this call's "
                    "inputs." if case is cases[-1] else "")
            raise Mismatch(f"on {case.description}: the tokens differ from the package's greedy decoder ({shown})."
                           + kept,
                           case, got, decode, run_decode, same_content, tuple(c for c in cases if c is not case),
                           case.expected)


def off_script_first(case: Any, got: Any, answer: Any = None) -> bool:
    """A scripted model answered its off-script token at the first step: the decoder input did not start right."""
    return bool(case.off_script is not None and isinstance(got, torch.Tensor) and got.dim() == 2
                and got.size(1) > 0 and (got[:, 0] == case.off_script).all())


Q3_MISTAKES = (
    Mistake("target not shifted (no [BOS] start)", "the decoder input must start with bos_id, the token the model "
            "was trained to read first: prefix = a (batch, 1) column of bos_id", planted(start="pad"),
            shows=off_script_first),
    Mistake("[BOS] returned", "return only the generated tokens, without the [BOS] column you started from",
            planted(keep_bos=True)),
    Mistake("EOS not handled", "a row that has produced eos_id is finished: from then on it gets pad_id, and the "
            "loop stops once every row is finished", planted(finished="keep", stop="never")),
    Mistake("finished rows not padded", "after a row's [EOS] you kept its later tokens: keep a `finished` flag per "
            "row and give finished rows pad_id", planted(finished="keep")),
    Mistake("stops at the first [EOS]", "you stopped when one row finished; the others were still going: stop only "
            "when *every* row is finished (finished.all()), or at max_new_tokens", planted(stop="any")),
    Mistake("[BOS]/[PAD] generated", "[BOS] and [PAD] are not words and are never generated: set the logits of "
            "bos_id and pad_id (the arguments) to -inf before the arg-max", planted(forbid="nothing")),
    Mistake("special ids typed in", "use the ids the call passes (bos_id, eos_id, pad_id), not the course's 5, 6 "
            "and 0: here they are other ids, and 5 or 6 are ordinary words", planted(forbid="typed", eos="typed")),
)


# ------------------------------------------------------------------------------------------------------- The exercises

q1 = Exercise(
    name="What does the cache cost?", variables=("kv_cache_bytes",), checker=check_kv_cache_bytes,
    hints=("Which attentions keep keys and values, in how many layers, and over how many positions each? How many "
           "numbers does one position's keys hold, all heads together?",
           "Self-attention keeps `positions` positions, cross-attention `src_len`; each position holds d_model keys "
           "and d_model values per layer."),
    solution=solution_of("lesson07", "my_bytes_per_piece", "kv_cache_bytes"), mistakes=Q1_MISTAKES,
    success="Correct: your formula equals real caches' nbytes. Compare your prediction with the measured growth "
            "above: only self-attention's part grows, 2 x n_layers x d_model numbers per piece; the heads split "
            "d_model and change nothing.",
)

q2 = Exercise(
    name="A beam that forgets its parents", variables=("reorder_kv",), checker=check_reorder_kv,
    hints=("After a step, new row i continues parent row parents[i]: which tensor rows must it read from then on?",
           "A long tensor used as an index on a tensor's first axis picks (and may repeat) whole rows. Which "
           "tensors of the list need it?"),
    solution=solution_of("lesson07", "my_prediction", "reorder_kv"), mistakes=Q2_MISTAKES,
    success="Correct! Run the next cell: it measures beam search with your reorder on self-attention's cache, "
            "cross-attention's and both. Then compare with your prediction: self-attention's keys and values hold "
            "each hypothesis's own prefix; one sentence's k rows read the same source, so their cross-attention "
            "keys and values are equal and any parent's will do.",
)

q3 = Exercise(
    name="Capstone: a batched greedy decoder with the KV cache", variables=("cached_greedy_decode",),
    checker=check_greedy_decode,
    hints=("Start from section 5's translate_one. What changes when rows finish at different steps, and what does "
           "the model need to see at each step once it keeps a cache?",
           "Keep a (batch,) bool tensor of finished rows: it decides which rows get pad_id instead of their "
           "arg-max, and when the loop may stop. The cache already holds every earlier position."),
    solution=solution_of("lesson07", NAME), mistakes=Q3_MISTAKES,
    success="Correct! The same tokens as course_utils.decoding.greedy_decode, one new position per step through the "
            "cache, in eval mode without gradients.",
    task=(
        "**Capstone (Exercise 3) — a batched greedy decoder with the KV cache (about 20 minutes).** Section 5's "
        "`translate_one` "
        "decodes one sentence and re-reads the whole prefix at every step. Write `cached_greedy_decode(model, "
        "src_ids, bos_id, eos_id, max_new_tokens, pad_id=0)` for a batch, using the cache:\n\n"
        "* `src_ids (batch, src_len)` → generated ids `(batch, steps)`, `torch.long`, without the `[BOS]`; "
        "`steps <= max_new_tokens`;\n"
        "* every row starts from `bos_id`; each step takes the arg-max of the newest position's logits, never "
        "`bos_id` or `pad_id`;\n"
        "* a row that has produced `eos_id` gets `pad_id` from then on; stop when every row has finished;\n"
        "* one `cache = model.new_cache()`, and each call `model.decode(newest_ids, memory, src_ids, cache)` feeds "
        "one new position `(batch, 1)`;\n"
        "* eval mode, no gradients, `src_ids` unchanged.\n\n"
        "It must give the same tokens as `course_utils.decoding.greedy_decode` for any special ids (not only "
        "5/6/0). Stuck? `q3.solution()`, or skip ahead: the rest of the course "
        "uses `from course_utils.decoding import greedy_decode`."
    ),
    starter=(
        "def cached_greedy_decode(model, src_ids, bos_id, eos_id, max_new_tokens, pad_id=0):\n"
        "    raise NotImplementedError  # eval, no_grad; encode once; a cache; one new position per step\n"
    ),
)
