"""The package blocks the capstones are checked against: the training loop that fit runs is train_one_epoch."""
import torch
import torch.nn.functional as F

from course_utils import TransformerClassifier, TransformerConfig, fit, make_loader, seed_everything
from course_utils.training import make_optimizer, make_scheduler, train_one_epoch


def tiny_classifier_and_loader():
    seed_everything(0)
    ids, labels = torch.randint(7, 40, (48, 8)), torch.randint(0, 2, (48,))
    config = TransformerConfig(vocab_size=40, d_model=16, n_heads=2, d_ff=24, n_layers=1, max_len=8, dropout=0.0)
    return TransformerClassifier(config, 2), make_loader(ids, labels, batch_size=16, seed=0)


def loss_fn(model, batch):
    return F.cross_entropy(model(batch[0]), batch[1])


def test_fit_is_train_one_epoch_with_the_package_optimizer_and_schedule():
    model, loader = tiny_classifier_and_loader()
    by_hand, loader_by_hand = tiny_classifier_and_loader()  # the same weights and the same shuffling, afresh
    history = fit(model, loader, loss_fn, epochs=2, lr=3e-3, warmup_steps=2, clip_norm=0.5, progress=False)
    optimizer = make_optimizer(by_hand, lr=3e-3)
    scheduler = make_scheduler(optimizer, warmup_steps=2, total_steps=2 * len(loader))
    losses = [loss for _ in range(2)
              for loss in train_one_epoch(by_hand, loader_by_hand, loss_fn, optimizer, scheduler, 0.5)]
    assert losses == history.train_loss
    for a, b in zip(model.parameters(), by_hand.parameters()):
        assert torch.equal(a, b)


def test_train_one_epoch_steps_the_schedule_once_per_step_and_reports_each_step():
    model, loader = tiny_classifier_and_loader()
    optimizer = make_optimizer(model, lr=1e-2)
    scheduler = make_scheduler(optimizer, warmup_steps=len(loader), total_steps=2 * len(loader))
    steps = []
    model.eval()
    train_one_epoch(model, loader, loss_fn, optimizer, scheduler, clip_norm=0.1, on_step=steps.append)
    assert model.training
    assert [round(s.learning_rate, 6) for s in steps] == [round(1e-2 * (i + 1) / len(loader), 6)
                                                          for i in range(len(loader))]
    assert scheduler.last_epoch == len(loader) and all(s.grad_norm > 0 for s in steps)
