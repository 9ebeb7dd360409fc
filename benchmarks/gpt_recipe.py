"""Lesson 08's GPT recipe against Kneser–Ney on the same tokens, in corpus and out of it; and the ladder's budget.

    OMP_NUM_THREADS=1 python benchmarks/gpt_recipe.py --seeds 0 1 2 --write   # recipe and ladder × 3 seeds
    OMP_NUM_THREADS=1 python benchmarks/gpt_recipe.py --seeds 0 --variants all --no-ladder   # one lever at a time
    OMP_NUM_THREADS=1 python benchmarks/gpt_recipe.py --ladder-grid --no-recipe               # the ladder's rates

The recipe is the package's (``tasks.recipe_for("gpt")``), trained as lesson 08 trains it: a fresh
``DecoderOnlyLM(recipe.model_config(vocab))`` after ``seed_everything(seed)``, then
``training.train_lm(model, data.train, **recipe.train_lm_options(), seed=seed)`` on lesson 08's data
(``lm_data.pydoc_lm_data(vocab_size=512, max_len=64, seed=0)``); the seed changes the initial weights and the batch
order, never the data. CPU seconds are ``history.cpu_seconds`` (``time.process_time`` of the training steps alone;
on a busy machine they come out about 10 % higher than on an idle one).

Scoring: ``training.evaluate_lm`` over ``lm_data.lm_batches(sequences, 128, shuffle=False)`` — every token after
[BOS] of every sequence, [EOS] included, each sentence alone (no earlier sentence in its context). These are the
positions ``ngram.perplexity`` scores (the script checks the counts agree): the lesson's test split (36 421 tokens)
and the out-of-corpus set of ``benchmarks/lm_baselines.py`` (``pydoc_corpus.read_package_corpus()``, encoded with
the lesson's tokenizer and cut to ``max_len + 1`` ids: 432 349 tokens). The count models are refitted here exactly
as ``lm_baselines.py`` fits them (trained on the training split, tuned on validation) and checked against
``benchmarks/lm_baselines.json``.

The goal (issue 22): for every seed, at most 120 s of training CPU, test perplexity ≥ 10 % below Kneser–Ney order 3
and out-of-corpus perplexity ≥ 5 % below it.

The ladder: ``tasks.LADDER`` (``language_model.ladder_rungs``), every rung trained by ``train_lm`` for the same
steps on the same batches, each at its own learning rate; ``--ladder-grid`` re-measures those rates (validation
loss of each rung at each rate of a grid, seed 0).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from course_utils import count_parameters, ngram, seed_everything, tasks, training
from course_utils.ablation import mean_and_standard_error
from course_utils.data import lm_data, pydoc_corpus
from course_utils.language_model import DecoderOnlyLM

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "gpt_recipe.json"
BASELINES = ROOT / "benchmarks" / "lm_baselines.json"
VOCAB_SIZE, MAX_LEN, DATA_SEED = 512, 64, 0
CPU_LIMIT, TEST_MARGIN, OUT_OF_CORPUS_MARGIN = 120.0, 0.10, 0.05
EVAL_BATCH = 128

# one change at a time from the lesson recipe (tasks.recipe_for("gpt", **changes)); "windows" trains on packed
# windows of the training split's token stream (LMData.windows) instead of one sentence per row
VARIANTS = {
    "lesson recipe": {},
    "before (learned positions, ReLU d_ff 512, weight decay 0.01)": {"positional": "learned", "activation": "relu",
                                                                     "d_ff": 512, "weight_decay": 0.01},
    "learned positions": {"positional": "learned"},
    "ReLU feed-forward, d_ff 512": {"activation": "relu", "d_ff": 512},
    "learned positions, ReLU d_ff 512 (no lesson-09 switch)": {"positional": "learned", "activation": "relu",
                                                               "d_ff": 512},
    "weight decay 0.01": {"weight_decay": 0.01},
    "weight decay 0.1": {"weight_decay": 0.1},
    "weight decay 0.6": {"weight_decay": 0.6},
    "dropout 0.1": {"dropout": 0.1},
    "lr 1e-2, 100 warmup steps": {"lr": 1e-2, "warmup_steps": 100},
    "3 blocks, 1300 steps": {"n_layers": 3, "steps": 1300},
    "packed windows of 64 tokens, 16 per batch": {"windows": 64, "batch_size": 16},
    "1000 steps": {"steps": 1000},
    "1250 steps": {"steps": 1250},
    "2000 steps": {"steps": 2000},
}
LADDER_GRID = {"bigram": (0.05, 0.1, 0.15, 0.2, 0.3), "other": (5e-3, 1e-2, 2e-2, 3e-2)}


# ------------------------------------------------------------------------------------------------------ data
def load_data() -> tuple[lm_data.LMData, list[list[int]], str]:
    """Lesson 08's data and the out-of-corpus sequences (with the corpus description)."""
    data = lm_data.pydoc_lm_data(vocab_size=VOCAB_SIZE, max_len=MAX_LEN, seed=DATA_SEED)
    corpus = pydoc_corpus.read_package_corpus(pydoc_corpus.HELD_OUT_PACKAGES)
    out_of_corpus = lm_data.encode_documents(data.tokenizer, list(corpus.sentences), max_len=MAX_LEN)
    return data, out_of_corpus, corpus.description


