"""Lesson 09's equal-budget experiments: lesson 08's GPT with one modern switch at a time, on lesson 08's task.

Two experiments, each with every variant's learning rate chosen on the validation split (one seed, a grid of
rates) and then three seeds at that rate, scored on the validation and test splits:

* ``ablation`` — every variant of :data:`VARIANTS` (one :class:`~course_utils.config.TransformerConfig` field
  changed from the baseline) trained on lesson 08's sentences;
* ``windows`` — the baseline with sinusoidal positions and with RoPE (:data:`WINDOW_VARIANTS`) trained on
  ``window``-token windows and scored at every position of windows twice as long.

From the command line (each run is 600 training steps; ``--only`` splits a part over processes)::

    python -m course_utils.ablation --part ablation
    python -m course_utils.ablation --part windows

Each part rewrites its entry of the results the course ships (:data:`RESULTS_PATH`); lesson 09 reads them with
:func:`stored_results`.
"""
from __future__ import annotations

__all__ = ["BASELINE", "RESULTS_PATH", "WINDOW_VARIANTS", "AblationConfig", "VARIANTS", "main",
           "mean_and_standard_error", "run_ablation", "run_variant", "stored_results", "summarise",
           "train_and_score", "verdict"]

import argparse
import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from .config import TransformerConfig, count_parameters
from .data.lm_data import LMData, lm_batches, pydoc_lm_data
from .language_model import DecoderOnlyLM
from .losses import loss_per_position
from .modern import swiglu_hidden_size
from .runtime import seed_everything
from .training import evaluate_lm, train_lm
from .validation import check_choice, check_int, check_positive_int

BASELINE_D_FF = 256
VARIANTS = {
    "baseline": {},
    "+ RoPE": {"positional": "rope"},
    "+ RMSNorm": {"normalization": "rmsnorm"},
    # three matrices of width 2/3 · d_ff hold the parameters of the baseline's two of width d_ff
    "+ SwiGLU": {"activation": "swiglu", "d_ff": swiglu_hidden_size(BASELINE_D_FF)},
    "+ GQA (2 K/V heads)": {"n_kv_heads": 2},
    "all modern": {"positional": "rope", "normalization": "rmsnorm", "activation": "swiglu",
                   "d_ff": swiglu_hidden_size(BASELINE_D_FF), "n_kv_heads": 2},
}
"""Each variant's changes to the baseline's :class:`~course_utils.config.TransformerConfig` fields."""

WINDOW_VARIANTS = {"sinusoidal positions": {"positional": "sinusoidal"}, "RoPE": {"positional": "rope"}}
"""The two position schemes that can run past the training length (a learned table has no rows there)."""

BASELINE = TransformerConfig(vocab_size=512, d_model=64, n_heads=4, d_ff=BASELINE_D_FF, n_layers=2, max_len=64,
                             dropout=0.0, norm="pre", positional="learned", bias=False)
"""Lesson 08's GPT, bias-free so that RMSNorm and SwiGLU (which have no biases) change one thing only."""


@dataclass
class AblationConfig:
    """Everything that decides the experiments' numbers; its hash is stored with the results.

    ``baseline`` is the model every variant starts from (lesson 08's Pre-LN GPT with learned positions, ReLU
    feed-forward and multi-head attention, bias-free; its ``vocab_size`` is the tokenizer's target size); the task is
    lesson 08's (:func:`~course_utils.data.lm_data.pydoc_lm_data`), trained with
    :func:`~course_utils.training.train_lm`. Each variant's rate is the one of ``learning_rates`` with the lowest
    validation loss for ``tuning_seed``; ``seeds`` are then trained at that rate.
    """

    task: str = "lesson 08: data.lm_data.pydoc_lm_data, training.train_lm, evaluate_lm on validation and test"
    baseline: TransformerConfig = field(default_factory=lambda: BASELINE)
    steps: int = 600
    batch_size: int = 32
    learning_rates: tuple[float, ...] = (3e-3, 6e-3, 1.2e-2)
    warmup_steps: int = 50
    tuning_seed: int = 0
    seeds: tuple[int, ...] = (0, 1, 2)
    variants: dict = field(default_factory=lambda: dict(VARIANTS))
    window: int = 32
    window_variants: dict = field(default_factory=lambda: dict(WINDOW_VARIANTS))

    def model_config(self, variant: str, vocab_size: int) -> TransformerConfig:
        """The variant's model (of :data:`VARIANTS` or :data:`WINDOW_VARIANTS`): the baseline with the variant's
        fields changed, for ``vocab_size`` ids."""
        changes = {**self.variants, **self.window_variants}
        check_choice("variant", variant, tuple(changes))
        return replace(self.baseline, vocab_size=vocab_size, tgt_vocab_size=None, **changes[variant])

    def hash(self) -> str:
        """First 12 hex digits of the SHA-256 of the config as sorted JSON."""
        text = json.dumps(asdict(self), sort_keys=True, default=list)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def train_and_score(config: TransformerConfig, data: LMData, steps: int, batch_size: int = 32, lr: float = 3e-3,
                    warmup_steps: int = 20, seed: int = 0) -> tuple[DecoderOnlyLM, float]:
    """A fresh :class:`~course_utils.language_model.DecoderOnlyLM` trained on ``data.train``; returns it (in eval
    mode) and its validation loss in nats. The same seed gives every config the same initial RNG state and the
    same batches."""
    check_int("seed", seed)
    seed_everything(seed)
    model = DecoderOnlyLM(config)
    train_lm(model, data.train, steps, batch_size, lr, warmup_steps, seed=seed)
    return model.eval(), evaluate_lm(model, lm_batches(data.validation, 256, shuffle=False))["loss"]


