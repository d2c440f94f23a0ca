"""Sphinx extension: the Chinese edition beside the English one (issue 20).
(Named `languages`, not `i18n`: book_search puts tools/ on sys.path, and
tools/i18n.py, which builds the editions, would shadow it.)

Both editions are built from the same notebooks and pages; the Chinese one
(`language = "zh_CN"`, built by tools/i18n.py into _build/html/zh) takes its
prose from locale/zh_CN/LC_MESSAGES/book/<page>.po. This extension:

- puts a language switch in the header of every page, to the same page in
  the other edition (the anchors are the English ones in both: Sphinx keeps
  section and glossary ids when it translates a title or a term, so
  site/static/book.js adds the page's hash to the switch when it is
  clicked: the reader lands at the same section);
- refuses a configuration that would make code translatable (code cells and
  outputs are literal blocks: they must stay byte-identical, so
  `gettext_additional_targets` must not name literal or doctest blocks);
- makes Sphinx's Chinese search linear in the text, and writes again the
  pages a change Sphinx does not track left stale;
- loads translated_messages.py, which translates what Sphinx leaves English
  and records what each page looked up, for the drift check.

The words the site's extensions write themselves (the note under each title,
the PDF's cover) come from their own catalog (site_catalog.py).

Notebook strings, once translated, are parsed again as Markdown, not as a
notebook: myst-nb 1.4.0 does that itself (it checks for Sphinx's
"<translated>" source suffix), which fixes executablebooks/MyST-NB#587
(translated notebook strings re-parsed as JSON, NotJSONError). The check
below keeps it so: a myst-nb that lost the fix fails the Chinese build with
the issue named, instead of the traceback.
"""
import filecmp
from pathlib import Path

from sphinx.errors import ConfigError, ExtensionError

ZH_FOLDER = "zh"   # the Chinese edition, relative to the English root
SWITCH = {  # the button in each edition: it leads to the other one
    "en": ("中文", "阅读本页的中文版"),
    "zh": ("English", "Read this page in English"),
}


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


def _builder_inited(app):
    if chinese(app.config):
        _check_myst_nb()


# --------------------------------------------------------------------------
# Chinese search, in linear time

def _fast_chinese_search():
    """Sphinx 7.4's Chinese search (sphinx/search/zh.py) keeps every Latin
    word it has split in `latin_terms`, a list shared by the class, and
    stem() tests each word for membership in it: quadratic in the text.
    On this book that is 75 s of CPU of a 120 s build. The same search
    with a set; what it indexes is unchanged."""
    import sphinx.search
    from sphinx.search import zh

    class SearchChinese(zh.SearchChinese):
        def init(self, options):
            super().init(options)
            self.latin_terms = set()

        def split(self, input):
            chinese = list(zh.jieba.cut_for_search(input)) if zh.JIEBA else []
            latin1 = [term.strip()
                      for term in self.latin1_letters.findall(input)]
            self.latin_terms.update(latin1)
            return chinese + latin1

    sphinx.search.languages["zh"] = SearchChinese


# sphinx-book-theme opens its header links in a new tab; the language
# switch replaces the page, as a link within the book does.
SAME_TAB = ('document.addEventListener("DOMContentLoaded", () => '
            'document.querySelectorAll("a.btn-language-switch")'
            '.forEach(a => a.removeAttribute("target")));')


def _stale_pages(app, env, added, changed, removed):
    """Pages to write again after a change Sphinx does not track, which
    left a warm build (the Chinese edition's, in the tests and `dev.py
    book`) saying "no targets are out of date" and keeping old pages:
    - book_site.po changed (site_catalog's words in every page's header and
      footer): every page;
    - a static file changed (book.css, book.js): the first page, because
      Sphinx copies the static files only when it writes a page."""
    if app.builder.name != "html":
        return []
    built = Path(app.outdir)
    pages = [built / f"{docname}.html" for docname in env.found_docs]
    if not all(page.exists() for page in pages):
        return []  # a first build: every page is written anyway
    oldest = min(page.stat().st_mtime for page in pages)
    catalogs = [Path(app.srcdir, folder, app.config.language or "en",
                     "LC_MESSAGES", "book_site.po")
                for folder in app.config.locale_dirs]
    if any(po.exists() and po.stat().st_mtime > oldest for po in catalogs):
        return sorted(env.found_docs)
    if changed or added:
        return []
    for folder in app.config.html_static_path:
        for source in (Path(app.confdir) / folder).glob("*.*"):
            copy = built / "_static" / source.name
            if not copy.exists() or not filecmp.cmp(source, copy,
                                                    shallow=False):
                return [app.config.root_doc]
    return []


def setup(app):
    _fast_chinese_search()
    app.connect("env-get-outdated", _stale_pages)
    app.add_js_file(None, body=SAME_TAB)
    app.connect("config-inited", _check_config)
    app.connect("builder-inited", _builder_inited, priority=900)
    # After sphinx-book-theme fills header_buttons (priority 501).
    app.connect("html-page-context", _language_switch, priority=502)
    app.setup_extension("translated_messages")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
