"""Build the course as a static website: ``python tools/build_book.py`` writes ``_build/book/html``.

Jupyter Book 1 (``pip install -r requirements-book.txt``) turns the stored notebooks, the glossary, the README (the
landing page), TEACHING.md, MAINTAINING.md and SECURITY.md into one site. Nothing is executed: each lesson shows its
stored outputs. The build never edits a file of the repository; it works on copies in ``_build/book/src``:

* the lessons are ``notebooks/NN_*.ipynb`` in the order of their numbers, whatever their cells hold; each copy gets a
  "download this notebook" line under its title (the link serves the notebook as stored, byte for byte), and a note
  under every widget explorer that its controls move only in a running notebook;
* the README becomes ``index.md`` (links to README.md are pointed there); a repository file that a page links to and
  that is not a page itself (``tools/grading.Dockerfile``) is copied beside it, so the link is a download;
* MathJax 3, require.js and ``@jupyter-widgets/html-manager`` come from the npm registry at the pinned versions in
  ``VENDORED`` (``npm pack``, checked against their sha512, kept in a cache so later builds need no network) and are
  served by the site itself: no page loads anything from another site;
* Sphinx's warnings are errors, and after the build every ``href``/``src`` inside the site must resolve (file and
  ``#anchor``) and no page may load a script, style or image from another site.

Options: ``--out DIR`` (default ``_build/book``; the site is ``DIR/html``), ``--cache DIR`` for the npm tarballs
(default ``$COURSE_BOOK_CACHE`` or ``~/.cache/transformer-course-book``; copy the three tarballs there to build on a
machine without network).
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import html.parser
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
BOOK_CONFIG = ROOT / "book"

# package, version, sha512 of the npm tarball (npm's "integrity"), and what of it the site serves:
# (folder under _static/, path inside the tarball, files or folders to take under that path)
VENDORED = {
    "mathjax": dict(
        version="3.2.2",
        integrity="sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        into="mathjax", base="package/es5/",
        # the TeX-and-MathML component Sphinx asks for, the TeX extensions it loads on demand, the CHTML fonts,
        # and the menu with its accessibility parts (loaded when a reader opens the math menu)
        take=["tex-mml-chtml.js", "input/tex/extensions/", "output/chtml/fonts/woff-v2/", "ui/", "a11y/", "sre/"],
        licence="package/LICENSE"),
    "requirejs": dict(
        version="2.3.8",
        integrity="sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        into="requirejs", base="package/", take=["require.js"], licence="package/LICENSE"),
    "@jupyter-widgets/html-manager": dict(
        version="1.0.6",
        integrity="sha512-+Mn+Ra8wyIHrYaUpfmf9A3dsLkt/NuwzPQN8sthdxBD35VV5cOJbpmgMhNR27n/rmP3mKyEe0PWCJrtZrXTXDQ==",
        # the AMD bundle that renders stored widget states, and the icon fonts its style sheet names
        into="html-manager", base="package/dist/",
        take=["embed-amd.js", "embed.js.LICENSE.txt", ".woff2", ".woff", ".ttf", ".eot", ".svg"],
        licence="package/LICENSE"),
}

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
LINK = re.compile(r"(\]\()([^)\s]+)(\))")          # a markdown link or image target, as tests/test_docs.py reads it
LESSON = re.compile(r"^\d\d_.+\.ipynb$")
PAGES = ["TEACHING.md", "MAINTAINING.md", "SECURITY.md"]  # the teachers' and maintainers' part, in this order
CSS = """\
/* Wide display equations scroll inside the column instead of being cut at its edge. */
mjx-container[jax="CHTML"][display="true"] { overflow-x: auto; overflow-y: hidden; max-width: 100%; }
/* The line under each explorer and the download line stand out a little from the lesson's prose. */
p.course-download { font-size: 0.95em; }
"""

class BuildError(RuntimeError):
    pass


# ----------------------------------------------------------------------------------------------------------------
# vendored scripts


def default_cache() -> Path:
    env = os.environ.get("COURSE_BOOK_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "transformer-course-book"


def tarball_name(package: str, version: str) -> str:
    return f"{package.lstrip('@').replace('/', '-')}-{version}.tgz"


def sri(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def fetch_tarball(package: str, spec: dict, cache: Path) -> Path:
    """The pinned tarball from the cache, or from the npm registry with ``npm pack`` (then checked and cached)."""
    path = cache / tarball_name(package, spec["version"])
    if path.exists() and sri(path) == spec["integrity"]:
        return path
    cache.mkdir(parents=True, exist_ok=True)
    npm = shutil.which("npm")
    if npm is None:
        raise BuildError(f"{package}@{spec['version']} is not in {cache} and npm is not installed: install Node.js "
                         f"(npm), or copy {path.name} (npm pack {package}@{spec['version']}) into {cache}")
    result = subprocess.run([npm, "pack", f"{package}@{spec['version']}", "--pack-destination", str(cache),
                             "--silent"], capture_output=True, text=True)
    if result.returncode != 0 or not path.exists():
        raise BuildError(f"npm pack {package}@{spec['version']} failed:\n{result.stderr.strip()}")
    if sri(path) != spec["integrity"]:
        got = sri(path)
        path.unlink()
        raise BuildError(f"{path.name}: sha512 differs from the pinned one in tools/build_book.py "
                         f"(expected {spec['integrity']}, got {got}); refusing to publish it")
    return path


def vendor(cache: Path, static: Path) -> None:
    for package, spec in VENDORED.items():
        tarball = fetch_tarball(package, spec, cache)
        target = static / spec["into"]
        taken = 0
        with tarfile.open(tarball) as archive:
            for member in archive.getmembers():
                if not member.isfile():
                    continue
                name = member.name
                if name == spec["licence"]:
                    out = target / "LICENSE"
                elif name.startswith(spec["base"]):
                    rest = name[len(spec["base"]):]
                    wanted = any(rest == t or (t.endswith("/") and rest.startswith(t))
                                 or (t.startswith(".") and "/" not in rest and rest.endswith(t))
                                 for t in spec["take"])
                    if not wanted:
                        continue
                    out = target / rest
                else:
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(archive.extractfile(member).read())
                taken += out.name != "LICENSE"
        if not taken:
            raise BuildError(f"{tarball.name}: none of {spec['take']} under {spec['base']}")


# ----------------------------------------------------------------------------------------------------------------
# staging: copies of the pages, links pointed at the site's pages


def lessons() -> list[Path]:
    found = sorted(p for p in (ROOT / "notebooks").glob("*.ipynb") if LESSON.match(p.name))
    if not found:
        raise BuildError("no notebooks/NN_*.ipynb to build")
    return found


def page_map(notebooks: list[Path]) -> dict[Path, str]:
    """Repository file -> its page in the staging folder (same place, except the README, which is the home page)."""
    pages = {ROOT / "README.md": "index.md"}
    pages.update({ROOT / name: name for name in PAGES})
    pages[ROOT / "notebooks" / "glossary.md"] = "notebooks/glossary.md"
    pages.update({nb: f"notebooks/{nb.name}" for nb in notebooks})
    return pages


def tracked_files() -> set[Path] | None:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None  # not a git checkout (an unpacked release): every existing file counts
    return {ROOT / name for name in out.split("\0") if name}


class Stager:
    def __init__(self, src: Path, pages: dict[Path, str]):
        self.src, self.pages = src, pages
        self.tracked = tracked_files()
        self.copied: set[Path] = set()

    def rewrite_links(self, text: str, original: Path) -> str:
        """Point a link at the page its target became, or copy a linked repository file into the site."""
        staged_dir = posixpath.dirname(self.pages[original])

        def fix(match: re.Match) -> str:
            target = match.group(2)
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or not parts.path or target.startswith(("#", "<")):
                return match.group(0)
            resolved = (original.parent / unquote(parts.path)).resolve()
            if resolved in self.pages:
                new = posixpath.relpath(self.pages[resolved], staged_dir or ".")
                return match.group(1) + new + (f"#{parts.fragment}" if parts.fragment else "") + match.group(3)
            if resolved.is_file() and resolved.is_relative_to(ROOT) and (
                    self.tracked is None or resolved in self.tracked):
                rel = resolved.relative_to(ROOT)
                dest = self.src / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(resolved, dest)
                self.copied.add(resolved)
                new = posixpath.relpath(str(rel), staged_dir or ".")
                return match.group(1) + new + match.group(3)
            return match.group(0)  # left as written: Sphinx reports it if it does not resolve

        return LINK.sub(fix, text)


def quick_start_anchor() -> str:
    """The README's heading on running the course locally, as an anchor ('' if it has none)."""
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") and re.search(r"quick start|run.*locally|install", line, re.I):
            text = line.lstrip("#").strip().lower()
            return "#" + re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
    return ""


