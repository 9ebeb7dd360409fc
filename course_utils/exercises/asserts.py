"""Checker helpers shared by every lesson; each raises :class:`~.core.ExerciseFailure` saying what is wrong and how to
fix it, so a lesson's checker reads as a list of expectations."""
from __future__ import annotations

import inspect
import math
import os
import random
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import torch.nn as nn

from .core import PLANTED, ExerciseFailure, Mismatch, code_objects, raised_by_the_learner

PACKAGE = "course_utils"
OWN_WORK = "(The package's version is there to move on with when you are stuck; this check wants yours.)"
GRAPH_CUT = ("something cuts the graph (.detach(), .data, .item(), torch.no_grad() or a new tensor built from values "
             "inside forward). Keep every step a tensor operation.")
PER_SHAPE = "(a cache, a mask or random numbers remembered per shape)"


def learner_function(ns, name: str):
    """The learner's ``name``, after checking it is a function."""
    function = ns[name]
    if isinstance(function, type) or not callable(function):
        raise ExerciseFailure(f"`{name}` should be a function (`def {name}(...):`), got {type(function).__name__}.")
    return function


def close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Same shape and equal up to float noise (NaN never equals anything)."""
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol))


def max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max())


def from_package(obj: Any) -> bool:
    """Whether ``obj`` (a class or function) is the package's own or built on it (a declared variant is not)."""
    own = vars(obj).values() if isinstance(obj, type) else [obj]
    if any(getattr(f, "__code__", None) in PLANTED for f in own):
        return False
    classes = obj.__mro__ if isinstance(obj, type) else (obj,)
    return any((getattr(c, "__module__", "") or "").split(".")[0] == PACKAGE for c in classes
               if c not in (object,))


def own_module_class(obj: Any, name: str, package_path: str) -> type[nn.Module]:
    """The learner's ``nn.Module`` subclass, rejected if it is (or inherits from) the package's block."""
    if not isinstance(obj, type):
        raise ExerciseFailure(f"`{name}` should be a class (`class {name}(nn.Module): ...`), "
                              f"got {type(obj).__name__}.")
    if from_package(obj):
        raise ExerciseFailure(f"`{name}` is the package's block ({package_path}), or built on it: use your own "
                              f"class — write `class {name}(nn.Module):` with its own __init__ and forward. "
                              + OWN_WORK.replace("version", "block"))
    if not issubclass(obj, nn.Module):
        raise ExerciseFailure(f"`{name}` should subclass nn.Module (`class {name}(nn.Module):`) and call "
                              "super().__init__() first, so its layers are registered as parameters.")
    return obj


def own_function(obj: Any, name: str, package_path: str):
    """The learner's function, rejected if it is the package's."""
    if not callable(obj):
        raise ExerciseFailure(f"`{name}` should be a function, got {type(obj).__name__}.")
    if from_package(obj):
        raise ExerciseFailure(f"`{name}` is the package's {package_path}: use your own function — write "
                              f"`def {name}(...):` in the cell above.")
    package_name = package_path.rsplit(".", 1)[-1]
    called = [getattr(obj, "__globals__", {}).get(n) for n in getattr(getattr(obj, "__code__", None), "co_names", ())]
    if any(from_package(f) and getattr(f, "__name__", "") == package_name for f in called if callable(f)):
        raise ExerciseFailure(f"your `{name}` hands the work to the package's {package_path}: use your own "
                              "function — write the steps yourself.")
    return obj


def instantiate(cls: type[nn.Module], name: str, signature: str, *args, **kwargs) -> nn.Module:
    """``cls(*args, **kwargs)``; a constructor with the wrong parameters is told the expected ``signature``."""
    try:
        inspect.signature(cls).bind(*args, **kwargs)
    except TypeError as error:
        raise ExerciseFailure(f"`{name}(...)` cannot be called as {name}{signature} ({error}): give __init__ "
                              f"exactly these parameters.") from None
    return cls(*args, **kwargs)


