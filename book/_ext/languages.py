"""Sphinx extension: the Chinese edition beside the English one (issue 20).
(Named `languages`, not `i18n`: book_files puts tools/ on sys.path, and
tools/i18n.py, which builds the editions, would shadow it.)

Both editions are built from the same notebooks and pages; the Chinese one
(`language = "zh_CN"`, built by tools/i18n.py into _build/html/zh) takes its
prose from locale/zh_CN/LC_MESSAGES/book/<page>.po. This extension:

- puts a language switch in the header of every page, to the same page in
  the other edition (the anchors are the English ones in both: Sphinx keeps
  section and glossary ids when it translates a title or a term);
- in the Chinese build, records every message Sphinx looks up, page by page,
  before translating it, into <doctreedir>/i18n-messages.json: the list that
  tests/test_i18n.py holds the catalogs to (an English string with no entry,
  or a fuzzy one, fails the test by file and string);
- refuses a configuration that would make code translatable (code cells and
  outputs are literal blocks: they must stay byte-identical, so
  `gettext_additional_targets` must not name literal or doctest blocks);
- in the Chinese build, writes the note under each title in Chinese, and
  the whole-book page in Chinese (`lang="zh-CN"`), printed to the Chinese
  PDF with book_files' own print_pdf (book_files.py belongs to the site;
  this only calls it).

Notebook strings, once translated, are parsed again as Markdown, not as a
notebook: myst-nb 1.4.0 does that itself (it checks for Sphinx's
"<translated>" source suffix), which fixes executablebooks/MyST-NB#587
(translated notebook strings re-parsed as JSON, NotJSONError). The check
below keeps it so: a myst-nb that lost the fix fails the Chinese build with
the issue named, instead of the traceback.
"""
import html
import json
import os
import re
from pathlib import Path

from sphinx.errors import ConfigError, ExtensionError
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx.util.nodes import extract_messages

logger = logging.getLogger(__name__)

MESSAGES = "i18n-messages.json"
ZH_FOLDER = "zh"   # the Chinese edition, relative to the English root
SWITCH = {  # the button in each edition: it leads to the other one
    "en": ("中文", "阅读本页的中文版"),
    "zh": ("English", "Read this page in English"),
}
# Whole-book page (book_files.whole_book_html) and the note under titles
# (book_files.add_download_note), in the Chinese edition.
ZH_COVER = ("整本书，由网站的源文件生成。每道练习的解答都紧随其后，"
            "标题为“练习 N 的解答”。")


def chinese(config):
    return (config.language or "en").startswith("zh")


def _check_config(app, config):
    targets = set(config.gettext_additional_targets or ())
    code = targets & {"literal-block", "doctest-block"}
    if code:
        raise ConfigError(
            f"gettext_additional_targets names {sorted(code)}: code cells "
            "and outputs would become translatable; they must stay "
            "byte-identical between the editions (issue 20)")


class RecordMessages(SphinxTransform):
    """What the Locale transform (priority 20) is about to look up."""

    default_priority = 19

    def apply(self, **kwargs):
        if not chinese(self.config):
            return
        found = []
        for _node, msg in extract_messages(self.document):
            if msg not in found:
                found.append(msg)
        self.env.i18n_messages[self.env.docname] = found


def _init_env(app):
    if not hasattr(app.env, "i18n_messages"):
        app.env.i18n_messages = {}


def _purge(app, env, docname):
    getattr(env, "i18n_messages", {}).pop(docname, None)


def _merge(app, env, docnames, other):
    env.i18n_messages.update(
        {d: other.i18n_messages[d] for d in docnames
         if d in getattr(other, "i18n_messages", {})})


def _check_myst_nb():
    """executablebooks/MyST-NB#587: fail loudly if the fix is gone."""
    import inspect

    from myst_nb.sphinx_ import Parser

    if "<translated>" not in inspect.getsource(Parser.parse):
        raise ExtensionError(
            "this myst-nb parses translated notebook strings as notebooks "
            "(executablebooks/MyST-NB#587): pin myst-nb>=1.4.0")


# --------------------------------------------------------------------------
# Pages

def twin_url(pagename, language):
    """The same page in the other edition, relative to this page."""
    up = "../" * pagename.count("/")
    if language == "zh":
        return f"{up}../{pagename}.html"
    return f"{up}{ZH_FOLDER}/{pagename}.html"


