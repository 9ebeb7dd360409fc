"""Masked language modelling (BERT): corrupt some tokens, ask the encoder to restore them, measure how well.

The recipe of Devlin et al. (2019), as the course implements it:

1. **Select** each *real* token (id ``>= first_real_id``; never [PAD], [CLS], [SEP], [MASK], ...) with
   probability ``select_prob`` = 15 %. A row with real tokens but no selected one gets one real token selected
   uniformly at random, so every sequence that has text contributes to the loss (for short rows this nudges the
   selection rate slightly above 15 %). A row without any real token stays untouched (all labels ignored).
2. **Corrupt** each selected token: 80 % → [MASK], 10 % → a uniformly random real token (which may, with
   probability ``1 / n_real_tokens``, be the original one), 10 % → left unchanged.
3. **Label**: the original id at selected positions and :data:`IGNORE_INDEX` (-100) everywhere else, so
   ``F.cross_entropy(..., ignore_index=-100)`` scores only the selected positions.

Metrics: masked-token accuracy and perplexity on held-out text, next to a :class:`UnigramBaseline` that ignores
the context and predicts from the training set's token frequencies.
"""
from __future__ import annotations

__all__ = ["IGNORE_INDEX", "MASK_TEXT", "UnigramBaseline", "check_labels", "check_probabilities",
           "encode_with_masks", "evaluate_mlm", "fill_mask", "logits_at", "make_mlm_loss_fn", "mask_tokens",
           "masked_accuracy"]

import math
from collections.abc import Iterable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from .errors import CourseTypeError, CourseValueError
from .tokenization import CLS_ID, MASK_ID, N_SPECIAL_TOKENS, SEP_ID, Tokenizer
from .validation import (
    check_index,
    check_int,
    check_module,
    check_non_negative_int,
    check_positive_int,
    check_rank,
    check_real,
    check_str,
    check_tensor,
    check_token_ids,
    describe,
)

IGNORE_INDEX = -100
MASK_TEXT = "[MASK]"


def check_probabilities(select_prob: float, mask_prob: float, random_prob: float) -> None:
    """Raise a clear error unless the three masking probabilities make sense."""
    for name, value in (("select_prob", select_prob), ("mask_prob", mask_prob), ("random_prob", random_prob)):
        check_real(name, value)
    if not 0.0 < select_prob <= 1.0:
        raise CourseValueError(f"select_prob must be in (0, 1], got {select_prob}; BERT uses 0.15")
    if mask_prob < 0 or random_prob < 0 or mask_prob + random_prob > 1.0:
        raise CourseValueError(f"mask_prob={mask_prob} and random_prob={random_prob} must be >= 0 and sum to at most 1 "
                         "(the rest of the selected tokens stays unchanged); BERT uses 0.8 and 0.1")


def check_labels(labels: object, logits: object) -> None:
    """Raise a clear error unless ``logits`` is float ``(batch, seq, vocab_size)`` and ``labels`` an integer
    ``(batch, seq)`` tensor of ids in ``[0, vocab_size)`` or :data:`IGNORE_INDEX`."""
    check_rank(logits, 3, "logits", "(batch, seq, vocab_size)")
    if not logits.is_floating_point():
        raise CourseTypeError(f"logits must be floating point, got {logits.dtype}; pass the model's output scores")
    check_tensor("labels", labels)
    if labels.dtype.is_floating_point or labels.dtype == torch.bool or labels.dtype.is_complex:
        raise CourseTypeError(f"labels must be integer token ids (torch.long), got {labels.dtype}; "
                              "use the labels returned by mask_tokens")
    if logits.shape[:-1] != labels.shape:
        raise CourseValueError(f"logits {tuple(logits.shape)} and labels {tuple(labels.shape)} disagree: expected "
                               "logits (batch, seq, vocab_size) and labels (batch, seq)")
    real = labels[labels != IGNORE_INDEX]
    if real.numel() and (int(real.min()) < 0 or int(real.max()) >= logits.size(-1)):
        raise CourseValueError(f"labels must be ids in [0, {logits.size(-1)}) or {IGNORE_INDEX}, found range "
                               f"[{int(real.min())}, {int(real.max())}]; logits and labels come from different "
                               "vocabularies")


