"""Sphinx extension: what the site offers besides its pages.

At the end of an HTML build it writes, into the output folder:

- ``rebuilding-nn-module-notebooks.zip``: the whole book as a runnable copy
  (every chapter notebook, ``helpers.py`` and ``mininn/`` that they import,
  ``benchmarks/bench.py`` for the performance chapter, ``requirements.txt``
  and a README saying how to run it). A chapter downloaded alone cannot run:
  it imports ``helpers`` and ``mininn`` from the folder beside it.
- ``book/whole-book.html``: every page of the table of contents, in order,
  as one page (the article of each, solutions open), with the site's CSS;
  and ``rebuilding-nn-module.pdf``, that page printed by headless Chromium
  (through playwright), when Debian's chromium is there (``dev.chromium()``).
- It trims the MathJax tree that sphinx-mathjax-offline copies (24 MB) to
  what renders the book's math: ``tex-chtml.js`` and its fonts.
- It draws the icons into the pages (the theme's Font Awesome script drew
  them on every visit, and is left out).

Every page of the table of contents gets a short note under its title that
links the zip, the PDF and the index. The index lists every function, method
and class that an export cell defines, at that cell: genindex becomes a map
of where each piece of mininn is built, and a search for a name such as
``register_forward_hook`` puts the chapter that builds it first (Sphinx's
search ranks index entries far above words in the text).
"""
import contextlib
import datetime
import functools
import gc
import html
import http.server
import re
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.locale import get_translation
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import dev  # tools/dev.py: which browser prints the PDF
import export  # tools/export.py: what a cell defines
from page_weight import own_files  # this edition's files, not zh/'s

logger = logging.getLogger(__name__)

# The words this extension writes itself (the whole-book page: the PDF's
# cover and contents; the PDF's metadata; the footer's licence line) are
# English, looked up in its own message catalog in the build's language:
# locale/<language>/LC_MESSAGES/book_files.po, which `tools/i18n.py update`
# extracts from this file (every `_("...")` and `N_("...")` of a plain
# string: not inside an f-string) and merges as it does the pages' catalogs.
# A message is HTML; its translation keeps its tags and {fields}
# (tests/test_i18n.py). The English build has no catalog, and writes the
# English as it is.
CATALOG = "book_files"
_translation = get_translation(CATALOG)


def _(message):
    """`message` in the language of the build."""
    return str(_translation(message))


def N_(message):
    """Marks a message for the catalog where it is defined; `_` translates
    it where it is used."""
    return message


ZIP_NAME = "rebuilding-nn-module-notebooks.zip"
ZIP_FOLDER = "rebuilding-nn-module"
PDF_NAME = "rebuilding-nn-module.pdf"
WHOLE_BOOK = "whole-book.html"  # written beside the pages (book/)
CHROMIUM = dev.chromium()
# How the PDFs are printed and the site's tests browse: headless, as root
# (no sandbox), with none of Chromium's own traffic, and no request that
# leaves the machine. Everything but the loopback goes through a proxy
# that is not there (nothing listens on port 9), so such a request fails at
# once, wherever the checks run, and the page's `requestfailed` event names
# it (tests/site_checks.Recorder).
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--proxy-server=127.0.0.1:9",
]
# What the pages load from the MathJax tree; the rest is deleted.
MATHJAX_KEEP = ("tex-chtml.js", "output/chtml/fonts/woff-v2/")
# A fixed date inside the zip, so the same sources give the same bytes.
ZIP_DATE = (2026, 1, 1, 0, 0, 0)
# The licences (LICENSE, LICENSE-text), named on the cover of the PDF; the
# footer of every page names them too (_config.yml).
LICENCE_TEXT = N_("Text: CC BY-SA 4.0; code: MIT")
LICENCE_FILES = ("LICENSE.txt", "LICENSE-text.txt")  # beside the pages
LICENCE_HTML = N_(
    "The text and figures of this book are licensed under the Creative "
    "Commons Attribution-ShareAlike 4.0 licence (CC BY-SA 4.0, "
    "<code>LICENSE-text</code>); its code (the notebooks' cells, "
    "<code>helpers.py</code>, <code>mininn</code>) under the MIT licence "
    "(<code>LICENSE</code>).")

# What a reader of the notebooks installs: the book's own imports and
# JupyterLab, at the versions of requirements.txt (the developers' file,
# with the site build and the test tools, stays out of the zip).
READER_PACKAGES = ("torch", "numpy", "matplotlib", "tqdm", "jupyterlab",
                   "jupyterlab-myst", "ipykernel", "ipywidgets")
# The Python versions the zip's chapter 1 is run on (the site's tests run it
# on the interpreter of .venv); see ZIP_README.
TESTED_PYTHONS = "3.11"

