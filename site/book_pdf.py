"""Sphinx extension: the whole book as one PDF, beside the pages.

At the end of an HTML build, when a browser is there (chromium()), Sphinx's
own `singlehtml` builder writes every page of the table of contents, in
order, as one page: a second build with the same configuration and the
same doctrees (nothing is read or executed again), into
_build/whole-book/ (the Chinese edition's into _build/whole-book-zh/). Its
cover and contents come first (add_cover, with whole-book.css: one sheet
per page of the site). Headless Chromium (through playwright) prints that
page once its math is typeset, with bookmarks and tags, to
rebuilding-nn-module.pdf in the site. Each edition prints its own.
"""
import contextlib
import datetime
import functools
import html
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

from site_catalog import N_, _

# Nothing but the standard library above: tools/dev.py imports this file for
# chromium(), before .venv (and Sphinx) exists.

PDF_NAME = "rebuilding-nn-module.pdf"
WHOLE_BOOK = "whole-book.html"  # in _build/whole-book/, what is printed

# The browser that prints the PDFs and that the site's tests drive. Debian's
# chromium-headless-shell is the Chromium that playwright itself runs
# headless, built as the shell: measured on a 2-core EPYC, a fifth to a
# third less CPU to load a page and a tenth less to print the PDF than the
# full chromium, which is used where only it is installed. BOOK_CHROMIUM
# names another (playwright's own download, on macOS or Windows).
BROWSERS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
# Headless, as root (no sandbox), with none of Chromium's own traffic, and no
# request that leaves the machine: everything but the loopback goes through
# a proxy that is not there (nothing listens on port 9), so such a request
# fails at once wherever it runs, and the page's `requestfailed` event names
# it (the site's tests use this).
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--proxy-server=127.0.0.1:9",
]
LICENCE_TEXT = N_("Text: CC BY-SA 4.0; code: MIT")
LICENCE_HTML = N_(
    "The text and figures of this book are licensed under the Creative "
    "Commons Attribution-ShareAlike 4.0 licence (CC BY-SA 4.0, "
    "<code>LICENSE-text</code>); its code (the notebooks' cells, "
    "<code>helpers.py</code>, <code>mininn</code>) under the MIT licence "
    "(<code>LICENSE</code>).")


def chromium():
    """The browser's path (BROWSERS' first that exists, or BOOK_CHROMIUM);
    BROWSERS[0] when none is installed, for the messages that say so."""
    return os.environ.get("BOOK_CHROMIUM") or next(
        (path for path in BROWSERS if Path(path).exists()), BROWSERS[0])


def chinese_font():
    """Whether fontconfig lists a font with Chinese glyphs (the Chinese PDF
    draws boxes without one)."""
    try:
        listed = subprocess.run(["fc-list", ":lang=zh"], capture_output=True,
                                text=True).stdout
    except FileNotFoundError:
        return False
    return bool(listed.strip())


def pdf_possible():
    if not Path(chromium()).exists():
        return False, f"{chromium()} is missing"
    try:
        import pikepdf  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as missing:
        return False, f"{missing.name} is not installed"
    return True, ""


