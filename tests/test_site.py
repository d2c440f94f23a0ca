"""The website as a reader meets it.

The book is built once with warnings as errors, served on localhost, and every
page of the table of contents is opened in a real browser (Debian's chromium,
driven by playwright) twice: forwards by the "next" links in light mode on a
wide screen (1400 px), backwards by the "previous" links in dark mode on a
phone (400 px). Each page must load with no console error, no failed request
and no request that leaves the machine; show its title; render its math (no
stray backslash) and highlight its code; load every image, with alt text;
fit its outputs in their box on the wide screen and its width on the phone,
where the sidebar button opens the chapter list. The runnable zip is unzipped
and chapter 1 run from it; the whole-book page that the PDF is printed from
is checked in print layout. One build, one server, one browser for all; a
screenshot of every page, light and dark, is saved under _build/screenshots/.
"""
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from urllib.parse import urljoin, urlparse

import nbformat
import pytest
import yaml

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update",
    "--disable-sync",
]
IN_CI = os.environ.get("CI", "").lower() == "true"
# Lexers of stored outputs and plain blocks: not expected to be coloured.
# "default" is a fence with no language: Sphinx colours it as Python when it
# parses, and leaves a diagram or a sketch plain.
PLAIN_LEXERS = {"none", "text", "myst-ansi", "ipythontb", "output",
                "default"}
TIMINGS = {}
WIDE = {"width": 1400, "height": 1000}     # a desktop: the widest column
PHONE = {"width": 400, "height": 850}      # a phone: sidebars become dialogs
ZIP_NAME = "rebuilding-nn-module-notebooks.zip"
PDF_NAME = "rebuilding-nn-module.pdf"
WHOLE_BOOK = "book/whole-book.html"


def toc_files():
    """The source files of the book, in reading order, from _toc.yml."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections", []))

    walk(toc.get("chapters", []))
    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    return files


def source_of(docname):
    for suffix in (".md", ".ipynb"):
        if (ROOT / (docname + suffix)).exists():
            return ROOT / (docname + suffix)
    raise FileNotFoundError(docname)


PAGES = toc_files()  # docnames such as "book/intro"
CHAPTERS = [d for d in PAGES if source_of(d).suffix == ".ipynb"]


def page_id(docname):
    return docname.rpartition("/")[2]


def expected_title(docname):
    """The first level-one heading of a page's source."""
    path = source_of(docname)
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        lines = [line for cell in nb.cells if cell.cell_type == "markdown"
                 for line in cell.source.splitlines()]
    else:
        lines = path.read_text().splitlines()
    for line in lines:
        if line.startswith("# "):
            return normalise(line[2:])
    raise AssertionError(f"{path.name} has no '# ' title")


def normalise(text):
    """Compare titles as text: no markup, straight quotes, single spaces."""
    for fancy, plain in ("‘'", "’'", '“"', '”"'):
        text = text.replace(fancy, plain)
    return " ".join(text.replace("`", "").replace("*", "").split())


# --------------------------------------------------------------------------
# Build, serve, browse: once per session.

RUN_CHAPTER_ONE = r"""
import json, os, sys
import nbformat
from nbclient import NotebookClient

book = sys.argv[1]
nb = nbformat.read(os.path.join(book, "01_registration.ipynb"), as_version=4)
code = sum(cell.cell_type == "code" for cell in nb.cells)
# One more cell: where did the kernel find the book's imports?
nb.cells.append(nbformat.v4.new_code_cell(
    "import helpers, mininn, os\n"
    "print(os.path.dirname(helpers.__file__))\n"
    "print(os.path.dirname(mininn.__file__))"))
NotebookClient(nb, kernel_name="python3", timeout=300,
               resources={"metadata": {"path": book}}).execute()
ran = sum(cell.cell_type == "code" and cell.execution_count is not None
          for cell in nb.cells[:-1])
print(json.dumps({"code_cells": code, "ran": ran,
                  "imports_from": nb.cells[-1].outputs[0]["text"].split()}))
"""


def start_chapter_one_from_zip(zip_path):
    """Unzip the book's zip into an empty folder and run chapter 1 from it
    with nbclient, in the background (it takes a few seconds, while the
    browser checks run). Return (process, folder)."""
    folder = Path(tempfile.mkdtemp(prefix="book-zip-"))
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(folder)
    tops = [p for p in folder.iterdir()]
    book = (tops[0] if len(tops) == 1 else folder) / "book"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        [sys.executable, "-c", RUN_CHAPTER_ONE, str(book)], cwd=folder,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return process, folder


