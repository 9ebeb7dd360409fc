"""Exercises of notebook 05 (a classifier): the token-99 base rate, masked mean pooling, a confusion matrix."""
from __future__ import annotations

import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from .asserts import own_function
from .core import Exercise, ExerciseFailure

PRESENCE_CASES = ((1000, 32), (993, 32), (10, 20), (50, 400))  # the last two: expected count > probability range


def check_p_token_present(ns) -> None:
    function = ns["p_token_present"]
    for vocab_size, seq_len in PRESENCE_CASES:
        got = function(vocab_size, seq_len)
        if isinstance(got, torch.Tensor):
            got = got.item()
        if not isinstance(got, (int, float)):
            raise ExerciseFailure(f"return a number (a probability), got {type(got).__name__}.")
        expected = 1 - (1 - 1 / vocab_size) ** seq_len
        if math.isclose(got, expected, rel_tol=1e-6):
            continue
        if math.isclose(got, seq_len / vocab_size, rel_tol=1e-6):
            raise ExerciseFailure(f"seq_len / vocab_size is the *expected number* of occurrences, not the "
                                  f"probability of at least one; for vocab {vocab_size}, length {seq_len} it is "
                                  f"{got:.3g}{' — more than 1!' if got > 1 else ''}. Use the complement: "
                                  "1 − P(no position holds the token).")
        if math.isclose(got, (1 - 1 / vocab_size) ** seq_len, rel_tol=1e-6):
            raise ExerciseFailure("that is the probability that the token is *absent*; the question asks for "
                                  "present: 1 − that.")
        if math.isclose(got, (1 / vocab_size) ** seq_len, rel_tol=1e-6) or math.isclose(got, 1 / vocab_size):
            raise ExerciseFailure("that is the chance of the token at every position (or at one given position). "
                                  "Present at least once = 1 − (1 − 1/vocab_size) ** seq_len.")
        raise ExerciseFailure(f"for vocab {vocab_size}, length {seq_len} expected {expected:.4f}, got {got:.4f}.")


def example_hidden_and_ids() -> tuple[torch.Tensor, torch.Tensor]:
    """hidden ``(3, 5, 4)`` with large values at padding positions; ids ``(3, 5)`` with 0, 2 and 4 pads."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.tensor([[2, 11, 12, 13, 14], [2, 21, 22, 0, 0], [2, 31, 0, 0, 0]])
    hidden = torch.randn(3, 5, 4, generator=generator)
    hidden[ids == 0] = 100.0
    return hidden, ids


def package_mean_pool(hidden: torch.Tensor, ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The package classifier's mean pooling (``TransformerClassifier(pooling="mean")``) on given vectors."""
    from ..config import TransformerConfig
    from ..models import TransformerClassifier

    config = TransformerConfig(vocab_size=int(ids.max()) + 1, d_model=hidden.size(-1), n_heads=1, d_ff=4,
                               n_layers=1, max_len=ids.size(1), pad_id=pad_id)
    classifier = TransformerClassifier(config, n_classes=hidden.size(-1), pooling="mean")
    with torch.no_grad():  # an identity head and an encoder that returns the given vectors: only pooling is left
        classifier.head.weight.copy_(torch.eye(hidden.size(-1)))
        classifier.head.bias.zero_()
        classifier.text_encoder.forward = lambda ids, mask_padding=True: hidden
        return classifier(ids)


def check_masked_mean_pool(ns) -> None:
    hidden, ids = example_hidden_and_ids()
    check_pool_once(ns["masked_mean_pool"], hidden, ids, 0)
    # pad_id = 1: now 0 is an ordinary token id and 1 marks padding
    relabelled = torch.where(ids == 0, torch.ones_like(ids), torch.where(ids == 11, torch.zeros_like(ids), ids))
    check_pool_once(ns["masked_mean_pool"], hidden, relabelled, 1)


