"""Lesson 07's translator on every stress category, for several seeds: exact match on numbers it never saw.

    OMP_NUM_THREADS=1 python benchmarks/translator_stress.py                      # seeds 0 1 2 (about 3 minutes)
    OMP_NUM_THREADS=1 python benchmarks/translator_stress.py --seeds 0 1 2 3 4 5 --write
    OMP_NUM_THREADS=1 python benchmarks/translator_stress.py --plain-sampler --set n_heads=4 --write   # an ablation

For each seed ``s`` the script trains exactly as ``python -m course_utils.train translator --seed s --threads 1``
does: ``tasks.build_task("translator", seed=s)`` (the lesson recipe ``tasks.recipe_for("translator")``, its data
from ``data.numbers.make_number_split``) and the course's training loop ``course_utils.train.train``; the weights
come back through the command's checkpoint. Greedy decoding (``TranslatorTask.exact_match``) is then scored on
three sets of numbers, none of which is in the training split:

* **own draw** (test seed ``s``): the split's own uniform test set and stress set, drawn before the training
  numbers;
* **fresh draw** (test seed ``s + 1000``): ``data.numbers.draw_held_out(seed=s + 1000,
  exclude=split.train_numbers)`` — a new uniform test set over 0–999,999 and a new stress set, as an independent
  check would draw them;
* **census**: every round thousand (and every teen round thousand) that is not a training number.

Ablations: ``--plain-sampler`` sets the training sampler's own chances for round thousands, whole hundred
thousands and repeated groups (``data.numbers.TRAIN_*_PROBABILITY``) to 0, the sampler before they were added;
``--set FIELD=VALUE`` changes a recipe or model field (``tasks.recipe_for``'s overrides, e.g. ``n_heads=4``). The
held-out draws do not depend on either. The target: at least 98 % exact match in every category of every draw.
``--write`` stores the runs under the variant's name in ``benchmarks/translator_stress.json`` (the rows of other
seeds and other variants already there are kept).
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import torch

from course_utils import tasks, train
from course_utils.data import numbers
from course_utils.distributed import distributed_session
from course_utils.runtime import seed_everything

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "translator_stress.json"
TARGET = 98.0
TEST_SEED_OFFSET = 1000


SAMPLER_CHANCES = ("TRAIN_ROUND_THOUSANDS_PROBABILITY", "TRAIN_WHOLE_HUNDREDS_PROBABILITY",
                   "TRAIN_REPEAT_PROBABILITY")


def train_translator(seed: int, **overrides) -> tuple[tasks.TranslatorTask, torch.nn.Module, dict]:
    """Lesson 07's run for ``seed``, as the training command does it; the task, the trained model, and times."""
    with tempfile.TemporaryDirectory() as folder:
        args = train.build_parser().parse_args(["translator", "--seed", str(seed), "--threads", "1", "--no-progress",
                                                "--no-eval", "--checkpoint-dir", folder])
        with distributed_session("cpu") as context:
            seed_everything(seed)
            task = tasks.build_task("translator", seed=seed, **overrides)
            cpu_start = time.process_time()
            metrics = train.train(task, args, context)
            cpu_seconds = time.process_time() - cpu_start
        model = task.build_model()
        model.load_state_dict(train.load_checkpoint(Path(folder) / train.CHECKPOINT_NAME)["model"])
    return task, model.eval(), {"steps": metrics["step"], "train CPU s": round(cpu_seconds, 1),
                                "train wall s": metrics["seconds"]}


def score_draw(task: tasks.TranslatorTask, model: torch.nn.Module, test: list, stress: dict) -> dict[str, float]:
    """Exact match % on the uniform test pairs and on each stress category's pairs."""
    return {"uniform": task.exact_match(model, test),
            **{name: task.exact_match(model, pairs) for name, pairs in stress.items()}}


def census(task: tasks.TranslatorTask, model: torch.nn.Module) -> dict[str, dict[str, float]]:
    """Exact match on every round thousand (and teen round thousand) that is not a training number."""
    trained = task.extras["split"].train_numbers
    result = {}
    for name in ("round thousands", "teen round thousands"):
        unseen = [number for number in range(1000, 10 ** 6, 1000)
                  if numbers.category_test(name)(number) and number not in trained]
        result[name] = {"numbers": len(unseen), "exact match %": task.exact_match(model, [numbers.make_pair(n)
                                                                                          for n in unseen])}
    return result


def run(seed: int, **overrides) -> list[dict]:
    """Train with ``seed``; one row per draw (own and fresh), each with the census and the training times."""
    task, model, times = train_translator(seed, **overrides)
    split = task.extras["split"]
    fresh_test, fresh_stress = numbers.draw_held_out(n_test=len(split.test), max_digits=split.max_digits,
                                                     stress_per_category=task.recipe.stress_per_category,
                                                     seed=seed + TEST_SEED_OFFSET, exclude=split.train_numbers)
    counted = census(task, model)
    rows = []
    for draw, test_seed, test, stress in (("own", seed, split.test, split.stress),
                                          ("fresh", seed + TEST_SEED_OFFSET, fresh_test, fresh_stress)):
        scores = score_draw(task, model, test, stress)
        lowest = min(stress, key=scores.get)
        rows.append({"train seed": seed, "draw": draw, "test seed": test_seed, "scores": scores,
                     "sizes": {"uniform": len(test), **{name: len(pairs) for name, pairs in stress.items()}},
                     "lowest category": lowest, "census": counted, **times})
    return rows


