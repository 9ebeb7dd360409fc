"""English prose from the running Python's own documentation — a real text corpus with no download.

Source
    1. ``pydoc_data.topics`` — the plain-text Python *Language Reference* topics that ``help()`` shows
       (``help("assert")``), read as data.
    2. The docstrings of the standard library's ``.py`` files (modules, classes, functions), read with
       :mod:`ast` from the source files. No module is imported, so nothing is executed.
       Skipped folders: ``site-packages``, tests, ``idlelib``, ``turtledemo``, ``lib2to3``, ``encodings``
       (generated codec boilerplate), ``ensurepip`` and ``pydoc_data`` itself.

Licence
    Python's documentation and source code are distributed under the PSF License Agreement
    (https://docs.python.org/3/license.html). The course reads the files of the interpreter it runs on and
    ships none of the text in its repository.

Cleaning (deterministic: sorted topic names, sorted file paths, first occurrence wins)
    * keep only paragraphs whose lines are not indented — indented blocks are code, grammar rules, tables,
      literal blocks or parameter lists; drop headings, table borders and ``>>>`` doctest lines;
    * strip reST emphasis marks (``*word*``, ````code````) and leading bullet marks;
    * split paragraphs into sentences (after ``.``, ``!``, ``?`` before a capital; "e.g." etc. do not end one);
    * keep sentences of 6–40 words that start with a capital, end with ``.``, ``!`` or ``?``, contain none of
      the characters that signal code (``= [] {} <> | \\ @ # $ % ~ ^ * ` _``, ``::``, ``->``, ``>>>``) and are at
      least 85 % letters and spaces; drop exact duplicates.

Size (Python 3.11.7, measured with ``python -m course_utils.data.pydoc_corpus``):
    read: 2.07 M characters (0.46 M language reference + 1.61 M docstrings of 450 files); prose paragraphs:
    1.45 M characters; kept: **10 120 sentences, 817 032 characters, 135 954 words** (902 sentences from the
    language reference, 9 218 from docstrings), fingerprint ``f5c51d922059``. Other Python versions give slightly
    different text: compare :attr:`Corpus.fingerprint` and :attr:`Corpus.python_version` before comparing results.

Out-of-corpus prose (:func:`read_package_corpus`)
    The same cleaning applied to the docstrings of installed third-party packages — by default
    :data:`HELD_OUT_PACKAGES`, pinned in ``requirements.txt`` and never read for the corpus above (it skips
    ``site-packages``) — minus every sentence the corpus above also holds: English documentation prose on other
    topics, to test a language model trained on this corpus outside it. Measured with the pinned versions and
    Python 3.11.7: 12 107 sentences, 929 777 characters (numpy, matplotlib and Django give most), fingerprint
    ``4cd1f24c9914``; about 5 s to build, no cache file.

The first call parses ~450 source files (several seconds); the result is kept in memory and in a JSON cache
file under the user's cache folder (``$COURSE_UTILS_CACHE_DIR``, else ``$XDG_CACHE_HOME`` or ``~/.cache``,
then ``transformer-course/``) — never inside the repository. Later loads take a fraction of a second.
"""
from __future__ import annotations

__all__ = ["HELD_OUT_PACKAGES", "Corpus", "build_sentences", "cache_dir", "extract_sentences", "is_prose_sentence",
           "load_pydoc_corpus", "package_source_files", "prose_paragraphs", "read_docstrings", "read_package_corpus",
           "read_pydoc_corpus", "split_sentences", "stdlib_source_files"]

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import random
import re
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..errors import CourseTypeError, CourseValueError
from ..validation import check_bool, check_int, check_real, check_str, describe

EXTRACTOR_VERSION = 1  # bump when the cleaning rules change, so old cache files are ignored
MIN_WORDS, MAX_WORDS = 6, 40
SKIPPED_DIRS = frozenset(
    {"site-packages", "dist-packages", "test", "tests", "idlelib", "turtledemo", "lib2to3", "encodings",
     "ensurepip", "pydoc_data", "__pycache__", "__phello__"}
)

_HEADING_OR_RULE = re.compile(r"^\s*([*=\-~^\"'`#+])\1{2,}\s*$")
_EMPHASIS = re.compile(r"(?<!\w)[*`]+(\w[^*`]*?)[*`]+(?!\w)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"\u201c(]?[A-Z])|(?<=[.!?][)\"\u201d])\s+(?=[\"\u201c(]?[A-Z])")
_ABBREVIATION_AT_END = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|Mr|Dr|No)\.$")
_STARTS_WITH_CAPITAL = re.compile(r"[\"\u201c(]?[A-Z]")
_ENDS_LIKE_A_SENTENCE = re.compile(r"[\w)\"'\u201d][.!?][\"\u201d)]?$")
_CODE_SIGNS = re.compile(r">>>|::|->|=>|[{}\[\]<>=|\\@#$~^%*`_]")


