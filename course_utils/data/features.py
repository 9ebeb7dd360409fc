"""Hand-made text features for the baselines a Transformer must beat (lesson 05)."""
from __future__ import annotations

from ..errors import CourseTypeError


def char_ngrams(text: str, orders: tuple[int, ...] = (1, 2, 3)) -> list[str]:
    """All character n-grams of ``text`` for each n in ``orders``, with one space added at both ends.

    The spaces make word starts and ends features of their own (``" un"``, ``"ng "``): the classic features of
    language identification. ``char_ngrams("ab")`` → ``[' ', 'a', 'b', ' ', ' a', 'ab', 'b ', ' ab', 'ab ']``.
    """
    if not isinstance(text, str):
        raise CourseTypeError(f"char_ngrams expects a str, got {type(text).__name__}; pass one text at a time.")
    padded = f" {text} "
    return [padded[i:i + n] for n in orders for i in range(len(padded) - n + 1)]
