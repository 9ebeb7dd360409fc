"""Each lesson's training recipe as package code: data, model, loss and metric of lessons 05–08 and 11.

A :class:`Task` holds what training needs and nothing about *how* it is run (one process, ``torchrun``, GPU):

* ``train_batches`` — a list of ready batches (the sampler of :mod:`course_utils.train` picks from it);
* ``build_model()`` — a freshly initialised model of ``recipe``'s size;
* ``prepare(batch, generator)`` — the batch as the model sees it (lesson 06 draws its BERT mask here, from a
  generator the trainer seeds with the batch's position, so a rerun or a resumed run draws the same mask);
* ``target_count(batch)`` and ``loss_sum(model, batch)`` — a token-level loss is a *sum* over targets divided by
  the number of targets in the whole optimizer step (all micro-batches, all processes). Dividing each batch by
  its own count and averaging would weight a short batch's tokens more than a long batch's;
* ``evaluate(model)`` — the lesson's metric on its held-out set.

The losses themselves live in :mod:`course_utils.losses` (the same functions a notebook cell calls:
``loss = losses.translation_loss(model, (src_ids, tgt_ids))``).

The recipes (:class:`ClassifierRecipe`, :class:`MLMRecipe`, :class:`TranslatorRecipe`, :class:`GPTRecipe`, and
lesson 11's :class:`SFTRecipe` and :class:`DPORecipe`) are dataclasses with three presets each in
:data:`RECIPES`: ``"tiny"`` (seconds; for checks), ``"lesson"`` (the notebook's run) and ``"large"`` (the
notebooks' GPU cells).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import torch
import torch.nn as nn

from . import mlm
from .config import TransformerConfig
from .data.batching import length_bucketed_batches, trim_padding
from .decoding import greedy_decode, strip_after_eos
from .errors import CourseValueError
from .language_model import DecoderOnlyLM, ladder_rungs
from .losses import (
    classification_loss_sum,
    dpo_batch_loss_sum,
    lm_loss_sum,
    lm_target_count,
    masked_lm_loss_sum,
    response_logprobs,
    response_loss_sum,
    response_target_count,
    translation_loss,
    translation_loss_sum,
    translation_target_count,
)
from .models import MaskedLanguageModel, Seq2SeqTransformer, TransformerClassifier
from .tokenization import BOS_ID, EOS_ID, BPETokenizer, add_special_tokens
from .training import evaluate_lm, make_loader

SIZES = ("tiny", "lesson", "large")


# -------------------------------------------------------------------------------------------------- recipes
@dataclass
class Recipe:
    """A lesson's run: the model (a :class:`~course_utils.config.TransformerConfig` whose ``vocab_size`` is the
    tokenizer's target size; the built model gets the trained tokenizer's) and the optimisation settings (AdamW,
    warmup, schedule, clipping)."""

    model: TransformerConfig = field(default_factory=lambda: TransformerConfig(vocab_size=1000))
    epochs: int = 1
    lr: float = 1e-3
    warmup_steps: int = 0
    warmup_fraction: float = 0.0   # added to warmup_steps as a share of all steps (lesson 06 warms up 10 %)
    schedule: str = "cosine"
    clip_norm: float | None = 1.0
    weight_decay: float = 0.01

    def warmup_for(self, total_steps: int) -> int:
        return self.warmup_steps + int(self.warmup_fraction * total_steps)

    def model_config(self, vocab_size: int, tgt_vocab_size: int | None = None) -> TransformerConfig:
        """The recipe's model for tokenizers of ``vocab_size`` (and ``tgt_vocab_size``) ids."""
        return replace(self.model, vocab_size=vocab_size, tgt_vocab_size=tgt_vocab_size)


CLASSIFIER_MODEL = TransformerConfig(vocab_size=2000, d_model=64, n_heads=4, d_ff=256, n_layers=2, max_len=64,
                                     dropout=0.1, norm="post")
MLM_MODEL = TransformerConfig(vocab_size=500, d_model=96, n_heads=4, d_ff=192, n_layers=1, max_len=48, dropout=0.0,
                              activation="gelu", norm="pre", positional="sinusoidal")
TRANSLATOR_MODEL = TransformerConfig(vocab_size=320, d_model=128, n_heads=8, d_ff=256, n_layers=2, max_len=32,
                                     dropout=0.0)  # vocabulary sizes: the number tokenizers' (german_vocab_size)


