"""One list of lessons, derived from notebooks/: every place that lists the lessons lists all of them.

The course grew from eight lessons to eleven; these checks make sure the next lesson added cannot be forgotten in
lesson 00's table, in the caption of lesson 00's architecture map, in the glossary or in the README's table — and
that no text counts the notebooks wrongly. Each check is a function of the text that returns its problems, and the
last test runs each one on a doctored copy to show that it does fail.
"""
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LESSONS = [path.name[:2] for path in NOTEBOOKS]
FILES = {path.name[:2]: path.name for path in NOTEBOOKS}
GLOSSARY = ROOT / "notebooks" / "glossary.md"
README = ROOT / "README.md"

LESSON_RANGE = re.compile(r"\b(\d\d)\s*[–-]\s*(\d\d)\b")
LESSON_NUMBER = re.compile(r"\b\d\d\b")
TABLE_ROW = re.compile(r"^\|\s*(\d\d)\s*\|\s*\[[^\]]*\]\(([^)\s]+)\)", re.MULTILINE)
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15}
COUNT = re.compile(r"\b(all|the|these)\s+(\d+|" + "|".join(NUMBER_WORDS) + r")\s+(notebooks|lessons)\b"
                   r"|\b(\d+|" + "|".join(NUMBER_WORDS) + r")[- ]lesson course\b", re.IGNORECASE)


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def markdown_cells(path):
    return ["".join(cell["source"]) for cell in load(path)["cells"] if cell["cell_type"] == "markdown"]


def lesson_numbers(text):
    """Two-digit lesson numbers in ``text``; a range such as ``05–07`` counts every lesson in it."""
    found = set()
    for start, end in LESSON_RANGE.findall(text):
        found.update(f"{n:02d}" for n in range(int(start), int(end) + 1))
    found.update(LESSON_NUMBER.findall(LESSON_RANGE.sub(" ", text)))
    return found


def table_cells(text):
    """The cells of every markdown table row in ``text`` (header and separator rows left out)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or re.fullmatch(r"[|\s:-]+", line):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[-1] in ("lesson", "lessons") or cells[0] in ("#", "lesson", "lessons"):
            continue
        rows.append(cells)
    return rows


# --- the checks ---------------------------------------------------------------------------------------------------
def linked_table_problems(text, lessons, files, prefix=""):
    """A table with one row per lesson, ``| NN | [name](PREFIX NN_name.ipynb) | …``: missing, unknown or wrong links."""
    rows = dict(TABLE_ROW.findall(text))
    problems = [f"no row for lesson {lesson}" for lesson in lessons if lesson not in rows]
    problems += [f"a row for lesson {number}, which notebooks/ does not have" for number in rows
                 if number not in lessons]
    problems += [f"lesson {number} links to {link!r}, not {prefix + files[number]!r}" for number, link in rows.items()
                 if number in files and link != prefix + files[number]]
    return problems


def map_caption(notebook):
    """The markdown cell just before the first code cell that draws the architecture map."""
    cells = load(notebook)["cells"]
    index = next(i for i, cell in enumerate(cells)
                 if cell["cell_type"] == "code" and "draw_architecture(" in "".join(cell["source"]))
    return next("".join(cell["source"]) for cell in reversed(cells[:index]) if cell["cell_type"] == "markdown")


def map_label_problems(caption, lessons):
    """The caption's table says which lesson builds which part: every lesson after 00 must have its row."""
    labelled = set().union(*(lesson_numbers(cells[0]) for cells in table_cells(caption)))
    return [f"the map's caption names no part for lesson {lesson}" for lesson in lessons[1:] if lesson not in labelled]


def map_claim_problems(caption, drawn, lessons):
    """Which lessons the caption says start with the map, against the lessons whose code draws it."""
    if re.search(r"\bevery lesson starts with this map\b", caption, re.IGNORECASE):
        claimed = set(lessons[1:])
    else:
        match = re.search(r"\bLessons?\s+([0-9,–\-\s]+?(?:and\s+\d\d)?)\s+start with this map", caption)
        if match is None:
            return ["the caption does not say which lessons start with the map"]
        claimed = lesson_numbers(match.group(1))
    return ([f"the caption says lesson {n} starts with the map, but it does not draw it"
             for n in sorted(claimed - drawn)]
            + [f"lesson {n} starts with the map, but the caption does not say so" for n in sorted(drawn - claimed)])


def glossary_problems(text, lessons):
    """Every lesson is referenced in the glossary's lesson column, no reference is to a lesson that does not exist,
    and the introduction's range is the course's."""
    referenced = set().union(*(lesson_numbers(cells[-1]) for cells in table_cells(text)))
    problems = [f"no glossary term for lesson {lesson}" for lesson in lessons if lesson not in referenced]
    problems += [f"the glossary refers to lesson {n}, which notebooks/ does not have" for n in sorted(referenced)
                 if n not in lessons]
    intro = text.split("\n## ", 1)[0]
    stated = LESSON_RANGE.search(intro)
    if stated is None or stated.groups() != (lessons[0], lessons[-1]):
        problems.append(f"the introduction should state the lessons {lessons[0]}–{lessons[-1]}, "
                        f"not {stated.group(0) if stated else 'none'}")
    return problems