def copy_weights(package_block: nn.Module, learner_block: nn.Module, name: str, layout: str,
                 extra_hint: str = "") -> None:
    """Copy the package block's parameters (not buffers) into the learner's; name every missing, extra, shared or
    misshaped one. ``layout``: the expected attribute names; ``extra_hint``: what an extra parameter usually means."""
    expected = dict(package_block.named_parameters())
    got = dict(learner_block.named_parameters(remove_duplicate=False))
    missing = [key for key in expected if key not in got]
    extra = [key for key in got if key not in expected]
    if missing:
        shapes = ", ".join(f"`{key}` {tuple(expected[key].shape)}" for key in missing[:6])
        more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
        found = ", ".join(f"`{key}`" for key in extra[:6]) or "nothing else"
        raise ExerciseFailure(f"your `{name}` has no parameter {shapes}{more} (it has {found}). The checker copies "
                              f"the package's weights into yours by name, so use the package's attribute names: "
                              f"{layout}.")
    seen: dict[int, str] = {}
    for key, p in learner_block.named_parameters(remove_duplicate=False):
        first, second = seen.setdefault(id(p), key), key
        if first != second:
            raise ExerciseFailure(f"in your `{name}`, `{first}` and `{second}` are one and the same parameter: a "
                                  "module was reused where a new one was meant (e.g. [layer] * n, or the same "
                                  "LayerNorm for two sublayers). Create a separate module for each place.")
    if extra:
        shapes = ", ".join(f"`{key}` {tuple(got[key].shape)}" for key in extra[:6])
        raise ExerciseFailure(f"your `{name}` has parameters the package's block does not: {shapes}. {extra_hint}"
                              f"Expected exactly: {layout}.")
    for key, value in expected.items():
        if tuple(got[key].shape) != tuple(value.shape):
            raise ExerciseFailure(f"your `{name}.{key}` has shape {tuple(got[key].shape)}, the package's has "
                                  f"{tuple(value.shape)}: {layout}. (nn.Linear(in, out).weight is stored as "
                                  "(out, in).)")
        if got[key].dtype != value.dtype:
            raise ExerciseFailure(f"your `{name}.{key}` is {got[key].dtype}, the package's {value.dtype}: create "
                                  "parameters in the default float32 (no .double(), no dtype=torch.float64).")
    with torch.no_grad():
        for key, value in expected.items():
            got[key].copy_(value)


def randomise_norms(module: nn.Module, generator: torch.Generator | None = None) -> None:
    """Give every LayerNorm a gain and bias other than 1 and 0, so a misplaced or missing norm always shows."""
    generator = generator or torch.Generator().manual_seed(3)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=generator))
                m.bias.copy_(0.5 * torch.randn(m.bias.shape, generator=generator))


def gradients(module: nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor | None]:
    """Gradients of every parameter and input after ``backward()`` (``None`` where none arrived)."""
    grads = {f"parameter `{key}`": p.grad for key, p in module.named_parameters()}
    grads.update({f"input `{key}`": t.grad for key, t in inputs.items()})
    return grads


def compare_gradients(expected: dict[str, torch.Tensor | None], got: dict[str, torch.Tensor | None],
                      name: str, case: str) -> None:
    """Gradients of the same parameters/inputs must agree; a missing one means the graph was cut."""
    for key, reference in expected.items():
        grad = got.get(key)
        if reference is None:
            continue
        if grad is None or (grad.abs().max() == 0 and reference.abs().max() > 1e-6):  # float noise is no gradient
            raise ExerciseFailure(f"{case}: the output is right but no gradient reaches the {key} of your `{name}`: "
                                  + GRAPH_CUT)
        if not close(grad, reference, atol=1e-4, rtol=1e-3):
            raise ExerciseFailure(f"{case}: the output is right but the gradient of the {key} differs (by up to "
                                  f"{max_difference(grad, reference):.3g}): an in-place change or a detached "
                                  "intermediate in forward alters backpropagation. Write forward with "
                                  "out-of-place operations only.")


def backward(value: torch.Tensor, name: str, case: str) -> None:
    """``value.sum().backward()`` through the learner's code, explaining a cut graph or an in-place change."""
    if not value.requires_grad:
        raise ExerciseFailure(f"{case}: the output of your `{name}` carries no gradient: " + GRAPH_CUT)
    try:
        value.sum().backward()
    except RuntimeError as error:
        line = (str(error).strip().splitlines() or [""])[0]
        hint = (" An in-place operation (masked_fill_, +=, relu_, …) changed a tensor autograd still needs: use "
                "out-of-place operations (masked_fill, x = x + …)." if "inplace" in line or "in-place" in line else "")
        raise ExerciseFailure(f"{case}: the output is right but backpropagating through your `{name}` fails "
                              f"({type(error).__name__}: {line}).{hint}") from None


def probe_for(expected: torch.Tensor) -> torch.Tensor:
    """A fixed random tensor like ``expected``: backpropagating ``(output * probe).sum()`` tests every entry."""
    return torch.randn(expected.shape, generator=torch.Generator().manual_seed(1), dtype=expected.dtype)


