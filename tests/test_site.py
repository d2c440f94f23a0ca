"""The website as a reader meets it.

The book is built once with warnings as errors, served on localhost, and every
page of the table of contents is opened in a real browser (Debian's Chromium,
driven by playwright) twice: forwards by the "next" links in light mode on a
wide screen (1400 px), backwards by the "previous" links in dark mode on a
phone (390 px, touch). Each page must load with no console error, no failed
request and no request that leaves the machine; show its title; render its
math (no stray backslash) and highlight its code; load every image, with alt
text; fit its outputs in their box on the wide screen and its width on the
phone, where the sidebar buttons open the chapter list and the Contents (which
closes after a tap), and a solution opens from its title. Search puts the cell
that defines a name first, for every public name of mininn. The runnable zip
is unzipped and chapter 1 run from it, and the PDF is read page by page: its
bookmarks, contents, cover, tags, and no page that ends in an empty code
frame. One build, one server, one browser, two contexts for all of it.

The checks themselves are functions in tests/site_checks/ (JavaScript in its
js/ folder), which another edition's tests can run against their own pages.
BOOK_SITE_BUILT=<folder> runs these tests against a site built before, with
no build (the build's own tests are then skipped); BOOK_SCREENSHOTS=1 saves a
screenshot of every page, light and dark, under _build/screenshots/.
"""
import gc
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

import kernel_server
import nbformat
import pytest
import yaml

from site_checks import (chapter_list_missing, code_problems,
                         contents_drawer_after_a_tap, figures,
                         figures_not_opening, figures_shrunk,
                         icons_not_drawn, inspect, js,
                         missing_links, new_context, outputs_too_wide,
                         page_width, printed_images_not_figures,
                         search_results, solution_after_tapping_its_title,
                         weight)
from site_checks import pdf as pdf_checks
from site_checks.pdf import squeezed

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))
import book_files  # the site's own extension: toc, server, names
import page_weight  # the site's lighter style sheets and figures
import export  # what a cell defines, as the package has it

BUILT = os.environ.get("BOOK_SITE_BUILT")
HTML = Path(BUILT).resolve() if BUILT else ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
SCREENSHOTS = os.environ.get("BOOK_SCREENSHOTS") == "1"
CHROMIUM = book_files.CHROMIUM  # tools/dev.py's chromium()
# What the site's server answered with an error, as it tells it (the
# Recorders of the pages' visits take them).
ANSWERED = []
TIMINGS = {}
WIDE = {"width": 1400, "height": 1000}     # a desktop: the widest column
PHONE = {"width": 390, "height": 844}      # a phone: sidebars become dialogs
ZIP_NAME = book_files.ZIP_NAME
PDF_NAME = book_files.PDF_NAME
WHOLE_BOOK = "book/" + book_files.WHOLE_BOOK
MB = 1_000_000


def source_of(docname):
    for suffix in (".md", ".ipynb"):
        if (ROOT / (docname + suffix)).exists():
            return ROOT / (docname + suffix)
    raise FileNotFoundError(docname)


# docnames such as "book/intro", in reading order, read from _toc.yml as
# the site's build reads it (sphinx_external_toc)
PAGES = book_files.toc_docnames(ROOT / "_toc.yml")
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
if sys.argv[2:]:  # under the test command: a forked kernel (kernel_server)
    sys.path.insert(0, sys.argv[2])
    import kernel_server
    from jupyter_client.kernelspec import KernelSpecManager
    kernel_server.use_stand_in(KernelSpecManager)
    del sys.path[0]
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
    browser checks run). Under the test command, the process and its
    kernel are forked from the kernel server (tests/kernel_server.py),
    which has imported torch but nothing of the book. Return (process,
    folder)."""
    folder = Path(tempfile.mkdtemp(prefix="book-zip-"))
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(folder)
    tops = [p for p in folder.iterdir()]
    book = (tops[0] if len(tops) == 1 else folder) / "book"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = kernel_server.python_command("-c", RUN_CHAPTER_ONE, str(book))
    if command[1:3] == [kernel_server.__file__, "python"]:  # forked
        command.append(str(Path(kernel_server.__file__).parent))
    process = subprocess.Popen(command, cwd=folder, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return process, folder


def start_pdf_scan(path):
    """Read the PDF page by page (site_checks.pdf.scan) in a thread, while
    the browser checks run: pdfium works outside Python's lock."""
    found = {}

    def work():
        try:
            found["scan"] = pdf_checks.scan(path)
        except BaseException as error:  # reported by the pdf fixture
            found["error"] = error

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, found


BACKGROUND = {}


