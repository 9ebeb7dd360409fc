"""Exercises of notebook 06: weight tying from its symptom (q1), accuracy by fate (q2), whole-word masking (q3)."""
from __future__ import annotations

import copy
import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from ..mlm import IGNORE_INDEX, accuracy_at_mask, mask_tokens, masked_accuracy, whole_word_mask
from ..tokenization import MASK_ID, N_SPECIAL_TOKENS
from .asserts import (
    Case,
    Draw,
    Raised,
    attempt,
    call_learner,
    check_function,
    check_model_kept,
    check_support,
    module_state,
    same_content,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of


def check_properties(problem, answer, cases, probe_others=False) -> None:
    """A :class:`Mismatch` at the first case where ``problem`` finds a property broken (q1, q3)."""
    for case in cases:
        found = problem(answer, case)
        if found:
            raise Mismatch(f"on {case.description}: {found[1]}.", case, found[0], answer,
                           lambda a, c: (problem(a, c) or (None,))[0], operator.eq,
                           tuple(c for c in cases if c is not case) if probe_others else ())


# ---------------------------------------------------------------------------- q1: weight tying, from its symptom
class TinyMLM(nn.Module):
    def __init__(self, vocab_size: int = 120, d_model: int = 16, bias: bool = True) -> None:
        super().__init__()
        self.embedding, self.output = nn.Embedding(vocab_size, d_model), nn.Linear(d_model, vocab_size, bias=bias)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.output(self.embedding(ids))


def tying_problem(tie, case: Case) -> tuple[str, str] | None:
    """``(kind, message)`` of the first property of a tie that ``tie`` breaks on a fresh copy of the case's model."""
    model = copy.deepcopy(case.args[0])
    vocab, d_model = model.embedding.weight.shape
    embedding, output, bias = model.embedding.weight, model.output.weight, model.output.bias
    before = sum(p.numel() for p in model.parameters())
    if isinstance(returned := attempt(tie, "tie_weights", (model,), {}), Raised):
        return "raised", f"your `tie_weights` raised {returned.kind}: {returned.message}"
    if returned is not model:
        return "not returned", "`tie_weights` must return the model it was given, tied"
    shared = model.output.weight
    if tuple(shared.shape) != (vocab, d_model) or tuple(model.embedding.weight.shape) != (vocab, d_model):
        return "shape", (f"both weights must keep the shape (vocab_size, d_model) = {(vocab, d_model)}, got "
                         f"{tuple(model.embedding.weight.shape)} and {tuple(shared.shape)}")
    if shared is not model.embedding.weight:
        if shared.data_ptr() == model.embedding.weight.data_ptr():
            return "two parameters", ("the layers share their numbers but are two Parameter objects: the model "
                                      "still counts both")
        return "copy", "model.output.weight is not the very Parameter that model.embedding.weight is"
    if shared is not embedding and shared is not output:
        return "new parameter", "the tied weight is a new Parameter: share one of the two existing ones"
    if model.output.bias is not bias:
        return "bias", "the output layer's bias changed: tie only the weight"
    if before - sum(p.numel() for p in model.parameters()) != vocab * d_model:
        return "count", f"expected {vocab * d_model} = vocab_size × d_model fewer parameters after tying"
    ids = torch.randint(0, vocab, (2, 5), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        if not torch.allclose(model(ids), F.linear(F.embedding(ids, shared), shared, model.output.bias), atol=1e-5):
            return "forward", "after tying, the logits are not embedding → output with the shared matrix"
    return None


def check_tie_weights(ns) -> None:
    tie, draw, cases = ns["tie_weights"], Draw(), []
    small_vocab, small_d = draw.distinct(2, 3, 12)
    for vocab, d_model, bias in ((small_vocab, small_d, True), (draw.integer(100, 400), draw.integer(8, 32), True),
                                 (draw.integer(20, 90), draw.integer(4, 16), False)):
        with torch.random.fork_rng(devices=[]):             # the learner's global random state stays as it was
            torch.manual_seed(draw.rng.randrange(2 ** 31))
            model = TinyMLM(vocab, d_model, bias)
        cases.append(Case(f"vocab_size {vocab}, d_model {d_model}" + ("" if bias else ", output layer without bias"),
                          (model,)))
    check_properties(tying_problem, tie, cases)
    for case in cases:               # beyond the tie nothing changes: modes, requires_grad, the bias, E's values
        before = module_state(model := copy.deepcopy(case.args[0]))
        call_learner(tie, "tie_weights", case.description, model)
        check_model_kept(before, model, "model", "tie_weights", case.description,
                         allowed=("output.weight", "embedding.weight"))
        if not any(same_content(model.output.weight.detach(), before["values"][key])
                   for key in ("embedding.weight", "output.weight")):
            raise ExerciseFailure(f"on {case.description}: the shared weight holds neither the embedding's values nor "
                                  "the output layer's: tying shares one of the two existing matrices, unchanged.")


Q1_MISTAKES = (
    Mistake("copy of the values", "the values match but they are two tensors (a copy): after one optimizer step they "
            "drift apart — the symptom above. Assign the Parameter itself (no .data, no .clone())",
            lambda m: (setattr(m.output.weight, "data", m.embedding.weight.data.clone()), m)[1]),
    Mistake("new Parameter from the same numbers", "the layers share their numbers but are two Parameter objects "
            "(as after a .data assignment or a new nn.Parameter): the model counts both and gives each its own "
            "gradient. Assign the embedding's Parameter itself",
            lambda m: (setattr(m.output, "weight", nn.Parameter(m.embedding.weight.data)), m)[1]),
    Mistake("transposed", "nn.Linear(d_model, vocab_size) stores its weight as (out, in) = (vocab_size, d_model), "
            "exactly the embedding's shape: no transpose needed",
            lambda m: (setattr(m.output, "weight", nn.Parameter(m.embedding.weight.t())), m)[1]),
    Mistake("model not returned", "return the model (after tying it)", lambda m: setattr(m.output, "weight",
                                                                                      m.embedding.weight)),
)


# ---------------------------------------------------------------------------- q2: accuracy by fate, predicted first
def accuracy_by_fate(logits, inputs, labels) -> dict[str, float]:
    """The reference: accuracy at the labelled positions showing [MASK], another token, or the label itself."""
    swapped = (inputs != MASK_ID) & (inputs != labels)
    return {"[MASK]": accuracy_at_mask(logits, inputs, labels),
            "random": masked_accuracy(logits, labels.masked_fill(~swapped, IGNORE_INDEX)),
            "unchanged": masked_accuracy(logits, labels.masked_fill(inputs != labels, IGNORE_INDEX))}


def fate_case(draw: Draw, batch: int, seq: int, vocab_size: int, note: str = "") -> Case:
    """Logits, inputs, labels: selected positions in every row but one, every fate at least once."""
    ids = draw.randint(N_SPECIAL_TOKENS, vocab_size, (batch, seq))
    logits = draw.randn(batch, seq, vocab_size)
    inputs, labels = ids.clone(), torch.full((batch, seq), IGNORE_INDEX)
    others = [t for t in range(1, N_SPECIAL_TOKENS) if t != MASK_ID]          # [UNK], [CLS], [SEP], BOS, EOS
    for row, col in zip(draw.randint(0, batch, (seq,)).tolist(), draw.randint(0, seq, (seq,)).tolist()):
        inputs[row, col] = draw.rng.choice(others)                              # unlabelled unless chosen below
    empty = draw.integer(1, batch - 1) if batch > 1 else -1
    for row in (r for r in range(batch) if r != empty):
        chosen = draw.rng.sample(range(seq), draw.integer(1, seq))
        for col in ((0, 1, 2) if row == 0 else ()) + tuple(c for c in chosen if row or c > 2):
            labels[row, col], inputs[row, col] = ids[row, col], ids[row, col]
            fate = ("[MASK]", "random", "unchanged")[col] if row == 0 and col < 3 else (
                "[MASK]" if draw.values.random() < 0.6 else draw.rng.choice(("random", "unchanged")))
            if fate == "[MASK]":
                inputs[row, col] = MASK_ID
            elif fate == "random":             # another real id, or now and then another special id
                inputs[row, col] = draw.rng.choice(others) if col == 1 or draw.values.random() < 0.3 else (
                    ids[row, col] + 1 if ids[row, col] + 1 < vocab_size else N_SPECIAL_TOKENS)
            if draw.values.random() < {"[MASK]": 0.4, "random": 0.2, "unchanged": 0.9}[fate]:
                logits[row, col, ids[row, col]] = logits[row, col].max() + 1.0
    return Case(f"batch {batch}, seq {seq}, vocab_size {vocab_size}" + (f" — {note}" if note else ""),
                (logits, inputs, labels))


def check_accuracy_by_fate(ns) -> None:
    def cases(draw: Draw) -> list[Case]:
        batch, seq, vocab = draw.distinct(3, 3, 12)
        return [fate_case(draw, 1, seq + 2, vocab + 10, "batch 1"), fate_case(draw, batch, seq + 6, vocab + 20),
                fate_case(draw, batch + 3, seq + 9, draw.integer(300, 1000), "a vocabulary larger than 256")]
    checked = cases(draw := Draw())
    check_function(ns["accuracy_by_fate"], accuracy_by_fate, checked, "accuracy_by_fate", probes=checked,
                   forbidden={"the package's course_utils.mlm.accuracy_at_mask": accuracy_at_mask},
                   twins=cases(draw.twin()), atol=1e-6, rtol=1e-6, scales=())


def on_reference(change):                                   # change(the reference's dict, logits, inputs, labels)
    return lambda logits, inputs, labels: change(accuracy_by_fate(logits, inputs, labels), logits, inputs, labels)


def share_right(logits, labels, where) -> float:
    return (logits.argmax(dim=-1)[where] == labels[where]).float().mean().item()


Q2_MISTAKES = (
    Mistake("random counted with unchanged", "your 'random' share also counts the selected tokens left unchanged: a "
            "random position shows a token that is neither [MASK] nor its label (inputs != labels)",
            lambda logits, inputs, labels: {**accuracy_by_fate(logits, inputs, labels), "random": masked_accuracy(
                logits, labels.masked_fill(inputs == MASK_ID, IGNORE_INDEX))}),
    Mistake("unselected positions counted", "your 'random' share counts unselected positions too (their label is "
            "-100, never equal to the input): keep only positions that carry a label",
            lambda logits, inputs, labels: {**accuracy_by_fate(logits, inputs, labels), "random": share_right(
                logits, labels, (inputs != MASK_ID) & (inputs != labels))}),
    Mistake("[MASK] looked up in the labels", "[MASK] never appears in the labels (they hold the original ids): "
            "look for it in the inputs", lambda logits, inputs, labels: {
                **accuracy_by_fate(logits, inputs, labels), "[MASK]": share_right(logits, labels, labels == MASK_ID)},
            shows=lambda case, got, _: isinstance(got, Raised) or (
                isinstance(got, dict) and isinstance(got.get("[MASK]"), float) and math.isnan(got["[MASK]"]))),
    Mistake("random and unchanged swapped", "your 'random' and 'unchanged' values are swapped: unchanged means the "
            "input shows the label itself", on_reference(lambda r, *_: {**r, "random": r["unchanged"],
                                                                         "unchanged": r["random"]})),
    Mistake("percentage", "return fractions between 0 and 1, not percentages",
            on_reference(lambda r, *_: {k: 100 * v for k, v in r.items()})),
    Mistake("error rate", "those are error rates: return the share of *right* predictions",
            on_reference(lambda r, *_: {k: 1 - v for k, v in r.items()})),
)


# ---------------------------------------------------------------------------- q3 (capstone): whole-word masking
FORBIDDEN = {"the package's course_utils.mlm.whole_word_mask": whole_word_mask,
             "the package's course_utils.mlm.mask_tokens": mask_tokens}


def masking_cases(draw: Draw) -> list[Case]:
    """Batches of ``[CLS]`` words of 1-3 pieces ``[SEP]``, then ``[PAD]``: ids, word starts, vocab_size, a seed."""
    vocab = draw.integer(30, 60)
    cases = []
    for note, batch, size, select_prob, max_words, words, empty_row in (
            ("one word", 1, vocab, None, 1, 1, False),
            ("padded rows, one without words", draw.integer(3, 6), vocab, None, 8, None, True),
            ("select_prob 0.01: rows that draw no word", 40, vocab, 0.01, 4, None, False),
            ("a vocabulary larger than 256", 4, draw.integer(300, 1000), 0.3, 10, None, False),
            ("2,000 sentences, select_prob 0.15", 2000, vocab, None, 12, None, False),
            ("2,000 sentences, select_prob 0.5", 2000, vocab, 0.5, 6, None, False)):
        rows, firsts = [], []
        for r in range(batch):
            n_words = 0 if (empty_row and r == batch - 1) else (words or draw.integer(1, max_words))
            bos_eos = r % 2 == 1                                 # BOS (5) and EOS (6) beside the words
            row, first = [2, 5] if bos_eos else [2], [False] * (1 + bos_eos)
            for _ in range(n_words):
                pieces = draw.integer(1, 3)
                row += [draw.integer(N_SPECIAL_TOKENS, size - 1) for _ in range(pieces)]
                first += [True] + [False] * (pieces - 1)
            rows.append(row + ([6, 3] if bos_eos else [3]))
            firsts.append(first + [False] * (1 + bos_eos))
        ids = pad_sequence([torch.tensor(row) for row in rows], batch_first=True)          # [PAD] = 0
        starts = pad_sequence([torch.tensor(first) for first in firsts], batch_first=True)
        cases.append(Case(f"{note} (batch {batch}, vocab_size {size})", (ids, starts, size, draw.values.randrange(
            2 ** 31)), {} if select_prob is None else {"select_prob": select_prob}))
    return cases


def masking_problem(function, case: Case) -> tuple[str, str] | None:
    """``(kind, message)`` of the first property of whole-word masking that ``function`` breaks on ``case``."""
    ids, starts, vocab_size, seed = case.args
    select_prob = case.kwargs.get("select_prob", 0.15)

    def call(generator, given=None):
        return attempt(function, "whole_word_mask", (ids.clone() if given is None else given, starts.clone(),
                                                     vocab_size, generator), dict(case.kwargs), FORBIDDEN)

    got = call(torch.Generator().manual_seed(seed), given := ids.clone())
    if isinstance(got, Raised):
        return "raised", f"your `whole_word_mask` raised {got.kind}: {got.message}"
    if not torch.equal(given, ids):
        return "ids changed", "`ids` changed: build the outputs with out-of-place operations (masked_fill, where)"
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)
            and all(t.shape == ids.shape and t.dtype == torch.long for t in got)):
        return "type", f"return `(inputs, labels)`, two torch.long tensors of the shape of ids {tuple(ids.shape)}"
    inputs, labels = got
    real, labelled = ids >= N_SPECIAL_TOKENS, labels != IGNORE_INDEX
    if (labelled & ~real).any():
        return "special", "a special token ([CLS], [SEP], [PAD]) got a label: only real pieces (ids ≥ 7) are chosen"
    if not torch.equal(labels[labelled], ids[labelled]):
        return "labels", "a label is not the original id of its position: labels hold `ids` where chosen"
    if real.sum() > 50 and select_prob < 1 and labelled[real].all():
        return "all labelled", "every real piece got a label: label only the chosen words, -100 elsewhere"
    changed = inputs != ids
    if (changed & ~labelled).any():
        return "unlabelled changed", "a position without a label changed: only chosen pieces are corrupted"
    odd = inputs[changed & (inputs != MASK_ID)]
    if ((odd < N_SPECIAL_TOKENS) | (odd >= vocab_size)).any():
        return "replacement range", f"a random replacement is outside [7, {vocab_size}): draw real ids only"
    word = (starts & real).long().cumsum(1).masked_fill(~real, 0)                 # each piece's word number
    key = (torch.arange(len(ids))[:, None] * (ids.size(1) + 1) + word)[word > 0]  # one key per (row, word)
    pieces = torch.bincount(key, minlength=len(ids) * (ids.size(1) + 1))
    chosen = torch.bincount(key, weights=labelled[word > 0].double(), minlength=len(pieces))
    if ((chosen > 0) & (chosen < pieces)).any():
        only_start = bool((labelled & ~starts).sum() == 0)
        return ("starts only" if only_start else "word split"), (
            "only the first piece of a word got chosen; choose all its pieces" if only_start else
            "a word was chosen in part: its pieces are chosen together or not at all")
    if ((word > 0).any(1) & ~labelled.any(1)).any():
        return "row without a word", "a row with words got none chosen: such a row gets one word, chosen at random"
    n_words = (starts & real).sum(1).double()
    if len(ids) >= 1000:
        none = (1 - select_prob) ** n_words
        expected = float((n_words * select_prob + none).sum())
        spread = math.sqrt(float((n_words * select_prob * (1 - select_prob) + none * (1 - none)).sum()))
        chosen = float((starts & labelled).sum())
        if abs(chosen - expected) > 6 * spread + 1:
            return "select rate", (f"{chosen:.0f} words chosen where select_prob={select_prob} gives about "
                                   f"{expected:.0f}: choose each word with probability select_prob")
        n = int(labelled.sum())
        masked = float((inputs[labelled] == MASK_ID).double().mean())
        kept_share = float((inputs[labelled] == ids[labelled]).double().mean())
        if abs(masked - 0.8) > 6 * math.sqrt(0.16 / n) + 1e-3 or abs(kept_share - 0.1) > 6 * math.sqrt(0.09 / n) + 0.01:
            return "corruption", (f"of the chosen pieces {masked:.1%} show [MASK] and {kept_share:.1%} keep their id: "
                                  "BERT's 80 % [MASK], 10 % a random real id, 10 % unchanged")
        first = call(torch.Generator().manual_seed(seed))
        torch.rand(17)                                          # moves the global generator on
        again = call(torch.Generator().manual_seed(seed))
        if Raised in (type(first), type(again)) or not all(torch.equal(a, b) for a, b in zip(first, again)):
            return "generator", "two generators seeded alike gave different masks: use generator=generator throughout"
        other = call(torch.Generator().manual_seed(seed + 1))
        if not isinstance(other, Raised) and all(torch.equal(a, b) for a, b in zip(first, other)):
            return "generator", "generators seeded differently gave the same masks: draw from the generator given"
    return None