def mean_and_standard_error(values: list[float]) -> tuple[float, float]:
    """Mean and standard error ``s / √n`` (``s`` with ``n − 1``); the error of a single value is 0."""
    n = check_positive_int("len(values)", len(values))
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)


def run_variant(setup: AblationConfig, variant: str, seed: int, data: LMData, lr: float | None = None) -> dict:
    """Train one variant of :data:`VARIANTS` with one seed at ``lr`` (default: the first of the grid); return its
    validation and test loss, parameter count and seconds."""
    lr = setup.learning_rates[0] if lr is None else lr
    start = time.perf_counter()
    model, loss = train_and_score(setup.model_config(variant, data.tokenizer.vocab_size), data, setup.steps,
                                  setup.batch_size, lr, setup.warmup_steps, seed)
    test = evaluate_lm(model, lm_batches(data.test, 256, shuffle=False))["loss"]
    return {"variant": variant, "seed": seed, "lr": lr, "validation_loss": loss, "test_loss": test,
            "parameters": count_parameters(model), "train_seconds": time.perf_counter() - start}


def run_window_variant(setup: AblationConfig, variant: str, seed: int, data: LMData, lr: float) -> dict:
    """Train one of :data:`WINDOW_VARIANTS` on ``setup.window``-token windows; score every position of validation
    windows twice as long: ``validation_loss`` (positions seen in training), ``beyond_loss`` (the others) and
    ``per_position`` (the mean over blocks of 4 positions)."""
    start = time.perf_counter()
    seed_everything(seed)
    model = DecoderOnlyLM(setup.model_config(variant, data.tokenizer.vocab_size))
    train_lm(model, data.windows("train", setup.window).tolist(), setup.steps, setup.batch_size, lr,
             setup.warmup_steps, seed=seed)
    losses = loss_per_position(model.eval(), data.windows("validation", 2 * setup.window))
    return {"variant": variant, "seed": seed, "lr": lr, "validation_loss": float(losses[:setup.window].mean()),
            "beyond_loss": float(losses[setup.window:].mean()),
            "per_position": losses.view(-1, 4).mean(dim=1).tolist(), "train_seconds": time.perf_counter() - start}


def summarise(runs: list[dict], key: str = "validation_loss") -> list[dict]:
    """One row per variant: mean ± standard error of ``key`` over seeds, and the difference to the baseline with
    its standard error (seeds paired: the same seed gives the same batches)."""
    by_variant: dict[str, dict[int, float]] = {}
    for run in runs:
        by_variant.setdefault(run["variant"], {})[run["seed"]] = run[key]
    baseline = by_variant[next(iter(by_variant))] if "baseline" not in by_variant else by_variant["baseline"]
    rows = []
    for variant, losses in by_variant.items():
        mean, error = mean_and_standard_error(list(losses.values()))
        diff, diff_error = mean_and_standard_error([losses[s] - baseline[s] for s in losses if s in baseline])
        first = next(r for r in runs if r["variant"] == variant)
        rows.append({"variant": variant, "mean": mean, "standard_error": error, "vs_baseline": diff,
                     "vs_baseline_standard_error": diff_error, "seeds": len(losses),
                     "parameters": first.get("parameters"), "lr": first.get("lr")})
    return rows


def verdict(row: dict, sigmas: float = 2.0) -> str:
    """``"better"`` / ``"worse"`` when the paired difference to the baseline is beyond ``sigmas`` standard errors
    (and the errors are not zero), else ``"within noise"``."""
    diff, error = row["vs_baseline"], row["vs_baseline_standard_error"]
    if row["variant"] == "baseline" or error == 0.0 or abs(diff) <= sigmas * error:
        return "within noise"
    return "better" if diff < 0 else "worse"