def check_pool_once(pool, hidden, ids, pad_id: int) -> None:
    got = pool(hidden, ids, pad_id=pad_id)
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return a tensor, got {type(got).__name__}.")
    if got.shape != (3, 4):
        raise ExerciseFailure(f"pooling turns (batch, seq, d_model) = {tuple(hidden.shape)} into (batch, d_model) = "
                              f"(3, 4), got {tuple(got.shape)}.")
    expected = package_mean_pool(hidden, ids, pad_id)
    if torch.allclose(got, expected, atol=1e-5):
        return
    if pad_id != 0:
        zero_is_pad = (ids != 0).float()
        if torch.allclose(got, (hidden * zero_is_pad[..., None]).sum(1) / zero_is_pad.sum(1, keepdim=True)
                          .clamp(min=1), atol=1e-5):
            raise ExerciseFailure("with pad_id=1 you still treated id 0 as padding: use the pad_id argument, "
                                  "real = (ids != pad_id), never a hard-coded 0.")
    real = (ids != pad_id).float()
    if torch.allclose(got, hidden.mean(1), atol=1e-5):
        raise ExerciseFailure("a plain mean over the sequence averages the padding vectors in too (row 2 is "
                              "mostly padding). Weight by the mask (ids != pad_id) and divide by the number of "
                              "real tokens.")
    if torch.allclose(got, (hidden * real[..., None]).sum(1) / ids.size(1), atol=1e-5):
        raise ExerciseFailure("padding is zeroed, but you divided by the full length; divide by the number of "
                              "real tokens in each row, real.sum(1, keepdim=True).")
    if torch.allclose(got, hidden[:, 0], atol=1e-5):
        raise ExerciseFailure("that is [CLS] pooling (position 0); this exercise asks for the mean of the real "
                              "tokens.")
    no_cls = real.clone()
    no_cls[:, 0] = 0
    if torch.allclose(got, (hidden * no_cls[..., None]).sum(1) / no_cls.sum(1, keepdim=True), atol=1e-5):
        raise ExerciseFailure("you left out position 0 ([CLS]); it is a real token, and the package's mean pooling "
                              "averages every non-padding position, [CLS] counts too.")
    pads = 1 - real
    if torch.allclose(got, (hidden * pads[..., None]).sum(1) / pads.sum(1, keepdim=True).clamp(min=1), atol=1e-5):
        raise ExerciseFailure("you averaged the padding and skipped the real tokens: real tokens are ids != pad_id.")
    raise ExerciseFailure(f"differs from the masked mean by up to {(got - expected).abs().max():.3g}: "
                          "(hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True), real = (ids != pad_id).")


def example_predictions() -> tuple[torch.Tensor, torch.Tensor]:
    labels = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 0])
    predictions = torch.tensor([0, 1, 0, 1, 2, 2, 2, 0, 2, 2])
    return predictions, labels


def check_confusion_matrix(ns) -> None:
    predictions, labels = example_predictions()
    got = ns["confusion_matrix"](predictions, labels, 3)
    if not isinstance(got, torch.Tensor):
        raise ExerciseFailure(f"return a tensor, got {type(got).__name__}.")
    expected = torch.zeros(3, 3, dtype=torch.long)
    for true, predicted in zip(labels, predictions):
        expected[true, predicted] += 1
    if got.shape != (3, 3):
        raise ExerciseFailure(f"the matrix is (n_classes, n_classes) = (3, 3), got {tuple(got.shape)}.")
    if got.dtype.is_floating_point and not torch.equal(got, got.round()):
        if torch.allclose(got, expected / expected.sum(1, keepdim=True)) or torch.allclose(got, expected / 10):
            raise ExerciseFailure("return counts (integers); normalise later, when you plot or report rates.")
    if torch.equal(got.long(), expected):
        return
    if torch.equal(got.long(), expected.T):
        raise ExerciseFailure("rows and columns are swapped: row = true class, column = predicted class, so "
                              "matrix[true, predicted] += 1.")
    if int(got.sum()) != len(labels):
        raise ExerciseFailure(f"the entries should add up to the number of examples ({len(labels)}), got "
                              f"{int(got.sum())}.")
    raise ExerciseFailure(f"expected\n{expected}\ngot\n{got}")


