"""Exercises of notebook 00: broadcasting (q1), view and transpose (q2), an nn.Module and its state_dict (q3), the
loss behind a fit that stalls (q4); in the form of :mod:`.core`."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .asserts import (
    Case,
    Draw,
    Raised,
    attempt,
    backward,
    check_function,
    check_same_in_both_modes,
    close,
    compare_gradients,
    difference,
    flipped,
    instantiate,
    learner_function,
    same_output,
)
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of


# ---------------------------------------------------------------------------- q1: broadcasting
def reference_distances(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(n, m)``: ``[i, j] = ‖a_i − b_j‖²`` for ``a`` ``(n, d)`` and ``b`` ``(m, d)``."""
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)


def squared_norms(a, b):
    return (a * a).sum(-1)[:, None] + (b * b).sum(-1)[None, :]


DISTANCE_MISTAKES = (
    Mistake("row i against row i only", "every row of a must meet every row of b: give a an axis of size 1 for b's "
            "rows and b one for a's rows, so the difference broadcasts to (n, m, d)",
            variant=lambda a, b: ((a - b) ** 2).sum(-1)),
    Mistake("(m, n)", "the result is (m, n), expected (n, m): a's rows run down the result (axis 0), b's rows across "
            "it — a gets the new axis in the middle, b in front", variant=lambda a, b: reference_distances(b, a)),
    Mistake("distances", "these are the distances, not their squares: leave out the square root",
            variant=lambda a, b: reference_distances(a, b).sqrt()),
    Mistake("not squared", "the differences were summed without being squared (positive and negative ones cancel)",
            variant=lambda a, b: (a[:, None] - b[None]).sum(-1)),
    Mistake("absolute", "these are sums of absolute differences: square each difference, then sum",
            variant=lambda a, b: (a[:, None] - b[None]).abs().sum(-1)),
    Mistake("mean over features", "the squared differences were averaged over the features: sum them",
            variant=lambda a, b: ((a[:, None] - b[None]) ** 2).mean(-1)),
    Mistake("not summed", "the squared differences (n, m, d) still need to be summed over the features, the last axis",
            variant=lambda a, b: (a[:, None] - b[None]) ** 2),
    Mistake("summed over a row axis", "the sum ran over a row axis; sum the squared differences over the features "
            "(the last axis) only", variant=lambda a, b: ((a[:, None] - b[None]) ** 2).sum(1)),
    Mistake("dot products", "these are dot products a[i]·b[j], not squared distances: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b",
            variant=lambda a, b: a @ b.T),
    Mistake("factor 2 missing", "the factor 2 is missing: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b",
            variant=lambda a, b: squared_norms(a, b) - a @ b.T),
    Mistake("cross term sign", "the sign of the cross term is wrong: ‖a − b‖² = ‖a‖² + ‖b‖² − 2 a·b",
            variant=lambda a, b: squared_norms(a, b) + 2 * a @ b.T),
)


class CountedOps(TorchFunctionMode):
    """Counts the torch operations run inside it (a Python loop runs a few per row)."""

    def __enter__(self):
        self.count = 0
        return super().__enter__()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def check_pairwise_sq_distances(ns) -> None:
    function = learner_function(ns, "pairwise_sq_distances")
    forbidden = {"torch.cdist": torch.cdist}
    draw = Draw()
    n, m, d = draw.distinct(3, 2, 9)
    cases = [Case(f"a of shape ({n}, {d}) and b of shape ({m}, {d})", (draw.randn(n, d), draw.randn(m, d))),
             Case(f"a single row: a (1, {d}), b ({m}, {d})", (draw.randn(1, d), draw.randn(m, d))),
             Case(f"float64, a ({m}, {n}) and b ({d}, {n})", (draw.randn(m, n).double(), draw.randn(d, n).double()))]
    check_function(function, reference_distances, cases, "pairwise_sq_distances", forbidden=forbidden, atol=1e-4,
                   twins=flipped(cases))
    draw = Draw()
    n, m, d = draw.distinct(3, 16, 32)
    with CountedOps() as ops:
        attempt(function, "pairwise_sq_distances", (draw.randn(n, d), draw.randn(m, d)), {}, forbidden)
    if ops.count > min(n, m, d):
        raise ExerciseFailure(f"on a ({n}, {d}) and b ({m}, {d}): your `pairwise_sq_distances` ran {ops.count} tensor "
                              "operations — a Python loop, a few per row. One subtraction of (n, 1, d) and (1, m, d) "
                              "pairs every row with every row: write it without a loop.")