@contextlib.contextmanager
def serve(directory, cache_assets=False, errors=None):
    """Serve `directory` on 127.0.0.1 (a free port) while the block runs;
    yield its base URL. The PDF is printed from it (MathJax loads its fonts
    by URL) and the site's tests browse it. `cache_assets`: let a browser
    keep everything but the pages, as on any real host. `errors`: a list to
    add each answer of 400 or more to, as "URL (HTTP code)"."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def log_request(self, code="-", size="-"):  # by send_response
            if errors is not None and int(code) >= 400:
                host, port = self.server.server_address[:2]
                path = getattr(self, "path", "")  # unset: a garbled request
                errors.append(f"http://{host}:{port}{path} "
                              f"(HTTP {int(code)})")

        def end_headers(self):
            if cache_assets and not self.path.split("?")[0].endswith(".html"):
                self.send_header("Cache-Control", "max-age=600")
            super().end_headers()

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # A browser that drops a connection it no longer needs (a page
            # left mid-fetch) is not an error of the site; anything else is.
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    handler = functools.partial(Quiet, directory=str(directory))
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------
# The whole book as one page: Sphinx's singlehtml builder.

def whole_book_dir(doctreedir):
    """_build/.doctrees -> _build/whole-book; .doctrees-zh -> whole-book-zh."""
    doctrees = Path(doctreedir)
    return doctrees.with_name("whole-book"
                              + doctrees.name.removeprefix(".doctrees"))


def build_whole_book(app):
    """The singlehtml build of the same sources, configuration and doctrees
    as `app`'s, in a process of its own (two Sphinx applications cannot
    share docutils' registries), its warnings on stderr; return (its exit
    status, its folder, the page it wrote)."""
    import pickle
    import tempfile

    outdir = whole_book_dir(app.doctreedir)
    job = {"srcdir": str(app.srcdir), "outdir": str(outdir),
           "doctreedir": str(app.doctreedir),
           "overrides": app.book_pdf_overrides,
           "warningiserror": app.warningiserror,
           "keep_going": app.keep_going}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "job.pickle"
        path.write_bytes(pickle.dumps(job))
        status = subprocess.run([sys.executable, __file__, str(path)],
                                env={**os.environ, "PYTHONWARNINGS": "ignore"}
                                ).returncode
    return status, outdir, outdir / WHOLE_BOOK


def _singlehtml(job):
    """The build of build_whole_book, in its own process."""
    from sphinx.application import Sphinx

    app = Sphinx(job["srcdir"], None, job["outdir"], job["doctreedir"],
                 "singlehtml", confoverrides=job["overrides"], status=None,
                 warning=sys.stderr, warningiserror=job["warningiserror"],
                 keep_going=job["keep_going"])
    # as jupyter-book does for this builder: MathJax on the one page
    app.set_html_assets_policy("always")
    app.build()
    # Its links are written for a page at the top of its folder, where
    # Sphinx puts the root document's (index.html): ours is book/intro.html.
    written = Path(job["outdir"], app.config.root_doc + ".html")
    written.replace(Path(job["outdir"], WHOLE_BOOK))
    return app.statuscode


def links_within_the_page(app, doctree, docname):
    """singlehtml links a section of another page as "#document-<page>#<id>"
    and then (fix_refuris) as "<root_doc>.html#<id>": on the one page, and
    in the PDF printed from it, that is a link to another file. It becomes
    "#<id>", a link within the page. (Runs last at doctree-resolved, after
    the extensions that make links there, before fix_refuris.)"""
    if app.builder.name != "singlehtml":
        return
    from docutils import nodes

    for reference in doctree.findall(nodes.reference):
        uri = reference.get("refuri", "")
        if uri.startswith("#document-") and uri.count("#") == 2:
            reference["refuri"] = "#" + uri.rpartition("#")[2]


def book_version(root):
    """"Version 1a2b3c4 of 2026-12-02": the commit the book is built from
    and its date ("with local changes" when the book's sources differ from
    it), or the build's date where there is no git."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args],
                              capture_output=True, text=True)
    try:
        head = git("log", "-1", "--format=%h %cs")
    except OSError:
        head = None
    if head is None or head.returncode or not head.stdout.strip():
        return _("Printed on {date}.").format(
            date=datetime.date.today().isoformat())
    commit, date = head.stdout.split()
    changed = git("diff", "--quiet", "HEAD", "--", "book", "_toc.yml",
                  "_config.yml").returncode != 0
    return (_("Version {commit} of {date}, with local changes.") if changed
            else _("Version {commit} of {date}.")).format(commit=commit,
                                                           date=date)


