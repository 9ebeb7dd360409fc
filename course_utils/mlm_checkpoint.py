"""Lesson 06's longer-trained masked language model: the script that makes it, and the loader.

Lesson 06 trains a small MLM live, in well under a minute. This module trains a bigger one for longer on the same
training sentences (the same held-out split, so the notebook's held-out numbers stay honest) and ships it in
``course_utils/checkpoints/mlm/``:

* ``model.pt`` — the ``state_dict`` (tensors only; read with ``torch.load(..., weights_only=True)``);
* ``tokenizer.json`` — its byte-level BPE, trained on the training sentences;
* ``meta.json`` — the model config, the recipe, the corpus fingerprint and Python version it was trained on, the
  wall time, and the held-out metrics it reached.

Make it (seeded; the shipped one trained 11440 steps in 1236 s on one thread of a shared 2-core machine)::

    python -m course_utils.mlm_checkpoint --threads 1

``--epochs N`` trains longer or shorter than the recipe's 80 epochs (the cosine schedule stretches to fit).

The corpus is read from the Python that runs the course (:mod:`course_utils.data.pydoc_corpus`): on another
Python its fingerprint differs, the held-out sentences are other sentences, and the stored metrics do not apply —
:func:`load_mlm_checkpoint` reports it (``matches_corpus``).
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import mlm
from .config import TransformerConfig
from .data.batching import length_bucketed_batches
from .models import MaskedLanguageModel
from .runtime import seed_everything
from .tokenization import BPETokenizer, add_special_tokens
from .training import fit

CHECKPOINT_DIR = Path(__file__).parent / "checkpoints" / "mlm"
SEED_RUNS = Path(__file__).resolve().parent.parent / "benchmarks" / "mlm_seeds.json"
HELD_OUT_FRACTION, SPLIT_SEED = 0.1, 0   # lesson 06's split: the checkpoint never sees its held-out sentences


CHECKPOINT_MODEL = TransformerConfig(vocab_size=4000, d_model=128, n_heads=4, d_ff=512, n_layers=2, max_len=64,
                                     dropout=0.0, activation="gelu", norm="pre", positional="sinusoidal")


@dataclass
class CheckpointRecipe:
    """What was chosen by measurement (see the lesson 06 closing note): the model (its ``vocab_size`` is the BPE's
    size) and the training settings."""

    model: TransformerConfig = field(default_factory=lambda: CHECKPOINT_MODEL)
    batch_size: int = 64
    epochs: int = 80
    lr: float = 2e-3
    warmup_fraction: float = 0.05
    train_select_prob: float = 0.3
    seed: int = 0


def prepare_data(vocab_size: int, max_len: int):
    """``(corpus, tokenizer, train_ids, held_out_ids)`` with lesson 06's split of the running Python's corpus."""
    from .data.pydoc_corpus import load_pydoc_corpus

    corpus = load_pydoc_corpus()
    train_corpus, held_out_corpus = corpus.split(held_out_fraction=HELD_OUT_FRACTION, seed=SPLIT_SEED)
    tokenizer = BPETokenizer.train(train_corpus.sentences, vocab_size=vocab_size)

    def encode(sentences):
        return [add_special_tokens(tokenizer.encode(s), add_cls=True, add_sep=True, max_len=max_len)
                for s in sentences]

    return corpus, tokenizer, encode(train_corpus.sentences), encode(held_out_corpus.sentences)


def held_out_metrics(model, tokenizer, train_ids, held_out_ids) -> dict[str, float]:
    """The numbers the checkpoint reports: BERT-15 % masked accuracy and perplexity, and accuracy at [MASK]
    positions for the model and the three count baselines, all on the same held-out positions."""
    vocab_size = tokenizer.vocab_size
    batches = length_bucketed_batches(held_out_ids, 256, shuffle=False)
    unigram = mlm.UnigramBaseline(train_ids, vocab_size)
    overall = mlm.evaluate_mlm(model, batches, vocab_size, baseline=unigram)
    at_masks = mlm.evaluate_at_masks(model, batches, vocab_size, {
        "unigram": unigram, "bigram": mlm.NeighbourCountBaseline(train_ids, vocab_size, use_right=False),
        "neighbour": mlm.NeighbourCountBaseline(train_ids, vocab_size)})
    metrics = {"accuracy": overall["accuracy"], "perplexity": overall["perplexity"],
               "n_predictions": overall["n_predictions"], "n_mask": at_masks["model"]["n_mask"]}
    for name, result in at_masks.items():
        metrics[f"{name}_mask_accuracy"] = result["mask_accuracy"]
    return metrics


def train_checkpoint(recipe: CheckpointRecipe, out_dir: Path, log=print) -> dict:
    """Train with ``recipe``, write the three files to ``out_dir`` and return ``meta.json``'s content."""
    start = time.perf_counter()
    config = recipe.model
    corpus, tokenizer, train_ids, held_out_ids = prepare_data(config.vocab_size, config.max_len)
    seed_everything(recipe.seed)
    model = MaskedLanguageModel(config, tie_weights=True)
    batches = length_bucketed_batches(train_ids, recipe.batch_size, shuffle=True, seed=recipe.seed)
    held_out_batches = length_bucketed_batches(held_out_ids, 256, shuffle=False)
    total_steps = recipe.epochs * len(batches)

    def report(model) -> dict[str, float]:
        metrics = mlm.evaluate_mlm(model, held_out_batches, config.vocab_size)
        log(f"{time.perf_counter() - start:7.0f} s  held-out accuracy {metrics['accuracy']:.1%}, "
            f"perplexity {metrics['perplexity']:.1f}")
        return metrics

    log(f"{len(train_ids)} training sentences, {sum(map(len, train_ids))} ids; {total_steps} steps of "
        f"{recipe.batch_size}; corpus {corpus.fingerprint}")
    history = fit(model, batches, mlm.make_mlm_loss_fn(config.vocab_size, seed=recipe.seed,
                                                       select_prob=recipe.train_select_prob),
                  epochs=recipe.epochs, lr=recipe.lr, warmup_steps=int(recipe.warmup_fraction * total_steps),
                  schedule="cosine", eval_fn=report, progress=False)
    model.eval()
    meta = {"config": asdict(config), "recipe": asdict(recipe), "corpus_fingerprint": corpus.fingerprint,
            "python_version": corpus.python_version, "steps": len(history.train_loss),
            "train_seconds": round(history.seconds, 1), "torch_threads": torch.get_num_threads(),
            "metrics": held_out_metrics(model, tokenizer, train_ids, held_out_ids)}
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out_dir / "model.pt")
    tokenizer.save(out_dir / "tokenizer.json")
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    log(json.dumps(meta["metrics"]))
    return meta


