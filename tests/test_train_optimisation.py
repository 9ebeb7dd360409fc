"""``python -m course_utils.train``'s optimisation as it actually runs, observed step by step: the gradient is clipped
to the recipe's norm at every step, the learning rate follows the schedule step by step, and the batch order is a
new seeded permutation every epoch (``DistributedSampler.set_epoch``)."""
import pytest
import torch

from course_utils import tasks, train
from course_utils.training import lr_multiplier

MLM_TINY = ["mlm", "--size", "tiny", "--threads", "1", "--no-progress", "--no-eval", "--epochs", "2"]


@pytest.fixture(scope="module")
def recorded():
    """One tiny run of the command with its clipping, learning rates and batch order recorded."""
    record = {"clip": [], "lr": [], "batches": [], "events": []}
    clip, step, seed_of = torch.nn.utils.clip_grad_norm_, torch.optim.AdamW.step, train.batch_seed

    def clipping(parameters, max_norm, *args, **kwargs):
        parameters = list(parameters)
        before = clip(parameters, max_norm, *args, **kwargs)
        after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in parameters if p.grad is not None]))
        record["clip"].append((float(max_norm), float(before), float(after)))
        record["events"].append("clip")
        return before

    def stepping(optimizer, *args, **kwargs):
        record["lr"].append(optimizer.param_groups[0]["lr"])
        record["events"].append("step")
        return step(optimizer, *args, **kwargs)

    def seeding(seed, epoch, index):
        record["batches"].append((epoch, index))
        return seed_of(seed, epoch, index)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.nn.utils, "clip_grad_norm_", clipping)
        patch.setattr(torch.optim.AdamW, "step", stepping)
        patch.setattr(train, "batch_seed", seeding)
        record["metrics"] = train.main(MLM_TINY)
    return record


def test_every_step_clips_the_gradient_to_the_recipes_norm(recorded):
    clip_norm = tasks.recipe_for("mlm", "tiny").clip_norm
    steps = recorded["metrics"]["total_steps"]
    assert len(recorded["clip"]) == steps
    assert all(max_norm == clip_norm for max_norm, _, _ in recorded["clip"])
    assert all(after <= min(before, clip_norm) * (1 + 1e-5) for _, before, after in recorded["clip"])
    assert recorded["events"] == ["clip", "step"] * steps                     # clipped before every update


def test_the_learning_rate_follows_the_schedule_step_by_step(recorded):
    recipe = tasks.recipe_for("mlm", "tiny")
    total = recorded["metrics"]["total_steps"]
    expected = [recipe.lr * lr_multiplier(step, recipe.warmup_for(total), total, recipe.schedule)
                for step in range(total)]
    assert recorded["lr"] == pytest.approx(expected, rel=1e-9)
    assert len(set(recorded["lr"])) > total // 2                               # it changes at (almost) every step


def test_the_batch_order_is_a_new_seeded_permutation_every_epoch(recorded):
    by_epoch: dict[int, list[int]] = {}
    for epoch, index in recorded["batches"]:
        by_epoch.setdefault(epoch, []).append(index)
    assert sorted(by_epoch) == [0, 1]
    n_batches = len(by_epoch[0])
    for epoch, order in by_epoch.items():
        expected = torch.randperm(n_batches, generator=torch.Generator().manual_seed(0 + epoch)).tolist()
        assert order == expected, epoch                                        # DistributedSampler, seed + epoch
    assert by_epoch[0] != by_epoch[1]
