"""The course's website, read in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright.

The site is the one ``python tools/build_book.py`` builds (``COURSE_BOOK_SITE=_build/book/html`` tests an already
built site; otherwise the test builds one into a temporary folder first). It is served on 127.0.0.1, and every page of
the book is loaded as a reader would: no request may fail or leave the machine, no TeX may be left unrendered, every
image must have loaded, every lesson has its previous/next links and its "download this notebook" link (which serves
the stored notebook), and each widget explorer is drawn with its note that it needs a running notebook to move.
``test_screenshots`` saves the landing page and lesson 03 as PNG files to look at.

Run it: ``pip install -r requirements-book.txt`` and ``apt-get install chromium``, then
``pytest -n 0 tests/test_book.py`` (MAINTAINING.md, "The course as a website"). Without Playwright, Chromium or
jupyter-book every test here is skipped with the reason: a learner's ``pytest`` never needs them (CI sets
``COURSE_BOOK_REQUIRED=1``, which turns a missing piece into a failure).
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


def _missing(what: str) -> None:
    """Skip the module, or fail where the website test must run (CI sets COURSE_BOOK_REQUIRED=1)."""
    if os.environ.get("COURSE_BOOK_REQUIRED") == "1":
        raise RuntimeError(SKIP_WHY.format(what) + "; COURSE_BOOK_REQUIRED=1 asks for it to run")
    pytest.skip(SKIP_WHY.format(what), allow_module_level=True)


if importlib.util.find_spec("playwright") is None:
    _missing("Playwright")
CHROMIUM = chromium_path()
if CHROMIUM is None:
    _missing("a Chromium browser (/usr/bin/chromium)")
if not os.environ.get("COURSE_BOOK_SITE") and importlib.util.find_spec("jupyter_book") is None:
    _missing("jupyter-book to build the site (or COURSE_BOOK_SITE=<built site>)")

from playwright.sync_api import sync_playwright  # noqa: E402  (only once it is known to be installed)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    given = os.environ.get("COURSE_BOOK_SITE")
    if given:
        path = Path(given).resolve()
        assert (path / "index.html").exists(), f"COURSE_BOOK_SITE={given} holds no built site (index.html)"
        return path
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py"), "--out", str(out), "--quiet"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, f"tools/build_book.py failed:\n{result.stdout}\n{result.stderr}"
    return out / "html"


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
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
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