def backpropagate_both(package: nn.Module, expected: torch.Tensor, learner: nn.Module, got: torch.Tensor,
                       name: str, case: str) -> None:
    """Backpropagate the same :func:`probe_for` through the package's block and the learner's (grads zeroed)."""
    probe = probe_for(expected)
    package.zero_grad()
    (expected * probe).sum().backward()
    learner.zero_grad()
    backward(got * probe, name, case)


# ---------------------------------------------- contract checks on random inputs (every lesson's checker uses them)
def check_seed() -> int:
    """A fresh seed for each check (``COURSE_CHECK_SEED`` fixes it, for reproducing a report)."""
    fixed = os.environ.get("COURSE_CHECK_SEED")
    return int(fixed) if fixed else random.SystemRandom().randrange(2 ** 31)


class Draw:
    """The random inputs of one check, all from one seed: sizes (no two equal where asked) and tensors."""

    def __init__(self, seed: int | None = None, values: int | None = None) -> None:
        self.seed = check_seed() if seed is None else seed
        self.rng = random.Random(self.seed)                       # sizes, choices, positions
        self.values_seed = self.seed + 1 if values is None else values
        self.values = random.Random(self.values_seed)             # tensor contents

    def twin(self) -> "Draw":
        """A draw of the same sizes and choices with other tensor values (a second input of the same shape)."""
        return Draw(self.seed, self.values_seed + 7919)

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.values.randrange(2 ** 31))

    def integer(self, low: int, high: int) -> int:
        """One int in ``[low, high]``."""
        return self.rng.randint(low, high)

    def distinct(self, count: int, low: int, high: int, avoid: tuple[int, ...] = ()) -> list[int]:
        """``count`` different ints in ``[low, high]``, none in ``avoid`` — so swapping two axes always shows."""
        pool = [n for n in range(low, high + 1) if n not in avoid]
        return self.rng.sample(pool, count)

    def choice(self, options):
        return self.rng.choice(list(options))

    def randn(self, *shape: int, scale: float = 1.0) -> torch.Tensor:
        return torch.randn(*shape, generator=self.generator()) * scale

    def randint(self, low: int, high: int, shape: tuple[int, ...]) -> torch.Tensor:
        """Integers in ``[low, high)``, as ``torch.long``."""
        return torch.randint(low, high, shape, generator=self.generator())


class Planted:
    """``obj`` with methods replaced to plant a bug in a declared variant: ``Planted(opt, zero_grad=lambda original,
    *args, **kwargs: None)``; each replacement receives the original bound method first."""

    def __init__(self, obj: Any, **replacements: Callable) -> None:
        self._obj, self._replacements = obj, replacements

    def __getattr__(self, name: str) -> Any:
        if name in self._replacements:
            original = getattr(self._obj, name)
            return lambda *args, **kwargs: self._replacements[name](original, *args, **kwargs)
        return getattr(self._obj, name)


@dataclass
class Case:
    """One input a checker tries: what the learner sees in a message, and the arguments."""

    description: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


def planted(frame) -> bool:
    """Whether ``frame`` runs inside a declared mistake's variant (it may use the package's reference)."""
    while frame is not None:
        if frame.f_code in PLANTED:
            return True
        frame = frame.f_back
    return False


class OwnWork:
    """While active, notices any call into ``forbidden`` (``{what: object}``, built-in functions too), by whatever
    path it is reached (another name, a wrapper, a subclass, ``getattr``), so a checker can say "use your own"."""

    def __init__(self, forbidden: dict[str, Any] | None = None) -> None:
        self.codes: dict[Any, str] = {}
        self.builtins: dict[int, str] = {}
        for what, obj in (forbidden or {}).items():
            codes = code_objects(obj)
            if codes:
                self.codes.update(dict.fromkeys(codes, what))
            else:
                self.builtins[id(obj)] = what
        self.used: str | None = None

    def _profile(self, frame, event, arg) -> None:
        if self.used is not None:
            return
        if event == "call":
            used = self.codes.get(frame.f_code)
            if used is not None and not planted(frame.f_back):
                self.used = used
        elif event == "c_call":
            used = self.builtins.get(id(arg))
            if used is not None and not planted(frame):
                self.used = used

    def __enter__(self) -> "OwnWork":
        self.used = None
        if self.codes or self.builtins:
            self._previous = sys.getprofile()
            sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        if self.codes or self.builtins:
            sys.setprofile(self._previous)


