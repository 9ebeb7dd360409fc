"""Exercises of notebook 00: the PyTorch lessons 01–04 assume (q1 broadcasting, q2 view and transpose, q3 an
nn.Module and its state_dict) and the training loop (q4: a loss whose bug the learner first sees as a stalled fit).

Every check draws fresh inputs (sizes with no two equal, a single row, batch 1, float64) and compares the learner's
answer with the reference here: values, shapes, dtypes, gradients, inputs left unchanged.
"""
from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .asserts import (
    Case,
    Draw,
    OwnWork,
    as_tensor,
    backward,
    call_learner,
    check_function,
    close,
    compare_gradients,
    instantiate,
    learner_function,
    max_difference,
)
from .core import Exercise, ExerciseFailure, solution_of

# ---------------------------------------------------------------------------- q1: broadcasting
FORBIDDEN_DISTANCES = {"torch.cdist": torch.cdist}


class CountedOps(TorchFunctionMode):
    """Counts the tensor operations (``a[i]``, ``-``, ``.sum()`` …) run while it is active: a Python loop over rows
    runs a few per row, a broadcast answer a handful in all."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def reference_distances(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(n, d)``, ``(m, d)`` → ``(n, m)``: entry ``[i, j]`` is ``‖a[i] − b[j]‖²``."""
    return (a[:, None, :] - b[None, :, :]).pow(2).sum(-1)


def distance_cases(draw: Draw) -> list[Case]:
    """Smallest first: one row in ``a``, one row in ``b``, one feature; then random sizes (no two equal), ``b``
    equal to ``a`` (zeros on the diagonal) and float64."""
    n, m, d = draw.distinct(3, 2, 9)
    cases = [Case(f"a of shape (1, {d}) (a single row) and b of shape ({m}, {d})",
                  (draw.randn(1, d), draw.randn(m, d))),
             Case(f"a of shape ({n}, {d}) and b of shape (1, {d}) (a single row)",
                  (draw.randn(n, d), draw.randn(1, d))),
             Case(f"a of shape ({n}, 1) and b of shape ({m}, 1) (one feature)", (draw.randn(n, 1), draw.randn(m, 1))),
             Case(f"a of shape ({n}, {d}) and b of shape ({m}, {d})", (draw.randn(n, d), draw.randn(m, d)))]
    x = draw.randn(m, d)
    cases.append(Case(f"b equal to a, both of shape ({m}, {d}) (the diagonal must be 0)", (x, x.clone())))
    n, m, d = draw.distinct(3, 2, 9)
    cases.append(Case(f"float64 a of shape ({n}, {d}) and b of shape ({m}, {d})",
                      (draw.randn(n, d).double(), draw.randn(m, d).double())))
    return cases


def broadcast_hint(error: BaseException) -> str | None:
    if "must match the size of tensor" in str(error):
        return ("a (n, d) and b (m, d) do not broadcast as they are: sizes are lined up from the right and each pair "
                "must be equal or 1. Give a an axis of size 1 for b's rows and b one for a's rows: (n, 1, d) and "
                "(1, m, d) broadcast to (n, m, d)")
    return None


def distance_mistake(case: Case, got: Any) -> str | None:
    a, b = case.args
    expected = reference_distances(a, b)
    n, m = expected.shape
    if not isinstance(got, torch.Tensor) or got.dtype != expected.dtype:
        return None
    diff = a[:, None, :] - b[None, :, :]
    squared = (a * a).sum(-1)[:, None] + (b * b).sum(-1)[None, :]
    known = (
        (expected.T, f"the result is (m, n) = {tuple(got.shape)}, expected (n, m) = ({n}, {m}): a's rows run down "
                     "the result (axis 0), b's rows across it (axis 1): a gets the new axis in the middle, b in front"),
        (expected.sqrt(), "these are the distances, not their squares: leave out the square root"),
        (diff.abs().sum(-1), "these are sums of absolute differences: square each difference, then sum"),
        (diff.sum(-1), "the differences were summed without being squared (positive and negative ones cancel): square "
                       "each difference, then sum over the features"),
        (diff.pow(2).mean(-1), "the squared differences were averaged over the features: sum them"),
        (a @ b.T, "these are dot products a[i]·b[j], not squared distances: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b"),
        (squared - a @ b.T, "the factor 2 is missing: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b"),
        (squared + 2 * a @ b.T, "the sign of the cross term is wrong: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b"),
    )
    for wrong, message in known:
        if got.shape == wrong.shape and close(got.detach(), wrong, atol=1e-3):
            return message
    if got.dim() == 1:
        return (f"got one value per row, shape {tuple(got.shape)}: row i of a was paired with row i of b only. Every "
                f"row of a must meet every row of b — give a an axis of size 1 for b's rows and b one for a's rows, so "
                f"the difference broadcasts to (n, m, d) = ({n}, {m}, {a.size(1)})")
    if got.dim() == 3:
        return (f"got shape {tuple(got.shape)}: the squared differences (n, m, d) still need to be summed over the "
                "features, the last axis")
    if got.dim() == 2 and got.shape != expected.shape and a.size(1) in got.shape:
        return (f"got shape {tuple(got.shape)}, expected (n, m) = ({n}, {m}): the sum ran over a row axis; sum the "
                "squared differences over the features (the last axis) only")
    return None


