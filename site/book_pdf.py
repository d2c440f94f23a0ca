"""Sphinx extension: the whole book as one PDF, beside the pages.

At the end of an HTML build, when a browser is there (book_print), Sphinx's
own `singlehtml` builder writes every page of the table of contents, in
order, as one page: a second build with the same configuration and the
same doctrees (nothing is read or executed again), into
_build/whole-book/ (the Chinese edition's into _build/whole-book-zh/), made
a print book on the way (PrintBook, add_cover): a title page, the colophon
and the contents first; folded plotting code left out; the glossary, then
an index of definitions, last. Headless Chromium, with Paged.js and
whole-book.css (running heads, page numbers, the page of each contents and
index entry), prints that page once its math is typeset, with bookmarks and
tags (book_print.print_pdf), to rebuilding-nn-module.pdf in the site. Each
edition prints its own.
"""
import datetime
import html
import os
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from book_print import chinese_font, pdf_possible, print_pdf
from site_catalog import N_, _

logger = logging.getLogger(__name__)
PDF_NAME = "rebuilding-nn-module.pdf"
WHOLE_BOOK = "whole-book.html"  # in _build/whole-book/, what is printed
STYLESHEET = "_static/whole-book.css"  # Paged.js's, relative to it
GLOSSARY = "book/glossary"  # printed last, before the index

SUBJECT = N_("torch.nn.Module rebuilt from scratch, every step checked "
             "against torch")
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
                         "html_search_language": "en",
                         # on paper: no figure that links to its file, no
                         # "#" after each heading
                         "html_scaled_image_link": False,
                         "html_permalinks": False,
                         # book.css prints the solutions open; the
                         # togglebutton's own print handler fails on a
                         # solution that Paged.js split across sheets
                         "togglebutton_open_on_print": False},
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


class PrintBook(SphinxPostTransform):
    """The whole book's page as a print book: folded plotting code left out
    for one line that says where it is; other folded code shown under a
    neutral label; the glossary moved to the end; the contents at the front
    and an index of definitions at the back, each entry with its page
    (whole-book.css). Before myst-nb folds the cells (199)."""

    default_priority = 198
    builders = ("singlehtml",)

    def run(self, **kwargs):
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code":
                continue
            if cell.get("hide_mode") != "input" or not cell.children:
                continue
            del cell["hide_mode"]
            if any(cell.findall(nodes.image)):
                cell.replace(cell.children[0], nodes.paragraph(
                    "", _("Plotting code: in the notebook."),
                    classes=["book-folded"]))
            else:  # the label inside the code's frame, on its sheet
                cell.children[0].insert(0, nodes.paragraph(
                    "", _("Code folded on the website:"),
                    classes=["book-folded"]))
        # The site's index is the book's index of definitions; a file
        # beside the site's pages (a download) is not beside the PDF: its
        # name stays, as text.
        for reference in list(self.document.findall(nodes.reference)):
            uri = reference.get("refuri", "")
            if uri.startswith("genindex.html"):
                reference["refuri"] = "#book-index"
            elif uri and not uri.startswith("#") and ":" not in uri:
                reference.replace_self(list(reference.children))
        files = {node["docname"]: node
                 for node in self.document.findall(addnodes.start_of_file)}
        if not files:
            return
        # The pages after the introduction, out of its section: each a
        # chapter of its own (h1, a top-level bookmark), not one of its
        # sections.
        for pages in dict.fromkeys(node.parent for node in files.values()):
            pages.parent.remove(pages)
            self.document.append(pages)
        if GLOSSARY in files:
            glossary = files[GLOSSARY]
            glossary.parent.remove(glossary)
            list(files.values())[-1].parent.append(glossary)
            files[GLOSSARY] = files.pop(GLOSSARY)
        self.document.insert(0, nodes.raw("", self.contents(files),
                                          format="html"))
        self.document.append(self.index())

    def contents(self, files):
        """The contents: the introduction, then each page in print order,
        numbered as on the site, and the index; its page numbers from
        whole-book.css."""
        intro = self.document.next_node(nodes.section)
        entries = [("#" + intro["ids"][0], _("Introduction"))]
        for docname, start in files.items():
            title = next(start.findall(nodes.title)).astext()
            number = self.env.toc_secnumbers.get(docname, {}).get("")
            if number:
                title = ".".join(map(str, number)) + ". " + title
            entries.append((f"#document-{docname}", title))
        entries.append(("#book-index", _("Index of definitions")))
        items = "".join(f'<li><a href="{href}">{html.escape(title)}</a></li>'
                        for href, title in entries)
        heading = _("Contents")
        return (f'<nav class="book-contents"><p class="book-contents-title">'
                f'{heading}</p><ul>{items}</ul></nav>')

    def index(self):
        """The index of definitions: every name genindex lists (the
        functions, classes and methods the chapters define), what and
        where it is, and its page."""
        entries = sorted(
            (text.partition(";") + (target,))
            for found in self.env.get_domain("index").entries.values()
            for _kind, text, target, _main, _key in found)
        entries.sort(key=lambda e: (e[0].lstrip("_").lower(), e[2]))
        items = "".join(
            f'<li><a href="#{target}"><code>{html.escape(name)}</code></a> '
            f'<span>{html.escape(what.strip())}</span>'
            f'<a class="book-page" href="#{target}"></a></li>'
            for name, _sep, what, target in entries)
        section = nodes.section(ids=["book-index"], classes=["book-index"])
        section += nodes.title("", _("Index of definitions"))
        section += nodes.raw("", f"<ul>{items}</ul>", format="html")
        return section


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
    """The singlehtml page opens with the book's title page (its title,
    subject, authors and version) and its colophon (where the notebooks
    are, its licences); PrintBook's contents follow."""
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
    context["body"] = f"""<section class="book-title-page">
<p class="book-title">{html.escape(app.config.html_title)}</p>
<p class="book-subtitle">{html.escape(_(SUBJECT))}</p>
<p class="book-author">{html.escape(app.config.author)}</p>
<p class="book-version">{version}</p>
</section>
<section class="book-cover">
<p>{about}</p>
<p class="book-notebooks">{notebooks}</p>
<p class="book-licence">{_(LICENCE_HTML)}</p>
</section>
{context["body"]}"""


def pdf_metadata(config):
    # Jupyter Book makes _config.yml's `title` the html_title and leaves
    # Sphinx's `project` at "Project name not set"
    return {"Title": config.html_title, "Author": config.author,
            "Subject": _(SUBJECT),
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
                         STYLESHEET, metadata=pdf_metadata(app.config),
                         bookmarks={app.config.html_title: _("Introduction")})
    for problem in problems:
        logger.warning(f"book_pdf: {page.name} printed with {problem}")
    logger.info(f"book_pdf: wrote {PDF_NAME}")


def setup(app):
    app.setup_extension("site_catalog")
    # every page, the whole book's too, on paper (site/static/print.css)
    app.add_css_file("print.css", media="print")
    app.connect("config-inited", keep_configuration, priority=0)
    app.connect("builder-inited", builder_inited)
    app.connect("html-page-context", add_cover)
    app.connect("doctree-resolved", links_within_the_page, priority=999)
    app.add_post_transform(PrintBook)
    # after sphinx-mathjax-offline has copied its tree (priority 500)
    app.connect("build-finished", build_finished, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    import pickle

    sys.exit(_singlehtml(pickle.loads(Path(sys.argv[1]).read_bytes())))