def check_whole_word_mask(ns) -> None:
    function, draw = ns["whole_word_mask"], Draw()
    check_properties(masking_problem, function, masking_cases(draw), probe_others=True)
    where, drawn = "64 rows of 30 pieces, vocab_size 12, select_prob 0.5", []   # the random ids: every one in [7, 12)
    ids = torch.cat([torch.full((64, 1), 2), draw.randint(N_SPECIAL_TOKENS, 12, (64, 30)), torch.full((64, 1), 3)], 1)
    starts = ((draw.randint(0, 2, ids.shape) == 1) | (torch.arange(32) == 1)) & (ids >= N_SPECIAL_TOKENS)
    for seed in range(4):
        inputs, _ = call_learner(function, "whole_word_mask", where, ids.clone(), starts.clone(), 12,
                                 torch.Generator().manual_seed(seed), select_prob=0.5, forbidden=FORBIDDEN)
        drawn.append(inputs[(inputs != ids) & (inputs != MASK_ID)])
    check_support(torch.cat(drawn), N_SPECIAL_TOKENS, 12, "whole_word_mask", where, "random replacement ids")


def after_mask(change):                                     # change(ids, starts, generator, vocab_size, *reference)
    return lambda ids, starts, vocab_size, generator, select_prob=0.15: change(
        ids, starts, generator, vocab_size, *whole_word_mask(ids, starts, vocab_size, generator, select_prob))


