"""Sphinx extension (loaded by languages.py): what the Chinese build
translates beyond Sphinx's own Locale transform, and the record of what it
looked up.

- In the Chinese build, every message Sphinx looks up, page by page, before
  translating it, goes into <doctreedir>/i18n-messages.json: the list that
  tests/test_site_editions.py holds the catalogs to (an English string with
  no entry fails the test by file and string).
- Exercise subtitles and the captions of the table of contents, which Sphinx
  would leave English, are translated from the page's catalog.
- A glossary term's index entry, 缓冲区（buffer), becomes one entry per
  word, so that the search finds the term by its Chinese.
- Exercise and solution titles read in Chinese order, with full-width
  brackets: 练习 5.1（…）, 练习 5.1 解答（…）.
- Translated nodes forget the small document they were parsed in (a
  pickled Chinese page carried the whole environment).
"""
import json
import os
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.nodes import extract_messages
from sphinx.writers.html5 import HTML5Translator

from languages import chinese

MESSAGES = "i18n-messages.json"


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


class GlossaryIndexWords(SphinxTransform):
    """A glossary term's index entry, as each of its two words.

    The Chinese glossary writes a term with its English, 缓冲区（buffer),
    and its index entry is that whole: the search matches an entry only
    when the query is at least half of it, so 缓冲区 never found the
    glossary, as `buffer` does in the English edition. The entry becomes
    two, 缓冲区 and buffer, both to the term. Runs after the Locale
    transform (20), which made the Chinese entry."""

    default_priority = 21

    def apply(self, **kwargs):
        if not chinese(self.config):
            return
        for term in self.document.findall(nodes.term):
            for index in term.findall(addnodes.index):
                entries = []
                for kind, text, target, main, key in index["entries"]:
                    both = re.fullmatch(r"(.+?)\s*（([^（）]+)）", text)
                    words = both.groups() if kind == "single" and both else (
                        text,)
                    entries += [(kind, word, target, main, key)
                                for word in words]
                index["entries"] = entries


class ChineseExerciseTitles(SphinxPostTransform):
    """Exercise and solution titles in Chinese order, with full-width
    brackets: 练习 5.1（只触发一次的钩子）and 练习 5.1 解答（…）, where
    sphinx-exercise writes 练习 5.1 (…) and 解答 练习 5.1 (…). Runs after
    sphinx-exercise made the titles (its post-transforms, 20 and 21)."""

    default_priority = 22

    def run(self, **kwargs):
        if not chinese(self.config):
            return
        for node in self.document.findall(nodes.Admonition):
            kind = type(node).__name__
            title = node.children[0] if node.children else None
            if not isinstance(title, nodes.title) or kind not in (
                    "exercise_enumerable_node", "solution_node"):
                continue
            if kind == "solution_node" and len(title.children) == 2:
                label, link = title.children  # "解答", " 练习 5.1 (…)"
                number = link.children[0]
                link.replace(number, nodes.Text(
                    f"{number.astext().strip()} {label.astext()}"))
                title.remove(label)
                node["title"] = link.children[0].astext()
                title = link
            # the subtitle's own nodes are between " (" and ")"
            texts = [t for t in title.children if isinstance(t, nodes.Text)]
            opening = [t for t in texts if t.astext() == " ("]
            if opening and texts[-1].astext() == ")":
                title.replace(opening[0], nodes.Text("（"))
                title.replace(texts[-1], nodes.Text("）"))


class ChineseCaptionNumbers(HTML5Translator):
    """The HTML writer ends an exercise's number with a space (练习 5.1 ):
    in the Chinese edition the full-width bracket follows it directly.
    pydata-sphinx-theme adds its own behaviour on top of this class."""

    def add_fignumber(self, node):
        super().add_fignumber(node)
        if (type(node).__name__ == "exercise_enumerable_node"
                and self.body[-1] == "</span>"
                and self.body[-2].endswith(" ")):
            self.body[-2] = self.body[-2][:-1]


def _chinese_translator(app, config):
    if chinese(config):  # the site, and the whole-book page of the PDF
        for builder in ("html", "singlehtml"):
            app.set_translator(builder, ChineseCaptionNumbers, override=True)


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


def _build_finished(app, exception):
    if exception is not None or not chinese(app.config):
        return
    record = Path(app.doctreedir) / MESSAGES
    record.write_text(json.dumps(
        {d: app.env.i18n_messages[d] for d in sorted(app.env.i18n_messages)},
        ensure_ascii=False, indent=1), encoding="utf-8")



def setup(app):
    app.add_transform(ExerciseTitles)
    app.add_transform(RecordMessages)
    app.add_transform(TocCaptions)
    app.add_transform(GlossaryIndexWords)
    app.add_post_transform(ChineseExerciseTitles)
    app.connect("config-inited", _chinese_translator)
    app.add_transform(ForgetTranslationDocuments)
    app.connect("doctree-resolved", _extract_subtitles)
    app.connect("builder-inited", _init_env)
    app.connect("env-before-read-docs",
                lambda app, env, docnames: _init_env(app))
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _build_finished)
    # env_version: bump it when what the reading records changes.
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 8}
