"""Does pre-training help? Lesson 06's few-label downstream task and its paired comparison.

The task: given one sentence of the documentation corpus, say which part of Python it comes from — the language
reference or one of the standard-library packages with the most sentences (labels from
:mod:`course_utils.data.pydoc_sources`). Every sentence is taken from the MLM's **held-out** split, so the
pre-trained encoder never saw any of them, and only a few are labelled for training.

:func:`few_label_comparison` fine-tunes the same :class:`~course_utils.models.TransformerClassifier` twice per
(label count, seed) — once from the pre-trained encoder, once from random initialisation — with the same labelled
sentences, head initialisation, batches, learning-rate schedule and number of steps, and reports the paired
difference in test accuracy.
"""
from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .errors import CourseValueError
from .models import TransformerClassifier
from .runtime import seed_everything
from .tokenization import pad_batch
from .training import fit


@dataclass
class SourceTask:
    """Sentences with their source: a fixed test set and a pool to draw the few labelled ones from."""

    classes: tuple[str, ...]
    pool: dict[str, list[str]]            # class -> sentences that may be labelled for training
    test_sentences: list[str]
    test_labels: list[int]

    def labelled(self, n_per_class: int, seed: int) -> tuple[list[str], list[int]]:
        """``n_per_class`` training sentences per class, drawn with ``random.Random(seed)``."""
        rng = random.Random(seed)
        texts, labels = [], []
        for label, name in enumerate(self.classes):
            if n_per_class > len(self.pool[name]):
                raise CourseValueError(f"class {name!r} has only {len(self.pool[name])} labelled sentences to draw "
                                 f"from, asked for {n_per_class}; lower the label count")
            chosen = rng.sample(self.pool[name], n_per_class)
            texts += chosen
            labels += [label] * n_per_class
        return texts, labels


def make_source_task(sentences: Sequence[str], sources: dict[str, str], n_classes: int = 4,
                     n_test_per_class: int = 20, seed: int = 0) -> SourceTask:
    """The ``n_classes`` most frequent sources among ``sentences`` (pass the MLM's held-out sentences);
    ``n_test_per_class`` of each, drawn with ``random.Random(seed)``, form the test set, the rest the pool."""
    counts = Counter(sources[s] for s in sentences)
    classes = tuple(name for name, _ in counts.most_common(n_classes))
    rng = random.Random(seed)
    pool, test_sentences, test_labels = {}, [], []
    for label, name in enumerate(classes):
        members = [s for s in sentences if sources[s] == name]
        rng.shuffle(members)
        test_sentences += members[:n_test_per_class]
        test_labels += [label] * n_test_per_class
        pool[name] = members[n_test_per_class:]
    return SourceTask(classes, pool, test_sentences, test_labels)


@dataclass
class Comparison:
    """Test accuracies per label count: ``pretrained[n][i]`` and ``scratch[n][i]`` share seed ``seeds[i]``."""

    label_counts: tuple[int, ...]
    seeds: tuple[int, ...]
    pretrained: dict[int, list[float]] = field(default_factory=dict)
    scratch: dict[int, list[float]] = field(default_factory=dict)

    def paired_difference(self, n: int) -> tuple[float, float]:
        """Mean and standard error of (pre-trained − random init) over the paired seeds, at ``n`` labels."""
        differences = [p - s for p, s in zip(self.pretrained[n], self.scratch[n])]
        mean = sum(differences) / len(differences)
        variance = sum((d - mean) ** 2 for d in differences) / (len(differences) - 1)
        return mean, math.sqrt(variance / len(differences))

    def mean(self, n: int, which: str) -> float:
        values = getattr(self, which)[n]
        return sum(values) / len(values)


def fine_tune_accuracy(config, encoder_state: dict | None, encode: Callable[[list[str]], list[list[int]]],
                       task: SourceTask, texts: list[str], labels: list[int], seed: int, steps: int = 60,
                       batch_size: int = 16, lr: float = 1e-3) -> float:
    """Fine-tune a mean-pooling classifier (pre-trained encoder, or random init when ``encoder_state`` is
    ``None``) for ``steps`` steps on ``texts`` and return its test accuracy. The seed fixes the initialisation
    and the batches, so both encoders see the same run."""
    seed_everything(seed)
    classifier = TransformerClassifier(config, n_classes=len(task.classes), pooling="mean")
    if encoder_state is not None:
        classifier.text_encoder.load_state_dict(encoder_state)
    ids, targets = encode(texts), torch.tensor(labels)
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(steps):
        rows = torch.randint(len(ids), (min(batch_size, len(ids)),), generator=generator).tolist()
        batches.append((pad_batch([ids[r] for r in rows]), targets[rows]))
    fit(classifier, batches, lambda model, batch: F.cross_entropy(model(batch[0]), batch[1]), epochs=1, lr=lr,
        warmup_steps=steps // 10, schedule="cosine", progress=False)
    classifier.eval()
    with torch.no_grad():
        predictions = classifier(pad_batch(encode(task.test_sentences))).argmax(-1)
    return (predictions == torch.tensor(task.test_labels)).float().mean().item()


def few_label_comparison(config, encoder_state: dict, encode, task: SourceTask,
                         label_counts: Sequence[int] = (10, 20, 30), seeds: Sequence[int] = range(5),
                         **fine_tuning) -> Comparison:
    """Pre-trained vs random-init fine-tuning for every label count and seed (``fine_tuning`` goes to
    :func:`fine_tune_accuracy`: ``steps``, ``batch_size``, ``lr``)."""
    result = Comparison(tuple(label_counts), tuple(seeds))
    for n in label_counts:
        result.pretrained[n], result.scratch[n] = [], []
        for seed in seeds:
            texts, labels = task.labelled(n, seed)
            for state, scores in ((encoder_state, result.pretrained[n]), (None, result.scratch[n])):
                scores.append(fine_tune_accuracy(config, state, encode, task, texts, labels, seed, **fine_tuning))
    return result
