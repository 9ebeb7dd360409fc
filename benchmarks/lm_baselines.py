"""Lesson 08's count baselines, Kneser–Ney included, next to the GPT: perplexity on the lesson's own validation and
test splits, then on out-of-corpus prose.

    OMP_NUM_THREADS=1 python benchmarks/lm_baselines.py            # both tables (about a minute on one core)
    OMP_NUM_THREADS=1 python benchmarks/lm_baselines.py --write    # and benchmarks/lm_baselines.json

Data: lesson 08's own call, ``lm_data.pydoc_lm_data(vocab_size=512, max_len=64, seed=0)``. Before measuring, the
script checks that the notebook still makes that call and that its stored split sizes and count-model perplexities
equal the ones measured here, so the tables describe the lesson's data. Every model is fitted on the training split
and tuned on the validation split only: the bigram's ``k`` (grid), the trigram's λ (EM), Kneser–Ney's discounts
(coordinate search, ``ngram.KneserNeyLM.tune_discounts``). The GPT is not retrained: its test perplexity is read
from the notebook's stored output.

Out of corpus: ``pydoc_corpus.read_package_corpus()`` — docstring prose of installed third-party packages that the
documentation corpus never reads, minus every sentence of that corpus — encoded with the lesson's tokenizer and cut
to ``max_len + 1`` ids like the lesson's splits. The overlap table shows how much of each test set the training
split already holds: whole sentences, word 8-grams (near-copies) and the token n-grams the count models look up.
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import time
from pathlib import Path

import torch

from course_utils import ngram
from course_utils.data import lm_data, pydoc_corpus

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "08_gpt.ipynb"
RESULTS = ROOT / "benchmarks" / "lm_baselines.json"
VOCAB_SIZE, MAX_LEN, SEED = 512, 64, 0
LESSON_CALL = "lm_data.pydoc_lm_data(vocab_size=VOCAB_SIZE, max_len=MAX_LEN, seed=0)"
KN_ORDERS = (3, 4, 5)


def notebook_outputs() -> tuple[str, str]:
    """Lesson 08's code and its stored text outputs, each joined into one string."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    texts = []
    for cell in cells:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            texts.append("".join(text))
    return code, "\n".join(texts)


def stored_results() -> dict:
    """What lesson 08 stored: its data call, split sizes and test perplexities (the GPT's among them)."""
    code, text = notebook_outputs()
    if f"VOCAB_SIZE, MAX_LEN = {VOCAB_SIZE}, {MAX_LEN}" not in code or LESSON_CALL not in code:
        raise SystemExit(f"lesson 08 no longer builds its data with {LESSON_CALL} and VOCAB_SIZE, MAX_LEN = "
                         f"{VOCAB_SIZE}, {MAX_LEN}: update this script")
    sizes = {name: (int(a), int(b)) for name, a, b in
             re.findall(r"(train|validation|test):\s+(\d+) sentences,\s+(\d+) scored tokens", text)}
    perplexity = {name: float(value) for name, value in
                  re.findall(r"^(unigram|bigram|interpolated trigram|Transformer \(decoder-only\))\s+([\d.]+)$",
                             text, flags=re.M)}
    steps = re.search(r"(\d+) steps: (\d+) s wall-clock", text)
    return {"sizes": sizes, "test_perplexity": perplexity,
            "gpt_training": f"{steps.group(1)} steps, {steps.group(2)} s wall-clock" if steps else "unknown"}


def fit_models(data: lm_data.LMData) -> dict[str, dict]:
    """Every count model fitted on train and tuned on validation, with the seconds both took."""
    train, validation = data.train, data.validation
    models = {}

    def timed(name, build):
        start = time.perf_counter()
        model, notes = build()
        models[name] = {"model": model, "fit_seconds": time.perf_counter() - start, **notes}

    timed("unigram (add-1)", lambda: (ngram.UnigramLM(train, VOCAB_SIZE), {}))

    def bigram():
        model = ngram.BigramLM(train, VOCAB_SIZE)
        model.tune_k(validation)
        return model, {"tuned": f"k = {model.k}"}

    def trigram():
        model = ngram.InterpolatedTrigramLM(train, VOCAB_SIZE)
        model.fit_lambdas(validation)
        return model, {"tuned": "λ by EM, 9 count buckets"}

    timed("bigram (add-k)", bigram)
    timed("interpolated trigram (EM)", trigram)
    for order in KN_ORDERS:
        def kneser_ney(order=order):
            model = ngram.KneserNeyLM(train, VOCAB_SIZE, order=order)
            default = model.discounts.clone()
            history = model.tune_discounts(validation)
            return model, {"tuned": f"discounts, {len(history) - 1} sweeps", "default_discounts": default.tolist(),
                           "discounts": model.discounts.tolist(), "validation_default_discounts": history[0]}
        timed(f"Kneser–Ney, order {order}", kneser_ney)
    return models