def add_cover(app, pagename, templatename, context, doctree):
    """The singlehtml page opens with the book's colophon: its authors,
    version, where the notebooks are, its licences. (sphinx-book-theme
    prints the title and the contents, numbered and linked, above it.)"""
    if app.builder.name != "singlehtml" or "body" not in context:
        return
    import book_zip

    about = _('The whole book, from the sources of the website. Every '
              'solution is\nprinted after its exercise, under "Solution to '
              'Exercise N.M".')
    notebooks = _(
        "To run the chapters, take\n<code>{zip}</code>: it sits beside this "
        "PDF on the book's website,\nlinked under the title of every page, "
        "and holds every chapter as a notebook\nwith <code>helpers.py</code> "
        "and the <code>mininn</code> package that they\nimport, and a README "
        "that says how to install and run them.").format(
            zip=book_zip.ZIP_NAME)
    version = html.escape(book_version(Path(app.srcdir)))
    context["body"] = f"""<section class="book-cover">
<p class="book-author">{html.escape(app.config.author)}</p>
<p class="book-version">{version}</p>
<p>{about}</p>
<p class="book-notebooks">{notebooks}</p>
<p class="book-licence">{_(LICENCE_HTML)}</p>
</section>
{context["body"]}"""


# --------------------------------------------------------------------------
# Printing.

# What the page must show before it is printed: its math typeset, its images
# loaded, every folded cell open (<details>; the solutions open by
# book.css's print rules); and, as printed, no shadow and no rounded corner
# (book.css), which Chromium prints as images and clipping paths.
READY = """async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await document.fonts.ready;
  document.querySelectorAll("details").forEach(d => d.open = true);
  const math = [...document.querySelectorAll("span.math, div.math")];
  const drawn = {};
  for (const e of document.body.querySelectorAll("*")) {
    const s = getComputedStyle(e);
    const kind = s.boxShadow !== "none" ? "a shadow"
      : [s.borderTopLeftRadius, s.borderTopRightRadius,
         s.borderBottomLeftRadius, s.borderBottomRightRadius]
        .some(r => r !== "0px") ? "rounded corners" : null;
    if (kind) {
      const what = `${kind}: ${e.tagName.toLowerCase()}.${e.classList[0]}`;
      drawn[what] = (drawn[what] || 0) + 1;
    }
  }
  return {
    math: math.length,
    typeset: math.filter(m => m.querySelector("mjx-container")).length,
    broken: [...document.images].filter(i => !(i.complete && i.naturalWidth))
      .map(i => i.getAttribute("src")),
    drawn,
  };
}"""
PDF_OPTIONS = dict(
    format="A4", print_background=True, display_header_footer=True,
    header_template="<span></span>",
    footer_template=('<div style="font-size:9px;width:100%;text-align:center;'
                     'color:#555"><span class="pageNumber"></span> / '
                     '<span class="totalPages"></span></div>'),
    margin={"top": "14mm", "bottom": "16mm", "left": "14mm", "right": "14mm"},
    # bookmarks from the headings, and a tagged PDF (its structure, for
    # screen readers and reflowing viewers)
    outline=True, tagged=True)


def print_pdf(folder, page, target, browser=None, metadata=None):
    """Print `page` (a file under `folder`, served from there) to `target`
    with Chromium once READY; set the Author, Subject and Keywords of
    `metadata`, and pack the tags' many small objects into compressed
    streams (pikepdf: 15 MB become 7). `browser`: a launched playwright
    browser to use. Return the problems seen: console errors, failed
    requests, answers of 400 or more, math not typeset, images not loaded,
    shadows or rounded corners printed."""
    import pikepdf

    problems, answered = [], []
    printed = target.with_suffix(".printed.pdf")
    with serve(folder, errors=answered) as base, contextlib.ExitStack() as own:
        if browser is None:
            from playwright.sync_api import sync_playwright

            playwright = own.enter_context(sync_playwright())
            browser = playwright.chromium.launch(executable_path=chromium(),
                                                 args=CHROMIUM_ARGS)
        tab = browser.new_page()
        # The whole book is one page of 3 MB: playwright's 30 s are not
        # always enough to load it on a busy machine.
        tab.set_default_timeout(600_000)
        tab.on("console", lambda m: m.type == "error" and problems.append(
            f"console: {m.text}"))
        tab.on("pageerror", lambda e: problems.append(f"page: {e}"))
        tab.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
        tab.emulate_media(media="print")
        tab.goto(base + page.relative_to(folder).as_posix(), wait_until="load")
        ready = tab.evaluate(READY)
        tab.pdf(path=str(printed), **PDF_OPTIONS)
        tab.close()
    if ready["typeset"] != ready["math"]:
        problems.append(f"{ready['math'] - ready['typeset']} of "
                        f"{ready['math']} formulas not typeset")
    problems += [f"image not loaded: {src}" for src in ready["broken"]]
    problems += [f"{what} on {count} elements"
                 for what, count in sorted(ready["drawn"].items())]
    problems += answered
    with pikepdf.open(printed) as pdf:
        for key, value in (metadata or {}).items():
            pdf.docinfo[f"/{key}"] = value
        pdf.save(target, object_stream_mode=pikepdf.ObjectStreamMode.generate,
                 compress_streams=True)
    printed.unlink()
    return problems