ZIP_README = """\
# Rebuilding torch.nn.Module: the runnable notebooks

This folder is the whole book as notebooks, with what they import:
`book/helpers.py` (small helpers: tables, error capture, trees) and
`book/mininn/` (the package the chapters export, one module per chapter).
A chapter notebook downloaded alone cannot run: it imports both from the
folder it sits in. `book/intro.md` is the book's introduction and
`book/glossary.md` its glossary.

## Run it

Install once, while you are online; after that everything runs offline.
The notebooks were run with Python {pythons} (the book's tests run chapter 1
from this zip); they need Python 3.11 or newer and about 1 GB of disk.

1. Make an environment, in this folder:

   ```
   python3 -m venv .venv
   ```

2. **On Linux, install the CPU-only torch first.** From PyPI, `torch` on
   Linux is the CUDA build: with its NVIDIA packages, several GB, and the
   book needs no GPU. PyTorch's CPU index has the small build
   (`2.13.0+cpu` satisfies the pin `torch==2.13.0` in step 3):

   ```
   .venv/bin/pip install torch==2.13.0+cpu --index-url https://download.pytorch.org/whl/cpu
   ```

   On macOS and Windows, skip this step: PyPI's wheel is the CPU build.

3. Install what the notebooks use ({count} packages, pinned):

   ```
   .venv/bin/pip install -r requirements-reader.txt
   ```

4. Open the book:

   ```
   .venv/bin/jupyter lab --notebook-dir=book
   ```

   On Windows the commands are `.venv\\Scripts\\pip` and
   `.venv\\Scripts\\jupyter`. As root (a container), JupyterLab needs
   `--allow-root`.

Then open `01_registration.ipynb` and run it top to bottom; every chapter
runs on a laptop CPU in well under a minute. Each notebook keeps its
outputs, so you can also read it without running it.

`requirements.txt` is the authors' full list (the website build and the
test suite as well); you do not need it to run the notebooks.

## Licence

The text and figures are licensed under CC BY-SA 4.0 (`LICENSE-text`),
the code under the MIT licence (`LICENSE`).
"""


def toc_docnames(toc_path):
    """Docnames of a _toc.yml, in reading order, as sphinx_external_toc (the
    extension that builds the site from it) reads the file. The site's tests
    use this function too."""
    from sphinx_external_toc.parsing import parse_toc_yaml

    site_map = parse_toc_yaml(toc_path)
    order = []

    def walk(docname):
        order.append(docname)
        for tree in site_map[docname].subtrees:
            for item in tree.items:
                if isinstance(item, str):  # not a glob or a URL
                    walk(item)

    walk(site_map.root.docname)
    return order


def toc_pages(app):
    """Docnames of the table of contents, in reading order."""
    return toc_docnames(Path(app.srcdir) / app.config.external_toc_path)


@contextlib.contextmanager
def serve(directory, cache_assets=False, errors=None):
    """Serve `directory` on 127.0.0.1 (a free port) while the block runs;
    yield its base URL ("http://127.0.0.1:PORT/"). The PDF is printed from
    it (MathJax loads its fonts by URL) and the site's tests browse it.
    `cache_assets`: let a browser keep everything but the pages, as it would
    on any real host. `errors`: a list to add each answer of 400 or more
    to, as "URL (HTTP code)": told by the server, they cost the browser
    nothing (a page's `response` events cost a message per request)."""
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


def pdf_possible():
    if not Path(CHROMIUM).exists():
        return False, f"{CHROMIUM} is missing"
    try:
        import pikepdf  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as missing:
        return False, f"{missing.name} is not installed"
    return True, ""


# --------------------------------------------------------------------------
# The index: what each export cell defines.

def public(name):
    """A name a reader may look up: not a private helper (`_load_one`),
    though a dunder (`__setattr__`) is public."""
    return not name.startswith("_") or (name.startswith("__")
                                       and name.endswith("__"))


def defined_names(source, chapter=None):
    """(entry text, name) for each public class, function and method that
    a cell defines, as two-level index entries: "state_dict(); Module
    method, chapter 7". The first level is the bare name, so a search for
    `state_dict` matches it (Sphinx's search skips an index entry more than
    twice as long as the query); the second says what and where it is.
    Private helpers stay out. What is defined comes from the exporter's own
    `definitions`, so the index and the package agree."""
    where = f", chapter {chapter}" if chapter else ""
    entries = []
    for kind, name, owner in export.definitions(source):
        if not public(name) or owner and not public(owner):
            continue
        text = {"class": f"{name}; class{where}",
                "function": f"{name}(); function{where}",
                "method": f"{name}(); {owner} method{where}"}[kind]
        entries.append((text, name))
    return entries


def chapter_number(docname):
    """5 for "book/05_hooks", None for a page that is not a chapter."""
    found = re.match(r"(\d+)_", _stem(docname))
    return int(found.group(1)) if found else None


class IndexExportCells(SphinxTransform):
    """Index entries, with a target, before every export cell. Runs before
    SphinxDomains (850), which collects index entries for genindex."""

    default_priority = 840

    def apply(self, **kwargs):
        taken = set(self.document.ids)
        chapter = chapter_number(self.env.docname)
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or "export" not in (
                    cell.get("cell_metadata", {}).get("tags", [])):
                continue
            blocks = list(cell.findall(nodes.literal_block))
            if not blocks:
                continue
            names = defined_names(blocks[0].astext(), chapter)
            if not names:
                continue
            # The anchor is the cell itself, not an empty target: Sphinx's
            # search shows the text at the anchor under each result (and
            # fails in the browser on an empty one).
            anchor = base = nodes.make_id(f"mininn-{names[0][1]}")
            count = 1
            while anchor in taken:
                count += 1
                anchor = f"{base}-{count}"
            taken.add(anchor)
            cell["ids"].insert(0, anchor)
            self.document.ids[anchor] = cell
            index = addnodes.index(entries=[
                ("single", text, anchor, "main", None) for text, _ in names])
            cell.parent.insert(cell.parent.index(cell), index)


# The search ranks a result by how much of an index entry the query covers;
# a glossary term ("state_dict", 100) would beat the cell that defines the
# method ("state_dict()", 83). This scorer puts the defining cells (their
# anchors start "mininn-") above everything else, in their own order.
SEARCH_SCORER = Path(__file__).with_name("search_scorer.js")