def download_line(name: str) -> str:
    return (f'<p class="course-download">⬇ <a href="{name}" download>Download this notebook</a> to run it '
            f'yourself: <a href="../index.html{quick_start_anchor()}">how to run the course on your machine</a>.</p>')


def explorer_note(name: str) -> dict:
    text = ("```{note}\nThis explorer shows the picture it stored when the lesson ran; its controls move only in a "
            f'running notebook. <a href="{name}" download>Download this notebook</a> and run it to try your own '
            "settings.\n```")
    return {"cell_type": "markdown", "id": f"course-book-note-{hashlib.md5(text.encode()).hexdigest()[:6]}",
            "metadata": {}, "source": text}


def stage_notebook(notebook: Path, stager: Stager) -> int:
    """Write the lesson's page copy (links, download line, explorer notes); returns the number of explorers."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    cells, out, explorers = data["cells"], [], 0
    titled = False
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"])
            source = stager.rewrite_links(source, notebook)
            if not titled:
                lines = source.split("\n")
                title = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
                if title is not None:
                    lines[title + 1:title + 1] = ["", download_line(notebook.name), ""]
                    source, titled = "\n".join(lines), True
            cell = {**cell, "source": source}
        out.append(cell)
        if cell["cell_type"] == "code" and any(WIDGET_VIEW in o.get("data", {}) for o in cell.get("outputs", [])):
            note = explorer_note(notebook.name)
            if "id" in cell:
                note["id"] += f"-{index}"
            else:  # a notebook older than format 4.5 has no cell ids, and one would make it invalid
                del note["id"]
            out.append(note)
            explorers += 1
    if not titled:
        raise BuildError(f"{notebook.name}: no markdown title ('# ...') to put the download line under")
    data["cells"] = out
    dest = stager.src / "notebooks" / notebook.name
    dest.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    extra = stager.src / "_extra" / "notebooks" / notebook.name
    extra.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(notebook, extra)
    return explorers


def stage_markdown(original: Path, stager: Stager, prepend: str = "") -> None:
    text = stager.rewrite_links(original.read_text(encoding="utf-8"), original)
    if prepend:
        lines = text.split("\n")
        title = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
        lines[title + 1:title + 1] = ["", prepend, ""]
        text = "\n".join(lines)
    dest = stager.src / stager.pages[original]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")


LANDING_NOTE = """\
```{admonition} Reading the course online
Each lesson page is its notebook with the outputs it stored when it ran: figures, numbers, tables. To run the code,
answer the exercises and move the explorers, download a lesson (link under its title) and run it on your machine,
as the quick start below shows. Lessons are listed in order in the menu; words are explained in the
[glossary](notebooks/glossary.md).
```"""


def write_toc(src: Path, notebooks: list[Path]) -> None:
    lines = ["# written by tools/build_book.py from the stored notebooks", "format: jb-book", "root: index",
             "parts:", "  - caption: Lessons", "    chapters:"]
    lines += [f"      - file: notebooks/{nb.stem}" for nb in notebooks]
    lines += ["  - caption: Reference", "    chapters:", "      - file: notebooks/glossary"]
    lines += ["  - caption: For teachers and maintainers", "    chapters:"]
    lines += [f"      - file: {Path(name).stem}" for name in PAGES]
    (src / "_toc.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def stage(src: Path, cache: Path) -> dict:
    if src.exists():
        shutil.rmtree(src)
    (src / "notebooks").mkdir(parents=True)
    notebooks = lessons()
    stager = Stager(src, page_map(notebooks))
    explorers = {nb.name: stage_notebook(nb, stager) for nb in notebooks}
    stage_markdown(ROOT / "README.md", stager, prepend=LANDING_NOTE)
    stage_markdown(ROOT / "notebooks" / "glossary.md", stager)
    for name in PAGES:
        stage_markdown(ROOT / name, stager)
    write_toc(src, notebooks)
    for name in ("_config.yml", "favicon.svg"):
        shutil.copy2(BOOK_CONFIG / name, src / name)
    static = src / "_vendor"
    static.mkdir()
    (static / "course-book.css").write_text(CSS, encoding="utf-8")
    vendor(cache, static)
    return {"lessons": [nb.name for nb in notebooks], "explorers": explorers,
            "copied": sorted(str(p.relative_to(ROOT)) for p in stager.copied)}


# ----------------------------------------------------------------------------------------------------------------
# after the build: every internal link resolves, nothing is loaded from another site


class _Refs(html.parser.HTMLParser):
    LOADS = {("script", "src"), ("img", "src"), ("link", "href"), ("iframe", "src"), ("source", "src"),
             ("video", "src"), ("audio", "src")}

    def __init__(self):
        super().__init__()
        self.links, self.loads, self.ids = [], [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            value = attrs.get(key)
            if value is None:
                continue
            if (tag, key) in self.LOADS and not (tag == "link" and attrs.get("rel") in ("canonical",)):
                self.loads.append(value)
            self.links.append(value)


def check_site(html_dir: Path) -> list[str]:
    problems, parsed = [], {}

    def parse(path: Path) -> _Refs:
        if path not in parsed:
            refs = _Refs()
            refs.feed(path.read_text(encoding="utf-8", errors="replace"))
            parsed[path] = refs
        return parsed[path]

    # the pages; the theme's template fragments under _static/ are not pages
    pages = sorted(p for p in html_dir.rglob("*.html") if p.relative_to(html_dir).parts[0] != "_static")
    for page in pages:
        refs = parse(page)
        rel = page.relative_to(html_dir)
        for value in refs.loads:
            parts = urlsplit(value)
            if parts.scheme in ("http", "https") or value.startswith("//"):
                problems.append(f"{rel}: loads {value} from another site")
        for value in refs.links:
            parts = urlsplit(value)
            if parts.scheme or value.startswith("//") or value.startswith("javascript:"):
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists() or not target.resolve().is_relative_to(html_dir.resolve()):
                problems.append(f"{rel}: {value} does not resolve")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in parse(target).ids:
                problems.append(f"{rel}: {value}: no element with that id")
    return problems


# ----------------------------------------------------------------------------------------------------------------


def build(out: Path, cache: Path, quiet: bool = False) -> Path:
    started = time.perf_counter()
    src, work, site = out / "src", out / "work", out / "html"
    info = stage(src, cache)
    staged = time.perf_counter()
    if work.exists():
        shutil.rmtree(work)
    command = [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
               "build", str(src), "--path-output", str(work), "--builder", "html", "-W", "--keep-going"]
    if quiet:
        command.append("--quiet")
    result = subprocess.run(command, capture_output=quiet, text=True)
    if result.returncode != 0:
        detail = (result.stdout or "") + (result.stderr or "") if quiet else ""
        raise BuildError(f"jupyter-book build failed (warnings are errors):\n{detail[-6000:]}")
    if site.exists():
        shutil.rmtree(site)
    (work / "_build" / "html").rename(site)
    built = time.perf_counter()
    problems = check_site(site)
    if problems:
        raise BuildError("the site has links that do not resolve or loads from other sites:\n  "
                         + "\n  ".join(problems[:60]) + (f"\n  ... and {len(problems) - 60} more"
                                                         if len(problems) > 60 else ""))
    files = [p for p in site.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    explorers = sum(info["explorers"].values())
    print(f"site: {site.relative_to(ROOT) if site.is_relative_to(ROOT) else site} — {len(info['lessons'])} lessons, "
          f"{explorers} explorer(s), {len(files)} files, {size / 1e6:.1f} MB; linked repository files: "
          f"{', '.join(info['copied']) or 'none'}")
    print(f"time: staging and vendoring {staged - started:.1f} s, jupyter-book {built - staged:.1f} s, "
          f"link check {time.perf_counter() - built:.1f} s, total {time.perf_counter() - started:.1f} s")
    return site


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "book",
                        help="output folder; the site is OUT/html (default: _build/book)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="where the npm tarballs are kept (default: $COURSE_BOOK_CACHE or "
                             "~/.cache/transformer-course-book)")
    parser.add_argument("--quiet", action="store_true", help="print Sphinx's output only if the build fails")
    args = parser.parse_args(argv)
    try:
        import jupyter_book  # noqa: F401
    except ImportError:
        print("jupyter-book is not installed: pip install -r requirements-book.txt", file=sys.stderr)
        return 2
    try:
        build(args.out.resolve(), (args.cache or default_cache()).resolve(), quiet=args.quiet)
    except BuildError as error:
        print(f"book build failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
