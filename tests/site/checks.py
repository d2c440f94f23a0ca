"""The website's checks, written once for both editions: functions that a
test calls with a page of a browser and a base URL, and the verdicts drawn
from what they gathered (one line per problem).

The JavaScript they evaluate in the page is in js/, one file per check,
each a function expression (`async () => {...}`) that playwright calls.
"""
import html
import os
import re
import struct
from collections import Counter
from functools import cache
from pathlib import Path
from urllib.parse import urlparse

import nbformat
from babel.messages.pofile import read_po

import book_zip
import i18n

JS = Path(__file__).with_name("js")
# the site's icon (_config.yml's html_favicon), and the one browsers guess
ICON = re.compile(r"/(_static/)?favicon\.(svg|ico)$")


# --------------------------------------------------------------------------
# The book the sites are built from.

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
EDITIONS = {"en": HTML, "zh": i18n.ZH_HTML}  # the Chinese one in zh/
BUILT = os.environ.get("BOOK_SITE_BUILT") == "1"
# What the site's server answered with an error, as it tells it (the
# Recorders of the pages' visits take them).
ANSWERED = []
# docnames such as "book/intro", in reading order, read from _toc.yml as the
# build reads it (sphinx_external_toc)
PAGES = book_zip.toc_docnames(ROOT / "_toc.yml")


def source_of(docname):
    for suffix in (".md", ".ipynb"):
        if (ROOT / (docname + suffix)).exists():
            return ROOT / (docname + suffix)
    raise FileNotFoundError(docname)


CHAPTERS = [d for d in PAGES if source_of(d).suffix == ".ipynb"]


def page_id(docname):
    return docname.rpartition("/")[2]


def normalise(text):
    """Compare titles as text: no markup, straight quotes, single spaces."""
    for fancy, plain in ("‘'", "’'", '“"', '”"'):
        text = text.replace(fancy, plain)
    return " ".join(text.replace("`", "").replace("*", "").split())


def source_title(docname):
    """The first level-one heading of a page's source, as written."""
    path = source_of(docname)
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        lines = [line for cell in nb.cells if cell.cell_type == "markdown"
                 for line in cell.source.splitlines()]
    else:
        lines = path.read_text().splitlines()
    for line in lines:
        if line.startswith("# "):
            return line[2:].strip()
    raise AssertionError(f"{path.name} has no '# ' title")


@cache
def translations(docname):
    """{English: Chinese} of a page's catalog."""
    with (i18n.PAGE_CATALOGS / f"{page_id(docname)}.po").open("rb") as po:
        return {m.id: m.string for m in read_po(po) if m.id}


def expected_title(docname, edition="en"):
    """A page's title, in the edition's language (the Chinese from the
    page's catalog)."""
    title = source_title(docname)
    if edition == "zh":
        title = translations(docname)[title]
    return normalise(title)


def page_of(po):
    """locale/zh_CN/LC_MESSAGES/book/05_hooks.po -> book/05_hooks."""
    return po.relative_to(i18n.CATALOGS).with_suffix("").as_posix()


def short(text, width=110):
    """`text` on one line, cut to `width` characters for a message."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def text_of(fragment):
    """The text of an HTML fragment: its tags left out, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


# --------------------------------------------------------------------------
# Looking at a page.

@cache
def js(name):
    """The function in js/<name>.js, its leading // comments left out."""
    lines = (JS / f"{name}.js").read_text().splitlines()
    while lines and (lines[0].startswith("//") or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines)


class Recorder:
    """Everything a page did wrong while it loaded: console errors, page
    errors, failed requests, HTTP errors, requests that leave `base`.

    The server at `base` tells its answers of 400 or more itself, into
    `answered` (book_print.serve's `errors`); a request that leaves the
    machine fails in Chromium as book_print.CHROMIUM_ARGS launch it, and
    its `requestfailed` event names it. The page's `request` and `response`
    events, which cost a message per file of every page load, are not
    listened to."""

    def __init__(self, base, answered):
        self.base, self.answered = base, answered
        self.errors, self.failed, self.external = [], [], []

    def attach(self, page):
        page.on("console", lambda m: m.type == "error" and self.errors.append(
            f"console: {m.text} ({m.location.get('url', '')})"))
        page.on("pageerror", lambda e: self.errors.append(f"page: {e}"))
        page.on("requestfailed", self._failed)

    def _failed(self, request):
        if (re.match(r"(https?|wss?)://", request.url)
                and not request.url.startswith(self.base)):
            self.external.append(request.url)
            return
        # Chromium asks for a page's icon after the page's load event, and
        # cancels the request when the page is left before the icon has
        # come (net::ERR_ABORTED): the checks move on as fast as a reader
        # never would. A missing icon is still answered HTTP 404 (`answered`).
        if request.failure == "net::ERR_ABORTED" and ICON.search(
                urlparse(request.url).path):
            return
        self.failed.append(f"{request.url} ({request.failure})")

    def take(self):
        told = len(self.answered)  # the server's threads may add more
        taken = self.errors, self.failed + self.answered[:told], self.external
        del self.answered[:told]
        self.errors, self.failed, self.external = [], [], []
        return taken


