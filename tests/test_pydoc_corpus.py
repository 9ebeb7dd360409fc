"""The Python-documentation corpus: real prose, deterministic, cached outside the repo, split without overlap."""
import hashlib
import platform
import re
import sysconfig
from pathlib import Path

import pytest

from course_utils.data import pydoc_corpus
from course_utils.data.pydoc_corpus import (
    Corpus,
    is_prose_sentence,
    load_pydoc_corpus,
    prose_paragraphs,
    read_docstrings,
    read_pydoc_corpus,
    split_sentences,
    stdlib_source_files,
)
from course_utils.errors import CourseTypeError, CourseValueError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus():
    return load_pydoc_corpus()


def test_size_is_what_the_docstring_says(corpus):
    # Python 3.11.7 gives 10 120 sentences / 817 032 characters; other versions differ a little.
    assert 8_000 <= len(corpus) <= 13_000
    assert 600_000 <= corpus.n_characters <= 1_100_000
    assert corpus.python_version == platform.python_version()
    assert corpus.summary()["sentences"] == len(corpus)


def test_every_sentence_is_prose(corpus):
    for sentence in corpus.sentences:
        assert 6 <= len(sentence.split()) <= 40, sentence
        assert re.match(r"[\"\u201c(]?[A-Z]", sentence), sentence
        assert sentence.rstrip("\"\u201d)")[-1] in ".!?", sentence
        assert not re.search(r">>>|::|[{}\[\]=\\|_`]", sentence), sentence
    assert len(set(corpus.sentences)) == len(corpus)  # no duplicates


def test_both_sources_contribute(corpus):
    joined = "\n".join(corpus.sentences)
    assert "The current code generator emits no code for an assert statement when optimization is requested" in joined
    from pydoc_data.topics import topics

    topic_sentences = set(pydoc_corpus.extract_sentences([topics[k] for k in sorted(topics)]))
    from_docstrings = [s for s in corpus.sentences if s not in topic_sentences]
    assert len(topic_sentences) > 700 and len(from_docstrings) > 5_000  # 3.11.7: 902 and 9 218


def test_fingerprint_is_sha256_of_the_joined_sentences(corpus):
    expected = hashlib.sha256("\n".join(corpus.sentences).encode()).hexdigest()[:12]
    assert corpus.fingerprint == expected and re.fullmatch(r"[0-9a-f]{12}", expected)


def test_cached_corpus_equals_a_fresh_build(corpus):
    fresh = read_pydoc_corpus(use_cache_file=False)  # parses every file again
    assert fresh.sentences == corpus.sentences


def test_cache_file_is_written_outside_the_repo_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_UTILS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pydoc_corpus, "build_sentences", lambda: ["A sentence made for this test only."])
    first = read_pydoc_corpus()
    assert len(list(tmp_path.glob("pydoc_corpus_*.json"))) == 1

    def must_not_rebuild():
        raise AssertionError("the cache file should have been used")

    monkeypatch.setattr(pydoc_corpus, "build_sentences", must_not_rebuild)
    assert read_pydoc_corpus().sentences == first.sentences
    monkeypatch.delenv("COURSE_UTILS_CACHE_DIR")
    assert REPO not in pydoc_corpus.cache_dir().resolve().parents


def test_corrupt_cache_file_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_UTILS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pydoc_corpus, "build_sentences", lambda: ["A sentence made for this test only."])
    read_pydoc_corpus()
    (cache_file,) = tmp_path.glob("pydoc_corpus_*.json")
    cache_file.write_text("{ half a file")
    assert read_pydoc_corpus().sentences == ("A sentence made for this test only.",)


def test_split_is_disjoint_complete_and_seeded(corpus):
    train, held_out = corpus.split(held_out_fraction=0.1, seed=0)
    assert len(held_out) == round(0.1 * len(corpus)) and len(train) + len(held_out) == len(corpus)
    assert not set(train.sentences) & set(held_out.sentences)
    assert set(train.sentences) | set(held_out.sentences) == set(corpus.sentences)
    assert corpus.split(0.1, seed=0)[1].sentences == held_out.sentences
    assert corpus.split(0.1, seed=1)[1].sentences != held_out.sentences


def test_sample_is_seeded_and_keeps_corpus_order(corpus):
    small = corpus.sample(500, seed=0)
    assert len(small) == 500 and small.sentences == corpus.sample(500, seed=0).sentences
    position = {s: i for i, s in enumerate(corpus.sentences)}
    assert [position[s] for s in small.sentences] == sorted(position[s] for s in small.sentences)
    assert small.python_version == corpus.python_version


