"""Lesson 08's own GPT (learned positions, GELU, d_ff 512) under the course's recipe, over three seeds.

    OMP_NUM_THREADS=1 python benchmarks/gpt08_seeds.py --seeds 0 1 2 --write

Trained exactly as the lesson's section 4 trains it: ``seed_everything(seed)``, a fresh
``DecoderOnlyLM(replace(recipe.model_config(512), positional="learned", activation="gelu", d_ff=512))``, then
``training.train_lm(model, data.train, **recipe.train_lm_options(), seed=seed)``; seed 0 is the lesson's live run.
Scored on the lesson's test split and on the lesson's out-of-corpus sample (``random.Random(0).sample`` of 2,000
foreign sentences), the same positions as the lesson's table. Writes ``benchmarks/gpt08_seeds.json``, which the
lesson reads beside its verdict.
"""
from __future__ import annotations

import argparse
import json
import random
from dataclasses import replace
from pathlib import Path

import torch

from course_utils import seed_everything, set_threads, tasks, training
from course_utils.data import lm_data, pydoc_corpus
from course_utils.language_model import DecoderOnlyLM

RESULTS = Path(__file__).resolve().parent / "gpt08_seeds.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    set_threads(1)
    data = lm_data.pydoc_lm_data(vocab_size=512, max_len=64, seed=0)
    foreign = pydoc_corpus.read_package_corpus().sentences
    out_of_corpus = lm_data.encode_documents(data.tokenizer, random.Random(0).sample(foreign, 2000), max_len=64)
    recipe = tasks.recipe_for("gpt")
    config = replace(recipe.model_config(512), positional="learned", activation="gelu", d_ff=512)
    runs = []
    for seed in args.seeds:
        seed_everything(seed)
        model = DecoderOnlyLM(config)
        history = training.train_lm(model, data.train, **recipe.train_lm_options(), seed=seed)
        row = {"seed": seed, "cpu_seconds": round(history.cpu_seconds, 1)}
        for name, sequences in (("test", data.test), ("out of corpus", out_of_corpus)):
            row[name] = training.evaluate_lm(model, lm_data.lm_batches(sequences, 128, shuffle=False))["perplexity"]
        print(row, flush=True)
        runs.append(row)
    if args.write:
        results = {"torch": torch.__version__, "recipe_runs": runs}
        RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