@pytest.fixture(scope="session")
def build():
    """Build the whole site from scratch; return (returncode, log, pages
    that this build did not write). Chapter 1 starts running from the
    site's zip, and the PDF is read, as soon as the build is done."""
    if BUILT:
        returncode, log, stale = None, "", []
    else:
        jupyter_book = Path(sys.executable).parent / "jupyter-book"
        start, start_wall = time.perf_counter(), time.time() - 1
        done = subprocess.run(
            [str(jupyter_book), "build", "-W", "-n", "--keep-going", "--all",
             "."],
            cwd=ROOT, capture_output=True, text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        TIMINGS["build_s"] = round(time.perf_counter() - start, 1)
        returncode = done.returncode
        log = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
        made = [d + ".html" for d in PAGES] + [ZIP_NAME, WHOLE_BOOK]
        if Path(CHROMIUM).exists():
            made.append(PDF_NAME)
        stale = [name for name in made if not (HTML / name).exists()
                 or (HTML / name).stat().st_mtime < start_wall]
    if ZIP_NAME not in stale and (HTML / ZIP_NAME).exists():
        BACKGROUND["zip"] = start_chapter_one_from_zip(HTML / ZIP_NAME)
    if PDF_NAME not in stale and (HTML / PDF_NAME).exists():
        BACKGROUND["pdf"] = start_pdf_scan(HTML / PDF_NAME)
    yield returncode, log, stale
    if "zip" in BACKGROUND:
        process, folder = BACKGROUND.pop("zip")
        process.kill()
        process.communicate()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def site(build):
    """Base URL of _build/html served on 127.0.0.1 (a free port), by the
    server the build prints its PDF from."""
    returncode, log, stale = build
    if stale:  # never test files left over from an earlier build
        pytest.fail(f"the build did not write {stale}:\n{log[-5000:]}")
    with book_files.serve(HTML, cache_assets=True, errors=ANSWERED) as base:
        yield base


def visit(page, recorder, url, shot, phone=False):
    """Inspect the page now open at `url` (and, with BOOK_SCREENSHOTS=1,
    save a screenshot of it). On a phone, also tap the chapter list's
    button and see what it opens (the Contents' button: the drawer check,
    on chapters)."""
    if page.url != url:  # the navigation link led elsewhere, or nowhere
        page.goto(url, wait_until="load")
    info = inspect(page, phone=PHONE["width"] if phone else None)
    if not phone:
        info["weight"] = weight(page)
    info["figures"] = figures(page)
    if SCREENSHOTS:
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
    links. Record what each page showed and where each link led; on the
    phone, tap a section in the Contents and a solution's title, and open
    the index and the whole-book page too."""
    if SCREENSHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        for old in [*SHOTS.glob("*.png"), *SHOTS.glob("*.jpg")]:
            old.unlink()
    start = time.perf_counter()
    result = {}
    passes = [("light", WIDE, PAGES, "a.right-next", "", {}),
              ("dark", PHONE, PAGES[::-1], "a.left-prev", "-dark",
               {"is_mobile": True, "has_touch": True})]
    for scheme, viewport, order, selector, suffix, options in passes:
        phone = viewport is PHONE
        context, page, recorder = new_context(
            browser, site, ANSWERED, viewport=viewport, color_scheme=scheme,
            **options)
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
            info = result[scheme, docname] = visit(
                page, recorder, url,
                SHOTS / f"{page_id(docname)}{suffix}.jpg", phone=phone)
            if phone and docname in CHAPTERS:
                info["drawer"] = contents_drawer_after_a_tap(page)
                info["solution"] = solution_after_tapping_its_title(page)
                more = recorder.take()
                info["errors"] += more[0]
                info["failed"] += more[1]
                info["external"] += more[2]
        result[scheme, "walked"] = walked
        if scheme == "light":
            # On the last page, on the wide screen: the sidebar button
            # folds the chapter list away, and the theme switch goes
            # auto -> dark for a reader whose system is light.
            result["fold"] = page.evaluate(js("fold_sidebar"))
            seen = []
            for _ in range(3):
                page.locator("button.theme-switch-button").first.click()
                seen.append(page.evaluate(
                    "document.documentElement.dataset.theme"))
            result["switch"] = seen, recorder.take()
        else:
            page.goto(urljoin(site, "genindex.html"), wait_until="load")
            result["phone", "genindex.html"] = {
                "width": page_width(page, PHONE["width"]),
                "problems": recorder.take()}
        context.close()
    TIMINGS["pages"] = len(PAGES)
    TIMINGS["output_columns_at_1400px"] = sorted({
        result["light", d]["columns"] for d in CHAPTERS} - {None})
    TIMINGS["browse_s"] = round(time.perf_counter() - start, 1)
    (ROOT / "_build").mkdir(exist_ok=True)
    (ROOT / "_build" / "site-timings.json").write_text(
        json.dumps(TIMINGS, indent=1))
    return result


@pytest.fixture(scope="session")
def pdf(site):
    """What the PDF shows, page by page (site_checks.pdf.Scan)."""
    if "pdf" not in BACKGROUND:
        pytest.fail(f"no {PDF_NAME} was built")
    thread, found = BACKGROUND["pdf"]
    thread.join()
    if "error" in found:
        raise found["error"]
    return found["scan"]


# --------------------------------------------------------------------------
# The build and the table of contents.

def test_site_builds_with_zero_warnings(build):
    returncode, log, _ = build
    if BUILT:
        pytest.skip(f"BOOK_SITE_BUILT: testing {BUILT}, built before")
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
    assert not code_problems(visits["light", docname],
                             chapter=source_of(docname).suffix == ".ipynb")


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_code_cells_show_they_scroll_and_shrink_on_a_phone(visits, docname):
    # a phone's column holds about 40 characters of 14 px code, 48 of 12 px
    phone, wide = ([b for b in visits[scheme, docname]["blocks"] if b["cell"]]
                   for scheme in ("dark", "light"))
    assert phone and all(b["cue"] for b in phone + wide)
    assert {b["px"] for b in phone} == {12} and {b["px"] for b in wide} == {
        14}


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


def test_a_build_leaves_the_other_editions_files_alone(tmp_path):
    # The English build's last steps ran over _build/html/zh too, while the
    # Chinese build (in the other worker) was writing there: a page gone
    # between listing and reading failed the English build (seen with the
    # two workers on one core), and its words fed the English pruning.
    page = ('<div class="highlight"><pre><span class="n">x</span></pre></div>'
            '<script src="_static/searchtools.js"></script><p>englishword</p>')
    for edition, word in ((tmp_path, "englishword"),
                          (tmp_path / "zh", "chineseword")):
        (edition / "_static" / "scripts").mkdir(parents=True)
        (edition / "_static" / "scripts" / "theme.js").write_text("x = 1")
        (edition / "page.html").write_text(page.replace("englishword", word))
    assert sorted(p.relative_to(tmp_path).as_posix() for p in
                  page_weight.own_files(tmp_path, "*.*")) == [
        "_static/scripts/theme.js", "page.html"]
    book_files.lighten_pages(tmp_path)
    assert (tmp_path / "page.html").read_text() == (
        '<div class="highlight"><pre>x</pre></div><p>englishword</p>')
    assert (tmp_path / "zh" / "page.html").read_text() == page.replace(
        "englishword", "chineseword")
    words = page_weight.site_words(tmp_path)
    assert "englishword" in words and "chineseword" not in words


def test_the_build_freezes_what_lives_to_its_end():
    """book_files leaves Sphinx and its extensions (builder-inited), then
    the pages' environment (env-updated), out of the collector's passes."""
    connected = []

    class App:  # records what book_files.setup connects
        def connect(self, event, handler, priority=500):
            connected.append((event, handler))

        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    book_files.setup(App())
    assert sorted(event for event, handler in connected
                  if handler is book_files.freeze_what_lives_on) == [
        "builder-inited", "env-updated"]
    before = gc.get_freeze_count()
    alive = [[] for _ in range(1000)]
    book_files.freeze_what_lives_on(App(), None)
    assert gc.get_freeze_count() >= before + len(alive)


def test_recorder_forgives_only_an_icon_cancelled_by_leaving_the_page():
    from types import SimpleNamespace as Request

    from site_checks import Recorder

    told = ["http://127.0.0.1:8000/_static/favicon.svg (HTTP 404)"]
    recorder = Recorder("http://127.0.0.1:8000/", told)
    for url, failure in [
            ("http://127.0.0.1:8000/_static/favicon.svg", "net::ERR_ABORTED"),
            ("http://127.0.0.1:8000/favicon.ico", "net::ERR_ABORTED"),
            ("http://127.0.0.1:8000/_static/favicon.svg", "net::ERR_FAILED"),
            ("http://127.0.0.1:8000/_images/favicon.svg.png",
             "net::ERR_ABORTED"),
            ("http://127.0.0.1:8000/_static/book.css", "net::ERR_ABORTED"),
            ("https://example.org/favicon.ico", "net::ERR_ABORTED")]:
        recorder._failed(Request(url=url, failure=failure))
    _, failed, external = recorder.take()
    assert failed == [
        "http://127.0.0.1:8000/_static/favicon.svg (net::ERR_FAILED)",
        "http://127.0.0.1:8000/_images/favicon.svg.png (net::ERR_ABORTED)",
        "http://127.0.0.1:8000/_static/book.css (net::ERR_ABORTED)",
        "http://127.0.0.1:8000/_static/favicon.svg (HTTP 404)"]
    assert external == ["https://example.org/favicon.ico"]
    assert told == [] and recorder.take() == ([], [], [])  # taken once


LEAKY_PAGE = """<!DOCTYPE html><html><head><title>leaky</title>
<link rel="stylesheet" href="gone.css"></head><body>
<img src="here.svg" alt=""><img src="http://192.0.2.1/far.png" alt="">
<script src="https://cdn.example.org/lib.js"></script>
<script>fetch("gone.json")</script></body></html>"""


def test_recorder_sees_what_a_page_misses_and_every_request_off_the_machine(
        browser, tmp_path):
    # the server tells what it could not answer; Chromium, as the checks
    # launch it, fails any request that leaves the machine (a name or an
    # address), wherever they run
    from site_checks import new_context

    (tmp_path / "leaky.html").write_text(LEAKY_PAGE)
    (tmp_path / "here.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>')
    answered = []
    with book_files.serve(tmp_path, errors=answered) as base:
        context, page, recorder = new_context(browser, base, answered,
                                              viewport=WIDE)
        why = {}
        page.on("requestfailed", lambda r: why.update({r.url: r.failure}))
        page.goto(base + "leaky.html", wait_until="networkidle")
        errors, failed, external = recorder.take()
        context.close()
    assert sorted(external) == ["http://192.0.2.1/far.png",
                                "https://cdn.example.org/lib.js"]
    # refused by the proxy that is not there: not sent, even where the
    # name resolves and the address answers
    assert {why[url] for url in external} == {
        "net::ERR_PROXY_CONNECTION_FAILED"}
    assert f"{base}gone.css (HTTP 404)" in failed
    assert f"{base}gone.json (HTTP 404)" in failed
    assert not [f for f in failed if "here.svg" in f or "leaky" in f]
    assert errors  # Chromium says each failure on the console too


def test_alt_text_check_tells_a_path_from_a_description():
    assert not alt_is_a_description("../_images/e1b18ba7.png")
    assert not alt_is_a_description("")
    assert not alt_is_a_description(None)
    assert alt_is_a_description("AlexNet as a tree of named modules")


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_icons_are_drawn_at_the_size_of_their_text(visits, docname):
    # book_files draws them into the pages (Font Awesome's script, which
    # did it on every visit, is left out): each is an <svg> in the HTML,
    # sized by the script's style sheet, in light and in dark, wide or not.
    for scheme in ("light", "dark"):
        problems = icons_not_drawn(visits[scheme, docname])
        assert not problems, (scheme, problems)


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_links_lead_to_pages_that_exist(visits, docname, site):
    assert not missing_links(visits["light", docname]["links"], site, HTML)


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
    wide = outputs_too_wide(visits["light", docname])
    assert not wide, f"{page_id(docname)}: {len(wide)} outputs scroll " \
        f"sideways at {WIDE['width']} px:\n" + "\n".join(wide)


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_fits_a_phone_screen(visits, docname):
    info = visits["dark", docname]
    assert info["scrollWidth"] <= PHONE["width"], (
        f"{page_id(docname)} is {info['scrollWidth']} px wide on a "
        f"{PHONE['width']} px screen, because of:\n"
        + "\n".join(info["overflow"]))


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_sidebar_button_opens_the_chapter_list_on_a_phone(visits, docname):
    missing = chapter_list_missing(visits["dark", docname]["primary"],
                                   PAGES, docname)
    assert not missing, f"missing from the list: {missing}"


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_contents_button_opens_the_sections_on_a_phone(visits, docname):
    tapped = visits["dark", docname]["drawer"]
    assert tapped and tapped["opened"], "the button opened nothing"
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
def test_chapter_download_menu_offers_the_zip_first(visits, docname):
    menu = [urlparse(h).path for h in visits["light", docname]["menu"]]
    assert menu[:2] == ["/" + ZIP_NAME, "/" + PDF_NAME], menu
    assert f"/_sources/{docname}.ipynb" in menu, menu
    assert not visits["light", docname]["launch"], (
        "launch buttons need a public repository")


@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_a_chapter_downloaded_alone_says_what_it_needs(site, docname):
    from urllib.request import urlopen

    with urlopen(urljoin(site, f"_sources/{docname}.ipynb")) as response:
        alone = nbformat.reads(response.read().decode(), as_version=4)
    first = alone.cells[0]
    assert first.cell_type == "markdown" and ZIP_NAME in first.source
    assert "cannot run" in first.source
    source = nbformat.read(source_of(docname), as_version=4)
    assert [c.source for c in alone.cells[1:]] == [
        c.source for c in source.cells]


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_page_links_the_runnable_zip_the_pdf_and_the_index(visits, docname):
    notes = [urlparse(h).path for h in visits["light", docname]["notes"]]
    assert notes == ["/" + ZIP_NAME, "/" + PDF_NAME, "/genindex.html"]


def test_zip_holds_the_runnable_book(site):
    # The notebooks are the book's own, outputs and all; the package is
    # every module of book/mininn/.
    with zipfile.ZipFile(HTML / ZIP_NAME) as archive:
        names = archive.namelist()
        inside = {n.partition("/")[2]: n for n in names}
        for docname in CHAPTERS:
            assert archive.read(inside[docname + ".ipynb"]) == (
                source_of(docname).read_bytes()), docname
        readme = archive.read(inside["README.md"]).decode()
        reader = archive.read(inside["requirements-reader.txt"]).decode()
    assert len({n.partition("/")[0] for n in names}) == 1, "one folder"
    package = {f"book/mininn/{p.name}"
               for p in (ROOT / "book" / "mininn").glob("*.py")}
    assert package <= set(inside), package - set(inside)
    for wanted in ("README.md", "requirements.txt", "book/helpers.py",
                   "benchmarks/bench.py", "LICENSE", "LICENSE-text"):
        assert wanted in inside, wanted
    # A reader installs the CPU-only torch (on Linux) before the pins,
    # and the reader's pins, at the versions of requirements.txt.
    assert readme.index("download.pytorch.org/whl/cpu") < readme.index(
        "pip install -r requirements-reader.txt")
    pins = dict(line.split("==") for line in reader.splitlines()
                if "==" in line)
    assert sorted(pins) == sorted(book_files.READER_PACKAGES)
    ours = (ROOT / "requirements.txt").read_text().splitlines()
    assert all(f"{name}=={version}" in ours for name, version in pins.items())
    assert f"Python {book_files.TESTED_PYTHONS}" in readme


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
# The whole book: the PDF, read page by page (site_checks/pdf.py).

def test_pdf_of_the_whole_book_is_built_with_the_site(pdf):
    assert len(pdf.sheets) >= 10 * len(CHAPTERS), f"{len(pdf.sheets)} pages"
    # The contents link to each page: named destinations in the PDF.
    assert {f"{page_id(d)}--top" for d in PAGES} <= set(pdf.destinations)


def test_green_is_found_in_bytes_as_in_wider_integers():
    # greenish() works on the rendered bytes (no int16 copy of each page):
    # the same pixels as G - max(R, B) > GREEN_MARGIN, at the clamp too.
    import numpy as np

    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (64, 64, 4), dtype=np.uint8)
    edges = [(194, 255, 0), (195, 255, 0), (255, 255, 255), (0, 61, 0),
             (0, 60, 0), (0, 255, 194), (0, 255, 195)]
    image[0, :len(edges), :3] = edges
    wide = image[:, :, :3].astype(np.int16)
    expected = (wide[:, :, 1] - np.maximum(wide[:, :, 0], wide[:, :, 2])
                > pdf_checks.GREEN_MARGIN)
    assert (pdf_checks.greenish(image) == expected).all()
    assert list(expected[0, :len(edges)]) == [True, False, False, True,
                                              False, True, False]


def test_pdf_has_no_page_that_ends_in_an_empty_code_frame(pdf):
    # A code cell's frame that starts at the foot of a page while its code
    # goes on to the next leaves an empty box behind (book.css keeps a
    # cell's div.cell_input whole).
    empty = [s for s in pdf.sheets if s.last_frame_empty]
    assert not empty, (
        f"{len(empty)} of {len(pdf.sheets)} pages end in an empty code "
        f"frame ({sum(s.last_frame_height for s in empty) / 760:.1f} pages "
        "of blank boxes): pages "
        + ", ".join(str(s.number) for s in empty[:40]))


def test_pdf_holds_the_figures_and_no_other_image(pdf):
    # Chromium prints what PDF cannot draw (a blurred shadow) as a picture
    # of its box, at print resolution: the 100 shadows of the exercises
    # and solutions were 287 JPEGs (book.css leaves shadows off paper).
    page = (HTML / WHOLE_BOOK).read_text(encoding="utf-8")
    problems = printed_images_not_figures(pdf.images, page, HTML)
    assert not problems, f"{len(problems)}: {problems[:10]}"


def test_pdf_prints_nothing_past_the_right_margin(pdf):
    cut = [s.number for s in pdf.sheets if s.ink_past_right_margin]
    assert not cut, f"ink past the right margin on pages {cut[:40]}"


def chapter_starts(pdf):
    return [pdf.destinations[f"{page_id(d)}--top"] for d in PAGES]


def test_pdf_bookmarks_are_the_chapters_in_order(pdf):
    # Level 0: the cover's title, then each page of the book.
    # Spaces aside: Chromium drops the one before a heading's last `code`
    # ("someone else'sforward").
    tops = [(squeezed(normalise(title)), page)
            for level, title, page in pdf.outline if level == 0][1:]
    numbers = {d: f"{i}. " for i, d in enumerate(CHAPTERS, 1)}
    assert tops == [(squeezed(numbers.get(d, "") + expected_title(d)), p)
                    for d, p in zip(PAGES, chapter_starts(pdf))]
    # and their sections under them
    assert sum(level == 1 for level, _, _ in pdf.outline) >= 5 * len(CHAPTERS)


def test_pdf_contents_give_the_page_of_every_chapter(pdf):
    contents = next(s for s in pdf.sheets if s.text.startswith("Contents"))
    numbers = [int(n) for n in re.findall(r"^(\d+)\s*$", contents.text,
                                           re.M)]
    # the page numbers of the contents, less the footer's "2 / 332"
    assert numbers == chapter_starts(pdf), contents.text


def test_pdf_cover_names_version_notebooks_and_licences(pdf):
    cover = " ".join(pdf.sheets[0].text.split())
    assert re.search(r"Version [0-9a-f]{7,} of \d{4}-\d\d-\d\d", cover), cover
    assert ZIP_NAME in cover
    assert "CC BY-SA 4.0" in cover and "MIT" in cover


def test_pdf_is_tagged_and_names_its_author(pdf):
    assert pdf.tagged
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert pdf.metadata["Title"] == config["title"]
    assert pdf.metadata["Author"] == config["author"]
    assert "CC BY-SA 4.0" in pdf.metadata["Keywords"]


def test_pdf_prints_every_solution_under_its_exercise(pdf, visits):
    # A PDF's text comes in the order it was drawn, not read: the words of
    # a solution are looked for on its title's page and the next.
    sheets = [squeezed(s.text) for s in pdf.sheets] + [""]
    solutions = [s for d in CHAPTERS for s in visits["light", d]["solutions"]]
    assert len(solutions) == len(chapter_exercises(visits))
    for solution in solutions:
        title = squeezed(solution["title"])
        found = [i for i, text in enumerate(sheets) if title in text]
        assert found, solution["title"]
        # its first words are printed: open, not folded
        body = squeezed(solution["body"])[:40]
        assert body and body in sheets[found[0]] + sheets[found[0] + 1], (
            solution)


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

def public_definitions():
    """{bare name: {docnames of the chapters that define it}} for every
    public class, function and method that an export cell defines (the
    exporter's own `definitions`), and the same for mininn.METHODS: what a
    reader may type into the search box."""
    where = {}
    for docname in CHAPTERS:
        nb = nbformat.read(source_of(docname), as_version=4)
        for cell in nb.cells:
            if "export" not in cell.metadata.get("tags", []):
                continue
            for _, name, owner in export.definitions(cell.source):
                if book_files.public(name) and (
                        owner is None or book_files.public(owner)):
                    where.setdefault(name, set()).add(docname)
    return where


def test_every_public_name_of_mininn_is_searched_for():
    import mininn

    names = public_definitions()
    methods = {key.partition(".")[2] for key in mininn.METHODS
               if all(book_files.public(part) for part in key.split("."))}
    assert methods and methods <= set(names), methods - set(names)
    assert set(mininn.__all__) <= set(names), set(mininn.__all__) - set(names)


@pytest.fixture(scope="session")
def searched(browser, site):
    context, page, recorder = new_context(browser, site, ANSWERED,
                                          viewport=WIDE)
    queries = sorted(public_definitions())
    found = search_results(page, site, queries)
    found["__problems__"] = recorder.take()
    context.close()
    return found


def test_search_puts_the_cell_that_defines_a_name_first(searched):
    # Sphinx's search ranks index entries first, but skips one more than
    # twice as long as the query: "load_state_dict() (Module method)" was
    # never found for "load_state_dict".
    assert not any(searched["__problems__"]), searched["__problems__"]
    wrong = {}
    for name, docnames in sorted(public_definitions().items()):
        first = (searched[name] or ["(nothing)"])[0]
        page, _, anchor = first.partition("#")
        if page not in docnames or not anchor.startswith("mininn-"):
            wrong[name] = (first, sorted(page_id(d) for d in docnames))
    assert not wrong, (f"{len(wrong)} of {len(public_definitions())} names "
                       f"do not find their defining cell first: {wrong}")


def test_search_finds_the_chapter_about_what_is_searched(searched):
    assert searched["state_dict"][0].startswith("book/07_state_dict#")
    assert searched["register_forward_hook"][0].startswith("book/05_hooks#")


INDEX_ENTRY = re.compile(
    r"(class|function|[A-Za-z_][A-Za-z0-9_]* method), chapter \d+")


def test_index_entries_say_what_and_where_and_leave_out_helpers(site):
    index = (HTML / "genindex.html").read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]*#mininn-[^"]*)">(?:<strong>)?(.*?)'
                       r"(?:</strong>)?</a>", index)
    assert len(links) >= len(public_definitions())
    bad = [text for _, text in links if not INDEX_ENTRY.fullmatch(text)]
    assert not bad, bad[:10]
    names = re.findall(r"<li>([^<]+?)(?:\(\))?\s*<ul>", index)
    helpers = [n for n in names if not book_files.public(n.strip())]
    assert not helpers, helpers


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


# --------------------------------------------------------------------------
# A phone: the Contents, the solutions, the index, the whole-book page.

@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_contents_drawer_closes_after_a_tap_on_a_section(visits, docname):
    drawer = visits["dark", docname]["drawer"]
    assert drawer and drawer["opened"], "the Contents did not open"
    assert drawer["closed"], "the Contents stayed open over the page"
    assert drawer["hash"] == drawer["link"], drawer


@pytest.mark.parametrize("docname", [d for d in CHAPTERS], ids=page_id)
def test_tapping_a_solution_title_opens_the_solution(visits, docname):
    tapped = visits["dark", docname]["solution"]
    if tapped is None:
        pytest.skip(f"{page_id(docname)} has no solution")
    assert tapped["shown"], tapped
    assert tapped["hash_after"] == tapped["hash_before"], (
        "the tap followed the title's link instead", tapped)


def test_the_index_fits_a_phone_screen(visits):
    width, inner, over = visits["phone", "genindex.html"]["width"]
    assert width <= inner, f"genindex.html is {width} px wide: {over}"


def test_the_whole_book_page_is_not_a_page_to_land_on(site):
    # It exists to be printed (the PDF checks read what it prints); a
    # reader who lands on it anyway is sent to the website, and search
    # engines are asked to leave it out. No page links to it.
    text = (HTML / WHOLE_BOOK).read_text(encoding="utf-8")
    assert '<meta name="robots" content="noindex">' in text
    back = re.search(r'<p class="book-back">.*?href="([^"]+)"', text, re.S)
    assert back and back.group(1) == f"{page_id(PAGES[0])}.html"
    linking = [p.name for p in HTML.rglob("*.html") if p.name != "whole-book"
               ".html" and "whole-book.html" in p.read_text(errors="ignore")]
    assert not linking, linking


# --------------------------------------------------------------------------
# Figures, licences, weight.

def chapter_figures(visits, scheme):
    return [(docname, f) for docname in CHAPTERS
            for f in visits[scheme, docname]["figures"]]


def test_every_figure_opens_at_full_size_when_tapped(visits):
    figs = chapter_figures(visits, "light")
    assert len(figs) >= len(CHAPTERS)
    unlinked = [f"{page_id(d)}: {src}" for d, f in figs
                for src in figures_not_opening([f])]
    assert not unlinked, unlinked


def test_figures_have_twice_the_pixels_they_are_shown_at(visits):
    # Sharp on a retina screen, on a phone and on paper. book/helpers.py
    # makes the notebooks store retina PNGs; outputs stored before that
    # fail here until `tools/dev.py outputs` re-runs their chapter.
    soft = [f"{page_id(d)}: {f['src']} {f['naturalWidth']} px shown at "
            f"{f['shown']:.0f}" for d, f in chapter_figures(visits, "light")
            if not f["svg"] and f["naturalWidth"] < 2 * f["shown"] - 1]
    assert not soft, f"{len(soft)} figures under 2x: {soft}"


def test_figure_labels_keep_their_size_on_a_phone(visits):
    # On a phone a figure is shown at the size it was drawn for (its
    # labels as large as on a wide screen), in a box that scrolls sideways,
    # not shrunk into the 390 px column.
    shrunk = [f"{page_id(d)}: {line}" for d, f in chapter_figures(
        visits, "dark") for line in figures_shrunk([f])]
    assert not shrunk, shrunk


def test_licences_are_in_the_repository_and_beside_the_pages(site):
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "CC BY-SA 4.0" in (ROOT / "LICENSE-text").read_text()
    for source, published in zip(("LICENSE", "LICENSE-text"),
                                 book_files.LICENCE_FILES):
        assert (HTML / published).read_bytes() == (ROOT / source).read_bytes()


def test_the_footer_sentence_is_the_one_the_catalog_translates():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    footer = config["html"]["extra_footer"]
    assert " ".join(footer.split()) == book_files.FOOTER


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_every_footer_names_the_licences(visits, docname):
    links = {a["text"]: urlparse(a["href"]).path
             for a in visits["light", docname]["licence"]}
    assert links.get("LICENSE") == "/" + book_files.LICENCE_FILES[0], links
    assert links.get("LICENSE-text") == "/" + book_files.LICENCE_FILES[1]
    assert "CC BY-SA 4.0" in links


def page_bytes(info, leave_out=()):
    return info["page"] + sum(f["bytes"] for f in info["files"]
                              if not any(s in f["url"] for s in leave_out))


def shared_bytes(info):
    """What every page loads alike: the theme's CSS, scripts and fonts."""
    return page_bytes(info, leave_out=("/_static/mathjax/", "/_images/"))


@pytest.mark.parametrize("docname", PAGES, ids=page_id)
def test_a_page_weighs_at_most_half_what_it_did(visits, docname):
    # Uncompressed, as served: 2.5-3.0 MB a page (MathJax aside) before
    # book_files drew the icons into the pages (the theme's icon script
    # was 1.5 MB of every page), left Sphinx's search index to the search
    # page, and unwrapped the code's plain tokens. MathJax (1.2 MB, on the
    # pages with math only) is counted apart.
    info = visits["light", docname]["weight"]
    total = page_bytes(info, leave_out=("/_static/mathjax/",))
    heaviest = sorted(info["files"], key=lambda f: -f["bytes"])[:4]
    assert total < 1.4 * MB, (f"{page_id(docname)}: {total:,} bytes "
                              f"without MathJax; heaviest: {heaviest}")
    # what every page shares (2.2 MB before), whatever its own size
    assert shared_bytes(info) - info["page"] < 900_000, heaviest


def test_every_chapter_page_weighs_under_a_megabyte(visits):
    # Uncompressed, MathJax aside: 0.92-1.26 MB a chapter before
    # book/_ext/page_weight.py left out the style rules no page can use
    # and stored the figures as palette PNGs.
    weights = {page_id(d): page_bytes(visits["light", d]["weight"],
                                      leave_out=("/_static/mathjax/",))
               for d in CHAPTERS}
    heavy = {name: f"{bytes_:,}" for name, bytes_ in weights.items()
             if bytes_ >= MB}
    assert not heavy, f"chapter pages of 1 MB or more: {heavy}"


# Icons as the theme, sphinx-book-theme and book_files write them, an alias
# (search: magnifying-glass), and an <i> that is no icon.
ICON_FORMS = """<i class="fa-solid fa-bars"></i>
<span class="fa-solid fa-list"></span>
<i class="theme-switch fa-solid fa-sun fa-lg" data-mode="light" title="Light"></i>
<i class="theme-switch fa-solid fa-moon fa-lg" data-mode="dark" title="Dark"></i>
<i class="fas fa-file-zipper"></i>
<i class="fa-solid fa-magnifying-glass fa-lg"></i>
<i class="fa-solid fa-search"></i>
<i>words</i>"""


def test_icons_are_drawn_as_font_awesome_draws_them(browser):
    """book_files.icons_drawn, at build time, gives what the theme's Font
    Awesome script gives in the browser (the script as the theme ships
    it, not the build's copy, which the build leaves out)."""
    import pydata_sphinx_theme

    script = (Path(pydata_sphinx_theme.__file__).parent / "theme"
              / "pydata_sphinx_theme" / "static" / "scripts"
              / "fontawesome.js")
    packs, prefixes = book_files.icon_packs(script.read_text("utf-8"))
    context = browser.new_context()
    page = context.new_page()
    page.set_content(f"<body>{ICON_FORMS}</body>")
    page.add_script_tag(path=str(script))
    page.wait_for_function("""() => document.querySelectorAll(
        "svg.svg-inline--fa").length == 7""")
    theirs = page.evaluate(js("elements"))
    page.set_content("<body>" + book_files.icons_drawn(
        ICON_FORMS, packs, prefixes) + "</body>")
    ours = page.evaluate(js("elements"))
    context.close()
    assert [e[0] for e in ours] == ["svg"] * 7 + ["i"], ours
    assert ours == theirs
    # A name that is no icon stays as it is, for the pages' check to find
    # (icons_not_drawn); the script would draw a "missing" mark.
    unknown = '<i class="fa-solid fa-no-such-icon"></i>'
    assert book_files.icons_drawn(unknown, packs, prefixes) == unknown


def test_style_rules_go_only_when_no_page_or_script_can_use_them():
    words = page_weight.Words(["used", "also", "bs-", "x"])
    css = ('/*! licence */:root{--a:1}.used{a:1}.absent{b:2}'
           '.used,.absent>p{c:3}.x:not(.absent){d:4}.x:has(.absent){e:5}'
           '.bs-tooltip-auto{f:6}@media (min-width:1px){.absent{g:7}}'
           '@media print{.also .absent{h:8}.also{i:9}}'
           '[data-theme=dark] .used{j:10}a[href=".absent"]{k:11}'
           '@keyframes spin{0%{l:12}}.absent\\:x{m:13}'
           '.used::after{content:"}.absent{"}')
    dropped = []
    light = page_weight.prune_css(css, words, dropped)
    # Inside parentheses a class is not needed (:not), or not looked at
    # (:has, kept though it could go).
    assert light == ('/*! licence */:root{--a:1}.used{a:1}.used{c:3}'
                     '.x:not(.absent){d:4}.x:has(.absent){e:5}'
                     '.bs-tooltip-auto{f:6}'
                     '@media print{.also{i:9}}[data-theme=dark] .used{j:10}'
                     'a[href=".absent"]{k:11}@keyframes spin{0%{l:12}}'
                     '.absent\\:x{m:13}.used::after{content:"}.absent{"}')
    assert dropped == [".absent", ".absent>p", ".absent", ".also .absent"]


def test_a_figure_becomes_a_palette_png_only_if_it_looks_the_same():
    import io

    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter

    def png(image):
        out = io.BytesIO()
        image.save(out, "PNG")
        return out.getvalue()

    # A plot's few colours and its soft edges: 780 colours, of which 256
    # tell it within the tolerance.
    figure = Image.new("RGB", (400, 300), "white")
    draw = ImageDraw.Draw(figure)
    rng = np.random.default_rng(0)
    for i in range(20):
        x, y = rng.integers(0, 400), rng.integers(0, 300)
        draw.line([(x, y), (x + rng.integers(-80, 80),
                            y + rng.integers(-80, 80))],
                  fill=("#1f77b4", "#ff7f0e", "#2ca02c")[i % 3], width=3)
    figure = figure.filter(ImageFilter.GaussianBlur(1))
    small = page_weight.palette_png(png(figure))
    assert small is not None and len(small) < len(png(figure)) * 0.6
    shown = Image.open(io.BytesIO(small))
    assert shown.mode == "P" and shown.size == figure.size
    moved = np.abs(np.asarray(shown.convert("RGB"), dtype=int)
                   - np.asarray(figure, dtype=int))
    assert moved.max() <= page_weight.FIGURE_TOLERANCE
    # A picture of noise cannot be told in 256 colours; transparency stays.
    noise = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    assert page_weight.palette_png(png(Image.fromarray(noise))) is None
    see_through = figure.convert("RGBA")
    see_through.putalpha(128)
    assert page_weight.palette_png(png(see_through)) is None