def table(rows: list[dict]) -> str:
    """The runs as a Markdown table: one row per (training seed, draw), one column per set."""
    names = list(rows[0]["scores"])
    short = {name: name.replace(" thousands", " thous.").replace("repeated", "rep.") for name in names}
    lines = ["| train seed | test seed | " + " | ".join(short[name] for name in names)
             + " | every unseen round thous. (teen) | train CPU s |",
             "|---|---|" + "---|" * len(names) + "---|---|"]
    for row in rows:
        cells = [(f"**{value:.{2 if name == 'uniform' else 1}f}**" if value < TARGET
                  else f"{value:.{2 if name == 'uniform' else 1}f}") for name, value in row["scores"].items()]
        counted = row["census"]
        lines.append(f"| {row['train seed']} | {row['test seed']} | " + " | ".join(cells)
                     + f" | {counted['round thousands']['exact match %']:.1f} "
                       f"({counted['teen round thousands']['exact match %']:.1f}) | {row['train CPU s']:.0f} |")
    sizes = rows[0]["sizes"]
    lines.append("\nnumbers per set: " + ", ".join(f"{name} {sizes[name]}" for name in names)
                 + f"; census: {rows[0]['census']['round thousands']['numbers']} round thousands, "
                   f"{rows[0]['census']['teen round thousands']['numbers']} teen round thousands (seed "
                   f"{rows[0]['train seed']}). Bold: below {TARGET:.0f} %.")
    return "\n".join(lines)


def summary(variants: dict) -> str:
    """One line per stored variant: its seeds, the draws below the target, its lowest scores, its training time."""
    lines = ["| variant | training seeds | (seed, draw) pairs below 98 % | lowest category (seed) | lowest uniform | "
             "every unseen teen round thousand, lowest | train CPU s (median) |", "|---|---|---|---|---|---|---|"]
    for name, stored in variants.items():
        rows = stored["runs"]
        below = sum(any(v < TARGET for v in row["scores"].values()) for row in rows)
        value, category, seed = min((v, k, row["train seed"]) for row in rows for k, v in row["scores"].items()
                                    if k != "uniform")
        seeds = sorted({row["train seed"] for row in rows})
        lines.append(f"| {name} | {seeds[0]}–{seeds[-1]} | {below} of {len(rows)} | {category} {value:.1f} % "
                     f"({seed}) | {min(row['scores']['uniform'] for row in rows):.2f} % | "
                     f"{min(row['census']['teen round thousands']['exact match %'] for row in rows):.1f} % | "
                     f"{statistics.median(row['train CPU s'] for row in rows):.1f} |")
    return "\n".join(lines)


def parse_override(text: str) -> tuple[str, object]:
    """``"n_heads=8"`` → ``("n_heads", 8)``: the value as a Python literal where it is one, else a string."""
    import ast

    name, _, value = text.partition("=")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (default 0 1 2)")
    parser.add_argument("--plain-sampler", action="store_true",
                        help="no extra chance for round thousands, whole hundred thousands, repeated groups")
    parser.add_argument("--set", type=parse_override, action="append", default=[], metavar="FIELD=VALUE",
                        help="change a recipe or model field, e.g. --set n_heads=4 (repeatable)")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    parser.add_argument("--summary", action="store_true",
                        help=f"print one line per variant stored in {RESULTS.relative_to(ROOT)} and stop")
    args = parser.parse_args()
    if args.summary:
        print(summary(json.loads(RESULTS.read_text(encoding="utf-8"))["variants"]))
        return
    overrides = dict(args.set)
    if args.plain_sampler:
        for name in SAMPLER_CHANCES:
            setattr(numbers, name, 0.0)
    variant = ", ".join(["plain sampler"] * args.plain_sampler + [f"{k}={v}" for k, v in overrides.items()]) or "recipe"
    torch.set_num_threads(1)
    recipe = tasks.recipe_for("translator", **overrides)
    print(f"torch {torch.__version__}, 1 thread; {variant}: d_model {recipe.model.d_model}, {recipe.model.n_heads} "
          f"heads, {recipe.epochs} epoch of {recipe.n_train} numbers in batches of {recipe.batch_size}; sampler "
          + ", ".join(f"{name} {getattr(numbers, name)}" for name in SAMPLER_CHANCES)
          + "; exact match % of greedy decoding on numbers never trained on\n")
    rows = []
    for seed in args.seeds:
        rows += run(seed, **overrides)
        print(f"seed {seed}: " + "; ".join(f"{row['draw']} draw lowest {row['lowest category']} "
                                          f"{row['scores'][row['lowest category']]:.1f} %, uniform "
                                          f"{row['scores']['uniform']:.2f} %" for row in rows[-2:])
              + f"; {rows[-1]['train CPU s']:.0f} s training CPU", flush=True)
    print("\n" + table(rows))
    failing = [(row["train seed"], row["test seed"], name) for row in rows for name, value in row["scores"].items()
               if value < TARGET]
    print(f"\nbelow {TARGET:.0f} %: {failing or 'none'}")
    if args.write:
        results = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {"variants": {}}
        results["environment"] = {"torch": torch.__version__, "python": platform.python_version(), "threads": 1}
        results["target %"] = TARGET
        stored = results["variants"].get(variant, {}).get("runs", [])
        seeds = {row["train seed"] for row in rows}   # a rerun of a seed replaces its rows; other seeds stay
        runs = sorted([row for row in stored if row["train seed"] not in seeds] + rows,
                      key=lambda row: (row["train seed"], row["test seed"]))
        results["variants"][variant] = {"recipe": asdict(recipe),
                                        "sampler": {name: getattr(numbers, name) for name in SAMPLER_CHANCES},
                                        "runs": runs}
        RESULTS.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS.relative_to(ROOT)} (variant '{variant}')")


if __name__ == "__main__":
    main()