@dataclass
class ClassifierRecipe(Recipe):
    """Lesson 05: language identification of Django's translated strings with a [CLS] classifier."""

    model: TransformerConfig = field(default_factory=lambda: CLASSIFIER_MODEL)
    epochs: int = 5
    lr: float = 3e-3
    warmup_steps: int = 30
    batch_size: int = 64
    eval_batch_size: int = 128
    pooling: str = "cls"
    max_train_strings: int | None = None   # keep only the first n training strings (a quick run)
    max_test_strings: int | None = None


@dataclass
class MLMRecipe(Recipe):
    """Lesson 06: BERT-style masked language modelling on Python-documentation prose."""

    model: TransformerConfig = field(default_factory=lambda: MLM_MODEL)
    epochs: int = 7
    lr: float = 3e-3
    warmup_fraction: float = 0.1
    batch_size: int = 32
    eval_batch_size: int = 256
    train_select_prob: float = 0.4
    max_sentences: int | None = None


@dataclass
class TranslatorRecipe(Recipe):
    """Lesson 07: English → German number words with the encoder–decoder.

    Measured in ``benchmarks/translator_stress.py``: at least 98 % exact match in every stress category, on the
    split's own held-out numbers and on a fresh draw with another seed, for training seeds 0–11 (lowest: 99.3 %).
    """

    model: TransformerConfig = field(default_factory=lambda: TRANSLATOR_MODEL)
    epochs: int = 1
    lr: float = 1e-3
    warmup_steps: int = 60
    n_train: int = 10_000          # numbers drawn by the training sampler (plus the vocabulary numbers)
    n_test: int = 2000             # the uniform test set that ``evaluate`` scores
    stress_per_category: int = 150
    max_digits: int = 6
    german_vocab_size: int = 320
    batch_size: int = 16
    label_smoothing: float = 0.1


GPT_MODEL = TransformerConfig(vocab_size=512, d_model=128, n_heads=4, d_ff=341, n_layers=2, max_len=64, dropout=0.0,
                              activation="swiglu", norm="pre", positional="rope")
"""The command's GPT (``python -m course_utils.train gpt``; lesson 11's base model, measured in
``benchmarks/gpt_recipe.py``): lesson 09's block — 2 Pre-LN blocks of width 128, RoPE and a SwiGLU feed-forward of
hidden size 341 (the parameters of a ReLU one of 512), no dropout — on lesson 08's task. Lesson 08 trains the same
width with its own block (learned positions, GELU) on the page."""


@dataclass
class GPTRecipe(Recipe):
    """Lesson 08: a decoder-only GPT predicting the next token of Python-documentation prose.

    The data is always lesson 08's split and tokenizer (``pydoc_lm_data(model.vocab_size, model.max_len,
    data_seed)``), the one the count models of ``benchmarks/lm_baselines.py`` are scored on; a run's ``seed``
    changes the initial weights and the batches only. Training is :func:`~course_utils.training.train_lm`'s:
    ``steps`` batches of ``batch_size`` sentences (:func:`~course_utils.data.lm_data.lm_training_batches`),
    AdamW, warmup then cosine decay to zero, clipping at 1.
    """

    model: TransformerConfig = field(default_factory=lambda: GPT_MODEL)
    steps: int = 1500
    lr: float = 6e-3
    warmup_steps: int = 50
    weight_decay: float = 0.3
    batch_size: int = 32
    eval_batch_size: int = 128
    data_seed: int = 0
    max_sentences: int | None = None   # keep only the first n training sentences (a quick run)

    def train_lm_options(self) -> dict:
        """The keyword arguments of :func:`~course_utils.training.train_lm` that this recipe sets."""
        return {"steps": self.steps, "batch_size": self.batch_size, "lr": self.lr,
                "warmup_steps": self.warmup_steps, "weight_decay": self.weight_decay}


@dataclass
class SFTRecipe(Recipe):
    """Lesson 11: supervised fine-tuning of the shipped base GPT (``checkpoints/gpt``, its vocabulary grown by the
    chat tokens) on the stdlib questions of the training modules, the loss on the response tokens only. ``model``
    is the base checkpoint's (model-field overrides do not apply); ``steps`` batches of ``batch_size`` examples."""

    model: TransformerConfig = field(default_factory=lambda: GPT_MODEL)
    steps: int = 120
    lr: float = 1e-3
    warmup_steps: int = 10
    weight_decay: float = 0.0
    batch_size: int = 32
    max_examples: int | None = None     # keep only the first n training examples (a quick run)
    max_test: int | None = None         # score only the first n test questions (a quick run)