def reference_with(**planted):                              # the reference with some arguments planted
    return lambda ids, starts, vocab_size, generator, select_prob=0.15: whole_word_mask(
        ids, starts, vocab_size, **{"generator": generator, "select_prob": select_prob, **planted})


def no_forced_word(ids, starts, vocab_size, generator, select_prob=0.15):
    first = torch.Generator().set_state(generator.get_state())
    drew = (starts & (ids >= N_SPECIAL_TOKENS) & (torch.rand(ids.shape, generator=first) < select_prob)).any(1)
    inputs, labels = whole_word_mask(ids, starts, vocab_size, generator, select_prob)
    return torch.where(drew[:, None], inputs, ids), labels.masked_fill(~drew[:, None], IGNORE_INDEX)


Q3_MISTAKES = (
    Mistake("pieces chosen one by one", "each piece was chosen on its own, as in BERT's masking: choose *words* — a "
            "word's pieces are chosen together or not at all", lambda ids, starts, vocab_size, generator,
            select_prob=0.15: mask_tokens(ids, vocab_size, generator, select_prob)),
    Mistake("first piece only", "only the first piece of each chosen word is chosen: spread the choice to every piece "
            "up to the next start", after_mask(lambda ids, starts, g, v, inputs, labels: (
                torch.where(starts, inputs, ids), labels.masked_fill(~starts, IGNORE_INDEX)))),
    Mistake("specials chosen", "a special token got chosen: words are made of real pieces (ids ≥ 7) only",
            reference_with(first_real_id=1)),
    Mistake("no word forced", "a row with words ended with none chosen: give such a row one word, chosen at random",
            no_forced_word),
    Mistake("select_prob hard-coded", "the share of words chosen ignores `select_prob`: use the argument, not 0.15",
            reference_with(select_prob=0.15)),
    Mistake("every chosen piece [MASK]", "every chosen piece shows [MASK]: BERT keeps 10 % and swaps 10 % for a "
            "random real id", reference_with(mask_prob=1.0, random_prob=0.0)),
    Mistake("random ids from the whole vocabulary", "a random replacement was a special id: draw from "
            "[7, vocab_size), torch.randint(7, vocab_size, ...)", after_mask(lambda ids, starts, g, v, inputs, labels: (
                torch.where((inputs != ids) & (inputs != MASK_ID), torch.randint(0, v, ids.shape, generator=g),
                            inputs), labels))),
    Mistake("generator ignored", "the masks do not follow the generator: pass generator=generator to every random "
            "draw", reference_with(generator=None)),
    Mistake("labels everywhere", "every real piece got a label: -100 wherever the piece was not chosen", after_mask(
        lambda ids, starts, g, v, inputs, labels: (inputs, ids.masked_fill(ids < N_SPECIAL_TOKENS, IGNORE_INDEX)))),
    Mistake("ids changed in place", "`ids` changed: build the outputs out of place",
            after_mask(lambda ids, starts, g, v, inputs, labels: (ids.copy_(inputs), labels))),
)