def check_pairwise_sq_distances(ns) -> None:
    function = learner_function(ns, "pairwise_sq_distances")
    check_function(function, reference_distances, distance_cases(Draw()), "pairwise_sq_distances",
                   diagnose=distance_mistake, error_hint=broadcast_hint, atol=1e-3)
    draw = Draw()
    n, m, d = draw.distinct(3, 16, 32)
    case = f"a of shape ({n}, {d}) and b of shape ({m}, {d})"
    guard = OwnWork(FORBIDDEN_DISTANCES)
    with CountedOps() as ops, guard:
        call_learner(function, "pairwise_sq_distances", case, draw.randn(n, d), draw.randn(m, d))
    if guard.used:
        raise ExerciseFailure(f"your `pairwise_sq_distances` calls {guard.used}, which computes the distances for you: "
                              "this exercise is about building them with broadcasting — write the subtraction "
                              "yourself. (Outside this exercise torch.cdist is a fine tool.)")
    if ops.count > min(n, m, d):
        raise ExerciseFailure(f"on {case}: your `pairwise_sq_distances` ran {ops.count} tensor operations — a "
                              "Python loop, a few operations per row (or per feature). The point is broadcasting: "
                              "a[:, None, :] is (n, 1, d), b[None, :, :] is (1, m, d), and one subtraction pairs "
                              "every row of a with every row of b. Write it without a loop.")