def use_search_scorer(app, config):
    if not config.html_search_scorer:
        config.html_search_scorer = str(SEARCH_SCORER)


# --------------------------------------------------------------------------
# The note under each title.

def add_download_note(app, pagename, templatename, context, doctree):
    if (app.builder.name != "html" or "body" not in context
            or pagename not in app.env.book_files_pages):
        return
    pathto = context["pathto"]
    links = [f'<a class="reference external" href="{pathto(ZIP_NAME, 1)}">'
             "all the notebooks (.zip)</a>, with the helpers and the "
             "package they import"]
    if app.env.book_files_pdf:
        links.append(f'<a class="reference external" '
                     f'href="{pathto(PDF_NAME, 1)}">'
                     "the whole book as a PDF</a>")
    links.append(f'<a class="reference internal" '
                 f'href="{pathto("genindex")}">the index</a>')
    note = ('<p class="book-downloads">Run it yourself: '
            + "; ".join(links) + ".</p>")
    body = context["body"]
    end = body.find("</h1>")
    if end >= 0:
        end += len("</h1>")
        context["body"] = body[:end] + "\n" + note + body[end:]


# _config.yml's extra_footer, word for word (tests/test_site.py), marked for
# the catalog: a Chinese page's footer says it in Chinese.
FOOTER = N_("Every chapter is re-executed and checked against "
            "<code>torch.nn</code> by the test suite.")


def add_licence_to_footer(app, pagename, templatename, context, doctree):
    """Every page's footer names the licences and links their files (copied
    beside the pages as .txt, so a browser shows them)."""
    if app.builder.name != "html":
        return
    pathto = context["pathto"]
    licence = " " + _(
        'The text and figures are licensed under <a rel="license" '
        'href="https://creativecommons.org/licenses/by-sa/4.0/">CC BY-SA '
        '4.0</a> (<a class="book-licence" href="{text}">LICENSE-text</a>), '
        'the code under the MIT licence (<a class="book-licence" '
        'href="{code}">LICENSE</a>).').format(
            text=pathto(LICENCE_FILES[1], 1), code=pathto(LICENCE_FILES[0], 1))
    footer = context.get("theme_extra_footer") or ""
    if " ".join(footer.split()) == FOOTER:
        footer = _(FOOTER)
    if "book-licence" not in footer:
        context["theme_extra_footer"] = footer + licence


def add_download_entries(app, pagename, templatename, context, doctree):
    """The header's download menu (sphinx-book-theme) offers the page's own
    .ipynb, which cannot run alone; the runnable zip and the book's PDF go
    first in it."""
    if app.builder.name != "html" or pagename not in app.env.book_files_pages:
        return
    pathto = context["pathto"]
    for group in context.get("header_buttons") or []:
        if group.get("label") != "download-buttons":
            continue
        entries = [{"type": "link", "url": pathto(ZIP_NAME, 1),
                    "text": ".zip", "icon": "fas fa-file-zipper",
                    "tooltip": _("All the notebooks, with what they import"),
                    "label": "download-zip-button"}]
        if app.env.book_files_pdf:
            entries.append({"type": "link", "url": pathto(PDF_NAME, 1),
                            "text": _("book .pdf"), "icon": "fas fa-book",
                            "tooltip": _("The whole book as a PDF"),
                            "label": "download-book-pdf-button"})
        group["buttons"][:0] = entries


# The first cell of a chapter downloaded alone (_sources/, the header's
# .ipynb): what it needs to run. The zip keeps the notebooks as they are.
ALONE_NOTE = (
    "**Downloaded alone, this notebook cannot run**: its first cell imports "
    "`helpers` and `mininn` from the folder it sits in. Take the whole book "
    f"instead: `{ZIP_NAME}` (linked under the title of every page of the "
    "book's website) holds every chapter with `helpers.py`, the `mininn` "
    "package and a README that says how to install and run them.")


def mark_lone_notebooks(app, outdir):
    import nbformat

    for docname in app.env.book_files_pages:
        path = outdir / "_sources" / (docname + ".ipynb")
        if not path.exists():
            continue
        nb = nbformat.read(path, as_version=4)
        # A page that this build did not write again keeps its copy, and
        # the note an earlier build put in it.
        nb.cells = [cell for cell in nb.cells if "downloaded-alone" not in
                    cell.metadata.get("tags", [])]
        note = nbformat.v4.new_markdown_cell(ALONE_NOTE)
        note.id = "downloaded-alone"
        note.metadata["tags"] = ["downloaded-alone"]
        nb.cells.insert(0, note)
        nbformat.write(nb, path)


# --------------------------------------------------------------------------
# The runnable zip.

def reader_requirements(root):
    """requirements-reader.txt: READER_PACKAGES at their pins in
    requirements.txt."""
    pins = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        name, _, version = line.partition("==")
        if version:
            pins[name.strip().lower().replace("_", "-")] = line.strip()
    missing = [p for p in READER_PACKAGES if p not in pins]
    if missing:
        raise ValueError(f"requirements.txt pins none of {missing}")
    return ("# What the notebooks need, at the versions the book was run with"
            "\n# (on Linux, install the CPU-only torch first: README.md).\n"
            + "".join(pins[p] + "\n" for p in READER_PACKAGES))