def new_context(browser, base, answered, viewport, **options):
    """A fresh browser context with one page, and its Recorder (`answered`:
    where the server at `base` tells its errors, see Recorder)."""
    context = browser.new_context(viewport=viewport, **options)
    recorder = Recorder(base, answered)
    page = context.new_page()
    recorder.attach(page)
    return context, page, recorder


def inspect(page, phone=None):
    """What the open page shows (js/inspect.js); on a phone (`phone`: its
    screen's width), also what makes it wider than the screen, and what
    the chapter list's button opens (the Contents' button is tapped by
    contents_drawer_after_a_tap: each opening of a modal dialog restyles
    the whole page)."""
    info = page.evaluate(js("inspect"))
    info["chrome"] = page.evaluate(js("chrome"))
    if phone:
        info["overflow"] = (page.evaluate(js("overflow"), phone)
                            if info["scrollWidth"] > phone else [])
        info["primary"] = page.evaluate(js("tap_sidebar"), "primary")
    return info


def contents_drawer_after_a_tap(page):
    """On a phone: open the Contents drawer, tap its first section link;
    return {"opened", "shown", "closed", "hash", "link"}: whether it
    opened, the links it showed, whether it closed after the tap, and
    where the page went."""
    button = page.locator("button.secondary-toggle:visible").first
    if not button.count():
        return None
    button.tap()
    dialog = page.locator("#pst-secondary-sidebar-modal")
    dialog.locator("a[href^='#']").first.wait_for(state="visible",
                                                  timeout=5000)
    opened = dialog.evaluate("d => d.open")
    shown = dialog.evaluate("""d => [...d.querySelectorAll("a")]
      .filter(a => a.checkVisibility() && a.getBoundingClientRect().width)
      .map(a => a.getAttribute("href"))""")
    link = dialog.locator("a[href^='#']").first
    href = link.get_attribute("href")
    link.tap()
    closed = dialog.evaluate("""d => new Promise(done => {
      const start = performance.now();
      const wait = () => !d.open ? done(true)
        : performance.now() - start > 2000 ? done(false)
        : setTimeout(wait, 20);
      wait();
    })""")
    if not closed:  # close it, so that the reader can go on
        dialog.evaluate("d => d.close()")
    return {"opened": opened, "shown": shown, "closed": closed,
            "hash": page.evaluate("location.hash"), "link": href}


def solution_after_tapping_its_title(page):
    """On a phone: tap the words of the first solution's title (its left
    part, away from the chevron); return whether the solution opened and
    whether the page moved to another anchor instead."""
    title = page.locator("div.solution.dropdown > .admonition-title").first
    if not title.count():
        return None
    title.scroll_into_view_if_needed()
    before = page.evaluate("location.hash")
    # Most of the words are a link to the exercise (sphinx-exercise): tap
    # the middle of that link, as a thumb would.
    words = title.locator("a").first if title.locator("a").count() else title
    box = words.bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] / 2,
                         box["y"] + box["height"] / 2)
    page.wait_for_timeout(150)  # the toggle's own transition
    shown = title.evaluate("""t => [...t.parentElement.children]
      .filter(c => c !== t)
      .some(c => c.checkVisibility({visibilityProperty: true})
                 && c.getBoundingClientRect().height > 0)""")
    return {"shown": shown, "hash_before": before,
            "hash_after": page.evaluate("location.hash")}


