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
  (through playwright), when ``/usr/bin/chromium`` is there.
- It trims the MathJax tree that sphinx-mathjax-offline copies (24 MB) to
  what renders the book's math: ``tex-chtml.js`` and its fonts.

Every page of the table of contents gets a short note under its title that
links the zip, the PDF and the index. The index lists every function, method
and class that an export cell defines, at that cell: genindex becomes a map
of where each piece of mininn is built, and a search for a name such as
``register_forward_hook`` puts the chapter that builds it first (Sphinx's
search ranks index entries far above words in the text).
"""
import functools
import html
import http.server
import os
import re
import sys
import threading
import zipfile
from pathlib import Path

import yaml
from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import export  # tools/export.py: what a cell defines

logger = logging.getLogger(__name__)

ZIP_NAME = "rebuilding-nn-module-notebooks.zip"
ZIP_FOLDER = "rebuilding-nn-module"
PDF_NAME = "rebuilding-nn-module.pdf"
WHOLE_BOOK = "whole-book.html"  # written beside the pages (book/)
CHROMIUM = os.environ.get("BOOK_CHROMIUM", "/usr/bin/chromium")
# What the pages load from the MathJax tree; the rest is deleted.
MATHJAX_KEEP = ("tex-chtml.js", "output/chtml/fonts/woff-v2/")
# A fixed date inside the zip, so the same sources give the same bytes.
ZIP_DATE = (2026, 1, 1, 0, 0, 0)

ZIP_README = """\
# Rebuilding torch.nn.Module: the runnable notebooks

This folder is the whole book as notebooks, with what they import:
`book/helpers.py` (small helpers: tables, error capture, trees) and
`book/mininn/` (the package the chapters export, one module per chapter).
A chapter notebook downloaded alone cannot run: it imports both from the
folder it sits in.

## Run it

You need Python 3.11. In this folder:

```
python3 -m venv .venv
.venv/bin/pip install -r requirements.txt     # Windows: .venv\\Scripts\\pip
.venv/bin/jupyter lab --notebook-dir=book
```

Then open `01_registration.ipynb` and run it top to bottom; every chapter
runs on a laptop CPU in well under a minute.

On Linux, `torch==2.13.0` from PyPI is the CUDA build: with its NVIDIA
packages it is several GB. For the much smaller CPU-only build, install
torch first from PyTorch's CPU index, then the rest (`2.13.0+cpu` satisfies
the pin `torch==2.13.0`):

```
.venv/bin/pip install torch==2.13.0+cpu --index-url https://download.pytorch.org/whl/cpu
.venv/bin/pip install -r requirements.txt
```

On macOS and Windows the PyPI wheel is already the CPU build.

As root (a container), JupyterLab needs `--allow-root`.
"""


def toc_pages(app):
    """Docnames of the table of contents, in reading order."""
    toc = yaml.safe_load(
        (Path(app.srcdir) / app.config.external_toc_path).read_text())
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(entry["file"])
            walk(entry.get("sections"))

    walk(toc.get("chapters"))
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    return [str(Path(p).with_suffix("")) for p in pages]


def pdf_possible():
    if not Path(CHROMIUM).exists():
        return False, f"{CHROMIUM} is missing"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False, "playwright is not installed"
    return True, ""


# --------------------------------------------------------------------------
# The index: what each export cell defines.

def defined_names(source):
    """(entry text, anchor name) for each top-level def and class of a cell:
    `add_to_class(Module)` methods as "name() (Module method)". What is
    defined comes from the exporter's own `definitions`, so the index and
    the package agree."""
    entries = []
    for kind, name, owner in export.definitions(source, nested=False):
        text = {"class": f"{name} (class)", "function": f"{name}()",
                "method": f"{name}() ({owner} method)"}[kind]
        entries.append((text, name))
    return entries


class IndexExportCells(SphinxTransform):
    """Index entries, with a target, before every export cell. Runs before
    SphinxDomains (850), which collects index entries for genindex."""

    default_priority = 840

    def apply(self, **kwargs):
        taken = set(self.document.ids)
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or "export" not in (
                    cell.get("cell_metadata", {}).get("tags", [])):
                continue
            blocks = list(cell.findall(nodes.literal_block))
            if not blocks:
                continue
            names = defined_names(blocks[0].astext())
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


# --------------------------------------------------------------------------
# The runnable zip.

def write_zip(app, outdir):
    root = Path(app.srcdir)
    files = []
    for docname in app.env.book_files_pages:
        source = root / (docname + ".ipynb")
        if not source.exists():
            source = root / (docname + ".md")
        files.append(source)
    files += sorted((root / "book" / "mininn").glob("*.py"))
    files += [root / "book" / "helpers.py", root / "requirements.txt"]
    files += sorted((root / "benchmarks").glob("*.py"))
    target = outdir / ZIP_NAME
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        def add(name, data):
            info = zipfile.ZipInfo(f"{ZIP_FOLDER}/{name}", ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)

        add("README.md", ZIP_README)
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
        contents.append(f'<li><a href="#{stem}--top">'
                        f'{heading.group(1) if heading else stem}</a></li>')
        body = re.sub(r'<p class="book-downloads">.*?</p>', "",
                      found.group(1), flags=re.S)
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
    page = f"""<!DOCTYPE html>