@dataclass
class DPORecipe(SFTRecipe):
    """Lesson 11: DPO after ``sft_steps`` of :class:`SFTRecipe`'s fine-tuning, against a frozen copy of that
    model, on (question, right answer, another sentence of the module's documentation) triples; ``batch_size``
    triples per step."""

    sft_steps: int = 120
    sft_lr: float = 1e-3
    sft_batch_size: int = 32
    steps: int = 60
    lr: float = 3e-4
    batch_size: int = 16
    beta: float = 0.1


LADDER_MODEL = TransformerConfig(vocab_size=512, d_model=64, n_heads=4, d_ff=171, n_layers=2, max_len=64,
                                 dropout=0.0, activation="swiglu", norm="pre", positional="rope")
"""The rungs of lesson 08's ladder: :data:`GPT_MODEL` at half the width (SwiGLU hidden size 171 = 2/3 · 256)."""


@dataclass
class LadderRecipe:
    """Lesson 08's ladder (:func:`~course_utils.language_model.ladder_rungs`): every rung trained by
    :func:`~course_utils.training.train_lm` for the same ``steps`` on the same batches, each at its own peak
    learning rate (``lrs``, in rung order, chosen on the validation split: ``benchmarks/gpt_recipe.py
    --ladder-grid``). ``steps`` is where the neural bigram reaches its best validation perplexity (31.8, within 1 % of
    the count bigram's 31.5; trained longer, it fits rare pairs too closely and gets worse — a table of logits trained
    by AdamW needs a far higher rate than a Transformer)."""

    model: TransformerConfig = field(default_factory=lambda: LADDER_MODEL)
    more_layers: int = 2
    steps: int = 600
    batch_size: int = 32
    warmup_steps: int = 20
    weight_decay: float = 0.01
    lrs: tuple[float, ...] = (0.1, 1e-2, 1e-2, 1e-2, 3e-2, 1e-2)

    def rungs(self, vocab_size: int) -> dict:
        """``{name: builder}`` of :func:`~course_utils.language_model.ladder_rungs` for ``vocab_size`` ids."""
        return ladder_rungs(replace(self.model, vocab_size=vocab_size, tgt_vocab_size=None), self.more_layers)

    def learning_rates(self, vocab_size: int) -> dict[str, float]:
        """``{rung name: peak learning rate}``."""
        rungs = self.rungs(vocab_size)
        if len(self.lrs) != len(rungs):
            raise CourseValueError(f"lrs must hold one learning rate per rung ({len(rungs)}: {list(rungs)}), "
                                   f"got {len(self.lrs)}")
        return dict(zip(rungs, self.lrs))

    def train_lm_options(self, lr: float) -> dict:
        """The keyword arguments of :func:`~course_utils.training.train_lm` for a rung trained at ``lr``."""
        return {"steps": self.steps, "batch_size": self.batch_size, "lr": lr, "warmup_steps": self.warmup_steps,
                "weight_decay": self.weight_decay}


LADDER = LadderRecipe()


def sized(model: TransformerConfig, **changes) -> TransformerConfig:
    """``model`` with some sizes changed (the presets below)."""
    return replace(model, **changes)


