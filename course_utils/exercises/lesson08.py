"""Exercises of notebook 08 (a decoder-only GPT): the causal LM shift, temperature, top-k and top-p filters."""
from __future__ import annotations

import torch

from .. import decoding
from .asserts import as_tensor, close, own_function
from .core import Exercise, ExerciseFailure

PAD, BOS, EOS = 0, 5, 6


def example_batch() -> torch.Tensor:
    """``(2, 6)`` rows ``[BOS] tokens [EOS] [PAD]…`` of different lengths."""
    return torch.tensor([[BOS, 40, 41, 42, EOS, PAD],
                         [BOS, 50, 51, 52, 53, EOS]])


def check_shift_for_lm(ns) -> None:
    shift = own_function(ns["shift_for_lm"], "shift_for_lm", "course_utils.losses.shift_for_lm")
    ids = example_batch()
    result = shift(ids.clone())
    if not isinstance(result, tuple) or len(result) != 2:
        raise ExerciseFailure("`shift_for_lm` should return a pair (inputs, targets).")
    inputs, targets = (as_tensor(x, "shift_for_lm") for x in result)
    if torch.equal(inputs, ids) and torch.equal(targets, ids):
        raise ExerciseFailure("no shift: with targets equal to the inputs, position t is asked for the token it "
                              "already reads — the model learns to copy and predicts nothing. Read ids[:, :-1] "
                              "and score against ids[:, 1:].")
    if torch.equal(inputs, ids[:, 1:]) and torch.equal(targets, ids[:, :-1]):
        raise ExerciseFailure("shifted the wrong way: that asks for the *previous* token. The inputs start with "
                              "[BOS] (ids[:, :-1]); the targets are the next tokens (ids[:, 1:]).")
    if inputs.dim() == 2 and inputs.size(0) != 2:
        raise ExerciseFailure(f"got shapes {tuple(inputs.shape)} and {tuple(targets.shape)}: you sliced the batch "
                              "axis (dim 0); slice the sequence axis (dim 1): ids[:, :-1], ids[:, 1:].")
    if inputs.shape != (2, 5) or targets.shape != (2, 5):
        raise ExerciseFailure(f"both should have shape (batch, seq - 1) = (2, 5), got {tuple(inputs.shape)} and "
                              f"{tuple(targets.shape)}: shift by exactly one position.")
    if torch.equal(inputs, ids[:, :-1]) and torch.equal(targets, ids[:, :-1]):
        raise ExerciseFailure("the targets are not shifted: target t must be the token *after* input t, "
                              "ids[:, 1:].")
    if not (torch.equal(inputs, ids[:, :-1]) and torch.equal(targets, ids[:, 1:])):
        raise ExerciseFailure("expected inputs = ids[:, :-1] (starts with [BOS]) and targets = ids[:, 1:] (ends "
                              "with [EOS] or padding).")


LOGITS = torch.tensor([[2.0, 0.5, -1.0, 1.0, 0.0],
                       [0.0, 3.0, 1.0, 1.5, -2.0]])


def check_temperature_probs(ns) -> None:
    function = own_function(ns["temperature_probs"], "temperature_probs",
                            "course_utils.decoding.apply_temperature")
    for temperature in (0.5, 1.0, 2.0):
        got = as_tensor(function(LOGITS.clone(), temperature), "temperature_probs", tuple(LOGITS.shape),
                        "(rows, vocab)")
        expected = torch.softmax(decoding.apply_temperature(LOGITS, temperature), dim=-1)
        if close(got, expected):
            continue
        if close(got, torch.softmax(LOGITS * temperature, dim=-1)):
            raise ExerciseFailure(f"at temperature {temperature} you multiplied the logits: divide them, so a "
                                  "temperature below 1 sharpens the distribution and above 1 flattens it.")
        if close(got, torch.softmax(LOGITS, dim=-1) ** (1 / temperature)):
            raise ExerciseFailure("the probabilities do not sum to 1: raising probabilities to a power needs a "
                                  "renormalisation — simpler, divide the *logits* and take the softmax.")
        if close(got, torch.softmax(LOGITS / temperature, dim=0)):
            raise ExerciseFailure("softmax over the wrong axis: each row (one position) is a distribution over "
                                  "the vocabulary, so normalise with dim=-1.")
        if close(got, LOGITS / temperature):
            raise ExerciseFailure("return probabilities, not scaled logits: apply softmax(…, dim=-1).")
        if close(got, torch.softmax(LOGITS, dim=-1)):
            raise ExerciseFailure(f"the temperature changed nothing at temperature={temperature}: divide the "
                                  "logits by it before the softmax.")
        raise ExerciseFailure(f"at temperature {temperature} expected softmax(logits / temperature, dim=-1).")


def kept_sets(logits: torch.Tensor) -> list[set[int]]:
    return [set(torch.isfinite(row).nonzero().flatten().tolist()) for row in logits]


