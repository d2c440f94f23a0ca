"""Sphinx extension: the whole book as one PDF beside the site's pages.
After the HTML build, Sphinx's `singlehtml` builder writes the book as one
page into _build/whole-book/ (whole-book-zh/), made a print book on the way
(PrintBook, add_cover), which book_print.print_pdf prints."""
import copy
import datetime
import html
import os
import pickle
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from book_print import pdf_possible, print_pdf
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


def whole_book_dir(doctreedir):
    """_build/.doctrees -> _build/whole-book; .doctrees-zh -> whole-book-zh."""
    doctrees = Path(doctreedir)
    return doctrees.with_name("whole-book"
                              + doctrees.name.removeprefix(".doctrees"))


def build_whole_book(app):
    """The singlehtml build of `app`'s sources, configuration and doctrees,
    in a process of its own (two Sphinx applications cannot share docutils'
    registries); its exit status."""
    job = dict(srcdir=str(app.srcdir), confdir=None,
               outdir=str(whole_book_dir(app.doctreedir)),
               doctreedir=str(app.doctreedir), buildername="singlehtml",
               # printed, not searched (the Chinese search loads jieba: 5-9
               # s); no figure that links to its file, no "#" after each
               # heading; book.css opens the solutions (togglebutton's own
               # print handler fails on one that Paged.js splits)
               confoverrides={**app.book_pdf_overrides,
                              "html_search_language": "en",
                              "html_scaled_image_link": False,
                              "html_permalinks": False,
                              "togglebutton_open_on_print": False},
               status=None, warningiserror=app.warningiserror,
               keep_going=app.keep_going)
    return subprocess.run([sys.executable, __file__], input=pickle.dumps(job),
                          env={**os.environ, "PYTHONWARNINGS": "ignore"}
                          ).returncode


def links_within_the_page(app, doctree, docname):
    """singlehtml links a section of another page "#document-<page>#<id>",
    then (fix_refuris) "<root_doc>.html#<id>": another file. Make it "#<id>".
    """
    if app.builder.name != "singlehtml":
        return
    for reference in doctree.findall(nodes.reference):
        uri = reference.get("refuri", "")
        if uri.startswith("#document-") and uri.count("#") == 2:
            reference["refuri"] = "#" + uri.rpartition("#")[2]


class PrintBook(SphinxPostTransform):
    """The whole book as a print book: folded plotting code left out, other
    folded code labelled; the contents first, the glossary and an index of
    definitions last. Before myst-nb folds the cells (199)."""

    default_priority = 198
    builders = ("singlehtml",)

    def run(self, **kwargs):
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("hide_mode") != "input":  # a folded code cell
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
        # the site's index is the book's; a download is not beside the PDF
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
        # each page a chapter (h1, a top-level bookmark), not a section of
        # the introduction
        for pages in dict.fromkeys(node.parent for node in files.values()):
            pages.parent.remove(pages)
            self.document.append(pages)
        if GLOSSARY in files:
            glossary = files.pop(GLOSSARY)
            glossary.parent.remove(glossary)
            list(files.values())[-1].parent.append(glossary)
            files[GLOSSARY] = glossary
        self.document.insert(0, nodes.raw("", self.contents(files),
                                          format="html"))
        self.document.append(self.index())

    def contents(self, files):
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
        """What genindex lists (the names the chapters define): what and
        where each is, and its page (whole-book.css)."""
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
    """The commit the book is built from and its date, or the build's date
    where there is no git."""
    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args],
                              capture_output=True, text=True)
    try:
        head = git("log", "-1", "--format=%h %cs").stdout.split()
    except OSError:
        head = None
    if not head:
        return _("Printed on {date}.").format(
            date=datetime.date.today().isoformat())
    changed = git("diff", "--quiet", "HEAD", "--", "book", "_toc.yml",
                  "_config.yml").returncode
    return (_("Version {commit} of {date}, with local changes.") if changed
            else _("Version {commit} of {date}.")).format(commit=head[0],
                                                           date=head[1])


def add_cover(app, pagename, templatename, context, doctree):
    """The whole book opens with its title page and its colophon."""
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


def keep_configuration(app, config):
    """The configuration as given, for the second build, before extensions
    change it (sphinx-comments adds a static folder that does not exist)."""
    app.book_pdf_overrides = copy.deepcopy(
        {**config.overrides, "extensions": config.extensions})


def builder_inited(app):
    if app.builder.name == "singlehtml":
        # sphinx-exercise registers node handlers for "singlehtml", which
        # hides those the other extensions register for "html"
        handlers = app.registry.translation_handlers
        for node, pair in handlers.get("html", {}).items():
            handlers.setdefault("singlehtml", {}).setdefault(node, pair)
    ok, why = pdf_possible()
    app.env.book_pdf = ok and app.builder.name == "html"
    if app.builder.name == "html" and not ok:
        logger.info(f"book_pdf: no PDF of the book ({why})")


def build_finished(app, exception):
    if exception is None and app.builder.name == "singlehtml":
        # the theme loads a search index on every page: an empty one
        Path(app.outdir, "searchindex.js").write_text("Search.setIndex({})")
    if exception or not app.env.book_pdf:  # the site's build, and a browser
        return
    if build_whole_book(app) != 0:
        logger.warning("book_pdf: the singlehtml build failed")
        return
    folder, config = whole_book_dir(app.doctreedir), app.config
    # jupyter-book leaves Sphinx's `project` unset: the title is html_title
    problems = print_pdf(
        folder, folder / WHOLE_BOOK, Path(app.outdir) / PDF_NAME, STYLESHEET,
        metadata={"Title": config.html_title, "Author": config.author,
                  "Subject": _(SUBJECT),
                  "Keywords": f"PyTorch; torch.nn.Module; {_(LICENCE_TEXT)}"},
        bookmarks={config.html_title: _("Introduction")})
    for problem in problems:
        logger.warning(f"book_pdf: {WHOLE_BOOK} printed with {problem}")
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


if __name__ == "__main__":  # build_whole_book's build
    from sphinx.application import Sphinx

    job = pickle.load(sys.stdin.buffer)
    app = Sphinx(**job, warning=sys.stderr)
    app.set_html_assets_policy("always")  # MathJax, as jupyter-book does
    app.build()
    # its links are for a page at the top of the folder: not book/intro
    Path(job["outdir"], app.config.root_doc + ".html").replace(
        Path(job["outdir"], WHOLE_BOOK))
    sys.exit(app.statuscode)