def call_learner(function: Callable, name: str, case: str, *args, forbidden: dict[str, Any] | None = None,
                 error_hint: Callable[[BaseException], str | None] | None = None, **kwargs) -> Any:
    """``function(*args, **kwargs)``, a crash reported on ``case`` (``error_hint(error)`` may explain it), any call
    into ``forbidden`` refused."""
    result = attempt(function, name, args, kwargs, forbidden)
    if isinstance(result, Raised):
        hint = error_hint(result.error) if error_hint else None
        raise ExerciseFailure(f"on {case}: your `{name}` raised {result.kind}: {result.message}"
                              + (f". {hint}" if hint else ""))
    return result


def refuse_borrowed_work(guard: OwnWork, name: str) -> None:
    """Fail if the learner's code called what ``guard`` forbids."""
    if guard.used:
        raise ExerciseFailure(f"your `{name}` calls {guard.used} to do the work: use your own code — write the "
                              "steps yourself. " + OWN_WORK)


def snapshot(value: Any) -> Any:
    """A deep copy of the tensors, lists, tuples and dicts in ``value`` (to see later whether they were changed)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v) for v in value) if not hasattr(value, "_fields") else value
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    return value


def same_content(a: Any, b: Any) -> bool:
    """Whether two snapshots hold the same values (NaN equal to NaN, dtype and shape included)."""
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and bool(torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, 0.0, 0.0, True))))
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(same_content(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_content(a[k], b[k]) for k in a)
    return a is b or a == b


def check_inputs_kept(before: dict[str, Any], after: dict[str, Any], name: str, case: str) -> None:
    """Each argument the learner's code received still holds what it held before the call."""
    for argument, original in before.items():
        if not same_content(original, snapshot(after[argument])):
            raise ExerciseFailure(f"on {case}: your `{name}` changed its input `{argument}` in place. The caller "
                                  "still needs it: build a new tensor/list (out-of-place operations, e.g. "
                                  "masked_fill instead of masked_fill_, x = x + … instead of x += …).")


def module_state(module: nn.Module) -> dict[str, Any]:
    """Each submodule's mode, each parameter's ``requires_grad``, every parameter's and buffer's values."""
    return {"mode": {key or "(the model itself)": m.training for key, m in module.named_modules()},
            "requires_grad": {key: p.requires_grad for key, p in module.named_parameters()},
            "values": {key: v.detach().clone() for key, v in module.state_dict(keep_vars=True).items()}}


def check_model_kept(before: dict[str, Any], module: nn.Module, label: str, name: str, case: str,
                     allowed: tuple[str, ...] = ()) -> None:
    """``module`` still has its :func:`module_state` ``before``, but for the values of the keys in ``allowed``."""
    after = module_state(module)
    for key, training in before["mode"].items():
        if after["mode"].get(key, training) != training:
            raise ExerciseFailure(f"on {case}: your `{name}` left `{label}` ({key}) in "
                                  f"{'training' if after['mode'][key] else 'eval'} mode; it was given in "
                                  f"{'training' if training else 'eval'} mode. A model's mode is the caller's: do not "
                                  "switch it beyond the task (or restore it before returning).")
    for key, flag in before["requires_grad"].items():
        if after["requires_grad"].get(key, flag) != flag:
            raise ExerciseFailure(f"on {case}: your `{name}` changed `{label}.{key}.requires_grad` to "
                                  f"{not flag}: that freezes (or unfreezes) a weight beyond the task.")
    for key, value in before["values"].items():
        if key in allowed:
            continue
        now = after["values"].get(key)
        if now is None or not same_content(value, now):
            what = "removed" if now is None else "changed the values of"
            raise ExerciseFailure(f"on {case}: your `{name}` {what} `{label}.{key}`: a side effect on the model "
                                  "beyond the task. Leave every other weight, bias and buffer as it was given.")


def check_same_in_both_modes(module: nn.Module, run: Callable[[nn.Module], Any], name: str, case: str) -> None:
    """``run(module)`` gives the same output in training and in eval mode (the block has nothing random)."""
    modes = [(m, m.training) for m in module.modules()]
    try:
        with torch.no_grad():
            trained, evaluated = run(module.train()), run(module.eval())
    finally:
        for m, training in modes:
            m.training = training
    if not same_output(trained, evaluated):
        raise ExerciseFailure(f"on {case}: your `{name}` gives another output in eval mode than in training mode, "
                              "with no dropout in the task: a step depends on self.training (a nonlinearity or a "
                              "branch applied in one mode only). Compute the same thing in both modes.")