RECIPES: dict[str, dict[str, Recipe]] = {
    "classifier": {
        "tiny": ClassifierRecipe(sized(CLASSIFIER_MODEL, vocab_size=300, d_model=16, d_ff=32, n_layers=1, n_heads=2),
                                 epochs=1, warmup_steps=2, batch_size=32, max_train_strings=256, max_test_strings=128),
        "lesson": ClassifierRecipe(),
        "large": ClassifierRecipe(sized(CLASSIFIER_MODEL, d_model=256, n_heads=8, d_ff=1024, n_layers=4), epochs=10,
                                  lr=1e-3),
    },
    "mlm": {
        "tiny": MLMRecipe(sized(MLM_MODEL, vocab_size=300, d_model=16, d_ff=32, n_layers=1, n_heads=2, max_len=24,
                                dropout=0.1), epochs=1, max_sentences=256),
        "lesson": MLMRecipe(),
        "large": MLMRecipe(sized(MLM_MODEL, d_model=256, n_heads=8, d_ff=1024, n_layers=4, dropout=0.1), epochs=20,
                           lr=1e-3),
    },
    "translator": {
        "tiny": TranslatorRecipe(sized(TRANSLATOR_MODEL, d_model=16, d_ff=32, n_layers=1, n_heads=2), n_train=68,
                                 n_test=24, stress_per_category=4, max_digits=3, german_vocab_size=280, batch_size=8,
                                 warmup_steps=2),
        "lesson": TranslatorRecipe(),
        "large": TranslatorRecipe(sized(TRANSLATOR_MODEL, d_model=256, n_heads=8, d_ff=1024, n_layers=4, dropout=0.1),
                                  batch_size=128, epochs=8, warmup_steps=100),
    },
    "gpt": {
        "tiny": GPTRecipe(sized(GPT_MODEL, vocab_size=300, d_model=16, d_ff=32, n_layers=1, n_heads=2, max_len=24),
                          steps=20, batch_size=8, warmup_steps=2, max_sentences=256),
        "lesson": GPTRecipe(),
        # for a GPU: the same blocks twice as wide and deep (not measured here: no GPU)
        "large": GPTRecipe(sized(GPT_MODEL, d_model=256, n_heads=8, d_ff=683, n_layers=4, dropout=0.1), steps=3000,
                           batch_size=64, lr=1e-3, warmup_steps=200, weight_decay=0.1),
    },
}
RECIPES["sft"] = {
    "tiny": SFTRecipe(steps=4, batch_size=4, warmup_steps=1, max_examples=32, max_test=16),
    "lesson": SFTRecipe(),
    "large": SFTRecipe(steps=600),
}
RECIPES["dpo"] = {
    "tiny": DPORecipe(sft_steps=4, sft_batch_size=4, steps=4, batch_size=4, warmup_steps=1, max_examples=32,
                      max_test=16),
    "lesson": DPORecipe(),
    "large": DPORecipe(sft_steps=600, steps=300),
}
TASK_NAMES = tuple(RECIPES)
MODEL_FIELDS = tuple(f.name for f in fields(TransformerConfig))


def recipe_for(task: str, size: str = "lesson", **overrides) -> Recipe:
    """A copy of the preset ``RECIPES[task][size]`` with ``overrides`` applied: a recipe field (``epochs=2``) or a
    model field (``d_model=128``, which changes ``recipe.model``)."""
    if task not in RECIPES:
        raise CourseValueError(f"unknown task {task!r}; choose one of {TASK_NAMES}")
    if size not in SIZES:
        raise CourseValueError(f"unknown size {size!r}; choose one of {SIZES}")
    recipe = RECIPES[task][size]
    known = set(vars(recipe)) | set(MODEL_FIELDS)
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise CourseValueError(f"{type(recipe).__name__} has no field(s) {unknown}; its fields are "
                               f"{sorted(vars(recipe))}, and its model's {sorted(MODEL_FIELDS)}")
    model_changes = {name: value for name, value in overrides.items() if name in MODEL_FIELDS}
    recipe_changes = {name: value for name, value in overrides.items() if name not in MODEL_FIELDS}
    return replace(recipe, model=replace(recipe.model, **model_changes), **recipe_changes)


# ---------------------------------------------------------------------------------------------------- tasks
@dataclass
class Task:
    """Data, model, loss and metric of one lesson; see the module docstring for the contract."""

    name: str
    recipe: Recipe
    model_config: TransformerConfig
    train_batches: list
    metric: str                         # the headline metric of ``evaluate`` (higher is better; a perplexity lower)
    extras: dict = field(default_factory=dict)   # tokenizers, held-out data: whatever a notebook wants to reuse
    shuffle_batches = True              # the trainer shuffles the batch order every epoch

    def epoch_batches(self, epoch: int) -> list:
        """The batch list of ``epoch`` (the same list every epoch unless a task reshuffles its rows)."""
        return self.train_batches

    def build_model(self) -> nn.Module:
        raise NotImplementedError

    def prepare(self, batch, generator: torch.Generator):
        """The batch as the model sees it; deterministic given ``generator``'s seed."""
        return batch

    def target_count(self, batch) -> int:
        raise NotImplementedError

    def loss_sum(self, model: nn.Module, batch) -> torch.Tensor:
        raise NotImplementedError

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        raise NotImplementedError

    def loss(self, model: nn.Module, batch) -> torch.Tensor:
        """Mean loss per target of one prepared batch (``loss_sum / target_count``)."""
        return self.loss_sum(model, batch) / self.target_count(batch)


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


