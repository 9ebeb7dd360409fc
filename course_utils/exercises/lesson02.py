"""Exercises of notebook 02 (positional encoding): no ReLU (predict, measure), the other table layout, the shift as
a rotation, a generation loop with wrong positions; references: ``data.order``, :mod:`..positional`."""
from __future__ import annotations

import math
import numbers
from typing import Any

import torch
import torch.nn as nn

from ..data.order import which_comes_first
from ..positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding, sinusoidal_table
from .asserts import Case, Draw, Raised, attempt, check_function, learner_function
from .core import Exercise, ExerciseFailure, Mismatch, Mistake, solution_of


# ---------------------------------------------------------------------------- q1: predict, then measure
def fraction(value: Any) -> float | None:
    """A real number (Python or a one-element real tensor) as a float; ``None`` for anything else."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex():
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None


def order_model(relu: bool = True) -> nn.Module:
    """The lesson's order model with the sinusoidal table; ``relu=False`` takes the ReLU out of ``per_token``."""
    from ..data.order import OrderModel  # the package's copy of the lesson's model
    model = OrderModel(SinusoidalPositionalEncoding(32, 16))
    if not relu:
        model.per_token = nn.Sequential(nn.Linear(32, 64), nn.Linear(64, 64))
    return model


def trained(relu: bool, seed: int):
    from ..data.order import train_order_model  # the package's copy of the lesson's experiment
    return train_order_model(lambda: order_model(relu), seed)


def measured_on_999(seed: int) -> float:
    """The planted bug of "test set cut short": the right model, measured on 999 of the 1000 test sequences."""
    model = trained(False, seed)[0]
    ids, labels = which_comes_first(1000, seq_len=16, vocab_size=16, seed=2)
    with torch.no_grad():
        return (model(ids[:999]).argmax(-1) == labels[:999]).float().mean().item()


def is_number(got: Any) -> bool:
    return fraction(got) is not None


NO_RELU_MISTAKES = (
    Mistake("nonlinearity kept", "that model still learns the task, so it still has a nonlinearity between its two "
            "layers. Take the ReLU out: `per_token = nn.Sequential(nn.Linear(32, 64), nn.Linear(64, 64))`, and keep "
            "the sinusoidal table", variant=lambda seed: trained(True, seed)[1],
            shows=lambda case, got, answer: is_number(got) and 0.9 < fraction(got) <= 1),
    Mistake("a percentage", "return the accuracy as a fraction (0.5 for 50 %), as `train_order_model` gives it",
            variant=lambda seed: 100 * trained(False, seed)[1],
            shows=lambda case, got, answer: is_number(got) and 1 < fraction(got) <= 100),
    Mistake("test set cut short", "measure on all 1000 test sequences, as `train_order_model` does: they come in "
            "mirrored pairs, and this model gets exactly one of each pair right",
            variant=measured_on_999,
            shows=lambda case, got, answer: is_number(got) and 0.3 < fraction(got) < 0.7),
    Mistake("the whole result", "`train_order_model` returns (model, accuracy, losses): return only the accuracy, "
            "its second result", variant=lambda seed: trained(False, seed),
            shows=lambda case, got, answer: isinstance(got, tuple)),
)


def check_no_relu(ns) -> None:
    function = learner_function(ns, "accuracy_without_relu")
    seed = Draw().integer(3, 99)
    case = Case(f"accuracy_without_relu({seed})", (seed,))

    def run(answer, case):
        return attempt(answer, "accuracy_without_relu", case.args, {})

    got = run(function, case)
    if fraction(got) != 0.5:
        if isinstance(got, Raised):
            what = f"raised {got.kind}: {got.message}"
        else:
            what = f"returned {fraction(got):g}" if is_number(got) else f"returned a {type(got).__name__}"
        raise Mismatch(f"on {case.description}: your function {what}; it should train the order model with the "
                       "sinusoidal table and no ReLU from that seed with `train_order_model` and return its test "
                       "accuracy, a number", case, got, function, run, lambda a, b: a == b)
    check_prediction(ns, "my_prediction", "your measurement is right")


