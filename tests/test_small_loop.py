"""Lesson 00's loop trains, reports each step's loss, and refuses bad arguments with course errors."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from course_utils.errors import CourseTypeError, CourseValueError
from course_utils.small_loop import train_steps


def regression_problem():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    return nn.Linear(3, 1), (lambda: (x, y))


def test_loss_falls_and_every_step_is_reported():
    model, next_batch = regression_problem()
    losses = train_steps(model, next_batch, F.mse_loss, torch.optim.SGD(model.parameters(), lr=0.1), steps=50)
    assert len(losses) == 50
    assert losses[-1] < 0.01 * losses[0]


def test_same_as_the_loop_written_by_hand():
    model, next_batch = regression_problem()
    twin = nn.Linear(3, 1)
    twin.load_state_dict(model.state_dict())
    train_steps(model, next_batch, F.mse_loss, torch.optim.SGD(model.parameters(), lr=0.1), steps=5)
    optimizer = torch.optim.SGD(twin.parameters(), lr=0.1)
    for _ in range(5):
        x, y = next_batch()
        loss = F.mse_loss(twin(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.testing.assert_close(model.weight, twin.weight)


def test_scheduler_steps_once_per_step():
    model, next_batch = regression_problem()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 10))
    train_steps(model, next_batch, F.mse_loss, optimizer, steps=4, scheduler=scheduler)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)


@pytest.mark.parametrize("change,error", [
    ({"model": "not a model"}, CourseTypeError),
    ({"next_batch": 3}, CourseTypeError),
    ({"optimizer": None}, CourseTypeError),
    ({"steps": 0}, CourseValueError),
    ({"steps": 2.5}, CourseTypeError),
    ({"scheduler": object()}, CourseTypeError),
])
def test_bad_arguments_get_course_errors(change, error):
    model, next_batch = regression_problem()
    arguments = dict(model=model, next_batch=next_batch, loss_fn=F.mse_loss,
                     optimizer=torch.optim.SGD(model.parameters(), lr=0.1), steps=3)
    arguments.update(change)
    with pytest.raises(error):
        train_steps(**arguments)


def test_a_diverging_run_stops_with_a_course_error():
    model, next_batch = regression_problem()
    with pytest.raises(CourseValueError, match="learning rate"):
        train_steps(model, next_batch, F.mse_loss, torch.optim.SGD(model.parameters(), lr=1e6), steps=200)


def test_training_mode_and_stale_gradients():
    """The loop switches the model to training mode and clears gradients left from before it started."""
    model, next_batch = regression_problem()
    twin = nn.Linear(3, 1)
    twin.load_state_dict(model.state_dict())
    model.eval()
    x, y = next_batch()
    F.mse_loss(model(x * 100), y).backward()          # a stale gradient the first step must not use
    train_steps(model, next_batch, F.mse_loss, torch.optim.SGD(model.parameters(), lr=0.1), steps=1)
    assert model.training
    train_steps(twin, next_batch, F.mse_loss, torch.optim.SGD(twin.parameters(), lr=0.1), steps=1)
    torch.testing.assert_close(model.weight, twin.weight)