q1 = Exercise(
    name="How often does token 99 occur?",
    variables=("p_token_present",),
    checker=check_p_token_present,
    hint="Each position misses token 99 with probability 1 − 1/vocab_size, independently.",
    solution="def p_token_present(vocab_size, seq_len):\n    return 1 - (1 - 1 / vocab_size) ** seq_len\n",
)

q2 = Exercise(
    name="Masked mean pooling",
    variables=("masked_mean_pool",),
    checker=check_masked_mean_pool,
    hint="real = (ids != pad_id).float() has shape (batch, seq); multiply hidden by real[..., None], sum over "
         "dim 1, divide by real.sum(1, keepdim=True).",
    solution=(
        "def masked_mean_pool(hidden, ids, pad_id=0):\n"
        "    real = (ids != pad_id).to(hidden.dtype)                  # (batch, seq)\n"
        "    return (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True).clamp(min=1)\n"
    ),
)

q3 = Exercise(
    name="A confusion matrix",
    variables=("confusion_matrix",),
    checker=check_confusion_matrix,
    hint="Start from torch.zeros(n_classes, n_classes, dtype=torch.long); for each example add 1 at "
         "[true, predicted]. (One line: torch.bincount(labels * n_classes + predictions, minlength=n_classes**2).)",
    solution=(
        "import torch\n\n"
        "def confusion_matrix(predictions, labels, n_classes):\n"
        "    flat = torch.bincount(labels * n_classes + predictions, minlength=n_classes * n_classes)\n"
        "    return flat.reshape(n_classes, n_classes)               # row = true class, column = predicted\n"
    ),
)


# ---------------------------------------------------------------------------- q4 (capstone): train_one_epoch
N_STEPS, CLIP_NORM, PEAK_LR, WARMUP = 5, 0.1, 1e-2, 2


def example_training_run(seed: int = 0):
    """A tiny classifier (dropout 0), ``N_STEPS`` batches ``(ids (4, 9), labels (4,))`` with padding, a loss."""
    from ..config import TransformerConfig
    from ..models import TransformerClassifier

    torch.manual_seed(seed)
    config = TransformerConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=24, n_layers=1, max_len=12, dropout=0.0)
    model = TransformerClassifier(config, n_classes=3)
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(N_STEPS):
        ids = torch.randint(7, 30, (4, 9), generator=generator)
        ids[1, 6:], ids[3, 4:] = 0, 0
        batches.append((ids, torch.randint(0, 3, (4,), generator=generator)))
    return model, batches


class _BackwardProbe(torch.autograd.Function):
    """Identity on the loss; its backward runs first and records whether old gradients are still there."""

    @staticmethod
    def forward(ctx, loss, record):
        ctx.record = record
        return loss.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.record()
        return grad, None


class TrainingRecorder:
    """Wraps a model's optimizer, scheduler and loss to record what a training loop did, step by step."""

    def __init__(self, model: nn.Module) -> None:
        from ..training import make_optimizer, make_scheduler

        self.model = model
        self.parameters = list(model.parameters())
        self.optimizer = make_optimizer(model, lr=PEAK_LR)
        self.scheduler = make_scheduler(self.optimizer, WARMUP, N_STEPS, "cosine")
        self.events: list[str] = []
        self.training_flags: list[bool] = []
        self.stale_gradients: list[bool] = []
        self.learning_rates: list[float] = []
        self.gradient_norms: list[float] = []
        self.snapshots: list[list[torch.Tensor]] = []
        self.optimizer.register_step_pre_hook(self._before_step)
        self.optimizer.register_step_post_hook(self._after_step)
        scheduler_step = self.scheduler.step

        def counted_step(*args, **kwargs):
            self.events.append("schedule")
            return scheduler_step(*args, **kwargs)
        self.scheduler.step = counted_step

    def loss_fn(self, model, batch):
        ids, labels = batch
        self.events.append("loss")
        self.training_flags.append(model.training)
        loss = F.cross_entropy(model(ids), labels)
        return _BackwardProbe.apply(loss, self._at_backward)

    def _at_backward(self) -> None:
        self.stale_gradients.append(any(p.grad is not None and bool(p.grad.abs().sum() > 0)
                                        for p in self.parameters))

    def _before_step(self, optimizer, args, kwargs) -> None:
        self.events.append("step")
        self.learning_rates.append(optimizer.param_groups[0]["lr"])
        grads = [p.grad for p in self.parameters if p.grad is not None]
        self.gradient_norms.append(float(torch.linalg.vector_norm(torch.stack(
            [torch.linalg.vector_norm(g) for g in grads]))) if grads else 0.0)

    def _after_step(self, optimizer, args, kwargs) -> None:
        self.snapshots.append([p.detach().clone() for p in self.parameters])


