"""Mutation testing: plant classic Transformer bugs one at a time and check that the tests catch every one.

    python -m tests.mutants              # every mutant; exits 1 if any survives, 2 if the setup is broken
    python -m tests.mutants --list       # what would be planted
    python -m tests.mutants --only "inverted mask" "no ×√d_model"

Each mutant is an exact source substitution (``original`` → ``replacement``) in one file of ``course_utils``. The
package, the tests, ``conftest.py`` and ``pyproject.toml`` are copied to a temporary directory; each mutant is
planted in that copy only (the real files are never touched) and the tests that cover its module run there with
``-x -q -n 0 -p no:randomly``. A mutant is *killed* when those tests fail. If an ``original`` text is not found
exactly once in the real package, the command stops before running anything: a refactor must update the mutant,
never silently disable it. The unmutated copy runs first and must pass.

Not collected by pytest (the file name does not start with ``test_``); run it after changing the package or its
tests.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "course_utils"
COPIED = (PACKAGE, "tests", "conftest.py", "pyproject.toml", "benchmarks")  # benchmarks: results a test re-reads
PYTEST_ARGS = ("-x", "-q", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider", "--durations=0",
               "--durations-min=1000")

ATTENTION_TESTS = ("tests/test_attention.py",)
LAYER_TESTS = ("tests/test_layers_and_models.py",)
MODEL_TESTS = ("tests/test_layers_and_models.py", "tests/test_leakage.py")
NGRAM_TESTS = ("tests/test_ngram.py",)
INTEROP_TESTS = ("tests/test_interop.py",)
EXERCISE_TESTS = ("tests/test_exercise_asserts.py", "tests/test_exercise_mistakes.py")
INSTRUCT_TESTS = ("tests/test_lesson11_instruct.py",)


@dataclass(frozen=True)
class Mutant:
    """One planted bug: in ``file`` (relative to ``course_utils/``) replace ``original`` by ``replacement``."""

    name: str
    file: str
    original: str
    replacement: str
    tests: tuple[str, ...]


MUTANTS = (
    Mutant("missing √d_k", "attention.py",
           "scores = (query.to(compute_dtype) * scale) @", "scores = query.to(compute_dtype) @", ATTENTION_TESTS),
    Mutant("scaled by d_k instead of √d_k", "attention.py",
           "scale = 1.0 / math.sqrt(query.size(-1)) if scale is None", "scale = 1.0 / query.size(-1) if scale is None",
           ATTENTION_TESTS),
    Mutant("fused path without the scale", "attention.py", "dropout_p=dropout_p, scale=scale,",
           "dropout_p=dropout_p, scale=1.0,", ATTENTION_TESTS),
    Mutant("transpose instead of split heads", "attention.py",
           "return x.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2)",
           "return x.view(batch, self.n_heads, seq, self.d_head)", ATTENTION_TESTS),
    Mutant("K/V heads split as query heads (grouped-query attention)", "modern.py",
           "return x.view(batch, seq, self.n_kv_heads, self.d_head).transpose(1, 2)",
           "return x.view(batch, self.n_kv_heads, seq, self.d_head)", ("tests/test_modern.py",)),
    Mutant("merge without transposing back", "attention.py",
           "return x.transpose(1, 2).contiguous().view(batch, seq, self.d_model)",
           "return x.contiguous().view(batch, seq, self.d_model)", ATTENTION_TESTS),
    Mutant("inverted mask", "attention.py",
           "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)",
           "scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)", ATTENTION_TESTS),
    Mutant("softmax over queries", "attention.py",
           "weights = torch.softmax(scores, dim=-1)", "weights = torch.softmax(scores, dim=-2)", ATTENTION_TESTS),
    Mutant("mask ignored on the fast path", "attention.py",
           "F.scaled_dot_product_attention(query, key, value, attn_mask=mask,",
           "F.scaled_dot_product_attention(query, key, value, attn_mask=None,", ATTENTION_TESTS),
    Mutant("fully masked row not zeroed (math path)", "attention.py",
           "weights = weights.masked_fill(~mask, 0.0)", "weights = weights", ATTENTION_TESTS),
    Mutant("fully masked row not zeroed (fast path)", "attention.py",
           "out = out.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)", "out = out", ATTENTION_TESTS),
    Mutant("residual dropped (Post-LN)", "layers.py",
           "return self.norm(x + self.dropout(sublayer(x)))", "return self.norm(self.dropout(sublayer(x)))",
           LAYER_TESTS),
    Mutant("residual dropped (Pre-LN)", "layers.py",
           "return x + self.dropout(sublayer(self.norm(x)))", "return self.dropout(sublayer(self.norm(x)))",
           LAYER_TESTS),
    Mutant("norm misplaced (Pre-LN normalises the sublayer output)", "layers.py",
           "return x + self.dropout(sublayer(self.norm(x)))", "return x + self.norm(self.dropout(sublayer(x)))",
           LAYER_TESTS),
    Mutant("final norm dropped (encoder)", "models.py",
           "return self.norm(x)", "return x", MODEL_TESTS),
    Mutant("final norm dropped (decoder)", "models.py", "return self.norm(y)", "return y", MODEL_TESTS),
    Mutant("causal mask off by one (causal_mask)", "masks.py",
           ".tril(diagonal=past)", ".tril(diagonal=past + 1)", ("tests/test_masks.py",) + ATTENTION_TESTS),
    Mutant("causal mask ignores the cached positions", "masks.py",
           ".tril(diagonal=past)", ".tril(diagonal=0)", ("tests/test_masks.py",) + MODEL_TESTS),
    Mutant("KV cache overwritten instead of appended", "kv_cache.py",
           "keys, values = torch.cat([self.keys, keys], dim=2), torch.cat([self.values, values], dim=2)",
           "keys, values = keys, values", ATTENTION_TESTS),
    Mutant("cross-attention K/V from the decoder", "layers.py",
           "self.cross_attn(h, memory, memory, memory_mask,", "self.cross_attn(h, h, h, memory_mask,", LAYER_TESTS),
    Mutant("memory mask ignored", "layers.py",
           "self.cross_attn(h, memory, memory, memory_mask,", "self.cross_attn(h, memory, memory, None,",
           MODEL_TESTS),
    Mutant("KV-cache position offset wrong", "models.py",
           "self.tgt_embedding(tgt_in_ids, offset)", "self.tgt_embedding(tgt_in_ids, 0)", MODEL_TESTS),
    Mutant("no ×√d_model", "embedding.py",
           "return self.lookup(ids.long()) * math.sqrt(self.d_model)", "return self.lookup(ids.long())", LAYER_TESTS),
    Mutant("PE frequency base wrong", "positional.py",
           "-math.log(10000.0) / d_model", "-math.log(1000.0) / d_model", ("tests/test_positional.py",)),
    Mutant("tied weights copied instead of shared", "models.py",
           "self.output.weight = self.text_encoder.embedding.tokens.weight",
           "self.output.weight = nn.Parameter(self.text_encoder.embedding.tokens.weight.detach().clone())",
           MODEL_TESTS),
    Mutant("mean pooling over padding", "models.py",
           "weights = keep.to(hidden.dtype)", "weights = torch.ones_like(keep, dtype=hidden.dtype)", MODEL_TESTS),
    Mutant("language-model shift off by one", "losses.py",
           "return ids[:, :-1], ids[:, 1:]", "return ids[:, :-1], ids[:, :-1]", ("tests/test_gpt.py",)),
    Mutant("repetition penalty on the prompt only", "decoding.py",
           "logits = next_token_logits(logits, ids, temperature",
           "logits = next_token_logits(logits, prompt_ids, temperature", ("tests/test_gpt_sampling.py",)),
    Mutant("[PAD] and [BOS] may be generated", "decoding.py",
           'logits = logits.index_fill(-1, forbidden, float("-inf"))', "logits = logits",
           ("tests/test_gpt_sampling.py",)),
    Mutant("sampling ignores the given generator", "decoding.py",
           "torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)",
           "torch.multinomial(torch.softmax(logits, dim=-1), 1)", ("tests/test_gpt_sampling.py",)),
    Mutant("training command without gradient clipping", "train.py",
           '        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe.clip_norm or float("inf"))\n', "",
           ("tests/test_train_optimisation.py",)),
    Mutant("training command never steps its schedule", "train.py", "        scheduler.step()\n", "",
           ("tests/test_train_optimisation.py",)),
    Mutant("training command forgets DistributedSampler.set_epoch", "train.py",
           "            sampler.set_epoch(epoch)\n", "", ("tests/test_train_optimisation.py",)),
    Mutant("beam search counts lengths past [EOS]", "decoding.py",
           "lengths = lengths[parent] + (~finished[parent]).long()", "lengths = lengths[parent] + 1",
           ("tests/test_decoding.py",)),
    Mutant("finished beam hypotheses keep growing", "decoding.py",
           "        step_log_probs = torch.where(finished[:, None], frozen, step_log_probs)\n", "",
           ("tests/test_decoding.py",)),
    Mutant("attention dropout left on in eval mode (lesson 03's block)", "attention.py",
           "dropout_p = self.dropout if self.training else 0.0", "dropout_p = self.dropout", ATTENTION_TESTS),
    Mutant("attention dropout left on in eval mode (the models' block)", "kv_cache.py",
           "dropout_p = self.dropout if self.training else 0.0", "dropout_p = self.dropout",
           ("tests/test_modern.py",)),
    Mutant("cross-attention re-projects the memory at every cached step", "kv_cache.py",
           "if static_kv and cache is not None and cache.length:", "if False:", ATTENTION_TESTS),
    Mutant("RoPE positions restart at 0 with a cache", "kv_cache.py",
           "past=0 if cache is None else cache.length)", "past=0)", ("tests/test_modern.py",)),
    Mutant("grouped K/V heads not repeated on the math path", "modern.py",
           "return repeat_kv(k, groups), repeat_kv(v, groups)", "return k, v", ("tests/test_modern.py",)),
    Mutant("padded keys and values not hidden (NaN leaks through 0 × NaN)", "attention.py",
           "    return key.masked_fill(~seen, 0.0), value.masked_fill(~seen, 0.0)", "    return key, value",
           ATTENTION_TESTS),
    Mutant("translation target not shifted", "losses.py",
           "decoder_input, labels = tgt[:, :-1], tgt[:, 1:]", "decoder_input, labels = tgt[:, :-1], tgt[:, :-1]",
           ("tests/test_train_command.py",)),
    Mutant("smoothed loss normalised per sentence, not per target token", "losses.py",
           "label_smoothing, pad_id) / translation_target_count(batch, pad_id)",
           "label_smoothing, pad_id) / batch[1].size(0)", ("tests/test_train_command.py",)),
    Mutant("Kneser-Ney back-off mass without the N3+ term", "ngram.py",
           "backoff = d[0] * n1 + d[1] * n2 + d[2] * n3", "backoff = d[0] * n1 + d[1] * n2", NGRAM_TESTS),
    Mutant("Kneser-Ney unseen context does not back off", "ngram.py",
           "backoff * probs) / total.clamp(min=1), probs)", "backoff * probs) / total.clamp(min=1), probs * 0)",
           NGRAM_TESTS),
    Mutant("Kneser-Ney lower levels count occurrences, not contexts", "ngram.py",
           'keys, counts = torch.unique(levels[0]["keys"] % self.vocab_size ** k, return_counts=True)',
           'keys = torch.unique(levels[0]["keys"] % self.vocab_size ** k)\n'
           '                counts = torch.ones_like(keys) * 2', NGRAM_TESTS),
    Mutant("GPT-2 Conv1D weights copied without the transpose", "interop.py",
           'return w.t().contiguous() if how == "t" else w.clone()', "return w.clone()", INTEROP_TESTS),
    Mutant("exercise checker blind to inputs changed in place", "exercises/asserts.py",
           "check_inputs_kept(before, {**dict(zip(labels, args)), **kwargs}, name, case.description)", "pass",
           EXERCISE_TESTS),
    Mutant("exercise checker lets the package's block do the work", "exercises/asserts.py",
           "forbids.\"\"\"\n    if guard.used:\n", "forbids.\"\"\"\n    if False:\n", EXERCISE_TESTS),
    Mutant("exercise checker blind to the dtype", "exercises/asserts.py",
           "if got.dtype != expected.dtype:", "if False:", EXERCISE_TESTS),
    Mutant("prompt tokens in the fine-tuning loss", "instruct.py",
           "mask[row, n_prompt:len(sequence)] = True", "mask[row, 1:len(sequence)] = True", INSTRUCT_TESTS),
    Mutant("DPO reference model updated with the policy", "instruct.py",
           "reference = frozen_copy(policy)", "reference = policy", INSTRUCT_TESTS),
    Mutant("DPO beta's sign flipped", "losses.py",
           "return -F.logsigmoid(beta * margin).sum()", "return -F.logsigmoid(-beta * margin).sum()", INSTRUCT_TESTS),
    Mutant("sequence log-probabilities summed over padding", "losses.py",
           "return (token_logps * mask).sum(dim=-1)", "return token_logps.sum(dim=-1)", INSTRUCT_TESTS),
    Mutant("DPO chosen and rejected rows swapped", "losses.py",
           "chosen, rejected = logps.chunk(2)", "rejected, chosen = logps.chunk(2)", INSTRUCT_TESTS),
)


class MutantSetupError(RuntimeError):
    """A mutant cannot be planted as declared, or the unmutated tests fail: the run proves nothing."""


def check_declarations(mutants: tuple[Mutant, ...], package_dir: Path) -> None:
    """Fail loudly unless every ``original`` occurs exactly once and every listed test file exists."""
    problems = []
    for mutant in mutants:
        path = package_dir / mutant.file
        count = path.read_text().count(mutant.original) if path.exists() else -1
        if count != 1:
            where = "file missing" if count < 0 else f"found {count} times, expected exactly once"
            problems.append(f"{mutant.name!r}: original text {mutant.original!r} in {PACKAGE}/{mutant.file}: {where}")
        problems += [f"{mutant.name!r}: test file {test} does not exist" for test in mutant.tests
                     if not (ROOT / test).exists()]
    if problems:
        raise MutantSetupError("cannot plant the mutants as declared — update tests/mutants.py to the new source:\n  "
                               + "\n  ".join(problems))


def copy_project(workdir: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        source, target = ROOT / name, workdir / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=ignore)
        else:
            shutil.copy2(source, target)


def run_pytest(workdir: Path, tests: tuple[str, ...], timeout: float) -> tuple[int | None, float, str]:
    """Run ``tests`` in ``workdir`` on the copied package; returns (exit code or None on timeout, seconds, output)."""
    env = {**os.environ, "PYTHONPATH": str(workdir), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", *PYTEST_ARGS, *tests], cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or b""
        return None, time.perf_counter() - start, output.decode() if isinstance(output, bytes) else output
    return done.returncode, time.perf_counter() - start, done.stdout + done.stderr


def check_copy_is_imported(workdir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(workdir)}
    done = subprocess.run([sys.executable, "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"], cwd=workdir,
                          env=env, capture_output=True, text=True, check=True)
    if not Path(done.stdout.strip()).resolve().is_relative_to(workdir.resolve()):
        raise MutantSetupError(f"the tests would import {done.stdout.strip()}, not the mutated copy in {workdir}")


def first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 1)[1].split(" - ")[0]
    return ""


def run_mutants(mutants: tuple[Mutant, ...], timeout: float) -> list[tuple[Mutant, str, float, str]]:
    """Plant each mutant in a fresh copy of its file and run its tests; returns (mutant, verdict, seconds, detail)."""
    check_declarations(mutants, ROOT / PACKAGE)
    results = []
    with tempfile.TemporaryDirectory(prefix="course-mutants-") as tmp:
        workdir = Path(tmp)
        copy_project(workdir)
        check_declarations(mutants, workdir / PACKAGE)  # again on the snapshot, in case a file changed meanwhile
        check_copy_is_imported(workdir)
        all_tests = tuple(sorted({test for mutant in mutants for test in mutant.tests}))
        code, seconds, output = run_pytest(workdir, all_tests, timeout * 3)
        if code != 0:
            raise MutantSetupError(f"the tests fail without any mutant (exit {code}, {seconds:.0f} s):\n"
                                   + output[-3000:])
        print(f"unmutated: {len(all_tests)} test files pass ({seconds:.0f} s)", flush=True)
        for mutant in mutants:
            path = workdir / PACKAGE / mutant.file
            pristine = path.read_text()  # the snapshot copied at the start, restored after each mutant
            path.write_text(pristine.replace(mutant.original, mutant.replacement))
            try:
                code, seconds, output = run_pytest(workdir, mutant.tests, timeout)
            finally:
                path.write_text(pristine)
            if code in (4, 5):  # usage error / no tests collected: the declaration is wrong, not the tests
                raise MutantSetupError(f"{mutant.name!r}: pytest exit {code}:\n{output[-2000:]}")
            verdict = "survived" if code == 0 else "killed"
            detail = "timeout" if code is None else first_failure(output)
            results.append((mutant, verdict, seconds, detail))
            print(f"{verdict:>8}  {seconds:5.1f} s  {mutant.name}  {detail}", flush=True)
    return results


def print_table(results: list[tuple[Mutant, str, float, str]]) -> None:
    print("\n| mutant | file | result | s | first failing test |\n|---|---|---|---|---|")
    for mutant, verdict, seconds, detail in results:
        print(f"| {mutant.name} | {mutant.file} | {verdict} | {seconds:.0f} | {detail} |")
    killed = sum(verdict == "killed" for _, verdict, _, _ in results)
    print(f"\n{killed} of {len(results)} mutants killed ({100 * killed / max(len(results), 1):.0f} %)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only the mutants with these names")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant's test run")
    args = parser.parse_args(argv)
    mutants = MUTANTS
    if args.only:
        unknown = set(args.only) - {m.name for m in MUTANTS}
        if unknown:
            parser.error(f"unknown mutant(s) {sorted(unknown)}; see --list")
        mutants = tuple(m for m in MUTANTS if m.name in args.only)
    if args.list:
        for m in mutants:
            print(f"{m.name}: {PACKAGE}/{m.file}: {m.original!r} → {m.replacement!r}; tests {', '.join(m.tests)}")
        return 0
    start = time.perf_counter()
    try:
        results = run_mutants(mutants, args.timeout)
    except MutantSetupError as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 2
    print_table(results)
    print(f"total {time.perf_counter() - start:.0f} s")
    return 0 if all(verdict == "killed" for _, verdict, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