def stored_seed_runs(path: str | Path = SEED_RUNS) -> dict:
    """Lesson 06's live recipe trained for seeds 0-2 (``benchmarks/mlm_seeds.py``): each seed's held-out curve and
    neighbour-probe rows, with the torch version, threads and corpus fingerprint of the run."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def load_mlm_checkpoint(folder: str | Path = CHECKPOINT_DIR):
    """``(model, tokenizer, meta)`` from a folder written by :func:`train_checkpoint` (weights-only load).

    ``meta["matches_corpus"]`` says whether the running Python's corpus is the one the checkpoint was trained and
    measured on (same fingerprint); when it is ``False`` the stored metrics do not describe this corpus.
    """
    from .data.pydoc_corpus import load_pydoc_corpus

    folder = Path(folder)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    model = MaskedLanguageModel(TransformerConfig(**meta["config"]), tie_weights=True)
    model.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
    model.eval()
    meta["matches_corpus"] = load_pydoc_corpus().fingerprint == meta["corpus_fingerprint"]
    return model, BPETokenizer.load(folder / "tokenizer.json"), meta


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m course_utils.mlm_checkpoint", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=CHECKPOINT_DIR, help="folder for model.pt, tokenizer.json, "
                        "meta.json (default: the shipped checkpoint's folder)")
    parser.add_argument("--epochs", type=int, help="override the recipe's epochs (a quicker, weaker model)")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    recipe = CheckpointRecipe()
    if args.epochs:
        recipe.epochs = args.epochs
    return train_checkpoint(recipe, args.out, log=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
