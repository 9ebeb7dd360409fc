"""What the course's input checks cost: training steps and generation with the checks as shipped vs bypassed.

The checks run once at the public door (``course_utils.validation.checked_by``); ``unchecked()`` skips them, so the
difference of the two timings is the whole price of validation. Each round times both sides back to back (the
order alternating), so load from other processes affects both alike; the table reports the median ratio. Targets:
≤ 3 % overhead on CPU, and 0 host synchronisations from checks per generated token (counted, not timed).

    OMP_NUM_THREADS=1 python benchmarks/validation_overhead.py --rounds 7 --write
"""
from __future__ import annotations

import argparse
import pathlib
import platform
import re
import statistics
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from course_utils.config import TransformerConfig  # noqa: E402
from course_utils.decoding import generate, greedy_decode  # noqa: E402
from course_utils.language_model import DecoderOnlyLM  # noqa: E402
from course_utils.losses import lm_loss, translation_loss  # noqa: E402
from course_utils.models import Seq2SeqTransformer  # noqa: E402
from course_utils.training import best_time, make_optimizer  # noqa: E402
from course_utils.validation import unchecked  # noqa: E402
from tests.helpers import count_check_syncs  # noqa: E402

GPT = TransformerConfig(512, d_model=128, n_heads=4, d_ff=512, n_layers=2, max_len=64, dropout=0.1, norm="pre",
                        positional="learned")
TRANSLATOR = TransformerConfig(300, d_model=128, n_heads=4, d_ff=512, n_layers=2, max_len=40, dropout=0.1)


def workloads() -> dict:
    torch.manual_seed(0)
    gpt, translator = DecoderOnlyLM(GPT), Seq2SeqTransformer(TRANSLATOR)
    gpt_optimizer, translator_optimizer = make_optimizer(gpt), make_optimizer(translator)
    batch = torch.randint(7, 512, (32, 65))
    src, tgt = torch.randint(7, 300, (64, 16)), torch.randint(7, 300, (64, 20))
    prompt = torch.randint(7, 512, (4, 8))

    def train_step(model, optimizer, loss):
        def step():
            model.train()
            optimizer.zero_grad(set_to_none=True)
            loss().backward()
            optimizer.step()
        return step

    def eval_mode(model, call):
        def run():
            model.eval()
            call()
        return run

    return {"GPT training step (32 × 64 tokens)": train_step(gpt, gpt_optimizer, lambda: lm_loss(gpt, batch)),
            "translator training step (64 sentences)": train_step(translator, translator_optimizer,
                                                                  lambda: translation_loss(translator, (src, tgt))),
            "generate, 48 new tokens, KV cache": eval_mode(gpt, lambda: generate(gpt, prompt, 48, top_k=20)),
            "greedy_decode, 20 tokens, KV cache": eval_mode(translator,
                                                             lambda: greedy_decode(translator, src[:8], 5, 6, 20))}


def bypassed(function):
    def run():
        with unchecked():
            function()
    return run


def syncs_per_token() -> dict[str, float]:
    torch.manual_seed(0)
    gpt, translator = DecoderOnlyLM(GPT).eval(), Seq2SeqTransformer(TRANSLATOR).eval()
    prompt, src = torch.randint(7, 512, (2, 4)), torch.randint(7, 300, (2, 6))
    counts = {}
    for name, call in (("generate", lambda n: generate(gpt, prompt, n, eos_id=3, top_p=0.9)),
                       ("greedy_decode", lambda n: greedy_decode(translator, src, 5, 6, n))):
        counts[name] = (count_check_syncs(lambda call=call: call(33))
                        - count_check_syncs(lambda call=call: call(1))) / 32
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="timings per side per round (the fastest counts)")
    parser.add_argument("--write", action="store_true", help="write the table into benchmarks/README.md")
    args = parser.parse_args()
    ratios: dict[str, list[float]] = {}
    for round_ in range(args.rounds):
        for name, work in workloads().items():
            work()                                   # warm up
            sides = [work, bypassed(work)] if round_ % 2 == 0 else [bypassed(work), work]
            first, second = (best_time(side, args.repeats) for side in sides)
            checked, plain = (first, second) if round_ % 2 == 0 else (second, first)
            ratios.setdefault(name, []).append(checked / plain)
    lines = [f"{args.rounds} rounds × {args.repeats} timings per side; torch {torch.__version__}, "
             f"{torch.get_num_threads()} thread(s), Python {platform.python_version()}", "",
             "| workload | checked / unchecked time (median of rounds) | overhead |", "|---|---|---|"]
    for name, values in ratios.items():
        median = statistics.median(values)
        lines.append(f"| {name} | {median:.3f} | {100 * (median - 1):+.1f} % |")
    lines += ["", "| generation loop | host synchronisations from checks per generated token |", "|---|---|"]
    lines += [f"| {name} | {value:g} |" for name, value in syncs_per_token().items()]
    table = "\n".join(lines)
    print(table)
    if args.write:
        readme = ROOT / "benchmarks" / "README.md"
        text = readme.read_text(encoding="utf-8")
        block = f"<!-- validation:start -->\n{table}\n<!-- validation:end -->"
        text = re.sub(r"<!-- validation:start -->.*?<!-- validation:end -->", lambda _: block, text, flags=re.S)
        readme.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