def check_block_scales(learner: Callable[[torch.Tensor], Any], reference: Callable[[torch.Tensor], Any],
                       x: torch.Tensor, name: str, case: str, scales: tuple[float, ...] = (1e3, 1e-3),
                       weights: tuple[nn.Module, nn.Module] | None = None,
                       mismatch: Callable[[str], Mismatch] | None = None) -> None:
    """``learner(x)`` against ``reference(x)`` (eval mode, weights shared) on ``x`` × each of ``scales``, then with
    every parameter of ``weights`` (the two modules) ×10, where the reference is finite: behind a LayerNorm only
    larger weights show an eps, a clipped activation or an unstable softmax. ``mismatch(message)``: the refusal as a
    :class:`~.core.Mismatch`, so the exercise's mistake table can name it."""
    refuse = mismatch or ExerciseFailure
    runs = [(scale, f"x ×{scale:g}", 1.0) for scale in scales] + ([(1.0, "every weight ×10", 10.0)] if weights else [])
    for scale, change, factor in runs:
        with torch.no_grad():
            for p in (p for module in (weights or ()) for p in module.parameters()):
                p.mul_(factor)
            try:
                expected = reference(x * scale)
                got = attempt(learner, name, (x * scale,), {})
            finally:
                for p in (p for module in (weights or ()) for p in module.parameters()):
                    p.div_(factor)
        if not finite(expected):
            continue
        where = f"on {case}, {change}"
        if isinstance(got, Raised):
            raise refuse(f"{where}: your `{name}` raised {got.kind}: {got.message}.")
        got, expected = (got[0], expected[0]) if isinstance(expected, tuple) else (got, expected)
        gap = difference(got, expected, f"the output of your `{name}`", 1e-5 * max(scale * factor, 1.0), 1e-3)
        if gap and not finite(got):
            raise refuse(f"{where}: your `{name}` returns inf or NaN where the package's is finite: a formula "
                         "overflows on such inputs (a softmax without the maximum subtracted?).")
        if gap:
            raise refuse(f"{where}: {gap} — right on ordinary inputs, wrong on these: a constant that only matters "
                         "here differs from the task's (a LayerNorm eps other than the default 1e-5, a clipped "
                         "activation such as ReLU6, a fill such as -1e4).")


def check_support(drawn: torch.Tensor, low: int, high: int, name: str, case: str, what: str) -> None:
    """The values ``drawn`` (enough that every value shows) cover exactly ``[low, high)``."""
    seen, wanted = set(torch.unique(drawn).tolist()), set(range(low, high))
    outside, missing = sorted(seen - wanted), sorted(wanted - seen)
    if outside or missing:
        raise ExerciseFailure(f"on {case}: your `{name}`'s {what} should be drawn from every id in [{low}, {high}), "
                              + (f"but it drew {outside[:5]}" if outside else f"but never drew {missing[:5]}")
                              + f" over {drawn.numel()} draws: check both ends of the random range "
                              "(torch.randint's high is excluded).")