# ---------------------------------------------------------------------------- q2: view and transpose
def reference_from_rows(rows: torch.Tensor, seq: int) -> torch.Tensor:
    """``(batch * seq, d)`` → ``(seq, batch, d)``, the inverse of listing ``x[s, b]`` as row ``b * seq + s``."""
    return rows.view(-1, seq, rows.size(-1)).transpose(0, 1)


def layout_tensor(draw: Draw, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Every entry different, so a value in the wrong place always shows."""
    return torch.arange(math.prod(shape), dtype=dtype).view(shape) + draw.randn(*shape).to(dtype) * 0.01


def check_from_rows(ns) -> None:
    draw = Draw()
    seq, batch, d = draw.distinct(3, 2, 9)
    other = draw.distinct(3, 2, 9)
    cases = [Case(f"rows of {batch} sentences of {seq} tokens, d {d} (seq={seq})",
                  (layout_tensor(draw, (batch * seq, d)), seq)),
             Case(f"rows of 1 sentence of {seq} tokens, d {d} (seq={seq})", (layout_tensor(draw, (seq, d)), seq)),
             Case(f"rows of {batch} sentences of 1 token, d {d} (seq=1)", (layout_tensor(draw, (batch, d)), 1)),
             Case(f"float64 rows of {other[1]} sentences of {other[0]} tokens, d {other[2]} (seq={other[0]})",
                  (layout_tensor(draw, (other[1] * other[0], other[2]), torch.float64), other[0]))]
    check_function(learner_function(ns, "from_rows"), reference_from_rows, cases, "from_rows", atol=0, rtol=0,
                   twins=flipped(cases))


ROWS_MISTAKES = (
    Mistake("a view straight back", "the sentences interleave: a view keeps the order the rows sit in, and they sit "
            "sentence by sentence, so (seq, batch, d) read straight from them is wrong. Split them into (batch, seq, "
            "d) first (a view), then swap the first two axes", variant=lambda rows, seq: rows.view(seq, -1,
                                                                                                   rows.size(-1))),
    Mistake("stopped before the swap", "you stopped at (batch, seq, d): swap the first two axes to get "
            "(seq, batch, d)", variant=lambda rows, seq: rows.view(-1, seq, rows.size(-1))),
    Mistake("seq and batch confused", "the rows were split into seq groups of batch rows: they come as batch "
            "sentences of seq tokens each, so split into (rows.size(0) // seq, seq, d), then swap",
            variant=lambda rows, seq: rows.view(seq, -1, rows.size(-1)).transpose(0, 1)),
)


# ---------------------------------------------------------------------------- q3: nn.Module and state_dict
LAYOUT = ("self.layers = nn.ModuleList(...) holding one nn.Linear per pair of neighbouring sizes in "
          "[d_in, *hidden_sizes, d_out]")


class ReferenceMLP(nn.Module):
    """What a saved TinyMLP computes: ``self.layers``, ReLU between them (``activation``, ``output`` plant a bug)."""

    def __init__(self, d_in, hidden_sizes, d_out, activation=F.relu, output=lambda y: y):
        super().__init__()
        sizes = [d_in, *hidden_sizes, d_out]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.activation, self.output = activation, output

    def hidden(self, x):
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return x

    def forward(self, x):
        return self.output(self.layers[-1](self.hidden(x)))


def mlp_variant(**planted):
    """A TinyMLP class with a bug planted (the learner's signature: ``(d_in, hidden_sizes, d_out)``)."""
    return type("TinyMLP", (ReferenceMLP,), {"__init__": lambda self, d_in, hidden_sizes, d_out: ReferenceMLP.__init__(
        self, d_in, hidden_sizes, d_out, **planted)})


class InputReLU(ReferenceMLP):
    def forward(self, x):
        return super().forward(F.relu(x))


class DropoutMLP(ReferenceMLP):
    def forward(self, x):
        return self.layers[-1](F.dropout(self.hidden(x), 0.5, self.training))


class FirstHiddenOnly(ReferenceMLP):
    """ReLU after the first layer only: a deeper model collapses its later layers into one linear map."""

    def hidden(self, x):
        x = F.relu(self.layers[0](x))
        for layer in self.layers[1:-1]:
            x = layer(x)
        return x


def reference_mlp(sizes: tuple, state: dict[str, torch.Tensor]) -> ReferenceMLP:
    model = ReferenceMLP(*sizes)
    model.load_state_dict(state)
    return model


def right_in_eval_mode(case: Case, got, answer) -> bool:
    """Whether the answer's output is right once the model is in eval mode (dropout, or anything mode-dependent)."""
    sizes, state, x = case.args
    return same_output(build(answer, sizes, state).eval()(x), reference_mlp(sizes, state)(x))


MLP_MISTAKES = (
    Mistake("no activation", "linear layers in a row are just one linear map: put a ReLU between them",
            variant=mlp_variant(activation=lambda h: h)),
    *(Mistake(f"{name} instead of ReLU", f"the hidden layers went through {name}: they must go through ReLU "
              "(F.relu, torch.relu or nn.ReLU())", variant=mlp_variant(activation=function))
      for name, function in (("sigmoid", torch.sigmoid), ("tanh", torch.tanh), ("GELU", F.gelu))),
    Mistake("ReLU on the output", "the output went through ReLU too: only the hidden layers do; return the last "
            "layer's output as it is", variant=mlp_variant(output=F.relu)),
    Mistake("ReLU on the input", "the input went through ReLU too: only the outputs of the hidden layers do",
            variant=InputReLU),
    Mistake("ReLU after the first layer only", "with two or more hidden layers, a ReLU follows the first only: "
            "every layer but the last needs one, or the layers after the first collapse into one linear map",
            variant=FirstHiddenOnly),
    Mistake("dropout", "in eval mode your output is right, in training mode it is not (dropout?): the task has no "
            "dropout, the output must not depend on the mode", variant=DropoutMLP, shows=right_in_eval_mode),
)


def mlp_state(draw: Draw, d_in: int, hidden_sizes: list[int], d_out: int) -> dict[str, torch.Tensor]:
    sizes, state = [d_in, *hidden_sizes, d_out], {}
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        state[f"layers.{i}.weight"], state[f"layers.{i}.bias"] = draw.randn(b, a, scale=0.5), draw.randn(b, scale=0.5)
    return state


def check_registration(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """The learner's state_dict holds exactly the saved TinyMLP's keys and shapes, as parameters."""
    got = model.state_dict()
    hidden = [name for name, value in vars(model).items() if not name.startswith("_")
              and isinstance(value, (list, tuple, dict))
              and any(isinstance(v, nn.Module) for v in (value.values() if isinstance(value, dict) else value))]
    if hidden and set(state) - set(got):
        raise ExerciseFailure(f"your `TinyMLP` keeps layers in a plain Python {type(vars(model)[hidden[0]]).__name__} "
                              f"(`self.{hidden[0]}`): they are not registered, so parameters() and state_dict() miss "
                              f"them. Write {LAYOUT}.")
    missing, extra = [k for k in state if k not in got], [k for k in got if k not in state]
    if missing or extra:
        raise ExerciseFailure(f"your `TinyMLP`'s state_dict has {sorted(got) or 'no entries'}, a saved TinyMLP's has "
                              f"{list(state)}: the keys are the attribute names of the layers (and their places in "
                              f"the ModuleList), so a saved model loads into yours only if they match — {LAYOUT}, "
                              "bias included, nothing else that holds weights.")
    for key, value in state.items():
        if got[key].shape != value.shape or got[key].dtype != value.dtype:
            raise ExerciseFailure(f"your `TinyMLP.{key}` is {got[key].dtype} {tuple(got[key].shape)}, expected "
                                  f"{value.dtype} {tuple(value.shape)}: {LAYOUT} (nn.Linear(in, out).weight is "
                                  "stored as (out, in)).")
    parameters = dict(model.named_parameters())
    if any(key not in parameters for key in state):
        raise ExerciseFailure("a weight in your `TinyMLP`'s state_dict is not a parameter (a buffer or a plain "
                              "tensor): the optimizer never sees it. Let nn.Linear create the weights.")


def build(cls, sizes: tuple, state: dict[str, torch.Tensor]) -> nn.Module:
    """``cls(*sizes)`` with ``state`` loaded (its registration checked first)."""
    d_in, hidden_sizes, d_out = sizes
    model = instantiate(cls, "TinyMLP", "(d_in, hidden_sizes, d_out)", d_in, list(hidden_sizes), d_out)
    if not isinstance(model, nn.Module):
        raise ExerciseFailure("`TinyMLP(...)` should build an nn.Module: subclass nn.Module and call "
                              "super().__init__() first.")
    check_registration(model, state)
    model.load_state_dict(state)
    return model


def run_mlp(cls, case: Case):
    sizes, state, x = case.args
    try:
        return build(cls, sizes, state)(x)
    except Exception as error:  # noqa: BLE001 - compared as an outcome
        return type(error).__name__


def mlp_cases(draw: Draw) -> list[Case]:
    cases = []
    one, two = draw.distinct(3, 2, 9), draw.distinct(4, 2, 9)
    for sizes in ((one[0], [one[1]], one[2]), (two[0], [two[1], two[2]], two[3]),
                  (draw.integer(2, 9), [draw.integer(2, 9), 1, draw.integer(2, 9)], draw.integer(2, 9))):
        d_in, hidden_sizes, d_out = sizes
        batch, seq = draw.distinct(2, 3, 9)
        config = f"TinyMLP({d_in}, {hidden_sizes}, {d_out}) with a saved state loaded"
        state = mlp_state(draw, *sizes)
        cases += [Case(f"{config}, x of shape ({batch}, {d_in})", (sizes, state, draw.randn(batch, d_in))),
                  Case(f"{config}, x of shape (1, {d_in})", (sizes, state, draw.randn(1, d_in))),
                  Case(f"{config}, x of shape ({batch}, {seq}, {d_in})", (sizes, state, draw.randn(batch, seq, d_in)))]
    return cases


def check_tiny_mlp(ns) -> None:
    cls = ns["TinyMLP"]
    if not isinstance(cls, type) or not issubclass(cls, nn.Module):
        raise ExerciseFailure("`TinyMLP` should be a class that subclasses nn.Module (`class TinyMLP(nn.Module):`): "
                              "only then are its layers registered and it has state_dict() and load_state_dict().")
    if all("forward" not in vars(klass) for klass in cls.__mro__ if klass not in (nn.Module, object)):
        raise ExerciseFailure("`TinyMLP` has no method named `forward`: model(x) runs model.forward(x), so it must be "
                              "spelled exactly `def forward(self, x):`.")
    draw = Draw()
    for case in mlp_cases(draw):
        sizes, state, x = case.args
        try:
            model = build(cls, sizes, state)
        except ExerciseFailure:
            raise
        except Exception as error:  # noqa: BLE001 - the learner's __init__ may raise anything
            hint = " Call super().__init__() first in __init__." if "Module.__init__" in str(error) else ""
            raise ExerciseFailure(f"building {case.description.split(',')[0]}: your `TinyMLP` raised "
                                  f"{type(error).__name__}: {error}.{hint}") from None
        leaf = x.clone().requires_grad_()
        got = attempt(model, "TinyMLP", (leaf,), {})
        expected = reference_mlp(sizes, state)
        reference_input = x.clone().requires_grad_()
        want = expected(reference_input)
        gap = difference(got, want, "the output of your `TinyMLP`")
        if gap:
            raise Mismatch(f"on {case.description}: {gap}", case, got, cls, run_mlp, same_output)
        again = model(x)
        if not close(again.detach(), got.detach()):
            raise ExerciseFailure(f"on {case.description}: two calls on the same input differ — forward builds new "
                                  "layers or draws random numbers (dropout?). Create the layers in __init__ only.")
        probe = draw.randn(*want.shape)
        (want * probe).sum().backward()
        backward(got * probe, "TinyMLP", f"on {case.description}")
        ours, theirs = dict(expected.named_parameters()), dict(model.named_parameters())
        compare_gradients({**{f"parameter `{k}`": ours[k].grad for k in state}, "input `x`": reference_input.grad},
                          {**{f"parameter `{k}`": theirs[k].grad for k in state}, "input `x`": leaf.grad},
                          "TinyMLP", f"on {case.description}")
    check_same_in_both_modes(model, lambda m: m(x), "TinyMLP", case.description)
    check_deep_and_large(cls, draw)


def check_deep_and_large(cls, draw: Draw) -> None:
    """Past 10 layers (names "10" and "11" sort before "2") and on inputs ×1000 (a clip such as ReLU6 shows)."""
    width, d_in, d_out = draw.integer(5, 8), draw.integer(2, 6), draw.integer(2, 6)
    sizes = (d_in, [width] * 11, d_out)
    state = {key: value * (2 / value.size(-1)) ** 0.5 * 2 if key.endswith("weight") else value
             for key, value in mlp_state(draw, *sizes).items()}              # He-scaled: the signal lives 12 layers
    for what, x, message in (
            (f"TinyMLP({d_in}, [{width}] * 11, {d_out}), 12 layers", draw.randn(4, d_in),
             "right up to 10 layers, wrong with 12: your layers run in another order (names sorted as text put "
             "'10' and '11' before '2'?). Keep them in an nn.ModuleList and run them in the order they were built"),
            (f"TinyMLP({d_in}, [{width}] * 11, {d_out}), x ×1000", draw.randn(4, d_in, scale=1e3),
             "right on ordinary inputs, wrong on large ones: your nonlinearity clips large activations (ReLU6, "
             "hardtanh, clamp(max=…)?); ReLU is max(x, 0), unbounded above")):
        got = attempt(lambda x: build(cls, sizes, state)(x), "TinyMLP", (x,), {})
        with torch.no_grad():
            want = reference_mlp(sizes, state)(x)
        if isinstance(got, Raised):
            raise ExerciseFailure(f"on {what}: your `TinyMLP` raised {got.kind}: {got.message}.")
        if not (isinstance(got, torch.Tensor) and got.shape == want.shape
                and close(got.detach(), want, atol=1e-5 * float(x.abs().max()), rtol=1e-3)):
            raise ExerciseFailure(f"on {what}: {message}.")


# ---------------------------------------------------------------------------- q4: the fit that stalls
def reference_squared_error(predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over the N points of ``(predictions[i, 0] − targets[i])²``; predictions ``(N, 1)``, targets ``(N,)``."""
    return F.mse_loss(predictions[:, 0], targets)


SQUARED_ERROR_MISTAKES = (
    Mistake("the broadcast left in", "this is still the broadcast: (N, 1) minus (N,) lines the shapes up from the "
            "right and gives an (N, N) table of every prediction against every target. Make both shapes (N,) (or "
            "both (N, 1)) before subtracting",
            variant=lambda predictions, targets: ((predictions - targets) ** 2).mean()),
    Mistake("sum", "this is the sum of the squared errors: take their mean over the N points",
            variant=lambda predictions, targets: ((predictions[:, 0] - targets) ** 2).sum()),
    Mistake("root", "this is the root of the mean squared error: leave out the square root",
            variant=lambda predictions, targets: reference_squared_error(predictions, targets).sqrt()),
    Mistake("absolute errors", "these are absolute errors: square each difference",
            variant=lambda predictions, targets: (predictions[:, 0] - targets).abs().mean()),
    Mistake("mean before squaring", "the mean was taken before squaring (positive and negative errors cancel): "
            "square each difference, then average",
            variant=lambda predictions, targets: (predictions[:, 0] - targets).mean() ** 2),
    Mistake("one loss per point", "a loss is one number, a 0-d tensor: average the squared errors over the points",
            variant=lambda predictions, targets: (predictions[:, 0] - targets) ** 2),
)


def check_squared_error(ns) -> None:
    function = learner_function(ns, "fixed_squared_error")
    draw = Draw()
    n, other = draw.distinct(2, 3, 40)
    cases = [Case(f"predictions of shape ({n}, 1) and targets of shape ({n},)", (draw.randn(n, 1), draw.randn(n))),
             Case("a single point: predictions (1, 1), targets (1,)", (draw.randn(1, 1), draw.randn(1))),
             Case(f"float64 predictions ({other}, 1) and targets ({other},)",
                  (draw.randn(other, 1).double(), draw.randn(other).double()))]
    twins = [Case(f"{case.description}, other targets", (case.args[0], case.args[1] + 1)) for case in cases]
    check_function(function, reference_squared_error, cases, "fixed_squared_error", atol=1e-6, twins=twins)
    draw = Draw()
    n = draw.integer(3, 40)
    predictions, targets = draw.randn(n, 1).requires_grad_(), draw.randn(n)
    case = f"on predictions ({n}, 1) that require gradients"
    got = attempt(function, "fixed_squared_error", (predictions, targets), {})
    if not isinstance(got, torch.Tensor) or got.grad_fn is None:
        raise ExerciseFailure(f"{case}: the value is right, but backward cannot run through it (detached, or rebuilt "
                              "from Python numbers): compute the loss with tensor operations only, so loss.backward() "
                              "reaches the model's parameters.")
    backward(got, "fixed_squared_error", case)
    expected = predictions.detach().clone().requires_grad_()
    reference_squared_error(expected, targets).backward()
    compare_gradients({"`predictions`": expected.grad}, {"`predictions`": predictions.grad}, "fixed_squared_error",
                      case)


# ---------------------------------------------------------------------------- the exercises
q1 = Exercise(
    name="Every row against every row (broadcasting)", variables=("pairwise_sq_distances",),
    checker=check_pairwise_sq_distances,
    hints=("Which shapes must a and b take so that a single subtraction pairs every row of a with every row of b?",
           "1. a gets a new axis of size 1 in the middle → (n, 1, d); b one in front → (1, m, d). 2. Subtract: "
           "(n, m, d). 3. Square every entry and sum over the last axis → (n, m). No loop, no torch.cdist.",
           "The prediction: the (n, m, d) difference is the largest tensor, n·m·d numbers — for n = m = 1,000 and "
           "d = 512, 512,000,000 numbers, 2,048 MB at 4 bytes each, built on every call. The expansion ‖a‖² + ‖b‖² − "
           "2 a·b avoids it: a matrix product gives the (n, m) table directly (4 MB), the way lesson 03 scores "
           "queries against keys."),
    solution=solution_of("lesson00", "pairwise_sq_distances"), mistakes=DISTANCE_MISTAKES,
)

q2 = Exercise(
    name="Sentence by sentence (view and transpose)", variables=("from_rows",), checker=check_from_rows,
    hints=("A view keeps the order the numbers sit in. In which order do the rows sit — which shape can a view give "
           "them without moving anything?",
           "1. batch = rows.size(0) // seq. 2. A view splits the rows into (batch, seq, d): sentence by sentence, as "
           "they sit. 3. Swap the first two axes → (seq, batch, d)."),
    solution=solution_of("lesson00", "from_rows"), mistakes=ROWS_MISTAKES,
)

q3 = Exercise(
    name="A module and its state_dict", variables=("TinyMLP",), checker=check_tiny_mlp,
    hints=("A layer list assigned to self is registered only as an nn.ModuleList; its attribute name and each "
           "layer's place in it make the state_dict keys (layers.0.weight, ...). For the count: nn.Linear(a, b) "
           "holds a·b weights and b biases.",
           "The sizes in order are d_in, then each hidden size, then d_out; one nn.Linear per neighbouring pair, all "
           "in one nn.ModuleList named layers. "
           "forward: every layer but the last, each followed by F.relu; then the last layer alone. For the "
           "measurement, train a fresh TinyMLP per seed and per number of steps with train_steps, then score it with "
           "accuracy on the test and on the training strings."),
    solution=solution_of("lesson00", "TinyMLP"), mistakes=MLP_MISTAKES,
)

q4 = Exercise(
    name="The fit that stalls (find the bug)", variables=("fixed_squared_error",), checker=check_squared_error,
    hints=("Print predictions.shape, targets.shape and (predictions - targets).shape inside squared_error, then "
           "apply section 4's broadcasting rule to them.",
           "(N, 1) minus (N,): the (N,) counts as (1, N), so the difference is the (N, N) table of every prediction "
           "against every target, and its mean is not the error of prediction i on target i.",
           "The loss must be the mean over the N points of (predictions[i, 0] − targets[i])²: bring both to shape (N,) "
           "(drop the predictions' last axis) or both to (N, 1) (give the targets one), then square and take the "
           "mean.",
           "Why it stalls there: the broken loss is (1/N²) Σ_i Σ_j (p_i − y_j)², every prediction against every "
           "target. Write p_i − y_j = (p_i − ȳ) + (ȳ − y_j), square and average over j: which predictions make it "
           "smallest, and what is left that no model can change?"),
    solution=solution_of("lesson00", "fixed_squared_error"), mistakes=SQUARED_ERROR_MISTAKES,
)