@dataclass(frozen=True)
class Corpus:
    """A list of English sentences plus where they came from.

    ``sentences`` is a tuple of str; ``python_version`` is the interpreter version that produced them.
    """

    sentences: tuple[str, ...]
    python_version: str
    description: str = "Python documentation prose (pydoc_data.topics + stdlib docstrings), PSF License"

    def __post_init__(self):
        if isinstance(self.sentences, str):
            raise CourseTypeError("Corpus.sentences must be a sequence of sentences, not one str; wrap it in a tuple.")
        if not hasattr(self.sentences, "__iter__"):
            raise CourseTypeError(f"Corpus.sentences must be a sequence of str, got {describe(self.sentences)}")
        object.__setattr__(self, "sentences", tuple(self.sentences))
        for i, sentence in enumerate(self.sentences):
            if not isinstance(sentence, str):
                raise CourseTypeError(f"Corpus.sentences[{i}] is {describe(sentence)}; every sentence must be a str")
        check_str("python_version", self.python_version)
        check_str("description", self.description)

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def n_characters(self) -> int:
        return sum(len(s) for s in self.sentences)

    @property
    def n_words(self) -> int:
        return sum(len(s.split()) for s in self.sentences)

    @cached_property
    def fingerprint(self) -> str:
        """First 12 hex digits of the SHA-256 of the sentences joined by newlines."""
        return hashlib.sha256("\n".join(self.sentences).encode("utf-8")).hexdigest()[:12]

    def summary(self) -> dict:
        """Size and identity in one dict (for a table in a notebook)."""
        return {"sentences": len(self), "characters": self.n_characters, "words": self.n_words,
                "fingerprint": self.fingerprint, "python": self.python_version}

    def sample(self, n: int, seed: int = 0) -> "Corpus":
        """``n`` sentences drawn without replacement with ``random.Random(seed)``, kept in corpus order."""
        check_int("n", n)
        check_int("seed", seed)
        if not 1 <= n <= len(self):
            raise CourseValueError(f"sample needs 1 <= n <= {len(self)} (the corpus size), got n={n!r}.")
        chosen = sorted(random.Random(seed).sample(range(len(self)), n))
        return Corpus(tuple(self.sentences[i] for i in chosen), self.python_version, self.description)

    def split(self, held_out_fraction: float = 0.1, seed: int = 0) -> tuple["Corpus", "Corpus"]:
        """Split by sentence into ``(train, held_out)``; each sentence lands in exactly one part.

        ``round(held_out_fraction * len(self))`` sentences, chosen with ``random.Random(seed)``, are held out.
        """
        check_real("held_out_fraction", held_out_fraction, hint="; try 0.1")
        check_int("seed", seed)
        if not 0.0 < held_out_fraction < 1.0:
            raise CourseValueError(
                f"held_out_fraction must be between 0 and 1 (exclusive), got {held_out_fraction!r}; try 0.1."
            )
        n_held_out = round(held_out_fraction * len(self))
        if not 1 <= n_held_out < len(self):
            raise CourseValueError(
                f"held_out_fraction={held_out_fraction} of {len(self)} sentences gives {n_held_out} held-out "
                "sentences; both parts need at least one. Use a larger corpus or another fraction."
            )
        held = set(random.Random(seed).sample(range(len(self)), n_held_out))
        train = tuple(s for i, s in enumerate(self.sentences) if i not in held)
        held_out = tuple(s for i, s in enumerate(self.sentences) if i in held)
        return (Corpus(train, self.python_version, self.description),
                Corpus(held_out, self.python_version, self.description))


