"""Why lesson 05 classifies Django's translated strings with BPE tokens: the measurements behind the choice.

    OMP_NUM_THREADS=1 python benchmarks/language_id_candidates.py

1. Data: Django's ``.po`` translations vs Babel's CLDR display names, for the same six languages, scored by a
   character-1-3-gram linear model (a strong, cheap baseline for language identification).
2. Tokens: the lesson's Transformer recipe (2 Post-LN layers, d_model 64, 5 epochs, lr 3e-3, warmup 30, cosine)
   on the Django data with character, word and BPE-2000 tokens.
Takes about two minutes on one CPU thread.
"""
from __future__ import annotations

import random
import re
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils import TransformerClassifier, TransformerConfig, seed_everything, set_threads
from course_utils.data.features import char_ngrams
from course_utils.data.language_id import DEFAULT_LANGUAGES, load_language_id
from course_utils.tokenization import BPETokenizer, CharTokenizer, WordTokenizer
from course_utils.training import fit


def linear_ngram_accuracy(train, test) -> float:
    """Accuracy of a linear model on relative char-1-3-gram counts; ``train``/``test`` are (text, label) lists."""
    vocabulary = {g: i for i, g in enumerate(sorted({g for text, _ in train for g in char_ngrams(text)}))}

    def features(pairs):
        x = torch.zeros(len(pairs), len(vocabulary))
        for row, (text, _) in enumerate(pairs):
            for gram in char_ngrams(text):
                if gram in vocabulary:
                    x[row, vocabulary[gram]] += 1
        return x / x.sum(1, keepdim=True).clamp(min=1), torch.tensor([label for _, label in pairs])

    (x_train, y_train), (x_test, y_test) = features(train), features(test)
    seed_everything(0)
    linear = nn.Linear(len(vocabulary), int(y_train.max()) + 1)
    optimizer = torch.optim.Adam(linear.parameters(), lr=0.05)
    for _ in range(200):
        optimizer.zero_grad()
        F.cross_entropy(linear(x_train), y_train).backward()
        optimizer.step()
    return (linear(x_test).argmax(-1) == y_test).float().mean().item()


def cldr_split(languages, test_fraction=0.2, seed=0):
    """CLDR names (languages, territories, scripts, currencies) unique to one language, >= 3 letters, balanced."""
    import babel

    names = {}
    for code in languages:
        locale = babel.Locale.parse(code)
        names[code] = set()
        for table in (locale.languages, locale.territories, locale.scripts, locale.currencies):
            names[code] |= set(table.values())
    counts = Counter(name for code in languages for name in names[code])
    unique = {code: sorted(n for n in names[code] if counts[n] == 1 and len(re.findall(r"[^\W\d_]", n)) >= 3)
              for code in languages}
    rng = random.Random(seed)
    size = min(len(v) for v in unique.values())
    n_train = int(size * (1 - test_fraction))
    train, test = [], []
    for label, code in enumerate(languages):
        chosen = rng.sample(unique[code], size)
        train += [(text, label) for text in chosen[:n_train]]
        test += [(text, label) for text in chosen[n_train:]]
    mean_len = sum(len(t) for t, _ in train + test) / len(train + test)
    return train, test, n_train, mean_len


def transformer_accuracy(data, tokenizer, epochs=5, max_len=64):
    def batches(texts, labels, size):
        order = sorted(range(len(texts)), key=lambda i: len(tokenizer.encode(texts[i])))
        return [(tokenizer.encode_batch([texts[i] for i in order[s:s + size]], add_cls=True, max_len=max_len),
                 torch.tensor([labels[i] for i in order[s:s + size]])) for s in range(0, len(order), size)]

    train = batches(data.train_texts, data.train_labels, 64)
    train = [train[i] for i in torch.randperm(len(train), generator=torch.Generator().manual_seed(0))]
    test = batches(data.test_texts, data.test_labels, 128)

    def accuracy(model):
        correct = sum((model(ids).argmax(-1) == labels).sum().item() for ids, labels in test)
        return {"accuracy": correct / len(data.test_texts)}

    seed_everything(0)
    config = TransformerConfig(vocab_size=tokenizer.vocab_size, d_model=64, n_heads=4, d_ff=256, n_layers=2,
                               max_len=max_len, dropout=0.1, norm="post")
    model = TransformerClassifier(config, len(data.languages))
    history = fit(model, train, lambda m, b: F.cross_entropy(m(b[0]), b[1]), epochs=epochs, lr=3e-3,
                  warmup_steps=30, schedule="cosine", eval_fn=accuracy, progress=False)
    lengths = [len(tokenizer.encode(t)) + 1 for t in data.train_texts]
    return history.final["accuracy"], history.seconds, sum(lengths) / len(lengths)


def main() -> None:
    set_threads(1)
    data = load_language_id()
    django_train = list(zip(data.train_texts, data.train_labels))
    django_test = list(zip(data.test_texts, data.test_labels))
    django_len = sum(len(t) for t in data.train_texts + data.test_texts) / len(data.train_texts + data.test_texts)
    cldr_train, cldr_test, cldr_per_class, cldr_len = cldr_split(DEFAULT_LANGUAGES)
    print("| data | train strings per language | mean characters | char 1-3-gram linear model |")
    print("|---|---|---|---|")
    print(f"| Django .po | {len(django_train) // 6} | {django_len:.0f} | "
          f"{linear_ngram_accuracy(django_train, django_test):.1%} |")
    print(f"| CLDR names | {cldr_per_class} | {cldr_len:.0f} | {linear_ngram_accuracy(cldr_train, cldr_test):.1%} |")
    print()
    print("| tokens | vocabulary | tokens per string | Transformer accuracy | training s |")
    print("|---|---|---|---|---|")
    for name, tokenizer in (("characters", CharTokenizer.train(data.train_texts, min_count=2)),
                            ("words", WordTokenizer.train(data.train_texts)),
                            ("BPE 2000", BPETokenizer.train(data.train_texts, vocab_size=2000))):
        accuracy, seconds, mean_tokens = transformer_accuracy(data, tokenizer)
        print(f"| {name} | {tokenizer.vocab_size} | {mean_tokens:.1f} | {accuracy:.1%} | {seconds:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
