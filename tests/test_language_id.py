"""The language-identification data: parsed correctly, cleaned, balanced, deduplicated, leakage-free, seeded."""
from __future__ import annotations

from collections import Counter

import pytest

from course_utils.data.language_id import (
    DEFAULT_LANGUAGES,
    clean_message,
    load_language_id,
    po_files,
    read_po_messages,
    translated_strings,
)


@pytest.fixture(scope="module")
def data():
    return load_language_id()


def test_parser_reads_multiline_plural_context_and_fuzzy(tmp_path):
    po = tmp_path / "demo.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        '#: a.py:1\nmsgid "Hello"\nmsgstr "Hallo"\n\n'
        'msgctxt "month"\nmsgid "May"\nmsgstr "Mai"\n\n'
        '#, fuzzy\nmsgid "Old"\nmsgstr "Alt"\n\n'
        'msgid "%(n)d file"\nmsgid_plural "%(n)d files"\nmsgstr[0] "%(n)d Datei"\nmsgstr[1] "%(n)d "\n"Dateien"\n\n'
        '#~ msgid "Obsolete"\n#~ msgstr "Veraltet"\n',
        encoding="utf-8")
    messages = read_po_messages(po)
    assert [m.msgid for m in messages] == ["Hello", "May", "Old", "%(n)d file"]
    assert messages[1].context == "month"
    assert [m.fuzzy for m in messages] == [False, False, True, False]
    assert messages[3].translations == ["%(n)d Datei", "%(n)d Dateien"]
    assert messages[3].msgid_plural == "%(n)d files"


def test_parser_agrees_with_babel_on_django_catalogues():
    from babel.messages import pofile as babel_pofile

    for path in po_files("fr")[:6]:
        ours = {(m.context, m.msgid): m.translations for m in read_po_messages(path)}
        with path.open("rb") as handle:
            catalog = babel_pofile.read_po(handle)
        theirs = {}
        for message in catalog:
            if not message.id:
                continue
            msgid = message.id[0] if isinstance(message.id, tuple) else message.id
            strings = list(message.string) if isinstance(message.string, tuple) else [message.string]
            theirs[(message.context or "", msgid)] = strings
        assert ours.keys() == theirs.keys(), path
        for key, strings in theirs.items():
            # Babel keeps only as many plural forms as the catalogue header declares; we keep them all
            assert ours[key][:len(strings)] == strings, (path, key)


def test_parser_error_names_file_and_line(tmp_path):
    po = tmp_path / "broken.po"
    po.write_text('msgid "ok"\nmsgstr "fine"\nthis is not gettext\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken.po:3"):
        read_po_messages(po)


@pytest.mark.parametrize("raw, clean", [
    ("Ensure this value has at most %(limit_value)d characters.", "Ensure this value has at most characters."),
    ("Delete %s?", "Delete ?"),
    ("Go to {page} now", "Go to now"),
    ('<a href="/x">Home</a> &rsaquo; Users', "Home Users"),
    ("Line one\nline   two", "Line one line two"),
])
def test_clean_message_strips_placeholders_and_html(raw, clean):
    assert clean_message(raw) == clean


def test_unknown_language_code_names_the_choices():
    with pytest.raises(ValueError, match="Expected one of: .*de.*es"):
        po_files("xx")


@pytest.mark.parametrize("kwargs, message", [
    ({"languages": ("de",)}, "at least 2 distinct"),
    ({"languages": ("de", "de")}, "at least 2 distinct"),
    ({"test_fraction": 1.0}, "test_fraction"),
    ({"min_chars": 10_000}, "lower min_chars"),
])
def test_bad_arguments_get_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        load_language_id(**kwargs)


def test_classes_are_balanced_in_both_splits(data):
    n_classes = len(DEFAULT_LANGUAGES)
    for labels in (data.train_labels, data.test_labels):
        counts = Counter(labels)
        assert sorted(counts) == list(range(n_classes))
        assert len(set(counts.values())) == 1
    assert len(data.train_texts) // n_classes >= 300
    assert len(data.test_texts) // n_classes >= 60


def test_no_string_is_in_both_splits_or_twice_or_in_two_classes(data):
    assert not set(data.train_texts) & set(data.test_texts)
    assert len(set(data.train_texts)) == len(data.train_texts)
    assert len(set(data.test_texts)) == len(data.test_texts)


def test_no_placeholders_or_html_remain(data):
    for text in data.train_texts + data.test_texts:
        assert "%(" not in text and "<" not in text and "{" not in text, text
        assert sum(ch.isalpha() for ch in text) >= 10, text


def test_split_is_by_source_message():
    # every translation of one English msgid is on one side: rebuild the msgid of each string and compare
    data = load_language_id(("es", "pt"))
    sources = {}
    for code in ("es", "pt"):
        sources.update(translated_strings(code))
    train_sources = {sources[text] for text in data.train_texts}
    test_sources = {sources[text] for text in data.test_texts}
    assert not train_sources & test_sources


def test_labels_match_the_language(data):
    # a spot check that cannot pass by chance: the string must come from its label's catalogue
    per_language = {code: translated_strings(code) for code in data.languages}
    for text, label in list(zip(data.test_texts, data.test_labels))[:200]:
        assert text in per_language[data.languages[label]]


def test_same_seed_same_split_other_seed_other_split(data):
    again = load_language_id()
    assert (again.train_texts, again.test_labels) == (data.train_texts, data.test_labels)
    other = load_language_id(seed=1)
    assert set(other.test_texts) != set(data.test_texts)


def test_summary_counts(data):
    summary = data.summary()
    assert summary["train total"] == summary["classes"] * summary["train per class"] == len(data.train_texts)
    assert data.language_names == ["German", "Spanish", "French", "Italian", "Dutch", "Portuguese"]


def test_cldr_phrases_balanced_deduplicated_seeded_and_unseen(data):
    from course_utils.data.language_id import load_cldr_phrases

    texts, labels = load_cldr_phrases(DEFAULT_LANGUAGES)
    assert len(texts) == len(labels) > 0
    counts = Counter(labels)
    assert len(counts) == len(DEFAULT_LANGUAGES) and len(set(counts.values())) == 1
    assert len(set(texts)) == len(texts)                       # no string in two languages (nor twice in one)
    assert not set(texts) & set(data.train_texts)              # nothing the classifier trained on
    assert all("{" not in text and "%" not in text for text in texts)         # placeholders removed
    assert "pound-force-foot" not in texts and "parts per million" not in texts   # untranslated English dropped
    assert load_cldr_phrases(DEFAULT_LANGUAGES) == (texts, labels)
    assert load_cldr_phrases(DEFAULT_LANGUAGES, seed=1) != (texts, labels)


def test_validation_split_is_cut_from_training_by_source_message(data):
    assert data.validation_texts == [] and data.validation_labels == []  # the default makes none
    split = load_language_id(("es", "pt"), validation_fraction=0.15)
    sources = {}
    for code in ("es", "pt"):
        sources.update(translated_strings(code))
    sides = {name: {sources[text] for text in texts} for name, texts in
             (("train", split.train_texts), ("validation", split.validation_texts), ("test", split.test_texts))}
    assert not sides["train"] & sides["validation"] and not sides["validation"] & sides["test"]
    assert not sides["train"] & sides["test"]
    assert len(set(Counter(split.validation_labels).values())) == 1 and len(split.validation_texts) >= 50
    plain = load_language_id(("es", "pt"))
    assert len(split.train_texts) < len(plain.train_texts)  # validation comes out of training, not out of test
