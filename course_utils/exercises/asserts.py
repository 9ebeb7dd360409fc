"""Checker helpers shared by every lesson: tensor type/shape/closeness, the learner's own class, copying weights.

Every helper raises :class:`~course_utils.exercises.core.ExerciseFailure` with a message that says what is wrong
and how to fix it, so a lesson's checker reads as a list of expectations.
"""
from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn as nn

from .core import ExerciseFailure

PACKAGE = "course_utils"


def as_tensor(value: Any, name: str, shape: tuple[int, ...] | None = None, what: str = "") -> torch.Tensor:
    """``value`` detached, after checking it is a tensor (of ``shape``, described by ``what``, when given)."""
    if not isinstance(value, torch.Tensor):
        raise ExerciseFailure(f"`{name}` should return a torch.Tensor, got {type(value).__name__}.")
    if shape is not None and tuple(value.shape) != tuple(shape):
        layout = f" = {what}" if what else ""
        raise ExerciseFailure(f"`{name}` should return shape {tuple(shape)}{layout}, got {tuple(value.shape)}.")
    return value.detach()


def call_with_copies(function, name: str, *args):
    """Call the learner's ``function`` on *copies* of its list arguments and report if it changed them."""
    copies = [list(a) if isinstance(a, list) else a for a in args]
    result = function(*copies)
    for original, copy in zip(args, copies):
        if isinstance(original, list) and copy != original:
            raise ExerciseFailure(f"`{name}` changed the list it was given ({original} became {copy}); build and "
                                  "return a new list instead of editing the input in place.")
    return result


def close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Same shape and equal up to float noise (NaN never equals anything)."""
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol))


def max_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max())


def from_package(obj: Any) -> bool:
    """Whether ``obj`` (a class or function) is the course package's own, or a class built on one."""
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
                              f"class — write `class {name}(nn.Module):` with its own __init__ and forward. (The "
                              "package's block is there to move on with when you are stuck; this check wants "
                              "yours.)")
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
    """Load the package block's weights into the learner's; name every missing, extra or misshaped parameter.

    ``layout`` lists the expected attribute names (shown in the messages); ``extra_hint`` explains what an extra
    parameter usually means for this block.
    """
    expected = package_block.state_dict()
    got = learner_block.state_dict()
    missing = [key for key in expected if key not in got]
    extra = [key for key in got if key not in expected]
    if missing:
        shapes = ", ".join(f"`{key}` {tuple(expected[key].shape)}" for key in missing[:6])
        more = f" and {len(missing) - 6} more" if len(missing) > 6 else ""
        found = ", ".join(f"`{key}`" for key in extra[:6]) or "nothing else"
        raise ExerciseFailure(f"your `{name}` has no parameter {shapes}{more} (it has {found}). The checker copies "
                              f"the package's weights into yours by name, so use the package's attribute names: "
                              f"{layout}.")
    shared = shared_parameters(learner_block)
    if shared:
        first, second = shared[0]
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
    learner_block.load_state_dict(expected)


def first_output(result: Any, name: str, pair: bool) -> tuple[torch.Tensor, Any]:
    """Split a forward result into ``(output, rest)``; ``pair=True`` requires ``(output, weights)``."""
    if pair:
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ExerciseFailure(f"`{name}.forward` should return a pair (output, weights) like the package's "
                                  f"block, got {type(result).__name__}; blocks built on it take [0].")
        return result[0], result[1]
    if isinstance(result, tuple):
        raise ExerciseFailure(f"`{name}.forward` should return one tensor, got a tuple of {len(result)}: "
                              "self_attn(...) returns (output, weights) — keep only [0].")
    return result, None


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
        if grad is None or (grad.abs().max() == 0 and reference.abs().max() > 0):
            raise ExerciseFailure(f"{case}: the output is right but no gradient reaches the {key} of your `{name}`: "
                                  "something cuts the graph (.detach(), .data, .item(), torch.no_grad() or a new "
                                  "tensor built from values inside forward). Keep every step a tensor operation.")
        if not close(grad, reference, atol=1e-4, rtol=1e-3):
            raise ExerciseFailure(f"{case}: the output is right but the gradient of the {key} differs (by up to "
                                  f"{max_difference(grad, reference):.3g}): an in-place change or a detached "
                                  "intermediate in forward alters backpropagation. Write forward with "
                                  "out-of-place operations only.")