def check_train_one_epoch(ns) -> None:
    import copy

    from ..training import train_one_epoch as package_loop

    learner_loop = own_function(ns["train_one_epoch"], "train_one_epoch", "course_utils.training.train_one_epoch")
    model, batches = example_training_run()
    reference, learner = TrainingRecorder(copy.deepcopy(model)), TrainingRecorder(copy.deepcopy(model))
    expected_losses = package_loop(reference.model, batches, reference.loss_fn, reference.optimizer,
                                   reference.scheduler, CLIP_NORM)
    learner.model.eval()  # a loop must switch the model to training mode itself
    with warnings.catch_warnings():  # PyTorch's own warnings about step order: the feedback below names them
        warnings.simplefilter("ignore")
        losses = learner_loop(learner.model, batches, learner.loss_fn, learner.optimizer, learner.scheduler,
                              CLIP_NORM)
    n_losses, n_steps = learner.events.count("loss"), learner.events.count("step")
    if n_losses != N_STEPS:
        raise ExerciseFailure(f"loss_fn was called {n_losses} times for {N_STEPS} batches: call "
                              "loss_fn(model, batch) once for every batch.")
    if not all(learner.training_flags):
        raise ExerciseFailure("the model was in eval mode while you trained it (the checker hands it over in eval "
                              "mode, as after an evaluation): call model.train() at the start of the epoch.")
    if n_steps == 0:
        raise ExerciseFailure("optimizer.step() is never called, so the parameters never change: after "
                              "loss.backward() (and clipping), call optimizer.step().")
    if n_steps != N_STEPS:
        raise ExerciseFailure(f"optimizer.step() ran {n_steps} times for {N_STEPS} batches: once per batch.")
    if any(learner.stale_gradients):
        step = learner.stale_gradients.index(True)
        raise ExerciseFailure(f"at step {step} loss.backward() added to the gradients left from the previous step: "
                              "zero_grad is forgotten, so gradients accumulate across batches. Call "
                              "optimizer.zero_grad() before loss.backward() in every iteration.")
    if len(learner.stale_gradients) != N_STEPS or any(norm == 0.0 for norm in learner.gradient_norms):
        raise ExerciseFailure("optimizer.step() found no gradients: call loss.backward() before it, and "
                              "optimizer.zero_grad() before backward — not between backward and step.")
    if max(learner.gradient_norms) > CLIP_NORM * 1.001:
        raise ExerciseFailure(f"the gradients reach optimizer.step() with a norm up to "
                              f"{max(learner.gradient_norms):.3g} > clip_norm = {CLIP_NORM}: clip between "
                              "backward and step, torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm).")
    schedule_steps = learner.events.count("schedule")
    if schedule_steps == 0:
        raise ExerciseFailure("scheduler.step() is never called: the learning rate stays at its first warmup value. "
                              "Call it after every optimizer.step().")
    if schedule_steps < N_STEPS:
        raise ExerciseFailure(f"scheduler.step() ran {schedule_steps} time(s) in an epoch of {N_STEPS} steps — "
                              "stepped per epoch instead of per step: the warmup and decay are defined in optimizer "
                              "steps, so call scheduler.step() right after every optimizer.step().")
    if learner.learning_rates != reference.learning_rates:
        if learner.learning_rates == reference.learning_rates[1:] + learner.learning_rates[-1:]:
            raise ExerciseFailure("scheduler.step() runs before optimizer.step(), so every step uses the next "
                                  "step's learning rate (the first warmup value is skipped): step the optimizer "
                                  "first, then the scheduler.")
        raise ExerciseFailure(f"the learning rates of your steps are {[f'{lr:.2g}' for lr in learner.learning_rates]}"
                              f", the package's {[f'{lr:.2g}' for lr in reference.learning_rates]}: one "
                              "scheduler.step() after each optimizer.step().")
    for step, (got, expected) in enumerate(zip(learner.snapshots, reference.snapshots)):
        error = max(float((g - e).abs().max()) for g, e in zip(got, expected))
        if error > 1e-5:
            raise ExerciseFailure(f"after step {step} your parameters differ from the package's loop by up to "
                                  f"{error:.3g}: per batch, zero_grad → loss → backward → clip → optimizer.step → "
                                  "scheduler.step.")
    if not isinstance(losses, list) or len(losses) != N_STEPS:
        raise ExerciseFailure(f"return the list of the {N_STEPS} per-step losses, got {type(losses).__name__}"
                              f"{'' if not hasattr(losses, '__len__') else f' of length {len(losses)}'}.")
    if not all(isinstance(loss, float) for loss in losses):
        raise ExerciseFailure("return the losses as Python floats (loss.item()): a list of loss tensors keeps every "
                              "step's graph alive in memory.")
    if not all(math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6) for a, b in zip(losses, expected_losses)):
        raise ExerciseFailure(f"your returned losses {[round(v, 4) for v in losses]} are not the per-step losses "
                              f"{[round(v, 4) for v in expected_losses]}: append loss.item() once per batch.")


