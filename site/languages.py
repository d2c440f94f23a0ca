"""Sphinx extension: the Chinese edition beside the English one (issue 20).
(Named `languages`, not `i18n`: book_search puts tools/ on sys.path, and
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
  `gettext_additional_targets` must not name literal or doctest blocks).

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
import json
import os
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.errors import ConfigError, ExtensionError
from sphinx.transforms import SphinxTransform
from sphinx.util.nodes import extract_messages

MESSAGES = "i18n-messages.json"
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


def _catalog(transform):
    """The page's catalog, as the Locale transform opens it."""
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    config = transform.config
    dirs = [os.path.join(transform.env.srcdir, d) for d in config.locale_dirs]
    catalog, _ = init_locale(dirs, config.language, docname_to_domain(
        transform.env.docname, config.gettext_compact))
    return catalog


def _translated(catalog, msg):
    msgstr = catalog.gettext(msg)
    return msgstr if msgstr and msgstr != msg and msgstr.strip() else None


def _myst(node):
    """The MyST source of an exercise subtitle, from its inline nodes."""
    marks = {"literal": "`", "emphasis": "*", "strong": "**"}
    parts = []
    for child in node.children:
        mark = marks.get(child.tagname, "")
        parts.append(f"{mark}{child.astext()}{mark}")
    return "".join(parts)


class ExerciseTitles(SphinxTransform):
    """sphinx-exercise titles, translated by their subtitle alone.

    An exercise's title is sphinx-exercise's own label ("Exercise", which
    its catalog translates) followed by the directive's argument, its
    subtitle. Sphinx would look the whole title up ("练习register a list
    by hand" in the Chinese build) while gettext extracts nothing for it
    (it extracts after sphinx-exercise's post-transforms rebuilt the
    title). So the titles are not Sphinx messages; each subtitle is one,
    extracted and translated here.
    """

    default_priority = 18  # before the Locale transform (20)

    def apply(self, **kwargs):
        found = []
        for title in self.document.findall(nodes.title):
            if type(title).__name__ in ("exercise_title", "solution_title"):
                title["translatable"] = False
        for sub in self.document.findall(nodes.subtitle):
            if type(sub).__name__ != "exercise_subtitle":
                continue
            msg = _myst(sub)
            found.append((msg, sub))
        self.env.i18n_subtitles[self.env.docname] = [
            (msg, sub.source or self.env.doc2path(self.env.docname),
             sub.line) for msg, sub in found]
        if not chinese(self.config) or not found:
            return
        from sphinx.transforms.i18n import publish_msgstr

        catalog = _catalog(self)
        for msg, sub in found:
            msgstr = _translated(catalog, msg)
            if msgstr is None:
                continue
            parsed = publish_msgstr(
                self.app, msgstr, self.env.doc2path(self.env.docname),
                sub.line or 0, self.config, self.document.settings)
            if isinstance(parsed, nodes.paragraph):
                sub.children = []
                sub.extend(child.deepcopy() for child in parsed.children)
                self._register(sub)

    def _register(self, sub):
        """sphinx-exercise keeps a copy of each exercise, made when its
        directive ran (before any translation), and titles the exercise's
        solution from that copy ("解答 练习 1.1 (register a list by
        hand)"): the copy takes the translated subtitle too."""
        exercise = sub.parent.parent if sub.parent is not None else None
        label = exercise.get("label") if exercise is not None else None
        entry = getattr(self.env, "sphinx_exercise_registry", {}).get(label)
        if entry is None:
            return
        for kept in entry["node"].findall(nodes.subtitle):
            if type(kept).__name__ == "exercise_subtitle":
                kept.children = []
                kept.extend(child.deepcopy() for child in sub.children)
                break


class RecordMessages(SphinxTransform):
    """What the Locale transform (priority 20) is about to look up, and
    the exercise subtitles (above)."""

    default_priority = 19

    def apply(self, **kwargs):
        if not chinese(self.config):
            return
        found = []
        for node, msg in extract_messages(self.document):
            if _front_matter(node):
                continue
            if msg not in found:
                found.append(msg)
        for msg, _source, _line in self.env.i18n_subtitles.get(
                self.env.docname, []):
            if msg not in found:
                found.append(msg)
        self.env.i18n_messages[self.env.docname] = found


