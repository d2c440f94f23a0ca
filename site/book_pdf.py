"""Sphinx extension: the whole book as one PDF, beside the pages.

At the end of an HTML build, when a browser is there (book_print), Sphinx's
own `singlehtml` builder writes every page of the table of contents, in
order, as one page: a second build with the same configuration and the
same doctrees (nothing is read or executed again), into
_build/whole-book/ (the Chinese edition's into _build/whole-book-zh/). Its
cover and contents come first (add_cover, with whole-book.css: one sheet
per page of the site). Headless Chromium prints that page once its math is
typeset, with bookmarks and tags (book_print.print_pdf), to
rebuilding-nn-module.pdf in the site. Each edition prints its own.
"""
import datetime
import html
import os
import subprocess
import sys
from pathlib import Path

from sphinx.util import logging

from book_print import chinese_font, pdf_possible, print_pdf
from site_catalog import N_, _

logger = logging.getLogger(__name__)
PDF_NAME = "rebuilding-nn-module.pdf"
WHOLE_BOOK = "whole-book.html"  # in _build/whole-book/, what is printed

LICENCE_TEXT = N_("Text: CC BY-SA 4.0; code: MIT")
LICENCE_HTML = N_(
    "The text and figures of this book are licensed under the Creative "
    "Commons Attribution-ShareAlike 4.0 licence (CC BY-SA 4.0, "
    "<code>LICENSE-text</code>); its code (the notebooks' cells, "
    "<code>helpers.py</code>, <code>mininn</code>) under the MIT licence "
    "(<code>LICENSE</code>).")


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
           # The page is printed, not searched: the English search's data
           # (loading jieba for the Chinese one took 5-9 s).
           "overrides": {**app.book_pdf_overrides,
                         "html_search_language": "en"},
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
    ok, why = pdf_possible()
    app.env.book_pdf = ok and app.builder.name == "html"
    if app.builder.name == "html" and not ok:
        logger.info(f"book_pdf: no PDF of the book ({why})")
    elif app.env.book_pdf and (app.config.language or "").startswith("zh") \
            and not chinese_font():
        logger.info("book_pdf: no Chinese font (fc-list :lang=zh is "
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
        logger.warning("book_pdf: the singlehtml build failed")
        return
    problems = print_pdf(folder, page, Path(app.outdir) / PDF_NAME,
                         metadata=pdf_metadata(app.config))
    for problem in problems:
        logger.warning(f"book_pdf: {page.name} printed with {problem}")
    logger.info(f"book_pdf: wrote {PDF_NAME}")


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
