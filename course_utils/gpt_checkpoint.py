"""The shipped base GPT of lesson 11 (``checkpoints/gpt``), made from a finished run of the course's command::

    OMP_NUM_THREADS=1 python -m course_utils.train gpt --threads 1 --checkpoint-dir RUN
    python -m course_utils.gpt_checkpoint RUN --seconds S  # writes checkpoints/gpt/model.pt, tokenizer.json, meta.json

:func:`load_base_gpt` reads it back (defined in :mod:`course_utils.instruct`, re-exported here for lessons 08 and 09).
"""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

import torch

from .instruct import BASE_DIR, SEED_RESULTS, load_base_gpt

__all__ = ["BASE_DIR", "export_base", "load_base_gpt", "SEED_RESULTS", "stored_kneser_ney", "stored_seed_runs"]

RECIPE_RUNS = SEED_RESULTS.parent / "gpt_recipe.json"
BASELINES = SEED_RESULTS.parent / "lm_baselines.json"


def stored_seed_runs(path: str | Path = RECIPE_RUNS) -> list[dict]:
    """The shipped GPT's recipe trained for seeds 0-2 (``benchmarks/gpt_recipe.py``): per seed its parameters,
    steps, CPU seconds and validation / test / out-of-corpus perplexity (seed 0 is the shipped model)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))["recipe_runs"]


def stored_kneser_ney(path: str | Path = BASELINES) -> dict:
    """The tuned Kneser–Ney 5-gram's recorded perplexities on the same data (``benchmarks/lm_baselines.py``):
    ``validation``, ``test`` and ``out of corpus`` (all the foreign sentences, as :func:`stored_seed_runs`)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))["models"]["Kneser–Ney, order 5"]


def export_base(run_dir: Path, out_dir: Path, seconds: float | None, command: str) -> dict:
    """Write the model of a finished ``python -m course_utils.train gpt`` run (``run_dir/last.pt``) with its
    tokenizer and metrics to ``out_dir``."""
    from .data.pydoc_corpus import load_pydoc_corpus  # the exporter's own needs: not loaded by load_base_gpt's users
    from .tasks import build_task

    checkpoint = torch.load(run_dir / "last.pt", map_location="cpu", weights_only=True)
    run = checkpoint["run"]
    task = build_task("gpt", run["size"], seed=run["seed"])
    model = task.build_model()
    model.load_state_dict(checkpoint["model"])
    model.eval()
    metrics = task.evaluate(model)
    corpus = load_pydoc_corpus()
    kneser_ney = stored_kneser_ney()
    meta = {"config": asdict(task.model_config), "command": command, "run": run, "recipe": checkpoint["recipe"],
            "train_seconds": seconds, "torch_threads": 1, "corpus_fingerprint": corpus.fingerprint,
            "python_version": corpus.python_version, "metrics": metrics,
            "baseline": {"model": "Kneser–Ney 5-gram (benchmarks/lm_baselines.py)",
                         "validation perplexity": kneser_ney["validation"], "test perplexity": kneser_ney["test"]}}
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.clone() for k, v in model.state_dict().items()}, out_dir / "model.pt")
    task.extras["tokenizer"].save(out_dir / "tokenizer.json")
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m course_utils.gpt_checkpoint", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="the --checkpoint-dir of a finished `train gpt` run")
    parser.add_argument("--out", type=Path, default=BASE_DIR)
    parser.add_argument("--seconds", type=float, help="the run's measured wall time, stored in meta.json")
    parser.add_argument("--command", default="OMP_NUM_THREADS=1 python -m course_utils.train gpt --threads 1 "
                        "--checkpoint-dir RUN")
    args = parser.parse_args(argv)
    meta = export_base(args.run_dir, args.out, args.seconds, args.command)
    print(json.dumps(meta["metrics"]))
    return meta


if __name__ == "__main__":
    main()
