"""Training-step throughput of the course's encoder–decoder vs nn.Transformer, and attention math vs fast path.

Run:  OMP_NUM_THREADS=1 python benchmarks/bench_throughput.py [--rounds 7] [--write]
Both contenders alternate within each round (so background load hits both alike); we report the median of the
per-round ratios. ``--write`` rewrites the results table in benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import pathlib
import platform
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils import Seq2SeqTransformer, TransformerConfig, seed_everything
from course_utils.kv_cache import CachedMultiHeadAttention
from course_utils.masks import causal_mask, padding_mask
from course_utils.models import InputEmbedding

CONFIG = TransformerConfig(vocab_size=1000, d_model=128, n_heads=4, d_ff=512, n_layers=2, max_len=64, dropout=0.1)
BATCH, SRC_LEN, TGT_LEN = 64, 16, 20


class TorchSeq2Seq(nn.Module):
    """The same model with nn.Transformer as its core (same embeddings and output projection)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.src_embedding = InputEmbedding(config.vocab_size, config.d_model, config.max_len, dropout=config.dropout)
        self.tgt_embedding = InputEmbedding(config.vocab_size, config.d_model, config.max_len, dropout=config.dropout)
        self.core = nn.Transformer(config.d_model, config.n_heads, config.n_layers, config.n_layers, config.d_ff,
                                   config.dropout, batch_first=True)
        self.generator = nn.Linear(config.d_model, config.vocab_size)

    def forward(self, src_ids, tgt_in_ids):
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in_ids.size(1), dtype=torch.bool)
        hidden = self.core(self.src_embedding(src_ids), self.tgt_embedding(tgt_in_ids), tgt_mask=causal,
                           src_key_padding_mask=src_ids == 0, tgt_key_padding_mask=tgt_in_ids == 0,
                           memory_key_padding_mask=src_ids == 0, tgt_is_causal=True)
        return self.generator(hidden)


def batch():
    generator = torch.Generator().manual_seed(0)
    src = torch.randint(1, CONFIG.vocab_size, (BATCH, SRC_LEN), generator=generator)
    tgt = torch.randint(1, CONFIG.vocab_size, (BATCH, TGT_LEN + 1), generator=generator)
    for row in range(BATCH):  # realistic padding: varied lengths
        src[row, SRC_LEN - row % 6:] = 0
        tgt[row, TGT_LEN + 1 - row % 5:] = 0
    return src, tgt


def steps_per_second(model: nn.Module, steps: int) -> float:
    src, tgt = batch()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    for i in range(steps + 2):  # two warm-up steps
        if i == 2:
            start = time.perf_counter()
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return steps / (time.perf_counter() - start)


def attention_calls_per_second(use_fast_path: bool, calls: int) -> float:
    attention = CachedMultiHeadAttention(CONFIG.d_model, CONFIG.n_heads, use_fast_path=use_fast_path)
    x = torch.randn(BATCH, 64, CONFIG.d_model, requires_grad=True)
    mask = padding_mask(batch()[1][:, :64].repeat(1, 4)[:, :64]) & causal_mask(64)
    for i in range(calls + 2):
        if i == 2:
            start = time.perf_counter()
        attention(x, x, x, mask, need_weights=False)[0].sum().backward()
    return calls / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    seed_everything(0)
    ours, theirs = Seq2SeqTransformer(CONFIG), TorchSeq2Seq(CONFIG)
    model_ratios, attention_ratios, ours_rates, theirs_rates, thread_ratios = [], [], [], [], []
    threads = torch.get_num_threads()
    for _ in range(args.rounds):
        ours_rate, theirs_rate = steps_per_second(ours, args.steps), steps_per_second(theirs, args.steps)
        ours_rates.append(ours_rate)
        theirs_rates.append(theirs_rate)
        model_ratios.append(ours_rate / theirs_rate)
        attention_ratios.append(attention_calls_per_second(True, args.steps) /
                                attention_calls_per_second(False, args.steps))
        torch.set_num_threads(2)
        two_threads = steps_per_second(ours, args.steps)
        torch.set_num_threads(threads)
        thread_ratios.append(two_threads / ours_rate)
    rows = [
        ("course Seq2SeqTransformer, training steps/s", f"{statistics.median(ours_rates):.2f}"),
        ("nn.Transformer (same embeddings/head), training steps/s", f"{statistics.median(theirs_rates):.2f}"),
        ("**ratio course / nn.Transformer** (median of rounds)", f"**{statistics.median(model_ratios):.3f}**"),
        ("attention fast path / math path, fwd+bwd calls/s (median)", f"{statistics.median(attention_ratios):.2f}×"),
        (f"course model with 2 threads / {threads} thread(s) (median)", f"{statistics.median(thread_ratios):.2f}×"),
    ]
    setting = (f"d_model {CONFIG.d_model}, {CONFIG.n_heads} heads, d_ff {CONFIG.d_ff}, {CONFIG.n_layers}+"
               f"{CONFIG.n_layers} layers, batch {BATCH}, src {SRC_LEN} / tgt {TGT_LEN} tokens, dropout "
               f"{CONFIG.dropout}; {args.rounds} rounds × {args.steps} steps; torch {torch.__version__}, "
               f"{torch.get_num_threads()} thread(s), Python {platform.python_version()}")
    table = "| measurement | value |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
    print(setting)
    print(table)
    print("per-round model ratios:", ", ".join(f"{r:.3f}" for r in model_ratios))
    if args.write:
        readme = pathlib.Path(__file__).with_name("README.md")
        text = readme.read_text()
        start, end = "<!-- results:start -->", "<!-- results:end -->"
        before, after = text.split(start)[0], text.split(end)[1]
        readme.write_text(f"{before}{start}\n{setting}\n\n{table}\n{end}{after}")


if __name__ == "__main__":
    main()