def pdf_metadata(config):
    # Jupyter Book makes _config.yml's `title` the html_title and leaves
    # Sphinx's `project` at "Project name not set"
    return {"Title": config.html_title, "Author": config.author,
            "Subject": _("torch.nn.Module rebuilt from scratch, every step "
                         "checked against torch"),
            "Keywords": f"PyTorch; torch.nn.Module; {_(LICENCE_TEXT)}"}


def keep_configuration(app, config):
    """The configuration as given, for the second build: extensions change
    it once they run (sphinx-comments adds a static folder that does not
    exist, which the second build would warn about)."""
    import copy

    app.book_pdf_overrides = copy.deepcopy(
        {**config.overrides, "extensions": config.extensions})


def logger():
    from sphinx.util import logging

    return logging.getLogger(__name__)


def builder_inited(app):
    if app.builder.name == "singlehtml":
        # one sheet per page of the site, and the cover's layout
        app.add_css_file("whole-book.css")
        # Sphinx writes a node with the handlers registered under the
        # builder's name, and only where none is falls back to those of its
        # format, "html": sphinx-exercise registers its own for
        # "singlehtml", which hid every other extension's (myst-nb's folded
        # cells failed: "unknown node type: HideCodeCellNode").
        handlers = app.registry.translation_handlers
        for node, pair in handlers.get("html", {}).items():
            handlers.setdefault("singlehtml", {}).setdefault(node, pair)
        # The page is printed, not searched: no search index (for the
        # Chinese edition, jieba took 5-9 s to load for it).
        app.builder.search = False
    ok, why = pdf_possible()
    app.env.book_pdf = ok and app.builder.name == "html"
    if app.builder.name == "html" and not ok:
        logger().info(f"book_pdf: no PDF of the book ({why})")
    elif app.env.book_pdf and (app.config.language or "").startswith("zh") \
            and not chinese_font():
        logger().info("book_pdf: no Chinese font (fc-list :lang=zh is "
                      "empty): the PDF draws boxes; install "
                      "fonts-wqy-microhei (.ci/install-browser)")


def build_finished(app, exception):
    if exception is None and app.builder.name == "singlehtml":
        # The theme loads the search index on every page (for its search
        # box), and this builder writes none; this page is printed, not
        # searched: an empty index, rather than a request that fails.
        Path(app.outdir, "searchindex.js").write_text("Search.setIndex({})")
    if exception is not None or app.builder.name != "html" or not (
            app.env.book_pdf):
        return
    status, folder, page = build_whole_book(app)
    if status != 0:
        logger().warning("book_pdf: the singlehtml build failed")
        return
    problems = print_pdf(folder, page, Path(app.outdir) / PDF_NAME,
                         metadata=pdf_metadata(app.config))
    for problem in problems:
        logger().warning(f"book_pdf: {page.name} printed with {problem}")
    logger().info(f"book_pdf: wrote {PDF_NAME}")


def setup(app):
    app.setup_extension("site_catalog")
    app.connect("config-inited", keep_configuration, priority=0)
    app.connect("builder-inited", builder_inited)
    app.connect("html-page-context", add_cover)
    app.connect("doctree-resolved", links_within_the_page, priority=999)
    # after sphinx-mathjax-offline has copied its tree (priority 500)
    app.connect("build-finished", build_finished, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    import pickle

    sys.exit(_singlehtml(pickle.loads(Path(sys.argv[1]).read_bytes())))
