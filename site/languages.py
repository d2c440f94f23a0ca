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
- gives Sphinx's Chinese search the book's terms (a jieba dictionary made
  from locale/zh_CN/TERMS.md) and makes it linear in the text; writes again the
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
import re
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
# Chinese search: the book's terms whole, in linear time

TERMS = Path(__file__).resolve().parent.parent / "locale" / "zh_CN" / "TERMS.md"
CJK_WORD = re.compile(r"[\u4e00-\u9fff]{2,}")


def term_table_words(text):
    """The Chinese words of TERMS.md's table (its second column), in
    order: "持久缓冲区 / 非持久缓冲区" gives both; code marks and Latin
    words ("meta 设备") are left out, and so are single characters (层),
    which the search never indexes."""
    words = []
    for line in text.splitlines():
        cells = line.strip().strip("|").split("|")
        if not line.startswith("|") or len(cells) < 2 or (
                cells[0].strip() == "English"):  # the header
            continue
        chinese = re.sub(r"`[^`]*`", " ", cells[1])
        for word in re.split(r"[/,，、\s]+", chinese):
            if CJK_WORD.fullmatch(word) and word not in words:
                words.append(word)
    return words


def _search_dictionary(app, config):
    """jieba, which splits the Chinese edition's text for its search,
    cuts a term it does not know into pieces (优化器 -> 优化 + 器), and the
    search drops one-character pieces: the term could not be found. A
    user dictionary of TERMS.md's words keeps every one whole; Sphinx
    hands it to jieba (html_search_options "dict"). The browser splits a
    query against the index's terms (search_scorer.js)."""
    if not chinese(config):
        return
    dictionary = Path(app.doctreedir) / "jieba-terms.txt"
    dictionary.parent.mkdir(parents=True, exist_ok=True)
    dictionary.write_text("".join(
        f"{word} 100000 n\n"
        for word in term_table_words(TERMS.read_text(encoding="utf-8"))),
        encoding="utf-8")
    config.html_search_options = {**(config.html_search_options or {}),
                                  "dict": str(dictionary)}


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
      footer), or TERMS.md (the Chinese search's words): every page;
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
    if chinese(app.config):
        catalogs.append(TERMS)  # the search's words (_search_dictionary)
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
    app.connect("config-inited", _search_dictionary)
    app.connect("builder-inited", _builder_inited, priority=900)
    # After sphinx-book-theme fills header_buttons (priority 501).
    app.connect("html-page-context", _language_switch, priority=502)
    app.setup_extension("translated_messages")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