def show(value: Any) -> str:
    """A value for a message: numbers with enough digits to see a difference."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return show(value.item())
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"


def difference(got: Any, expected: Any, what: str = "the result", atol: float = 1e-5, rtol: float = 1e-4) -> str | None:
    """``None`` if ``got`` fulfils the contract of ``expected`` (type, dtype, shape, device, values), else what
    differs; numpy/0-d integers pass for an int, any sequence or 1-D tensor for a list, no tensor for a float."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{what} should be a torch.Tensor, got {type(got).__name__}"
        if tuple(got.shape) != tuple(expected.shape):
            return f"{what} should have shape {tuple(expected.shape)}, got {tuple(got.shape)}"
        if got.dtype != expected.dtype:
            return (f"{what} should be a {expected.dtype} tensor, got {got.dtype} (the values may be right: keep the "
                    "dtype of the inputs — no float64 constants or .double(), ids stay torch.long)")
        if got.device != expected.device:
            return f"{what} should be on {expected.device}, got {got.device}"
        got_d, expected_d = got.detach(), expected.detach()
        if expected.is_floating_point() or expected.is_complex():
            nan_mismatch = torch.isnan(got_d) & ~torch.isnan(expected_d)
            if nan_mismatch.any():
                index = tuple(int(i) for i in nan_mismatch.nonzero()[0])
                return f"{what} holds NaN at index {index} where {show(expected_d[index])} belongs"
            if close(got_d, expected_d, atol=atol, rtol=rtol):
                return None
            gap = (got_d.double() - expected_d.double()).abs().nan_to_num(float("inf"))
        else:
            if torch.equal(got_d, expected_d):
                return None
            gap = (got_d != expected_d).double()
        index = tuple(int(i) for i in (gap == gap.max()).nonzero()[0]) if gap.dim() else ()
        where = f" at index {index}" if index else ""
        return f"{what} differs{where}: expected {show(expected_d[index])}, got {show(got_d[index])}"
    if isinstance(expected, bool):
        if not isinstance(got, (bool, np.bool_)):
            return f"{what} should be a bool (True/False), got {type(got).__name__}"
        return None if bool(got) == expected else f"{what} should be {expected}, got {bool(got)}"
    if isinstance(expected, int):
        if isinstance(got, torch.Tensor) and got.dim() == 0 and not got.is_floating_point() \
                and got.dtype != torch.bool:
            got = int(got)
        if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, np.integer)):
            return (f"{what} should be an int, got {type(got).__name__} {show(got)}"
                    + (" (use // for whole numbers, or int(...))" if isinstance(got, (float, np.floating)) else ""))
        return None if int(got) == expected else f"{what} should be {expected}, got {int(got)}"
    if isinstance(expected, float):
        if isinstance(got, torch.Tensor):
            return (f"{what} should be a Python float, got a tensor {show(got)}: turn it into a number with "
                    ".item() or float(...)")
        if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, float, np.integer, np.floating)):
            return f"{what} should be a number (float), got {type(got).__name__}"
        if math.isclose(float(got), expected, rel_tol=rtol, abs_tol=atol):
            return None
        return f"{what} should be {expected:.6g}, got {float(got):.6g}"
    if isinstance(expected, (list, tuple)):
        if isinstance(got, torch.Tensor) and got.dim() == 1:
            got = got.tolist()
        elif isinstance(got, np.ndarray) and got.ndim == 1:
            got = got.tolist()
        if isinstance(expected, tuple) and not isinstance(got, (tuple, list)):
            return f"{what} should be a tuple of {len(expected)}, got {type(got).__name__}"
        if not isinstance(got, (list, tuple, range)):
            return f"{what} should be a list, got {type(got).__name__}"
        got = list(got)
        if len(got) != len(expected):
            return f"{what} should have {len(expected)} items, got {len(got)}: {show(got)} (expected {show(expected)})"
        for i, (g, e) in enumerate(zip(got, expected)):
            gap = difference(g, e, f"item {i} of {what}", atol, rtol)
            if gap:
                return gap
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{what} should be a dict, got {type(got).__name__}"
        if set(got) != set(expected):
            return f"{what} should have the keys {sorted(expected, key=str)}, got {sorted(got, key=str)}"
        for key in expected:
            gap = difference(got[key], expected[key], f"{what}[{key!r}]", atol, rtol)
            if gap:
                return gap
        return None
    return None if got == expected else f"{what} should be {show(expected)}, got {show(got)}"


@dataclass(frozen=True)
class Raised:
    """What an answer raised instead of returning, compared by type and first line (a crash is an output too)."""

    kind: str
    message: str
    error: BaseException = field(compare=False, repr=False)


def outcome(function: Callable, name: str, case: Case, forbidden: dict[str, Any] | None = None) -> Any:
    """``function(*case.args, **case.kwargs)`` on copies of the inputs (see :func:`attempt`)."""
    return attempt(function, name, snapshot(case.args), snapshot(case.kwargs), forbidden)


def attempt(function: Callable, name: str, args: tuple, kwargs: dict, forbidden: dict[str, Any] | None = None) -> Any:
    """``function(*args, **kwargs)``, any call into ``forbidden`` refused; a crash comes back as :class:`Raised` (the
    learner's own ``raise NotImplementedError`` is re-raised: "not attempted")."""
    guard = OwnWork(forbidden)
    try:
        with guard:
            result = function(*args, **kwargs)
    except ExerciseFailure:
        raise
    except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
        refuse_borrowed_work(guard, name)
        if isinstance(error, NotImplementedError) and raised_by_the_learner(error):
            raise
        return Raised(type(error).__name__, (str(error).strip().splitlines() or [""])[0], error)
    refuse_borrowed_work(guard, name)
    return result