# ---------------------------------------------------------------------------- the exercises
q1 = Exercise(
    name="Tie the output layer to the embedding", variables=("tie_weights",), checker=check_tie_weights,
    hints=("The draft made the two matrices *equal*. Tying makes them *one*: what does the optimizer see when the two "
           "layers hold the same Parameter object?", "Assign the embedding's weight Parameter itself (not its .data, "
           "not a clone, not a new nn.Parameter) to the output layer's weight attribute; return the model."),
    solution=solution_of("lesson06", "tie_weights"), mistakes=Q1_MISTAKES,
    success="Correct! One matrix now both reads tokens in and scores them out; the symptom is gone.")

q2 = Exercise(
    name="Accuracy by fate", variables=("accuracy_by_fate",), checker=check_accuracy_by_fate,
    hints=("Only labelled positions count (labels != -100). There, the input shows 4 ([MASK]), the label itself "
           "(unchanged), or another token (random).", "predicted = logits.argmax(dim=-1); for each fate a boolean "
           "`where`, then (predicted[where] == labels[where]).float().mean().item(); return the three in a dict."),
    solution=solution_of("lesson06", "accuracy_by_fate"), mistakes=Q2_MISTAKES,
    success="Correct! Now run the next cell and compare with your prediction.")

q3 = Exercise(
    name="Capstone: whole-word masking", variables=("whole_word_mask",), checker=check_whole_word_mask,
    hints=("Number the words: a running count of the starts along each row gives every piece the number of its word. "
           "Choose words by drawing at their starts, then look the choice up for every piece.",
           "real = ids ≥ 7; starts &= real; picked = starts & (uniform < select_prob); a row with starts but no pick "
           "takes its start of largest uniform score; word = cumsum of starts; scatter the picks into chosen[row, "
           "word], gather chosen[row, word[piece]] for every real piece; labels and 80/10/10 as in section 3."),
    solution=solution_of("lesson06", "whole_word_mask"), mistakes=Q3_MISTAKES,
    success="Correct! Words are chosen whole, at the rate asked, and corrupted 80/10/10.",
    task=("**Capstone — whole-word masking.** In section 2, `'ess'` stood between `'ec'` and `'ary'` in all 29 "
          "training sentences: a hidden piece is often given away by the rest of its own word. So BERT's later "
          "release masks *whole words*: all pieces of a chosen word at once.\n\n"
          "Write `whole_word_mask(ids, starts, vocab_size, generator, select_prob=0.15)`:\n\n"
          "* `ids (batch, seq)` torch.long (`[CLS] … [SEP]`, then `[PAD]`); `starts (batch, seq)` bool, True at each "
          "word's first piece (`mlm.word_starts(tokenizer, ids)`: a row's first real piece and every piece that "
          "begins with a space). A word is a start and the real pieces after it, up to the next start (a running "
          "count of the starts numbers them).\n"
          "* Choose each word with probability `select_prob`, all its pieces together; a row with words that drew "
          "none gets one, at random. Special tokens (ids < 7) are never chosen.\n"
          "* Return `(inputs, labels)` as `my_mask_tokens` does (80/10/10 on every chosen piece; −100 where not "
          "chosen); every random number from `generator`; `ids` unchanged.\n\n"
          "Checked on random batches. Stuck? `q3.solution()`, or `from course_utils.mlm import whole_word_mask`."),
    starter="def whole_word_mask(ids, starts, vocab_size, generator, select_prob=0.15):\n"
            "    raise NotImplementedError  # return inputs, labels\n")