def page_width(page, screen=None):
    """(scrollWidth, the screen's width, the elements past its right edge).
    A mobile browser widens its layout to fit a page that is too wide, so
    `screen` (the device's width) is the width to hold a page to."""
    width = page.evaluate("document.documentElement.scrollWidth")
    inner = screen or page.evaluate("innerWidth")
    over = page.evaluate(js("overflow"), inner) if width > inner else []
    return width, inner, over


def search_results(page, base, queries):
    """{query: [docname#anchor, ...]} as Sphinx's own search (the search
    page's searchtools.js and searchindex.js) ranks them, for every query
    at once: the search page is loaded once and its ranking called."""
    page.goto(base + "search.html", wait_until="load")
    page.wait_for_function(
        "() => typeof Search !== 'undefined' && !!Search._index",
        timeout=20_000)
    return page.evaluate(js("search"), queries)


def figures(page):
    """Every figure a cell drew on the open page: its file, pixels, the
    width it is shown at, the width it was drawn for, and its link."""
    return page.evaluate(js("figures"))


# --------------------------------------------------------------------------
# What a test concludes from a visit: each takes what inspect() (and the
# functions above) gathered, and returns the problems, one line each.

# Lexers of stored outputs and plain blocks: not expected to be coloured.
# "default" is a fence with no language: Sphinx colours it as Python when it
# parses, and leaves a diagram or a sketch plain.
PLAIN_LEXERS = {"none", "text", "myst-ansi", "ipythontb", "output",
                "default"}


def outputs_too_wide(info):
    """The outputs that scroll sideways in their box (inspect's "wide")."""
    return [f"output #{w['index']}: {w['scrollWidth']} px in a {w['box']} "
            f"px box, {w['chars']} characters: {w['line']!r}"
            for w in info["wide"]]


def code_problems(info, chapter):
    """Code blocks not coloured or without a copy button; on a chapter
    (`chapter` true), no code cell at all."""
    code = [b for b in info["blocks"] if b["lexer"] not in PLAIN_LEXERS]
    problems = []
    if chapter and not any(b["cell"] for b in code):
        problems.append("no code cell on a chapter")
    problems += [f"not highlighted: {b}" for b in code if not b["coloured"]]
    problems += [f"no copy button: {b}" for b in code if not b["copy"]]
    return problems


def alt_is_a_description(alt):
    """Whether an image's alt text describes it: not empty, not a file's
    path (myst-nb's default), though a description may hold a slash."""
    return bool(alt and alt.strip()) and not re.search(
        r"^\S*[/\\]\S*$|\.(png|svg|jpe?g|gif)$", alt.strip(), re.I)


def missing_links(links, base, folder):
    """The links (absolute URLs under `base`, which serves `folder`) that
    lead to no file: neither a page nor a folder with an index.html."""
    root = urlparse(base).path
    missing = []
    for link in links:
        path = folder / urlparse(link).path[len(root):]
        if not path.exists() or path.is_dir() and not (
                path / "index.html").exists():
            missing.append(link)
    return missing


def chapter_list_missing(tapped, pages, docname):
    """What the phone's sidebar button (inspect's "primary") did not list:
    every page of the book (`pages`, docnames) but `docname` should be
    there."""
    if not (tapped and tapped["open"]):
        return ["the button opened nothing"]
    shown = {href.partition("#")[0].rpartition("/")[2]
             for href in tapped["shown"]}
    return sorted({d.rpartition("/")[2] + ".html" for d in pages
                   if d != docname} - shown)


def figures_not_opening(found):
    """The figures (figures()) that no tap opens at full size: not linked
    to their own file."""
    return [f["src"] for f in found
            if not (f["link"] or "").endswith("/" + f["src"])]


def figures_shrunk(found):
    """The figures (figures(), on a phone) shown narrower than they were
    drawn for: their labels shrink with them."""
    return [f"{f['src']} at {f['shown']:.0f} of {f['asked']:.0f} px"
            for f in found if f["shown"] < 0.95 * min(f["asked"], 2000)]


def figures_cut_without_cue(found):
    """The figures (figures()) that this screen shows only in part (wider
    than their box, or past the screen's right edge) without the line
    under them that says they scroll and open whole when tapped."""
    return [f"{f['src']}: {f['shown']:.0f} px in a {f['box']} px box, "
            f"right edge at {f['right']:.0f} of {f['screen']} px, no cue"
            for f in found if not f["cue"] and (
                f["box"] is not None and f["shown"] > f["box"] + 1
                or f["right"] > f["screen"] + 1)]