def check_function(function: Callable, reference: Callable, cases: list[Case], name: str, *,
                   forbidden: dict[str, Any] | None = None,
                   error_hint: Callable[[BaseException], str | None] | None = None, twins: list[Case] = (),
                   prepare: Callable[[Callable], Callable] = lambda answer: answer, probes: list[Case] = (),
                   scales: tuple[float, ...] = (1e3, 1e-3), offsets: tuple[float, ...] = (),
                   atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """The learner's ``function`` against the ``reference`` on every case: the contract (:func:`difference`), inputs
    and models given kept, no call into ``forbidden``, no state kept across calls (``twins``: each case with other
    values, run right after it), the same answer with the floating inputs × each of ``scales`` and + each of
    ``offsets`` where the reference stays finite (an unstable formula, an eps, a clip, a fill, a cancellation show).
    A difference or a crash raises :class:`~.core.Mismatch` (a variant naming it must agree on ``probes`` too).
    ``prepare(answer)`` adapts an answer before it runs; ``error_hint(error)`` explains a typical crash."""
    try:
        names = list(inspect.signature(reference).parameters)
    except (TypeError, ValueError):
        names = []
    probes = tuple(probes)
    ordered = [c for pair in zip(cases, twins) for c in pair] + list(cases)[len(twins):] if twins else list(cases)

    def run(answer, case):
        return outcome(prepare(answer), name, case, forbidden)

    def same(a, b) -> bool:
        return same_output(a, b, atol, rtol)

    previous: dict[tuple, list] = {}   # shape -> [(expected, got)] of the cases that passed
    for case in ordered:
        expected = reference(*snapshot(case.args), **snapshot(case.kwargs))
        args, kwargs = snapshot(case.args), snapshot(case.kwargs)
        labels = [names[i] if i < len(names) else f"argument {i + 1}" for i in range(len(args))]
        before = {**{label: snapshot(a) for label, a in zip(labels, args)}, **snapshot(kwargs)}
        models = {label: module_state(a) for label, a in zip(labels, args) if isinstance(a, nn.Module)}
        got = attempt(prepare(function), name, args, kwargs, forbidden)
        if isinstance(got, Raised):
            hint = error_hint(got.error) if error_hint else None
            raise Mismatch(f"on {case.description}: your `{name}` raised {got.kind}: {got.message}"
                           + (f". {hint}" if hint else ""), case, got, function, run, same, probes)
        check_inputs_kept(before, {**dict(zip(labels, args)), **kwargs}, name, case.description)
        for label, state in models.items():
            check_model_kept(state, dict(zip(labels, args))[label], label, name, case.description)
        gap = difference(got, expected, f"the result of `{name}`", atol, rtol)
        if gap and any(same(got, earlier) and not same(expected, wanted)
                       for wanted, earlier in previous.get(shape_key(case), ())):
            raise ExerciseFailure(f"on {case.description}: your `{name}` returned what it returned for the previous "
                                  "input of the same shape: something is kept across calls " + PER_SHAPE
                                  + ". Compute everything from this call's inputs.")
        if gap:
            twin = any(case is t for t in twins) and shape_key(case) in previous
            raise Mismatch(f"on {case.description}: {gap}" + (
                " — right on the previous input of the same shape, wrong on this one: something may be kept across "
                f"calls {PER_SHAPE}; compute everything from this call's inputs" if twin else "") + ".",
                           case, got, function, run, same, probes, expected)
        previous.setdefault(shape_key(case), []).append((expected, snapshot(got)))
    for case in cases:
        for scale, shift in [(scale, 0.0) for scale in scales] + [(1.0, shift) for shift in offsets]:
            scaled = scaled_case(case, scale, shift)
            if scaled is None:
                continue
            expected = reference(*snapshot(scaled.args), **snapshot(scaled.kwargs))
            if not finite(expected):
                continue
            got = attempt(prepare(function), name, snapshot(scaled.args), snapshot(scaled.kwargs), forbidden)
            if isinstance(got, Raised):
                raise Mismatch(f"on {scaled.description}: your `{name}` raised {got.kind}: {got.message}", scaled, got,
                               function, run, same, probes)
            gap = difference(got, expected, f"the result of `{name}`", atol * max(scale, 10.0 if shift else 1.0),
                             rtol * 10)
            if gap and not finite(got):
                raise ExerciseFailure(f"on {scaled.description}: your `{name}` returns inf or NaN where the package's "
                                      "result is finite: the formula overflows or divides by almost 0 on such inputs. "
                                      "Use the numerically stable form (subtract the maximum before exp — "
                                      "torch.softmax and torch.log_softmax do — and never take the log of a "
                                      "probability that can round to 0).")
            if gap and shift:
                raise Mismatch(f"on {scaled.description}: {gap} — right on ordinary inputs, wrong once a large offset "
                               "is added: the formula cancels catastrophically (such as E[x²] − E[x]² for a variance, "
                               "a difference of two large sums). Compute from the differences, e.g. ((x − "
                               "mean)²).mean().", scaled, got, function, run, same, probes, expected)
            if gap:
                raise Mismatch(f"on {scaled.description}: {gap} — right on ordinary inputs, wrong on these: a "
                               "constant that only matters here (an eps, a clip such as ReLU6 or clamp(max=…), a fill "
                               "such as -1e4 where -inf or the dtype's minimum belongs, a fixed offset) differs from "
                               "the task's.", scaled, got, function, run, same, probes)


def check_input_gradients(function: Callable, reference: Callable, case: Case, name: str,
                          forbidden: dict[str, Any] | None = None, labels: tuple[str, ...] = ()) -> None:
    """Gradients reach the floating inputs of ``case`` (named by ``labels``) as through ``reference`` (one probe)."""
    def leaves():
        return [a.detach().clone().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                for a in case.args]
    expected_args, got_args = leaves(), leaves()
    expected = reference(*expected_args, **snapshot(case.kwargs))
    probe = probe_for(expected)
    (expected * probe).sum().backward()
    got = call_learner(function, name, case.description, *got_args, forbidden=forbidden, **snapshot(case.kwargs))
    if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
        raise ExerciseFailure(f"on {case.description}: your `{name}` should return a tensor of shape "
                              f"{tuple(expected.shape)}, got {show(got)}.")
    backward(got * probe, name, f"on {case.description}")
    floats = [(label, mine, theirs) for label, mine, theirs in zip(labels, got_args, expected_args)
              if isinstance(theirs, torch.Tensor) and theirs.grad is not None]
    compare_gradients({f"input `{label}`": theirs.grad for label, _, theirs in floats},
                      {f"input `{label}`": mine.grad for label, mine, _ in floats}, name, f"on {case.description}")


def flipped(cases: list[Case]) -> list[Case]:
    """Twins for :func:`check_function`: each case with every tensor argument's rows (first axis) reversed."""
    return [Case(f"{case.description}, rows in reverse order",
                 tuple(a.flip(0) if isinstance(a, torch.Tensor) and a.dim() else a for a in case.args),
                 dict(case.kwargs)) for case in cases]


def scaled_case(case: Case, scale: float, shift: float = 0.0) -> Case | None:
    """``case`` with every floating tensor multiplied by ``scale``, then ``shift`` added (``None`` if it has none)."""
    def scaled(value):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value * scale + shift
        if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            return type(value)(scaled(v) for v in value)
        return value
    args, kwargs = scaled(tuple(case.args)), {k: scaled(v) for k, v in case.kwargs.items()}
    if same_content(snapshot(args), snapshot(tuple(case.args))) and same_content(kwargs, case.kwargs):
        return None
    change = f"+ {shift:g}" if shift else f"×{scale:g}"
    return Case(f"{case.description}, with the floating inputs {change}", args, kwargs)


def finite(value: Any) -> bool:
    """Whether every number in ``value`` (a tensor, a number or a sequence of them) is finite."""
    if isinstance(value, torch.Tensor):
        return not value.is_floating_point() or bool(torch.isfinite(value).all())
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(finite(v) for v in value)
    return True


def same_output(a: Any, b: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Whether two answers gave the same output (NaN matching NaN; a crash equals the same crash)."""
    if isinstance(a, Raised) or isinstance(b, Raised):
        return a == b
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.is_floating_point() and b.is_floating_point():
        if a.shape != b.shape or not torch.equal(torch.isnan(a), torch.isnan(b)):
            return False
        a, b = a.detach().nan_to_num(0.0), b.detach().nan_to_num(0.0)
    return difference(a, b, "", atol, rtol) is None and difference(b, a, "", atol, rtol) is None


def shape_key(case: Case) -> tuple:
    """The shapes (and non-tensor values) of a case's inputs."""
    def key(value):
        if isinstance(value, torch.Tensor):
            return ("tensor", tuple(value.shape), value.dtype)
        if isinstance(value, (list, tuple)):
            return tuple(key(v) for v in value)
        return repr(value)
    return key(tuple(case.args)), key(tuple(sorted(case.kwargs.items())))


def load_weights_by_name(learner: nn.Module, expected: dict[str, torch.Tensor], name: str, layout: str) -> nn.Module:
    """Copy ``expected`` into the learner's module by parameter name (names and shapes must match); eval mode."""
    got = dict(learner.named_parameters())
    if set(got) != set(expected) or any(got[k].shape != v.shape for k, v in expected.items()):
        shapes = ", ".join(f"`{k}` {tuple(p.shape)}" for k, p in got.items()) or "none"
        raise ExerciseFailure(f"your `{name}` has the parameters {shapes}; the checker loads the package's weights "
                              f"into yours by name, so it needs exactly: {layout}.")
    with torch.no_grad():
        for key, value in expected.items():
            got[key].copy_(value)
    return learner.eval()
