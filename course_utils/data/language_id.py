"""Language identification on real translated sentences: which language is this interface string written in?

Source
    The gettext translation catalogues (``.po`` files) that ship inside the Django package:
    ``django/conf/locale/<lang>/LC_MESSAGES/django.po`` and ``django/contrib/<app>/locale/<lang>/LC_MESSAGES/*.po``.
    Every ``msgstr`` there was written by a human volunteer translating Django's English interface strings
    ("This field is required.", "Enter a valid email address.", ...). Nothing is downloaded: ``pip install django``
    puts the files on disk, on Linux, macOS and Windows alike.

Licence
    Django, its translations included, is distributed under the BSD 3-Clause licence
    (Copyright (c) Django Software Foundation and individual contributors). The course only reads the installed
    files; it copies none of them into its repository.

What the loader does (all deterministic for a given ``seed`` and Django version)
    1. Parse every ``.po`` file of each language with :func:`read_po_messages` (header and ``fuzzy`` entries
       skipped; plural forms kept).
    2. Clean each translation with :func:`clean_message`: remove printf/format placeholders (``%(name)s``, ``%s``,
       ``{0}``), HTML tags and entities, collapse white space.
    3. Keep strings with at least ``min_chars`` letters, drop exact duplicates inside a language, and drop strings
       that occur in more than one of the chosen languages (e.g. "Email" or "Post" — no model could tell them apart).
    4. Split into train and test **by source message**: all translations of one English ``msgid`` land on the same
       side, so the test set holds only messages whose meaning the model never saw in any language, and no string is
       in both splits.
    5. Balance: every language gets the same number of train strings, and the same number of test strings (the
       smallest class decides; the others are sub-sampled with the seeded generator).

Size per class (Django 5.2.19, ``DEFAULT_LANGUAGES``, ``min_chars=10``, ``test_fraction=0.2``, ``seed=0``)
    Cleaned strings per language: de 544, es 553, fr 561, it 519, nl 537, pt 501; 33 of these (counted once per
    language) are dropped because the same text occurs in two languages. After balancing: **393 train and 98 test
    strings per language** (2358 + 588), mean length 41 characters. Another Django version gives slightly different
    counts.

Rejected candidate (measured): Babel's CLDR display names (``babel.Locale(code).languages``, ``.territories``,
    ...; Unicode licence). About 700-1000 names per language survive the cross-language deduplication, but they
    are short (14 characters on average) and mostly proper nouns; even a character-n-gram linear model reaches
    only 69 % on them, against 94 % on the Django strings (``benchmarks/language_id_candidates.py``).

Why these languages
    Six closely related European languages — Spanish, Portuguese, Italian, French (Romance) and German, Dutch
    (West Germanic) — so that the task is not solved by the alphabet alone: ``es``/``pt``/``it`` share most
    letters and many word stems, ``de``/``nl`` likewise.
"""
from __future__ import annotations

__all__ = ["DEFAULT_LANGUAGES", "LANGUAGE_NAMES", "LanguageIdData", "PoMessage", "clean_message", "django_locale_root",
           "load_cldr_phrases", "load_language_id", "po_files", "read_po_messages", "translated_strings"]

import ast
import importlib.util
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CourseTypeError, CourseValueError
from ..validation import check_int, check_non_negative_int, check_positive_int, check_real, check_str, describe

DEFAULT_LANGUAGES: tuple[str, ...] = ("de", "es", "fr", "it", "nl", "pt")

LANGUAGE_NAMES: dict[str, str] = {
    "ca": "Catalan", "cs": "Czech", "da": "Danish", "de": "German", "en": "English", "es": "Spanish",
    "fr": "French", "gl": "Galician", "it": "Italian", "nb": "Norwegian Bokmål", "nl": "Dutch", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "sk": "Slovak", "sv": "Swedish",
}

_PO_KEYWORD = re.compile(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?)\s+(".*")\s*$')
_PLACEHOLDER = re.compile(
    r"%\([^)]*\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]"  # %(name)s, %(count)d
    r"|%[-#0 +]*\d*(?:\.\d+)?[sdifrx]"  # %s, %d, %.2f
    r"|\{[^{}]*\}"  # {0}, {name}
    r"|<[^<>]+>"  # HTML tags
    r"|&[a-zA-Z]+;|&#\d+;"  # HTML entities
)
_WHITESPACE = re.compile(r"\s+")
_SPACE_BEFORE_STOP = re.compile(r" ([.,])")  # left behind where a placeholder stood before a full stop or comma
_LETTER = re.compile(r"[^\W\d_]")


@dataclass
class PoMessage:
    """One entry of a ``.po`` catalogue: the English source text and its translations (one per plural form)."""

    msgid: str
    translations: list[str]
    context: str = ""
    fuzzy: bool = False
    msgid_plural: str = ""


