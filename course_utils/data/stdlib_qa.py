"""Questions and answers about the standard library, made offline from its own source (lesson 11).

Every public function of a stdlib module and every public method of a public class whose docstring starts with a
one-sentence summary gives one pair::

    "What does textwrap.dedent do?"  ->  "Remove any common leading whitespace from every line in text."

(the summary as :mod:`course_utils.data.pydoc_corpus` cleans it: the first sentence of the docstring's first prose
paragraph, kept only if it passes the same :func:`~course_utils.data.pydoc_corpus.is_prose_sentence` filter).
The name in the question is the last module part and the function (``textwrap.dedent``, ``utils.parseaddr``)
or the class and the method (``Path.touch``). The files are parsed with :mod:`ast`, nothing is imported. A
summary shared by several names, or a question asked of several, is dropped (an item with two right answers
proves nothing).

:func:`load_stdlib_qa` splits the pairs **by top-level module** (``email.utils`` and ``email.message`` go
together): the validation and test questions are about modules never tuned on. :func:`choice_items` and
:func:`preference_pairs` build the evaluation and preference data of the lesson from a split, with distractors
from one of two pools: :func:`sibling_pool` (other functions' summaries, same module: a test of *knowledge*) and
:func:`prose_pool` (other sentences of the same module's documentation: a test of the *form* of an answer).
"""
from __future__ import annotations

__all__ = ["QAPair", "QASplit", "all_pairs", "choice_items", "load_stdlib_qa", "preference_pairs", "prose_pool",
           "read_qa_pairs", "sibling_pool"]

import ast
import functools
import random
import sysconfig
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..errors import CourseTypeError, CourseValueError
from ..validation import check_choice, check_int, check_positive_int, check_real, describe
from .pydoc_corpus import is_prose_sentence, prose_paragraphs, split_sentences, stdlib_source_files


@dataclass(frozen=True)
class QAPair:
    """One question: ``module`` (top-level, the unit of the split), ``name`` (``textwrap.dedent``), ``answer``
    (its one-sentence summary)."""

    module: str
    name: str
    answer: str

    @property
    def question(self) -> str:
        return f"What does {self.name} do?"


@dataclass(frozen=True)
class QASplit:
    """``train``, ``validation`` and ``test`` pairs; no top-level module appears in two of them."""

    train: tuple[QAPair, ...]
    validation: tuple[QAPair, ...]
    test: tuple[QAPair, ...]

    def modules(self, split: str) -> set[str]:
        return {pair.module for pair in getattr(self, check_choice("split", split, ("train", "validation", "test")))}


def check_qa_pairs(pairs: object) -> list[QAPair]:
    """``pairs`` as a list of :class:`QAPair` (a split's ``train``, ``validation`` or ``test``)."""
    if not isinstance(pairs, (list, tuple)) or not all(isinstance(pair, QAPair) for pair in pairs):
        raise CourseTypeError(f"pairs must be a list of QAPair (load_stdlib_qa().train, for example), got "
                              f"{describe(pairs)}")
    return list(pairs)


def summary_sentence(docstring: str) -> str | None:
    """The first sentence of the docstring's first prose paragraph, if it is a clean prose sentence."""
    paragraphs = prose_paragraphs(docstring)
    if not paragraphs:
        return None
    sentences = split_sentences(paragraphs[0])
    return sentences[0] if sentences and is_prose_sentence(sentences[0]) else None


def read_qa_pairs(path: Path, root: Path) -> list[QAPair]:
    """The pairs of one stdlib source file (``root``: the stdlib folder); ``[]`` for a private module."""
    if not isinstance(path, Path) or not isinstance(root, Path) or not path.is_file() or not path.is_relative_to(root):
        raise CourseValueError(f"read_qa_pairs needs path, an existing .py file, inside root, the stdlib folder (both "
                               f"pathlib.Path), got path={describe(path)} and root={describe(root)}")
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or any(part.startswith("_") for part in parts):
        return []
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return []
    pairs = []

    def add(node: ast.FunctionDef, prefix: str) -> None:
        docstring = ast.get_docstring(node)
        answer = summary_sentence(docstring) if docstring else None
        if answer:
            pairs.append(QAPair(parts[0], f"{prefix}.{node.name}", answer))

    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            add(node, parts[-1])
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for method in node.body:
                if isinstance(method, ast.FunctionDef) and not method.name.startswith("_"):
                    add(method, node.name)
    return pairs