def png_size(path):
    """(width, height) in pixels of the PNG at `path`, from its header."""
    with open(path, "rb") as png:
        head = png.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def printed_images_not_figures(images, page_html, folder):
    """What a PDF (`images`: pdf.Scan.images) holds that is not one of the
    figures of the page it was printed from (`page_html`, a page under
    `folder`, the site's output), and the figures it does not hold: on
    paper, a shadow or a gradient that Chromium printed as a picture shows
    up here as an image the size of its box."""
    # one image per file, however often the page shows it; not the
    # figures drawn narrow for a phone (book.css leaves them off paper)
    names = set(re.findall(r'<img (?![^>]*phone-figure)[^>]*?src="'
                           r'(?:\.\./)*_images/([^"]+\.png)"', page_html))
    figures = sorted(png_size(folder / "_images" / name) for name in names)
    printed, drawn = Counter(images), Counter(figures)
    return ([f"an image of {w}x{h} pixels that no figure is"
             for w, h in sorted((printed - drawn).elements())]
            + [f"no image of {w}x{h} pixels (a figure)"
               for w, h in sorted((drawn - printed).elements())])


BREAK_AFTER = re.compile(  # as in site/static/book.js
    r"(?<=[A-Za-z0-9)]\.)(?=\S)|(?<=[A-Za-z0-9]_)(?=[A-Za-z0-9])")


def table_identifiers_that_break_mid_word(chrome):
    """Inline code in tables and headings (chrome.js) that may break
    mid-word: each "." or single "_" inside a name must carry a <wbr>
    (book.js, which breaks with the same pattern), and the code itself
    must not wrap anywhere else (book.css)."""
    return [c["text"] for c in chrome["tableCode"]
            if c["wrap"] != "normal"
            or c["breaks"] < len(BREAK_AFTER.findall(c["text"]))]


# --------------------------------------------------------------------------
# The Chinese edition's words: no English but code, outputs and names.

LATIN_WORD = re.compile(r"_*[A-Za-z][A-Za-z0-9_]*")
# in a catalog: a role, {term}`钩子 <hook>`, whose text the page shows;
# a code span, which the page shows as code
ROLE = re.compile(r"\{[a-z]+\}`([^`]*)`")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


@cache
def chinese_edition_words():
    """The Latin words that the Chinese edition's own text holds outside
    its code marks: the names the translators kept (PyTorch, GPU, CUDA, the
    English after a term, 缓冲区（buffer）), in every catalog (a page shows
    the other pages' titles in its sidebar), the pages' titles, code and
    all, the names of mininn's index entries and the chapters' run record
    (reports/execution.json). Any other Latin word on
    a Chinese page is the chrome of a theme or an extension left in
    English."""
    words = set()
    for po in i18n.CATALOGS.rglob("*.po"):
        with po.open("rb") as handle:
            for message in read_po(handle):
                if message.id and message.string:
                    words.update(LATIN_WORD.findall(CODE_SPAN.sub(
                        " ", ROLE.sub(r" \1 ", message.string))))
    # the machine a chapter last ran on, as the run record says it
    # (reports/execution.json, shown on the GPU runs page): an output
    words.update(LATIN_WORD.findall(
        (ROOT / "reports" / "execution.json").read_text(encoding="utf-8")))
    # a page's title, code and all, as the print-only heading and links
    # show it: as text
    for docname in PAGES:
        words.update(LATIN_WORD.findall(expected_title(docname, "zh")))
    import book_search

    for docname in CHAPTERS:
        for cell in nbformat.read(source_of(docname), as_version=4).cells:
            if "export" in cell.metadata.get("tags", []):
                words.update(name for _, name, owner in
                             book_search.definitions(cell.source))
                words.update(owner for _, _, owner in
                             book_search.definitions(cell.source) if owner)
    return frozenset(words)


def english_chrome(texts):
    """The texts of a Chinese page (js/english.js: its words outside code,
    outputs and math, its tooltips and placeholders) with an English word
    that its catalogs do not hold (chinese_edition_words); one-letter words
    (the index's letters, x, n) pass."""
    allowed = chinese_edition_words()
    problems = []
    for text in texts:
        words = [w for w in LATIN_WORD.findall(text)
                 if len(w) > 1 and w not in allowed]
        if words:
            problems.append(f"{', '.join(dict.fromkeys(words))} in "
                            f"{short(text, 70)!r}")
    return problems
