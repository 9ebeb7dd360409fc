"""Lesson 09's equal-budget ablation: lesson 08's GPT with one modern switch at a time, on lesson 08's task.

Every variant is a :class:`~course_utils.config.TransformerConfig` that differs from the baseline in one field
(:data:`VARIANTS`); every run trains a fresh :class:`~course_utils.language_model.DecoderOnlyLM` for the same
steps on the same batches (``seed``) and is scored on the validation split. From the command line::

    python -m course_utils.ablation            # rewrites the results the course ships (RESULTS_PATH)

Lesson 09 reads the shipped results with :func:`stored_results`.
"""
from __future__ import annotations

__all__ = ["BASELINE", "RESULTS_PATH", "AblationConfig", "VARIANTS", "main", "mean_and_standard_error", "run_ablation",
           "run_variant", "stored_results", "summarise", "train_and_score", "verdict"]

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


BASELINE = TransformerConfig(vocab_size=512, d_model=64, n_heads=4, d_ff=BASELINE_D_FF, n_layers=2, max_len=64,
                             dropout=0.0, norm="pre", positional="learned", bias=False)
"""Lesson 08's GPT, bias-free so that RMSNorm and SwiGLU (which have no biases) change one thing only."""


@dataclass
class AblationConfig:
    """Everything that decides the ablation's numbers; its hash is stored with the results.

    ``baseline`` is the model every variant starts from (lesson 08's Pre-LN GPT with learned positions, ReLU
    feed-forward and multi-head attention, bias-free; its ``vocab_size`` is the tokenizer's target size); the task is
    lesson 08's (:func:`~course_utils.data.lm_data.pydoc_lm_data`), trained with
    :func:`~course_utils.training.train_lm` and scored with :func:`~course_utils.training.evaluate_lm` on the
    validation split.
    """

    task: str = "lesson 08: data.lm_data.pydoc_lm_data, training.train_lm, evaluate_lm on the validation split"
    baseline: TransformerConfig = field(default_factory=lambda: BASELINE)
    steps: int = 400
    batch_size: int = 32
    lr: float = 3e-3
    warmup_steps: int = 20
    seeds: tuple[int, ...] = (0, 1, 2)
    variants: dict = field(default_factory=lambda: dict(VARIANTS))

    def model_config(self, variant: str, vocab_size: int) -> TransformerConfig:
        """The variant's model: the baseline with the variant's fields changed, for ``vocab_size`` ids."""
        check_choice("variant", variant, tuple(self.variants))
        return replace(self.baseline, vocab_size=vocab_size, tgt_vocab_size=None, **self.variants[variant])

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


def run_variant(setup: AblationConfig, variant: str, seed: int, data: LMData) -> dict:
    """Train one variant with one seed; return its validation loss, parameter count and seconds."""
    start = time.perf_counter()
    model, loss = train_and_score(setup.model_config(variant, data.tokenizer.vocab_size), data, setup.steps,
                                  setup.batch_size, setup.lr, setup.warmup_steps, seed)
    return {"variant": variant, "seed": seed, "validation_loss": loss, "parameters": count_parameters(model),
            "train_seconds": time.perf_counter() - start}


def summarise(runs: list[dict]) -> list[dict]:
    """One row per variant: mean ± standard error of the validation loss over seeds, and the difference to the
    baseline with its standard error (seeds paired: the same seed gives the same batches)."""
    by_variant: dict[str, dict[int, float]] = {}
    for run in runs:
        by_variant.setdefault(run["variant"], {})[run["seed"]] = run["validation_loss"]
    baseline = by_variant["baseline"]
    rows = []
    for variant, losses in by_variant.items():
        mean, error = mean_and_standard_error(list(losses.values()))
        diff, diff_error = mean_and_standard_error([losses[s] - baseline[s] for s in losses if s in baseline])
        parameters = next(r["parameters"] for r in runs if r["variant"] == variant)
        rows.append({"variant": variant, "mean": mean, "standard_error": error, "vs_baseline": diff,
                     "vs_baseline_standard_error": diff_error, "seeds": len(losses), "parameters": parameters})
    return rows


def verdict(row: dict, sigmas: float = 2.0) -> str:
    """``"better"`` / ``"worse"`` when the paired difference to the baseline is beyond ``sigmas`` standard errors
    (and the errors are not zero), else ``"within noise"``."""
    diff, error = row["vs_baseline"], row["vs_baseline_standard_error"]
    if row["variant"] == "baseline" or error == 0.0 or abs(diff) <= sigmas * error:
        return "within noise"
    return "better" if diff < 0 else "worse"


def run_ablation(setup: AblationConfig | None = None, log=print) -> dict:
    """Every variant × every seed; returns ``{"config", "config_hash", "torch", "runs", "summary"}``."""
    setup = AblationConfig() if setup is None else setup
    data = pydoc_lm_data(setup.baseline.vocab_size, setup.baseline.max_len)
    runs = []
    for seed in setup.seeds:
        for variant in setup.variants:
            runs.append(run_variant(setup, variant, seed, data))
            log(f"seed {seed} {variant:22} validation loss {runs[-1]['validation_loss']:.4f} "
                f"({runs[-1]['train_seconds']:.0f} s)")
    return {"config": asdict(setup), "config_hash": setup.hash(), "torch": torch.__version__.split("+")[0],
            "runs": runs, "summary": summarise(runs)}


RESULTS_PATH = Path(__file__).with_name("ablation_results.json")
"""The results the course ships: ``run_ablation(AblationConfig())`` with its ``config_hash`` and timing."""


def stored_results() -> dict:
    """The shipped results (:data:`RESULTS_PATH`): ``runs``, ``summary``, ``config_hash`` …, as ``main`` wrote them."""
    return json.loads(RESULTS_PATH.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_utils.ablation",
                                     description="Lesson 09's equal-budget ablation of the modern block on lesson "
                                                 "08's task.")
    parser.add_argument("--out", default=str(RESULTS_PATH), help="where to write the results (default: the file "
                        "the course ships, which lesson 09 plots)")
    parser.add_argument("--steps", type=int, default=None, help="override the number of steps (a quick run)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    setup = AblationConfig() if args.steps is None else replace(AblationConfig(), steps=args.steps)
    start = time.perf_counter()
    results = run_ablation(setup)
    results["total_seconds"] = time.perf_counter() - start
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1)
        handle.write("\n")
    for row in results["summary"]:
        print(f"{row['variant']:22} {row['mean']:.4f} ± {row['standard_error']:.4f}  "
              f"Δ {row['vs_baseline']:+.4f} ± {row['vs_baseline_standard_error']:.4f}  {verdict(row)}")
    print(f"wrote {args.out} (config hash {results['config_hash']}, {results['total_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
