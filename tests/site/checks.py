"""The website's checks, for both editions: what a test reads from a page in
the browser (the JavaScript in js/), and the verdicts drawn from it."""
import html
import os
import re
from collections import Counter
from functools import cache
from pathlib import Path
from urllib.parse import urlparse

import nbformat
from babel.messages.pofile import read_po

import book_search
import book_zip
import i18n
from figures import png_size

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
EDITIONS = {"en": HTML, "zh": i18n.ZH_HTML}  # the Chinese one in zh/
BUILT = os.environ.get("BOOK_SITE_BUILT") == "1"
# The errors the site's server answered (book_print.serve), for the Recorders.
ANSWERED = []
# docnames such as "book/intro", in reading order, as the build reads _toc.yml
PAGES = book_zip.toc_docnames(ROOT / "_toc.yml")
# the site's icon (_config.yml's html_favicon), and the one browsers guess
ICON = re.compile(r"/(_static/)?favicon\.(svg|ico)$")


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


@cache
def translations(docname):
    """{English: Chinese} of a page's catalog."""
    with (i18n.PAGE_CATALOGS / f"{page_id(docname)}.po").open("rb") as po:
        return {m.id: m.string for m in read_po(po) if m.id}


def expected_title(docname, edition="en"):
    """The first "# " heading of a page's source, in the edition's language."""
    path = source_of(docname)
    text = path.read_text()
    if path.suffix == ".ipynb":
        text = "\n".join(cell.source for cell in nbformat.reads(
            text, as_version=4).cells if cell.cell_type == "markdown")
    title = re.search(r"^# (.+)", text, re.M).group(1).strip()
    return normalise(translations(docname)[title] if edition == "zh" else title)


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
    return (Path(__file__).with_name("js") / f"{name}.js").read_text()


class Recorder:
    """What a page did wrong while it loaded: console and page errors, failed
    requests, the server's errors (`answered`, told by book_print.serve) and
    requests that leave `base` (Chromium as book_print launches it fails
    them)."""

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
        # Chromium cancels the icon's request when the page is left before
        # it came; a missing icon is still answered HTTP 404.
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
    """A fresh browser context, its one page and the page's Recorder."""
    context = browser.new_context(viewport=viewport, **options)
    recorder = Recorder(base, answered)
    page = context.new_page()
    recorder.attach(page)
    return context, page, recorder


def contents_drawer_after_a_tap(page):
    """On a phone: open the Contents drawer and tap its first section link;
    whether it opened, the links it showed, whether it closed after the tap,
    and where the page went."""
    button = page.locator("button.secondary-toggle:visible").first
    if not button.count():
        return None
    button.tap()
    dialog = page.locator("#pst-secondary-sidebar-modal")
    link = dialog.locator("a[href^='#']").first
    link.wait_for(state="visible", timeout=5000)
    opened = dialog.evaluate("d => d.open")
    shown = dialog.evaluate("""d => [...d.querySelectorAll("a")]
      .filter(a => a.checkVisibility() && a.getBoundingClientRect().width)
      .map(a => a.getAttribute("href"))""")
    href = link.get_attribute("href")
    link.tap()
    closed = dialog.evaluate("""d => new Promise(done => {
      if (!d.open) done(true);
      d.addEventListener("close", () => done(true));
      setTimeout(() => done(false), 2000);
    })""")
    if not closed:  # close it, so that the reader can go on
        dialog.evaluate("d => d.close()")
    return {"opened": opened, "shown": shown, "closed": closed,
            "hash": page.evaluate("location.hash"), "link": href}


def solution_after_tapping_its_title(page):
    """On a phone: tap the words of the first solution's title, away from the
    chevron; whether the solution opened, and the anchor before and after."""
    title = page.locator("div.solution.dropdown > .admonition-title").first
    if not title.count():
        return None
    before = page.evaluate("location.hash")
    # Most of the words are a link to the exercise (sphinx-exercise): tap
    # the middle of that link, as a thumb would (whatever lies on top).
    words = title.locator("a").first if title.locator("a").count() else title
    words.tap(force=True)
    page.wait_for_timeout(150)  # the toggle's own transition
    shown = title.evaluate("""t => [...t.parentElement.children]
      .filter(c => c !== t)
      .some(c => c.checkVisibility({visibilityProperty: true})
                 && c.getBoundingClientRect().height > 0)""")
    return {"shown": shown, "hash_before": before,
            "hash_after": page.evaluate("location.hash")}