def stale_count_problems(text, n_lessons):
    """"all eight notebooks", "the seven lessons", "an eight-lesson course": a count that is not the course's."""
    problems = []
    for match in COUNT.finditer(text):
        word = (match.group(2) or match.group(4)).lower()
        if (int(word) if word.isdigit() else NUMBER_WORDS[word]) != n_lessons:
            problems.append(f"{match.group(0)!r}: the course has {n_lessons} lessons")
    return problems


def readme_notebook_section(readme):
    return readme.split("## The notebooks", 1)[1].split("\n## ", 1)[0]


# --- the course as it is ------------------------------------------------------------------------------------------
def test_the_lesson_list_is_consecutive_from_00():
    assert LESSONS == [f"{n:02d}" for n in range(len(LESSONS))], LESSONS


def test_lesson_00_table_lists_every_lesson():
    first = "\n".join(markdown_cells(NOTEBOOKS[0]))
    assert linked_table_problems(first, LESSONS, FILES) == []


def test_architecture_map_labels_every_lesson():
    assert map_label_problems(map_caption(NOTEBOOKS[0]), LESSONS) == []


def test_the_map_claim_matches_the_lessons_that_draw_it():
    drawn = {path.name[:2] for path in NOTEBOOKS[1:]
             if any("draw_architecture(" in "".join(cell["source"]) for cell in load(path)["cells"]
                    if cell["cell_type"] == "code")}
    assert map_claim_problems(map_caption(NOTEBOOKS[0]), drawn, LESSONS) == []


def test_glossary_covers_every_lesson():
    assert glossary_problems(GLOSSARY.read_text(encoding="utf-8"), LESSONS) == []


def test_readme_table_lists_every_lesson():
    section = readme_notebook_section(README.read_text(encoding="utf-8"))
    assert linked_table_problems(section, LESSONS, FILES, prefix="notebooks/") == []


@pytest.mark.parametrize("path", [README, GLOSSARY, *NOTEBOOKS], ids=lambda p: p.name)
def test_no_stale_lesson_counts(path):
    text = "\n".join(markdown_cells(path)) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")
    assert stale_count_problems(text, len(LESSONS)) == []


# --- each check fails on a doctored copy --------------------------------------------------------------------------
def without_row(text, lesson):
    return "\n".join(line for line in text.splitlines() if not re.match(rf"\|\s*{lesson}\s*\|", line))


def without_glossary_lesson(text, lesson):
    lines = []
    for line in text.splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2 and lesson in cells[-2]:
            kept = [n for n in re.split(r"\s*,\s*", cells[-2].strip()) if n != lesson]
            if not kept:
                continue
            cells[-2] = f" {', '.join(kept)} "
            line = "|".join(cells)
        lines.append(line)
    return "\n".join(lines)


LAST = LESSONS[-1]
CAPTION = map_caption(NOTEBOOKS[0])
DRAWN = set(LESSONS[1:-1])
DOCTORED = {
    "lesson 00's table without the last lesson": lambda: linked_table_problems(
        without_row("\n".join(markdown_cells(NOTEBOOKS[0])), LAST), LESSONS, FILES),
    "lesson 00's table linking the wrong file": lambda: linked_table_problems(
        "\n".join(markdown_cells(NOTEBOOKS[0])).replace(f"]({FILES[LAST]})", "](elsewhere.ipynb)"), LESSONS, FILES),
    "the map's caption without the last lesson": lambda: map_label_problems(without_row(CAPTION, LAST), LESSONS),
    "the map's caption claiming every lesson": lambda: map_claim_problems(
        "Every lesson starts with this map, its own part highlighted.", DRAWN, LESSONS),
    "the glossary without the last lesson": lambda: glossary_problems(
        without_glossary_lesson(GLOSSARY.read_text(encoding="utf-8"), LAST), LESSONS),
    "the glossary's introduction stopping at 07": lambda: glossary_problems(
        re.sub(r"\(00–\d\d\)", "(00–07)", GLOSSARY.read_text(encoding="utf-8"), count=1), LESSONS),
    "the README's table without the last lesson": lambda: linked_table_problems(
        without_row(readme_notebook_section(README.read_text(encoding="utf-8")), LAST), LESSONS, FILES,
        prefix="notebooks/"),
    "the README counting eight notebooks": lambda: stale_count_problems(
        README.read_text(encoding="utf-8") + "\nexecuting all eight notebooks takes minutes", len(LESSONS)),
}


@pytest.mark.parametrize("doctored", DOCTORED.values(), ids=list(DOCTORED))
def test_each_check_fails_on_a_doctored_copy(doctored):
    assert doctored(), "the check accepted a copy with a lesson missing"


def test_lesson_numbers_reads_ranges_and_lists():
    assert lesson_numbers("05–07") == {"05", "06", "07"}
    assert lesson_numbers("06, 08") == {"06", "08"}
    assert lesson_numbers("01-02 and 10") == {"01", "02", "10"}