def write_zip(app, outdir):
    root = Path(app.srcdir)
    files = []
    for docname in app.env.book_files_pages:
        source = root / (docname + ".ipynb")
        if not source.exists():
            source = root / (docname + ".md")
        files.append(source)
    files += sorted((root / "book" / "mininn").glob("*.py"))
    files += [root / "book" / "helpers.py", root / "requirements.txt",
              root / "LICENSE", root / "LICENSE-text"]
    files += sorted((root / "benchmarks").glob("*.py"))
    target = outdir / ZIP_NAME
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        def add(name, data):
            info = zipfile.ZipInfo(f"{ZIP_FOLDER}/{name}", ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)

        add("README.md", ZIP_README.format(
            pythons=TESTED_PYTHONS, count=len(READER_PACKAGES)))
        add("requirements-reader.txt", reader_requirements(root))
        for path in files:
            if path.exists():
                add(path.relative_to(root).as_posix(), path.read_bytes())
    logger.info(f"book_files: wrote {ZIP_NAME} ({len(files) + 1} files)")


# --------------------------------------------------------------------------
# The whole book as one page, and its PDF.

ARTICLE = re.compile(r'<article class="bd-article">(.*?)</article>', re.S)
HEAD_KEEP = re.compile(
    r'<link[^>]* rel="stylesheet"[^>]*>|<script>window\.MathJax = .*?</script>'
    r'|<script[^>]*mathjax/tex-chtml\.js[^>]*></script>', re.S)


def _stem(docname):
    return docname.rpartition("/")[2]


def whole_book_html(app, outdir):
    """One page with the article of every page, ids made unique per page
    and links between pages turned into links inside the page."""
    pages = app.env.book_files_pages
    folders = {str(Path(d).parent) for d in pages}
    if len(folders) != 1:
        logger.info("book_files: pages in several folders; no whole book")
        return None
    stems = {_stem(d) for d in pages}
    head, parts, contents = "", [], []
    for docname in pages:
        text = (outdir / f"{docname}.html").read_text(encoding="utf-8")
        if not head:
            head = "\n".join(HEAD_KEEP.findall(text.split("</head>")[0]))
        found = ARTICLE.search(text)
        if not found:
            logger.info(f"book_files: no article in {docname}.html")
            return None
        stem = _stem(docname)
        heading = re.search(r"<h1>(.*?)<a class=\"headerlink", found.group(1),
                            re.S)
        contents.append(f'<li><a href="#{stem}--top"><span class="title">'
                        f'{heading.group(1) if heading else stem}</span>'
                        '<span class="page"></span></a></li>')
        body = re.sub(r'<p class="book-downloads">.*?</p>', "",
                      found.group(1), flags=re.S)
        # On paper a figure is at full size already: no link to the file.
        body = re.sub(r'<a class="(?:book-figure|reference internal '
                      r'image-reference)" [^>]*>(<img [^>]*>)</a>',
                      r"\1", body)
        body = re.sub(r' id="([^"]+)"',
                      lambda m, stem=stem: f' id="{stem}--{m.group(1)}"', body)

        def link(m, stem=stem):
            href = html.unescape(m.group(1))
            target, _, anchor = href.partition("#")
            if not target:
                return f'href="#{stem}--{anchor}"'
            page = target.removesuffix(".html")
            if target.endswith(".html") and page in stems:
                return (f'href="#{page}--{anchor}"' if anchor
                        else f'href="#{page}--top"')
            return m.group(0)

        body = re.sub(r'href="([^"]*)"', link, body)
        body = body.replace("<details", "<details open")
        parts.append(f'<section class="book-page" id="{stem}--top">'
                     f"{body}</section>")
    title = html.escape(app.config.html_title or app.config.project)
    version = book_version(Path(app.srcdir))
    language = (app.config.language or "en").replace("_", "-")
    back = _('This page is what the PDF of the book is printed\nfrom. '
             '<a href="{home}">Read the book as a website</a>.').format(
                 home=f"{_stem(pages[0])}.html")
    about = _('The whole book, from the sources of the website. Every '
              'solution is\nprinted after its exercise, under "Solution to '
              'Exercise N.M".')
    notebooks = _(
        "To run the chapters, take\n<code>{zip}</code>: it sits beside this "
        "PDF on the book's website,\nlinked under the title of every page, "
        "and holds every chapter as a notebook\nwith <code>helpers.py</code> "
        "and the <code>mininn</code> package that they\nimport, and a README "
        "that says how to install and run them.").format(zip=ZIP_NAME)
    heading = _("Contents")
    licence = _(LICENCE_HTML)
    page = f"""<!DOCTYPE html>
<html lang="{language}" data-theme="light" data-mode="light">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="author" content="{html.escape(app.config.author)}">
<meta name="robots" content="noindex">
<title>{title}</title>
{head}
</head>
<body class="whole-book">
<p class="book-back">{back}</p>
<div class="bd-content"><div class="bd-article-container">
<article class="bd-article" role="main">
<section class="book-cover"><h1 class="book-title">{title}</h1>
<p class="book-author">{html.escape(app.config.author)}</p>
<p class="book-version">{html.escape(version)}</p>
<p>{about}</p>
<p class="book-notebooks">{notebooks}</p>
<p class="book-licence">{licence}</p>
</section>
<nav class="book-contents"><h2>{heading}</h2><ul>{"".join(contents)}</ul></nav>
{"".join(parts)}
</article></div></div>
</body>
</html>
"""
    target = outdir / str(Path(pages[0]).parent) / WHOLE_BOOK
    target.write_text(page, encoding="utf-8")
    return target


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