def mask_tokens(ids: torch.Tensor, vocab_size: int, generator: torch.Generator | None = None,
                select_prob: float = 0.15, mask_prob: float = 0.8, random_prob: float = 0.1,
                mask_id: int = MASK_ID, first_real_id: int = N_SPECIAL_TOKENS) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking of a batch of token ids.

    Args:
        ids: ``(batch, seq)`` integer token ids (any integer dtype); ids ``< first_real_id`` are special tokens
            or padding.
        vocab_size: size of the vocabulary; random replacements are drawn from ``[first_real_id, vocab_size)``.
        generator: a ``torch.Generator`` on ``ids.device`` (seed it for reproducible masks); ``None`` uses the
            global RNG.
        select_prob: chance that a real token is selected for prediction.
        mask_prob, random_prob: of the selected tokens, the share replaced by ``mask_id`` and by a random real
            token; the remaining ``1 - mask_prob - random_prob`` keep their id.

    Returns:
        ``(inputs, labels)``, both ``(batch, seq)`` int64: the corrupted ids for the model, and the original id at
        selected positions with :data:`IGNORE_INDEX` elsewhere. ``ids`` itself is not modified.
    """
    vocab_size = check_positive_int("vocab_size", vocab_size)
    first_real_id = check_non_negative_int("first_real_id", first_real_id)
    if vocab_size <= first_real_id:
        raise CourseValueError(f"vocab_size={vocab_size} leaves no real tokens after the {first_real_id} special ids")
    check_index("mask_id", mask_id, vocab_size, f"the vocabulary (vocab_size={vocab_size})")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise CourseTypeError(f"generator must be a torch.Generator or None, got {describe(generator)}; "
                              "use torch.Generator().manual_seed(0)")
    ids = check_token_ids(ids, vocab_size, name="ids", allow_empty=True)
    check_probabilities(select_prob, mask_prob, random_prob)
    real = ids >= first_real_id                                                    # (batch, seq) bool

    def uniform() -> torch.Tensor:
        return torch.rand(ids.shape, generator=generator, device=ids.device)

    selected = real & (uniform() < select_prob)
    # rows with text but nothing selected: select the real token with the highest random score
    empty_rows = real.any(dim=1) & ~selected.any(dim=1)                            # (batch,)
    if empty_rows.any():
        scores = uniform().masked_fill(~real, -1.0)
        pick = scores.argmax(dim=1)                                                # (batch,)
        rows = empty_rows.nonzero(as_tuple=True)[0]
        selected[rows, pick[rows]] = True

    labels = ids.masked_fill(~selected, IGNORE_INDEX)
    action = uniform()                                                             # one draw decides 80/10/10
    to_mask = selected & (action < mask_prob)
    to_random = selected & (action >= mask_prob) & (action < mask_prob + random_prob)
    random_ids = torch.randint(first_real_id, vocab_size, ids.shape, generator=generator, device=ids.device)
    inputs = ids.masked_fill(to_mask, mask_id)
    inputs = torch.where(to_random, random_ids, inputs)
    return inputs, labels


def masked_accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Share of selected positions (``labels != -100``) whose arg-max prediction equals the label.

    Args:
        logits: ``(batch, seq, vocab_size)``; labels: ``(batch, seq)`` int64.
    """
    check_labels(labels, logits)
    selected = labels != IGNORE_INDEX
    if not selected.any():
        raise CourseValueError("no position is selected (every label is -100), so accuracy is undefined")
    return (logits.argmax(dim=-1)[selected] == labels[selected]).float().mean().item()