@functools.lru_cache(maxsize=None)
def all_pairs() -> tuple[QAPair, ...]:
    """Every pair of the running Python's stdlib, in file order; a summary or a name that occurs more than once is
    dropped with every pair that has it."""
    root = Path(sysconfig.get_paths()["stdlib"])
    pairs = [pair for path in stdlib_source_files() for pair in read_qa_pairs(path, root)]
    answers, names = Counter(pair.answer for pair in pairs), Counter(pair.name for pair in pairs)
    return tuple(pair for pair in pairs if answers[pair.answer] == 1 and names[pair.name] == 1)


def load_stdlib_qa(fractions: tuple[float, float] = (0.6, 0.15), seed: int = 0) -> QASplit:
    """All pairs split by top-level module: modules shuffled with ``random.Random(seed)`` and dealt to train until
    it holds ``fractions[0]`` of the pairs, then to validation until ``fractions[1]``; the rest is test."""
    check_int("seed", seed)
    if not isinstance(fractions, (tuple, list)) or len(fractions) != 2:
        raise CourseTypeError(f"fractions must be two numbers (train, validation), got {describe(fractions)}")
    train_fraction = check_real("fractions[0]", fractions[0], 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    val_fraction = check_real("fractions[1]", fractions[1], 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    if train_fraction + val_fraction >= 1.0:
        raise CourseValueError(f"fractions {fractions} leave nothing for the test split; their sum must be < 1")
    pairs = all_pairs()
    by_module: dict[str, list[QAPair]] = {}
    for pair in pairs:
        by_module.setdefault(pair.module, []).append(pair)
    modules = sorted(by_module)
    random.Random(seed).shuffle(modules)
    parts: tuple[list, list, list] = ([], [], [])
    limits = (train_fraction * len(pairs), (train_fraction + val_fraction) * len(pairs))
    dealt = 0
    for module in modules:
        part = 0 if dealt < limits[0] else 1 if dealt < limits[1] else 2
        parts[part].extend(by_module[module])
        dealt += len(by_module[module])
    return QASplit(*(tuple(part) for part in parts))


def sibling_pool(pairs) -> dict[str, list[str]]:
    """``{module: the answers of its pairs}``: distractors that are right answers to *other* questions of the same
    module (telling them apart takes knowing what each function does)."""
    pool: dict[str, list[str]] = {}
    for pair in check_qa_pairs(pairs):
        pool.setdefault(pair.module, []).append(pair.answer)
    return pool


@functools.lru_cache(maxsize=None)
def prose_pool() -> dict[str, list[str]]:
    """``{module: its documentation sentences that are no pair's answer}`` (from
    :func:`~course_utils.data.pydoc_sources.sentence_sources`): distractors from the same module's documentation
    that are not summaries of a function — telling them apart takes knowing what an answer looks like."""
    from .pydoc_sources import sentence_sources

    answers = {pair.answer for pair in all_pairs()}
    pool: dict[str, list[str]] = {}
    for sentence, module in sentence_sources().items():
        if sentence not in answers:
            pool.setdefault(module, []).append(sentence)
    return pool


def check_pool(pool: object) -> dict:
    if not isinstance(pool, dict) or not all(isinstance(v, list) and all(isinstance(s, str) for s in v)
                                             for v in pool.values()):
        raise CourseTypeError(f"pool must be a dict {{module: [sentences]}} (sibling_pool or prose_pool), got "
                              f"{describe(pool)}")
    return pool


def choice_items(pairs, pool: dict[str, list[str]], k: int = 3, seed: int = 0) -> list[tuple[str, list[str], int]]:
    """Multiple-choice items ``(question, options, index of the right option)``: each pair's answer among ``k``
    distractors drawn with ``random.Random(seed)`` from ``pool[pair.module]`` (its own answer excluded), its place
    drawn at random; chance is ``1 / (k + 1)``. A pair whose module offers fewer than ``k`` distractors is left
    out."""
    check_positive_int("k", k)
    check_int("seed", seed)
    pool = check_pool(pool)
    rng = random.Random(seed)
    items = []
    for pair in check_qa_pairs(pairs):
        candidates = [s for s in pool.get(pair.module, []) if s != pair.answer]
        if len(candidates) < k:
            continue
        options = rng.sample(candidates, k)
        right = rng.randrange(k + 1)
        options.insert(right, pair.answer)
        items.append((pair.question, options, right))
    return items


def preference_pairs(pairs, pool: dict[str, list[str]], seed: int = 0) -> list[tuple[str, str, str]]:
    """``(question, chosen, rejected)``: the right answer against one distractor of :func:`choice_items`."""
    return [(question, options[right], options[1 - right]) for question, options, right in
            choice_items(pairs, pool, k=1, seed=seed)]
