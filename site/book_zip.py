"""Sphinx extension: the downloads a reader takes from the site.

At the end of an HTML build it writes, beside the pages: the whole book as
a runnable zip (the chapters, `helpers.py` and `mininn/` that they import,
the reader's pinned requirements, a README); the workbook (tools/workbook.py);
the licences, as .txt. The Chinese edition's zip has the Chinese prose of
its catalogs and the English zip's code. Every page of the book links them
under its title and first in the header's download menu; a chapter's
notebook downloaded alone says in its first cell what it needs to run.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from filelock import FileLock
from sphinx.util import logging

from book_pdf import PDF_NAME
from site_catalog import N_, _

logger = logging.getLogger(__name__)

ZIP_NAME = "rebuilding-nn-module-notebooks.zip"
ZIP_FOLDER = "rebuilding-nn-module"
WORKBOOK_NAME = "rebuilding-nn-module-workbook.zip"
ZIP_DATE = (2026, 1, 1, 0, 0, 0)  # the same sources give the same bytes
LICENCE_FILES = ("LICENSE.txt", "LICENSE-text.txt")  # beside the pages
READER_PACKAGES = ("torch", "numpy", "matplotlib", "tqdm", "jupyterlab",
                   "jupyterlab-myst", "ipykernel", "ipywidgets")
TESTED_PYTHONS = "3.11"  # the zip's chapter 1 runs on .venv's in the tests
# the zip's README, by edition ({pythons} and {count} filled in)
README = {False: Path(__file__).with_name("zip") / "README.md",
          True: Path(__file__).with_name("zip") / "README.zh_CN.md"}


def toc_docnames(toc_path):
    """Docnames of a _toc.yml in reading order, as sphinx-external-toc reads
    it (the site's tests use it too)."""
    from sphinx_external_toc.parsing import parse_toc_yaml

    return list(parse_toc_yaml(toc_path))


# _config.yml's extra_footer, word for word (tests/test_site_pages.py), marked
# for the catalog: a Chinese page's footer says it in Chinese.
FOOTER = N_("Every chapter is re-executed and checked against "
            "<code>torch.nn</code> by the test suite.")


def add_downloads(app, pagename, templatename, context, doctree):
    """Every footer names the licences; a page of the book gets the note
    under its title and the zip and PDF first in its download menu (whose
    own .ipynb cannot run alone)."""
    if app.builder.name != "html":
        return
    pathto = context["pathto"]
    licence = _(
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
        space = "" if footer.rstrip().endswith("。") else " "
        context["theme_extra_footer"] = footer.rstrip() + space + licence
    if pagename not in app.env.book_pages:
        return
    links = [_('<a class="reference external" href="{href}">all the '
               'notebooks (.zip)</a>, with the helpers and the package they '
               'import').format(href=pathto(ZIP_NAME, 1)),
             _('<a class="reference external" href="{href}">the workbook '
               '(.zip)</a>, to write the Module yourself').format(
                   href=pathto(WORKBOOK_NAME, 1))]
    menu = [{"type": "link", "url": pathto(ZIP_NAME, 1), "text": ".zip",
             "icon": "fas fa-file-zipper",
             "tooltip": _("All the notebooks, with what they import"),
             "label": "download-zip-button"}]
    if app.env.book_pdf:
        links.append(_('<a class="reference external" href="{href}">the '
                       'whole book as a PDF</a>').format(
                           href=pathto(PDF_NAME, 1)))
        menu.append({"type": "link", "url": pathto(PDF_NAME, 1),
                     "text": _("book .pdf"), "icon": "fas fa-book",
                     "tooltip": _("The whole book as a PDF"),
                     "label": "download-book-pdf-button"})
    links.append(_('<a class="reference internal" href="{href}">the '
                   'index</a>').format(href=pathto("genindex")))
    note = ('\n<p class="book-downloads">' + _("Run it yourself: {links}.")
            .format(links=_("; ").join(links)) + "</p>")
    if "</h1>" in context.get("body", ""):
        context["body"] = context["body"].replace("</h1>", "</h1>" + note, 1)
    for group in context.get("header_buttons") or []:
        if group.get("label") == "download-buttons":
            group["buttons"][:0] = menu


ALONE_NOTE = (
    "**Downloaded alone, this notebook cannot run**: its first cell imports "
    "`helpers` and `mininn` from the folder it sits in. Take the whole book "
    f"instead: `{ZIP_NAME}` (linked under the title of every page of the "
    "book's website) holds every chapter with `helpers.py`, the `mininn` "
    "package and a README that says how to install and run them.")


def mark_lone_notebooks(app, outdir):
    """A chapter downloaded alone (_sources/, the header's .ipynb) says in
    its first cell what it needs; once, though a page that this build did
    not write again keeps the note of an earlier one."""
    import nbformat

    for docname in app.env.book_pages:
        path = outdir / "_sources" / (docname + ".ipynb")
        if path.exists():
            nb = nbformat.read(path, as_version=4)
            note = nbformat.v4.new_markdown_cell(ALONE_NOTE)
            note.id = "downloaded-alone"
            note.metadata["tags"] = ["downloaded-alone"]
            nb.cells = [note] + [cell for cell in nb.cells if "downloaded-alone"
                                 not in cell.metadata.get("tags", [])]
            nbformat.write(nb, path)


def reader_requirements(root):
    """requirements-reader.txt: READER_PACKAGES at their pins in
    requirements.txt."""
    pins = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        name, _, version = line.partition("==")
        if version:
            pins[name.strip().lower().replace("_", "-")] = line.strip()
    return ("# What the notebooks need, at the versions the book was run with"
            "\n# (on Linux, install the CPU-only torch first: README.md).\n"
            + "".join(pins[p] + "\n" for p in READER_PACKAGES))


def write_zip(app, outdir):
    root = Path(app.srcdir)
    chinese = (app.config.language or "en").startswith("zh")
    files = [p if p.exists() else p.with_suffix(".md")
             for p in (root / f"{d}.ipynb" for d in app.env.book_pages)]
    files += [*sorted((root / "book" / "mininn").glob("*.py")),
              root / "book" / "helpers.py", root / "requirements.txt",
              root / "LICENSE", root / "LICENSE-text",
              *sorted((root / "benchmarks").glob("*.py"))]
    with zipfile.ZipFile(outdir / ZIP_NAME, "w", zipfile.ZIP_DEFLATED) as archive:
        def add(name, data):
            info = zipfile.ZipInfo(f"{ZIP_FOLDER}/{name}", ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)

        add("README.md", README[chinese].read_text("utf-8").format(
            pythons=TESTED_PYTHONS, count=len(READER_PACKAGES)))
        add("requirements-reader.txt", reader_requirements(root))
        for path in files:
            data = path.read_bytes()
            if chinese and path.parent.name == "book" and path.suffix in (
                    ".ipynb", ".md"):
                data = in_chinese(app, path)
            add(path.relative_to(root).as_posix(), data)
    logger.info(f"book_zip: wrote {ZIP_NAME} ({len(files) + 2} files)")


def in_chinese(app, path):
    """A page of the book with its Markdown in Chinese, from the catalog the
    Chinese build reads (fuzzy entries left out, as Sphinx leaves them)."""
    import nbformat
    from babel.messages.pofile import read_po

    po = Path(app.srcdir, app.config.locale_dirs[0], app.config.language,
              "LC_MESSAGES", "book", path.stem + ".po")
    with po.open("rb") as f:
        messages = {m.id: m.string for m in read_po(f)
                    if m.string and m.string != m.id and not m.fuzzy}
    if path.suffix == ".md":
        return translate_markdown(path.read_text("utf-8"), messages).encode()
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, messages)
    return nbformat.writes(nb).encode()


LEAD = re.compile(r"[ \t]*(?:[-*] |\d+\. |#+ |:::\{\w+\} )?")


def translate_markdown(text, messages):
    """`text` with each block whose English `messages` holds in Chinese: a
    paragraph, list item, heading, exercise title or table cell, keyed as
    Sphinx keys it (its lines joined by spaces). A glossary term keeps its
    English line (chapters link to it) above the Chinese."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        lead = LEAD.match(lines[i]).group()
        end = next((k for k in range(i, len(lines)) if not lines[k].strip()),
                   len(lines))
        for j in range(end, i, -1):  # the longest block first
            key = " ".join(" ".join(lines[i:j])[len(lead):].split())
            if key in messages:
                term = not lead and lines[j:j + 1] and lines[j][:2] == "  "
                out += [lines[i]] * bool(term) + [lead + messages[key]]
                i = j
                break
        else:
            out.append(re.sub(r"(?<=\|)[^|]+(?=\|)", lambda cell: (
                f" {messages[cell[0].strip()]} "
                if cell[0].strip() in messages else cell[0]), lines[i])
                if lines[i].startswith("|") else lines[i])
            i += 1
    return "\n".join(out)


def workbook_sources(root):
    """What the workbook is made of: the chapters with a list of bugs in
    tools/mutants/, the test files those lists name, and the package."""
    import tomllib

    lists = sorted((root / "tools" / "mutants").glob("*.toml"))
    tests = {root / t for path in lists
             for t in tomllib.loads(path.read_text())["tests"]}
    return sorted([*(root / "tools").glob("workbook*"), root / "book" / "helpers.py",
                   root / "requirements.txt", root / "tests" / "support.py",
                   *lists, *tests, *(root / "book" / "mininn").glob("*.py"),
                   *(root / "book" / f"{p.stem}.ipynb" for p in lists)])


def write_workbook(app, outdir):
    """Its checks are measured by running the chapters' tests (about 25
    CPU-s), so both editions' builds share one, made once for its sources."""
    root = Path(app.srcdir)
    digest = hashlib.sha256()
    for path in workbook_sources(root):
        digest.update(path.name.encode() + path.read_bytes())
    made = root / "_build" / "workbook" / digest.hexdigest()[:16] / WORKBOOK_NAME
    made.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(made.parent / "lock"):  # the other edition's build waits
        if not made.exists():
            with tempfile.TemporaryDirectory() as tmp:
                done = subprocess.run([sys.executable, str(root / "tools" /
                                       "workbook.py"), "--out", tmp],
                                      capture_output=True, text=True)
                if done.returncode:
                    raise RuntimeError("tools/workbook.py failed:\n"
                                       + done.stderr[-3000:])
                os.replace(Path(tmp) / WORKBOOK_NAME, made)
    shutil.copy(made, outdir / WORKBOOK_NAME)


def builder_inited(app):
    app.env.book_pages = toc_docnames(Path(app.srcdir) /
                                      app.config.external_toc_path)


def build_finished(app, exception):
    if exception is None and app.builder.name == "html":  # <docname>.html
        outdir = Path(app.outdir)
        write_zip(app, outdir)
        write_workbook(app, outdir)
        mark_lone_notebooks(app, outdir)
        for source, published in zip(("LICENSE", "LICENSE-text"),
                                     LICENCE_FILES):
            shutil.copy(Path(app.srcdir, source), outdir / published)


def setup(app):
    app.setup_extension("site_catalog")
    app.setup_extension("book_pdf")
    app.connect("builder-inited", builder_inited)
    # After sphinx-book-theme has made its header buttons (priority 501).
    app.connect("html-page-context", add_downloads, priority=600)
    app.connect("build-finished", build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