q4 = Exercise(
    name="Capstone: your own training loop",
    variables=("train_one_epoch",),
    checker=check_train_one_epoch,
    hint="model.train(); then for every batch: optimizer.zero_grad(); loss = loss_fn(model, batch); "
         "loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm); optimizer.step(); "
         "scheduler.step(); keep loss.item(). Stuck? `from course_utils.training import train_one_epoch` to move on.",
    solution=(
        "import torch\n"
        "\n"
        "\n"
        "def train_one_epoch(model, batches, loss_fn, optimizer, scheduler, clip_norm=1.0):\n"
        "    model.train()\n"
        "    losses = []\n"
        "    for batch in batches:\n"
        "        optimizer.zero_grad()\n"
        "        loss = loss_fn(model, batch)\n"
        "        loss.backward()\n"
        "        if clip_norm is not None:\n"
        "            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)\n"
        "        optimizer.step()\n"
        "        scheduler.step()          # once per optimizer step: warmup and decay count steps\n"
        "        losses.append(loss.item())\n"
        "    return losses\n"
    ),
    success="Correct! Step for step, your parameters and learning rates match the package's loop.",
    task=(
        "**Capstone — your own training loop.** Write `train_one_epoch(model, batches, loss_fn, optimizer, "
        "scheduler, clip_norm=1.0)`: one pass over `batches` that returns the list of per-step losses as floats. "
        "For every batch: clear the old gradients, compute `loss = loss_fn(model, batch)`, backpropagate, clip the "
        "global gradient norm to `clip_norm`, step the optimizer, then step the learning-rate schedule (it counts "
        "optimizer steps). The model may come in eval mode (after an evaluation): put it in training mode first.\n\n"
        "How it is checked: a tiny classifier with dropout 0 is trained for 5 steps twice from the same weights — "
        "by your loop and by `course_utils.training.train_one_epoch` — with AdamW and a warmup + cosine schedule "
        "built by `make_optimizer` and `make_scheduler` (the ones `fit` uses), `clip_norm=0.1`. After every step "
        "the parameters, the learning rate and the gradients that reached the optimizer must agree. "
        "`q4.hint()` and `q4.solution()` help; stuck? `from course_utils.training import train_one_epoch` and "
        "move on."
    ),
    starter=(
        "def train_one_epoch(model, batches, loss_fn, optimizer, scheduler, clip_norm=1.0):\n"
        "    # model.train(); per batch: zero_grad, loss, backward, clip, optimizer step, scheduler step\n"
        "    raise NotImplementedError\n"
    ),
)