def count_models(data: lm_data.LMData, out_of_corpus: list[list[int]]) -> dict[str, dict]:
    """The count bigram (add-k, k tuned) and Kneser–Ney order 3 (discounts tuned), fitted as lm_baselines.py fits
    them, with their perplexities; checked against benchmarks/lm_baselines.json when it is there."""
    bigram = ngram.BigramLM(data.train, VOCAB_SIZE)
    bigram.tune_k(data.validation)
    kneser_ney = ngram.KneserNeyLM(data.train, VOCAB_SIZE, order=3)
    kneser_ney.tune_discounts(data.validation)
    rows = {}
    for name, model, stored_name in (("count bigram (add-k)", bigram, "bigram (add-k)"),
                                     ("Kneser–Ney, order 3", kneser_ney, "Kneser–Ney, order 3")):
        rows[name] = {split: ngram.perplexity(model, sequences) for split, sequences in
                      (("validation", data.validation), ("test", data.test), ("out of corpus", out_of_corpus))}
        if BASELINES.exists():
            stored = json.loads(BASELINES.read_text(encoding="utf-8"))["models"][stored_name]
            for split, value in rows[name].items():
                if abs(value - stored[split]) > 0.006:
                    raise SystemExit(f"{name}: {split} perplexity {value:.3f} here, {stored[split]:.3f} in "
                                     f"{BASELINES.name}: the data or the model changed; rerun lm_baselines.py")
    return rows


def scored_tokens(sequences: list[list[int]]) -> int:
    """Positions ``ngram.perplexity`` scores: every id after the first ([BOS]) of every sequence."""
    return sum(len(s) - 1 for s in sequences)


def perplexity(model: torch.nn.Module, sequences: list[list[int]]) -> float:
    """``evaluate_lm`` perplexity; refuses to report if it scored other positions than the count models."""
    result = training.evaluate_lm(model, lm_data.lm_batches(sequences, EVAL_BATCH, shuffle=False))
    if result["n_tokens"] != scored_tokens(sequences):
        raise SystemExit(f"evaluate_lm scored {result['n_tokens']} tokens, ngram.perplexity "
                         f"{scored_tokens(sequences)}: not the same positions")
    return result["perplexity"]


# ---------------------------------------------------------------------------------------------------- the GPT
def train_gpt(recipe: tasks.GPTRecipe, data: lm_data.LMData, seed: int, windows: int | None = None):
    """Lesson 08's training of ``recipe`` with ``seed`` → ``(model, history)``; ``windows``: train on packed windows
    of that many tokens (``data.windows("train", windows)``) instead of sentences."""
    sequences = data.train if windows is None else data.windows("train", windows).tolist()
    seed_everything(seed)
    model = DecoderOnlyLM(recipe.model_config(data.tokenizer.vocab_size))
    history = training.train_lm(model, sequences, **recipe.train_lm_options(), seed=seed)
    return model, history


def run_gpt(name: str, changes: dict, seed: int, data, out_of_corpus, log=print) -> dict:
    changes = dict(changes)
    windows = changes.pop("windows", None)
    recipe = tasks.recipe_for("gpt", **changes)
    model, history = train_gpt(recipe, data, seed, windows)
    row = {"variant": name, "seed": seed, "changes": {**changes, **({"windows": windows} if windows else {})},
           "parameters": count_parameters(model), "steps": recipe.steps, "cpu_seconds": history.cpu_seconds,
           "wall_seconds": history.seconds, "validation": perplexity(model, data.validation),
           "test": perplexity(model, data.test), "out of corpus": perplexity(model, out_of_corpus),
           "load_average": os.getloadavg()[0]}
    log(f"  {name}, seed {seed}: {row['cpu_seconds']:.1f} s CPU, test {row['test']:.2f}, "
        f"out of corpus {row['out of corpus']:.2f}")
    return row


