"""The course's website, read in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright.

The site is the one ``python tools/build_book.py`` builds (``COURSE_BOOK_SITE=_build/book/html`` tests an already
built site; otherwise the test builds one into a temporary folder first). It is served on 127.0.0.1, and every page of
the book is loaded as a reader would: no request may fail or leave the machine, no TeX may be left unrendered, every
image must have loaded, every lesson has its previous/next links and its "download this notebook" link (which serves
the stored notebook), and each widget explorer is drawn with its note that it needs a running notebook to move.
``test_screenshots`` saves the landing page and lesson 03 as PNG files to look at.

Run it: ``pip install -r requirements-book.txt`` and ``apt-get install chromium``, then
``pytest -n 0 tests/test_book.py`` (MAINTAINING.md, "The course as a website"). Without Playwright, Chromium or
jupyter-book the browser tests are skipped with the reason: a learner's ``pytest`` never needs them (CI sets
``COURSE_BOOK_REQUIRED=1``, which turns a missing piece into a failure). The first tests here need none of them: they
check the build script's staging (links, download line, explorer note) and its link check on small made-up inputs.
"""
from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import re
import shutil
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
OTHER_PAGES = ["index", "notebooks/glossary", "TEACHING", "MAINTAINING", "SECURITY"]
SKIP_WHY = "the website test needs {} (pip install -r requirements-book.txt; apt-get install chromium)"