BACKGROUND = {}


@pytest.fixture(scope="session")
def build():
    """Build the whole site from scratch; return (returncode, log, pages
    that this build did not write). Chapter 1 starts running from the
    site's zip as soon as the build is done."""
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    start, start_wall = time.perf_counter(), time.time() - 1
    done = subprocess.run(
        [str(jupyter_book), "build", "-W", "-n", "--keep-going", "--all",
         "."],
        cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    TIMINGS["build_s"] = round(time.perf_counter() - start, 1)
    log = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    made = [d + ".html" for d in PAGES] + [ZIP_NAME, WHOLE_BOOK]
    if Path(CHROMIUM).exists():
        made.append(PDF_NAME)
    stale = [name for name in made if not (HTML / name).exists()
             or (HTML / name).stat().st_mtime < start_wall]
    if ZIP_NAME not in stale:
        BACKGROUND["zip"] = start_chapter_one_from_zip(HTML / ZIP_NAME)
    yield done.returncode, log, stale
    if "zip" in BACKGROUND:
        process, folder = BACKGROUND.pop("zip")
        process.kill()
        process.communicate()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def site(build):
    """Base URL of _build/html served on 127.0.0.1 (a free port)."""
    returncode, log, stale = build
    if stale:  # never test files left over from an earlier build
        pytest.fail(f"the build did not write {stale}:\n{log[-5000:]}")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def end_headers(self):
            # Let the browser reuse theme files between pages, as it would
            # on any real host; each page is still fetched afresh.
            if not self.path.split("?")[0].endswith(".html"):
                self.send_header("Cache-Control", "max-age=600")
            super().end_headers()

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            # A browser that drops a connection it no longer needs (a page
            # left mid-fetch) is not an error of the site; anything else is
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    handler = functools.partial(Quiet, directory=str(HTML))
    server = Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        message = (f"{CHROMIUM} is missing: install Debian's chromium "
                   "(.ci/install-browser) to run the browser tests")
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(
        executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()
    playwright.stop()


class Recorder:
    """Everything a page did wrong while it loaded."""

    def __init__(self, base):
        self.base = base
        self.errors, self.failed, self.external = [], [], []

    def attach(self, page):
        page.on("console", lambda m: m.type == "error" and self.errors.append(
            f"console: {m.text} ({m.location.get('url', '')})"))
        page.on("pageerror", lambda e: self.errors.append(f"page: {e}"))
        page.on("requestfailed", lambda r: self.failed.append(
            f"{r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and self.failed.append(
            f"{r.url} (HTTP {r.status})"))
        page.on("request", self._local_only)

    def _local_only(self, request):
        if (re.match(r"(https?|wss?)://", request.url)
                and not request.url.startswith(self.base)):
            self.external.append(request.url)

    def take(self):
        taken = self.errors, self.failed, self.external
        self.errors, self.failed, self.external = [], [], []
        return taken


def new_context(browser, site, viewport=WIDE, **options):
    context = browser.new_context(viewport=viewport, **options)
    recorder = Recorder(site)
    page = context.new_page()
    recorder.attach(page)
    return context, page, recorder


INSPECT = """async () => {
  if (window.MathJax && window.MathJax.startup) {
    await window.MathJax.startup.promise;
  }
  const article = document.querySelector("article.bd-article")
    || document.querySelector("main");
  const heading = article.querySelector("h1");
  let title = "";
  const number = heading && heading.querySelector(".section-number");
  if (heading) {
    const copy = heading.cloneNode(true);
    copy.querySelectorAll(".headerlink, .section-number")
      .forEach(e => e.remove());
    title = copy.textContent;
  }
  const math = [...article.querySelectorAll("span.math, div.math")];
  const prose = article.cloneNode(true);
  prose.querySelectorAll(
    "pre, code, script, style, mjx-container, .cell_output, .output"
  ).forEach(e => e.remove());
  const blocks = [...article.querySelectorAll("div[class*='highlight-']")]
    .filter(d => !d.closest(".cell_output"))
    .map(d => ({
      lexer: [...d.classList].find(c => c.startsWith("highlight-"))
        .slice("highlight-".length),
      cell: !!d.closest(".cell_input"),
      coloured: !!d.querySelector("pre span[class]"),
      copy: !!d.querySelector("button.copybtn"),
    }));
  const links = [...article.querySelectorAll("a[href]")]
    .map(a => a.href).filter(h => h.startsWith(location.origin));
  const download = [...document.querySelectorAll("a[href$='.ipynb']")]
    .map(a => a.href).filter(h => h.includes("/_sources/"));
  const launch = [...document.querySelectorAll("a[href]")].map(a => a.href)
    .filter(h => /mybinder|colab|deepnote|jupyterhub|thebe/.test(h));
  const terms = [...document.querySelectorAll("dl.glossary > dt")]
    .map(d => d.firstChild.textContent);
  const next = document.querySelector("a.right-next");
  const prev = document.querySelector("a.left-prev");
  // Outputs wider than their box: which one, and its widest line.
  const outputs = [...article.querySelectorAll(".cell_output pre")];
  const wide = outputs.map((pre, index) => ({pre, index}))
    .filter(({pre}) => pre.scrollWidth > pre.clientWidth)
    .map(({pre, index}) => {
      const lines = pre.textContent.split("\\n");
      const longest = lines.reduce((a, b) => b.length > a.length ? b : a, "");
      return {index, scrollWidth: pre.scrollWidth, box: pre.clientWidth,
              chars: longest.length, line: longest.slice(0, 70)};
    });
  // How many characters of the output font one output line holds.
  let columns = null;
  if (outputs.length) {
    const pre = outputs[0], probe = document.createElement("span");
    probe.textContent = "x".repeat(100);
    pre.appendChild(probe);
    const style = getComputedStyle(pre);
    const inner = pre.clientWidth - parseFloat(style.paddingLeft)
      - parseFloat(style.paddingRight);
    columns = Math.floor(inner / (probe.getBoundingClientRect().width / 100));
    probe.remove();
  }
  // Rendered math: the text a screen reader gets, and any "\\" glyph.
  const mathText = [...article.querySelectorAll("mjx-container")].map(m => ({
    text: (m.querySelector("mjx-assistive-mml") || m).textContent,
    backslashGlyphs: m.querySelectorAll("mjx-c.mjx-c5C").length,
  }));
  const visible = e => !!e && e.checkVisibility(
    {visibilityProperty: true, opacityProperty: true})
    && e.getBoundingClientRect().height > 0;
  const exercises = [...article.querySelectorAll("div.exercise")].map(e => ({
    id: e.id,
    number: (e.querySelector(".caption-number") || {}).textContent || "",
  }));
  const solutions = [...article.querySelectorAll("div.solution")].map(s => {
    const title = s.querySelector(".admonition-title");
    const a = title && title.querySelector("a[href^='#']");
    const body = [...s.children].filter(c => c !== title);
    return {title: title ? title.textContent.trim() : "",
            href: a ? a.getAttribute("href").slice(1) : null,
            dropdown: s.classList.contains("dropdown"),
            shown: body.some(visible)};
  });
  const note = document.querySelector("p.book-downloads");
  const searchBoxes = [...document.querySelectorAll(
    "button.search-button-field, button.search-button")]
    .filter(b => b.checkVisibility({visibilityProperty: true})).length;
  return {
    title, documentTitle: document.title,
    sectionNumber: number ? number.textContent.trim() : null,
    headingVisible: !!heading && heading.getBoundingClientRect().height > 0,
    mathCount: math.length,
    mathRendered: math.filter(m => m.querySelector("mjx-container")).length,
    mathjaxLoaded: !!(window.MathJax && window.MathJax.startup),
    mathText,
    prose: prose.textContent,
    blocks, links, download, launch, terms,
    exercises, solutions,
    outputs: outputs.length, wide, columns, searchBoxes,
    notes: note ? [...note.querySelectorAll("a")].map(a => a.href) : [],
    images: [...document.images].map(i => ({
      src: i.currentSrc || i.src, alt: i.getAttribute("alt"),
      ok: i.complete && i.naturalWidth > 0})),
    next: next ? next.href : null, prev: prev ? prev.href : null,
    theme: document.documentElement.dataset.theme,
    background: getComputedStyle(document.body).backgroundColor,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  };
}"""

# On a phone: what makes the page wider than the screen (the innermost
# elements whose right edge is past it, with a bit of their text).
OVERFLOW = """() => {
  const out = [];
  for (const e of document.querySelectorAll("article.bd-article *")) {
    const box = e.getBoundingClientRect();
    if (box.right > innerWidth + 1 && !e.closest("pre, mjx-container")
        && ![...e.children].some(c =>
          c.getBoundingClientRect().right > innerWidth + 1)) {
      out.push(`${e.tagName.toLowerCase()}.${e.className} ` +
               `(${Math.round(box.right)} px): ` +
               e.textContent.trim().slice(0, 60));
    }
  }
  return out.slice(0, 5);
}"""

# Tap a sidebar button and report what the dialog it opens shows.
TAP_SIDEBAR = """async (which) => {
  const button = [...document.querySelectorAll(`button.${which}-toggle`)]
    .find(b => b.checkVisibility());
  if (!button) return null;
  button.click();
  const dialog = document.getElementById(`pst-${which}-sidebar-modal`);
  for (let i = 0; i < 50 && !(dialog && dialog.open); i++) {
    await new Promise(r => setTimeout(r, 20));
  }
  const shown = dialog && dialog.open ? [...dialog.querySelectorAll("a")]
    .filter(a => a.checkVisibility() && a.getBoundingClientRect().width > 0)
    .map(a => a.getAttribute("href")) : [];
  const open = !!(dialog && dialog.open);
  if (open) dialog.close();
  return {open, shown};
}"""


# On a wide screen the same button folds the sidebar away.
FOLD_SIDEBAR = """async () => {
  const sidebar = document.getElementById("pst-primary-sidebar");
  const shown = () => sidebar.checkVisibility({visibilityProperty: true});
  const before = shown();
  // The button a reader sees (a hidden copy may carry no handler).
  [...document.querySelectorAll("button.primary-toggle")]
    .find(b => b.checkVisibility()).click();
  for (let i = 0; i < 50 && shown(); i++) {
    await new Promise(r => setTimeout(r, 20));
  }
  return [before, shown()];
}"""


def visit(page, recorder, url, shot, phone=False):
    """Inspect the page now open at `url` and save a screenshot of it. On
    a phone, also tap both sidebar buttons and see what they open."""
    if page.url != url:  # the navigation link led elsewhere, or nowhere
        page.goto(url, wait_until="load")
    info = page.evaluate(INSPECT)
    if phone:
        info["overflow"] = (page.evaluate(OVERFLOW)
                            if info["scrollWidth"] > info["innerWidth"]
                            else [])
        info["primary"] = page.evaluate(TAP_SIDEBAR, "primary")
        info["secondary"] = page.evaluate(TAP_SIDEBAR, "secondary")
    # JPEG: a third of the time a PNG takes, for a picture of a page.
    page.screenshot(path=str(shot), type="jpeg", quality=80)
    info["errors"], info["failed"], info["external"] = recorder.take()
    return info


def follow(page, selector):
    """Click a navigation link like a reader; return the page it opened."""
    link = page.locator(selector)
    if not link.count():
        return None
    with page.expect_navigation(wait_until="load"):
        link.first.click()
    return page.url


@pytest.fixture(scope="session")
def visits(browser, site):
    """Read the book twice: forwards in light mode on a wide screen by its
    "next" links, then backwards in dark mode on a phone by its "previous"
    links. Record what each page showed, where each link led, and save a
    screenshot of each page."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in [*SHOTS.glob("*.png"), *SHOTS.glob("*.jpg")]:
        old.unlink()
    start = time.perf_counter()
    result = {}
    passes = [("light", WIDE, PAGES, "a.right-next", ""),
              ("dark", PHONE, PAGES[::-1], "a.left-prev", "-dark")]
    for scheme, viewport, order, selector, suffix in passes:
        context, page, recorder = new_context(
            browser, site, viewport=viewport, color_scheme=scheme)
        walked = []
        for i, docname in enumerate(order):
            url = urljoin(site, docname + ".html")
            if i == 0 and scheme == "light":
                # The reader arrives at the site's root, which redirects.
                page.goto(site, wait_until="load")
                page.wait_for_url(re.compile(r"book/intro\.html$"))
            elif i == 0:
                page.goto(url, wait_until="load")
            else:
                walked.append(follow(page, selector))
            result[scheme, docname] = visit(
                page, recorder, url,
                SHOTS / f"{page_id(docname)}{suffix}.jpg",
                phone=viewport is PHONE)
        result[scheme, "walked"] = walked
        if scheme == "light":
            # On the last page, on the wide screen: the sidebar button
            # folds the chapter list away, and the theme switch goes
            # auto -> dark for a reader whose system is light.
            result["fold"] = page.evaluate(FOLD_SIDEBAR)
            seen = []
            for _ in range(3):
                page.locator("button.theme-switch-button").first.click()
                seen.append(page.evaluate(
                    "document.documentElement.dataset.theme"))
            result["switch"] = seen, recorder.take()
        context.close()
    TIMINGS["pages"] = len(PAGES)
    TIMINGS["output_columns_at_1400px"] = sorted({
        result["light", d]["columns"] for d in CHAPTERS} - {None})
    TIMINGS["browse_s"] = round(time.perf_counter() - start, 1)
    (SHOTS / "timings.json").write_text(json.dumps(TIMINGS, indent=1))
    return result


# --------------------------------------------------------------------------
# The build and the table of contents.

def test_site_builds_with_zero_warnings(build):
    returncode, log, _ = build
    problems = [line for line in log.splitlines()
                if re.search(r"WARNING|ERROR|CRITICAL", line)]
    assert returncode == 0 and not problems, (
        "jupyter-book build -W -n --keep-going failed:\n"
        + "\n".join(problems or log.splitlines()[-60:]))


def test_table_of_contents_lists_every_chapter_in_order():
    chapters = sorted(p.relative_to(ROOT).with_suffix("").as_posix()
                      for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    assert PAGES == ["book/intro", *chapters, "book/glossary",
                     "book/gpu_runs"]


def test_mathjax_ships_only_what_renders_the_math(site):
    # Every page loads with no failed request (below), so what is left
    # is enough; the full MathJax tree was 24 MB.
    tree = HTML / "_static" / "mathjax"
    size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
    assert (tree / "tex-chtml.js").exists()
    assert size < 3_000_000, f"{size:,} bytes of MathJax"


def test_the_home_page_leads_to_the_introduction(visits):
    # The light pass starts at the root; the intro's visit recorded any
    # error of the redirect too.
    info = visits["light", PAGES[0]]
    assert not any((info["errors"], info["failed"], info["external"]))
    assert normalise(info["title"]) == expected_title(PAGES[0])


# --------------------------------------------------------------------------
# Every page, in a browser.

@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_loads_with_no_error_and_no_failed_request(visits, docname):
    for scheme in ("light", "dark"):
        info = visits[scheme, docname]
        assert not info["errors"], info["errors"]
        assert not info["failed"], info["failed"]
        assert not info["external"], (
            "requests that would leave the machine", info["external"])


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_shows_its_title(visits, docname):
    info = visits["light", docname]
    assert info["headingVisible"]
    assert normalise(info["title"]) == expected_title(docname)
    shown = normalise(info["documentTitle"])  # with _toc.yml's number
    if info["sectionNumber"]:
        shown = shown.removeprefix(info["sectionNumber"] + " ")
    assert shown.startswith(expected_title(docname))


RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s][^$\n]*\$")


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_renders_its_math(visits, docname):
    info = visits["light", docname]
    assert not RAW_TEX.findall(info["prose"]), "TeX left unrendered"
    if info["mathCount"]:
        assert info["mathjaxLoaded"], "MathJax did not load"
        assert info["mathRendered"] == info["mathCount"]


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_rendered_math_shows_no_backslash(visits, docname):
    # A backslash in rendered math is TeX that MathJax did not read, such
    # as `\_` inside `\text{}` ("fan\_in").
    stray = [m["text"] for m in visits["light", docname]["mathText"]
             if "\\" in m["text"] or m["backslashGlyphs"]]
    assert not stray, f"{page_id(docname)}: math shows a backslash: {stray}"


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_code_is_highlighted_with_copy_buttons(visits, docname):
    info = visits["light", docname]
    code = [b for b in info["blocks"] if b["lexer"] not in PLAIN_LEXERS]
    if source_of(docname).suffix == ".ipynb":
        assert any(b["cell"] for b in code), "no code cell on a chapter"
    assert all(b["coloured"] for b in code), [b for b in code
                                              if not b["coloured"]]
    assert all(b["copy"] for b in code), "a code block has no copy button"


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_loads_every_image(visits, docname):
    broken = [i["src"] for i in visits["light", docname]["images"]
              if not i["ok"]]
    assert not broken


def alt_is_a_description(alt):
    return bool(alt and alt.strip()) and not re.search(
        r"[/\\]|\.(png|svg|jpe?g|gif)$", alt.strip(), re.I)


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_images_have_alt_text_that_is_not_a_path(visits, docname):
    # myst-nb writes the file path as alt text unless the cell's metadata
    # gives one: "mystnb": {"image": {"alt": "..."}}.
    bad = [f"{i['src'].rpartition('/')[2]} (alt={i['alt']!r})"
           for i in visits["light", docname]["images"]
           if not alt_is_a_description(i["alt"])]
    assert not bad, f"{page_id(docname)}: images without alt text: {bad}"


def test_alt_text_check_tells_a_path_from_a_description():
    assert not alt_is_a_description("../_images/e1b18ba7.png")
    assert not alt_is_a_description("")
    assert not alt_is_a_description(None)
    assert alt_is_a_description("AlexNet as a tree of named modules")


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_links_lead_to_pages_that_exist(visits, docname, site):
    missing = []
    for link in visits["light", docname]["links"]:
        path = urlparse(link).path[len(urlparse(site).path):]
        if not (HTML / path).exists() or (HTML / path).is_dir() and not (
                HTML / path / "index.html").exists():
            missing.append(link)
    assert not missing


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_is_readable_in_dark_mode(visits, docname):
    info = visits["dark", docname]
    assert info["theme"] == "dark"
    red, green, blue = map(int, re.findall(r"\d+", info["background"])[:3])
    assert red + green + blue < 3 * 80, info["background"]


# --------------------------------------------------------------------------
# Outputs that fit, navigation at every width.

@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_output_box_holds_88_characters_on_a_wide_screen(visits, docname):
    # The hygiene test keeps every output line to 88 characters.
    info = visits["light", docname]
    assert info["columns"] is None or info["columns"] >= 88, info["columns"]


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_outputs_fit_their_box_on_a_wide_screen(visits, docname):
    wide = visits["light", docname]["wide"]
    assert not wide, f"{page_id(docname)}: {len(wide)} outputs scroll " \
        f"sideways at {WIDE['width']} px:\n" + "\n".join(
            f"  output #{w['index']}: {w['scrollWidth']} px in a "
            f"{w['box']} px box, {w['chars']} characters: {w['line']!r}"
            for w in wide)


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_fits_a_phone_screen(visits, docname):
    info = visits["dark", docname]
    assert info["scrollWidth"] <= info["innerWidth"], (
        f"{page_id(docname)} is {info['scrollWidth']} px wide on a "
        f"{info['innerWidth']} px screen, because of:\n"
        + "\n".join(info["overflow"]))


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_sidebar_button_opens_the_chapter_list_on_a_phone(visits, docname):
    tapped = visits["dark", docname]["primary"]
    assert tapped and tapped["open"], "the button opened nothing"
    shown = {href.partition("#")[0].rpartition("/")[2]
             for href in tapped["shown"]}
    wanted = {page_id(d) + ".html" for d in PAGES if d != docname}
    assert wanted <= shown, f"missing from the list: {wanted - shown}"


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_contents_button_opens_the_sections_on_a_phone(visits, docname):
    tapped = visits["dark", docname]["secondary"]
    assert tapped and tapped["open"], "the button opened nothing"
    assert sum(href.startswith("#") for href in tapped["shown"]) >= 3


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_has_one_search_box(visits, docname):
    # The second, empty navbar of sphinx-book-theme #999 had its own.
    assert visits["light", docname]["searchBoxes"] == 1
    assert visits["dark", docname]["searchBoxes"] == 1


def test_sidebar_button_folds_the_sidebar_on_a_wide_screen(visits):
    before, after = visits["fold"]
    assert before and not after


# --------------------------------------------------------------------------
# What a chapter offers: its notebook, the whole book, exercises.

@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_chapter_offers_its_notebook_for_download(visits, docname, site):
    from urllib.request import urlopen

    info = visits["light", docname]
    wanted = f"_sources/{docname}.ipynb"
    links = [h for h in info["download"] if h.endswith(wanted)]
    assert links, info["download"]
    with urlopen(links[0]) as response:
        nb = nbformat.reads(response.read().decode(), as_version=4)
    assert nb.cells, "the downloaded notebook is empty"
    assert not info["launch"], "launch buttons need a public repository"


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_links_the_runnable_zip_the_pdf_and_the_index(visits, docname):
    notes = [urlparse(h).path for h in visits["light", docname]["notes"]]
    assert notes == ["/" + ZIP_NAME, "/" + PDF_NAME, "/genindex.html"]


def test_zip_holds_the_runnable_book(site):
    # The notebooks are the ones this build published under _sources/;
    # the package is every module of book/mininn/.
    with zipfile.ZipFile(HTML / ZIP_NAME) as archive:
        names = archive.namelist()
        inside = {n.partition("/")[2]: n for n in names}
        for docname in CHAPTERS:
            assert archive.read(inside[docname + ".ipynb"]) == (
                HTML / "_sources" / (docname + ".ipynb")).read_bytes(), docname
    assert len({n.partition("/")[0] for n in names}) == 1, "one folder"
    package = {f"book/mininn/{p.name}"
               for p in (ROOT / "book" / "mininn").glob("*.py")}
    assert package <= set(inside), package - set(inside)
    for wanted in ("README.md", "requirements.txt", "book/helpers.py",
                   "benchmarks/bench.py"):
        assert wanted in inside, wanted


def test_chapter_one_runs_from_the_zip_in_an_empty_folder(site):
    process, folder = BACKGROUND["zip"]
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    report = json.loads(out.strip().splitlines()[-1])
    assert report["ran"] == report["code_cells"] > 0
    # The kernel found the book's imports in the unzipped folder.
    for where in report["imports_from"]:
        assert Path(where).resolve().is_relative_to(folder.resolve()), where


def chapter_exercises(visits):
    return [(docname, e) for docname in CHAPTERS
            for e in visits["light", docname]["exercises"]]


def test_chapters_are_numbered_in_reading_order(visits):
    numbers = [visits["light", d]["sectionNumber"] for d in CHAPTERS]
    assert numbers == [f"{i}." for i in range(1, len(CHAPTERS) + 1)]


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_chapter_title_is_numbered_once(visits, docname):
    # _toc.yml numbers the chapters; a title typed "# 5. Hooks" would
    # show "5. 5. Hooks".
    title = normalise(visits["light", docname]["title"])
    assert not re.match(r"\d+\.\s", title), (
        f"{page_id(docname)}: the title {title!r} carries its own number; "
        "_toc.yml numbers it already")


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_exercises_are_numbered_within_their_chapter(visits, docname):
    info = visits["light", docname]
    chapter = (info["sectionNumber"] or "").rstrip(".")
    numbers = [e["number"].strip() for e in info["exercises"]]
    assert numbers == [f"Exercise {chapter}.{k}"
                       for k in range(1, len(numbers) + 1)]


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_solutions_are_labelled_linked_and_hidden_until_asked(visits,
                                                              docname):
    info = visits["light", docname]
    numbers = {e["id"]: e["number"].strip() for e in info["exercises"]}
    assert len(info["solutions"]) == len(numbers)
    for solution in info["solutions"]:
        assert solution["href"] in numbers, solution
        assert solution["title"].startswith(
            f"Solution to {numbers[solution['href']]} ("), solution
        assert solution["dropdown"] and not solution["shown"], solution


# --------------------------------------------------------------------------
# The whole book: the page the PDF is printed from, and the PDF.

WHOLE_BOOK_INSPECT = """async () => {
  await window.MathJax.startup.promise;
  const text = (e, drop) => {
    const copy = e.cloneNode(true);
    copy.querySelectorAll(drop).forEach(d => d.remove());
    return copy.textContent.trim();
  };
  const math = [...document.querySelectorAll("span.math, div.math")];
  return {
    titles: [...document.querySelectorAll("section.book-page h1")]
      .map(h => text(h, ".headerlink, .section-number")),
    // Cut: wider than the sheet now, or a line that would not wrap.
    pre: [...document.querySelectorAll("pre")]
      .filter(p => p.scrollWidth > p.clientWidth + 1
        || !getComputedStyle(p).whiteSpace.startsWith("pre-wrap"))
      .map(p => p.textContent.slice(0, 70)),
    solutions: [...document.querySelectorAll("div.solution")].map(s => {
      const title = s.querySelector(".admonition-title");
      return {title: title.textContent.trim(),
              shown: [...s.children].filter(c => c !== title).some(c =>
                c.checkVisibility({visibilityProperty: true})
                && c.getBoundingClientRect().height > 0)};
    }),
    mathCount: math.length,
    mathRendered: math.filter(m => m.querySelector("mjx-container")).length,
    images: [...document.images].map(i => ({
      src: i.src, ok: i.complete && i.naturalWidth > 0})),
  };
}"""


@pytest.fixture(scope="session")
def whole_book(browser, site):
    """The whole-book page laid out for print, as the PDF was printed."""
    # A4 less the PDF's 14 mm margins, at 96 px to the inch: 688 px.
    context, page, recorder = new_context(
        browser, site, viewport={"width": 688, "height": 1000})
    page.emulate_media(media="print")
    page.goto(urljoin(site, WHOLE_BOOK), wait_until="load")
    info = page.evaluate(WHOLE_BOOK_INSPECT)
    info["errors"], info["failed"], info["external"] = recorder.take()
    context.close()
    return info


def test_whole_book_has_every_page_in_order(whole_book):
    assert not any((whole_book["errors"], whole_book["failed"],
                    whole_book["external"]))
    assert [normalise(t) for t in whole_book["titles"]] == [
        expected_title(d) for d in PAGES]
    assert whole_book["mathRendered"] == whole_book["mathCount"]
    assert all(i["ok"] for i in whole_book["images"])


def test_whole_book_cuts_no_output_in_print(whole_book):
    assert not whole_book["pre"], whole_book["pre"]


def test_whole_book_prints_every_solution_under_its_exercise(
        whole_book, visits):
    solutions = whole_book["solutions"]
    assert len(solutions) == len(chapter_exercises(visits))
    assert all(s["shown"] for s in solutions)
    assert all(re.match(r"Solution to Exercise \d+\.\d+ ", s["title"])
               for s in solutions)


def test_pdf_of_the_whole_book_is_built_with_the_site(site):
    pdf = (HTML / PDF_NAME).read_bytes()
    assert pdf.startswith(b"%PDF-")
    pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))
    assert pages >= 10 * len(CHAPTERS), f"{pages} pages"
    # The contents on the cover page link to each page: links in the PDF.
    assert len(re.findall(rb"/Subtype\s*/Link", pdf)) >= len(PAGES)


def glossary_terms():
    """The terms of book/glossary.md, in order: the unindented lines of its
    glossary block."""
    text = (ROOT / "book" / "glossary.md").read_text()
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S).group(1)
    return [line.strip() for line in block.splitlines()
            if line.strip() and not line[0].isspace()
            and not line.startswith(":")]


def test_glossary_defines_exactly_the_book_terms(visits):
    terms = visits["light", "book/glossary"]["terms"]
    assert len(glossary_terms()) >= 11
    assert [t.strip() for t in terms] == glossary_terms()


def test_the_theme_switch_turns_dark_mode_on(visits):
    seen, (errors, failed, external) = visits["switch"]
    assert seen[0] == "dark", seen
    assert not errors and not failed and not external


# --------------------------------------------------------------------------
# Reading the book as a whole.

def search(page, site, query):
    page.goto(urljoin(site, f"search.html?q={query}"), wait_until="load")
    page.wait_for_selector("#search-results .search-summary",
                           timeout=20_000)
    # The results page still fetches each hit's text for its snippet; let
    # those finish, or the next search aborts them (a failed request).
    page.wait_for_load_state("networkidle")
    return page.eval_on_selector_all(
        "#search-results ul.search li a", "as => as.map(a => a.href)")


def test_search_finds_the_chapter_about_what_is_searched(browser, site):
    context, page, recorder = new_context(browser, site)
    found = search(page, site, "state_dict")
    assert any("07_state_dict.html" in href for href in found), found
    found = search(page, site, "register_forward_hook")
    assert found and "05_hooks.html" in found[0], found
    assert not any(recorder.take())
    context.close()


def test_next_links_walk_the_whole_book_in_order(visits):
    walked = [urlparse(url).path.removesuffix(".html") if url else None
              for url in visits["light", "walked"]]
    assert walked == ["/" + docname for docname in PAGES[1:]]
    assert visits["light", PAGES[-1]]["next"] is None


def test_previous_links_walk_back_to_the_start(visits):
    walked = [urlparse(url).path.removesuffix(".html") if url else None
              for url in visits["dark", "walked"]]
    assert walked == ["/" + docname for docname in PAGES[-2::-1]]
    assert visits["dark", PAGES[0]]["prev"] is None
