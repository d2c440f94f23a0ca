"""Sphinx extension (loaded by languages.py): what the Chinese edition
translates beyond Sphinx's Locale transform, and the record of what each page
looked up (<doctreedir>/i18n-messages.json, which tests/test_site_editions.py
holds the catalogs to). Exercise subtitles and the table of contents'
captions are translated; exercise titles read 练习 5.1（…）; a glossary term
is found in the index by either of its words.
"""
import json
import os
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.locale import init as init_locale
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.i18n import docname_to_domain
from sphinx.util.nodes import extract_messages
from sphinx.writers.html5 import HTML5Translator

from languages import chinese

MESSAGES = "i18n-messages.json"


def _is(node, *names):
    """sphinx-exercise's node classes, by name."""
    return type(node).__name__ in names


def _myst(node):
    """The MyST source of an exercise subtitle, from its inline nodes."""
    marks = {"literal": "`", "emphasis": "*", "strong": "**"}
    return "".join(f"{marks.get(child.tagname, '')}{child.astext()}"
                   f"{marks.get(child.tagname, '')}" for child in node.children)


class ExerciseTitles(SphinxTransform):
    """An exercise's title is sphinx-exercise's "Exercise" (its own catalog
    translates it) and the directive's argument, the subtitle: Sphinx would
    look the whole title up, and gettext extracts nothing (sphinx-exercise
    rebuilds the title first). The subtitle alone becomes the message,
    translated by the Locale transform and added to the page's .pot
    (_extract_subtitles)."""

    default_priority = 18  # before the Locale transform (20)

    def apply(self, **kwargs):
        subtitles = []
        for title in self.document.findall(nodes.title):
            if _is(title, "exercise_title", "solution_title"):
                title["translatable"] = False
            for sub in title.findall(nodes.subtitle):
                if _is(sub, "exercise_subtitle"):
                    sub.rawsource = _myst(sub)
                    sub.source = sub.source or self.env.doc2path(
                        self.env.docname)
                    subtitles.append((sub.rawsource, sub.source, sub.line))
        # the page's metadata: Sphinx keeps it per page, as it reads them
        self.env.metadata[self.env.docname]["exercise_subtitles"] = subtitles


class RecordMessages(SphinxTransform):
    """What the Locale transform (20) is about to look up."""

    default_priority = 19

    def apply(self, **kwargs):
        if chinese(self.config):
            self.env.metadata[self.env.docname]["i18n_messages"] = list(
                dict.fromkeys(msg for node, msg in extract_messages(
                    self.document) if not _front_matter(node)))


def _front_matter(node):
    """A field of the front matter (a notebook's metadata, such as
    "mininn": {"module": "state"}), removed before the page is written."""
    while node is not None:
        if isinstance(node, (nodes.field_list, nodes.docinfo)):
            return isinstance(node.parent, nodes.document)
        node = node.parent
    return False


class AfterLocale(SphinxTransform):
    """Runs after the Locale transform (20) made the Chinese nodes.

    - sphinx-exercise titles a solution from a copy of its exercise made
      before any translation ("解答 练习 1.1 (register a list by hand)"):
      the copy takes the translated subtitle too.
    - A glossary term's index entry, 缓冲区（buffer), becomes two, 缓冲区 and
      buffer: the search matches an entry only when the query is at least
      half of it, so 缓冲区 alone never found the glossary.
    - Translated nodes keep `_document`, the small document Sphinx parsed
      the translation in, whose settings hold the whole environment: each
      pickled page carried it (2-4 MB a page, seconds to load). Without it
      a node asks its parent, as every other node does.
    """

    default_priority = 21

    def apply(self, **kwargs):
        if not chinese(self.config):
            return
        registry = getattr(self.env, "sphinx_exercise_registry", {})
        for sub in self.document.findall(nodes.subtitle):
            entry = _is(sub, "exercise_subtitle") and registry.get(
                sub.parent.parent.get("label"))
            if entry:
                for kept in entry["node"].findall(nodes.subtitle):
                    kept.children = []
                    kept.extend(child.deepcopy() for child in sub.children)
        for term in self.document.findall(nodes.term):
            for index in term.findall(addnodes.index):
                index["entries"] = [(kind, word, *rest) for kind, text, *rest
                                    in index["entries"] for word in _words(text)]
        for node in self.document.findall():
            if getattr(node, "_document", self.document) is not self.document:
                node._document = None