def test_bad_arguments_raise_clear_errors(corpus):
    with pytest.raises(ValueError, match="between 0 and 1"):
        corpus.split(held_out_fraction=10)
    with pytest.raises(ValueError, match=r"sample needs 1 <= n <="):
        corpus.sample(0)
    with pytest.raises(ValueError, match="both parts need at least one"):
        Corpus(("One sentence only here, nothing more.",), "3.x").split(0.1)
    with pytest.raises(TypeError, match="not one str"):
        Corpus("a str instead of sentences", "3.x")


def test_cleaning_keeps_prose_and_drops_code_tables_and_doctests():
    text = (
        "Heading\n*******\n\n"
        "The *while* statement repeats a block of code while a condition is true, e.g. a loop.  "
        "It stops when the condition becomes false.\n\n"
        "   while_stmt ::= \"while\" assignment_expression \":\" suite\n\n"
        ">>> x = 1\n>>> print(x)\n\n"
        "+-------+-------+\n| a     | b     |\n+-------+-------+\n"
    )
    paragraphs = prose_paragraphs(text)
    assert paragraphs == ["The while statement repeats a block of code while a condition is true, e.g. a loop.  "
                          "It stops when the condition becomes false."]
    sentences = split_sentences(paragraphs[0])
    assert sentences == ["The while statement repeats a block of code while a condition is true, e.g. a loop.",
                         "It stops when the condition becomes false."]
    assert all(is_prose_sentence(s) for s in sentences)
    assert not is_prose_sentence("Call foo_bar(x) to get the value of the thing.")  # code sign "_"
    assert not is_prose_sentence("Too short to keep.")
    assert not is_prose_sentence("the sentence starts in lower case and is otherwise fine.")
    assert not is_prose_sentence("This sentence introduces a code block that follows it:")


def test_docstrings_are_read_without_importing(tmp_path):
    source = tmp_path / "explosive.py"
    source.write_text('"""Module docstring."""\nraise SystemExit("imported!")\n'
                      'def f():\n    """Function docstring."""\n')
    assert read_docstrings(source) == ["Module docstring.", "Function docstring."]
    (tmp_path / "broken.py").write_text("def (:\n")
    assert read_docstrings(tmp_path / "broken.py") == []


def test_source_files_skip_third_party_and_tests():
    files = stdlib_source_files()
    assert len(files) > 300 and files == sorted(files, key=lambda p: p.as_posix())
    skipped = {"site-packages", "test", "tests", "idlelib", "encodings"}
    root = Path(sysconfig.get_paths()["stdlib"])
    assert not any(skipped & set(p.relative_to(root).parts) for p in files)
    assert any(p.name == "textwrap.py" for p in files)


def test_package_corpus_reads_installed_packages_without_importing_them(tmp_path, monkeypatch):
    package = tmp_path / "explosive_course_pkg"
    (package / "tests").mkdir(parents=True)
    (package / "__init__.py").write_text('"""The package reads every file of the archive in order."""\n'
                                         'raise SystemExit("imported!")\n')
    (package / "tests" / "test_it.py").write_text('"""Tests are never part of the prose we read here."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert pydoc_corpus.package_source_files("explosive_course_pkg") == [package / "__init__.py"]
    held_out = pydoc_corpus.read_package_corpus(("explosive_course_pkg",))
    assert held_out.sentences == ("The package reads every file of the archive in order.",)
    assert "explosive_course_pkg" in held_out.description


def test_package_corpus_is_prose_outside_the_documentation_corpus(corpus):
    held_out = pydoc_corpus.read_package_corpus(("sacrebleu", "tqdm"))
    assert len(held_out) > 100 and held_out == pydoc_corpus.read_package_corpus(("sacrebleu", "tqdm"))
    assert all(is_prose_sentence(s) for s in held_out.sentences)
    assert not set(held_out.sentences) & set(corpus.sentences)
    files = pydoc_corpus.package_source_files("sacrebleu")
    assert files == sorted(files, key=lambda p: p.as_posix())
    assert files and all("site-packages" in p.parts for p in files)  # the folder the corpus never reads


def test_package_corpus_refuses_what_is_not_an_installed_package():
    with pytest.raises(CourseTypeError, match=r"wrap it: \(name,\)"):
        pydoc_corpus.read_package_corpus("numpy")
    with pytest.raises(CourseValueError, match="no installed Python package"):
        pydoc_corpus.read_package_corpus(("no_such_course_package",))
    with pytest.raises(CourseValueError, match="without dots"):
        pydoc_corpus.package_source_files("numpy.linalg")