# ---------------------------------------------------------------------------- cleaning
def prose_paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text`` that are prose, each joined into one line (see the module docstring)."""
    check_str("text", text)
    paragraphs, current = [], []
    for line in text.splitlines() + [""]:
        if line.strip():
            current.append(line)
            continue
        if current and not any(
            kept[:1].isspace() or _HEADING_OR_RULE.match(kept) or kept.lstrip().startswith((">>>", "+-", "|", "... "))
            for kept in current
        ):
            paragraph = re.sub(r"^[*-] ", "", " ".join(kept.strip() for kept in current))
            paragraphs.append(_EMPHASIS.sub(r"\1", paragraph))
        current = []
    return paragraphs


def split_sentences(paragraph: str) -> list[str]:
    """Split one paragraph into sentences; an abbreviation such as "e.g." does not end a sentence."""
    check_str("paragraph", paragraph)
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(paragraph):
        if sentences and _ABBREVIATION_AT_END.search(sentences[-1]):
            sentences[-1] += " " + piece
        else:
            sentences.append(piece)
    return sentences


def is_prose_sentence(sentence: str) -> bool:
    """True for a 6–40-word sentence that looks like English prose rather than code or a table row."""
    check_str("sentence", sentence)
    return (
        MIN_WORDS <= len(sentence.split()) <= MAX_WORDS
        and _STARTS_WITH_CAPITAL.match(sentence) is not None
        and _ENDS_LIKE_A_SENTENCE.search(sentence) is not None
        and _CODE_SIGNS.search(sentence) is None
        and sum(c.isalpha() or c.isspace() for c in sentence) >= 0.85 * len(sentence)
    )


def extract_sentences(documents: list[str]) -> list[str]:
    """All prose sentences of ``documents`` in order, duplicates dropped (first occurrence kept)."""
    if isinstance(documents, str) or not hasattr(documents, "__iter__"):
        raise CourseTypeError(f"documents must be a list of str, got {describe(documents)}; wrap one text as [text]")
    seen: dict[str, None] = {}
    for document in documents:
        for paragraph in prose_paragraphs(document):
            for sentence in split_sentences(paragraph):
                if is_prose_sentence(sentence):
                    seen.setdefault(sentence, None)
    return list(seen)


# ---------------------------------------------------------------------------- sources
def stdlib_source_files() -> list[Path]:
    """The standard library's ``.py`` files that feed the corpus, in sorted order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for folder, subfolders, names in os.walk(root):
        relative = Path(folder).relative_to(root)
        # prune skipped folders here, so the walk never enters site-packages (thousands of files)
        subfolders[:] = [
            d for d in subfolders
            if d not in SKIPPED_DIRS and not (relative == Path(".") and d.startswith("config-"))
        ]
        files.extend(Path(folder) / name for name in names if name.endswith(".py"))
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def read_docstrings(path: Path) -> list[str]:
    """Module, class and function docstrings of one source file, parsed with ``ast`` (never imported).

    A file that does not parse under this Python (or is not UTF-8 / its declared encoding) gives ``[]``.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise CourseTypeError(f"path must be a str or pathlib.Path, got {describe(path)}")
    path = Path(path)
    if not path.is_file():
        raise CourseValueError(f"no such source file: {path}; pass a path from stdlib_source_files()")
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return []
    docstrings = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=True)
            if docstring:
                docstrings.append(docstring)
    return docstrings


def _reference_topics() -> list[str]:
    from pydoc_data.topics import topics  # a module holding one dict of str: data, no side effects

    return [topics[name] for name in sorted(topics)]


def build_sentences() -> list[str]:
    """Read both sources and clean them (slow: parses every source file). Prefer :func:`load_pydoc_corpus`."""
    documents = _reference_topics()
    for path in stdlib_source_files():
        documents.extend(read_docstrings(path))
    return extract_sentences(documents)


# ---------------------------------------------------------------------------- out-of-corpus prose
HELD_OUT_PACKAGES = ("numpy", "matplotlib", "django", "hypothesis", "babel", "sacrebleu", "nbformat", "nbconvert",
                     "tqdm")


def package_source_files(package: str) -> list[Path]:
    """The ``.py`` files of the installed top-level package ``package`` (e.g. ``"numpy"``), in sorted order,
    without the folders the corpus skips (tests, ``__pycache__``, …). The package is located with
    :func:`importlib.util.find_spec`, which does not import a top-level package: nothing is executed."""
    check_str("package", package)
    if not package.isidentifier():
        raise CourseValueError(f"package must be the name of an installed top-level package such as 'numpy', got "
                               f"{package!r}; pass the import name without dots or spaces")
    spec = importlib.util.find_spec(package)
    if spec is None or not (spec.submodule_search_locations or str(spec.origin or "").endswith(".py")):
        raise CourseValueError(f"no installed Python package named {package!r} (with .py sources) in this "
                               "environment; install the course's requirements (pip install -r requirements.txt) "
                               "or pass packages that are installed")
    if not spec.submodule_search_locations:  # a single-module distribution such as six.py
        return [Path(spec.origin)]
    files = []
    for root in spec.submodule_search_locations:
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [d for d in subfolders if d not in SKIPPED_DIRS]
            files.extend(Path(folder) / name for name in names if name.endswith(".py"))
    return sorted(set(files), key=lambda p: p.as_posix())


def read_package_corpus(packages: tuple[str, ...] = HELD_OUT_PACKAGES) -> Corpus:
    """Docstring prose of installed ``packages`` — an out-of-corpus test set for models trained on
    :func:`load_pydoc_corpus` (see the module docstring).

    Cleaned by the same rules, in a fixed order (packages as given, each one's files sorted, first occurrence wins),
    and every sentence that :func:`load_pydoc_corpus` also holds is dropped. Deterministic for fixed package
    versions (the description names them); offline; read with :mod:`ast`, never imported. Not cached: about 5 s
    for :data:`HELD_OUT_PACKAGES`.
    """
    if isinstance(packages, (str, bytes)) or not isinstance(packages, (tuple, list)) or not packages:
        raise CourseTypeError(f"packages must be a non-empty tuple of package names such as ('numpy', 'django'), got "
                              f"{describe(packages)}" + ("; for one package wrap it: (name,)"
                                                         if isinstance(packages, str) else ""))
    documents, versions = [], []
    for i, package in enumerate(packages):
        check_str(f"packages[{i}]", package)
        for path in package_source_files(package):
            documents.extend(read_docstrings(path))
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(package)
    in_corpus = set(load_pydoc_corpus().sentences)
    sentences = tuple(s for s in extract_sentences(documents) if s not in in_corpus)
    if not sentences:
        raise CourseValueError(f"the docstrings of {tuple(packages)} hold no prose sentence outside the documentation "
                               "corpus; pass packages with documented Python code")
    return Corpus(sentences, platform.python_version(),
                  f"docstring prose of {', '.join(versions)} (their own licences), minus the sentences of the "
                  "Python documentation corpus")


# ---------------------------------------------------------------------------- cache
def cache_dir() -> Path:
    """Folder for the corpus cache file (outside the repository)."""
    base = os.environ.get("COURSE_UTILS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "transformer-course"
    )
    return Path(base)


def _cache_key() -> str:
    """Changes whenever the interpreter, its stdlib files or the cleaning rules change."""
    files = stdlib_source_files()
    root = Path(sysconfig.get_paths()["stdlib"])
    listing = "\n".join(f"{p.relative_to(root).as_posix()}:{p.stat().st_size}" for p in files)
    text = f"{EXTRACTOR_VERSION}|{sys.version}|{root}|{listing}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _read_cache(path: Path, key: str) -> list[str] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("sentences"), list):
        return None
    return data["sentences"]


def _write_cache(path: Path, key: str, sentences: list[str]) -> None:
    """Write atomically (temp file + rename) so two kernels loading at once never see half a file.
    A read-only or missing home folder only costs the speed-up, so write errors are ignored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as f:
            json.dump({"key": key, "python": platform.python_version(), "sentences": sentences}, f)
        os.replace(f.name, path)
    except OSError:
        pass


def load_pydoc_corpus(use_cache_file: bool = True) -> Corpus:
    """The documentation corpus of the running Python (cached in memory and, by default, on disk).

    Returns a :class:`Corpus`; use ``.split(held_out_fraction, seed)`` for train / held-out sentences and
    ``.sample(n, seed)`` for a smaller, seeded subset.
    """
    return _read_once(check_bool("use_cache_file", use_cache_file))


def read_pydoc_corpus(use_cache_file: bool = True) -> Corpus:
    """Like :func:`load_pydoc_corpus`, but read now: from the cache file (if allowed and valid), else rebuilt."""
    check_bool("use_cache_file", use_cache_file)
    sentences = None
    if use_cache_file:
        key = _cache_key()
        path = cache_dir() / f"pydoc_corpus_{key}.json"
        sentences = _read_cache(path, key)
    if sentences is None:
        sentences = build_sentences()
        if use_cache_file:
            _write_cache(path, key, sentences)
    if not sentences:
        raise RuntimeError(
            "No prose found in this Python's documentation (is pydoc_data or the stdlib source missing? "
            "Some minimal Python builds strip them). Use a standard CPython install."
        )
    return Corpus(tuple(sentences), platform.python_version())


_read_once = functools.lru_cache(maxsize=None)(read_pydoc_corpus)


if __name__ == "__main__":
    corpus = load_pydoc_corpus()
    for name, value in corpus.summary().items():
        print(f"{name:>12}: {value}")
