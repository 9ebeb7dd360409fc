"""Lesson 11's runs over seeds 0-2: the base model, SFT with the loss on the response only and on every token, and
DPO from the SFT model at several betas, all measured on the held-out (test) modules.

    OMP_NUM_THREADS=1 python benchmarks/instruct_seeds.py                  # seeds 0 1 2, writes instruct_seeds.json
    OMP_NUM_THREADS=1 python benchmarks/instruct_seeds.py --seeds 1 --out /tmp/s1.json   # one seed (parallel runs)
    python benchmarks/instruct_seeds.py --merge /tmp/s0.json /tmp/s1.json /tmp/s2.json  # then merge them

Every run is the notebook's (:func:`run_seed`): the recipes of ``tasks.RECIPES["sft"]["lesson"]`` and
``tasks.RECIPES["dpo"]["lesson"]`` through :func:`course_utils.instruct.train_sft` and
:func:`course_utils.instruct.train_dpo`; the seed draws the batches (the base weights are the shipped checkpoint's).
Seed 0 with beta 0.1 is the notebook's live run; tests/test_lesson11_benchmark.py re-derives it.
"""
from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import torch

from course_utils.data.stdlib_qa import choice_items, preference_pairs
from course_utils.instruct import (
    ChatTokenizer,
    chat_batch,
    choice_accuracy,
    chrf,
    greedy_answers,
    grow_vocabulary,
    load_base_gpt,
    load_instruct_data,
    preference_metrics,
    train_dpo,
    train_sft,
)
from course_utils.losses import response_loss
from course_utils.tasks import RECIPES

OUT = Path(__file__).with_suffix(".json")
BETAS = (0.03, 0.1, 0.3, 1.0)
CHRF_EVERY = 4           # greedy answers to every 4th test question (the notebook's sample)
EVAL_SEED = 1            # the held-out items' draw (distractors and their places)


def setup():
    base, base_tokenizer, meta = load_base_gpt()
    tokenizer = ChatTokenizer(base_tokenizer)
    data = load_instruct_data(tokenizer, base.config.max_len)
    evaluation = {"form": choice_items(data.test, data.prose, 3, seed=EVAL_SEED),
                  "knowledge": choice_items(data.test, data.siblings, 3, seed=EVAL_SEED),
                  "pairs": preference_pairs(data.test, data.prose, seed=EVAL_SEED),
                  "chrf": data.test[::CHRF_EVERY]}
    return base, tokenizer, data, evaluation


def measure(model, reference, tokenizer, evaluation, beta=0.1) -> dict:
    """Held-out numbers of one model (``reference``: what preference metrics compare it with)."""
    sample = evaluation["chrf"]
    answers = greedy_answers(model, tokenizer, [p.question for p in sample])
    test_batch = chat_batch(tokenizer, [(p.question, p.answer) for p in evaluation["chrf"]])
    with torch.no_grad():
        loss = response_loss(model.eval(), test_batch).item()
    return {"form choice": choice_accuracy(model, tokenizer, evaluation["form"]),
            "knowledge choice": choice_accuracy(model, tokenizer, evaluation["knowledge"]),
            "chrF": chrf(answers, [p.answer for p in sample]), "response loss": loss,
            **{f"preference {k}": v for k, v in
               preference_metrics(model, reference, tokenizer, evaluation["pairs"], beta).items()}}


def run_seed(seed: int, base, tokenizer, data, evaluation, betas=BETAS, log=print) -> dict:
    sft_recipe, dpo_recipe = RECIPES["sft"]["lesson"], RECIPES["dpo"]["lesson"]
    result = {}
    for name, response_only in (("sft", True), ("sft, loss on every token", False)):
        model = grow_vocabulary(base, 2)
        start = time.perf_counter()
        train_sft(model, tokenizer, data.examples(), sft_recipe.steps, sft_recipe.batch_size, sft_recipe.lr,
                  seed=seed, response_only=response_only, warmup_steps=sft_recipe.warmup_steps)
        result[name] = {"seconds": round(time.perf_counter() - start, 1), **measure(model, model, tokenizer,
                                                                                    evaluation)}
        log(seed, name, result[name])
        if response_only:
            sft_model = model
    triples = preference_pairs(data.train, data.prose, seed=seed)
    for beta in betas:
        policy = copy.deepcopy(sft_model)
        start = time.perf_counter()
        reference, _ = train_dpo(policy, tokenizer, triples, dpo_recipe.steps, dpo_recipe.batch_size, dpo_recipe.lr,
                                 beta=beta, seed=seed, warmup_steps=dpo_recipe.warmup_steps)
        result[f"dpo beta {beta}"] = {"seconds": round(time.perf_counter() - start, 1),
                                      **measure(policy, reference, tokenizer, evaluation, beta)}
        log(seed, beta, result[f"dpo beta {beta}"])
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--merge", type=Path, nargs="+", help="merge the JSON files of single-seed runs into --out")
    args = parser.parse_args(argv)
    if args.merge:
        parts = [json.loads(path.read_text()) for path in args.merge]
        merged = {**parts[0], "seeds": {k: v for part in parts for k, v in part["seeds"].items()}}
        args.out.write_text(json.dumps(merged, indent=1) + "\n")
        return merged
    torch.set_num_threads(1)
    base, tokenizer, data, evaluation = setup()
    model = grow_vocabulary(base, 2)
    results = {"recipes": {"sft": vars(RECIPES["sft"]["lesson"]) | {"model": None},
                           "dpo": vars(RECIPES["dpo"]["lesson"]) | {"model": None}},
               "sizes": {"train": len(data.train), "validation": len(data.validation), "test": len(data.test),
                         "form items": len(evaluation["form"]), "knowledge items": len(evaluation["knowledge"]),
                         "preference pairs": len(evaluation["pairs"]), "chrF questions": len(evaluation["chrf"])},
               "base": measure(model, model, tokenizer, evaluation), "torch": torch.__version__, "threads": 1,
               "seeds": {str(seed): run_seed(seed, base, tokenizer, data, evaluation) for seed in args.seeds}}
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