def check_prediction(ns, name: str, so_far: str) -> None:
    """The learner's prediction ``ns[name]``: a test accuracy written as a fraction (any value is a fair guess)."""
    prediction = fraction(ns.get(name))
    if prediction is None or not 0 <= prediction <= 100:
        raise ExerciseFailure(f"{so_far}; now `{name}` should hold a number: the test accuracy you expected before "
                              "measuring, as a fraction (0.8 for 80 %).")
    if prediction > 1:
        raise ExerciseFailure(f"`{name}` = {prediction:g}: write it as a fraction ({prediction / 100:g} for "
                              f"{prediction:g} %).")


# ---------------------------------------------------------------------------- q2: the other layout
def reference_to_halves(d_model: int) -> torch.Tensor:
    """Column indices (int64 ``(d_model,)``) putting the package's table in the order sines | cosines."""
    row_0 = sinusoidal_table(1, d_model)[0]
    return torch.cat([torch.nonzero(row_0 == 0).flatten(), torch.nonzero(row_0 == 1).flatten()])


def section_3_permutation(d_model: int) -> torch.Tensor:
    half = d_model // 2
    return torch.stack([torch.arange(half), torch.arange(half) + half], dim=1).flatten()


HALVES_MISTAKES = (
    Mistake("section 3's permutation", "that is section 3's permutation, which builds the interleaved table from the "
            "halves. You need the way back: the halves start with every sine (the even columns of the course's "
            "table), then every cosine", variant=section_3_permutation),
    Mistake("cosines first", "your halves start with the cosines; tensor2tensor puts the sines first",
            variant=lambda d_model: reference_to_halves(d_model).roll(d_model // 2)),
    Mistake("the identity", "these indices leave the table as it is (interleaved); reorder the columns: sines first, "
            "then cosines", variant=lambda d_model: torch.arange(d_model)),
    Mistake("only the sines", "you return only the sine columns; the halves layout keeps all d_model columns: every "
            "sine, then every cosine", variant=lambda d_model: reference_to_halves(d_model)[: d_model // 2]),
    Mistake("a boolean mask", "return column indices (int64), not a boolean mask: a mask keeps the order of the "
            "columns", variant=lambda d_model: torch.arange(d_model) % 2 == 0,
            shows=lambda case, got, answer: isinstance(got, torch.Tensor) and got.dtype == torch.bool),
)


def check_to_halves(ns) -> None:
    draw = Draw()
    sizes = [2, draw.choice([6, 10, 14]), draw.choice(range(16, 65, 2)), draw.choice(range(128, 513, 2))]
    cases = [Case(f"to_halves({d})" + (f" ({w})" if w else ""), (d,))
             for d, w in zip(sizes, ["one pair", "", "", "a large model"])]
    check_function(learner_function(ns, "to_halves"), reference_to_halves, cases, "to_halves",
                   probes=[Case("to_halves(8)", (8,)), Case("to_halves(12)", (12,))], atol=0, rtol=0)
    check_prediction(ns, "my_layout_prediction", "your `to_halves` is right")


# ---------------------------------------------------------------------------- q3: a shift is a rotation
def reference_frequencies(d_model: int) -> torch.Tensor:
    """ω_i, read off the package's table: row 1 holds sin(1 · ω_i) in its even columns (ω_i ≤ 1, so asin is exact)."""
    return torch.asin(sinusoidal_table(2, d_model).double()[1, 0::2])


def rotation_blocks(angles: list[float]) -> torch.Tensor:
    """The float64 block-diagonal matrix of 2×2 blocks [[cos a, sin a], [−sin a, cos a]]."""
    return torch.block_diag(*[torch.tensor([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]],
                                           dtype=torch.float64) for a in angles])


def reference_shift_matrix(k: int, d_model: int) -> torch.Tensor:
    """``(d_model, d_model)`` float64 M with ``PE[pos + k] = M @ PE[pos]`` for every ``pos``."""
    return rotation_blocks([k * omega for omega in reference_frequencies(d_model).tolist()])


def reference_shift(k: int, d_model: int) -> torch.Tensor:
    """The rotation of the package's table, float32 ``(d_model, d_model)``: the reference answer."""
    return reference_shift_matrix(k, d_model).float()


def shift_cases(draw: Draw) -> list[Case]:
    small_d = draw.choice([6, 10, 14])
    k_small = draw.choice([k for k in range(2, 6) if k != small_d])
    mid_d = draw.choice(range(16, 41, 2))
    k_large = draw.choice([k for k in range(20, 61) if k != mid_d])
    big_d = draw.choice(range(64, 129, 2))
    k_mid = draw.integer(3, 15)
    sizes = [(1, 4, "one step"), (1, 2, "one pair"), (k_small, small_d, "d_model not a multiple of 4"),
             (k_large, mid_d, "a long shift"), (k_mid, big_d, "a large model")]
    return [Case(f"shift_matrix({k}, {d}) ({what})", (k, d)) for k, d, what in sizes]


def square(case: Case, got: Any) -> torch.Tensor | None:
    """The learner's float matrix as float64 when it has the asked shape, else ``None``."""
    d_model = case.args[1]
    if isinstance(got, torch.Tensor) and got.is_floating_point() and got.shape == (d_model, d_model):
        return got.detach().double()
    return None


def off_the_blocks(case: Case, got: Any) -> bool:
    matrix = square(case, got)
    if matrix is None:
        return False
    blocks = torch.block_diag(*[torch.ones(2, 2)] * (case.args[1] // 2)).bool()
    return bool((matrix.abs() > 1e-6).logical_and(~blocks).any())


def pair_index_angles(k: int, d_model: int) -> torch.Tensor:
    """The planted bug of "i instead of 2i": pair i rotated by k / 10000^(i / d_model)."""
    return rotation_blocks([k / 10000 ** (i / d_model) for i in range(d_model // 2)]).float()


SHIFT_MISTAKES = (
    Mistake("rotates backwards", "your matrix moves positions backwards (M @ PE[pos] = PE[pos - k]): the sign of the "
            "sine terms is flipped. From sin(a+b) = sin a cos b + cos a sin b and cos(a+b) = cos a cos b − sin a "
            "sin b, each block is [[cos, sin], [−sin, cos]]", variant=lambda k, d_model: reference_shift(k, d_model).T),
    Mistake("angle ignores k", "your matrix is the shift by 1 whatever k is: the angle of pair i is k · ω_i",
            variant=lambda k, d_model: reference_shift(1, d_model)),
    Mistake("i instead of 2i", "the blocks rotate by the wrong angles: the exponent is i / d_model, the formula has "
            "2i / d_model (count the even dimensions 0, 2, 4, …)", variant=pair_index_angles),
    Mistake("entries outside the blocks", "entries outside the 2×2 diagonal blocks must be 0: each (sin, cos) pair "
            "rotates on its own, by its own frequency",
            variant=lambda k, d_model: reference_shift(k, d_model) + 0.01,
            shows=lambda case, got, answer: off_the_blocks(case, got)),
    Mistake("other angles", "M @ PE[pos] should equal PE[pos + k] for every pos: block i is [[cos(k·ω_i), "
            "sin(k·ω_i)], [−sin(k·ω_i), cos(k·ω_i)]] with ω_i = 1 / 10000^(2i / d_model), in radians",
            variant=lambda k, d_model: rotation_blocks([math.radians(k * w) for w in
                                                        reference_frequencies(d_model).tolist()]).float(),
            shows=lambda case, got, answer: square(case, got) is not None and not torch.allclose(
                square(case, got), reference_shift_matrix(*case.args), atol=1e-4, rtol=1e-4)),
)


def check_shift_matrix(ns) -> None:
    cases = shift_cases(Draw())
    twins = [Case(f"shift_matrix({k + 1}, {d}) (the same d_model, another shift)", (k + 1, d))
             for k, d in (case.args for case in cases)]
    check_function(learner_function(ns, "shift_matrix"), reference_shift, cases, "shift_matrix", twins=twins,
                   atol=1e-4, rtol=1e-4)


# ---------------------------------------------------------------------------- q4: positions while generating
class FedOneAtATime(nn.Module):
    """A positional encoding fed the prompt (``prompt_len`` tokens) at once or a single token, as in generation."""

    def __init__(self, encoding: nn.Module, prompt_len: int) -> None:
        super().__init__()
        self.encoding, self.prompt_len = encoding, prompt_len

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.size(1) not in (1, self.prompt_len):
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ExerciseFailure(f"`encoding` was given {shape}: feed it the prompt (or one token), then each new "
                                  "token alone, new_tokens[:, t:t + 1] of shape (batch, 1, d_model), as a model does "
                                  "while it generates.")
        return self.encoding(x, offset=offset)


def reference_after_prompt(encoding: nn.Module, prompt: torch.Tensor, new_tokens: torch.Tensor) -> torch.Tensor:
    """The prompt at once, then new token ``t`` alone at position ``P + t``: ``(batch, P + N, d_model)``."""
    steps = [encoding(prompt)]
    steps += [encoding(new_tokens[:, t:t + 1], offset=prompt.size(1) + t) for t in range(new_tokens.size(1))]
    return torch.cat(steps, dim=1)


def check_after_prompt(ns) -> None:
    draw, cases = Draw(), []
    for kind, batch in [("sinusoidal", 1), ("learned", draw.integer(2, 3))]:
        prompt_len = draw.integer(2, 6)
        new = draw.choice([n for n in range(2, 8) if n != prompt_len])
        d_model = draw.choice(range(4, 17, 2))
        max_len = prompt_len + new + draw.integer(2, 6)
        if kind == "sinusoidal":
            encoding = SinusoidalPositionalEncoding(d_model, max_len)
        else:
            encoding = LearnedPositionalEncoding(d_model, max_len)
            with torch.no_grad():
                encoding.table.weight.copy_(draw.randn(max_len, d_model))
        cases.append(Case(f"a {kind} encoding (d_model {d_model}, max_len {max_len}), a prompt of {prompt_len} "
                          f"tokens and {new} new tokens (batch {batch})",
                          (FedOneAtATime(encoding, prompt_len), draw.randn(batch, prompt_len, d_model),
                           draw.randn(batch, new, d_model))))
    check_function(learner_function(ns, "encode_after_prompt"), reference_after_prompt, cases, "encode_after_prompt",
                   scales=())


def new_token_at(offset_of):
    """The planted bug: new token ``t`` after a prompt of ``P`` tokens encoded at position ``offset_of(P, t)``."""
    def encode_after_prompt(encoding, prompt, new_tokens):
        steps = [encoding(prompt)]
        steps += [encoding(new_tokens[:, t:t + 1], offset=offset_of(prompt.size(1), t))
                  for t in range(new_tokens.size(1))]
        return torch.cat(steps, dim=1)
    return encode_after_prompt


GENERATION_MISTAKES = (
    Mistake("offset counted from the new tokens", "your new tokens get the vectors of positions 0, 1, 2, …, which "
            "the prompt already used: the encoding cannot tell new token t from prompt token t. Count where new token "
            "t stands in the whole sequence", variant=new_token_at(lambda P, t: t)),
    Mistake("offset 0 for every new token", "every new token got position 0's vector: a token fed alone is at "
            "position 0 unless you tell the encoding where it stands (`forward`'s second argument)",
            variant=new_token_at(lambda P, t: 0)),
    Mistake("one position too far", "each new token got the vector one position after its own: the prompt holds "
            "positions 0 .. P − 1, so the first new token is at position P",
            variant=new_token_at(lambda P, t: P + t + 1)),
    Mistake("one position short", "each new token got the vector one position before its own, the first one the "
            "prompt's last position: the prompt holds positions 0 .. P − 1, so the first new token is at position P",
            variant=new_token_at(lambda P, t: P + t - 1)),
)


q1 = Exercise(
    name="Predict, then measure: no ReLU", variables=("accuracy_without_relu",), checker=check_no_relu,
    hints=("Without the ReLU, `per_token` is one affine map. What is the mean over the tokens of an affine map of "
           "(token vector + position vector)? Which part of it differs between a sequence and its mirror?",
           "Write your prediction first. Then a `make_model` that builds `OrderModel` with the sinusoidal table and "
           "replaces `per_token` by the two Linear layers alone, and a function of `seed` that passes it to "
           "`train_order_model` and returns the accuracy (its second result)."),
    solution=solution_of("lesson02", "my_prediction", "make_model_without_relu", "accuracy_without_relu"),
    success=("Correct. Exactly 0.5, for every seed. Without the ReLU, the mean of A(token + position) is A(mean "
             "token + mean position): the mean token is the same for a sequence and its mirror, the mean position "
             "the same for every sequence. The positions are added but never meet the tokens, so the model gives "
             "both sequences of a pair the same answer; a nonlinearity is what ties \"A\" to \"where A stands\"."),
    mistakes=NO_RELU_MISTAKES,
)

q2 = Exercise(
    name="Predict, then repair: the other layout", variables=("to_halves",), checker=check_to_halves,
    hints=("Which columns of the course's table hold the sines, and which the cosines? The halves layout lists "
           "the first group, then the second, each in its own order.",
           "The even column numbers 0, 2, …, d_model − 2, followed by the odd ones 1, 3, …, d_model − 1, as one "
           "int64 tensor of length d_model. Then measure with `sinusoidal_table(16, 32)[:, to_halves(32)]`."),
    solution=solution_of("lesson02", "my_layout_prediction", "to_halves"),
    success=("Correct. The reordered table holds exactly the numbers these models were trained on, so they score "
             "exactly what they scored with the halves table. Swapped in unchanged, the course's table puts each "
             "position's numbers in other coordinates than the first layer learned to read."),
    mistakes=HALVES_MISTAKES,
)

q3 = Exercise(
    name="A shift of k positions is a rotation", variables=("shift_matrix",), checker=check_shift_matrix,
    hints=("Pair i holds (sin(pos·ω_i), cos(pos·ω_i)). Expand sin(pos·ω + k·ω) and cos(pos·ω + k·ω) with the "
           "angle-addition formulas; the coefficients of sin(pos·ω) and cos(pos·ω) form the 2×2 block.",
           "For each even dimension 2i: the angle is k · ω_i with ω_i = 1 / 10000^(2i / d_model); its block is "
           "[[cos, sin], [−sin, cos]] of that angle. Place the blocks along the diagonal (torch has a function "
           "for a block-diagonal matrix), zeros elsewhere; the result is float32 (d_model, d_model)."),
    solution=solution_of("lesson02", "shift_matrix"), mistakes=SHIFT_MISTAKES,
)

q4 = Exercise(
    name="Find the bug: positions after a prompt", variables=("encode_after_prompt",), checker=check_after_prompt,
    hints=("Feed zero vectors to the loop and to the whole sequence at once, and compare them row by row: which rows "
           "differ, and which position's vector did each of them get instead?",
           "`forward(x, offset)` adds rows offset .. offset + seq − 1 of the table. Count the positions the prompt "
           "takes; the first new token comes right after them."),
    solution=solution_of("lesson02", "encode_after_prompt"), mistakes=GENERATION_MISTAKES,
)
