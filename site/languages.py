"""Sphinx extension: the Chinese edition beside the English one (issue 20).

Both editions are built from the same sources; the Chinese one (`language =
"zh_CN"`, built by tools/i18n.py into _build/html/zh) takes its prose from
locale/zh_CN/LC_MESSAGES/book/<page>.po. This puts a switch to the same page
of the other edition in every header, gives the Chinese search the book's
terms, and loads translated_messages.py (what Sphinx leaves English).
(Not named `i18n`: tools/i18n.py is on sys.path too.)
"""
import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TERMS = ROOT / "locale" / "zh_CN" / "TERMS.md"
CJK_WORD = re.compile(r"[\u4e00-\u9fff]{2,}")


def chinese(config):
    return (config.language or "en").startswith("zh")


def twin_url(pagename, language):
    """The same page in the other edition, relative to this page (book.js
    adds the section: both editions keep the English anchors)."""
    up = "../" * pagename.count("/")
    return f"{up}../{pagename}.html" if language == "zh" else (
        f"{up}zh/{pagename}.html")


def _language_switch(app, pagename, templatename, context, doctree):
    if app.builder.name != "html" or "header_buttons" not in context:
        return
    language = "zh" if chinese(app.config) else "en"
    text, tooltip = {"en": ("中文", "阅读本页的中文版"),
                     "zh": ("English", "Read this page in English")}[language]
    context["header_buttons"].append({
        "type": "link", "url": twin_url(pagename, language),
        "tooltip": tooltip, "icon": "fas fa-language", "text": text,
        "label": "language-switch"})


# sphinx-book-theme opens its header links in a new tab; the language
# switch replaces the page, as a link within the book does.
SAME_TAB = ('document.addEventListener("DOMContentLoaded", () => '
            'document.querySelectorAll("a.btn-language-switch")'
            '.forEach(a => a.removeAttribute("target")));')


def term_table_words(text):
    """The Chinese words of TERMS.md's table (its second column), in order:
    "持久缓冲区 / 非持久缓冲区" gives both; code, Latin words and single
    characters (which the search never indexes) are left out."""
    words = []
    for line in text.splitlines():
        cells = line.strip().strip("|").split("|")
        if not line.startswith("|") or len(cells) < 2 or (
                cells[0].strip() == "English"):  # the header
            continue
        for word in re.split(r"[/,，、\s]+", re.sub(r"`[^`]*`", " ", cells[1])):
            if CJK_WORD.fullmatch(word) and word not in words:
                words.append(word)
    return words


def _search_dictionary(app, config):
    """jieba, which splits the Chinese text for the search, cuts a term it
    does not know (优化器 -> 优化 + 器) and the search drops one-character
    pieces: a jieba user dictionary of TERMS.md's words keeps each whole
    (the browser splits a query the same way: search_scorer.js)."""
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
    """Sphinx 7.4's Chinese search keeps the Latin words it split in a list
    and tests each new word against it: quadratic, 75 CPU-s of a 120 s
    build here. The same search with a set."""
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


def _untracked_files(app, config):
    """Every page is written again when a file Sphinx does not track
    changes (a warm `dev.py book` said "no targets are out of date" and
    kept old pages): the site's catalog (words in every header and
    footer), TERMS.md (the search) and the static files. Sphinx rewrites
    every page when a config value of kind "html" changes."""
    digest = hashlib.sha256()
    for path in sorted([TERMS, *ROOT.glob("locale/*/LC_MESSAGES/book_site.po"),
                        *ROOT.glob("site/static/*.*")]):
        digest.update(path.read_bytes())
    config.book_untracked_files = digest.hexdigest()


def setup(app):
    _fast_chinese_search()
    app.add_config_value("book_untracked_files", "", "html")
    app.add_js_file(None, body=SAME_TAB)
    app.connect("config-inited", _search_dictionary)
    app.connect("config-inited", _untracked_files)
    # After sphinx-book-theme fills header_buttons (priority 501).
    app.connect("html-page-context", _language_switch, priority=502)
    app.setup_extension("translated_messages")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
