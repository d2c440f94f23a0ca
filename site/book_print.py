"""Printing and browsing with Chromium: which browser (chromium(); also
tools/dev.py's, which imports this before .venv exists: nothing but the
standard library is imported at the top), how it is launched, a local server
for a built site, and print_pdf(), which prints a page the way the book's
PDF is printed (site/book_pdf.py). The site's tests browse with the same.
"""
import contextlib
import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

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
    if os.environ.get("BOOK_PDF") == "0":
        # the site's tests build without the PDFs unless they check them
        # (tests/site/site_fixtures.py): Paged.js takes 80 CPU-s for each
        return False, "BOOK_PDF=0"
    if not Path(chromium()).exists():
        return False, f"{chromium()} is missing"
    if not PAGED_JS.exists():
        return False, ("Paged.js is missing (npm ci, as .ci/install-browser "
                       "does)")
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


# What the page must show before it is paged: its math typeset, its images
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
# Paged.js (npm: package.json, installed by .ci/install-browser) lays the
# book out in pages inside the browser: the sheets' size and margins, the
# running heads, page numbers and page references of `stylesheet` (CSS Paged
# Media, which Chromium's own print does not do). It pages the article
# alone: the site's header and sidebars are not printed. The page's own
# stylesheets stay the browser's (Paged.js's CSS parser rejects the theme's
# modern selectors). Then the headings' text, for the bookmarks.
PAGED_JS = Path(__file__).resolve().parent.parent / "node_modules" / \
    "pagedjs" / "dist" / "paged.polyfill.js"
PAGE = """async (stylesheet) => {
  const content = document.createDocumentFragment();
  content.append(document.querySelector("article.bd-article"));
  document.body.replaceChildren();
  const flow = await PagedPolyfill.preview(content, [stylesheet],
                                           document.body);
  const headings = document.querySelectorAll(
    ".pagedjs_page :is(h1, h2, h3, h4, h5, h6)");
  return {pages: flow.total,
          headings: [...headings].map(h => h.textContent.trim()
                                              .replace(/\\s+/g, " "))};
}"""
PDF_OPTIONS = dict(
    print_background=True, prefer_css_page_size=True,
    # bookmarks from the headings, and a tagged PDF (its structure, for
    # screen readers and reflowing viewers)
    outline=True, tagged=True)


def print_pdf(folder, page, target, stylesheet, browser=None, metadata=None,
              bookmarks=None):
    """Print `page` (a file under `folder`, served from there) to `target`
    with Chromium once READY, paged by Paged.js with `stylesheet` (its URL
    relative to the page); set the Author, Subject and Keywords of
    `metadata`, each bookmark's title to its heading's text (renamed by
    `bookmarks`, {heading: title}), and pack the tags' many small objects
    into compressed streams (pikepdf: 15 MB become 7), with no link to the
    server it was printed from (unlink). `browser`: a launched
    playwright browser to use. Return the problems seen: console errors,
    failed requests, answers of 400 or more, math not typeset, images not
    loaded, shadows or rounded corners printed, bookmarks not matched."""
    import pikepdf

    problems, answered = [], []
    printed = target.with_suffix(".printed.pdf")
    with serve(folder, errors=answered) as served, \
            contextlib.ExitStack() as own:
        if browser is None:
            from playwright.sync_api import sync_playwright

            playwright = own.enter_context(sync_playwright())
            browser = playwright.chromium.launch(executable_path=chromium(),
                                                 args=CHROMIUM_ARGS)
        tab = browser.new_page()
        # The whole book is one page of 3 MB: playwright's 30 s are not
        # always enough to load (and page) it on a busy machine.
        tab.set_default_timeout(600_000)
        # and Paged.js's word for an element it could not place on a sheet
        tab.on("console", lambda m: (
            m.type == "error" or m.text.startswith("Unable to layout")
        ) and problems.append(f"console: {m.text}"))
        tab.on("pageerror", lambda e: problems.append(f"page: {e}"))
        tab.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
        tab.emulate_media(media="print")
        tab.goto(served + page.relative_to(folder).as_posix(),
                 wait_until="load")
        ready = tab.evaluate(READY)
        tab.evaluate("window.PagedConfig = {auto: false}")
        tab.add_script_tag(path=str(PAGED_JS))
        paged = tab.evaluate(PAGE, stylesheet)
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
        problems += retitle(pdf, paged["headings"], bookmarks or {})
        unlink(pdf, served)
        pdf.save(target, object_stream_mode=pikepdf.ObjectStreamMode.generate,
                 compress_streams=True)
    printed.unlink()
    return problems


def unlink(pdf, served):
    """No link to the server the page was printed from: a file beside the
    site's pages (a download) is not beside the PDF. Its text stays."""
    for page in pdf.pages:
        notes = page.get("/Annots")
        if notes is None:
            continue
        kept = [note for note in notes if not str(
            note.get("/A", {}).get("/URI", "")).startswith(served)]
        if len(kept) < len(notes):
            page.Annots = pdf.make_indirect(kept)


def retitle(pdf, headings, renamed):
    """Chromium's bookmarks, one per heading in order, titled from the
    heading's text as the page holds it (Chromium drops the space before a
    `code` that ends a heading: "someone else'sforward")."""
    with pdf.open_outline() as outline:
        def walk(items):
            for item in items:
                yield item
                yield from walk(item.children)
        marks = list(walk(outline.root))
        if len(marks) != len(headings):
            return [f"{len(marks)} bookmarks for {len(headings)} headings: "
                    "left as Chromium wrote them"]
        for mark, heading in zip(marks, headings):
            mark.title = renamed.get(heading, heading)
    return []