class ClassifierTask(Task):
    def build_model(self) -> nn.Module:
        return TransformerClassifier(self.model_config, self.extras["n_classes"], pooling=self.recipe.pooling)

    def target_count(self, batch) -> int:
        return int(batch[1].numel())

    def loss_sum(self, model: nn.Module, batch) -> torch.Tensor:
        return classification_loss_sum(model, batch)

    @torch.no_grad()
    def evaluate(self, model: nn.Module) -> dict[str, float]:
        device = model_device(model)
        correct = total = 0
        for ids, labels in self.extras["test_batches"]:
            correct += int((model(ids.to(device)).argmax(-1).cpu() == labels).sum())
            total += labels.numel()
        return {"accuracy %": 100 * correct / total}


class MLMTask(Task):
    def build_model(self) -> nn.Module:
        return MaskedLanguageModel(self.model_config, tie_weights=True)

    def prepare(self, batch, generator: torch.Generator):
        return mlm.mask_tokens(batch, self.model_config.vocab_size, generator,
                               select_prob=self.recipe.train_select_prob)

    def target_count(self, batch) -> int:
        return int((batch[1] != mlm.IGNORE_INDEX).sum())

    def loss_sum(self, model: nn.Module, batch) -> torch.Tensor:
        return masked_lm_loss_sum(model, batch)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        held_out, vocab_size = self.extras["held_out_batches"], self.model_config.vocab_size
        metrics = mlm.evaluate_mlm(model, held_out, vocab_size, baseline=self.extras["unigram"])
        at_masks = mlm.evaluate_at_masks(model, held_out, vocab_size, {"bigram": self.extras["bigram"]})
        return {"accuracy %": 100 * metrics["accuracy"], "perplexity": metrics["perplexity"],
                "unigram accuracy %": 100 * metrics["unigram_accuracy"],
                "accuracy at [MASK] %": 100 * at_masks["model"]["mask_accuracy"],
                "one-sided bigram at [MASK] %": 100 * at_masks["bigram"]["mask_accuracy"]}


class TranslatorTask(Task):
    shuffle_batches = False  # the rows themselves are reshuffled every epoch, as lesson 07's make_loader does

    def epoch_batches(self, epoch: int) -> list:
        """Batches of ``recipe.batch_size`` rows in the order of epoch ``epoch``'s permutation.

        The permutations are those of a ``DataLoader(shuffle=True)`` with a generator seeded ``seed``
        (:func:`~course_utils.training.make_loader`): epoch ``e`` uses the generator's ``e``-th draw.
        """
        if epoch == 0 and self.train_batches:
            return self.train_batches
        return row_batches(self.extras["train_ids"], self.recipe.batch_size, self.extras["seed"], epoch)

    def build_model(self) -> nn.Module:
        return Seq2SeqTransformer(self.model_config)

    def target_count(self, batch) -> int:
        return translation_target_count(batch)

    def loss_sum(self, model: nn.Module, batch) -> torch.Tensor:
        return translation_loss_sum(model, batch, self.recipe.label_smoothing)

    @torch.no_grad()
    def exact_match(self, model: nn.Module, pairs: list) -> float:
        """Percentage of ``pairs`` (:class:`~course_utils.data.numbers.NumberPair`) whose greedy translation is
        exactly the German (lesson 07, section 7)."""
        from .data.numbers import encode_pairs

        src_ids, tgt_ids = encode_pairs(pairs, self.extras["source_tokenizer"], self.extras["target_tokenizer"])
        longest = min(tgt_ids.size(1) + 4, self.model_config.max_len)  # the longest reference, some slack
        generated = greedy_decode(model, src_ids.to(model_device(model)), BOS_ID, EOS_ID, longest).cpu()
        target = self.extras["target_tokenizer"]
        hypotheses = [target.decode(ids) for ids in strip_after_eos(generated, EOS_ID)]
        return 100 * sum(h == pair.german for h, pair in zip(hypotheses, pairs)) / len(pairs)

    @torch.no_grad()
    def evaluate(self, model: nn.Module) -> dict[str, float | str]:
        """Exact match and loss on the uniform test set, and the stress category with the lowest exact match."""
        device = model_device(model)
        test_src, test_tgt = (t.to(device) for t in self.extras["test_ids"])
        test_loss = translation_loss(model, (test_src, test_tgt), label_smoothing=0.0).item()
        split = self.extras["split"]
        stress = {name: self.exact_match(model, pairs) for name, pairs in split.stress.items()}
        lowest = min(stress, key=stress.get)
        return {"exact match %": self.exact_match(model, split.test), "test loss": test_loss,
                "lowest stress category": lowest, "its exact match %": stress[lowest]}


