"""Exercises of notebook 06 (masked language modelling): BERT's 80/10/10 corruption, masked accuracy, weight tying."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from ..mlm import IGNORE_INDEX
from ..tokenization import MASK_ID, N_SPECIAL_TOKENS, PAD_ID
from .core import Exercise, ExerciseFailure

VOCAB = 300


def example_selection(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids ``(64, 40)`` with [CLS] … [SEP] and padding, and a selection mask ``(64, 40)`` over their real tokens."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(N_SPECIAL_TOKENS, VOCAB, (64, 40), generator=generator)
    lengths = torch.randint(5, 39, (64,), generator=generator)
    ids[:, 0] = 2  # [CLS]
    for row, n in enumerate(lengths.tolist()):
        ids[row, n] = 3  # [SEP]
        ids[row, n + 1:] = PAD_ID
    selected = (ids >= N_SPECIAL_TOKENS) & (torch.rand(ids.shape, generator=generator) < 0.5)
    return ids, selected


def call_corrupt(function) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Run the learner's ``corrupt_selected`` on a few seeded batches; return (ids, selected, inputs, labels)."""
    runs = []
    for seed in range(6):
        ids, selected = example_selection(seed)
        ids_before = ids.clone()
        result = function(ids, selected, VOCAB, torch.Generator().manual_seed(100 + seed))
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ExerciseFailure(f"return a pair `(inputs, labels)`, got {type(result).__name__}.")
        inputs, labels = result
        if not (isinstance(inputs, torch.Tensor) and isinstance(labels, torch.Tensor)):
            raise ExerciseFailure("`inputs` and `labels` should both be torch tensors.")
        if not torch.equal(ids, ids_before):
            raise ExerciseFailure("your function changed `ids` in place; work on a copy (`ids.clone()`, or "
                                  "`masked_fill` / `torch.where`, which return new tensors).")
        if inputs.shape != ids.shape or labels.shape != ids.shape:
            raise ExerciseFailure(f"`inputs` and `labels` need the shape of `ids` {tuple(ids.shape)}, got "
                                  f"{tuple(inputs.shape)} and {tuple(labels.shape)}.")
        runs.append((ids, selected, inputs, labels))
    return runs