# ---------------------------------------------------------------------------- q2: view and transpose
def layout_tensor(draw: Draw, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Every entry different, so a value in the wrong place always shows."""
    return (torch.arange(math.prod(shape), dtype=dtype).view(shape) + draw.randn(*shape).to(dtype) * 0.01)


def reference_rows(x: torch.Tensor) -> torch.Tensor:
    """``(seq, batch, d)`` → ``(batch * seq, d)``: row ``b * seq + s`` holds ``x[s, b]``."""
    return x.transpose(0, 1).reshape(-1, x.size(-1))


def reference_from_rows(rows: torch.Tensor, batch: int) -> torch.Tensor:
    """``(batch * seq, d)`` → ``(seq, batch, d)``: the inverse of :func:`reference_rows`."""
    return rows.reshape(batch, -1, rows.size(-1)).transpose(0, 1)


def layout_sizes(draw: Draw) -> list[tuple[str, int, int, int]]:
    """``(what, seq, batch, d)``, smallest first: batch 1, a single token, then sizes with no two equal."""
    seq, batch, d = draw.distinct(3, 2, 9)
    other = draw.distinct(3, 2, 9)
    return [("batch 1", seq, 1, d), ("a single token (seq 1)", 1, batch, d), ("", seq, batch, d),
            ("", *other)]


def describe_layout(what: str, seq: int, batch: int, d: int, extra: str = "") -> str:
    return f"seq {seq}, batch {batch}, d {d}" + (f" ({what})" if what else "") + extra


def rows_cases(draw: Draw) -> list[Case]:
    cases = []
    for what, seq, batch, d in layout_sizes(draw):
        cases.append(Case("x of " + describe_layout(what, seq, batch, d), (layout_tensor(draw, (seq, batch, d)),)))
    seq, batch, d = draw.distinct(3, 2, 9)
    batch_first = layout_tensor(draw, (batch, seq, d))
    cases.append(Case("x of " + describe_layout("", seq, batch, d, ", a transposed view of a (batch, seq, d) tensor"),
                      (batch_first.transpose(0, 1),)))
    seq, batch, d = draw.distinct(3, 2, 9)
    cases.append(Case("x of " + describe_layout("float64", seq, batch, d),
                      (layout_tensor(draw, (seq, batch, d), torch.float64),)))
    return cases


def from_rows_cases(draw: Draw) -> list[Case]:
    cases = []
    for what, seq, batch, d in layout_sizes(draw):
        rows = reference_rows(layout_tensor(draw, (seq, batch, d)))
        cases.append(Case(f"rows of shape ({batch * seq}, {d}) and batch={batch} (seq {seq}"
                          + (f", {what})" if what else ")"), (rows, batch)))
    seq, batch, d = draw.distinct(3, 2, 9)
    rows = reference_rows(layout_tensor(draw, (seq, batch, d), torch.float64))
    cases.append(Case(f"float64 rows of shape ({batch * seq}, {d}) and batch={batch} (seq {seq})", (rows, batch)))
    return cases


def layout_hint(error: BaseException) -> str | None:
    message = str(error)
    if "view" in message and ("contiguous" in message or "stride" in message):
        return ("After .transpose the numbers still sit in memory in the old order (the tensor is not contiguous), so "
                ".view cannot regroup them: call .contiguous() before .view, or use .reshape (which copies when it "
                "must)")
    if "is invalid for input of size" in message:
        return "Take every size from the inputs (x.shape, rows.shape, batch) in a view/reshape, not fixed numbers"
    return None


def rows_mistake(case: Case, got: Any) -> str | None:
    (x,) = case.args
    seq, batch, d = x.shape
    expected = reference_rows(x)
    if not isinstance(got, torch.Tensor) or got.dtype != expected.dtype:
        return None
    if got.shape == expected.shape and torch.equal(got.detach(), x.reshape(-1, d)):
        return ("the tokens of different sentences interleave: row 0 is token 0 of sentence 0, row 1 token 0 of "
                "sentence 1 … A view (or reshape) only regroups the numbers in the order they sit, and x sits position "
                "by position. Bring the batch axis in front first (transpose(0, 1)), then flatten")
    if got.shape == (batch, seq, d) and torch.equal(got.detach(), x.transpose(0, 1)):
        return (f"you stopped at (batch, seq, d) = {(batch, seq, d)}: now flatten the first two axes into batch * seq "
                "rows")
    if got.shape != expected.shape:
        return (f"(seq, batch, d) = {tuple(x.shape)} should become (batch * seq, d) = {tuple(expected.shape)}, got "
                f"{tuple(got.shape)}: take every size from x.shape, and keep the features as the last axis")
    return "the shape is right but the values are not where they belong: row b * seq + s should hold x[s, b]"


def from_rows_mistake(case: Case, got: Any) -> str | None:
    rows, batch = case.args
    d = rows.size(-1)
    seq = rows.size(0) // batch
    expected = reference_from_rows(rows, batch)
    if not isinstance(got, torch.Tensor) or got.dtype != expected.dtype:
        return None
    if got.shape == expected.shape and torch.equal(got.detach(), rows.reshape(seq, batch, d)):
        return ("the values land in the wrong sentences: a view regroups the rows in the order they sit, and they sit "
                "sentence by sentence (all of sentence 0, then all of sentence 1 …), not position by position. View "
                "them as (batch, seq, d) — the order they are in — then swap the first two axes")
    if got.shape == (batch, seq, d) and torch.equal(got.detach(), rows.reshape(batch, seq, d)):
        return f"you stopped at (batch, seq, d) = {(batch, seq, d)}: swap the first two axes to (seq, batch, d)"
    if got.dim() == 3 and got.shape != expected.shape and sorted(got.shape) == sorted(expected.shape):
        return (f"the axes are in the wrong order: got {tuple(got.shape)}, expected (seq, batch, d) = "
                f"{tuple(expected.shape)}. View the rows as (batch, seq, d), then swap axes 0 and 1 only")
    if got.shape != expected.shape:
        return (f"rows of shape {tuple(rows.shape)} with batch={batch} should become (seq, batch, d) = "
                f"{tuple(expected.shape)}, got {tuple(got.shape)}: seq is the number of rows divided by batch")
    return "the shape is right but the values are not where they belong: [s, b] should hold rows[b * seq + s]"


def check_rows(ns) -> None:
    check_function(learner_function(ns, "to_rows"), reference_rows, rows_cases(Draw()), "to_rows",
                   diagnose=rows_mistake, error_hint=layout_hint)
    check_function(learner_function(ns, "from_rows"), reference_from_rows, from_rows_cases(Draw()), "from_rows",
                   diagnose=from_rows_mistake, error_hint=layout_hint)


# ---------------------------------------------------------------------------- q3: nn.Module and state_dict
MLP_LAYOUT = "self.linear1 = nn.Linear(d_in, d_hidden), self.linear2 = nn.Linear(d_hidden, d_out)"
ACTIVATIONS = {"no activation at all": lambda h: h, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
               "GELU": F.gelu, "SiLU": F.silu, "leaky ReLU": F.leaky_relu}


def mlp_state(draw: Draw, d_in: int, d_hidden: int, d_out: int) -> dict[str, torch.Tensor]:
    """Reference weights, drawn afresh: what a saved TinyMLP's state_dict holds."""
    return {"linear1.weight": draw.randn(d_hidden, d_in, scale=0.5), "linear1.bias": draw.randn(d_hidden, scale=0.5),
            "linear2.weight": draw.randn(d_out, d_hidden, scale=0.5), "linear2.bias": draw.randn(d_out, scale=0.5)}


def reference_mlp(state: dict[str, torch.Tensor], x: torch.Tensor, activation=F.relu) -> torch.Tensor:
    """``linear2(relu(linear1(x)))`` from the weights in ``state``."""
    hidden = activation(F.linear(x, state["linear1.weight"], state["linear1.bias"]))
    return F.linear(hidden, state["linear2.weight"], state["linear2.bias"])


def construction_hint(error: BaseException) -> str | None:
    if "before Module.__init__() call" in str(error):
        return "Call super().__init__() first in __init__, before assigning any layer"
    return None


def unregistered_layers(model: nn.Module) -> list[str]:
    """Attributes that hold layers in a plain list, tuple or dict (which nn.Module does not look into)."""
    found = []
    for attribute, value in vars(model).items():
        if attribute.startswith("_"):  # nn.Module's own registries (_modules, _parameters …)
            continue
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
        if any(isinstance(item, nn.Module) for item in items):
            found.append(attribute)
    return found


def check_registration(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """The learner's state_dict holds exactly the reference's keys and shapes, as registered parameters."""
    got = model.state_dict()
    shapes = ", ".join(f"`{key}` {tuple(value.shape)}" for key, value in state.items())
    plain = unregistered_layers(model)
    if plain and set(state) - set(got):
        kind = type(vars(model)[plain[0]]).__name__
        raise ExerciseFailure(f"your `TinyMLP` keeps its layers in a plain Python {kind} (`self.{plain[0]}`): those "
                              "layers are not registered — nn.Module only finds a layer assigned as an attribute "
                              "(self.linear1 = nn.Linear(...)) or held in an nn.ModuleList / nn.ModuleDict. So "
                              "model.parameters() misses them (the optimizer would never train them) and the "
                              f"state_dict has {', '.join(f'`{k}`' for k in got) or 'no entries'} instead of "
                              f"{shapes}. Write {MLP_LAYOUT}.")
    missing = [key for key in state if key not in got]
    extra = [key for key in got if key not in state]
    if missing:
        found = ", ".join(f"`{key}`" for key in got) or "nothing"
        raise ExerciseFailure(f"your `TinyMLP`'s state_dict has no {', '.join(f'`{k}`' for k in missing)} (it has "
                              f"{found}). The keys are the attribute names of the layers, so a saved model loads "
                              f"into yours only if the names match: {MLP_LAYOUT} (bias included).")
    if extra:
        raise ExerciseFailure(f"your `TinyMLP`'s state_dict has entries a TinyMLP does not: "
                              f"{', '.join(f'`{k}` {tuple(got[k].shape)}' for k in extra)}; load_state_dict refuses "
                              f"them. Expected exactly {shapes}: {MLP_LAYOUT}, nothing else that holds weights.")
    for key, value in state.items():
        if tuple(got[key].shape) != tuple(value.shape):
            raise ExerciseFailure(f"your `TinyMLP.{key}` has shape {tuple(got[key].shape)}, expected "
                                  f"{tuple(value.shape)}: {MLP_LAYOUT}, the sizes in the order TinyMLP(d_in, "
                                  "d_hidden, d_out) gets them (nn.Linear(in, out).weight is stored as (out, in)).")
        if got[key].dtype != value.dtype:
            raise ExerciseFailure(f"your `TinyMLP.{key}` is {got[key].dtype}, expected {value.dtype}: create the "
                                  "layers in the default float32 (no .double(), no dtype=torch.float64).")
    parameters = dict(model.named_parameters())
    buffers = [key for key in state if key not in parameters]
    if buffers:
        raise ExerciseFailure(f"`{buffers[0]}` is in your `TinyMLP`'s state_dict but is not a parameter (a buffer "
                              "or a plain tensor): the optimizer never sees it. Let nn.Linear create the weights.")


def mlp_mistake(model: nn.Module, state: dict, x: torch.Tensor, got: torch.Tensor) -> str:
    if close(got, reference_mlp(state, x, ACTIVATIONS["no activation at all"])):
        return ("the output matches linear2(linear1(x)) with no activation in between: two linear layers in a row are "
                "just one linear map. Put a ReLU between them")
    for name, activation in ACTIVATIONS.items():
        if close(got, reference_mlp(state, x, activation)):
            return (f"the output matches linear2(linear1(x)) with {name} in between: the hidden layer must go through "
                    "ReLU (F.relu, torch.relu or nn.ReLU())")
    if close(got, reference_mlp(state, F.relu(x))):
        return "the input went through ReLU too: only the hidden layer, linear1's output, does"
    if close(got, F.relu(reference_mlp(state, x))):
        return "the output went through ReLU too: only the hidden layer does; return linear2's output as it is"
    model.eval()
    evaluated = call_learner(model, "TinyMLP", "the same input in eval mode", x)
    model.train()
    if isinstance(evaluated, torch.Tensor) and close(evaluated.detach(), reference_mlp(state, x)):
        return ("in eval mode your output is right, in training mode it is not (dropout?): the task has no dropout, "
                "the output must not depend on the mode")
    again = call_learner(model, "TinyMLP", "a second call on the same input", x)
    if isinstance(again, torch.Tensor) and again.shape == got.shape and not close(again.detach(), got):
        return ("calling it twice on the same input gives different outputs: forward builds new layers (or draws "
                "random numbers) on every call. Create the layers once, in __init__, and only use them in forward")
    return (f"your `TinyMLP` differs from linear2(relu(linear1(x))) (by up to "
            f"{max_difference(got, reference_mlp(state, x)):.3g}) with the loaded weights")


def mlp_inputs(draw: Draw, d_in: int) -> list[tuple[str, torch.Tensor]]:
    batch, seq = draw.distinct(2, 3, 9, avoid=(d_in,))
    return [(f"x of shape ({batch}, {d_in})", draw.randn(batch, d_in)),
            (f"x of shape (1, {d_in}) (batch 1)", draw.randn(1, d_in)),
            (f"x of shape ({batch}, {seq}, {d_in}) (a batch of sequences)", draw.randn(batch, seq, d_in))]


def check_tiny_mlp(ns) -> None:
    cls = ns["TinyMLP"]
    if not isinstance(cls, type):
        raise ExerciseFailure(f"`TinyMLP` should be a class (`class TinyMLP(nn.Module): ...`), got "
                              f"{type(cls).__name__}.")
    if not issubclass(cls, nn.Module):
        raise ExerciseFailure("`TinyMLP` should subclass nn.Module (`class TinyMLP(nn.Module):`) and call "
                              "super().__init__() first: only then are its layers registered, and it has "
                              "parameters(), state_dict() and load_state_dict().")
    if all("forward" not in vars(klass) for klass in cls.__mro__ if klass not in (nn.Module, object)):
        raise ExerciseFailure("`TinyMLP` has no method named `forward`: calling model(x) runs model.forward(x), "
                              "so the method must be spelled exactly `def forward(self, x):`.")
    draw = Draw()
    sizes = [draw.distinct(3, 2, 9), draw.distinct(3, 2, 9)]
    sizes[1][1] = 1  # a single hidden unit
    for d_in, d_hidden, d_out in sizes:
        config = f"TinyMLP(d_in={d_in}, d_hidden={d_hidden}, d_out={d_out})"
        model = call_learner(instantiate, "TinyMLP", config, cls, "TinyMLP", "(d_in, d_hidden, d_out)", d_in,
                             d_hidden, d_out, error_hint=construction_hint)
        state = mlp_state(draw, d_in, d_hidden, d_out)
        check_registration(model, state)
        model.load_state_dict(state)
        for what, x in mlp_inputs(draw, d_in):
            case = f"{config} with loaded weights, {what}"
            leaf = x.clone().requires_grad_()
            got = call_learner(model, "TinyMLP", case, leaf)
            expected_shape = (*x.shape[:-1], d_out)
            got_d = as_tensor(got, "TinyMLP.forward", expected_shape, f"(..., d_out) for x of shape {tuple(x.shape)}")
            if got_d.dtype != torch.float32:
                raise ExerciseFailure(f"on {case}: the output is {got_d.dtype}, expected torch.float32: keep the "
                                      "dtype of the input.")
            if not close(got_d, reference_mlp(state, x)):
                raise ExerciseFailure(f"on {case}: {mlp_mistake(model, state, x, got_d)}.")
            probe = draw.randn(*expected_shape)
            weights = {key: value.clone().requires_grad_() for key, value in state.items()}
            reference_input = x.clone().requires_grad_()
            (reference_mlp(weights, reference_input) * probe).sum().backward()
            model.zero_grad()
            backward(got * probe, "TinyMLP", f"on {case}")
            parameters = dict(model.named_parameters())
            compare_gradients({**{f"parameter `{k}`": w.grad for k, w in weights.items()},
                               "input `x`": reference_input.grad},
                              {**{f"parameter `{k}`": parameters[k].grad for k in weights}, "input `x`": leaf.grad},
                              "TinyMLP", f"on {case}")



# ---------------------------------------------------------------------------- q4: the stalled fit
def reference_squared_error(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over the N points of ``(predictions[i, 0] - targets[i])²``; predictions ``(N, 1)``, targets ``(N,)``."""
    return F.mse_loss(predictions[:, 0], targets)


def squared_error_cases(draw: Draw) -> list[Case]:
    n, other = draw.distinct(2, 3, 40)
    return [Case(f"predictions of shape ({n}, 1) and targets of shape ({n},)", (draw.randn(n, 1), draw.randn(n))),
            Case("a single point: predictions (1, 1), targets (1,)", (draw.randn(1, 1), draw.randn(1))),
            Case(f"float64 predictions ({other}, 1) and targets ({other},)",
                 (draw.randn(other, 1).double(), draw.randn(other).double()))]


def squared_error_mistake(case: Case, got: Any) -> str | None:
    predictions, targets = case.args
    if not isinstance(got, torch.Tensor):
        return None
    got = got.detach()
    diff = predictions[:, 0] - targets
    known = (
        (((predictions - targets) ** 2).mean(),
         "this is still the broadcast: (N, 1) minus (N,) lines the shapes up from the right and gives an (N, N) table "
         "of every prediction against every target. Make both shapes (N,) (or both (N, 1)) before subtracting"),
        ((diff ** 2).sum(), "this is the sum of the squared errors: take their mean over the N points"),
        ((diff ** 2).mean().sqrt(), "this is the root of the mean squared error: leave out the square root"),
        (diff.abs().mean(), "these are absolute errors: square each difference"),
        (diff.mean() ** 2, "the mean was taken before squaring (positive and negative errors cancel): square each "
                           "difference, then average"),
    )
    for wrong, message in known:
        if got.shape == wrong.shape and close(got, wrong.to(got.dtype), atol=1e-6):
            return message
    if got.dim() > 0:
        return (f"got shape {tuple(got.shape)}: a loss is one number, a 0-d tensor — average the squared errors over "
                "every point")
    return None


def check_squared_error(ns) -> None:
    function = learner_function(ns, "fixed_squared_error")
    check_function(function, reference_squared_error, squared_error_cases(Draw()), "fixed_squared_error",
                   diagnose=squared_error_mistake, atol=1e-6)
    draw = Draw()
    n = draw.distinct(1, 3, 40)[0]
    predictions, targets = draw.randn(n, 1).requires_grad_(), draw.randn(n)
    case = f"predictions ({n}, 1) that require gradients"
    got = call_learner(function, "fixed_squared_error", case, predictions, targets)
    if got.grad_fn is None:
        raise ExerciseFailure(f"on {case}: the value is right, but backward cannot run through it (it was detached, or "
                              "rebuilt from Python numbers): compute the loss with tensor operations only, so "
                              "loss.backward() reaches the model's parameters.")
    backward(got, "fixed_squared_error", f"on {case}")
    expected = predictions.detach().clone().requires_grad_()
    reference_squared_error(expected, targets).backward()
    compare_gradients({"`predictions`": expected.grad}, {"`predictions`": predictions.grad}, "fixed_squared_error",
                      f"on {case}")



q1 = Exercise(
    name="Every row against every row (broadcasting)",
    variables=("pairwise_sq_distances",),
    checker=check_pairwise_sq_distances,
    hints=("Broadcasting lines two shapes up from the right and stretches every axis of size 1 to the other's size. "
           "Which shapes must a and b take so that a single subtraction pairs every row of a with every row of b?",
           "1. Give a a new axis of size 1 in the middle → (n, 1, d), and b one in front → (1, m, d) (index with "
           "None, or unsqueeze). 2. Subtract: the result broadcasts to (n, m, d). 3. Square every entry and sum over "
           "the last axis, the features → (n, m). No Python loop, and no torch.cdist (refused here)."),
    solution=solution_of("lesson00", "pairwise_sq_distances"),
)

q2 = Exercise(
    name="Sentence by sentence (view and transpose)",
    variables=("to_rows", "from_rows"),
    checker=check_rows,
    hints=("A view only regroups the numbers in the order they sit; a transpose swaps which axis comes first. In "
           "which order must the rows come out — and in which order does x hold its numbers?",
           "to_rows: 1. swap the seq and batch axes → (batch, seq, d). 2. Flatten the first two axes into one: the "
           "swapped tensor is not contiguous, so make it contiguous before a view (or use reshape). from_rows: 1. seq "
           "is the number of rows divided by batch. 2. Regroup the rows as (batch, seq, d), the order they are in. "
           "3. Swap the first two axes → (seq, batch, d). Every size comes from the inputs."),
    solution=solution_of("lesson00", "to_rows", "from_rows"),
)

q3 = Exercise(
    name="A module and its state_dict",
    variables=("TinyMLP",),
    checker=check_tiny_mlp,
    hints=("An nn.Module finds its layers through its attributes: a layer assigned to self in __init__ (after the "
           "parent's __init__ has run) is registered, and its attribute name becomes its state_dict key.",
           "class TinyMLP, a subclass of nn.Module, whose __init__ takes d_in, d_hidden, d_out: 1. run the parent's "
           "__init__ first. 2. Attribute linear1: a Linear layer from d_in to d_hidden features; attribute linear2: "
           "from d_hidden to d_out (both with a bias, the default). forward(self, x): linear1, then ReLU, then "
           "linear2. No plain Python list of layers: a list hides them from parameters() and state_dict()."),
    solution=solution_of("lesson00", "TinyMLP"),
)

q4 = Exercise(
    name="The fit that stalls (find the bug)",
    variables=("fixed_squared_error",),
    checker=check_squared_error,
    hints=("Print predictions.shape, targets.shape and (predictions - targets).shape inside the loss. What does "
           "broadcasting make of (N, 1) minus (N,)?",
           "The subtraction must pair prediction i with target i only: bring both to shape (N,) (drop the predictions' "
           "last axis) or both to (N, 1) (give the targets one), then square and take the mean."),
    solution=solution_of("lesson00", "fixed_squared_error"),
)