class GPTTask(Task):
    shuffle_batches = False  # train_batches are train_lm's: one per step, already regrouped and shuffled per epoch

    def build_model(self) -> nn.Module:
        return DecoderOnlyLM(self.model_config)

    def target_count(self, batch) -> int:
        return lm_target_count(batch)

    def loss_sum(self, model: nn.Module, batch) -> torch.Tensor:
        return lm_loss_sum(model, batch)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Perplexity on lesson 08's validation and test sentences: every token after [BOS], [EOS] included —
        the positions :func:`course_utils.ngram.perplexity` scores."""
        return {f"{split} perplexity": evaluate_lm(model, self.extras[f"{split}_batches"])["perplexity"]
                for split in ("validation", "test")}


class SFTTask(Task):
    shuffle_batches = False  # one batch per step, already drawn in order (instruct.batch_draws)

    def build_model(self) -> nn.Module:
        from .instruct import grow_vocabulary, load_base_gpt

        return grow_vocabulary(load_base_gpt()[0], 2).train()

    def target_count(self, batch) -> int:
        return response_target_count(batch)

    def loss_sum(self, model: nn.Module, batch) -> torch.Tensor:
        return response_loss_sum(model, batch)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out multiple choice (lesson 11): the right summary among 3 other sentences of the module's
        documentation ("form") and among 3 other functions' summaries ("knowledge"); chance 25 %."""
        from .data.stdlib_qa import choice_items
        from .instruct import choice_accuracy

        data, tokenizer = self.extras["data"], self.extras["tokenizer"]
        test = data.test[:self.recipe.max_test]
        model = model.cpu()
        return {"form choice accuracy %": 100 * choice_accuracy(model, tokenizer, choice_items(test, data.prose)),
                "knowledge choice accuracy %": 100 * choice_accuracy(model, tokenizer,
                                                                     choice_items(test, data.siblings))}