<html lang="en" data-theme="light" data-mode="light">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
{head}
</head>
<body class="whole-book">
<div class="bd-content"><div class="bd-article-container">
<article class="bd-article" role="main">
<section class="book-cover"><h1 class="book-title">{title}</h1>
<p>{html.escape(app.config.author)}</p>
<p>The whole book, from the sources of the website. Every solution is
printed after its exercise, under "Solution to Exercise N".</p>
<nav class="book-contents"><h2>Contents</h2><ul>{"".join(contents)}</ul></nav>
</section>
{"".join(parts)}
</article></div></div>
</body>
</html>
"""
    target = outdir / str(Path(pages[0]).parent) / WHOLE_BOOK
    target.write_text(page, encoding="utf-8")
    return target


@functools.cache
def _pdf_options():
    footer = ('<div style="font-size:9px;width:100%;text-align:center;'
              'color:#555"><span class="pageNumber"></span> / '
              '<span class="totalPages"></span></div>')
    return dict(format="A4", print_background=True,
                display_header_footer=True,
                header_template="<span></span>", footer_template=footer,
                margin={"top": "14mm", "bottom": "16mm", "left": "14mm",
                        "right": "14mm"})


def print_pdf(outdir, page, target, browser=None):
    """Print `page` (a file under `outdir`) to `target` with Chromium, once
    its math is typeset and its fonts are loaded. Serves `outdir` on
    127.0.0.1 for the time it takes (MathJax loads its fonts by URL)."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(outdir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = (f"http://127.0.0.1:{server.server_address[1]}/"
           f"{page.relative_to(outdir).as_posix()}")
    playwright = None
    try:
        if browser is None:
            from playwright.sync_api import sync_playwright

            playwright = sync_playwright().start()
            launched = playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=["--no-sandbox", "--disable-gpu"])
        tab = (browser or launched).new_page()
        tab.emulate_media(media="print")
        tab.goto(url, wait_until="load")
        tab.evaluate("""async () => {
          if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
          await document.fonts.ready;
        }""")
        tab.pdf(path=str(target), **_pdf_options())
        tab.close()
    finally:
        if playwright is not None:
            launched.close()
            playwright.stop()
        server.shutdown()
        server.server_close()


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

def builder_inited(app):
    app.env.book_files_pages = toc_pages(app)
    ok, why = pdf_possible()
    app.env.book_files_pdf = ok and app.builder.name == "html"
    if not ok:
        logger.info(f"book_files: no PDF of the book ({why})")


def build_finished(app, exception):
    # The plain HTML builder only: the pages are <docname>.html.
    if exception is not None or app.builder.name != "html":
        return
    outdir = Path(app.outdir)
    trim_mathjax(outdir)
    write_zip(app, outdir)
    page = whole_book_html(app, outdir)
    if page is not None and app.env.book_files_pdf:
        print_pdf(outdir, page, outdir / PDF_NAME)
        logger.info(f"book_files: wrote {PDF_NAME}")


def setup(app):
    app.add_transform(IndexExportCells)
    app.connect("builder-inited", builder_inited)
    app.connect("html-page-context", add_download_note)
    # After sphinx-mathjax-offline has copied its tree (priority 500).
    app.connect("build-finished", build_finished, priority=900)
    # env_version: bump it when what the reading adds (the index) changes.
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 2}