@functools.cache
def _pdf_options():
    footer = ('<div style="font-size:9px;width:100%;text-align:center;'
              'color:#555"><span class="pageNumber"></span> / '
              '<span class="totalPages"></span></div>')
    return dict(format="A4", print_background=True,
                display_header_footer=True,
                header_template="<span></span>", footer_template=footer,
                margin={"top": "14mm", "bottom": "16mm", "left": "14mm",
                        "right": "14mm"},
                # Bookmarks from the headings, and a tagged PDF (its
                # structure for screen readers and reflowing viewers).
                outline=True, tagged=True)


def destination_pages(pdf):
    """{element id: page number} of a PDF's named destinations (Chromium
    names one after every id that a link in the page points at), for a
    PDF open in pikepdf."""
    numbers = {page.objgen: number for number, page in enumerate(pdf.pages, 1)}
    return {str(name)[1:]: numbers[dest[0].objgen]
            for name, dest in pdf.Root.get("/Dests", {}).items()}


def linking_page(pdf, name):
    """The number of the first page with a link to the destination `name`
    (the contents page, for a chapter's "<stem>--top")."""
    for number, page in enumerate(pdf.pages, 1):
        for annotation in page.obj.get("/Annots", []):
            if str(annotation.get("/Dest", "")) == "/" + name:
                return number
    raise ValueError(f"no link to {name} in the PDF")