def chromium_path() -> str | None:
    candidates = [os.environ.get("COURSE_BOOK_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"]
    return next((shutil.which(c) for c in candidates if c and shutil.which(c)), None)


def need(what: str) -> None:
    """Skip, or fail where the website test must run (CI sets COURSE_BOOK_REQUIRED=1)."""
    if os.environ.get("COURSE_BOOK_REQUIRED") == "1":
        pytest.fail(SKIP_WHY.format(what) + "; COURSE_BOOK_REQUIRED=1 asks for it to run", pytrace=False)
    pytest.skip(SKIP_WHY.format(what))


def load_build_book():
    spec = importlib.util.spec_from_file_location("build_book", ROOT / "tools" / "build_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_book = load_build_book()  # standard library only: its staging and link check are tested without a browser


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    given = os.environ.get("COURSE_BOOK_SITE")
    if not given and importlib.util.find_spec("jupyter_book") is None:
        need("jupyter-book to build the site (or COURSE_BOOK_SITE=<built site>)")
    if given:
        path = Path(given).resolve()
        assert (path / "index.html").exists(), f"COURSE_BOOK_SITE={given} holds no built site (index.html)"
        return path
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py"), "--out", str(out), "--quiet"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, f"tools/build_book.py failed:\n{result.stdout}\n{result.stderr}"
    return out / "html"


def test_links_point_at_pages_and_linked_files_are_copied(tmp_path):
    lessons = build_book.lessons()
    stager = build_book.Stager(tmp_path, build_book.page_map(lessons))
    text = ("[lesson](notebooks/{0}) [home](README.md#quick-start) [file](tools/grading.Dockerfile) "
            "[web](https://example.org/x.md) [here](#top)").format(lessons[0].name)
    assert stager.rewrite_links(text, ROOT / "TEACHING.md") == text.replace("README.md#", "index.md#")
    assert (tmp_path / "tools" / "grading.Dockerfile").read_bytes() == (ROOT / "tools/grading.Dockerfile").read_bytes()
    from_lesson = stager.rewrite_links("[g](glossary.md) [r](../README.md) [t](../TEACHING.md)", lessons[0])
    assert from_lesson == "[g](glossary.md) [r](../index.md) [t](../TEACHING.md)"


def test_a_lesson_gets_its_download_line_and_a_note_under_each_explorer(tmp_path):
    notebook = tmp_path / "repo" / "99_demo.ipynb"
    notebook.parent.mkdir()
    widget = {"output_type": "display_data", "metadata": {},
              "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "m"}, "text/plain": ["w"]}}
    cells = [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# 99 · Demo\n\nObjectives."},
             {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": 1, "source": "explorer()",
              "outputs": [widget]},
             {"cell_type": "markdown", "id": "c", "metadata": {}, "source": "After."}]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (tmp_path / "site" / "notebooks").mkdir(parents=True)
    stager = build_book.Stager(tmp_path / "site", {notebook: "notebooks/99_demo.ipynb"})
    assert build_book.stage_notebook(notebook, stager) == 1
    staged = json.loads((tmp_path / "site" / "notebooks" / "99_demo.ipynb").read_text())["cells"]
    title = staged[0]["source"].split("\n")
    assert title[0] == "# 99 · Demo" and 'href="99_demo.ipynb" download' in title[2]
    assert [c["id"] for c in staged][1:] == ["b", staged[2]["id"], "c"] and staged[2]["cell_type"] == "markdown"
    assert "its controls move only in a running notebook" in staged[2]["source"]
    assert (tmp_path / "site" / "_extra" / "notebooks" / "99_demo.ipynb").read_bytes() == notebook.read_bytes()


def test_the_link_check_finds_broken_links_missing_anchors_and_off_site_loads(tmp_path):
    (tmp_path / "index.html").write_text(
        '<h1 id="top">x</h1><a href="#top">ok</a><a href="page.html#here">ok</a><a href="https://example.org">ok</a>'
        '<a href="gone.html">broken</a><a href="page.html#nowhere">no anchor</a>'
        '<script src="https://cdn.example.org/x.js"></script><img src="_static/missing.png">')
    (tmp_path / "page.html").write_text('<p id="here">here</p>')
    assert sorted(build_book.check_site(tmp_path)) == [
        "index.html: _static/missing.png does not resolve", "index.html: gone.html does not resolve",
        "index.html: loads https://cdn.example.org/x.js from another site",
        "index.html: page.html#nowhere: no element with that id"]


def test_vendored_scripts_are_pinned_to_one_version_and_its_hash():
    for package, spec in build_book.VENDORED.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", spec["version"]), (package, spec["version"])
        assert re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", spec["integrity"]), package


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def base_url(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    if importlib.util.find_spec("playwright") is None:
        need("Playwright")
    executable = chromium_path()
    if executable is None:
        need("a Chromium browser (/usr/bin/chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True)
        yield chromium
        chromium.close()


# what a reader would see of the page once scripts have run, measured in the page
READ_PAGE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  for (const img of document.images) { img.loading = 'eager'; }
  await Promise.all([...document.images].map(img => img.decode().catch(() => null)));
  const main = document.querySelector('main') || document.body;
  const copy = main.cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, mjx-container, .output').forEach(e => e.remove());
  const bare = [...document.querySelectorAll('.math')].filter(e => !e.querySelector('mjx-container'));
  return {
    text: copy.innerText,
    math: document.querySelectorAll('mjx-container').length,
    bareMath: bare.map(e => e.textContent.slice(0, 80)),
    images: [...document.images].map(img => ({src: img.getAttribute('src'),
                                              ok: img.complete && img.naturalWidth > 0})),
    prev: (document.querySelector('.prev-next-area a.left-prev') || {}).href || null,
    next: (document.querySelector('.prev-next-area a.right-next') || {}).href || null,
    download: (document.querySelector('main a[download]') || {}).href || null,
    widgetViews: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
    widgetsDrawn: document.querySelectorAll('.jupyter-widgets.widget-container, .jupyter-widgets.widget-inline-hbox,'
                                            + ' .jupyter-widgets.widget-box, .jupyter-widgets.widget-output').length,
    title: document.title,
  };
}"""
# The one script error a page may show: @jupyter-widgets/html-manager 1.0.6 typesets each widget's label with
# MathJax 2's API (MathJax.Hub.Queue), and the site serves MathJax 3; the explorer is drawn all the same.
KNOWN_SCRIPT_ERROR = "Cannot read properties of undefined (reading 'Queue')"
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\(frac|sqrt|mathbf|mathrm|text|sum|begin|end|cdot|top)\b")


def load(browser, url: str, base: str) -> tuple[dict, list[str]]:
    """Open the page, wait for the network to be idle and MathJax and the widgets to finish; return what it shows
    and every problem with its requests."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda e: KNOWN_SCRIPT_ERROR in str(e) or problems.append(f"script error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))
    page.on("request", lambda r: r.url.startswith((base, "data:", "blob:", "about:"))
            or problems.append(f"off-site request: {r.url}"))
    try:
        response = page.goto(url, wait_until="networkidle")
        assert response is not None and response.ok, f"{url}: {response and response.status}"
        seen = page.evaluate(READ_PAGE)
        page.wait_for_load_state("networkidle")
    finally:
        page.close()
    return seen, problems


@pytest.mark.parametrize("name", LESSONS + OTHER_PAGES)
def test_page_reads_in_a_browser(browser, base_url, site, name):
    page_path = f"notebooks/{name}" if name in LESSONS else name
    seen, problems = load(browser, f"{base_url}{page_path}.html", base_url)
    assert not problems, f"{name}: requests that failed or left the machine, or script errors: {problems}"
    assert not seen["bareMath"], f"{name}: math MathJax did not render: {seen['bareMath'][:5]}"
    raw = RAW_TEX.search(seen["text"])
    context = seen["text"][max(0, raw.start() - 60):raw.end() + 60] if raw else ""
    assert raw is None, f"{name}: raw TeX left in the page: ...{context}..."
    broken = [img["src"] for img in seen["images"] if not img["ok"]]
    assert not broken, f"{name}: images that did not load: {broken}"
    if name in LESSONS:
        assert seen["prev"] and seen["next"], f"{name}: previous/next links missing ({seen['prev']}, {seen['next']})"
        notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
        has_math = any(re.search(r"\$|\\\(|\\begin", "".join(c["source"])) for c in notebook["cells"]
                       if c["cell_type"] == "markdown")
        assert seen["math"] > 0 or not has_math, f"{name}: its markdown has math and the page shows none"
        assert seen["download"] and seen["download"].endswith(f"/{name}.ipynb"), f"{name}: no download link"
        stored = (site / "notebooks" / f"{name}.ipynb").read_bytes()
        assert stored == (ROOT / "notebooks" / f"{name}.ipynb").read_bytes(), (
            f"{name}: the download is not the stored notebook (a site built before the notebook last changed?)")
        if seen["widgetViews"]:
            assert seen["widgetsDrawn"] >= seen["widgetViews"], (
                f"{name}: {seen['widgetViews']} explorer(s) stored, {seen['widgetsDrawn']} drawn")
            assert seen["text"].count("its controls move only in a running notebook") >= seen["widgetViews"], (
                f"{name}: an explorer lacks its note that it needs a running notebook")


def test_screenshots(browser, base_url, site):
    """The landing page, lesson 03 (top and a figure further down) and the first widget explorer with its note, as a
    reader sees them: look at the PNG files this leaves in COURSE_BOOK_SCREENSHOTS (default: beside the site)."""
    folder = Path(os.environ.get("COURSE_BOOK_SCREENSHOTS", site.parent / "screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    lesson = next((name for name in LESSONS if name.startswith("03_")), LESSONS[0])
    views = [("landing", "index", None), ("lesson03-top", f"notebooks/{lesson}", None),
             ("lesson03-figure", f"notebooks/{lesson}", "main img >> nth=3")]
    explorer = next((name for name in LESSONS if "widget-view+json" in (ROOT / "notebooks" / f"{name}.ipynb").read_text(
        encoding="utf-8")), None)
    if explorer:
        views.append((f"explorer-{explorer[:2]}", f"notebooks/{explorer}", ".jupyter-widgets >> nth=0"))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    shots = []
    try:
        for shot, path, where in views:
            page.goto(f"{base_url}{path}.html", wait_until="networkidle")
            page.evaluate(READ_PAGE)
            if where and page.locator(where).count():
                page.locator(where).scroll_into_view_if_needed()
                page.evaluate("window.scrollBy(0, -60)")
            shots.append(folder / f"{shot}.png")
            page.screenshot(path=str(shots[-1]))
    finally:
        page.close()
    assert all(p.stat().st_size > 10_000 for p in shots), [(p.name, p.stat().st_size) for p in shots]