def check_corrupt_selected(ns) -> None:
    runs = call_corrupt(ns["corrupt_selected"])
    for ids, selected, inputs, labels in runs:
        if labels.dtype != torch.long:
            raise ExerciseFailure(f"labels must be int64 class ids for cross_entropy, got {labels.dtype}.")
        if (labels[~selected] != IGNORE_INDEX).any():
            if torch.equal(labels, ids):
                raise ExerciseFailure("labels equal `ids` everywhere: the loss would also train on the unselected "
                                      "tokens, which the model can simply copy. Put -100 where `selected` is "
                                      "False: ids.masked_fill(~selected, -100).")
            raise ExerciseFailure("positions that were not selected must have the label -100 (ignore_index).")
        if not torch.equal(labels[selected], ids[selected]):
            if torch.equal(labels[selected], inputs[selected]):
                raise ExerciseFailure("your labels are the *corrupted* ids (many are [MASK] = 4). The label is "
                                      "what the model must recover: the *original* id. Build labels from `ids`.")
            raise ExerciseFailure("at selected positions the label must be the original id from `ids`.")
        if not torch.equal(inputs[~selected], ids[~selected]):
            raise ExerciseFailure("only selected positions may change; [CLS], [SEP], padding and unselected tokens "
                                  "must stay as they are.")
    n_selected = sum(int(s.sum()) for _, s, _, _ in runs)
    n_mask = sum(int((i[s] == MASK_ID).sum()) for _, s, i, _ in runs)
    n_kept = sum(int((i[s] == d[s]).sum()) for d, s, i, _ in runs)
    n_random = n_selected - n_mask - n_kept
    replaced = torch.cat([i[s & (i != MASK_ID) & (i != d)] for d, s, i, _ in runs])
    if len(replaced) and (replaced.min() < N_SPECIAL_TOKENS or replaced.max() >= VOCAB):
        raise ExerciseFailure(f"a random replacement must be a real token, id in [{N_SPECIAL_TOKENS}, vocab_size): "
                              f"you produced {int(replaced.min())}..{int(replaced.max())}. Special ids such as [PAD] "
                              "would confuse the padding mask.")
    shares = {"[MASK]": n_mask / n_selected, "random": n_random / n_selected, "unchanged": n_kept / n_selected}
    report = ", ".join(f"{name} {share:.0%}" for name, share in shares.items())
    if shares["[MASK]"] > 0.95:
        raise ExerciseFailure(f"every selected token became [MASK] ({report}). BERT keeps 10 % unchanged and swaps "
                              "10 % for a random token, so the model cannot tell which visible tokens to fix.")
    tolerance = 4 * math.sqrt(0.25 / n_selected)  # four standard deviations of a proportion, at worst
    for name, target in (("[MASK]", 0.8), ("random", 0.1), ("unchanged", 0.1)):
        if abs(shares[name] - target) > tolerance + 0.005:
            raise ExerciseFailure(f"of the selected tokens you made {report}; aim for 80 % / 10 % / 10 %. "
                                  "Draw ONE uniform number u per position: u < 0.8 → [MASK], 0.8 ≤ u < 0.9 → "
                                  "random, else unchanged (two independent draws do not give 10 % / 10 %).")
    first = call_corrupt(ns["corrupt_selected"])[0][2]
    if not torch.equal(first, runs[0][2]):
        raise ExerciseFailure("two calls with identically seeded generators gave different inputs: pass "
                              "`generator=generator` to torch.rand and torch.randint.")


def example_logits_labels() -> tuple[torch.Tensor, torch.Tensor]:
    """logits ``(4, 10, 50)``, labels ``(4, 10)`` with 8 selected positions; accuracy 3/8 on those, but the
    unselected positions hold ids the model predicts too, so forgetting the mask changes the answer."""
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 10, 50, generator=generator)
    predictions = logits.argmax(-1)
    labels = torch.full((4, 10), IGNORE_INDEX)
    positions = [(0, 1), (0, 5), (1, 2), (1, 9), (2, 0), (2, 4), (3, 3), (3, 7)]
    for i, (row, col) in enumerate(positions):
        labels[row, col] = predictions[row, col] if i < 3 else (predictions[row, col] + 1) % 50
    return logits, labels


def check_masked_accuracy(ns) -> None:
    logits, labels = example_logits_labels()
    got = ns["masked_accuracy"](logits, labels)
    got = float(got.item() if isinstance(got, torch.Tensor) else got)
    expected = 3 / 8
    if math.isclose(got, expected, abs_tol=1e-6):
        return
    if math.isclose(got, 3 / labels.numel(), abs_tol=1e-6):
        raise ExerciseFailure(f"you divided by every position ({labels.numel()}); divide by the number of selected "
                              "positions, (labels != -100).sum().")
    if math.isclose(got, 100 * expected, abs_tol=1e-4):
        raise ExerciseFailure("return a fraction between 0 and 1, not a percentage.")
    if got == 0.0 and labels.dtype == torch.long:
        raise ExerciseFailure("got 0: compare the arg-max over the *last* axis (the vocabulary), "
                              "logits.argmax(dim=-1), with the labels.")
    raise ExerciseFailure(f"expected {expected:.3f} (3 of the 8 selected positions are right), got {got:.3f}. "
                          "Keep only positions where labels != -100, then compare argmax(dim=-1) with the labels.")


