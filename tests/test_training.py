"""The shared training loop: schedule shape, learning on a learnable task, determinism, loud failures."""
import copy
import math

import pytest
import torch
import torch.nn as nn

from course_utils.runtime import seed_everything
from course_utils.training import fit, lr_multiplier, make_loader


def test_warmup_then_cosine_decay():
    values = [lr_multiplier(step, warmup_steps=10, total_steps=100) for step in range(100)]
    assert values[0] == pytest.approx(0.1) and values[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(values[9:], values[10:]))
    assert values[-1] < 0.01
    assert lr_multiplier(399, 4000, 10_000, "inverse_sqrt") == pytest.approx(0.1)
    assert lr_multiplier(15999, 4000, 10_000, "inverse_sqrt") == pytest.approx(0.5)


def test_unknown_schedule_is_rejected():
    with pytest.raises(ValueError, match="schedule must be one of"):
        lr_multiplier(0, 0, 10, "triangle")


def train_xor(seed=0):
    seed_everything(seed)
    x = torch.randint(0, 2, (256, 2)).float()
    y = (x[:, 0] != x[:, 1]).long()
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
    loader = make_loader(x, y, batch_size=32, seed=seed)

    def accuracy(m):
        return {"accuracy": (m(x).argmax(-1) == y).float().mean().item()}

    history = fit(model, loader, lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1]), epochs=30, lr=1e-2,
                  warmup_steps=10, eval_fn=accuracy, progress=False)
    return history


def test_fit_learns_a_learnable_task_and_records_history():
    history = train_xor()
    assert history.final["accuracy"] == 1.0
    assert len(history.train_loss) == len(history.learning_rate) == 30 * 8
    assert history.train_loss[-1] < 0.5 * history.train_loss[0]
    steps, values = history.metric("accuracy")
    assert steps[-1] == 240 and len(values) == 30


def test_fit_is_deterministic_with_a_seed():
    assert train_xor(seed=3).train_loss == train_xor(seed=3).train_loss


def test_fit_stops_loudly_on_a_non_finite_loss():
    model = nn.Linear(1, 1)
    loader = make_loader(torch.ones(4, 1), batch_size=2)
    with pytest.raises(FloatingPointError, match="lower the learning rate"):
        fit(model, loader, lambda m, b: m(b[0]).sum() * math.inf, progress=False)


def test_make_loader_rejects_unequal_tensors():
    with pytest.raises(ValueError, match="equal length"):
        make_loader(torch.ones(3), torch.ones(4))


def test_fit_with_amp_autocasts_on_cpu_too():
    x, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
    seen_dtypes = []

    def loss_fn(model, batch):
        logits = model(batch[0])
        seen_dtypes.append(logits.dtype)
        return nn.functional.cross_entropy(logits.float(), batch[1])

    def train(amp):
        seed_everything(0)
        model = nn.Linear(8, 2)
        history = fit(model, make_loader(x, y, batch_size=16, seed=0), loss_fn, epochs=2, amp=amp, progress=False)
        return model, history

    fp32_model, _ = train(amp=False)
    assert set(seen_dtypes) == {torch.float32}
    seen_dtypes.clear()
    amp_model, history = train(amp=True)
    assert set(seen_dtypes) == {torch.bfloat16}, "the forward pass ran outside bf16 autocast"
    assert all(math.isfinite(loss) for loss in history.train_loss)
    assert amp_model.weight.dtype == torch.float32
    assert not torch.equal(amp_model.weight, fp32_model.weight)


def test_gradient_accumulation_equals_one_large_batch():
    """accumulate=k over k equal batches takes the step one batch of all their examples takes (lesson 05's
    capstone); a shorter last group steps too; a bad accumulate is refused with the course's error."""
    from course_utils.errors import CourseValueError
    from course_utils.training import make_optimizer, make_scheduler, train_one_epoch

    seed_everything(0)
    x, y = torch.randn(24, 3), torch.randint(0, 2, (24,))
    base = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))

    def run(batches, accumulate):
        model = copy.deepcopy(base)
        optimizer = make_optimizer(model, lr=1e-2)
        scheduler = make_scheduler(optimizer, 1, 10)
        steps = []
        losses = train_one_epoch(model, batches, lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1]),
                                 optimizer, scheduler, None, on_step=steps.append, accumulate=accumulate)
        return model, losses, steps

    small = [(x[i:i + 6], y[i:i + 6]) for i in range(0, 24, 6)]
    accumulated, losses, steps = run(small, 4)
    whole, _, _ = run([(x, y)], 1)
    assert len(losses) == 4 and len(steps) == 1
    for a, b in zip(accumulated.parameters(), whole.parameters()):
        torch.testing.assert_close(a, b)
    assert len(run(small, 3)[2]) == 2                          # groups of 3 and 1
    with pytest.raises(CourseValueError):
        run(small, 0)