def shared_parameters(module: nn.Module) -> list[tuple[str, str]]:
    """Pairs of parameter names that are one and the same tensor (a module reused where a new one was meant)."""
    seen: dict[int, str] = {}
    pairs = []
    for key, p in module.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            pairs.append((seen[id(p)], key))
        else:
            seen[id(p)] = key
    return pairs


def call_block(module: nn.Module, name: str, case: str, *args, error_hint=None) -> torch.Tensor:
    """The learner's ``module(*args)`` as one tensor; a crash is reported with the input ``case`` it happened on.

    ``error_hint(message)`` may return an explanation of a crash typical for this block.
    """
    try:
        result = module(*args)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 - the learner's code may raise anything
        message = (str(error).splitlines() or [""])[0]
        hint = error_hint(message) if error_hint else None
        if hint:
            raise ExerciseFailure(f"{case}: your `{name}` fails ({type(error).__name__}: {message}): {hint}") from None
        if "tuple" in message:
            raise ExerciseFailure(f"{case}: your `{name}` fails ({type(error).__name__}: {message}). The attention "
                                  "module returns a pair (output, weights): take [0], e.g. "
                                  "self.self_attn(h, h, h, mask)[0].") from None
        raise ExerciseFailure(f"{case}: your `{name}` raised {type(error).__name__}: {message}") from None
    output, _ = first_output(result, name, pair=False)
    return output


def compare_block(package: nn.Module, learner: nn.Module, name: str, case: str, tensors: dict[str, Any],
                  diagnose=None, error_hint=None) -> None:
    """Run both blocks on ``tensors`` (floating ones get gradients); compare outputs, then gradients.

    ``diagnose(output)`` may return a message naming the mistake when the outputs differ.
    """
    def leaves():
        return {k: (v.clone().requires_grad_() if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
                for k, v in tensors.items()}
    inputs_p, inputs_l = leaves(), leaves()
    expected = package(*inputs_p.values())
    got = call_block(learner, name, case, *inputs_l.values(), error_hint=error_hint)
    got_d = as_tensor(got, f"{name}.forward", expected.shape)
    if torch.isnan(got_d).any():
        raise ExerciseFailure(f"{case}: your `{name}` returns NaN: a query whose every key is masked must get zero "
                              "weights (fill with torch.finfo(dtype).min, zero the masked weights after softmax).")
    if not close(got_d, expected):
        message = diagnose(got_d) if diagnose else None
        raise ExerciseFailure(f"{case}: " + (message or f"your `{name}` differs from the package's (by up to "
                                                        f"{max_difference(got_d, expected):.3g})."))
    probe = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1))
    package.zero_grad()
    (expected * probe).sum().backward()
    learner.zero_grad()
    backward(got * probe, name, case)
    floats = {k for k, v in tensors.items() if isinstance(v, torch.Tensor) and v.is_floating_point()}
    compare_gradients(gradients(package, {k: inputs_p[k] for k in floats}),
                      gradients(learner, {k: inputs_l[k] for k in floats}), name, case)


def backward(value: torch.Tensor, name: str, case: str) -> None:
    """``value.sum().backward()``, explaining a graph the learner's code cut."""
    if not value.requires_grad:
        raise ExerciseFailure(f"{case}: the output of your `{name}` carries no gradient: something cuts the graph "
                              "(.detach(), .data, .item(), torch.no_grad() or a new tensor built from values "
                              "inside forward). Keep every step a tensor operation.")
    value.sum().backward()