class UnigramBaseline:
    """Context-free baseline: predict every hidden token from the training set's token frequencies.

    ``probabilities`` is the add-one-smoothed unigram distribution over the real tokens (special ids get 0), so
    a held-out token never seen in training still has a finite log-probability. Every id must lie in
    ``[0, vocab_size)``: an id outside it is refused, not silently dropped.
    """

    def __init__(self, train_ids: Iterable[Sequence[int]] | torch.Tensor, vocab_size: int,
                 first_real_id: int = N_SPECIAL_TOKENS) -> None:
        vocab_size = check_positive_int("vocab_size", vocab_size)
        first_real_id = check_non_negative_int("first_real_id", first_real_id)
        if isinstance(train_ids, (str, bytes)) or not hasattr(train_ids, "__iter__"):
            raise CourseTypeError(f"train_ids must be a (batch, seq) tensor or a list of id lists, got "
                                  f"{describe(train_ids)}")
        counts = torch.zeros(vocab_size, dtype=torch.float64)
        rows = [train_ids] if isinstance(train_ids, torch.Tensor) else train_ids
        for i, row in enumerate(rows):
            row = torch.as_tensor(row).flatten()
            if row.numel() and (row.dtype.is_floating_point or row.dtype == torch.bool or row.dtype.is_complex):
                raise CourseTypeError(f"train_ids row {i} holds {row.dtype} values; token ids must be integers")
            row = row.long()
            if row.numel() and (int(row.min()) < 0 or int(row.max()) >= vocab_size):
                raise CourseValueError(f"train_ids row {i} has ids in [{int(row.min())}, {int(row.max())}], outside "
                                       f"the vocabulary [0, {vocab_size}); pass the tokenizer's vocab_size")
            counts += torch.bincount(row, minlength=vocab_size).double()
        counts[:first_real_id] = 0.0
        if counts.sum() == 0:
            raise CourseValueError("UnigramBaseline got no real tokens to count; pass the tokenized training sentences")
        smoothed = counts + 1.0
        smoothed[:first_real_id] = 0.0
        self.first_real_id = first_real_id
        self.counts = counts
        self.probabilities = smoothed / smoothed.sum()                               # (vocab_size,)
        self.most_frequent_id = int(counts.argmax())

    def score(self, labels: torch.Tensor) -> dict[str, float]:
        """Accuracy (always guessing the most frequent token) and perplexity on the selected positions."""
        check_tensor("labels", labels)
        if labels.dtype.is_floating_point or labels.dtype == torch.bool or labels.dtype.is_complex:
            raise CourseTypeError(f"labels must be integer token ids, got {labels.dtype}; use mask_tokens' labels")
        targets = labels[labels != IGNORE_INDEX].cpu().long()
        if targets.numel() and (int(targets.min()) < 0 or int(targets.max()) >= len(self.probabilities)):
            raise CourseValueError(f"labels must be ids in [0, {len(self.probabilities)}) or {IGNORE_INDEX}, found "
                                   f"range [{int(targets.min())}, {int(targets.max())}]")
        if targets.numel() and int(targets.min()) < self.first_real_id:
            raise CourseValueError(f"labels hold the special id {int(targets.min())} (ids < {self.first_real_id} are "
                                   "special tokens, which the baseline never predicts: perplexity would be inf); "
                                   "score the labels returned by mask_tokens, which select real tokens only")
        if targets.numel() == 0:
            raise CourseValueError("no position is selected (every label is -100)")
        nll = -torch.log(self.probabilities[targets]).mean().item()
        return {"accuracy": (targets == self.most_frequent_id).double().mean().item(), "perplexity": math.exp(nll),
                "loss": nll}