# What the page the PDF is printed from must show before it is printed:
# its math typeset, its images loaded; and, as printed, no shadow and no
# rounded corner (book.css), which Chromium prints as images and clipping
# paths (0.2 s to look at the whole book's 43,000 elements).
READY = """async () => {
  if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
  await document.fonts.ready;
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

# The contents' page numbers, printed alone on a transparent sheet that is
# laid over the contents page: writing text into a span and hiding the rest
# moves nothing, so the page keeps its layout, links and tags. The pages of
# the book, after the contents and each on new sheets, go first: the cover
# and the contents are then all there is to lay out and print again.
PAGE_NUMBERS_ONLY = """(pages) => {
  document.querySelectorAll("section.book-page").forEach(s => s.remove());
  for (const a of document.querySelectorAll("nav.book-contents a")) {
    a.querySelector(".page").textContent =
      pages[a.getAttribute("href").slice(1)] || "";
  }
  const style = document.createElement("style");
  style.textContent = "body * { visibility: hidden !important; } "
    + "nav.book-contents .page { visibility: visible !important; }";
  document.head.appendChild(style);
  return [...document.querySelectorAll("nav.book-contents a")]
    .map(a => a.getAttribute("href").slice(1));
}"""


def print_pdf(outdir, page, target, browser=None, metadata=None):
    """Print `page` (a file under `outdir`) to `target` with Chromium, once
    its math is typeset and its fonts are loaded, with bookmarks and tags.
    Each chapter's first page (from the PDF's named destinations) is then
    written into the contents: one more print, of the contents page alone
    with only the numbers showing, laid over that page (pikepdf, which also
    sets the Author, Subject and Keywords of `metadata` and packs the tags'
    many small objects into compressed streams: 15 MB become 7). Return
    the problems seen: console errors, failed requests (any that leaves the
    machine fails: CHROMIUM_ARGS), answers of 400 or more, math not
    typeset, images not loaded, shadows or rounded corners printed."""
    import pikepdf

    problems, answered = [], []
    playwright = None
    overlay = target.with_suffix(".numbers.pdf")
    with serve(outdir, errors=answered) as base:
        try:
            if browser is None:
                from playwright.sync_api import sync_playwright

                playwright = sync_playwright().start()
                launched = playwright.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            tab = (browser or launched).new_page()
            tab.on("console", lambda m: m.type == "error" and problems.append(
                f"console: {m.text}"))
            tab.on("pageerror", lambda e: problems.append(f"page: {e}"))
            tab.on("requestfailed", lambda r: problems.append(
                f"failed: {r.url}"))
            tab.emulate_media(media="print")
            tab.goto(base + page.relative_to(outdir).as_posix(),
                     wait_until="load")
            ready = tab.evaluate(READY)
            if ready["typeset"] != ready["math"]:
                problems.append(f"{ready['math'] - ready['typeset']} of "
                                f"{ready['math']} formulas not typeset")
            problems += [f"image not loaded: {src}" for src in ready["broken"]]
            problems += [f"{what} on {count} elements"
                         for what, count in sorted(ready["drawn"].items())]
            printed = target.with_suffix(".printed.pdf")
            tab.pdf(path=str(printed), **_pdf_options())
            with pikepdf.open(printed) as pdf:
                pages = destination_pages(pdf)
                entries = tab.evaluate(PAGE_NUMBERS_ONLY, pages)
                contents = linking_page(pdf, entries[0])
            tab.pdf(path=str(overlay), page_ranges=str(contents),
                    **{**_pdf_options(), "outline": False, "tagged": False,
                       "print_background": False,
                       "display_header_footer": False})
            tab.close()
        finally:
            if playwright is not None:
                launched.close()
                playwright.stop()
    problems += answered
    with pikepdf.open(printed) as pdf, pikepdf.open(overlay) as numbers:
        pdf.pages[contents - 1].add_overlay(numbers.pages[0])
        for key, value in (metadata or {}).items():
            pdf.docinfo[f"/{key}"] = value
        pdf.save(target, object_stream_mode=pikepdf.ObjectStreamMode.generate,
                 compress_streams=True)
    printed.unlink()
    overlay.unlink()
    return problems


# --------------------------------------------------------------------------
# MathJax: only what renders the book.

def trim_mathjax(outdir):
    tree = outdir / "_static" / "mathjax"
    if not (tree / MATHJAX_KEEP[0]).exists():
        return
    for path in sorted(tree.rglob("*"), reverse=True):
        name = path.relative_to(tree).as_posix()
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
        elif not name.startswith(MATHJAX_KEEP):
            path.unlink()


# --------------------------------------------------------------------------
# The icons. pydata-sphinx-theme loads Font Awesome's icon script on every
# page (1.5 MB, all of Font Awesome's icons), and the script then replaces
# each icon of the page (<i class="fa-solid fa-bars"></i>) with an <svg>
# and adds its style sheet to the page, which restyles the whole page once
# more: some 60 ms of the browser's main thread on every page shown. The
# build does once what the script does on every visit: each icon of each
# page becomes the <svg> the script would have made of it, the script's
# style sheet a file of its own, and the script goes.

ICON = re.compile(r'("?)([a-z0-9-]+)\1:\[(\d+),(\d+),\[([^\]]*)\],'
                  r'"([0-9a-f]+)",("[^"]*"|\[[^\]]*\])\]')
# After each pack of icons, the names it is registered under:
# d("fas",p),d("fa-solid",p)
PACK_NAMES = re.compile(r'd\("([a-z]+)",p\),d\("(fa-[a-z]+)",p\)')
# The script's style sheet, a string in it
ICON_CSS = re.compile(r"'(:host,:root\{--fa-font-solid[^']*)'")
# An icon as the theme and the extensions write one: an empty <i> or <span>
ICON_ELEMENT = re.compile(r'<(i|span)((?:\s+[\w:-]+(?:="[^"]*")?)*)\s*>'
                          r'\s*</\1>')
ATTRIBUTE = re.compile(r'([\w:-]+)(?:="([^"]*)")?')
ICON_SCRIPT = re.compile(r'\s*<script defer src="((?:\.\./)*)_static/scripts/'
                         r'fontawesome\.js(\?[^"]*)?"></script>')
FIRST_STYLE_SHEET = re.compile(r'<link href="((?:\.\./)*)_static/styles/'
                               r'theme\.css')


def icon_packs(script):
    """{"fas": {"bars": (name, width, height, path)}, ...} from Font
    Awesome's script (an icon also under each of its other names, with its
    own name first), and {"fa-solid": "fas", "fas": "fas", ...}."""
    packs, prefixes, runs, text = {}, {}, [], script
    for entry in ICON.finditer(text):
        if runs and text[runs[-1][-1].end():entry.start()] == ",":
            runs[-1].append(entry)
        else:
            runs.append([entry])
    for run in runs:
        names = PACK_NAMES.search(text, run[-1].end())
        if names is None:
            raise ValueError("fontawesome.js: a pack of icons with no name")
        short, long = names.groups()
        prefixes[short] = prefixes[long] = short
        pack = packs.setdefault(short, {})
        for entry in run:
            path = entry.group(7)
            if not path.startswith('"'):
                continue  # a duotone icon (two paths): none on a page here
            icon = (entry.group(3), entry.group(4), path[1:-1])
            for name in [entry.group(2), *re.findall(r'"([a-z0-9-]+)"',
                                                     entry.group(5))]:
                pack.setdefault(name, (entry.group(2), *icon))
    return packs, prefixes


def icon_svg(element, packs, prefixes, ids):
    """The <svg> Font Awesome's script makes of `element` (an ICON_ELEMENT
    match), or the element itself if it is no icon of `packs`. `ids`
    numbers the titles of a page."""
    attributes = ATTRIBUTE.findall(element.group(2))
    classes = dict(attributes).get("class", "").split()
    prefix = next((prefixes[c] for c in classes if c in prefixes), None)
    icon = next((packs[prefix][c[3:]] for c in classes if prefix and
                 c.startswith("fa-") and c[3:] in packs[prefix]), None)
    if icon is None:
        return element.group(0)
    name, width, height, path = icon
    kept = [c for c in classes if c not in prefixes
            and not (c.startswith("fa-") and c[3:] in packs[prefix])]
    out = [f'class="{" ".join(["svg-inline--fa", "fa-" + name, *kept])}"']
    title = None
    for key, value in attributes:
        if key == "title":
            title = value
        elif key != "class":
            out.append(f'{key}="{value}"')
    inside = ""
    if title is None:
        out.append('aria-hidden="true" focusable="false"')
    else:
        ids.append(name)
        label = f"svg-inline--fa-title-{len(ids)}"
        out.append(f'aria-labelledby="{label}"')
        inside = f'<title id="{label}">{title}</title>'
    out.append(f'data-prefix="{prefix}" data-icon="{name}" role="img" '
               f'xmlns="http://www.w3.org/2000/svg" '
               f'viewBox="0 0 {width} {height}" data-fa-i2svg=""')
    return (f'<svg {" ".join(out)}>{inside}'
            f'<path fill="currentColor" d="{path}"></path></svg>')


def icons_drawn(page_html, packs, prefixes):
    """`page_html` with each of its icons drawn (icon_svg), their titles
    numbered in the page's order."""
    ids = []
    return ICON_ELEMENT.sub(lambda m: icon_svg(m, packs, prefixes, ids),
                            page_html)