def meets_goal(row: dict, kneser_ney: dict) -> bool:
    return (row["cpu_seconds"] <= CPU_LIMIT and row["test"] <= (1 - TEST_MARGIN) * kneser_ney["test"]
            and row["out of corpus"] <= (1 - OUT_OF_CORPUS_MARGIN) * kneser_ney["out of corpus"])


def summary(rows: list[dict], keys: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    return {key: mean_and_standard_error([r[key] for r in rows]) for key in keys}


# ------------------------------------------------------------------------------------------------- the ladder
def train_rung(ladder: tasks.LadderRecipe, name: str, lr: float, seed: int, data) -> dict:
    seed_everything(seed)
    model = ladder.rungs(data.tokenizer.vocab_size)[name]()
    history = training.train_lm(model, data.train, **ladder.train_lm_options(lr), seed=seed)
    validation = training.evaluate_lm(model, lm_data.lm_batches(data.validation, EVAL_BATCH, shuffle=False))
    return {"rung": name, "seed": seed, "lr": lr, "steps": ladder.steps, "parameters": count_parameters(model),
            "cpu_seconds": history.cpu_seconds, "validation_loss": validation["loss"],
            "validation": validation["perplexity"], "test": perplexity(model, data.test)}


def ladder_grid(ladder: tasks.LadderRecipe, data, log=print) -> list[dict]:
    rows = []
    for name in ladder.rungs(data.tokenizer.vocab_size):
        for lr in LADDER_GRID["bigram" if name == "bigram" else "other"]:
            rows.append(train_rung(ladder, name, lr, 0, data))
            log(f"  {name:<24} lr {lr:<6g} validation loss {rows[-1]['validation_loss']:.4f}")
    return rows


# -------------------------------------------------------------------------------------------------------- main
def fmt(mean_error: tuple[float, float], digits: int = 2) -> str:
    mean, error = mean_error
    return f"{mean:.{digits}f} ± {error:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the recipe and ladder")
    parser.add_argument("--variants", nargs="*", default=[],
                        help=f"variants to run with the first seed ('all' = every one): {list(VARIANTS)}")
    parser.add_argument("--no-recipe", action="store_true", help="skip the lesson recipe's seeds")
    parser.add_argument("--no-ladder", action="store_true", help="skip the ladder")
    parser.add_argument("--ladder-grid", action="store_true", help="measure the ladder's learning-rate grid (seed 0)")
    parser.add_argument("--ladder-steps", type=int, help="the ladder's steps (default: tasks.LADDER's)")
    parser.add_argument("--ladder-lrs", type=float, nargs="+", help="the rungs' learning rates, in rung order "
                                                                    "(default: tasks.LADDER's)")
    parser.add_argument("--write", action="store_true",
                        help=f"write {RESULTS.relative_to(ROOT)} (replacing only the sections this run measured)")
    args = parser.parse_args()
    variants = list(VARIANTS) if args.variants == ["all"] else args.variants
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    torch.set_num_threads(1)
    started = time.perf_counter()
    data, out_of_corpus, description = load_data()
    counts = count_models(data, out_of_corpus)
    kneser_ney = counts["Kneser–Ney, order 3"]
    bars = {"test": (1 - TEST_MARGIN) * kneser_ney["test"],
            "out of corpus": (1 - OUT_OF_CORPUS_MARGIN) * kneser_ney["out of corpus"]}
    recipe = tasks.recipe_for("gpt")
    ladder = replace(tasks.LADDER, steps=args.ladder_steps or tasks.LADDER.steps,
                     lrs=tuple(args.ladder_lrs or tasks.LADDER.lrs))
    print(f"lesson 08's data: test {scored_tokens(data.test)} scored tokens, out of corpus "
          f"{scored_tokens(out_of_corpus)} ({description}); torch {torch.__version__}, 1 thread, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"Kneser–Ney order 3: test {kneser_ney['test']:.2f}, out of corpus {kneser_ney['out of corpus']:.2f} → "
          f"the bars: test ≤ {bars['test']:.2f}, out of corpus ≤ {bars['out of corpus']:.2f}, "
          f"≤ {CPU_LIMIT:.0f} s of training CPU, every seed\n")
    print(f"lesson recipe: {recipe.model}\n  {recipe.train_lm_options()}\n")
    results = {"data": {"call": f"lm_data.pydoc_lm_data(vocab_size={VOCAB_SIZE}, max_len={MAX_LEN}, "
                                f"seed={DATA_SEED})", "test_tokens": scored_tokens(data.test),
                        "out_of_corpus": description, "out_of_corpus_tokens": scored_tokens(out_of_corpus)},
               "environment": {"torch": torch.__version__, "python": platform.python_version(), "threads": 1,
                               "cpu_count": os.cpu_count()},
               "count_models": counts, "bars": bars, "recipe": asdict(recipe)}

    if not args.no_recipe:
        print("GPT, lesson recipe:")
        rows = [run_gpt("lesson recipe", {}, seed, data, out_of_corpus) for seed in args.seeds]
        means = summary(rows, ("cpu_seconds", "test", "out of corpus"))
        print("\n| seed | CPU s | test ppl | out-of-corpus ppl | goal met |\n|---|---|---|---|---|")
        for row in rows:
            print(f"| {row['seed']} | {row['cpu_seconds']:.1f} | {row['test']:.2f} | {row['out of corpus']:.2f} | "
                  f"{'yes' if meets_goal(row, kneser_ney) else 'no'} |")
        print(f"| mean ± s.e. | {fmt(means['cpu_seconds'], 1)} | {fmt(means['test'])} | "
              f"{fmt(means['out of corpus'])} | {sum(meets_goal(r, kneser_ney) for r in rows)}/{len(rows)} |")
        for name, row in counts.items():
            print(f"| {name} | — | {row['test']:.2f} | {row['out of corpus']:.2f} | — |")
        results["recipe_runs"] = rows
        results["recipe_summary"] = {key: {"mean": m, "standard_error": e} for key, (m, e) in means.items()}
        results["goal_met_every_seed"] = all(meets_goal(r, kneser_ney) for r in rows)
        print()

    if variants:
        print(f"GPT, one change at a time (seed {args.seeds[0]}):")
        rows = [run_gpt(name, VARIANTS[name], args.seeds[0], data, out_of_corpus) for name in variants]
        print("\n| variant | CPU s | test ppl | out-of-corpus ppl |\n|---|---|---|---|")
        for row in rows:
            print(f"| {row['variant']} | {row['cpu_seconds']:.1f} | {row['test']:.2f} | {row['out of corpus']:.2f} |")
        results["variant_runs"] = rows
        print()

    if args.ladder_grid:
        print(f"ladder learning-rate grid, {ladder.steps} steps, seed 0:")
        grid = ladder_grid(ladder, data)
        best = {}
        for row in grid:
            if row["rung"] not in best or row["validation_loss"] < best[row["rung"]]["validation_loss"]:
                best[row["rung"]] = row
        print("best: " + ", ".join(f"{name} {row['lr']:g}" for name, row in best.items()) + "\n")
        results["ladder_grids"] = {f"{ladder.steps} steps": grid}

    if not args.no_ladder:
        print(f"ladder: {ladder.steps} steps of {ladder.batch_size} sentences, rungs of {ladder.model}")
        rates = ladder.learning_rates(data.tokenizer.vocab_size)
        rows = [train_rung(ladder, name, lr, seed, data) for seed in args.seeds for name, lr in rates.items()]
        print("\n| rung | lr | parameters | CPU s | validation loss | validation ppl | test ppl |")
        print("|---|---|---|---|---|---|---|")
        for name, lr in rates.items():
            mine = [r for r in rows if r["rung"] == name]
            means = summary(mine, ("cpu_seconds", "validation_loss", "validation", "test"))
            print(f"| {name} | {lr:g} | {mine[0]['parameters']:,} | {fmt(means['cpu_seconds'], 1)} | "
                  f"{fmt(means['validation_loss'], 3)} | {fmt(means['validation'])} | {fmt(means['test'])} |")
        bigram = counts["count bigram (add-k)"]
        print(f"| count bigram (add-k) | — | — | — | {math.log(bigram['validation']):.3f} | "
              f"{bigram['validation']:.2f} | {bigram['test']:.2f} |")
        per_seed = [sum(r["cpu_seconds"] for r in rows if r["seed"] == s) for s in args.seeds]
        print(f"\nladder training CPU per seed: {fmt(mean_and_standard_error(per_seed), 1)} s")
        results["ladders"] = {f"{ladder.steps} steps": {"recipe": asdict(ladder), "runs": rows,
                                                         "cpu_seconds_per_seed": per_seed}}

    results["total_seconds"] = time.perf_counter() - started
    if args.write:  # sections this run did not measure keep their stored values
        stored = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
        for key in ("ladders", "ladder_grids"):   # one entry per ladder budget
            if key in results:
                results[key] = {**stored.get(key, {}), **results[key]}
        RESULTS.write_text(json.dumps({**stored, **results}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