def logits_at(model: nn.Module, inputs: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits of a :class:`~course_utils.models.MaskedLanguageModel` at the ``selected`` positions only.

    Equal to ``model(inputs)[selected]``, but the MLM head — the largest matrix
    product, ``d_model × vocab_size`` per token — runs on ~15 % of the tokens instead of all of them.

    Args:
        inputs: ``(batch, seq)`` int64 ids; selected: ``(batch, seq)`` bool. Returns ``(n_selected, vocab_size)``.
    """
    check_module("model", model)
    check_tensor("selected", selected)
    if selected.dtype != torch.bool:
        raise CourseTypeError(f"selected must be a bool tensor, got {selected.dtype}; use labels != IGNORE_INDEX")
    if not isinstance(inputs, torch.Tensor) or inputs.shape != selected.shape:
        raise CourseValueError(f"inputs {describe(inputs)} and selected {tuple(selected.shape)} must have the same "
                               "(batch, seq) shape")
    return model.head(model.text_encoder(inputs)[selected])           # (n_selected, d_model) → (n_selected, vocab)


def make_mlm_loss_fn(vocab_size: int, seed: int = 0, **masking):
    """``loss_fn(model, ids)`` for ``training.fit``: draws a fresh BERT mask for every batch ("dynamic masking").

    The generator is seeded once, so a rerun sees the same sequence of masks; each epoch sees different ones.
    ``masking`` is passed on to :func:`mask_tokens`.
    """
    check_positive_int("vocab_size", vocab_size)
    check_int("seed", seed)
    check_probabilities(masking.get("select_prob", 0.15), masking.get("mask_prob", 0.8),
                        masking.get("random_prob", 0.1))
    generator = torch.Generator().manual_seed(seed)

    def loss_fn(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        inputs, labels = mask_tokens(ids.cpu(), vocab_size, generator, **masking)
        inputs, labels = inputs.to(ids.device), labels.to(ids.device)
        selected = labels != IGNORE_INDEX
        if not selected.any():
            raise CourseValueError("this batch has no real token to predict; drop empty rows before training")
        return F.cross_entropy(logits_at(model, inputs, selected), labels[selected])

    return loss_fn


@torch.no_grad()
def evaluate_mlm(model: nn.Module, batches: Iterable[torch.Tensor], vocab_size: int, seed: int = 1234,
                 baseline: UnigramBaseline | None = None, **masking) -> dict[str, float]:
    """Masked-token metrics on (held-out) batches, with the same masks on every call (fixed ``seed``).

    Returns ``{"loss", "accuracy", "perplexity", "n_predictions"}`` (perplexity = exp(mean cross-entropy) over
    all selected tokens) and, with a ``baseline``, ``"unigram_accuracy"`` and ``"unigram_perplexity"`` on the very
    same positions.
    """
    check_module("model", model)
    check_positive_int("vocab_size", vocab_size)
    check_int("seed", seed)
    if baseline is not None and not isinstance(baseline, UnigramBaseline):
        raise CourseTypeError(f"baseline must be a UnigramBaseline or None, got {describe(baseline)}")
    if isinstance(batches, (str, bytes, torch.Tensor)) or not hasattr(batches, "__iter__"):
        raise CourseTypeError(f"batches must be a list (or loader) of (batch, seq) id tensors, got {describe(batches)}"
                              "; for one batch pass [ids]")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    total_nll, n_correct, n_predictions, all_labels = 0.0, 0, 0, []
    for ids in batches:
        check_tensor("each batch", ids, "; batches must be (batch, seq) id tensors")
        inputs, labels = mask_tokens(ids.cpu(), vocab_size, generator, **masking)
        logits = model(inputs.to(device)).float().cpu()
        selected = labels != IGNORE_INDEX
        total_nll += F.cross_entropy(logits[selected], labels[selected], reduction="sum").item()
        n_correct += (logits[selected].argmax(-1) == labels[selected]).sum().item()
        n_predictions += int(selected.sum())
        all_labels.append(labels[selected])
    model.train(was_training)
    if n_predictions == 0:
        raise CourseValueError("evaluate_mlm found no tokens to predict; are the batches empty or all padding?")
    metrics = {"loss": total_nll / n_predictions, "accuracy": n_correct / n_predictions,
               "perplexity": math.exp(total_nll / n_predictions), "n_predictions": float(n_predictions)}
    if baseline is not None:
        unigram = baseline.score(torch.cat(all_labels))
        metrics.update(unigram_accuracy=unigram["accuracy"], unigram_perplexity=unigram["perplexity"])
    return metrics


def check_tokenizer(tokenizer: object) -> None:
    """Raise a clear error unless ``tokenizer`` is one of the course's tokenizers."""
    if not isinstance(tokenizer, Tokenizer):
        raise CourseTypeError(f"tokenizer must be a course tokenizer (e.g. BPETokenizer.train(...)), got "
                              f"{describe(tokenizer)}")


def encode_with_masks(tokenizer, text: str, max_len: int | None = None) -> torch.Tensor:
    """``[CLS] text [SEP]`` as ``(1, seq)`` ids, where every literal ``[MASK]`` in ``text`` becomes the [MASK] id.

    The course tokenizer's ``encode`` treats ``"[MASK]"`` as ordinary characters, so the text is split around it.
    The space before a mask is dropped: byte-level BPE glues a word to its leading space (``" function"``), so the
    hidden token carries that space, as in training.
    """
    check_tokenizer(tokenizer)
    check_str("text", text)
    if max_len is not None:
        check_positive_int("max_len", max_len)
    if MASK_TEXT not in text:
        raise CourseValueError(f"the text has no {MASK_TEXT}; write e.g. 'The {MASK_TEXT} returns a list.'")
    pieces = text.split(MASK_TEXT)
    ids = [CLS_ID]
    for i, piece in enumerate(pieces):
        ids += tokenizer.encode(piece.rstrip(" ") if i < len(pieces) - 1 else piece)
        if i < len(pieces) - 1:
            ids.append(MASK_ID)
    ids.append(SEP_ID)
    if max_len is not None and len(ids) > max_len:
        raise CourseValueError(f"the text is {len(ids)} tokens long, more than the model's max_len={max_len}; "
                               "shorten it")
    return torch.tensor([ids])


@torch.no_grad()
def fill_mask(model: nn.Module, tokenizer, text: str, k: int = 5) -> list[list[tuple[str, float]]]:
    """Top-``k`` predictions for every ``[MASK]`` in ``text``: one list of ``(token, probability)`` per mask."""
    check_module("model", model)
    check_tokenizer(tokenizer)
    check_str("text", text)
    check_positive_int("k", k)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    ids = encode_with_masks(tokenizer, text).to(device)
    probabilities = model(ids)[0].float().softmax(dim=-1).cpu()                     # (seq, vocab_size)
    model.train(was_training)
    positions = (ids[0] == MASK_ID).nonzero(as_tuple=True)[0].cpu()
    if k > probabilities.size(-1):
        raise CourseValueError(f"k={k} is larger than the vocabulary of {probabilities.size(-1)} tokens; ask for fewer")
    top = probabilities[positions].topk(k, dim=-1)
    return [[(tokenizer.token_str(int(i)), float(p)) for p, i in zip(values, indices)]
            for values, indices in zip(top.values, top.indices)]


# ---------------------------------------------------------------------------- count baselines (lesson 06)
class NeighbourCountBaseline:
    """The strong count baseline: guess a hidden token from the tokens right beside it.

    From the training sequences it counts, for every position, (left, right) → token, left → token and
    right → token, plus the unigram counts. A hidden position is answered from the most specific table whose
    context it has seen: its (left, right) pair, else its left neighbour, else its right neighbour, else the
    unigram. A neighbour that is itself [MASK] is unknown, so that side is skipped. With ``use_right=False`` the
    baseline only reads the left neighbour: the one-sided bigram.

    It reads the *corrupted* input, exactly as the model does, and it is scored on the positions
    :func:`evaluate_mlm` scores (:func:`evaluate_at_masks`).
    """

    def __init__(self, train_ids: Iterable[Sequence[int]] | torch.Tensor, vocab_size: int, use_right: bool = True,
                 first_real_id: int = N_SPECIAL_TOKENS, mask_id: int = MASK_ID) -> None:
        from collections import Counter, defaultdict

        self.vocab_size, self.use_right = vocab_size, use_right
        self.first_real_id, self.mask_id = first_real_id, mask_id
        self.both, self.left, self.right = defaultdict(Counter), defaultdict(Counter), defaultdict(Counter)
        rows = train_ids.tolist() if isinstance(train_ids, torch.Tensor) else train_ids
        for row in rows:
            row = [int(t) for t in row]
            for i in range(1, len(row) - 1):
                token = row[i]
                if token < first_real_id:
                    continue
                self.left[row[i - 1]][token] += 1
                if use_right:
                    self.both[row[i - 1], row[i + 1]][token] += 1
                    self.right[row[i + 1]][token] += 1
        self.unigram = UnigramBaseline(rows, vocab_size, first_real_id)
        self._best: dict = {}

    def counts_for(self, left: int, right: int) -> dict[int, int]:
        """Counts of the hidden token from the most specific table that has seen this context (``{}`` = unigram)."""
        known_left, known_right = left != self.mask_id, right != self.mask_id and self.use_right
        if known_left and known_right and (left, right) in self.both:
            return self.both[left, right]
        if known_left and left in self.left:
            return self.left[left]
        if known_right and right in self.right:
            return self.right[right]
        return {}

    def predict(self, left: int, right: int) -> int:
        """The most frequent hidden token for the context ``(left, right)`` (ties → the smaller id)."""
        key = (left, right)
        if key not in self._best:
            counts = self.counts_for(left, right)
            self._best[key] = (min(counts, key=lambda t: (-counts[t], t)) if counts else self.unigram.most_frequent_id)
        return self._best[key]

    def log_probabilities(self, left: int, right: int) -> torch.Tensor:
        """``(vocab_size,)`` log-probabilities: the backed-off counts, mixed 99 : 1 with the smoothed unigram so
        that no token has probability 0 (used to rank whole words in fill-mask)."""
        counts = self.counts_for(left, right)
        probabilities = 0.01 * self.unigram.probabilities.clone()
        if counts:
            ids = torch.tensor(list(counts))
            values = torch.tensor([float(counts[t]) for t in counts], dtype=torch.float64)
            probabilities[ids] += 0.99 * values / values.sum()
        else:
            probabilities = self.unigram.probabilities.clone()
        return probabilities.log()

    def predict_batch(self, inputs: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
        """Predicted ids at the ``selected`` positions of the ``(batch, seq)`` corrupted ``inputs``:
        ``(n_selected,)``."""
        rows, columns = selected.nonzero(as_tuple=True)
        padded = F.pad(inputs, (1, 1), value=self.mask_id)               # a missing neighbour counts as unknown
        lefts, rights = padded[rows, columns].tolist(), padded[rows, columns + 2].tolist()
        return torch.tensor([self.predict(left, right) for left, right in zip(lefts, rights)], dtype=torch.long)


@torch.no_grad()
def evaluate_at_masks(model: nn.Module | None, batches: Iterable[torch.Tensor], vocab_size: int,
                      baselines: dict | None = None, seed: int = 1234, **masking) -> dict[str, dict[str, float]]:
    """Accuracy of ``model`` and of each count baseline on the positions :func:`evaluate_mlm` scores.

    The masks come from the same seeded generator as :func:`evaluate_mlm` (same ``seed`` and ``masking``), so
    the positions are identical. Returns ``{name: {"accuracy", "mask_accuracy", "n_predictions", "n_mask"}}``
    for ``"model"`` (when given) and every entry of ``baselines`` (``{name: baseline}``; a
    :class:`UnigramBaseline` always guesses its most frequent token). ``mask_accuracy`` counts only the
    positions whose input showed [MASK] — there only the context can help.
    """
    baselines = dict(baselines or {})
    predictors = {}
    if model is not None:
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        predictors["model"] = lambda inputs, chosen: model(inputs.to(device)).argmax(-1).cpu()[chosen]
    for name, baseline in baselines.items():
        if isinstance(baseline, UnigramBaseline):
            predictors[name] = (lambda b: lambda inputs, chosen:
                                torch.full((int(chosen.sum()),), b.most_frequent_id))(baseline)
        else:
            predictors[name] = baseline.predict_batch
    generator = torch.Generator().manual_seed(seed)
    hits = {name: [0, 0] for name in predictors}
    n_predictions = n_mask = 0
    for ids in batches:
        inputs, labels = mask_tokens(ids.cpu(), vocab_size, generator, **masking)
        chosen = labels != IGNORE_INDEX
        targets, shown_mask = labels[chosen], inputs[chosen] == MASK_ID
        n_predictions += targets.numel()
        n_mask += int(shown_mask.sum())
        for name, predict in predictors.items():
            correct = predict(inputs, chosen) == targets
            hits[name][0] += int(correct.sum())
            hits[name][1] += int((correct & shown_mask).sum())
    if model is not None:
        model.train(was_training)
    if n_mask == 0:
        raise CourseValueError("evaluate_at_masks found no [MASK] position; are the batches empty or all padding?")
    return {name: {"accuracy": h[0] / n_predictions, "mask_accuracy": h[1] / n_mask,
                   "n_predictions": float(n_predictions), "n_mask": float(n_mask)} for name, h in hits.items()}


# ---------------------------------------------------------------------------- whole-word fill-mask (lesson 06)
class HiddenWord:
    """One held-out sentence with one whole word hidden: ``ids`` is ``[CLS] … [SEP]`` with the word's pieces
    replaced by as many [MASK] ids, from ``start`` to ``end`` (exclusive); ``word`` is the hidden text
    (with its leading space) and ``text`` the sentence with ``[MASK]`` in its place."""

    def __init__(self, ids: list[int], start: int, end: int, word: str, text: str) -> None:
        self.ids, self.start, self.end, self.word, self.text = ids, start, end, word, text


def sample_hidden_words(tokenizer, sentences: Sequence[str], n: int, seed: int = 0,
                        max_len: int | None = None) -> list[HiddenWord]:
    """``n`` sentences drawn at random (``random.Random(seed)``), one random word hidden in each.

    A hideable word is made of letters only, is not the sentence's first word, and is hidden as *all* of its BPE
    pieces. Sentences with no hideable word, or longer than ``max_len`` ids with [CLS] and [SEP], are skipped.
    """
    import random
    import re

    rng = random.Random(seed)
    order = list(range(len(sentences)))
    rng.shuffle(order)
    examples = []
    for index in order:
        pieces = tokenizer.encode(sentences[index])
        if max_len is not None and len(pieces) + 2 > max_len:
            continue
        texts = [tokenizer.token_str(t) for t in pieces]
        starts = [i for i, t in enumerate(texts) if t.startswith(" ")] + [len(pieces)]
        words = [(a, b) for a, b in zip(starts, starts[1:])
                 if re.fullmatch(r" [A-Za-z]+", "".join(texts[a:b])) and (b == len(pieces) or
                                                                          not texts[b][:1].isalpha())]
        if not words:
            continue
        a, b = words[rng.randrange(len(words))]
        ids = [CLS_ID] + pieces[:a] + [MASK_ID] * (b - a) + pieces[b:] + [SEP_ID]
        text = tokenizer.decode(pieces[:a]) + " " + MASK_TEXT + tokenizer.decode(pieces[b:])
        examples.append(HiddenWord(ids, a + 1, b + 1, "".join(texts[a:b]), text))
        if len(examples) == n:
            return examples
    raise CourseValueError(f"only {len(examples)} of the {len(sentences)} sentences have a hideable word; "
                           f"asked for {n}")


def model_scorer(model: nn.Module):
    """``scorer(inputs, position) -> (rows, vocab_size)`` log-probabilities of ``model`` at one position."""
    model.eval()
    device = next(model.parameters()).device

    @torch.no_grad()
    def scorer(inputs: torch.Tensor, position: int) -> torch.Tensor:
        return model(inputs.to(device))[:, position].float().log_softmax(-1).cpu()

    return scorer


def baseline_scorer(baseline: NeighbourCountBaseline):
    """The same interface for a count baseline: log-probabilities from the two neighbours of ``position``."""
    def scorer(inputs: torch.Tensor, position: int) -> torch.Tensor:
        return torch.stack([baseline.log_probabilities(int(row[position - 1]), int(row[position + 1])).float()
                            for row in inputs])

    return scorer


def fill_word(scorer, tokenizer, example: HiddenWord, k: int = 5, beam: int = 10) -> list[tuple[str, float]]:
    """Top-``k`` words for the hidden span: a beam search that fills the [MASK]s left to right.

    Each step scores the next hidden position with the pieces chosen so far in place; a word's score is the sum of
    its pieces' log-probabilities. Only word-shaped fillings are kept: the first piece is a space, alone or
    followed by letters; the others are letters. Returns ``[(word, log_probability)]``, best first, distinct words.
    """
    vocab = [tokenizer.token_str(i) if i >= N_SPECIAL_TOKENS else "" for i in range(tokenizer.vocab_size)]
    starts_word = torch.tensor([t == " " or (t.startswith(" ") and t[1:].isalpha()) for t in vocab])
    continues_word = torch.tensor([t.isalpha() for t in vocab])
    rows, scores = [list(example.ids)], torch.zeros(1)
    for position in range(example.start, example.end):
        allowed = starts_word if position == example.start else continues_word
        log_p = scorer(torch.tensor(rows), position).masked_fill(~allowed, float("-inf"))  # (rows, vocab)
        total = (scores[:, None] + log_p).flatten()
        top = total.topk(min(beam, int(torch.isfinite(total).sum())))
        new_rows = []
        for flat in top.indices.tolist():
            row = list(rows[flat // log_p.size(1)])
            row[position] = flat % log_p.size(1)
            new_rows.append(row)
        rows, scores = new_rows, top.values
    words: dict[str, float] = {}
    for row, score in zip(rows, scores.tolist()):
        words.setdefault(tokenizer.decode(row[example.start:example.end]), score)
    return list(words.items())[:k]


def whole_word_accuracy(scorer, tokenizer, examples: Sequence[HiddenWord], k: int = 5,
                        beam: int = 10) -> dict[str, float]:
    """Top-1 and top-``k`` accuracy of whole-word fill-mask: a hit needs the whole hidden word."""
    top1 = topk = 0
    for example in examples:
        guesses = [word for word, _ in fill_word(scorer, tokenizer, example, k=k, beam=beam)]
        top1 += guesses[:1] == [example.word]
        topk += example.word in guesses
    return {"top1": top1 / len(examples), f"top{k}": topk / len(examples), "n": float(len(examples))}


# ---------------------------------------------------------------------------- what the neighbours give (lesson 06)
def probe_positions(sentences: Sequence[Sequence[int]], per_sentence: int = 3,
                    seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions to probe, drawn at random (``torch.Generator().manual_seed(seed)``): up to ``per_sentence`` per
    ``[CLS] … [SEP]`` sentence, each with a real token on both sides.

    Returns ``(ids, targets)``: ``ids (n, seq)`` one row per probed position (the sentence, padded with [PAD]) and
    ``targets (n,)`` the position to guess in that row. Sentences shorter than five ids are skipped.
    """
    check_positive_int("per_sentence", per_sentence)
    check_int("seed", seed)
    generator = torch.Generator().manual_seed(seed)
    rows, targets = [], []
    for sentence in sentences:
        sentence = [int(t) for t in sentence]
        if len(sentence) < 5:
            continue
        candidates = torch.arange(2, len(sentence) - 2)       # position 1 and len-2 touch [CLS] / [SEP]
        for target in candidates[torch.randperm(len(candidates), generator=generator)[:per_sentence]].tolist():
            rows.append(sentence)
            targets.append(target)
    if not rows:
        raise CourseValueError("no sentence has five ids or more; pass [CLS] … [SEP] id lists of real sentences")
    ids = torch.zeros(len(rows), max(len(r) for r in rows), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
    return ids, torch.tensor(targets)


def hide(ids: torch.Tensor, targets: torch.Tensor, offsets: Sequence[int] = ()) -> torch.Tensor:
    """A copy of ``ids (n, seq)`` with [MASK] at each row's target and at ``target + offset`` for every offset
    (e.g. ``(-1, 1)``: both neighbours hidden too)."""
    inputs = ids.clone()
    rows = torch.arange(len(targets))
    for offset in (0, *offsets):
        inputs[rows, targets + offset] = MASK_ID
    return inputs


@torch.no_grad()
def probe_accuracy(guesser, inputs: torch.Tensor, ids: torch.Tensor, targets: torch.Tensor) -> float:
    """Share of rows whose hidden ``ids[row, target]`` is guessed from ``inputs``: ``guesser`` is a
    :class:`~course_utils.models.MaskedLanguageModel` (its arg-max) or a :class:`NeighbourCountBaseline` (which
    reads the two tokens beside the target)."""
    rows = torch.arange(len(targets))
    if isinstance(guesser, NeighbourCountBaseline):
        guesses = torch.tensor([guesser.predict(left, right) for left, right in
                                zip(inputs[rows, targets - 1].tolist(), inputs[rows, targets + 1].tolist())])
    else:
        was_training = guesser.training
        guesser.eval()
        device = next(guesser.parameters()).device
        guesses = torch.cat([guesser(inputs[i:i + 512].to(device))[torch.arange(len(targets[i:i + 512])),
                                                                     targets[i:i + 512]].argmax(-1).cpu()
                             for i in range(0, len(targets), 512)])
        guesser.train(was_training)
    return (guesses == ids[rows, targets]).float().mean().item()


def accuracy_at_mask(logits: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor) -> float:
    """Share of the positions whose input shows [MASK] (and that carry a label) where the arg-max equals the label:
    the headline of lesson 06, where only the context can help.

    Args:
        logits: ``(batch, seq, vocab_size)``; inputs, labels: ``(batch, seq)`` as :func:`mask_tokens` returns them.
    """
    check_labels(labels, logits)
    shown = (inputs == MASK_ID) & (labels != IGNORE_INDEX)
    if not shown.any():
        raise CourseValueError("no labelled position shows [MASK] in the inputs, so the accuracy is undefined")
    return (logits.argmax(dim=-1)[shown] == labels[shown]).float().mean().item()


# ---------------------------------------------------------------------------- whole-word masking (lesson 06)
def word_starts(tokenizer, ids: torch.Tensor) -> torch.Tensor:
    """``(batch, seq)`` bool: True at the real pieces that start a word — the first real piece of a row, and every
    piece whose text starts with a space (byte-level BPE glues a word to its leading space)."""
    check_tokenizer(tokenizer)
    real = ids >= N_SPECIAL_TOKENS
    spaced = torch.tensor([[bool(t >= N_SPECIAL_TOKENS and tokenizer.token_str(int(t)).startswith(" ")) for t in row]
                           for row in ids.tolist()], dtype=torch.bool).reshape(ids.shape)
    first = real & (real.long().cumsum(1) == 1)
    return spaced | first


def whole_word_mask(ids: torch.Tensor, starts: torch.Tensor, vocab_size: int, generator: torch.Generator | None = None,
                    select_prob: float = 0.15, mask_prob: float = 0.8, random_prob: float = 0.1,
                    mask_id: int = MASK_ID, first_real_id: int = N_SPECIAL_TOKENS) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking that selects whole words: a word (a start piece and the real pieces after it, up to the next
    start) is selected with probability ``select_prob``, all its pieces at once; a row that has a word but drew
    none gets one, chosen uniformly. Each selected piece is then corrupted 80/10/10 as in :func:`mask_tokens`.

    Args:
        ids: ``(batch, seq)`` int64 ids; starts: ``(batch, seq)`` bool, True at each word's first piece
            (:func:`word_starts`); real pieces before a row's first start belong to no word and stay unselected.

    Returns:
        ``(inputs, labels)`` as :func:`mask_tokens`; ``ids`` is not modified.
    """
    vocab_size = check_positive_int("vocab_size", vocab_size)
    ids = check_token_ids(ids, vocab_size, name="ids", allow_empty=True)
    check_tensor("starts", starts)
    if starts.dtype != torch.bool or starts.shape != ids.shape:
        raise CourseValueError(f"starts must be a bool tensor of the shape of ids {tuple(ids.shape)}, got "
                               f"{starts.dtype} {tuple(starts.shape)}; use mlm.word_starts(tokenizer, ids)")
    check_probabilities(select_prob, mask_prob, random_prob)
    real = ids >= first_real_id
    starts = starts & real

    def uniform() -> torch.Tensor:
        return torch.rand(ids.shape, generator=generator, device=ids.device)

    picked = starts & (uniform() < select_prob)                                   # the words' first pieces
    empty_rows = starts.any(dim=1) & ~picked.any(dim=1)
    if empty_rows.any():
        pick = uniform().masked_fill(~starts, -1.0).argmax(dim=1)
        rows = empty_rows.nonzero(as_tuple=True)[0]
        picked[rows, pick[rows]] = True
    word = starts.long().cumsum(dim=1)                                             # word number; 0 = before any
    chosen_words = torch.zeros(ids.size(0), ids.size(1) + 1, dtype=torch.bool, device=ids.device)
    chosen_words.scatter_(1, word.masked_fill(~picked, 0), picked)
    chosen_words[:, 0] = False
    selected = real & chosen_words.gather(1, word)                                 # every piece of a chosen word

    labels = ids.masked_fill(~selected, IGNORE_INDEX)
    action = uniform()
    to_mask = selected & (action < mask_prob)
    to_random = selected & (action >= mask_prob) & (action < mask_prob + random_prob)
    random_ids = torch.randint(first_real_id, vocab_size, ids.shape, generator=generator, device=ids.device)
    inputs = torch.where(to_random, random_ids, ids.masked_fill(to_mask, mask_id))
    return inputs, labels