def _words(term):
    """缓冲区（buffer) -> 缓冲区, buffer."""
    both = re.fullmatch(r"(.+?)\s*（([^（）]+)）", term)
    return both.groups() if both else (term,)


class TocCaptions(SphinxTransform):
    """Captions of the table of contents ("The chapters"), which
    sphinx-external-toc inserts (priority 100) after the Locale transform:
    recorded, and translated from the page's catalog."""

    default_priority = 110

    def apply(self, **kwargs):
        if not chinese(self.config):
            return
        config = self.config
        catalog, _ = init_locale(
            [os.path.join(self.env.srcdir, d) for d in config.locale_dirs],
            config.language,
            docname_to_domain(self.env.docname, config.gettext_compact))
        record = self.env.metadata[self.env.docname].setdefault(
            "i18n_messages", [])
        for tree in self.document.findall(addnodes.toctree):
            caption = tree.get("caption")
            if caption:
                if caption not in record:
                    record.append(caption)
                tree["caption"] = catalog.gettext(caption).strip() or caption


class ChineseExerciseTitles(SphinxPostTransform):
    """Exercise and solution titles in Chinese order, with full-width
    brackets: 练习 5.1（…）and 练习 5.1 解答（…）, where sphinx-exercise
    (its post-transforms, 20 and 21) writes 练习 5.1 (…) and 解答 练习 5.1
    (…)."""

    default_priority = 22

    def run(self, **kwargs):
        if not chinese(self.config):
            return
        for node in self.document.findall(nodes.Admonition):
            title = node.children[0] if node.children else None
            if not isinstance(title, nodes.title) or not _is(
                    node, "exercise_enumerable_node", "solution_node"):
                continue
            if _is(node, "solution_node") and len(title.children) == 2:
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
    """No space between an exercise's number and its full-width bracket
    (the HTML writer writes "练习 5.1 ")."""

    def add_fignumber(self, node):
        super().add_fignumber(node)
        if (_is(node, "exercise_enumerable_node")
                and self.body[-1] == "</span>"
                and self.body[-2].endswith(" ")):
            self.body[-2] = self.body[-2][:-1]


def _chinese_translator(app, config):
    if chinese(config):  # the site, and the whole-book page of the PDF
        for builder in ("html", "singlehtml"):
            app.set_translator(builder, ChineseCaptionNumbers, override=True)


def _extract_subtitles(app, doctree, docname):
    """gettext: the exercise subtitles into the page's catalog."""
    if app.builder.name == "gettext":
        from sphinx.builders.gettext import MsgOrigin

        catalog = app.builder.catalogs[
            docname_to_domain(docname, app.config.gettext_compact)]
        for msg, source, line in app.env.metadata[docname].get(
                "exercise_subtitles", []):
            catalog.add(msg, MsgOrigin(source, line or 0))


def _build_finished(app, exception):
    if exception is None and chinese(app.config):
        Path(app.doctreedir, MESSAGES).write_text(json.dumps(
            {d: app.env.metadata[d].get("i18n_messages", [])
             for d in sorted(app.env.found_docs)},
            ensure_ascii=False, indent=1), encoding="utf-8")


def setup(app):
    for transform in (ExerciseTitles, RecordMessages, AfterLocale,
                      TocCaptions):
        app.add_transform(transform)
    app.add_post_transform(ChineseExerciseTitles)
    app.connect("config-inited", _chinese_translator)
    app.connect("doctree-resolved", _extract_subtitles)
    app.connect("build-finished", _build_finished)
    # env_version: bump it when what the reading records changes.
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 9}