def word_ngrams(sentence: str, n: int = 8) -> set[tuple[str, ...]]:
    words = sentence.split()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def overlap(train_texts, train_ids, test_texts, test_ids) -> dict[str, float]:
    """How much of a test set the training split already holds."""
    train_sentences = set(train_texts)
    train_8grams = set().union(*(word_ngrams(s) for s in train_texts))
    return {"sentences": len(test_texts),
            "scored tokens": sum(len(s) - 1 for s in test_ids),
            "sentences also in training": sum(s in train_sentences for s in test_texts) / len(test_texts),
            "sentences sharing a word 8-gram with training": sum(bool(word_ngrams(s) & train_8grams)
                                                                 for s in test_texts) / len(test_texts),
            "token 3-grams seen in training": ngram.seen_share(train_ids, test_ids, 3),
            "token 4-grams seen in training": ngram.seen_share(train_ids, test_ids, 4),
            "token 5-grams seen in training": ngram.seen_share(train_ids, test_ids, 5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the results to {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    torch.set_num_threads(1)
    stored = stored_results()

    start = time.perf_counter()
    data = lm_data.pydoc_lm_data(vocab_size=VOCAB_SIZE, max_len=MAX_LEN, seed=SEED)
    texts = dict(zip(lm_data.SPLITS, lm_data.split_documents(pydoc_corpus.load_pydoc_corpus().sentences, seed=SEED)))
    assert lm_data.encode_documents(data.tokenizer, texts["test"]) == data.documents["test"], "split texts drifted"
    held_out_corpus = pydoc_corpus.read_package_corpus()
    held_out = lm_data.encode_documents(data.tokenizer, list(held_out_corpus.sentences), max_len=MAX_LEN)
    data_seconds = time.perf_counter() - start
    sizes = {name: (len(part), sum(len(s) - 1 for s in part))
             for name, part in (("train", data.train), ("validation", data.validation), ("test", data.test))}
    if sizes != stored["sizes"]:
        raise SystemExit(f"the splits differ from lesson 08's stored ones: {sizes} vs {stored['sizes']}")

    models = fit_models(data)
    rows = {}
    for name, entry in models.items():
        model = entry.pop("model")
        scores = {}
        for split, sequences in (("validation", data.validation), ("test", data.test),
                                 ("out of corpus", held_out)):
            begin = time.perf_counter()
            scores[split] = ngram.perplexity(model, sequences)
            scores[f"{split} seconds"] = time.perf_counter() - begin
        rows[name] = {**entry, **scores}
    for name, lesson_name in (("unigram (add-1)", "unigram"), ("bigram (add-k)", "bigram"),
                              ("interpolated trigram (EM)", "interpolated trigram")):
        if abs(rows[name]["test"] - stored["test_perplexity"][lesson_name]) > 0.006:
            raise SystemExit(f"{name}: test perplexity {rows[name]['test']:.2f} here, "
                             f"{stored['test_perplexity'][lesson_name]} stored in lesson 08")
    gpt = stored["test_perplexity"]["Transformer (decoder-only)"]

    print(f"lesson 08's data (pydoc_lm_data, vocab {VOCAB_SIZE}, max_len {MAX_LEN}, seed {SEED}): "
          + ", ".join(f"{k} {n} sentences / {t} scored tokens" for k, (n, t) in sizes.items())
          + f"; out of corpus: {len(held_out)} sentences / {sum(len(s) - 1 for s in held_out)} scored tokens "
          f"({data_seconds:.1f} s to build all data)\ntorch {torch.__version__}, 1 thread, Python "
          f"{platform.python_version()}\n")
    print("| model | tuned on validation | validation ppl | test ppl | fit + tune s | test scoring s |")
    print("|---|---|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row.get('tuned', '—')} | {row['validation']:.2f} | {row['test']:.2f} | "
              f"{row['fit_seconds']:.1f} | {row['test seconds']:.2f} |")
    print(f"| GPT of lesson 08 (stored output, {stored['gpt_training']}) | — | — | {gpt:.2f} | — | — |")

    print("\nKneser–Ney discounts (D1, D2, D3+) per level, unigram level first: estimate → tuned")
    for name, row in rows.items():
        if "discounts" in row:
            print(f"  {name}: validation {row['validation_default_discounts']:.3f} → {row['validation']:.3f}")
            for level, (before, after) in enumerate(zip(row["default_discounts"], row["discounts"]), start=1):
                print(f"    level {level}: " + ", ".join(f"{b:.3f}" for b in before) + "  →  "
                      + ", ".join(f"{a:.3f}" for a in after))

    print(f"\nOut of corpus: {held_out_corpus.description}; fingerprint {held_out_corpus.fingerprint}\n")
    print("| model | lesson test ppl | out-of-corpus ppl | ratio |")
    print("|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['test']:.2f} | {row['out of corpus']:.2f} | "
              f"{row['out of corpus'] / row['test']:.2f} |")
    print("| GPT of lesson 08 | " + f"{gpt:.2f} | not measured (not retrained here) | — |")

    overlaps = {"lesson test split": overlap(texts["train"], data.train, texts["test"], data.test),
                "out of corpus": overlap(texts["train"], data.train, list(held_out_corpus.sentences), held_out)}
    print("\n| overlap with the training split | lesson test split | out of corpus |")
    print("|---|---|---|")
    for key in overlaps["out of corpus"]:
        a, b = overlaps["lesson test split"][key], overlaps["out of corpus"][key]
        shown = (f"{a} | {b}" if isinstance(a, int) else f"{a:.1%} | {b:.1%}")
        print(f"| {key} | {shown} |")

    if args.write:
        results = {"data": {"call": LESSON_CALL.replace("VOCAB_SIZE", str(VOCAB_SIZE)).replace("MAX_LEN", str(MAX_LEN)),
                            "splits": sizes, "out_of_corpus": held_out_corpus.description,
                            "out_of_corpus_fingerprint": held_out_corpus.fingerprint,
                            "pydoc_fingerprint": pydoc_corpus.load_pydoc_corpus().fingerprint},
                   "environment": {"torch": torch.__version__, "python": platform.python_version(), "threads": 1},
                   "models": rows, "gpt_stored": {"test": gpt, "training": stored["gpt_training"]},
                   "overlap": overlaps}
        RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
