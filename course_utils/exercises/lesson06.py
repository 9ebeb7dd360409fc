"""Exercises of notebook 06 (masked language modelling): BERT's 80/10/10 corruption, masked accuracy, weight tying,
and two capstones — BERT masking start to finish (compared token for token with ``course_utils.mlm.mask_tokens``
from an identically seeded generator: the task states the order of the draws) and the masked-LM loss (compared with
``course_utils.losses.masked_lm_loss``, gradients included).

Every check draws fresh random inputs (:class:`~.asserts.Draw`; ``COURSE_CHECK_SEED`` fixes them): batch 1 with a
single token, rows with different numbers of selected positions (none in one row, all in another), vocabularies
larger than 256, and — for the corruption — large batches whose shares are tested with a bound of about six
standard deviations, so that a right answer is never refused by chance.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..mlm import IGNORE_INDEX
from ..tokenization import BOS_ID, CLS_ID, EOS_ID, MASK_ID, N_SPECIAL_TOKENS, PAD_ID, SEP_ID, UNK_ID
from .asserts import (
    Case,
    Draw,
    Raised,
    attempt,
    call_learner,
    call_own,
    check_function,
    check_generator_use,
    check_inputs_kept,
    check_untouched,
    close,
    difference,
    max_difference,
    snapshot,
    state_of,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of

# ---------------------------------------------------------------------------- q1: 80/10/10 corruption

def selection_batch(draw: Draw, batch: int, seq: int, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, selected)`` of shape ``(batch, seq)``: [CLS] real tokens [SEP] then padding (row 0 without padding,
    the others of random lengths, an occasional [UNK]/[BOS]/[EOS] inside), and a selection of real tokens whose share
    differs per row — none in one row, all in another."""
    ids = draw.randint(N_SPECIAL_TOKENS, vocab_size, (batch, seq))
    ids[:, 0] = CLS_ID
    for row in range(batch):
        length = seq if row == 0 else draw.integer(min(3, seq), seq)
        ids[row, length - 1] = SEP_ID
        ids[row, length:] = PAD_ID
    if seq > 4:
        others = draw.randint(0, 50, (batch, seq)) == 0          # a few other specials among the real tokens
        specials = torch.tensor([UNK_ID, BOS_ID, EOS_ID])[draw.randint(0, 3, (batch, seq))]
        ids = torch.where(others & (ids >= N_SPECIAL_TOKENS), specials, ids)
    shares = torch.tensor([draw.rng.random() for _ in range(batch)])
    if batch >= 3:
        shares[draw.integer(0, batch - 1)] = 0.0                  # a row with nothing selected
        shares[draw.integer(0, batch - 1)] = 1.0                  # (usually) a row with every real token selected
    selected = (ids >= N_SPECIAL_TOKENS) & (torch.rand(batch, seq, generator=draw.generator()) < shares[:, None])
    return ids, selected


def corrupt_case(draw: Draw, batch: int, seq: int, vocab_size: int, note: str = "") -> Case:
    ids, selected = selection_batch(draw, batch, seq, vocab_size)
    counts = selected.sum(1).tolist()
    shown = ", ".join(str(c) for c in counts[:8]) + (", …" if len(counts) > 8 else "")
    description = (f"batch {batch}, seq {seq}, vocab_size {vocab_size} (selected per row: {shown})"
                   + (f" — {note}" if note else ""))
    return Case(description, (ids, selected, vocab_size))


def corrupt_cases(draw: Draw) -> list[Case]:
    """Exact-contract cases, smallest first: one selected token; rows with different numbers of selected tokens;
    a vocabulary larger than 256 whose ids span it."""
    batch, seq = draw.distinct(2, 4, 12)
    single_ids = torch.tensor([[CLS_ID, draw.integer(N_SPECIAL_TOKENS, 39), SEP_ID]])
    wide = draw.integer(300, 3000)
    spanning = corrupt_case(draw, batch + 4, seq + 10, wide, "ids span the vocabulary")
    ids, selected, _ = spanning.args
    ids[0, 1], ids[0, 2] = N_SPECIAL_TOKENS, wide - 1                # the lowest and the highest real id
    selected[0, 1] = selected[0, 2] = True
    return [
        Case("batch 1, seq 3 ([CLS] token [SEP]), vocab_size 40 — a single selected token",
             (single_ids, torch.tensor([[False, True, False]]), 40)),
        corrupt_case(draw, batch, seq, draw.integer(20, 200)),
        spanning,
    ]


