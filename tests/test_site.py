"""The website as a reader meets it.

The book is built once with warnings as errors, served on localhost, and every
page of the table of contents is opened in a real browser (Debian's chromium,
driven by playwright): it must load with no console error, no failed request
and no request that leaves the machine; show its title; render its math and
highlight its code; load every image. Search and the next/previous links are
used as a reader uses them. A screenshot of every page, light and dark, is
saved under _build/screenshots/.
"""
import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
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
GLOSSARY_TERMS = [
    "Parameter", "buffer", "persistent buffer", "submodule", "hook",
    "handle", "state_dict", "meta device", "training mode", "export cell",
    "parity",
]
# Lexers of stored outputs and plain blocks: not expected to be coloured.
# "default" is a fence with no language: Sphinx colours it as Python when it
# parses, and leaves a diagram or a sketch plain.
PLAIN_LEXERS = {"none", "text", "myst-ansi", "ipythontb", "output",
                "default"}
TIMINGS = {}


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

@pytest.fixture(scope="session")
def build():
    """Build the whole site from scratch; return (returncode, log, pages
    that this build did not write)."""
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
    stale = [d for d in PAGES if not (HTML / f"{d}.html").exists()
             or (HTML / f"{d}.html").stat().st_mtime < start_wall]
    return done.returncode, log, stale


@pytest.fixture(scope="session")
def site(build):
    """Base URL of _build/html served on 127.0.0.1 (a free port)."""
    returncode, log, stale = build
    if stale:  # never test pages left over from an earlier build
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

    handler = functools.partial(Quiet, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
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


def new_context(browser, site, **options):
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  **options)
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
  if (heading) {
    const copy = heading.cloneNode(true);
    copy.querySelectorAll(".headerlink").forEach(e => e.remove());
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
  return {
    title, documentTitle: document.title,
    headingVisible: !!heading && heading.getBoundingClientRect().height > 0,
    mathCount: math.length,
    mathRendered: math.filter(m => m.querySelector("mjx-container")).length,
    mathjaxLoaded: !!(window.MathJax && window.MathJax.startup),
    prose: prose.textContent,
    blocks, links, download, launch, terms,
    exercises: [...article.querySelectorAll("h3")]
      .filter(h => /^Exercise\b/.test(h.textContent.trim())).length,
    solutions: article.querySelectorAll("details.hide.above-input").length,
    solutionsOpen: article.querySelectorAll("details.hide[open]").length,
    images: [...document.images].map(i => ({
      src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
    next: next ? next.href : null, prev: prev ? prev.href : null,
    theme: document.documentElement.dataset.theme,
    background: getComputedStyle(document.body).backgroundColor,
  };
}"""


def visit(page, recorder, url, shot):
    """Inspect the page now open at `url` and save a screenshot of it."""
    if page.url != url:  # the navigation link led elsewhere, or nowhere
        page.goto(url, wait_until="load")
    info = page.evaluate(INSPECT)
    page.screenshot(path=str(shot))
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
    """Read the book twice: forwards in light mode by its "next" links, then
    backwards in dark mode by its "previous" links. Record what each page
    showed, where each link led, and save a screenshot of each page."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("*.png"):
        old.unlink()
    start = time.perf_counter()
    result = {}
    passes = [("light", PAGES, "a.right-next", ""),
              ("dark", PAGES[::-1], "a.left-prev", "-dark")]
    for scheme, order, selector, suffix in passes:
        context, page, recorder = new_context(browser, site,
                                              color_scheme=scheme)
        walked = []
        for i, docname in enumerate(order):
            url = urljoin(site, docname + ".html")
            if i == 0:
                page.goto(url, wait_until="load")
            else:
                walked.append(follow(page, selector))
            result[scheme, docname] = visit(
                page, recorder, url, SHOTS / f"{page_id(docname)}{suffix}.png")
        result[scheme, "walked"] = walked
        if scheme == "light":
            # The theme switch on the last page: auto -> dark for a reader
            # whose system is light.
            seen = []
            for _ in range(3):
                page.locator("button.theme-switch-button").first.click()
                seen.append(page.evaluate(
                    "document.documentElement.dataset.theme"))
            result["switch"] = seen, recorder.take()
        context.close()
    TIMINGS["pages"] = len(PAGES)
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
    assert PAGES == ["book/intro", *chapters, "book/glossary"]


def test_the_home_page_leads_to_the_introduction(browser, site):
    context, page, recorder = new_context(browser, site)
    page.goto(site, wait_until="load")
    page.wait_for_url(re.compile(r"book/intro\.html$"))
    assert not any(recorder.take())
    context.close()


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
    assert normalise(info["documentTitle"]).startswith(
        expected_title(docname))


RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s][^$\n]*\$")


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_renders_its_math(visits, docname):
    info = visits["light", docname]
    assert not RAW_TEX.findall(info["prose"]), "TeX left unrendered"
    if info["mathCount"]:
        assert info["mathjaxLoaded"], "MathJax did not load"
        assert info["mathRendered"] == info["mathCount"]


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


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_chapter_hides_its_solutions_until_asked(visits, docname):
    info = visits["light", docname]
    if info["exercises"]:
        assert info["solutions"] >= 1, "no hidden solution cell"
    assert info["solutionsOpen"] == 0


def test_glossary_defines_exactly_the_book_terms(visits):
    terms = visits["light", "book/glossary"]["terms"]
    assert [t.strip() for t in terms] == GLOSSARY_TERMS


def test_the_theme_switch_turns_dark_mode_on(visits):
    seen, (errors, failed, external) = visits["switch"]
    assert seen[0] == "dark", seen
    assert not errors and not failed and not external


# --------------------------------------------------------------------------
# Reading the book as a whole.

def test_search_for_state_dict_finds_chapter_6(browser, site):
    context, page, recorder = new_context(browser, site)
    page.goto(urljoin(site, "search.html?q=state_dict"), wait_until="load")
    page.wait_for_selector("#search-results .search-summary",
                           timeout=20_000)
    found = page.eval_on_selector_all(
        "#search-results ul.search li a", "as => as.map(a => a.href)")
    assert any("07_state_dict.html" in href for href in found), found
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
