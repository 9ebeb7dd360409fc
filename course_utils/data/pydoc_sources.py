"""Where each sentence of the documentation corpus comes from — the labels of lesson 06's downstream task.

:func:`~course_utils.data.pydoc_corpus.load_pydoc_corpus` keeps the sentences only. :func:`sentence_sources`
re-reads the same documents in the same order with the same cleaning and records, for each sentence, the
document it first appeared in (first occurrence wins, as in the corpus):

* ``"language reference"`` for the ``pydoc_data.topics`` texts;
* otherwise the standard-library package or module of the source file: its first path part under the stdlib
  folder without ``.py`` (``email/mime/text.py`` → ``"email"``, ``argparse.py`` → ``"argparse"``).

Nothing is imported or executed (the files are parsed with :mod:`ast`). The result is cached next to the corpus
cache, under the same key.
"""
from __future__ import annotations

import functools
import sysconfig
from pathlib import Path

from .pydoc_corpus import (
    _cache_key,
    _read_cache,
    _reference_topics,
    _write_cache,
    cache_dir,
    extract_sentences,
    load_pydoc_corpus,
    read_docstrings,
    stdlib_source_files,
)

LANGUAGE_REFERENCE = "language reference"


def source_name(path: Path, root: Path) -> str:
    """The package or module a stdlib file belongs to: ``email/mime/text.py`` → ``"email"``."""
    first = path.relative_to(root).parts[0]
    return first[:-3] if first.endswith(".py") else first


def build_sources() -> list[str]:
    """The source of every corpus sentence, in corpus order (slow: parses every source file)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    first_source: dict[str, str] = {}
    for text in _reference_topics():
        for sentence in extract_sentences([text]):
            first_source.setdefault(sentence, LANGUAGE_REFERENCE)
    for path in stdlib_source_files():
        name = source_name(path, root)
        for sentence in extract_sentences(read_docstrings(path)):
            first_source.setdefault(sentence, name)
    return [first_source[sentence] for sentence in load_pydoc_corpus().sentences]


@functools.lru_cache(maxsize=None)
def sentence_sources(use_cache_file: bool = True) -> dict[str, str]:
    """``{sentence: source}`` for every sentence of :func:`load_pydoc_corpus` (see the module docstring)."""
    sentences = load_pydoc_corpus().sentences
    sources = None
    if use_cache_file:
        key = _cache_key()
        path = cache_dir() / f"pydoc_sources_{key}.json"
        sources = _read_cache(path, key)
        if sources is not None and len(sources) != len(sentences):
            sources = None
    if sources is None:
        sources = build_sources()
        if use_cache_file:
            _write_cache(path, key, sources)
    return dict(zip(sentences, sources))
