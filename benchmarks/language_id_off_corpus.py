"""Lesson 05: the language-ID classifiers on their own test set and on a source they never saw, over seeds.

Trains, for each seed, the lesson's recipe (Transformer on BPE pieces, 5 epochs, AdamW 3e-3, 30 warmup steps,
cosine, clipping at 1) and three linear bag-of-features models (lower-cased words, BPE pieces, character
1-3-grams, 60 full-batch Adam steps), plus the same Transformer reading characters instead of BPE pieces. Each is
scored on the Django test split (588 strings) and on CLDR phrases from Babel (units and relative dates, 1,188
strings, none in Django's catalogues nor identical to CLDR's English; `load_cldr_phrases`). Prints mean ± standard
deviation over the seeds and writes a JSON file beside this script.

    OMP_NUM_THREADS=1 python benchmarks/language_id_off_corpus.py [--seeds 0 1 2]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils import TransformerClassifier, TransformerConfig, seed_everything, set_threads
from course_utils.data.batching import ReshuffledEachEpoch, length_bucketed_batches
from course_utils.data.features import char_ngrams
from course_utils.data.language_id import load_cldr_phrases, load_language_id
from course_utils.losses import classification_loss
from course_utils.tokenization import BPETokenizer, CharTokenizer, WordTokenizer, add_special_tokens
from course_utils.training import classification_accuracy, fit

MAX_LEN = 64


def bag(feature_lists, vocabulary):
    counts = torch.zeros(len(feature_lists), len(vocabulary))
    for row, features in enumerate(feature_lists):
        for feature in features:
            if feature in vocabulary:
                counts[row, vocabulary[feature]] += 1
    return counts / counts.sum(1, keepdim=True).clamp(min=1)


def linear_model(featurize, data, tests, seed, steps=60):
    train_features = [featurize(text) for text in data.train_texts]
    vocabulary = {f: i for i, f in enumerate(sorted({f for fs in train_features for f in fs}))}
    x = bag(train_features, vocabulary)
    y = torch.tensor(data.train_labels)
    seed_everything(seed)
    linear = nn.Linear(len(vocabulary), len(data.languages))
    optimizer = torch.optim.Adam(linear.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(linear(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        return {name: (linear(bag([featurize(t) for t in texts], vocabulary)).argmax(-1)
                       == torch.tensor(labels)).float().mean().item() for name, (texts, labels) in tests.items()}


def transformer(tokenizer, data, tests, seed, epochs=5):
    def encode(texts):
        return [add_special_tokens(tokenizer.encode(t), add_cls=True, max_len=MAX_LEN) for t in texts]

    train = length_bucketed_batches(encode(data.train_texts), 64, labels=data.train_labels, seed=seed)
    config = TransformerConfig(vocab_size=tokenizer.vocab_size, d_model=64, n_heads=4, d_ff=256, n_layers=2,
                               max_len=MAX_LEN, dropout=0.1, norm="post")
    seed_everything(seed)
    model = TransformerClassifier(config, len(data.languages))
    fit(model, ReshuffledEachEpoch(train, seed=seed), classification_loss, epochs=epochs, lr=3e-3, warmup_steps=30,
        schedule="cosine", clip_norm=1.0, progress=False)
    return {name: classification_accuracy(model, length_bucketed_batches(encode(texts), 128, labels=labels,
                                                                         shuffle=False))
            for name, (texts, labels) in tests.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    set_threads(1)
    data = load_language_id()
    cldr = load_cldr_phrases(data.languages)
    tests = {"Django test": (data.test_texts, data.test_labels), "CLDR phrases": cldr}
    bpe = BPETokenizer.train(data.train_texts, vocab_size=2000)
    chars = CharTokenizer.train(data.train_texts)
    words = WordTokenizer.train(data.train_texts, lowercase=True)
    models = {
        "linear, lower-cased words": lambda s: linear_model(words.tokenize, data, tests, s),
        "linear, BPE pieces": lambda s: linear_model(bpe.encode, data, tests, s),
        "linear, character 1-3-grams": lambda s: linear_model(char_ngrams, data, tests, s),
        "Transformer, BPE pieces": lambda s: transformer(bpe, data, tests, s),
        "Transformer, characters": lambda s: transformer(chars, data, tests, s),
    }
    results = {}
    start = time.perf_counter()
    for name, run in models.items():
        runs = [run(seed) for seed in args.seeds]
        results[name] = {test: [r[test] for r in runs] for test in tests}
        line = "   ".join(f"{test} {100 * statistics.mean(v):5.1f} ± {100 * statistics.stdev(v):3.1f} %"
                          for test, v in results[name].items())
        print(f"{name:30} {line}", flush=True)
    print(f"seeds {args.seeds}; sizes: Django test {len(data.test_texts)}, CLDR {len(cldr[0])}; "
          f"{time.perf_counter() - start:.0f} s")
    out = Path(__file__).with_suffix(".json")
    out.write_text(json.dumps({"seeds": args.seeds, "accuracy": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