class ForgetTranslationDocuments(SphinxTransform):
    """Translated nodes keep the document they were parsed in.

    Sphinx 7.4's Locale transform parses each translation as a small
    document of its own (publish_msgstr) and moves its nodes into the
    page; the nodes keep `_document` pointing at that small document, whose
    settings hold the whole build environment. Each pickled page then
    carries the environment as it was: the Chinese doctrees grew to 2-4 MB
    a page (the English ones are 0.1-0.4 MB) and took seconds each to load.
    A node without `_document` asks its parent, as every other node does.
    """

    default_priority = 25  # after the Locale transform (20)

    def apply(self, **kwargs):
        if not chinese(self.config):
            return
        for node in self.document.findall():
            owner = getattr(node, "_document", None)
            if owner is not None and owner is not self.document:
                node._document = None


def _front_matter(node):
    """A field of the front matter (a notebook's metadata, such as
    "mininn": {"module": "state"}): a field list at the top of the page,
    which becomes docinfo and is removed before the page is written (MyST
    makes no other field lists here: its fieldlist extension is off)."""
    while node is not None:
        if isinstance(node, (nodes.field_list, nodes.docinfo)):
            return isinstance(node.parent, nodes.document)
        node = node.parent
    return False


class TocCaptions(SphinxTransform):
    """Captions of the table of contents ("The chapters"), in Chinese.

    sphinx-external-toc inserts the toctrees at priority 100, after the
    Locale transform: their captions are extracted (gettext reads them at
    the end) but never translated. This translates them from the root
    page's catalog.
    """

    default_priority = 110

    def apply(self, **kwargs):
        if not chinese(self.config):
            return
        trees = [t for t in self.document.findall(addnodes.toctree)
                 if t.get("caption")]
        if not trees:
            return
        catalog = _catalog(self)
        record = self.env.i18n_messages.setdefault(self.env.docname, [])
        for tree in trees:
            caption = tree["caption"]
            if caption not in record:
                record.append(caption)
            msgstr = _translated(catalog, caption)
            if msgstr is not None:
                tree["caption"] = msgstr


def _extract_subtitles(app, doctree, docname):
    """gettext: add the exercise subtitles to the page's catalog."""
    if app.builder.name != "gettext":
        return
    from sphinx.builders.gettext import MsgOrigin
    from sphinx.util.i18n import docname_to_domain

    catalog = app.builder.catalogs[
        docname_to_domain(docname, app.config.gettext_compact)]
    for msg, source, line in app.env.i18n_subtitles.get(docname, []):
        catalog.add(msg, MsgOrigin(source, line or 0))


def _init_env(app):
    for name in ("i18n_messages", "i18n_subtitles"):
        if not hasattr(app.env, name):
            setattr(app.env, name, {})


def _purge(app, env, docname):
    for name in ("i18n_messages", "i18n_subtitles"):
        getattr(env, name, {}).pop(docname, None)


def _merge(app, env, docnames, other):
    for name in ("i18n_messages", "i18n_subtitles"):
        getattr(env, name).update(
            {d: getattr(other, name)[d] for d in docnames
             if d in getattr(other, name, {})})


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


# --------------------------------------------------------------------------
# End of the build

def _builder_inited(app):
    _init_env(app)
    if chinese(app.config):
        _check_myst_nb()


def _build_finished(app, exception):
    if exception is not None or not chinese(app.config):
        return
    record = Path(app.doctreedir) / MESSAGES
    record.write_text(json.dumps(
        {d: app.env.i18n_messages[d] for d in sorted(app.env.i18n_messages)},
        ensure_ascii=False, indent=1), encoding="utf-8")


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
    app.add_transform(ExerciseTitles)
    app.add_transform(RecordMessages)
    app.add_transform(TocCaptions)
    app.add_transform(ForgetTranslationDocuments)
    app.connect("doctree-resolved", _extract_subtitles)
    app.connect("builder-inited", _builder_inited, priority=900)
    app.connect("env-before-read-docs",
                lambda app, env, docnames: _init_env(app))
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    # After sphinx-book-theme fills header_buttons (priority 501).
    app.connect("html-page-context", _language_switch, priority=502)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 6}