def run_ablation(setup: AblationConfig | None = None, part: str = "ablation", log=print,
                 only: tuple[str, ...] = ()) -> dict:
    """One experiment (``"ablation"`` or ``"windows"``; ``only`` some of its variants): each variant's rate tuned
    on validation with ``tuning_seed``, then every seed at that rate. Returns ``{"config_hash", "torch", "tuning",
    "runs", "summary"}`` (``ablation`` also summarises ``test_loss``, ``windows`` ``beyond_loss``)."""
    setup = AblationConfig() if setup is None else setup
    check_choice("part", part, ("ablation", "windows"))
    data = pydoc_lm_data(setup.baseline.vocab_size, setup.baseline.max_len)
    every = setup.variants if part == "ablation" else setup.window_variants
    variants = [v for v in every if not only or v in only]

    def one(variant, seed, lr):
        if part == "ablation":
            return run_variant(setup, variant, seed, data, lr)
        return run_window_variant(setup, variant, seed, data, lr)

    tuning, runs = [], []
    for variant in variants:
        trials = [one(variant, setup.tuning_seed, lr) for lr in setup.learning_rates]
        for trial in trials:
            log(f"tuning {variant:22} lr {trial['lr']:.0e}: validation loss {trial['validation_loss']:.4f} "
                f"({trial['train_seconds']:.0f} s)")
        tuning += [{"variant": t["variant"], "lr": t["lr"], "validation_loss": t["validation_loss"]} for t in trials]
        best = min(trials, key=lambda t: t["validation_loss"])
        for seed in setup.seeds:
            runs.append(best if seed == setup.tuning_seed else one(variant, seed, best["lr"]))
            log(f"seed {seed} {variant:22} lr {best['lr']:.0e}: validation loss {runs[-1]['validation_loss']:.4f}")
    results = {"config_hash": setup.hash(), "torch": torch.__version__.split("+")[0], "tuning": tuning,
               "runs": runs, "summary": summarise(runs)}
    if part == "ablation":
        results["test_summary"] = summarise(runs, "test_loss")
    else:
        results["beyond_summary"] = summarise(runs, "beyond_loss")
    return results


def merge(old: dict, new: dict) -> dict:
    """``new``'s variants with ``old``'s others (the same config): tuning and runs joined, summaries recomputed,
    seconds added."""
    rerun = {run["variant"] for run in new["runs"]}
    merged = {**new, "tuning": [t for t in old["tuning"] if t["variant"] not in rerun] + new["tuning"],
              "runs": [r for r in old["runs"] if r["variant"] not in rerun] + new["runs"],
              "total_seconds": old.get("total_seconds", 0.0) + new.get("total_seconds", 0.0)}
    order = [*VARIANTS, *WINDOW_VARIANTS]
    merged["runs"].sort(key=lambda r: (order.index(r["variant"]) if r["variant"] in order else len(order), r["seed"]))
    merged["summary"] = summarise(merged["runs"])
    for key, measure in (("test_summary", "test_loss"), ("beyond_summary", "beyond_loss")):
        if key in new:
            merged[key] = summarise(merged["runs"], measure)
    return merged


RESULTS_PATH = Path(__file__).with_name("ablation_results.json")
"""The results the course ships: ``{"ablation": ..., "windows": ...}``, each as :func:`run_ablation` returned it,
with its ``total_seconds``."""


def stored_results() -> dict:
    """The shipped results (:data:`RESULTS_PATH`): ``{"ablation": ..., "windows": ...}``, as ``main`` wrote them."""
    return json.loads(RESULTS_PATH.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_utils.ablation",
                                     description="Lesson 09's equal-budget experiments on lesson 08's task.")
    parser.add_argument("--part", choices=("ablation", "windows"), default="ablation",
                        help="which experiment to run (each rewrites its own entry of the results)")
    parser.add_argument("--out", default=str(RESULTS_PATH), help="where to write the results (default: the file "
                        "the course ships, which lesson 09 plots)")
    parser.add_argument("--steps", type=int, default=None, help="override the number of steps (a quick run)")
    parser.add_argument("--only", nargs="*", default=(), help="run only these variants (several processes at once); "
                        "their runs replace theirs in the stored part, the others' are kept")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    setup = AblationConfig() if args.steps is None else replace(AblationConfig(), steps=args.steps)
    start = time.perf_counter()
    results = run_ablation(setup, args.part, only=tuple(args.only))
    results["total_seconds"] = time.perf_counter() - start
    out = Path(args.out)
    stored = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    stored = {key: value for key, value in stored.items() if key in ("ablation", "windows")}
    old = stored.get(args.part, {})
    if args.only and old.get("config_hash") == results["config_hash"]:
        results = merge(old, results)
    stored[args.part] = results
    out.write_text(json.dumps(stored, indent=1) + "\n", encoding="utf-8")
    for row in results["summary"]:
        print(f"{row['variant']:22} lr {row['lr']:.0e} {row['mean']:.4f} ± {row['standard_error']:.4f}  "
              f"Δ {row['vs_baseline']:+.4f} ± {row['vs_baseline_standard_error']:.4f}  {verdict(row)}")
    print(f"wrote {args.part} to {out} (config hash {results['config_hash']}, {results['total_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
