"""Chromium, which prints the book's PDF (print_pdf) and which the site's
tests drive, and a local server for a built site. tools/dev.py imports this
before .venv exists: only the standard library at the top."""
import contextlib
import functools
import http.server
import io
import os
import subprocess
import threading
from pathlib import Path

# Debian's chromium-headless-shell (the headless Chromium that playwright
# runs) loads a page with a fifth to a third less CPU than the full chromium,
# used where only it is installed. BOOK_CHROMIUM names another.
BROWSERS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
# Headless, as root, without Chromium's own traffic; every request but the
# loopback's goes to a proxy that is not there (port 9), so that a request
# that would leave the machine fails at once and `requestfailed` names it.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--proxy-server=127.0.0.1:9"]
# Paged.js (npm ci: package-lock.json) lays the book out in sheets inside the
# browser, with whole-book.css's running heads, page numbers and page
# references (CSS Paged Media, which Chromium's own print does not do).
PAGED_JS = Path(__file__).resolve().parents[1] / "node_modules" / \
    "pagedjs" / "dist" / "paged.polyfill.js"


def chromium():
    """BOOK_CHROMIUM, or the first of BROWSERS there (or to install)."""
    return os.environ.get("BOOK_CHROMIUM") or next(
        (path for path in BROWSERS if Path(path).exists()), BROWSERS[0])


def chinese_font():
    """Whether fontconfig has a Chinese font (the Chinese PDF needs one)."""
    try:
        return bool(subprocess.run(["fc-list", ":lang=zh"], text=True,
                                   capture_output=True).stdout.strip())
    except FileNotFoundError:
        return False


def pdf_possible():
    """(whether the PDF can be printed here, why not)."""
    if os.environ.get("BOOK_PDF") == "0":  # the site's tests but `--pdf`
        return False, "BOOK_PDF=0"
    if not Path(chromium()).exists():
        return False, f"{chromium()} is missing"
    if not PAGED_JS.exists():
        return False, "Paged.js is missing (npm ci, as .ci/install-browser does)"
    return True, ""


@contextlib.contextmanager
def serve(directory, cache_assets=False, errors=None):
    """Serve `directory` on 127.0.0.1 while the block runs; yield its URL.
    `cache_assets`: a browser may keep all but the pages, as from any host.
    `errors`: a list to add each answer of 400 or more to."""
    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def log_request(self, code="-", size="-"):
            if errors is not None and int(code) >= 400:
                errors.append(f"{base}{getattr(self, 'path', '/')[1:]} "
                              f"(HTTP {int(code)})")

        def end_headers(self):
            if cache_assets and not self.path.split("?")[0].endswith(".html"):
                self.send_header("Cache-Control", "max-age=600")
            super().end_headers()

        def handle(self):
            # a browser that drops a connection it no longer needs: no error
            with contextlib.suppress(ConnectionError):
                super().handle()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(
        Handler, directory=str(directory)))
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()


# What the page must show before it is paged: its math typeset, its images
# loaded, every <details> open; and, as printed, no shadow and no rounded
# corner (book.css), which Chromium prints as images and clipping paths.
READY = """async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await document.fonts.ready;
  document.querySelectorAll("details").forEach(d => d.open = true);
  const math = [...document.querySelectorAll("span.math, div.math")];
  const drawn = {};
  for (const e of document.body.querySelectorAll("*")) {
    const s = getComputedStyle(e);
    const kind = s.boxShadow !== "none" ? "a shadow"
      : s.borderRadius !== "0px" ? "rounded corners" : null;
    if (kind) {
      const what = `${kind}: ${e.tagName.toLowerCase()}.${e.classList[0]}`;
      drawn[what] = (drawn[what] || 0) + 1;
    }
  }
  const problems = Object.entries(drawn).sort()
    .map(([what, count]) => `${what} on ${count} elements`);
  const missing = math.filter(m => !m.querySelector("mjx-container")).length;
  if (missing) problems.unshift(`${missing} of ${math.length} formulas not typeset`);
  for (const i of document.images)
    if (!(i.complete && i.naturalWidth))
      problems.push(`image not loaded: ${i.getAttribute("src")}`);
  return problems;
}"""
# Paged.js pages the article alone (not the site's header and sidebars),
# leaving the page's own stylesheets to the browser (its CSS parser rejects
# the theme's modern selectors); then the headings' text, for the bookmarks.
PAGE = """async (stylesheet) => {
  const content = document.createDocumentFragment();
  content.append(document.querySelector("article.bd-article"));
  document.body.replaceChildren();
  await PagedPolyfill.preview(content, [stylesheet], document.body);
  return [...document.querySelectorAll(
    ".pagedjs_page :is(h1, h2, h3, h4, h5, h6)")]
    .map(h => h.textContent.trim().replace(/\\s+/g, " "));
}"""


def print_pdf(folder, page, target, stylesheet, metadata, bookmarks):
    """Print `page` (a file under `folder`) to `target` with Chromium once
    READY, paged by Paged.js with `stylesheet` (a URL relative to the page),
    a tagged PDF with `metadata` whose bookmarks are its headings (renamed by
    `bookmarks`). Return the problems seen: errors, failed requests, READY's.
    """
    import pikepdf
    from playwright.sync_api import sync_playwright

    problems = []
    with serve(folder, errors=problems) as served, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(),
                                             args=CHROMIUM_ARGS)
        tab = browser.new_page()
        tab.set_default_timeout(600_000)  # a page of 3 MB on a busy machine
        # and Paged.js's word for an element it could not place on a sheet
        tab.on("console", lambda m: (
            m.type == "error" or m.text.startswith("Unable to layout")
        ) and problems.append(f"console: {m.text}"))
        tab.on("pageerror", lambda e: problems.append(f"page: {e}"))
        tab.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
        tab.emulate_media(media="print")
        tab.goto(served + page.relative_to(folder).as_posix())
        problems += tab.evaluate(READY)
        tab.evaluate("window.PagedConfig = {auto: false}")
        tab.add_script_tag(path=str(PAGED_JS))
        headings = tab.evaluate(PAGE, stylesheet)
        # bookmarks from the headings; tags, for screen readers and reflow
        printed = tab.pdf(print_background=True, outline=True, tagged=True,
                          prefer_css_page_size=True)
        browser.close()
    with pikepdf.open(io.BytesIO(printed)) as pdf:
        for key, value in metadata.items():
            pdf.docinfo[f"/{key}"] = value
        # each bookmark titled with its heading's text: Chromium drops the
        # space before a heading's last `code` ("someone else'sforward")
        with pdf.open_outline() as outline:
            marks = list(walk(outline.root))
            if len(marks) != len(headings):
                problems.append(f"{len(marks)} bookmarks for {len(headings)} "
                                "headings: left as Chromium wrote them")
            else:
                for mark, heading in zip(marks, headings):
                    mark.title = bookmarks.get(heading, heading)
        # the tags' many small objects in compressed streams: 15 MB become 7
        pdf.save(target, object_stream_mode=pikepdf.ObjectStreamMode.generate)
    return problems


def walk(items):
    for item in items:
        yield item
        yield from walk(item.children)