class DPOTask(SFTTask):
    def build_model(self) -> nn.Module:
        model = super().build_model()
        model.load_state_dict(self.extras["sft_state"])
        return model.train()

    def prepare(self, batch, generator: torch.Generator):
        """``(ids, response_mask)`` → ``(ids, response_mask, reference_logprobs)``: the frozen reference scores
        the rows once, here; it is never handed to the optimizer."""
        with torch.no_grad():
            return (*batch, response_logprobs(self.extras["reference"], batch))

    def target_count(self, batch) -> int:
        return batch[0].size(0) // 2   # pairs: chosen rows, then rejected rows

    def loss_sum(self, model: nn.Module, batch) -> torch.Tensor:
        return dpo_batch_loss_sum(model, batch, self.recipe.beta)

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Held-out preference accuracy, implicit reward margin and per-token KL from the reference (lesson 11)."""
        from .data.stdlib_qa import preference_pairs
        from .instruct import preference_metrics

        data, tokenizer = self.extras["data"], self.extras["tokenizer"]
        pairs = preference_pairs(data.test[:self.recipe.max_test], data.prose, seed=1)
        metrics = preference_metrics(model.cpu(), self.extras["reference"], tokenizer, pairs, self.recipe.beta)
        return {"preference accuracy %": 100 * metrics["accuracy"], "reward margin": metrics["margin"],
                "KL per token": metrics["kl"], **super().evaluate(model)}


def row_batches(tensors: tuple[torch.Tensor, ...], batch_size: int, seed: int,
                epoch: int = 0) -> list[tuple[torch.Tensor, ...]]:
    """The batches that lesson 07's ``make_loader(*tensors, batch_size=batch_size, seed=seed)`` yields in epoch
    ``epoch`` (a seeded ``DataLoader`` that reshuffles the rows every epoch), padding-only columns trimmed."""
    loader = make_loader(*tensors, batch_size=batch_size, seed=seed)
    for _ in range(epoch):
        for _ in loader:  # earlier epochs advance the loader's generator
            pass
    return [tuple(trim_padding(t) for t in batch) for batch in loader]


def build_classifier_task(recipe: ClassifierRecipe, seed: int = 0) -> ClassifierTask:
    """Lesson 05's data: BPE over the training strings, [CLS] + ids, batches of strings of similar length."""
    from .data.language_id import load_language_id

    data = load_language_id(seed=seed)
    train_texts = data.train_texts[:recipe.max_train_strings]
    train_labels = data.train_labels[:recipe.max_train_strings]
    test_texts, test_labels = data.test_texts[:recipe.max_test_strings], data.test_labels[:recipe.max_test_strings]
    tokenizer = BPETokenizer.train(train_texts, vocab_size=recipe.model.vocab_size)

    def bucketed(texts, labels, batch_size):
        encoded = [tokenizer.encode(text) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        return [(tokenizer.encode_batch([texts[i] for i in order[s:s + batch_size]], add_cls=True,
                                        max_len=recipe.model.max_len),
                 torch.tensor([labels[i] for i in order[s:s + batch_size]]))
                for s in range(0, len(order), batch_size)]

    config = recipe.model_config(tokenizer.vocab_size)
    return ClassifierTask("classifier", recipe, config, bucketed(train_texts, train_labels, recipe.batch_size),
                          "accuracy %", {"n_classes": len(data.languages), "tokenizer": tokenizer, "data": data,
                                         "test_batches": bucketed(test_texts, test_labels, recipe.eval_batch_size)})


def build_mlm_task(recipe: MLMRecipe, seed: int = 0) -> MLMTask:
    """Lesson 06's data: BPE over the training sentences, ``[CLS] ids [SEP]``, batches by length."""
    from .data.pydoc_corpus import load_pydoc_corpus

    corpus = load_pydoc_corpus()
    if recipe.max_sentences is not None:
        corpus = corpus.sample(recipe.max_sentences, seed=seed)
    train_corpus, held_out_corpus = corpus.split(held_out_fraction=0.1, seed=seed)
    tokenizer = BPETokenizer.train(train_corpus.sentences, vocab_size=recipe.model.vocab_size)

    def encode(sentences):
        return [add_special_tokens(tokenizer.encode(s), add_cls=True, add_sep=True, max_len=recipe.model.max_len)
                for s in sentences]

    train_ids = encode(train_corpus.sentences)
    config = recipe.model_config(tokenizer.vocab_size)
    return MLMTask("mlm", recipe, config, length_bucketed_batches(train_ids, recipe.batch_size, shuffle=False),
                   "accuracy %", {"tokenizer": tokenizer, "unigram": mlm.UnigramBaseline(train_ids, config.vocab_size),
                                  "bigram": mlm.NeighbourCountBaseline(train_ids, config.vocab_size, use_right=False),
                                  "held_out_batches": length_bucketed_batches(encode(held_out_corpus.sentences),
                                                                            recipe.eval_batch_size, shuffle=False)})


def build_translator_task(recipe: TranslatorRecipe, seed: int = 0) -> TranslatorTask:
    """Lesson 07's data, through the public functions of :mod:`course_utils.data.numbers`."""
    from .data.numbers import encode_pairs, make_number_split, train_tokenizers

    split = make_number_split(n_train=recipe.n_train, n_test=recipe.n_test,
                              stress_per_category=recipe.stress_per_category, max_digits=recipe.max_digits, seed=seed)
    source, target = train_tokenizers(split.train, german_vocab_size=recipe.german_vocab_size, seed=seed)
    train_ids = encode_pairs(split.train, source, target)
    config = recipe.model_config(source.vocab_size, target.vocab_size)
    return TranslatorTask("translator", recipe, config, row_batches(train_ids, recipe.batch_size, seed),
                          "exact match %", {"split": split, "source_tokenizer": source, "target_tokenizer": target,
                                            "train_ids": train_ids, "seed": seed,
                                            "test_ids": encode_pairs(split.test, source, target)})


def build_gpt_task(recipe: GPTRecipe, seed: int = 0) -> GPTTask:
    """Lesson 08's data (:func:`~course_utils.data.lm_data.pydoc_lm_data` with ``recipe.data_seed``) and the batches
    :func:`~course_utils.training.train_lm` would train on with ``seed``: one per step, so the command
    (``python -m course_utils.train gpt``) runs ``recipe.steps`` steps in train_lm's order."""
    from .data.lm_data import lm_batches, lm_training_batches, pydoc_lm_data

    data = pydoc_lm_data(recipe.model.vocab_size, recipe.model.max_len, seed=recipe.data_seed)
    config = recipe.model_config(data.tokenizer.vocab_size)
    batches = lm_training_batches(data.train[:recipe.max_sentences], recipe.steps, recipe.batch_size, seed=seed)
    return GPTTask("gpt", recipe, config, batches, "test perplexity",
                   {"data": data, "tokenizer": data.tokenizer,
                    "validation_batches": lm_batches(data.validation, recipe.eval_batch_size, shuffle=False),
                    "test_batches": lm_batches(data.test, recipe.eval_batch_size, shuffle=False)})


def instruct_setup(recipe: SFTRecipe):
    """The chat tokenizer and lesson 11's data (:func:`~course_utils.instruct.load_instruct_data`)."""
    from .instruct import ChatTokenizer, load_base_gpt, load_instruct_data

    base, base_tokenizer, _ = load_base_gpt()
    tokenizer = ChatTokenizer(base_tokenizer)
    return tokenizer, load_instruct_data(tokenizer, base.config.max_len)


def build_sft_task(recipe: SFTRecipe, seed: int = 0) -> SFTTask:
    """Lesson 11's fine-tuning: ``recipe.steps`` batches of training examples in the chat template, drawn with
    ``seed`` (:func:`~course_utils.instruct.batch_draws`)."""
    from .instruct import batch_draws, chat_batch

    tokenizer, data = instruct_setup(recipe)
    examples = data.examples()[:recipe.max_examples]
    batches = [chat_batch(tokenizer, [examples[i] for i in rows])
               for rows in batch_draws(len(examples), recipe.steps, recipe.batch_size, seed)]
    config = replace(recipe.model, vocab_size=tokenizer.vocab_size)
    return SFTTask("sft", recipe, config, batches, "form choice accuracy %", {"data": data, "tokenizer": tokenizer})


def build_dpo_task(recipe: DPORecipe, seed: int = 0) -> DPOTask:
    """Lesson 11's preference stage: the SFT model (``recipe.sft_steps`` of :func:`~course_utils.instruct.train_sft`
    with ``seed``) and its frozen copy, ``recipe.steps`` batches of preference triples (chosen rows, then rejected)."""
    from .data.stdlib_qa import preference_pairs
    from .instruct import batch_draws, frozen_copy, grow_vocabulary, load_base_gpt, preference_batch, train_sft

    tokenizer, data = instruct_setup(recipe)
    examples = data.examples()[:recipe.max_examples]
    sft_model = grow_vocabulary(load_base_gpt()[0], 2)
    train_sft(sft_model, tokenizer, examples, recipe.sft_steps, recipe.sft_batch_size, recipe.sft_lr, seed=seed)
    triples = preference_pairs(data.train[:recipe.max_examples], data.prose, seed=seed)
    batches = [preference_batch(tokenizer, [triples[i] for i in rows])
               for rows in batch_draws(len(triples), recipe.steps, recipe.batch_size, seed)]
    config = replace(recipe.model, vocab_size=tokenizer.vocab_size)
    return DPOTask("dpo", recipe, config, batches, "preference accuracy %",
                   {"data": data, "tokenizer": tokenizer, "sft_state": sft_model.state_dict(),
                    "reference": frozen_copy(sft_model)})


BUILDERS = {"classifier": build_classifier_task, "mlm": build_mlm_task, "translator": build_translator_task,
            "gpt": build_gpt_task, "sft": build_sft_task, "dpo": build_dpo_task}


def build_task(name: str, size: str = "lesson", seed: int = 0, **overrides) -> Task:
    """The task ``name`` (one of :data:`TASK_NAMES`) with the preset recipe ``size`` and ``overrides``."""
    recipe = recipe_for(name, size, **overrides)
    return BUILDERS[name](recipe, seed=seed)