def draw_icons(outdir):
    """Every icon of every page as the <svg> Font Awesome's script would
    make of it; the script's style sheet in _static/styles/fontawesome.css,
    linked first (where the script put it: before every other sheet); the
    script gone, its licence kept."""
    scripts = outdir / "_static" / "scripts"
    script = scripts / "fontawesome.js"
    if not script.exists():
        return
    text = script.read_text(encoding="utf-8")
    packs, prefixes = icon_packs(text)
    css = ICON_CSS.search(text)
    if not packs or css is None:
        raise ValueError(f"{script}: no icons, or no style sheet, where "
                         "book_files looks for them (a new Font Awesome?)")
    licence = scripts / "fontawesome.js.LICENSE.txt"
    notice = licence.read_text(encoding="utf-8").strip() if (
        licence.exists()) else ""
    sheet = outdir / "_static" / "styles" / "fontawesome.css"
    sheet.write_text(f"{notice}\n{css.group(1)}\n", encoding="utf-8")
    drawn = 0
    for page in own_files(outdir, "*.html"):
        html_text = page.read_text(encoding="utf-8")
        found = ICON_SCRIPT.search(html_text)
        if found is None:
            continue
        light = icons_drawn(ICON_SCRIPT.sub("", html_text), packs, prefixes)
        link = (f'<link href="{found.group(1)}_static/styles/fontawesome.css'
                f'{found.group(2) or ""}" rel="stylesheet" />\n')
        first = FIRST_STYLE_SHEET.search(light)
        if first is None:
            raise ValueError(f"{page}: no theme.css to link the icons' "
                             "style sheet before")
        light = light[:first.start()] + link + light[first.start():]
        drawn += light.count("data-fa-i2svg")
        page.write_text(light, encoding="utf-8")
    for name in ("fontawesome.js", "fontawesome.js.map"):
        (scripts / name).unlink(missing_ok=True)
    # The theme's CSS carries a rule per icon of the font too
    # (".fa-bars:before{content:...}"), which would draw an icon with the
    # icon font (a 156 kB download) where the script had not put its SVG:
    # the rules go.
    theme = outdir / "_static" / "styles" / "pydata-sphinx-theme.css"
    if theme.exists():
        rules = theme.read_text(encoding="utf-8")
        theme.write_text(ICON_RULE.sub("", rules), encoding="utf-8")
        theme.with_name(theme.name + ".map").unlink(missing_ok=True)
    logger.info(f"book_files: {drawn} icons drawn into the pages, "
                "fontawesome.js left out")


ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+(?::before)?,?)+)'
                       r'\{(?:--fa|content):"[^"]*"\}')


def subset_icon_font(outdir):
    """The theme draws some icons with Font Awesome's solid font (the
    pencil of an exercise, the marks of notes and warnings: CSS `content`
    of a private-use character): 156 kB as WOFF2, for the few glyphs the
    CSS names. A WOFF of those glyphs (fontTools) takes its place."""
    from fontTools import subset

    fonts = outdir / "_static" / "vendor" / "fontawesome" / "webfonts"
    css = outdir / "_static" / "styles" / "pydata-sphinx-theme.css"
    full = fonts / "fa-solid-900.ttf"
    if not (full.exists() and css.exists()):
        return
    codes = set()
    for sheet in (outdir / "_static").rglob("*.css"):
        text = sheet.read_text(encoding="utf-8", errors="ignore")
        codes |= {ord(c) for c in text if 0xE000 <= ord(c) <= 0xF8FF}
        codes |= {int(h, 16) for h in re.findall(r"\\([ef][0-9a-f]{3})\b",
                                                  text)}
    options = subset.Options()
    options.flavor = "woff"
    font = subset.load_font(str(full), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codes))
    subsetter.subset(font)
    small = fonts / "fa-solid-900.subset.woff"
    subset.save_font(font, str(small), options)
    text = css.read_text(encoding="utf-8")
    wanted = ("url(../vendor/fontawesome/webfonts/fa-solid-900.woff2) "
              'format("woff2"),url(../vendor/fontawesome/webfonts/'
              'fa-solid-900.ttf) format("truetype")')
    if wanted in text:
        css.write_text(text.replace(
            wanted, f'url(../vendor/fontawesome/webfonts/{small.name}) '
                    'format("woff")'), encoding="utf-8")
        logger.info(f"book_files: the icon font keeps {len(codes)} glyphs "
                    f"({small.stat().st_size:,} bytes)")


# Pygments wraps every name, punctuation mark and space of the code in a
# span ("<span class="n">x</span>"): a third of a chapter's bytes. The
# theme's Pygments styles give those three the colour of the code itself,
# in light and in dark mode, so the spans go and nothing changes on screen.
PLAIN_TOKENS = re.compile(r'<span class="(?:n|p|w)">([^<]*)</span>')
CODE_BLOCK = re.compile(r'(<div class="highlight"><pre>)(.*?)(</pre>)', re.S)


def plain_tokens_unwrapped(page_html):
    return CODE_BLOCK.sub(lambda m: m.group(1) + PLAIN_TOKENS.sub(
        r"\1", m.group(2)) + m.group(3), page_html)


# A figure (an image a cell drew, under _images/) opens at full size when
# tapped: on a phone the column shows it at half its width or less.
FIGURE = re.compile(r'<img [^>]*?src="([^"]*_images/[^"]+)"[^>]*/>')


# Sphinx links an image that has a size (a retina PNG: style="width: ...")
# to its file already ("image-reference"); those are left as they are.
LINKED_FIGURE = re.compile(r'<a class="reference internal image-reference" '
                           r'href="[^"]*">(<img [^>]*/>)</a>')
# The link made here. lighten_pages reads every page of the output folder,
# also those this build did not write again: the links an earlier build
# made come off first (an incremental build wrapped each figure in one more
# link every time).
OUR_FIGURE_LINK = re.compile(r'<a class="book-figure" href="[^"]*"'
                             r'(?: title="[^"]*")?>(<img [^>]*/>)</a>')