# --------------------------------------------------------------------------
# Verdicts: what a test concludes from what js/inspect.js gathered.

def alt_is_a_description(alt):
    """Not empty, not a file's path (myst-nb's default); a description may
    hold a slash."""
    return bool(alt and alt.strip()) and not re.search(
        r"^\S*[/\\]\S*$|\.(png|svg|jpe?g|gif)$", alt.strip(), re.I)


def figures_cut_without_cue(found):
    """The figures that this screen shows only in part (wider than their box,
    or past the screen's edge) without the line under them that says they
    scroll and open whole when tapped."""
    return [f"{f['src']}: {f['shown']:.0f} px in a {f['box']} px box, "
            f"right edge at {f['right']:.0f} of {f['screen']} px, no cue"
            for f in found if not f["cue"] and (
                f["box"] is not None and f["shown"] > f["box"] + 1
                or f["right"] > f["screen"] + 1)]


def printed_images_not_figures(images, page_html, folder):
    """The images (w, h) a PDF holds that are not the figures of the page it
    was printed from (a shadow or a gradient printed as a picture, the size
    of its box), and the figures it does not hold."""
    # one image per file, however often the page shows it; not the figures
    # drawn narrow for a phone (book.css leaves them off paper)
    names = set(re.findall(r'<img (?![^>]*phone-figure)[^>]*?src="'
                           r'(?:\.\./)*_images/([^"]+\.png)"', page_html))
    printed = Counter(images)
    drawn = Counter(png_size((folder / "_images" / name).read_bytes())
                    for name in names)
    return ([f"an image of {w}x{h} pixels that no figure is"
             for w, h in sorted((printed - drawn).elements())]
            + [f"no image of {w}x{h} pixels (a figure)"
               for w, h in sorted((drawn - printed).elements())])


# --------------------------------------------------------------------------
# The Chinese edition's words: no English but code, outputs and names.

LATIN_WORD = re.compile(r"_*[A-Za-z][A-Za-z0-9_]*")
# in a catalog: a role, {term}`钩子 <hook>`, whose text the page shows; a
# code span, which the page shows as code
ROLE = re.compile(r"\{[a-z]+\}`([^`]*)`")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


@cache
def chinese_edition_words():
    """The Latin words the Chinese edition's own text holds outside code: in
    its catalogs (PyTorch, 缓冲区（buffer）), its titles, code and all, the run
    record (reports/execution.json) and mininn's index entries. Any other is
    a theme's or an extension's word left in English."""
    words = set()
    for po in i18n.CATALOGS.rglob("*.po"):
        with po.open("rb") as handle:
            for message in read_po(handle):
                if message.id and message.string:
                    words.update(LATIN_WORD.findall(CODE_SPAN.sub(
                        " ", ROLE.sub(r" \1 ", message.string))))
    words.update(LATIN_WORD.findall(
        (ROOT / "reports" / "execution.json").read_text(encoding="utf-8")))
    for docname in PAGES:
        words.update(LATIN_WORD.findall(expected_title(docname, "zh")))
    for docname in CHAPTERS:
        for cell in nbformat.read(source_of(docname), as_version=4).cells:
            if "export" in cell.metadata.get("tags", []):
                for _, name, owner in book_search.definitions(cell.source):
                    words.update(filter(None, (name, owner)))
    return frozenset(words)


def english_chrome(texts):
    """The texts of a Chinese page (js/english.js) with an English word of
    two letters or more that chinese_edition_words() does not hold."""
    allowed = chinese_edition_words()
    problems = []
    for text in texts:
        words = [w for w in LATIN_WORD.findall(text)
                 if len(w) > 1 and w not in allowed]
        if words:
            problems.append(f"{', '.join(dict.fromkeys(words))} in "
                            f"{short(text, 70)!r}")
    return problems