def check_filter(got: torch.Tensor, expected: torch.Tensor, name: str, setting: str) -> None:
    """Common failures of top-k and top-p filters; passes if the same tokens are kept with unchanged logits."""
    if got.dtype == torch.bool or (got.ne(0) & got.ne(1)).sum() == 0 and not torch.isinf(got).any():
        raise ExerciseFailure(f"`{name}` should return the filtered *logits* (removed tokens set to -inf), "
                              "not a 0/1 or bool mask.")
    if bool(torch.isnan(got).any()):
        raise ExerciseFailure(f"`{name}` returned NaN; set removed logits to float('-inf').")
    got_sets, expected_sets = kept_sets(got), kept_sets(expected)
    if got_sets != expected_sets:
        if all((torch.isfinite(got)).all(dim=-1)) and bool((got == 0).any()) and bool((expected.isinf()).any()):
            raise ExerciseFailure(f"with {setting} the removed tokens got logit 0, which still has probability "
                                  "e^0 / Σ > 0: set them to float('-inf').")
        raise ExerciseFailure(f"with {setting} expected to keep tokens {expected_sets} (per row), kept {got_sets}.")
    keep = torch.isfinite(expected)
    if not close(got[keep], expected[keep]):
        raise ExerciseFailure("the kept tokens' logits changed; leave them as they are (only the removed ones "
                              "become -inf), so their relative probabilities stay the same.")


def check_top_k_filter(ns) -> None:
    function = own_function(ns["top_k_filter"], "top_k_filter", "course_utils.decoding.top_k_filter")
    for k in (1, 2, 3):
        got = as_tensor(function(LOGITS.clone(), k), "top_k_filter", tuple(LOGITS.shape), "(rows, vocab)")
        expected = decoding.top_k_filter(LOGITS, k)
        got_sets = kept_sets(got)
        if all(len(s) == LOGITS.size(1) - k for s in got_sets):
            raise ExerciseFailure(f"with k={k} you removed the {k} most probable tokens and kept the rest: keep "
                                  "the k *largest* logits (topk), remove the others.")
        if all(len(s) < k for s in got_sets):
            raise ExerciseFailure(f"with k={k} you kept only {min(map(len, got_sets))} tokens in a row: keep k of "
                                  "them, the logits >= the k-th largest (topk(k).values[..., -1:]).")
        if got_sets == kept_sets(decoding.top_k_filter(LOGITS.T.contiguous(), k).T):
            raise ExerciseFailure("ranked along the wrong axis: every row is one position's distribution, so "
                                  "take topk over dim=-1.")
        check_filter(got, expected, "top_k_filter", f"k={k}")


def check_top_p_filter(ns) -> None:
    function = own_function(ns["top_p_filter"], "top_p_filter", "course_utils.decoding.top_p_filter")
    for p in (0.5, 0.8, 0.95):
        got = as_tensor(function(LOGITS.clone(), p), "top_p_filter", tuple(LOGITS.shape), "(rows, vocab)")
        expected = decoding.top_p_filter(LOGITS, p)
        probs, order = torch.softmax(LOGITS, -1).sort(-1, descending=True)
        after = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, probs.cumsum(-1) <= p)
        if kept_sets(got) == kept_sets(LOGITS.masked_fill(~after, float("-inf"))) != kept_sets(expected):
            raise ExerciseFailure(f"with p={p} you kept only the tokens whose cumulative probability stays <= p, "
                                  "so the set can fall short of p (or be empty): keep a token while the mass "
                                  "*before* it is below p (cumsum - probs < p); the most probable token always stays.")
        unsorted = LOGITS.masked_fill(~(torch.softmax(LOGITS, -1).cumsum(-1) - torch.softmax(LOGITS, -1) < p),
                                      float("-inf"))
        if kept_sets(got) == kept_sets(unsorted) != kept_sets(expected):
            raise ExerciseFailure("the cumulative sum must run over the tokens sorted from most to least probable "
                                  "(sort(descending=True)), then map the decision back to the original ids.")
        check_filter(got, expected, "top_p_filter", f"p={p}")


q1 = Exercise(
    name="The causal LM shift",
    variables=("shift_for_lm",),
    checker=check_shift_for_lm,
    hint="The model reads [BOS] w1 w2 … and must predict w1 w2 … [EOS]: drop the last column for the inputs and "
         "the first column for the targets.",
    solution="def shift_for_lm(ids):\n    return ids[:, :-1], ids[:, 1:]\n",
)

q2 = Exercise(
    name="Temperature",
    variables=("temperature_probs",),
    checker=check_temperature_probs,
    hint="Divide the logits by the temperature, then softmax over the vocabulary axis (dim=-1).",
    solution=("import torch\n\ndef temperature_probs(logits, temperature):\n"
              "    return torch.softmax(logits / temperature, dim=-1)\n"),
)

q3 = Exercise(
    name="Top-k filtering",
    variables=("top_k_filter",),
    checker=check_top_k_filter,
    hint="logits.topk(k, dim=-1).values[..., -1:] is the k-th largest logit of each row; masked_fill everything "
         "below it with float('-inf').",
    solution=("def top_k_filter(logits, k):\n"
              "    kth_largest = logits.topk(k, dim=-1).values[..., -1:]\n"
              "    return logits.masked_fill(logits < kth_largest, float('-inf'))\n"),
)

q4 = Exercise(
    name="Top-p (nucleus) filtering",
    variables=("top_p_filter",),
    checker=check_top_p_filter,
    hint="Sort the probabilities in descending order, keep a token while the mass before it (cumsum - probs) is "
         "below p, scatter that decision back to the original order, and fill the rest with -inf.",
    solution=("import torch\n\ndef top_p_filter(logits, p):\n"
              "    probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)\n"
              "    keep_sorted = probs.cumsum(dim=-1) - probs < p\n"
              "    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)\n"
              "    return logits.masked_fill(~keep, float('-inf'))\n"),
)