class TinyMLM(nn.Module):
    """Embedding → linear output layer: the two matrices weight tying shares."""

    def __init__(self, vocab_size: int = 120, d_model: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.output = nn.Linear(d_model, vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.output(self.embedding(ids))


def check_tie_weights(ns) -> None:
    model = TinyMLM()
    before = sum(p.numel() for p in model.parameters())
    returned = ns["tie_weights"](model)
    model = returned if isinstance(returned, nn.Module) else model
    if model.output.weight.shape != (120, 16):
        raise ExerciseFailure(f"the output weight must keep its shape (vocab_size, d_model) = (120, 16), got "
                              f"{tuple(model.output.weight.shape)}: nn.Linear stores (out, in), exactly the "
                              "embedding's (vocab_size, d_model) — no transpose needed.")
    if model.output.weight is not model.embedding.weight:
        if model.output.weight.data_ptr() == model.embedding.weight.data_ptr():
            raise ExerciseFailure("the two layers share their numbers (via .data) but remain two Parameter objects: "
                                  "the model still counts both, each gets its own gradient and optimizer state, and "
                                  "every step updates the shared matrix twice. Assign the Parameter itself: "
                                  "model.output.weight = model.embedding.weight.")
        if torch.equal(model.output.weight, model.embedding.weight):
            raise ExerciseFailure("the values match but they are two separate tensors (a copy): after one "
                                  "optimizer step they drift apart. Assign the *Parameter* itself: "
                                  "model.output.weight = model.embedding.weight.")
        raise ExerciseFailure("model.output.weight should be the very same Parameter as model.embedding.weight.")
    after = sum(p.numel() for p in model.parameters())
    if before - after != 120 * 16:
        raise ExerciseFailure(f"expected {120 * 16} fewer parameters after tying, got {before - after}.")
    with torch.no_grad():
        model.embedding.weight[10, 0] = 123.0
    if model.output.weight[10, 0].item() != 123.0:
        raise ExerciseFailure("a change to the embedding does not show in the output layer; they are not shared.")


q1 = Exercise(
    name="BERT's 80/10/10 corruption",
    variables=("corrupt_selected",),
    checker=check_corrupt_selected,
    hint="labels = ids.masked_fill(~selected, -100). Then u = torch.rand(ids.shape, generator=generator): "
         "[MASK] where selected & (u < 0.8); a torch.randint(7, vocab_size, ...) token where "
         "selected & (0.8 <= u < 0.9); the rest stays.",
    solution=(
        "import torch\n"
        "\n"
        "def corrupt_selected(ids, selected, vocab_size, generator):\n"
        "    labels = ids.masked_fill(~selected, -100)\n"
        "    u = torch.rand(ids.shape, generator=generator)\n"
        "    random_ids = torch.randint(7, vocab_size, ids.shape, generator=generator)\n"
        "    inputs = ids.masked_fill(selected & (u < 0.8), 4)  # 4 = [MASK]\n"
        "    inputs = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, inputs)\n"
        "    return inputs, labels\n"
    ),
    success="Correct! 80 % [MASK], 10 % random, 10 % unchanged, labels only where selected.",
)

q2 = Exercise(
    name="Masked-token accuracy",
    variables=("masked_accuracy",),
    checker=check_masked_accuracy,
    hint="selected = labels != -100; compare logits.argmax(dim=-1)[selected] with labels[selected] and average.",
    solution=(
        "def masked_accuracy(logits, labels):\n"
        "    selected = labels != -100\n"
        "    return (logits.argmax(dim=-1)[selected] == labels[selected]).float().mean().item()\n"
    ),
    success="Correct! Only the selected positions count.",
)

q3 = Exercise(
    name="Tie the output layer to the embedding",
    variables=("tie_weights",),
    checker=check_tie_weights,
    hint="nn.Linear(d_model, vocab_size).weight has shape (vocab_size, d_model), like the embedding table: "
         "assign the Parameter object, not a copy of its values.",
    solution=(
        "def tie_weights(model):\n"
        "    model.output.weight = model.embedding.weight\n"
        "    return model\n"
    ),
    success="Correct! One matrix now both reads tokens in and scores them out.",
)