def _language_switch(app, pagename, templatename, context, doctree):
    if app.builder.name != "html" or "header_buttons" not in context:
        return
    language = "zh" if chinese(app.config) else "en"
    text, tooltip = SWITCH[language]
    context["header_buttons"].append({
        "type": "link", "url": twin_url(pagename, language),
        "tooltip": tooltip, "icon": "fas fa-language", "text": text,
        "label": "language-switch"})


NOTE = re.compile(r'<p class="book-downloads">(.*?)</p>', re.S)


def _chinese_note(app, pagename, templatename, context, doctree):
    """book_files' note under the title, in Chinese (same links)."""
    if not chinese(app.config) or "body" not in context:
        return
    found = NOTE.search(context["body"])
    if not found:
        return
    hrefs = re.findall(r'href="([^"]*)"', found.group(1))
    words = []
    for href in hrefs:
        if href.endswith(".zip"):
            words.append(f'<a class="reference external" href="{href}">'
                         "全部笔记本（.zip）</a>，附带它们导入的辅助函数和包")
        elif href.endswith(".pdf"):
            words.append(f'<a class="reference external" href="{href}">'
                         "整本书的 PDF</a>")
        else:
            words.append(f'<a class="reference internal" href="{href}">'
                         "索引</a>")
    note = '<p class="book-downloads">自己运行：' + "；".join(words) + "。</p>"
    context["body"] = (context["body"][:found.start()] + note
                       + context["body"][found.end():])


# --------------------------------------------------------------------------
# End of the build

def _pdf_wanted(app):
    return (chinese(app.config) and app.builder.name == "html"
            and os.environ.get("BOOK_I18N_PDF", "1") != "0")


def _builder_inited(app):
    _init_env(app)
    if chinese(app.config):
        _check_myst_nb()
    # The Chinese PDF is printed below, after the whole-book page is put
    # into Chinese; book_files (which reads this flag when it prints) keeps
    # it for the PDF link under each title.
    app.i18n_print_pdf = False
    if chinese(app.config) and getattr(app.env, "book_files_pdf", False):
        app.i18n_print_pdf = _pdf_wanted(app)


def _before_book_files(app, exception):
    """Priority 899: book_files prints the PDF at 900 when this is set."""
    if chinese(app.config) and hasattr(app.env, "book_files_pdf"):
        app.env.book_files_pdf = False


def _build_finished(app, exception):
    if exception is not None or not chinese(app.config):
        return
    record = Path(app.doctreedir) / MESSAGES
    record.write_text(json.dumps(
        {d: app.env.i18n_messages[d] for d in sorted(app.env.i18n_messages)},
        ensure_ascii=False, indent=1), encoding="utf-8")
    if app.builder.name != "html":
        return
    outdir = Path(app.outdir)
    import book_files  # the site's extension (book/_ext/book_files.py)

    pages = getattr(app.env, "book_files_pages", None)
    if not pages:
        return
    page = outdir / str(Path(pages[0]).parent) / book_files.WHOLE_BOOK
    if not page.exists():
        return
    text = page.read_text(encoding="utf-8")
    text = text.replace('<html lang="en"', '<html lang="zh-CN"', 1)
    text = re.sub(r"<p>The whole book, from the sources of the website\..*?"
                  r"</p>", f"<p>{html.escape(ZH_COVER)}</p>", text, count=1,
                  flags=re.S)
    text = text.replace("<h2>Contents</h2>", "<h2>目录</h2>", 1)
    page.write_text(text, encoding="utf-8")
    if app.i18n_print_pdf:
        book_files.print_pdf(outdir, page, outdir / book_files.PDF_NAME)
        logger.info(f"i18n: wrote the Chinese {book_files.PDF_NAME}")


def setup(app):
    app.connect("config-inited", _check_config)
    app.add_transform(RecordMessages)
    app.connect("builder-inited", _builder_inited, priority=900)
    app.connect("env-before-read-docs",
                lambda app, env, docnames: _init_env(app))
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("html-page-context", _language_switch)
    # After book_files' note (priority 500).
    app.connect("html-page-context", _chinese_note, priority=600)
    app.connect("build-finished", _before_book_files, priority=899)
    app.connect("build-finished", _build_finished, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 1}