def split_result(result, case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    """The learner's ``(inputs, labels)``, after checking it is a pair of tensors of the shape of ``ids``."""
    ids = case.args[0]
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise ExerciseFailure(f"on {case.description}: return a pair `(inputs, labels)`, got "
                              f"{type(result).__name__}.")
    inputs, labels = result
    if not (isinstance(inputs, torch.Tensor) and isinstance(labels, torch.Tensor)):
        raise ExerciseFailure(f"on {case.description}: `inputs` and `labels` should both be torch tensors, got "
                              f"{type(inputs).__name__} and {type(labels).__name__}.")
    if inputs.shape != ids.shape or labels.shape != ids.shape:
        raise ExerciseFailure(f"on {case.description}: `inputs` and `labels` need the shape of `ids` "
                              f"{tuple(ids.shape)}, got {tuple(inputs.shape)} and {tuple(labels.shape)}.")
    return inputs, labels


def corrupt_error_hint(error: BaseException) -> str | None:
    message = str(error)
    if "invalid for input of size" in message or "must match the size" in message:
        return ("Rows hold different numbers of selected positions: work on whole (batch, seq) tensors with "
                "boolean masks (torch.where, masked_fill), not on a (batch, k) view of the selected ids")
    return None


def corrupting_every_token(corrupt_selected):
    """``ids ->`` the learner's ``corrupt_selected`` (q1) output with every token selected, vocabulary 500."""
    return lambda ids: corrupt_selected(ids, torch.ones_like(ids, dtype=torch.bool), 500,
                                        torch.Generator().manual_seed(0))[0]


def masking_every_token(mask_tokens):
    """``ids ->`` the learner's ``mask_tokens`` (the capstone) inputs with every token selected, vocabulary 500."""
    return lambda ids: mask_tokens(ids, 500, seeded(0), 1.0)[0]


def dominant_replacement(corrupt_all, changed: torch.Tensor) -> int | None:
    """The id that replaces most corrupted tokens when it is not [MASK] (a wrong mask id), judged on ``changed`` or,
    when that holds too few tokens, on a probe batch: ``corrupt_all(ids)`` returns the learner's corrupted ``ids``
    with every token selected. ``None`` when [MASK] or nothing dominates."""
    if len(changed) < 20:
        ids = torch.arange(100, 420).view(16, 20)
        try:
            corrupted = corrupt_all(ids.clone())
            changed = corrupted[corrupted != ids]
        except Exception:  # noqa: BLE001 - a diagnosis is a bonus: the plain message is reported instead
            return None
    if not isinstance(changed, torch.Tensor) or len(changed) < 20:
        return None
    common = int(torch.mode(changed).values)
    return common if common != MASK_ID and int((changed == common).sum()) > len(changed) / 2 else None


def run_corrupt(function, case: Case, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Call the learner's ``corrupt_selected`` on ``case`` and check what must hold whatever the random draws:
    inputs kept, labels exact, unselected positions untouched, every corrupted id [MASK] or a real token."""
    from ..mlm import mask_tokens

    ids, selected, vocab_size = case.args
    args = (ids.clone(), selected.clone())
    before = {"ids": snapshot(args[0]), "selected": snapshot(args[1])}
    result = call_own(function, "corrupt_selected", case.description, *args, vocab_size, generator,
                      forbidden={"the package's course_utils.mlm.mask_tokens": mask_tokens},
                      error_hint=corrupt_error_hint)
    check_inputs_kept(before, {"ids": args[0], "selected": args[1]}, "corrupt_selected", case.description)
    inputs, labels = split_result(result, case)
    where = f"on {case.description}"
    expected = ids.masked_fill(~selected, IGNORE_INDEX)
    gap = difference(labels, expected, "`labels`")
    if gap:
        if labels.shape == ids.shape and not labels.is_complex() and torch.equal(labels.long(), expected):
            raise ExerciseFailure(f"{where}: {gap}.")           # right values, wrong dtype
        if torch.equal(inputs, expected):
            raise ExerciseFailure(f"{where}: the pair comes back swapped: return `(inputs, labels)`, the corrupted "
                                  "ids first.")
        if labels.shape == ids.shape and torch.equal(labels.long(), ids.masked_fill(~selected | (inputs == ids),
                                                                                    IGNORE_INDEX)):
            raise ExerciseFailure(f"{where}: you labelled only the positions that changed: every *selected* "
                                  "position gets its original id as label, also those left unchanged (the model "
                                  "must learn to trust a visible token too).")
        if labels.shape == ids.shape and torch.equal(labels.long(), ids):
            raise ExerciseFailure(f"{where}: labels equal `ids` everywhere: the loss would also train on the "
                                  "unselected tokens, which the model can simply copy. Put -100 where `selected` "
                                  "is False.")
        if torch.equal(labels[selected].long(), inputs[selected].long()) and \
                not torch.equal(labels[selected].long(), ids[selected]):
            raise ExerciseFailure(f"{where}: your labels are the *corrupted* ids (many are [MASK] = 4). The label "
                                  "is what the model must recover: the *original* id. Build labels from `ids`.")
        if not labels.dtype.is_floating_point and (labels[~selected] != IGNORE_INDEX).any():
            raise ExerciseFailure(f"{where}: positions that were not selected must have the label -100 "
                                  f"(ignore_index); {gap}.")
        raise ExerciseFailure(f"{where}: {gap} (labels = the original id where selected, -100 elsewhere, as "
                              "torch.long).")
    if inputs.dtype != torch.long:
        raise ExerciseFailure(f"{where}: `inputs` should be token ids as torch.long like `ids`, got {inputs.dtype}.")
    if not torch.equal(inputs[~selected], ids[~selected]):
        raise ExerciseFailure(f"{where}: only selected positions may change; [CLS], [SEP], padding and "
                              "unselected tokens must stay as they are.")
    chosen, original = inputs[selected], ids[selected]
    replaced = chosen[(chosen != MASK_ID) & (chosen != original)]
    if len(replaced) and (int(replaced.min()) < N_SPECIAL_TOKENS or int(replaced.max()) >= vocab_size):
        common = dominant_replacement(corrupting_every_token(function), chosen[chosen != original])
        if common is not None:
            raise ExerciseFailure(f"{where}: most corrupted tokens become id {common}, but [MASK] has id 4 in this "
                                  "course's vocabulary: replace with 4.")
    if len(replaced) and int(replaced.min()) < N_SPECIAL_TOKENS:
        raise ExerciseFailure(f"{where}: a selected token became id {int(replaced.min())}: a random replacement "
                              f"must be a real token, id in [{N_SPECIAL_TOKENS}, vocab_size) (special ids such as "
                              "[PAD] would confuse the padding mask), and [MASK] has id 4.")
    if len(replaced) and int(replaced.max()) >= vocab_size:
        raise ExerciseFailure(f"{where}: a selected token became id {int(replaced.max())}, outside the vocabulary "
                              f"(vocab_size {vocab_size}): draw random tokens from [{N_SPECIAL_TOKENS}, vocab_size) "
                              "with the vocab_size argument, not a fixed size.")
    return inputs, labels


def six_sigma(share: float, n: int) -> float:
    """A bound that a right answer's observed share exceeds with probability below 1e-8 (six standard deviations
    of a binomial proportion, plus a little slack)."""
    return 6 * math.sqrt(max(share * (1 - share), 1e-4) / n) + 0.002


def check_shares(function, case: Case, draw: Draw) -> None:
    """On a large batch: [MASK] / random / unchanged shares of the selected tokens near 80 / 10 / 10, and random
    replacements spread over the whole range [7, vocab_size)."""
    ids, selected, vocab_size = case.args
    inputs, _ = run_corrupt(function, case, draw.generator())
    chosen, original = inputs[selected], ids[selected]
    n, n_real = len(chosen), vocab_size - N_SPECIAL_TOKENS
    counts = {"[MASK]": int((chosen == MASK_ID).sum()), "unchanged": int((chosen == original).sum())}
    counts["random"] = n - counts["[MASK]"] - counts["unchanged"]
    # a random replacement equals the original with probability 1/n_real: it then counts as unchanged
    targets = {"[MASK]": 0.8, "random": 0.1 * (1 - 1 / n_real), "unchanged": 0.1 + 0.1 / n_real}
    report = ", ".join(f"{name} {count / n:.1%}" for name, count in counts.items())
    where = f"on {case.description}, {n} selected tokens"
    if max(counts.values()) >= 0.99 * n:
        always_masked = counts["[MASK]"] == n
        for seed in range(40):  # one draw for the whole batch gives another fate with some seed
            if not always_masked:
                break
            chosen_again = run_corrupt(function, case, torch.Generator().manual_seed(seed))[0][selected]
            always_masked = bool((chosen_again == MASK_ID).all())
        if always_masked:
            raise ExerciseFailure(f"{where}: every selected token became [MASK] ({report}). BERT keeps 10 % "
                                  "unchanged and swaps 10 % for a random token, so the model cannot tell which "
                                  "visible tokens to fix.")
        raise ExerciseFailure(f"{where}: all selected tokens got the same treatment ({report}): one random number "
                              "decided for the whole batch. Draw one uniform number per position (a tensor of the "
                              "shape of ids).")
    common = dominant_replacement(corrupting_every_token(function), chosen[chosen != original])
    if common is not None:
        raise ExerciseFailure(f"{where}: most corrupted tokens became id {common}, but [MASK] has id 4 in this "
                              "course's vocabulary: replace with 4.")
    for name, target in targets.items():
        if abs(counts[name] / n - target) > six_sigma(target, n):
            raise ExerciseFailure(f"{where}: you made {report}; aim for 80 % / 10 % / 10 %. Draw ONE uniform "
                                  "number u per position: u < 0.8 → [MASK], 0.8 ≤ u < 0.9 → random, else unchanged "
                                  "(two independent draws do not give 10 % / 10 %).")
    replaced = chosen[(chosen != MASK_ID) & (chosen != original)].double()
    if len(replaced) > 100:
        centre = (N_SPECIAL_TOKENS + vocab_size - 1) / 2
        spread = math.sqrt((n_real ** 2 - 1) / 12 / len(replaced))
        if abs(float(replaced.mean()) - centre) > 6 * spread + 0.5:
            raise ExerciseFailure(f"{where}: the random replacements average {float(replaced.mean()):.1f}, but ids "
                                  f"drawn uniformly from [{N_SPECIAL_TOKENS}, {vocab_size}) average {centre:.1f}: "
                                  "draw them from the whole range [7, vocab_size) with the vocab_size argument.")


def check_uniform_replacements(function, draw: Draw) -> None:
    """Small vocabulary, every position selected, ids mostly one token: each real id must come up as a random
    replacement about as often as uniform draws from [7, vocab_size) make it — not never (an exclusive upper
    bound passed as vocab_size - 1), not in proportion to the batch's own tokens."""
    n_real = draw.integer(5, 8)
    vocab_size = N_SPECIAL_TOKENS + n_real
    ids = torch.full((96, 96), N_SPECIAL_TOKENS)
    others = draw.randint(0, 10, (96, 96)) == 0
    ids = torch.where(others, draw.randint(N_SPECIAL_TOKENS + 1, vocab_size, (96, 96)), ids)
    selected = torch.ones(96, 96, dtype=torch.bool)
    case = Case(f"batch 96, seq 96, vocab_size {vocab_size}, every token selected, 90 % of them id "
                f"{N_SPECIAL_TOKENS}", (ids, selected, vocab_size))
    inputs, _ = run_corrupt(function, case, draw.generator())
    for token in range(N_SPECIAL_TOKENS, vocab_size):
        seen = int(((inputs == token) & (ids != token)).sum())
        expected = 0.1 / n_real * int((ids != token).sum())
        if abs(seen - expected) > 6 * math.sqrt(expected) + 3:
            if seen == 0 and token == vocab_size - 1:
                detail = ("id vocab_size - 1 never came up: torch.randint's upper bound is exclusive, so pass "
                          "vocab_size itself")
            elif seen == 0:
                detail = f"id {token} never came up: the range must start at {N_SPECIAL_TOKENS}, the first real id"
            else:
                detail = ("draw them uniformly from [7, vocab_size) (torch.randint with the generator), not from the "
                          "batch's own tokens or another distribution")
            raise ExerciseFailure(f"on {case.description}: id {token} became a random replacement {seen} times where "
                                  f"uniform draws give about {expected:.0f}: the random replacements are not uniform "
                                  f"over [7, vocab_size) — {detail}.")


def check_corrupt_selected(ns) -> None:
    function = ns["corrupt_selected"]
    draw = Draw()
    cases = corrupt_cases(draw)
    for case in cases:
        run_corrupt(function, case, draw.generator())
    check_shares(function, corrupt_case(draw, 384, 128, draw.integer(300, 3000), "a large batch for the 80/10/10 "
                                                                                 "shares"), draw)
    check_uniform_replacements(function, draw)
    largest = cases[-1]
    check_generator_use(lambda generator: run_corrupt(function, largest, generator), "corrupt_selected",
                        largest.description)


# ---------------------------------------------------------------------------- q2: masked accuracy

def accuracy_case(draw: Draw, batch: int, seq: int, vocab_size: int, note: str = "",
                  single: bool = False) -> Case:
    """Logits ``(batch, seq, vocab_size)`` and labels with -100 except at selected positions; each row has its own
    number of selected positions (none in one) and its own hit rate, and labels span the vocabulary (0 too)."""
    logits = draw.randn(batch, seq, vocab_size)
    predictions = logits.argmax(-1)
    labels = torch.full((batch, seq), IGNORE_INDEX)
    if single:
        labels[0, 0] = predictions[0, 0]
    else:
        empty = draw.integer(0, batch - 1)
        for row in range(batch):
            if row == empty:
                continue
            positions = draw.rng.sample(range(seq), draw.integer(1, seq))
            hit_rate = draw.values.random()                   # values, not sizes: a twin draw gets other hits
            for col in positions:
                if draw.values.random() < hit_rate:
                    labels[row, col] = predictions[row, col]
                else:
                    labels[row, col] = (predictions[row, col] + draw.integer(1, vocab_size - 1)) % vocab_size
        first = [r for r in range(batch) if r != empty][0]
        col = int((labels[first] != IGNORE_INDEX).nonzero()[0])
        logits[first, col, 0] = logits[first, col].max() + 1.0      # a right prediction of id 0
        labels[first, col] = 0
    counts = (labels != IGNORE_INDEX).sum(1).tolist()
    shown = ", ".join(str(c) for c in counts)
    description = (f"batch {batch}, seq {seq}, vocab_size {vocab_size} (selected per row: {shown})"
                   + (f" — {note}" if note else ""))
    return Case(description, (logits, labels))


def accuracy_cases(draw: Draw) -> list[Case]:
    batch, seq, vocab = draw.distinct(3, 3, 12)
    return [
        accuracy_case(draw, 1, 1, vocab + 5, "a single selected position", single=True),
        accuracy_case(draw, batch, seq, vocab + 13),
        accuracy_case(draw, batch + 3, seq + 7, draw.integer(300, 1000), "a vocabulary larger than 256"),
    ]


def check_masked_accuracy(ns) -> None:
    from ..mlm import masked_accuracy

    draw = Draw()
    cases = accuracy_cases(draw)
    check_function(ns["masked_accuracy"], masked_accuracy, cases, "masked_accuracy", probes=cases,
                   forbidden={"the package's course_utils.mlm.masked_accuracy": masked_accuracy},
                   twins=accuracy_cases(draw.twin()), atol=1e-6, rtol=1e-6)


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    from ..mlm import masked_accuracy

    return masked_accuracy(logits, labels)


def row_means(logits: torch.Tensor, labels: torch.Tensor) -> float:
    rows = [accuracy(logits[r:r + 1], labels[r:r + 1]) for r in range(len(labels)) if (labels[r] != IGNORE_INDEX).any()]
    return sum(rows) / len(rows)


def raised(*texts: str):
    return lambda case, got, _: isinstance(got, Raised) and any(text in got.message for text in texts)


LABEL_ZERO = "label 0 is a real token id: only -100 marks a position that was not selected (labels != -100)"
ACCURACY_MISTAKES = (
    Mistake("counts hits over all positions", "you divided by every position; divide by the number of selected "
            "positions, those with labels != -100", variant=lambda logits, labels: accuracy(logits, labels) * float(
                (labels != IGNORE_INDEX).sum()) / labels.numel()),
    Mistake("percentage", "return a fraction between 0 and 1, not a percentage",
            variant=lambda logits, labels: 100 * accuracy(logits, labels)),
    Mistake("mean of the per-row accuracies", "you averaged the accuracy of each row, but rows hold different numbers "
            "of selected positions: count the hits over all selected positions together and divide by their total "
            "number", variant=row_means),
    Mistake("labels > 0 as the mask", LABEL_ZERO, variant=lambda logits, labels: accuracy(
        logits, labels.masked_fill(labels == 0, IGNORE_INDEX)) if (labels > 0).any() else float("nan"),
        shows=lambda case, got, _: isinstance(got, float) and math.isnan(got) and bool((case.args[1] == 0).any())),
    Mistake("error rate", "that is the error rate: return the share of *right* predictions",
            variant=lambda logits, labels: 1 - accuracy(logits, labels)),
    Mistake("max instead of argmax", "got 0: compare the arg-max position over the *last* axis (the vocabulary), "
            "logits.argmax(dim=-1), with the labels — not the largest score itself",
            variant=lambda logits, labels: 0.0, shows=lambda case, got, _: got == 0.0),
    Mistake("arg-max over the sequence axis", "take the arg-max over the last axis (the vocabulary): "
            "logits.argmax(dim=-1) has the shape of labels",
            variant=lambda logits, labels: logits.argmax(1)[labels != IGNORE_INDEX],
            shows=raised("must match the size", "shape mismatch", "does not match the shape")),
    Mistake("vocabulary size hard-coded", "take every size from the tensors themselves (logits.size(-1), …), never a "
            "fixed number", variant=lambda logits, labels: logits.view(-1, 50),
            shows=raised("is invalid for input of size")),
)


# ---------------------------------------------------------------------------- q3: weight tying

class TinyMLM(nn.Module):
    """Embedding → linear output layer: the two matrices weight tying shares."""

    def __init__(self, vocab_size: int = 120, d_model: int = 16, bias: bool = True) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.output = nn.Linear(d_model, vocab_size, bias=bias)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.output(self.embedding(ids))


def tying_cases(draw: Draw) -> list[tuple[str, TinyMLM]]:
    small_vocab, small_d = draw.distinct(2, 3, 12)
    cases = []
    for vocab, d_model, bias in ((small_vocab, small_d, True), (draw.integer(100, 400), draw.integer(8, 32), True),
                                 (draw.integer(20, 90), draw.integer(4, 16), False)):
        with torch.random.fork_rng(devices=[]):             # the learner's global random state stays as it was
            torch.manual_seed(draw.rng.randrange(2 ** 31))
            model = TinyMLM(vocab, d_model, bias)
        cases.append((f"vocab_size {vocab}, d_model {d_model}" + ("" if bias else ", output layer without bias"),
                      model))
    return cases


def tying_error_hint(error: BaseException) -> str | None:
    if "cannot assign" in str(error):
        return ("A module's weight must be an nn.Parameter: assign the other layer's Parameter itself (no .T, "
                ".data or .detach(): those are plain tensors)")
    return None


def check_tied(tie, description: str, model: TinyMLM) -> None:
    where = f"on {description}"
    vocab, d_model = model.embedding.weight.shape
    embedding, output, bias = (model.embedding.weight, model.output.weight, model.output.bias)
    values = {"embedding": embedding.detach().clone(), "output": output.detach().clone()}
    before = sum(p.numel() for p in model.parameters())
    state = state_of(model)
    returned = call_learner(tie, "tie_weights", description, model, error_hint=tying_error_hint)
    if returned is None:
        raise ExerciseFailure(f"{where}: `tie_weights` returned None: return the model (after tying it).")
    if returned is not model:
        raise ExerciseFailure(f"{where}: `tie_weights` returned {type(returned).__name__}, not the model it was "
                              "given: tie the model's own layers and return that model.")
    shared = model.output.weight
    if tuple(model.embedding.weight.shape) != (vocab, d_model):
        raise ExerciseFailure(f"{where}: the embedding table must keep its shape (vocab_size, d_model) = "
                              f"{(vocab, d_model)}, got {tuple(model.embedding.weight.shape)}: the output layer's "
                              "weight already has that shape — no transpose needed.")
    if tuple(shared.shape) != (vocab, d_model):
        raise ExerciseFailure(f"{where}: the output weight must keep its shape (vocab_size, d_model) = "
                              f"{(vocab, d_model)}, got {tuple(shared.shape)}: nn.Linear stores (out, in), exactly "
                              "the embedding's (vocab_size, d_model) — no transpose needed.")
    if shared is not model.embedding.weight:
        if shared.data_ptr() == model.embedding.weight.data_ptr():
            raise ExerciseFailure(f"{where}: the two layers share their numbers but remain two Parameter objects "
                                  "(.data, or a new nn.Parameter around the other's tensor): the model still counts "
                                  "both, each gets its own gradient and optimizer state. Assign the Parameter "
                                  "itself from one layer to the other.")
        if torch.equal(shared.detach(), model.embedding.weight.detach()):
            raise ExerciseFailure(f"{where}: the values match but they are two separate tensors (a copy): after one "
                                  "optimizer step they drift apart. Assign the *Parameter* itself, not its values.")
        raise ExerciseFailure(f"{where}: model.output.weight should be the very same Parameter as "
                              "model.embedding.weight.")
    if not isinstance(shared, nn.Parameter) or not shared.requires_grad:
        raise ExerciseFailure(f"{where}: the shared weight must stay a trainable nn.Parameter (requires_grad=True).")
    if shared is not embedding and shared is not output:
        raise ExerciseFailure(f"{where}: the tied weight is a new Parameter: share one of the two existing ones "
                              "(the embedding's, usually) instead of creating another.")
    if not (torch.equal(shared.detach(), values["embedding"]) or torch.equal(shared.detach(), values["output"])):
        raise ExerciseFailure(f"{where}: tying changed the values of the shared weight: tie the parameters, do not "
                              "re-initialise or edit them.")
    if model.output.bias is not bias:
        raise ExerciseFailure(f"{where}: the output layer's bias changed (a new layer, or the bias dropped): tie only "
                              "the weight and keep the rest of model.output as it was.")
    check_untouched(state, model, {"embedding.weight", "output.weight"}, "tie_weights", description)
    after = sum(p.numel() for p in model.parameters())
    if before - after != vocab * d_model:
        raise ExerciseFailure(f"{where}: expected {vocab * d_model} = vocab_size × d_model fewer parameters after "
                              f"tying, got {before - after} fewer.")
    ids = torch.randint(0, vocab, (2, 5), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = model(ids)
        expected = F.linear(F.embedding(ids, shared), shared, model.output.bias)
    if logits.shape != expected.shape or not torch.allclose(logits, expected, atol=1e-5):
        raise ExerciseFailure(f"{where}: after tying, the model's logits are not embedding → output with the shared "
                              "matrix: leave forward and the layers as they are, tie only the weight.")


def check_tie_weights(ns) -> None:
    tie = ns["tie_weights"]
    for description, model in tying_cases(Draw()):
        check_tied(tie, description, model)


q1 = Exercise(
    name="BERT's 80/10/10 corruption",
    variables=("corrupt_selected",),
    checker=check_corrupt_selected,
    hints=("The labels never depend on the random draws. For the inputs, one uniform number per position decides "
           "between three fates — and every random call takes the generator you were given.",
           "labels: the original id where selected, -100 elsewhere. u: uniform numbers of the shape of ids, from the "
           "generator; random ids: integers in [7, vocab_size), same shape, same generator. inputs: start from ids; "
           "[MASK] (4) where selected and u < 0.8; the random id where selected and 0.8 ≤ u < 0.9; the rest stays. "
           "Out-of-place operations only (ids must not change)."),
    solution=solution_of("lesson06", "corrupt_selected"),
    success="Correct! 80 % [MASK], 10 % random, 10 % unchanged, labels only where selected.",
)

q2 = Exercise(
    name="Masked-token accuracy",
    variables=("masked_accuracy",),
    checker=check_masked_accuracy,
    hints=("Only the positions whose label is not -100 count — and rows can hold different numbers of them.",
           "1) a boolean mask: labels different from -100; 2) predictions: the arg-max over the vocabulary axis; "
           "3) compare predictions with labels at the masked positions only; 4) the share of matches over all of "
           "them together, returned as a Python float (.item())."),
    solution=solution_of("lesson06", "masked_accuracy"),
    mistakes=ACCURACY_MISTAKES,
    success="Correct! Only the selected positions count.",
)

q3 = Exercise(
    name="Tie the output layer to the embedding",
    variables=("tie_weights",),
    checker=check_tie_weights,
    hints=("nn.Linear(d_model, vocab_size).weight has shape (vocab_size, d_model), like the embedding table: one "
           "Parameter object can serve both layers.",
           "Assign the embedding's weight Parameter itself (not its .data, not a copy, not a new nn.Parameter) as "
           "the output layer's weight attribute, then return the model."),
    solution=solution_of("lesson06", "tie_weights"),
    success="Correct! One matrix now both reads tokens in and scores them out.",
)


# ---------------------------------------------------------------------------- q4 (capstone): BERT masking

SPECIAL_NAMES = {PAD_ID: "[PAD]", UNK_ID: "[UNK]", CLS_ID: "[CLS]", SEP_ID: "[SEP]", MASK_ID: "[MASK]",
                 BOS_ID: "[BOS]", EOS_ID: "[EOS]"}


def sentence_ids(draw: Draw, batch: int, seq: int, vocab_size: int, lengths: list[int] | None = None) -> torch.Tensor:
    """``(batch, seq)`` ids: [CLS] real tokens [SEP] then padding; ``lengths[i]`` real tokens in row ``i`` (drawn when
    not given: row 0 fills the row, the others are shorter), an occasional [UNK]/[BOS]/[EOS] among the real tokens."""
    if lengths is None:
        lengths = [seq - 2] + [draw.integer(1, max(1, seq - 2)) for _ in range(batch - 1)]
    ids = draw.randint(N_SPECIAL_TOKENS, vocab_size, (batch, seq))
    ids[:, 0] = CLS_ID
    for row, length in enumerate(lengths):
        ids[row, length + 1] = SEP_ID
        ids[row, length + 2:] = PAD_ID
    if seq > 4:
        others = draw.randint(0, 25, (batch, seq)) == 0
        specials = torch.tensor([UNK_ID, BOS_ID, EOS_ID])[draw.randint(0, 3, (batch, seq))]
        ids = torch.where(others & (ids >= N_SPECIAL_TOKENS), specials, ids)
    return ids


def masking_case(ids: torch.Tensor, vocab_size: int, select_prob: float | None, draw: Draw, note: str = "") -> Case:
    """A case of ``mask_tokens``: ``(ids, vocab_size, seed, select_prob)`` — ``select_prob`` None: left at its
    default — described with its sizes and the number of real tokens per row."""
    batch, seq = ids.shape
    counts = (ids >= N_SPECIAL_TOKENS).sum(1).tolist()
    shown = ", ".join(str(c) for c in counts[:8]) + (", …" if len(counts) > 8 else "")
    chance = "select_prob left at its default 0.15" if select_prob is None else f"select_prob {select_prob:g}"
    description = (f"batch {batch}, seq {seq}, vocab_size {vocab_size}, {chance} (real tokens per row: {shown})"
                   + (f" — {note}" if note else ""))
    return Case(description, (ids, vocab_size, draw.rng.randrange(2 ** 31), select_prob))


def masking_cases(draw: Draw) -> list[Case]:
    """Smallest first: a single real token (batch 1); batch 1 with padding; rows padded differently, one without any
    real token, specials among the real tokens; a tiny select_prob (many rows need the forced selection); select_prob
    1.0 (no row needs it); a vocabulary larger than 256 whose ids span it; a large batch."""
    small_vocab = draw.integer(20, 200)
    single = torch.tensor([[CLS_ID, draw.integer(N_SPECIAL_TOKENS, 39), SEP_ID]])
    seq = draw.integer(6, 14)
    padded = sentence_ids(draw, 1, seq, small_vocab, [draw.integer(2, seq - 3)])
    batch, seq = draw.distinct(2, 5, 14)
    mixed = sentence_ids(draw, batch, seq, small_vocab)
    mixed[draw.integer(1, batch - 1)] = torch.tensor([CLS_ID, SEP_ID] + [PAD_ID] * (seq - 2))  # no real token
    tiny, full = draw.distinct(2, 6, 18), draw.distinct(2, 6, 18)
    wide = draw.integer(300, 3000)
    batch, seq = draw.distinct(2, 10, 32)
    spanning = sentence_ids(draw, batch, seq, wide)
    spanning[0, 1], spanning[0, 2] = N_SPECIAL_TOKENS, wide - 1            # the lowest and the highest real id
    return [
        masking_case(single, 40, None, draw, "a single real token"),
        masking_case(padded, small_vocab, draw.choice([0.1, 0.2, 0.3]), draw, "padding"),
        masking_case(mixed, small_vocab, None, draw, "padding in some rows, a row without any real token"),
        masking_case(sentence_ids(draw, *tiny, small_vocab), small_vocab, round(draw.rng.uniform(0.02, 0.06), 3),
                     draw, "a tiny select_prob"),
        masking_case(sentence_ids(draw, *full, small_vocab), small_vocab, 1.0, draw, "every real token selected"),
        masking_case(spanning, wide, round(draw.rng.uniform(0.25, 0.6), 2), draw, "ids span the vocabulary"),
        masking_case(sentence_ids(draw, 256, 48, 500), 500, None, draw, "a large batch"),
    ]


def forbidden_masking() -> dict:
    from ..mlm import mask_tokens

    return {"the package's course_utils.mlm.mask_tokens": mask_tokens}


def masking_error_hint(error: BaseException) -> str | None:
    message = str(error)
    if "select_prob" in message and "missing" in message:
        return "Give select_prob its default: def mask_tokens(ids, vocab_size, generator, select_prob=0.15)"
    return corrupt_error_hint(error)


def call_masking(function, case: Case, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The learner's ``mask_tokens`` on ``case`` with ``generator``: ``ids`` kept, a pair of tensors of its shape."""
    ids, vocab_size, _, select_prob = case.args
    given = ids.clone()
    extra = () if select_prob is None else (select_prob,)
    result = call_own(function, "mask_tokens", case.description, given, vocab_size, generator, *extra,
                      forbidden=forbidden_masking(), error_hint=masking_error_hint)
    check_inputs_kept({"ids": ids}, {"ids": given}, "mask_tokens", case.description)
    return split_result(result, case)


def package_masking(case: Case, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    from ..mlm import mask_tokens

    ids, vocab_size, _, select_prob = case.args
    return mask_tokens(ids, vocab_size, generator, select_prob=0.15 if select_prob is None else select_prob)


def seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def position_text(ids: torch.Tensor, row: int, col: int) -> str:
    token = int(ids[row, col])
    return f"row {row}, position {col} ({SPECIAL_NAMES.get(token, f'id {token}')})"


def only_changed_labelled(got: tuple[torch.Tensor, torch.Tensor], expected: tuple[torch.Tensor, torch.Tensor],
                          ids: torch.Tensor) -> bool:
    """Whether ``got`` is the package's masks with the labels of the selected-but-unchanged positions dropped."""
    missing = (expected[1] != IGNORE_INDEX) & (got[1] == IGNORE_INDEX)
    return (torch.equal(got[0], expected[0]) and bool(missing.any())
            and torch.equal(got[1], expected[1].masked_fill(expected[0] == ids, IGNORE_INDEX)))


def selects_specials_in_text(function, probe: Case) -> bool:
    """Whether the learner's masks select a special token in a row that holds text, on ``probe`` (select_prob 1.0:
    a real-token mask that lets a special in shows there)."""
    inputs, labels = call_masking(function, probe, seeded(probe.args[2]))
    ids = probe.args[0]
    real = ids >= N_SPECIAL_TOKENS
    return bool(((labels != IGNORE_INDEX) & ~real & real.any(dim=1, keepdim=True)).any())


def check_masking_contract(function, case: Case, inputs: torch.Tensor, labels: torch.Tensor,
                           expected: tuple[torch.Tensor, torch.Tensor], probes: tuple[Case, Case]) -> None:
    """What must hold whatever the draws: dtypes, labels = original id or -100, only real tokens selected, every row
    with text has a selected token, only selected positions changed, replacements [MASK] or real tokens.
    ``expected`` (the package's masks) and ``probes`` (the large batch, the select_prob 1.0 batch) only sharpen a
    diagnosis."""
    ids, vocab_size = case.args[:2]
    where = f"on {case.description}"
    real = ids >= N_SPECIAL_TOKENS
    if labels.dtype != torch.long or inputs.dtype != torch.long:
        wrong = "`labels`" if labels.dtype != torch.long else "`inputs`"
        dtype = labels.dtype if labels.dtype != torch.long else inputs.dtype
        raise ExerciseFailure(f"{where}: {wrong} should be a torch.int64 tensor (token ids and labels stay "
                              f"torch.long, like ids), got {dtype}.")
    if bool((inputs == IGNORE_INDEX).any()):
        if not bool((labels == IGNORE_INDEX).any()):
            raise ExerciseFailure(f"{where}: the pair comes back swapped: return `(inputs, labels)`, the corrupted "
                                  "ids first.")
        raise ExerciseFailure(f"{where}: `inputs` holds -100: -100 belongs in the labels only; the model's inputs are "
                              "token ids.")
    unlabelled = labels == IGNORE_INDEX
    if torch.equal(labels, ids) and torch.equal(inputs[~real], ids[~real]):
        raise ExerciseFailure(f"{where}: labels equal `ids` everywhere: the loss would also train on the unselected "
                              "tokens (and on padding). Put -100 wherever a position is not selected.")
    if not bool((unlabelled | (labels == ids)).all()):
        if torch.equal(labels[~unlabelled], inputs[~unlabelled]):
            raise ExerciseFailure(f"{where}: your labels are the *corrupted* ids (many are [MASK] = 4). The label "
                                  "is what the model must recover: the *original* id. Build labels from `ids`.")
        other = labels[~unlabelled & (labels != ids)]
        if len(other.unique()) == 1 and int(other[0]) < 0:
            raise ExerciseFailure(f"{where}: unselected positions carry the label {int(other[0])}: the ignore "
                                  "index is -100 (what F.cross_entropy skips by default).")
        row, col = ((~unlabelled & (labels != ids)).nonzero()[0]).tolist()
        raise ExerciseFailure(f"{where}: at {position_text(ids, row, col)} the label is {int(labels[row, col])}: a "
                              "label is the original id (from `ids`) where selected and -100 everywhere else.")
    selected = ~unlabelled
    wrong = selected & ~real
    if bool(wrong.any()):
        rows_without_text = ~real.any(dim=1)
        if bool((wrong.any(dim=1) <= rows_without_text).all()) and bool((wrong.sum(1) <= 1).all()) and \
                not selects_specials_in_text(function, probes[1]):
            row = int(wrong.any(dim=1).nonzero()[0])
            raise ExerciseFailure(f"{where}: row {row} has no real token, yet a position of it was selected (the "
                                  "forced selection of step 2): only rows that hold real tokens but got none "
                                  "selected get one; a row without text stays untouched (all labels -100).")
        row, col = (wrong.nonzero()[0]).tolist()
        names = sorted({SPECIAL_NAMES[int(t)] for t in ids[wrong]})
        raise ExerciseFailure(f"{where}: {position_text(ids, row, col)} was selected ({', '.join(names)} selected "
                              "in all): only real tokens, ids >= 7, may be selected — never [PAD], [CLS], [SEP] or "
                              "another special token (ids 0-6); build the mask from ids >= 7, not from ids != 0.")
    if not bool((inputs[~selected] == ids[~selected]).all()):
        row, col = ((~selected & (inputs != ids)).nonzero()[0]).tolist()
        raise ExerciseFailure(f"{where}: {position_text(ids, row, col)} changed to {int(inputs[row, col])} but is not "
                              "selected (its label is -100): only selected positions may change; [CLS], [SEP], "
                              "padding and unselected tokens must stay as they are (or: every position you change "
                              "needs its label).")
    probe = probes[0]
    if only_changed_labelled((inputs, labels), expected, ids) and only_changed_labelled(
            call_masking(function, probe, seeded(probe.args[2])), package_masking(probe, seeded(probe.args[2])),
            probe.args[0]):
        raise ExerciseFailure(f"{where}: you labelled only the positions that changed: every *selected* position gets "
                              "its original id as label, also those left unchanged (the model must learn to trust a "
                              "visible token too).")
    starved = real.any(dim=1) & ~selected.any(dim=1)
    if bool(starved.any()):
        row = int(starved.nonzero()[0])
        raise ExerciseFailure(f"{where}: row {row} holds {int(real[row].sum())} real token(s) but none was selected: "
                              "step 2 gives every such row one selected token — the real position with the largest "
                              "number of a second uniform draw, made only when some row needs it.")
    chosen, original = inputs[selected], ids[selected]
    changed = chosen[chosen != original]
    replaced = changed[changed != MASK_ID]
    outside = (replaced < N_SPECIAL_TOKENS) | (replaced >= vocab_size)
    if bool(outside.any()) or len(changed) >= 20:
        common = dominant_replacement(masking_every_token(function), changed)
        if common is not None:
            raise ExerciseFailure(f"{where}: most corrupted tokens became id {common}, but [MASK] has id 4 in this "
                                  "course's vocabulary: replace with 4.")
    if len(replaced) and int(replaced.min()) < N_SPECIAL_TOKENS:
        raise ExerciseFailure(f"{where}: a selected token became id {int(replaced.min())}: a random replacement "
                              f"must be a real token, id in [{N_SPECIAL_TOKENS}, vocab_size) (special ids such as "
                              "[PAD] would confuse the padding mask), and [MASK] has id 4.")
    if len(replaced) and int(replaced.max()) >= vocab_size:
        raise ExerciseFailure(f"{where}: a selected token became id {int(replaced.max())}, outside the vocabulary "
                              f"(vocab_size {vocab_size}): draw random tokens from [{N_SPECIAL_TOKENS}, vocab_size) "
                              "with the vocab_size argument, not a fixed size.")


def masking_variant(ids: torch.Tensor, vocab_size: int, generator: torch.Generator, select_prob: float, *,
                    rescue: str = "when needed", fates: str = "fresh", random_first: bool = False,
                    low: int = N_SPECIAL_TOKENS, high_offset: int = 0,
                    random_shape: str = "all", first_real: int = N_SPECIAL_TOKENS) -> tuple[torch.Tensor, torch.Tensor]:
    """The package's masking with one typical deviation (a draw skipped, added or moved, another range), to name
    the learner's mistake when their masks equal it. With the defaults it equals ``mlm.mask_tokens``."""
    high = vocab_size + high_offset
    real = ids >= first_real
    first = torch.rand(ids.shape, generator=generator)
    selected = real & (first < select_prob)
    empty = real.any(dim=1) & ~selected.any(dim=1)
    if rescue == "first":
        selected = selected | (empty[:, None] & (torch.arange(ids.size(1)) == real.long().argmax(dim=1, keepdim=True)))
    if rescue == "always" or (rescue == "when needed" and bool(empty.any())):
        scores = torch.rand(ids.shape, generator=generator).masked_fill(~real, -1.0)
        pick = torch.arange(ids.size(1)) == scores.argmax(dim=1, keepdim=True)
        selected = selected | (empty[:, None] & pick)
    labels = ids.masked_fill(~selected, IGNORE_INDEX)
    if random_first:
        random_ids = torch.randint(low, high, ids.shape, generator=generator)
    u = first / select_prob if fates == "from the selection" else torch.rand(ids.shape, generator=generator)
    to_mask = selected & (u < 0.8)
    to_random = selected & ((u >= 0.9) if fates == "random above 0.9" else (u >= 0.8) & (u < 0.9))
    inputs = ids.masked_fill(to_mask, MASK_ID)
    if random_shape == "selected":
        inputs[to_random] = torch.randint(low, high, (int(to_random.sum()),), generator=generator)
        return inputs, labels
    if not random_first:
        random_ids = torch.randint(low, high, ids.shape, generator=generator)
    return torch.where(to_random, random_ids, inputs), labels


def masking_variants(case: Case) -> list[tuple[dict, str]]:
    """``(deviation, diagnosis)`` pairs for :func:`masking_variant`: what the learner did if their masks equal it."""
    select_prob = case.args[3]
    variants = [
        (dict(rescue="always"),
         "you drew the second uniform tensor of step 2 although no row needed it here: draw it only when some row "
         "holds real tokens but got none selected (if ….any():) — every extra draw shifts all the later ones"),
        (dict(random_first=True),
         "you drew the random ids before the 80/10/10 numbers: the order is selection → (step 2) → the uniform u "
         "of the 80/10/10 decision → then torch.randint for the random tokens"),
        (dict(fates="from the selection"),
         "you reused the selection's uniform numbers for the 80/10/10 decision: draw a fresh uniform tensor u for "
         "it (step 3) after the selection"),
        (dict(fates="random above 0.9"),
         "you swapped the random and the unchanged ranges of u: [MASK] where u < 0.8, a random token where "
         "0.8 ≤ u < 0.9, unchanged from 0.9 on"),
        (dict(random_shape="selected"),
         "you drew the random tokens only for the positions that need one: draw torch.randint(7, vocab_size, "
         "ids.shape, generator=generator) for every position (step 4) and keep it where step 3 says random — a draw "
         "of another shape gives other numbers"),
        (dict(high_offset=-1),
         "the random tokens never reach id vocab_size - 1: torch.randint's upper bound is exclusive, so pass "
         "vocab_size itself"),
        (dict(first_real=N_SPECIAL_TOKENS + 1),
         "id 7 is never selected: it is the first real token — real tokens are the ids >= 7, not > 7"),
        (dict(low=0), "the random tokens were drawn from [0, vocab_size), specials included: a random replacement "
                      "must be a real token, torch.randint(7, vocab_size, …)"),
        (dict(rescue="first"),
         "in a row that needed step 2 you selected its first real token: draw a second uniform tensor (only then) "
         "and select the real position with the largest number, so that any token of the row can be chosen"),
    ]
    if select_prob not in (None, 0.15):
        variants.append((dict(select_prob=0.15),
                         f"you selected with probability 0.15, but this call asked for select_prob={select_prob:g}: "
                         "use the select_prob argument, never a fixed 0.15"))
    return variants


def first_difference(ids: torch.Tensor, got: tuple[torch.Tensor, torch.Tensor],
                     expected: tuple[torch.Tensor, torch.Tensor]) -> str:
    differs = (got[0] != expected[0]) | (got[1] != expected[1])
    row, col = (differs.nonzero()[0]).tolist()
    return (f"at {position_text(ids, row, col)} the package's masks give input {int(expected[0][row, col])} and "
            f"label {int(expected[1][row, col])}, yours {int(got[0][row, col])} and {int(got[1][row, col])}")


def check_replacement_range(function, draw: Draw) -> None:
    """A small vocabulary and every real token selected: hundreds of random replacements, each of which must be a
    real token of this vocabulary (the contract, on a batch where a fixed vocabulary size shows)."""
    vocab_size = draw.integer(27, 67)
    ids = sentence_ids(draw, 64, 40, vocab_size, [38] * 64)
    case = masking_case(ids, vocab_size, 1.0, draw, "every real token selected, a small vocabulary")
    got = call_masking(function, case, seeded(case.args[2]))
    check_masking_contract(function, case, *got, package_masking(case, seeded(case.args[2])), (case, case))


def masking_shares(function, draw: Draw) -> str | None:
    """On a large batch of long rows (step 2 then almost never runs): the selection rate and the 80/10/10 shares
    must match BERT's within about six standard deviations; else what is off."""
    select_prob = draw.choice([0.2, 0.3, 0.4])
    vocab_size = draw.integer(300, 3000)
    ids = sentence_ids(draw, 192, 64, vocab_size, [62] * 192)
    case = masking_case(ids, vocab_size, select_prob, draw, "a large batch of long rows for the shares")
    inputs, labels = call_masking(function, case, seeded(case.args[2]))
    real = ids >= N_SPECIAL_TOKENS
    selected = labels != IGNORE_INDEX
    n_real, n = int(real.sum()), int(selected.sum())
    rate = n / n_real
    where = f"checked on a larger batch ({case.description})"
    if abs(rate - select_prob) > six_sigma(select_prob, n_real):
        fixed = " — with 0.15 hard-coded?" if abs(rate - 0.15) < six_sigma(0.15, n_real) else ""
        return (f"{where}: you selected {rate:.1%} of the real tokens, select_prob was {select_prob:g}{fixed}: select "
                "each real token on its own, when its number from the first uniform draw is below select_prob")
    if n == 0:
        return None
    chosen, original = inputs[selected], ids[selected]
    counts = {"[MASK]": int((chosen == MASK_ID).sum()), "unchanged": int((chosen == original).sum())}
    counts["random"] = n - counts["[MASK]"] - counts["unchanged"]
    n_tokens = vocab_size - N_SPECIAL_TOKENS
    targets = {"[MASK]": 0.8, "random": 0.1 * (1 - 1 / n_tokens), "unchanged": 0.1 + 0.1 / n_tokens}
    report = ", ".join(f"{name} {count / n:.1%}" for name, count in counts.items())
    if counts["[MASK]"] == n:
        return (f"{where}: every selected token became [MASK] ({report}); aim for 80 % / 10 % / 10 %: BERT keeps "
                "10 % unchanged and swaps 10 % for a random token")
    if any(abs(counts[name] / n - target) > six_sigma(target, n) for name, target in targets.items()):
        return (f"{where}: of the selected tokens you made {report}; aim for 80 % / 10 % / 10 %: ONE uniform number "
                "u per position, u < 0.8 → [MASK], 0.8 ≤ u < 0.9 → random, else unchanged")
    replaced = chosen[(chosen != MASK_ID) & (chosen != original)].double()
    if len(replaced) > 100:
        centre = (N_SPECIAL_TOKENS + vocab_size - 1) / 2
        spread = math.sqrt((n_tokens ** 2 - 1) / 12 / len(replaced))
        if abs(float(replaced.mean()) - centre) > 6 * spread + 0.5:
            return (f"{where}: the random replacements average {float(replaced.mean()):.1f}, but ids drawn uniformly "
                    f"from [{N_SPECIAL_TOKENS}, {vocab_size}) average {centre:.1f}: draw them from the whole range "
                    "[7, vocab_size) with the vocab_size argument")
    return None


def same_masks(a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]) -> bool:
    return torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def variant_of(case: Case, deviation: dict) -> tuple[torch.Tensor, torch.Tensor]:
    ids, vocab_size, seed, select_prob = case.args
    options = {key: value for key, value in deviation.items() if key != "select_prob"}
    chance = deviation.get("select_prob", 0.15 if select_prob is None else select_prob)
    return masking_variant(ids, vocab_size, seeded(seed), chance, **options)


def diagnose_masking(function, case: Case, got: tuple[torch.Tensor, torch.Tensor],
                     expected: tuple[torch.Tensor, torch.Tensor], probes: tuple[Case, Case], draw: Draw) -> str:
    """Why the learner's masks differ from the package's on ``case`` (their contract already holds). A typical
    deviation that reproduces them counts only if it reproduces the learner's masks on both ``probes`` too (the
    large batch, where step 2 runs; select_prob 1.0, where it does not): a small case cannot tell some apart."""
    ids = case.args[0]
    on_probes: list[tuple[torch.Tensor, torch.Tensor]] = []
    for deviation, message in masking_variants(case):
        if not same_masks(variant_of(case, deviation), got):
            continue
        if not on_probes:
            on_probes = [call_masking(function, probe, seeded(probe.args[2])) for probe in probes]
        if all(same_masks(variant_of(probe, deviation), learner) for probe, learner in zip(probes, on_probes)):
            return message
    probe = probes[0]
    on_probe = on_probes[0] if on_probes else None
    chosen = got[1] != IGNORE_INDEX
    common = dominant_replacement(masking_every_token(function), got[0][chosen & (got[0] != ids)])
    if common is not None:
        return (f"most corrupted tokens became id {common}, but [MASK] has id 4 in this course's vocabulary: "
                "replace with 4")
    check_replacement_range(function, draw)
    check_generator_use(lambda generator: call_masking(function, probe, generator), "mask_tokens",
                        probe.description)
    selected, reference = got[1] != IGNORE_INDEX, expected[1] != IGNORE_INDEX
    shares = masking_shares(function, draw)
    if shares:
        return shares
    gap = first_difference(ids, got, expected)
    on_probe = call_masking(function, probe, seeded(probe.args[2])) if on_probe is None else on_probe
    probe_expected = package_masking(probe, seeded(probe.args[2]))
    if torch.equal(selected, reference) and not torch.equal(on_probe[1], probe_expected[1]):
        selected, reference, ids = on_probe[1] != IGNORE_INDEX, probe_expected[1] != IGNORE_INDEX, probe.args[0]
        gap = f"on {probe.description}, {first_difference(ids, on_probe, probe_expected)}"
    if torch.equal(selected, reference):
        return (f"the selection matches the package's but the corruption does not ({gap}): after the selection "
                "(and step 2), draw ONE uniform tensor u (u < 0.8 → [MASK], 0.8 ≤ u < 0.9 → random, else unchanged), "
                "then torch.randint(7, vocab_size, ids.shape) — each with generator=generator")
    return (f"your selection differs from the package's ({gap}): select a real token when its number from the first "
            "draw, torch.rand(ids.shape, generator=generator), is below select_prob; step 2's second draw only when "
            "a row with text got nothing, its argmax over the real positions")


def check_mask_tokens(ns) -> None:
    function = ns["mask_tokens"]
    draw = Draw()
    cases = masking_cases(draw)
    for case in cases:
        seed = case.args[2]
        got = call_masking(function, case, seeded(seed))
        expected = package_masking(case, seeded(seed))
        check_masking_contract(function, case, *got, expected, (cases[-1], cases[4]))
        if not (torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])):
            diagnosis = diagnose_masking(function, case, got, expected, (cases[-1], cases[4]), draw)
            raise ExerciseFailure(f"on {case.description}: {diagnosis}.")
    for case in cases[:3]:
        check_fresh_masks(function, case, cases[-1])


def check_fresh_masks(function, case: Case, probe: Case) -> None:
    """Dynamic masking: two calls with one generator must give the package's first and second masks — with a seed
    whose first masks hold no random replacement, so that a random draw skipped when unused shows."""
    seed = case.args[2]
    while True:
        inputs, labels = package_masking(case, seeded(seed))
        selected = labels != IGNORE_INDEX
        if bool(((inputs == MASK_ID) | (inputs == case.args[0]))[selected].all()):
            break
        seed += 1
    generator, reference = seeded(seed), seeded(seed)
    first, second = call_masking(function, case, generator), call_masking(function, case, generator)
    expected = [package_masking(case, reference) for _ in range(2)]
    if not all(torch.equal(a, b) for a, b in zip(first, expected[0])):
        raise ExerciseFailure(f"on {case.description}: {first_difference(case.args[0], first, expected[0])}: follow "
                              "steps 1-4 exactly, each draw with generator=generator.")
    if not all(torch.equal(a, b) for a, b in zip(second, expected[1])):
        generator = seeded(probe.args[2])
        replay = all(torch.equal(a, b) for a, b in zip(call_masking(function, probe, generator),
                                                        call_masking(function, probe, generator)))
        raise ExerciseFailure(
            f"on {case.description}, called twice with one generator: the first masks equal the package's, the "
            "second do not — " + (
                "the second call returned the first masks again: the generator is reset inside (manual_seed) or a "
                "copy of it is used. Draw from the given generator itself, so that every batch gets new masks."
                if replay else
                "your code takes another amount of random numbers from the generator (a draw skipped when not "
                "needed, or an extra one): make exactly the draws of steps 1-4, each of the shape of ids."))


# ---------------------------------------------------------------------------- q5 (capstone): the masked-LM loss

def loss_case(draw: Draw, batch: int, seq: int, vocab_size: int, note: str = "", large: bool = False) -> Case:
    """Logits ``(batch, seq, vocab_size)`` (float32) and labels with -100 except at selected positions: each row has
    its own share of selected positions (none in one row, all in another when batch >= 3), and labels 0 and
    ``vocab_size - 1`` among the targets. ``large``: logits of standard deviation 40, one of them 150, and one label
    the least likely token of its position (exp overflows, log(softmax) underflows to log 0 there)."""
    logits = draw.randn(batch, seq, vocab_size, scale=40.0 if large else 1.0)
    labels = draw.randint(0, vocab_size, (batch, seq))
    shares = torch.tensor([draw.rng.uniform(0.2, 0.8) for _ in range(batch)])
    if batch >= 3:
        none, every = draw.distinct(2, 0, batch - 1)
        shares[none], shares[every] = 0.0, 1.0
    selected = torch.rand(batch, seq, generator=draw.generator()) < shares[:, None]
    if not bool(selected.any()) or batch * seq == 1:
        selected[0, 0] = True
    positions = selected.nonzero().tolist()
    labels[tuple(positions[0])] = 0                                    # label 0 is a real token
    if len(positions) > 1:
        labels[tuple(positions[-1])] = vocab_size - 1
    if large:
        row, col = positions[len(positions) // 2]
        labels[row, col] = logits[row, col].argmin()
        logits[row, col, (labels[row, col] + 1) % vocab_size] = 150.0
    labels = labels.masked_fill(~selected, IGNORE_INDEX)
    counts = selected.sum(1).tolist()
    shown = ", ".join(str(c) for c in counts[:8]) + (", …" if len(counts) > 8 else "")
    description = (f"batch {batch}, seq {seq}, vocab_size {vocab_size} (selected per row: {shown})"
                   + (f" — {note}" if note else ""))
    return Case(description, (logits, labels))


def loss_cases(draw: Draw) -> list[Case]:
    """Smallest first, no two sizes of a case equal: one selected position, batch 1, rows with none and with every
    position selected, a vocabulary larger than 256, logits of large magnitude."""
    return [
        loss_case(draw, 1, 1, draw.integer(2, 12), "a single selected position"),
        loss_case(draw, 1, *sorted(draw.distinct(2, 3, 20)), "batch 1"),
        loss_case(draw, *sorted(draw.distinct(3, 3, 24))),
        loss_case(draw, *draw.distinct(2, 4, 16), draw.integer(300, 1000), "a vocabulary larger than 256"),
        loss_case(draw, *draw.distinct(2, 4, 16), draw.integer(40, 90), "logits of large magnitude (up to 150)",
                  large=True),
    ]


def forbidden_losses() -> dict:
    from ..losses import masked_lm_loss

    return {"the package's course_utils.losses.masked_lm_loss": masked_lm_loss,
            "torch.nn.functional.cross_entropy (write the cross-entropy yourself)": F.cross_entropy,
            "torch.nn.functional.nll_loss (write the cross-entropy yourself)": F.nll_loss,
            "torch's cross_entropy_loss (write the cross-entropy yourself)": torch._C._nn.cross_entropy_loss,
            "torch's nll_loss (write the cross-entropy yourself)": torch._C._nn.nll_loss,
            "torch's nll_loss_nd (write the cross-entropy yourself)": torch._C._nn.nll_loss_nd}


def loss_error_hint(error: BaseException) -> str | None:
    message = str(error)
    if "out of bounds" in message or "index -100" in message or "Index -100" in message:
        return ("The labels hold -100 where nothing is predicted, which is no index: pick the selected positions "
                "first (labels != -100), or give those positions a valid id before gathering and drop them after")
    if "leaf Variable that requires grad" in message or "in-place operation" in message:
        return ("You changed `logits` in place (masked_fill_, logits[...] = …, +=): the caller's logits must stay as "
                "they are — use out-of-place operations")
    if "is invalid for input of size" in message:
        return "Take every size from the tensors themselves (logits.size(-1), …), never a fixed number"
    return None


def nll(logits: torch.Tensor, labels: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Minus the log-probability (softmax over ``dim``) of each label, (batch, seq); -100 read as token 0."""
    return -logits.log_softmax(dim).gather(-1, labels.clamp(min=0)[..., None])[..., 0]


def selected_mean(values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return values[labels != IGNORE_INDEX].mean()


def row_mean_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    keep = (labels != IGNORE_INDEX).float()
    return ((nll(logits, labels) * keep).sum(1) / keep.sum(1)).mean()


def big_logits(case: Case) -> bool:
    return float(case.args[0].abs().max()) > 80


def not_finite(case: Case, got, what) -> bool:
    return isinstance(got, torch.Tensor) and got.dim() == 0 and got.is_floating_point() and what(float(got))


STABLE = ("exp() of large logits overflows (inf / inf), or log(softmax(…)) underflows to log(0) for very unlikely "
          "tokens: compute log-probabilities with torch.log_softmax (or logits - logsumexp), which stays finite")
SOFTMAX_AXIS = "the softmax runs over the vocabulary, the last axis (dim=-1), not over the sequence or the batch axis"
LOSS_MISTAKES = (
    Mistake("exp over sum without the max", f"got inf or NaN: {STABLE}",
            variant=lambda logits, labels: selected_mean(-(logits.exp() / logits.exp().sum(-1, keepdim=True)).log()
                                                         .gather(-1, labels.clamp(min=0)[..., None])[..., 0], labels),
            shows=lambda case, got, _: big_logits(case) and not_finite(case, got, lambda v: not math.isfinite(v))),
    Mistake("log of softmax", f"got inf or NaN: {STABLE}", variant=lambda logits, labels: selected_mean(
                -logits.softmax(-1).log().gather(-1, labels.clamp(min=0)[..., None])[..., 0], labels),
            shows=lambda case, got, _: not_finite(case, got, math.isinf)),
    Mistake("per-row means", "a row without any selected position gives 0/0 in a per-row mean, and rows hold "
            "different numbers of selected positions: one mean over all selected positions of the batch together",
            variant=row_mean_loss, shows=lambda case, got, _: not_finite(case, got, math.isnan)
            and bool((case.args[1] == IGNORE_INDEX).all(dim=1).any())),
    Mistake("mean over every position", "you divided by every position (batch × seq); divide by the number of "
            "selected positions, those with labels != -100", variant=lambda logits, labels: (
                nll(logits, labels) * (labels != IGNORE_INDEX)).sum() / labels.numel()),
    Mistake("ignored positions scored as token 0", "the positions labelled -100 were scored too (as token 0): average "
            "over the selected positions only", variant=lambda logits, labels: nll(logits, labels).mean()),
    Mistake("per-row means of the rows with a selection", "you averaged the loss of each row, but rows hold different "
            "numbers of selected positions: one mean over all selected positions of the batch together",
            variant=lambda logits, labels: torch.stack([selected_mean(nll(logits[r], labels[r]), labels[r])
                                                        for r in range(len(labels))
                                                        if (labels[r] != IGNORE_INDEX).any()]).mean()),
    Mistake("sum instead of mean", "that is the sum over the selected positions: divide by their number (the mean)",
            variant=lambda logits, labels: nll(logits, labels)[labels != IGNORE_INDEX].sum()),
    Mistake("sign flipped", "the sign is flipped: the loss is *minus* the mean log-probability of the labels",
            variant=lambda logits, labels: -selected_mean(nll(logits, labels), labels)),
    Mistake("labels > 0 as the mask", "label 0 is a real token id: only -100 marks a position that is not selected "
            "(labels != -100)", variant=lambda logits, labels: selected_mean(
                nll(logits, labels), labels.masked_fill(labels == 0, IGNORE_INDEX))),
    Mistake("softmax over the sequence axis", SOFTMAX_AXIS,
            variant=lambda logits, labels: selected_mean(nll(logits, labels, 1), labels)),
    Mistake("softmax over the batch axis", SOFTMAX_AXIS,
            variant=lambda logits, labels: selected_mean(nll(logits, labels, 0), labels)),
    Mistake("divided by the batch size", "you divided by the batch size; divide by the number of selected positions",
            variant=lambda logits, labels: nll(logits, labels)[labels != IGNORE_INDEX].sum() / len(labels)),
    Mistake("averaged over the vocabulary too", "you averaged over the vocabulary axis too: only the label's entry "
            "counts at each position, then average over the selected positions",
            variant=lambda logits, labels: selected_mean(nll(logits, labels), labels) / logits.size(-1)),
    Mistake("softmax applied twice", "softmax applied twice: log_softmax already normalises the raw logits — pass the "
            "logits themselves", variant=lambda logits, labels: selected_mean(nll(logits.softmax(-1), labels), labels)),
    Mistake("probabilities without the log", "that is minus the mean *probability*: the cross-entropy takes its log "
            "(log_softmax)", variant=lambda logits, labels: selected_mean(-(-nll(logits, labels)).exp(), labels)),
    Mistake("every vocabulary entry averaged", "you averaged the log-probabilities of every token of the vocabulary: "
            "take only the label's entry at each position (gather, or indexing with the labels)",
            variant=lambda logits, labels: -logits.log_softmax(-1)[labels != IGNORE_INDEX].mean()),
    Mistake("wrong only on large logits", f"right on ordinary logits, wrong on large ones: {STABLE} (log(softmax + ε) "
            "loses the small probabilities)",
            variant=lambda logits, labels: selected_mean(-(logits.softmax(-1) + 1e-9).log().gather(
                -1, labels.clamp(min=0)[..., None])[..., 0], labels), shows=lambda case, got, _: big_logits(case)),
)


def loss_outcome(answer, case: Case):
    out = attempt(answer, "mlm_loss", snapshot(case.args), {}, forbidden_losses())
    return out.detach() if isinstance(out, torch.Tensor) else out


def check_loss_case(function, case: Case, probes: list[Case]) -> None:
    from ..losses import masked_lm_loss

    logits, labels = case.args
    where = f"on {case.description}"
    given, given_labels = logits.clone().requires_grad_(True), labels.clone()
    before = {"logits": snapshot(given), "labels": snapshot(given_labels)}
    got = call_own(function, "mlm_loss", case.description, given, given_labels, forbidden=forbidden_losses(),
                   error_hint=loss_error_hint)
    check_inputs_kept(before, {"logits": given, "labels": given_labels}, "mlm_loss", case.description)
    reference = logits.clone().requires_grad_(True)
    expected = masked_lm_loss(reference, labels)
    expected.backward()
    if not isinstance(got, torch.Tensor):
        number = None
        try:
            number = float(got)
        except (TypeError, ValueError):
            pass
        if number is not None and math.isclose(number, float(expected.detach()), rel_tol=1e-4, abs_tol=1e-5):
            raise ExerciseFailure(f"{where}: the value is right but it is a Python {type(got).__name__}: return the "
                                  "loss as a tensor with its graph (no .item() or float()), so that loss.backward() "
                                  "can train the model.")
        raise ExerciseFailure(f"{where}: return the loss as a 0-d torch.Tensor, got {type(got).__name__}.")
    if got.dim() != 0:
        if got.numel() == 1:
            raise ExerciseFailure(f"{where}: return a 0-d tensor (a scalar, shape ()), got shape {tuple(got.shape)}: "
                                  "reduce with .mean() or .sum() to a scalar, without keepdim or an extra axis.")
        raise ExerciseFailure(f"{where}: return one loss for the whole batch, a 0-d tensor, got shape "
                              f"{tuple(got.shape)}: average over all selected positions together.")
    gap = difference(got, expected.detach(), "the loss", atol=1e-5, rtol=1e-5)
    if gap:
        raise Mismatch(f"{where}: {gap}.", case, got.detach(), function, loss_outcome, probes=tuple(probes),
                       expected=expected.detach(), same=lambda a, b: isinstance(a, torch.Tensor) and isinstance(
                           b, torch.Tensor) and a.dim() == b.dim() == 0 and a.dtype == b.dtype and (
                           bool(a.isnan() and b.isnan()) or math.isclose(float(a), float(b), rel_tol=1e-4,
                                                                        abs_tol=1e-5)))
    if not got.requires_grad or got.grad_fn is None:
        raise ExerciseFailure(f"{where}: the value is right but the loss has no graph back to `logits` (.item(), "
                              "float(), .detach(), torch.no_grad() or torch.tensor(…) cut it): loss.backward() would "
                              "not reach the model. Keep every step a tensor operation on logits.")
    call_learner(got.backward, "mlm_loss", case.description)
    grad = given.grad
    if grad is None or (not bool(grad.any()) and bool(reference.grad.any())):
        raise ExerciseFailure(f"{where}: the value is right but no gradient reaches `logits`: something cuts the "
                              "graph (.detach(), .data, torch.no_grad()). Keep every step a tensor operation.")
    if not close(grad, reference.grad, atol=1e-6, rtol=1e-4):
        raise ExerciseFailure(f"{where}: the value is right but the gradient with respect to `logits` differs from the "
                              f"package's (by up to {max_difference(grad, reference.grad):.3g}): part of the "
                              "computation is detached (.detach(), .data) or a constant depends on logits. Build the "
                              "whole loss from logits with tensor operations.")


def check_mlm_loss(ns) -> None:
    function = ns["mlm_loss"]
    cases = loss_cases(Draw())
    for case in cases:
        check_loss_case(function, case, cases)


q4 = Exercise(
    name="Capstone: BERT masking, start to finish",
    variables=("mask_tokens",),
    checker=check_mask_tokens,
    hints=("Four random draws, each of the shape of ids and each with the given generator, in the task's order — the "
           "second one only when some row needs it. Real tokens are exactly the ids of 7 and above. Stuck? "
           "`from course_utils.mlm import mask_tokens` to move on.",
           "real: ids ≥ 7. Selected: real and the first uniform number below select_prob. Rows with a real token but "
           "nothing selected: if there is any, draw a second uniform tensor, put -1 at the non-real positions, and "
           "in each such row also select the position of the largest number. Labels: the original id where "
           "selected, -100 elsewhere. Then a third uniform tensor u and the random ids in [7, vocab_size), both of "
           "the shape of ids; inputs: [MASK] (4) where selected and u < 0.8, the random id where selected and "
           "0.8 ≤ u < 0.9, the original id elsewhere. Out-of-place operations only; return (inputs, labels)."),
    solution=solution_of("lesson06", "mask_tokens"),
    success="Correct! Token for token, your masks and labels are the package's: 15 % of the real tokens, "
            "80/10/10, specials and padding untouched, one token at least per sentence.",
    task=(
        "**Capstone — BERT masking, start to finish.** Write `mask_tokens(ids, vocab_size, generator, "
        "select_prob=0.15)` for a batch `ids (batch, seq)` of torch.long sentences — `[CLS]` … `[SEP]`, then "
        "`[PAD]`, perhaps an `[UNK]` inside — and return `(inputs, labels)`, both `(batch, seq)` torch.long: the "
        "corrupted ids the model reads and the labels (the original id at the selected positions, -100 "
        "everywhere else). Real tokens are the ids ≥ 7; the special ids 0–6 (`[PAD]` 0, `[UNK]` 1, `[CLS]` 2, "
        "`[SEP]` 3, `[MASK]` 4, `[BOS]` 5, `[EOS]` 6) are never selected and never drawn as replacements. Leave "
        "`ids` unchanged.\n\n"
        "Make exactly these draws, in this order, each of the shape of `ids` and with `generator=generator` — "
        "then your masks equal the package's token for token:\n\n"
        "1. **Select.** `torch.rand`: a real token is selected where its number is below `select_prob`.\n"
        "2. **One at least per sentence.** Only if some row holds real tokens but got none selected: a second "
        "`torch.rand`, set to -1 at the non-real positions; in each such row, also select the position of its "
        "largest number (argmax). A row without real tokens stays untouched; when no row needs step 2, it draws "
        "nothing.\n"
        "3. **80/10/10.** A third `torch.rand`, `u`: a selected position becomes `[MASK]` where u < 0.8, a random "
        "token where 0.8 ≤ u < 0.9, and keeps its id otherwise.\n"
        "4. **Random tokens.** `torch.randint(7, vocab_size, ids.shape, generator=generator)`, always drawn, used "
        "where step 3 says random.\n\n"
        "(Your `corrupt_selected` of exercise 1 does steps 3–4 if it draws `u` before the random ids.) Write it "
        "yourself: the package's `course_utils.mlm.mask_tokens` is refused, however it is reached.\n\n"
        "How it is checked: on each check, seven batches drawn at random, each with its own sizes and a generator "
        "seeded at random, smallest first — one real token (`[CLS] x [SEP]`, batch 1); batch 1 with padding; rows "
        "padded differently with one row that holds no real token and special tokens among the real ones; a tiny "
        "`select_prob` (many rows need step 2); `select_prob` 1.0 (none does); a vocabulary larger than 256 whose "
        "ids span it; 256 rows — with `select_prob` left at its default in three of them. On each, your "
        "`(inputs, labels)` must equal `course_utils.mlm.mask_tokens(ids, vocab_size, generator, select_prob)` "
        "from an identically seeded generator, token for token, as torch.long, and `ids` must come back unchanged; "
        "then two calls with one generator must give the package's first and second masks (each batch gets new "
        "masks). Where they differ, the message names the bug: a special token or padding selected, a row with "
        "text left without a selection, wrong labels, a replacement outside [7, vocab_size), a draw skipped, "
        "added or out of order, the generator ignored. `q4.hint()` and `q4.solution()` help; stuck? "
        "`from course_utils.mlm import mask_tokens` and move on."
    ),
    starter=(
        "def mask_tokens(ids, vocab_size, generator, select_prob=0.15):\n"
        "    # 1) select real tokens (ids >= 7)   2) rows with text but nothing selected: one more, by argmax\n"
        "    # 3) u: [MASK] / random / unchanged   4) random ids in [7, vocab_size); labels -100 where not selected\n"
        "    raise NotImplementedError\n"
    ),
)

q5 = Exercise(
    name="Capstone: the masked-LM loss",
    variables=("mlm_loss",),
    checker=check_mlm_loss,
    hints=("Only the positions whose label is not -100 count, and they are averaged all together — not per row, "
           "not over every position. One position's cross-entropy is minus the log-probability of its label, and a "
           "log-softmax gives log-probabilities without overflow. Stuck? "
           "`from course_utils.losses import masked_lm_loss as mlm_loss` to move on.",
           "1) a boolean mask: labels different from -100; 2) the logits at those positions, (n_selected, vocab); "
           "3) their log-softmax over the vocabulary axis; 4) in each row of that, the entry at the label's id "
           "(gather, or indexing with an arange); 5) minus the mean of those n_selected numbers — keep it a tensor "
           "(no .item()) so that backward() reaches the logits."),
    solution=solution_of("lesson06", "mlm_loss"),
    mistakes=LOSS_MISTAKES,
    success="Correct! One mean over the selected positions only, equal to the package's loss, gradients included.",
    task=(
        "**Capstone — the masked-LM loss.** Write `mlm_loss(logits, labels)` for `logits (batch, seq, vocab_size)` "
        "(float32) and `labels (batch, seq)` (torch.long: the original id at the selected positions, -100 "
        "elsewhere — what `mask_tokens` returns): the mean cross-entropy over the selected positions only,\n"
        "$$\\mathcal{L} = -\\frac{1}{|S|}\\sum_{i \\in S} \\log \\operatorname{softmax}(z_i)_{y_i},$$\n"
        "one mean over all selected positions of the batch together (rows hold different numbers of them, some "
        "none), returned as a 0-d float32 tensor whose graph reaches `logits`, so that `loss.backward()` trains "
        "the model. Leave `logits` and `labels` unchanged. Write the cross-entropy yourself from log-probabilities "
        "(`torch.log_softmax`, or `torch.logsumexp`): `F.cross_entropy`, `F.nll_loss` (and the `nn` losses built "
        "on them) and the package's `masked_lm_loss` are refused, however they are reached.\n\n"
        "How it is checked: on each check, five cases drawn at random, each with its own sizes (batch, seq and "
        "vocab_size all different), smallest first — a single selected position (batch 1, seq 1); batch 1; rows "
        "with no selected position next to rows with every position selected; a vocabulary larger than 256; "
        "logits of large magnitude, where log(softmax(…)) underflows — with labels 0 and vocab_size − 1 among the "
        "targets. On each, your loss must equal `course_utils.losses.masked_lm_loss(logits, labels)` as a 0-d "
        "float32 tensor, the gradient that `backward()` sends to `logits` must equal the package's, and both "
        "inputs must come back unchanged. `q5.hint()` and `q5.solution()` help; stuck? "
        "`from course_utils.losses import masked_lm_loss as mlm_loss` and move on."
    ),
    starter=(
        "def mlm_loss(logits, labels):\n"
        "    # minus the mean log-probability of the label, over the positions whose label is not -100\n"
        "    raise NotImplementedError\n"
    ),
)