def _unquote(quoted: str, path: Path, line_number: int) -> str:
    try:
        return ast.literal_eval(quoted)
    except (ValueError, SyntaxError) as error:
        raise CourseValueError(
            f"{path}:{line_number}: expected a double-quoted C string, got {quoted!r}. "
            "Is this a valid gettext .po file?"
        ) from error


def check_path(name: str, value: object) -> Path:
    """``value`` as a :class:`~pathlib.Path`; refuses anything that is not a str or path."""
    if not isinstance(value, (str, Path)):
        raise CourseTypeError(f"{name} must be a str or pathlib.Path, got {describe(value)}")
    return Path(value)


def read_po_messages(path: str | Path) -> list[PoMessage]:
    """Parse a gettext ``.po`` file into :class:`PoMessage` entries (the header entry with empty msgid is skipped).

    Handles multi-line strings, ``msgctxt``, plural forms (``msgstr[0]``, ``msgstr[1]``, ...) and the ``#, fuzzy``
    flag. Obsolete entries (``#~``) are comments and are ignored.
    """
    path = check_path("path", path)
    if not path.is_file():
        raise CourseValueError(f"no such .po file: {path}; pass a path from po_files(language)")
    messages: list[PoMessage] = []
    fields: dict[str, str] = {}
    fuzzy_flag = False
    current_key: str | None = None

    def finish_entry() -> None:
        nonlocal fields, fuzzy_flag, current_key
        if "msgid" in fields and fields["msgid"]:
            translations = [value for key, value in sorted(fields.items()) if key.startswith("msgstr")]
            messages.append(
                PoMessage(
                    msgid=fields["msgid"], translations=translations, context=fields.get("msgctxt", ""),
                    fuzzy=fuzzy_flag, msgid_plural=fields.get("msgid_plural", ""),
                )
            )
        fields, fuzzy_flag, current_key = {}, False, None

    with path.open(encoding="utf-8") as handle:
        for line_number, raw_line in enumerate(handle, start=1):
            line = raw_line.strip()
            if not line:
                continue
            if line.startswith("#"):
                if any(key.startswith("msgstr") for key in fields):
                    finish_entry()
                if line.startswith("#,") and "fuzzy" in line:
                    fuzzy_flag = True
                continue
            match = _PO_KEYWORD.match(line)
            if match:
                key, quoted = match.groups()
                if key in ("msgctxt", "msgid") and any(k.startswith("msgstr") for k in fields):
                    finish_entry()
                current_key = key
                fields[key] = _unquote(quoted, path, line_number)
            elif line.startswith('"') and current_key is not None:
                fields[current_key] += _unquote(line, path, line_number)
            else:
                raise CourseValueError(
                    f"{path}:{line_number}: cannot parse line {line!r} (expected msgid/msgstr/\"...\").")
    finish_entry()
    return messages


def clean_message(text: str) -> str:
    """Remove placeholders (``%(name)s``, ``%s``, ``{0}``), HTML tags/entities, and collapse white space.

    >>> clean_message('Ensure this value has at most %(limit_value)d characters (it has %(show_value)d).')
    'Ensure this value has at most characters (it has ).'
    >>> clean_message('<a href="{url}">Log in</a> again as %(username)s.')
    'Log in again as.'
    """
    check_str("text", text)
    text = _PLACEHOLDER.sub(" ", text)
    text = _WHITESPACE.sub(" ", text).strip()
    return _SPACE_BEFORE_STOP.sub(r"\1", text)


def django_locale_root() -> Path:
    """Directory of the installed Django package; raises a clear error if Django is not installed."""
    spec = importlib.util.find_spec("django")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "The language-identification data comes from Django's translation files, but Django is not installed. "
            "Fix: `pip install django` (no network is needed afterwards)."
        )
    return Path(spec.origin).parent


def po_files(language: str, root: Path | None = None) -> list[Path]:
    """All ``.po`` catalogues Django ships for ``language`` (sorted, so the order is reproducible)."""
    check_str("language", language, hint=" Use a Django locale code such as 'de'.")
    if not language or "/" in language or "*" in language or "?" in language or "[" in language:
        raise CourseValueError(f"language must be a locale code such as 'de' or 'pt_BR', got {language!r}")
    root = django_locale_root() if root is None else check_path("root", root)
    files = sorted(root.glob(f"**/locale/{language}/LC_MESSAGES/*.po"))
    if not files:
        available = sorted({p.parts[-3] for p in root.glob("conf/locale/*/LC_MESSAGES/django.po")})
        raise CourseValueError(
            f"No Django translation files for language code {language!r}. "
            f"Expected one of: {', '.join(available)}."
        )
    return files