def figures_linked(page_html):
    count = 1
    while count:
        page_html, count = OUR_FIGURE_LINK.subn(r"\1", page_html)
    linked = set(LINKED_FIGURE.findall(page_html))
    title = html.escape(_("Open the figure at full size"))
    return FIGURE.sub(
        lambda m: m.group(0) if m.group(0) in linked else (
            f'<a class="book-figure" href="{m.group(1)}" '
            f'title="{title}">{m.group(0)}</a>'),
        page_html)


# pydata-sphinx-theme loads Sphinx's search (its script and the whole index,
# 125 kB) on every page, for its search-as-you-type box; with that option
# off (the default, and this book's) nothing but the search page uses it.
SEARCH_SCRIPTS = re.compile(
    r'\s*<script src="(?:\.\./)*(?:_static/searchtools\.js|'
    r'_static/language_data\.js|searchindex\.js)"></script>')


def lighten_pages(outdir, search_as_you_type=False):
    """Unwrap the plain tokens of every page of this edition (see
    PLAIN_TOKENS), link each figure to its image, and leave the search's
    scripts to the search page (see SEARCH_SCRIPTS). Not the Chinese
    edition's pages under zh/: their own build lightens them, maybe at this
    moment (the test command builds both at once)."""
    for path in own_files(outdir, "*.html"):
        text = path.read_text(encoding="utf-8")
        light = figures_linked(plain_tokens_unwrapped(text))
        if not search_as_you_type and path.name != "search.html":
            light = SEARCH_SCRIPTS.sub("", light)
        if light != text:
            path.write_text(light, encoding="utf-8")


# --------------------------------------------------------------------------

def freeze_what_lives_on(app, *_):
    """Sphinx with its extensions and configuration (at builder-inited),
    then the environment of the pages read (at env-updated), live to the
    end of the build: some 270,000 objects. Frozen, they are left out of
    the collector's full passes, which would walk all of them again and
    again (the English build's collections: 1.2 CPU-s, then 0.5)."""
    gc.collect()
    gc.freeze()


def builder_inited(app):
    app.env.book_files_pages = toc_pages(app)
    ok, why = pdf_possible()
    app.env.book_files_pdf = ok and app.builder.name == "html"
    if not ok:
        logger.info(f"book_files: no PDF of the book ({why})")


def pdf_metadata(config):
    # Jupyter Book makes _config.yml's `title` the html_title and leaves
    # Sphinx's `project` at "Project name not set"
    return {"Title": config.html_title,
            "Author": config.author,
            "Subject": _("torch.nn.Module rebuilt from scratch, every step "
                         "checked against torch"),
            "Keywords": f"PyTorch; torch.nn.Module; {_(LICENCE_TEXT)}"}


def build_finished(app, exception):
    # The plain HTML builder only: the pages are <docname>.html.
    if exception is not None or app.builder.name != "html":
        return
    outdir = Path(app.outdir)
    trim_mathjax(outdir)
    draw_icons(outdir)
    subset_icon_font(outdir)
    lighten_pages(outdir, search_as_you_type=str(
        app.config.html_theme_options.get("search_as_you_type", False))
        .lower() == "true")
    write_zip(app, outdir)
    mark_lone_notebooks(app, outdir)
    root = Path(app.srcdir)
    for source, published in zip(("LICENSE", "LICENSE-text"), LICENCE_FILES):
        if (root / source).exists():
            (outdir / published).write_bytes((root / source).read_bytes())
    page = whole_book_html(app, outdir)
    if page is not None and app.env.book_files_pdf:
        problems = print_pdf(outdir, page, outdir / PDF_NAME,
                             metadata=pdf_metadata(app.config))
        for problem in problems:
            logger.warning(f"book_files: {WHOLE_BOOK} printed with "
                           f"{problem}")
        logger.info(f"book_files: wrote {PDF_NAME}")


def add_own_catalog(app, config):
    """The catalog of this extension's own words (see CATALOG), compiled
    from its .po when that is newer than the .mo (Sphinx compiles only the
    pages' catalogs of the pages it reads again), and registered for the
    build's language (none is found for English: the words stay as they
    are)."""
    from sphinx.util.i18n import CatalogInfo

    for folder in config.locale_dirs:
        base = Path(app.srcdir, folder)
        catalog = CatalogInfo(str(base / (config.language or "en")
                                  / "LC_MESSAGES"), CATALOG, "utf-8")
        if Path(catalog.po_path).exists() and catalog.is_outdated():
            catalog.write_mo(config.language)
        app.add_message_catalog(CATALOG, str(base))


def setup(app):
    app.add_transform(IndexExportCells)
    app.connect("config-inited", add_own_catalog)
    # book/_static (html_static_path) holds it; every page loads it.
    app.add_js_file("book.js", loading_method="defer")
    app.connect("config-inited", use_search_scorer)
    app.connect("builder-inited", builder_inited)
    app.connect("builder-inited", freeze_what_lives_on)
    app.connect("env-updated", freeze_what_lives_on)
    app.connect("html-page-context", add_download_note)
    app.connect("html-page-context", add_licence_to_footer)
    # After sphinx-book-theme has made its header buttons (priority 501).
    app.connect("html-page-context", add_download_entries, priority=600)
    # After sphinx-mathjax-offline has copied its tree (priority 500).
    app.connect("build-finished", build_finished, priority=900)
    # env_version: bump it when what the reading adds (the index) changes.
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 3}