def translated_strings(language: str, min_chars: int = 10, root: Path | None = None) -> dict[str, str]:
    """Cleaned translations of one language, ``{text: source msgid}``; duplicates inside the language removed.

    A text that translates several source messages is kept once, keyed to the alphabetically first msgid, so
    the split by source message stays deterministic.
    """
    check_non_negative_int("min_chars", min_chars)
    strings: dict[str, str] = {}
    for path in po_files(language, root):
        for message in read_po_messages(path):
            if message.fuzzy:
                continue
            source = clean_message(message.msgid)
            for translation in message.translations:
                text = clean_message(translation)
                if len(_LETTER.findall(text)) < min_chars:
                    continue
                if text not in strings or source < strings[text]:
                    strings[text] = source
    return strings


@dataclass
class LanguageIdData:
    """Balanced train/test split (and a validation split when asked for). Labels index into ``languages``.

    ``train_texts[i]`` has label ``train_labels[i]``; every split is shuffled. ``validation_texts`` is empty unless
    ``load_language_id(validation_fraction=...)`` split one off the training source messages.
    """

    languages: tuple[str, ...]
    train_texts: list[str]
    train_labels: list[int]
    test_texts: list[str]
    test_labels: list[int]
    dropped_shared: int = 0
    per_class_available: dict[str, int] = field(default_factory=dict)
    validation_texts: list[str] = field(default_factory=list)
    validation_labels: list[int] = field(default_factory=list)

    @property
    def language_names(self) -> list[str]:
        return [LANGUAGE_NAMES.get(code, code) for code in self.languages]

    def summary(self) -> dict[str, int]:
        """Counts for a table: strings per class in each split, and strings dropped as shared between languages."""
        n = len(self.languages)
        counts = {"classes": n, "train per class": len(self.train_texts) // n}
        if self.validation_texts:
            counts["validation per class"] = len(self.validation_texts) // n
        counts["test per class"] = len(self.test_texts) // n
        counts["train total"] = len(self.train_texts)
        if self.validation_texts:
            counts["validation total"] = len(self.validation_texts)
        counts["test total"] = len(self.test_texts)
        counts["dropped (same text in 2+ languages)"] = self.dropped_shared
        return counts


def check_languages(languages: object) -> tuple[str, ...]:
    """``languages`` as a tuple of at least 2 distinct locale codes, or a course error."""
    if isinstance(languages, str) or not hasattr(languages, "__iter__"):
        raise CourseTypeError(f"languages must be a tuple of locale codes such as ('de', 'fr'), got "
                              f"{describe(languages)}")
    languages = tuple(languages)
    for code in languages:
        check_str("each language", code, hint=" Use Django locale codes such as 'de'.")
    if len(languages) < 2 or len(set(languages)) != len(languages):
        raise CourseValueError(f"languages must list at least 2 distinct codes, got {languages!r}.")
    return languages


def load_language_id(
    languages: tuple[str, ...] | list[str] = DEFAULT_LANGUAGES,
    min_chars: int = 10,
    test_fraction: float = 0.2,
    seed: int = 0,
    root: Path | None = None,
    validation_fraction: float = 0.0,
) -> LanguageIdData:
    """Build the balanced, deduplicated, leakage-free language-ID split described in the module docstring.

    Args:
        languages: Django locale codes (at least 2, no repeats), e.g. ``("de", "es", "fr", "it", "nl", "pt")``.
        min_chars: minimum number of letters a cleaned string must have (short strings such as "Mai" are ambiguous).
        test_fraction: share of source messages whose translations go to the test split, in (0, 1).
        seed: seed of the split and of the class balancing.
        root: directory to search for ``locale/<lang>/LC_MESSAGES/*.po`` (default: the installed Django).
        validation_fraction: share of the *training* source messages whose translations go to a validation split,
            in [0, 1); 0 (the default) makes none and leaves train and test exactly as without it. Like the test
            split, it is cut by source message, so no meaning is in both training and validation.
    """
    languages = check_languages(languages)
    check_non_negative_int("min_chars", min_chars)
    check_real("test_fraction", test_fraction)
    if not 0.0 < test_fraction < 1.0:
        raise CourseValueError(f"test_fraction must be in (0, 1), got {test_fraction}.")
    check_real("validation_fraction", validation_fraction)
    if not 0.0 <= validation_fraction < 1.0:
        raise CourseValueError(f"validation_fraction must be in [0, 1), got {validation_fraction}. Fix: a share "
                               "such as 0.15 of the training source messages, or 0 for no validation split.")
    check_int("seed", seed)
    if root is not None:
        root = check_path("root", root)

    per_language = {code: translated_strings(code, min_chars, root) for code in languages}
    occurrences = Counter(text for strings in per_language.values() for text in strings)
    dropped = sum(count for count in occurrences.values() if count > 1)

    sources = sorted({source for strings in per_language.values() for source in strings.values()})
    rng = random.Random(seed)
    rng.shuffle(sources)
    n_test = round(len(sources) * test_fraction)
    test_sources = set(sources[:n_test])
    validation_sources = set(sources[n_test: n_test + round((len(sources) - n_test) * validation_fraction)])
    sides = ("train", "test", "validation") if validation_sources else ("train", "test")

    splits: dict[str, dict[str, list[str]]] = {side: defaultdict(list) for side in sides}
    for code, strings in per_language.items():
        for text in sorted(strings):
            if occurrences[text] > 1:
                continue
            source = strings[text]
            side = "test" if source in test_sources else "validation" if source in validation_sources else "train"
            splits[side][code].append(text)

    result: dict[str, tuple[list[str], list[int]]] = {"validation": ([], [])}
    for side in sides:
        size = min(len(splits[side][code]) for code in languages)
        if size == 0:
            raise CourseValueError(f"No {side} strings left for some language; lower min_chars (got {min_chars}).")
        pairs = [(text, label) for label, code in enumerate(languages) for text in rng.sample(splits[side][code], size)]
        rng.shuffle(pairs)
        result[side] = ([text for text, _ in pairs], [label for _, label in pairs])

    return LanguageIdData(
        languages=languages,
        train_texts=result["train"][0], train_labels=result["train"][1],
        test_texts=result["test"][0], test_labels=result["test"][1],
        dropped_shared=dropped,
        per_class_available={code: len(strings) for code, strings in per_language.items()},
        validation_texts=result["validation"][0], validation_labels=result["validation"][1],
    )


def _cldr_strings(node: object) -> list[str]:
    """Every string inside a (nested) Babel locale-data mapping."""
    if isinstance(node, str):
        return [node]
    if hasattr(node, "items"):
        return [text for _, value in sorted(node.items(), key=lambda item: str(item[0]))
                for text in _cldr_strings(value)]
    return []


def load_cldr_phrases(languages: tuple[str, ...] | list[str] = DEFAULT_LANGUAGES, min_chars: int = 10,
                      per_class: int = 300, seed: int = 0) -> tuple[list[str], list[int]]:
    """A second, unseen source for language ID: phrases from Unicode CLDR as shipped inside Babel (no download).

    The strings are CLDR's units and relative dates written out in each language ("{0} kilómetros por hora",
    "hace {0} semanas", "next month"), cleaned like the Django strings (placeholders removed, at least
    ``min_chars`` letters), strings that occur in two languages dropped, then ``per_class`` strings per language
    sampled with ``seed`` (fewer if a language has fewer). Currency and territory names are left out: they are
    mostly proper nouns. Strings that also occur in Django's catalogues of these languages (e.g. "vor Minuten")
    are dropped, so nothing here can have been trained on, and so are strings identical to CLDR's English ones
    (e.g. "pound-force-foot" left untranslated in Dutch), which would be label noise. Returns ``(texts, labels)``,
    labels indexing ``languages``. Licence: Unicode License v3 (CLDR data, read from the installed Babel).
    """
    from babel import Locale, UnknownLocaleError

    languages = check_languages(languages)
    check_non_negative_int("min_chars", min_chars)
    check_positive_int("per_class", per_class)
    check_int("seed", seed)
    per_language = {}
    for code in languages:
        try:
            data = Locale.parse(code)._data
        except (ValueError, LookupError, UnknownLocaleError) as error:
            raise CourseValueError(f"no CLDR data for language {code!r} ({error}); use locale codes such as 'de'") \
                from error
        raw = _cldr_strings(data["unit_patterns"]) + _cldr_strings(data["unit_display_names"]) + \
            _cldr_strings(data["date_fields"])
        cleaned = {clean_message(text) for text in raw}
        per_language[code] = sorted(text for text in cleaned if len(_LETTER.findall(text)) >= min_chars)
    django = {text for code in languages for text in translated_strings(code, min_chars)}   # never seen in training
    english_data = Locale.parse("en")._data                     # strings left untranslated: label noise, dropped
    english = {clean_message(text) for text in _cldr_strings(english_data["unit_patterns"])
               + _cldr_strings(english_data["unit_display_names"]) + _cldr_strings(english_data["date_fields"])}
    per_language = {code: [text for text in strings if text not in django and text not in english]
                    for code, strings in per_language.items()}
    occurrences = Counter(text for strings in per_language.values() for text in strings)
    rng = random.Random(seed)
    size = min(per_class, *(sum(occurrences[t] == 1 for t in strings) for strings in per_language.values()))
    pairs = [(text, label) for label, code in enumerate(languages)
             for text in rng.sample([t for t in per_language[code] if occurrences[t] == 1], size)]
    rng.shuffle(pairs)
    return [text for text, _ in pairs], [label for _, label in pairs]
