"""Sphinx extension: the index and the search as a map of mininn.

The index lists every class, function and method an export cell defines,
private ones included (`_call_impl` is what the book is about), at that cell,
and search_scorer.js ranks those cells first. A name Module defines has
Module's cell as its main entry (ParameterList's `__call__` comes after).
"""
import ast
import functools
import json
import re
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform

from site_catalog import N_, _

# tools/export.py decides what a cell defines, for the package and for this
# index alike; Sphinx runs outside pytest's pythonpath.
sys.path.append(str(Path(__file__).resolve().parent.parent / "tools"))
import export

# An index entry's words, in the build's language (site_catalog).
ENTRIES = {"class": N_("{name}; class{where}"),
           "function": N_("{name}(); function{where}"),
           "method": N_("{name}(); {owner} method{where}")}


def definitions(source):
    """The exporter's `definitions` of a cell, and the methods it binds by
    assignment: `Module.__call__ = Module._wrapped_call_impl` gives
    ("method", "__call__", "Module") (`Module._version = 1` gives nothing)."""
    found = export.definitions(source)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return found
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(
                node.value, (ast.Name, ast.Attribute)):
            found += [("method", target.attr, target.value.id)
                      for target in node.targets
                      if isinstance(target, ast.Attribute)
                      and isinstance(target.value, ast.Name)]
    return found


def defined_names(source, chapter=None, on_module=frozenset()):
    """(entry, name, main) for each name a cell defines, such as
    "state_dict(); Module method, chapter 7": the bare name first (the search
    skips an entry more than twice as long as the query). `main` is "" for
    another class's method of a name Module defines (`on_module`)."""
    where = _(", chapter {chapter}").format(chapter=chapter) if (
        chapter) else ""
    entries = []
    for kind, name, owner in definitions(source):
        text = _(ENTRIES[kind]).format(name=name, owner=owner, where=where)
        secondary = kind == "method" and owner != "Module" and (
            name in on_module)
        entries.append((text, name, "" if secondary else "main"))
    return entries


@functools.lru_cache
def module_methods(notebooks):
    """The names the export cells of `notebooks` define on Module (read from
    the files: a build of the changed pages does not see the others)."""
    names = set()
    for path in notebooks:
        for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
            if "export" in cell.get("metadata", {}).get("tags", []):
                names |= {name for _, name, owner in definitions(
                    "".join(cell["source"])) if owner == "Module"}
    return frozenset(names)


def chapter_number(docname):
    """5 for "book/05_hooks", None for a page that is not a chapter."""
    found = re.match(r"(\d+)_", docname.rpartition("/")[2])
    return int(found.group(1)) if found else None


class IndexExportCells(SphinxTransform):
    """Index entries, with a target, before every export cell; before
    SphinxDomains (850), which collects the entries for genindex."""

    default_priority = 840

    def apply(self, **kwargs):
        chapter = chapter_number(self.env.docname)
        on_module = module_methods(tuple(sorted(
            str(self.env.doc2path(docname)) for docname in self.env.found_docs
            if chapter_number(docname))))
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or "export" not in (
                    cell.get("cell_metadata", {}).get("tags", [])):
                continue
            blocks = list(cell.findall(nodes.literal_block))
            names = blocks and defined_names(blocks[0].astext(), chapter,
                                             on_module)
            if not names:
                continue
            # The anchor is the cell itself: Sphinx's search shows the text
            # at the anchor under a result (and fails on an empty target).
            anchor = base = nodes.make_id(f"mininn-{names[0][1]}")
            count = 1
            while anchor in self.document.ids:
                count += 1
                anchor = f"{base}-{count}"
            cell["ids"].insert(0, anchor)
            self.document.ids[anchor] = cell
            index = addnodes.index(entries=[
                ("single", text, anchor, main, None)
                for text, _, main in names])
            cell.parent.insert(cell.parent.index(cell), index)


def use_search_scorer(app, config):
    # A glossary term ("state_dict") would outrank the cell that defines it
    # ("state_dict()"): the search scores how much of an entry a query covers
    config.html_search_scorer = str(Path(__file__).with_name(
        "search_scorer.js"))


def setup(app):
    app.add_transform(IndexExportCells)
    app.connect("config-inited", use_search_scorer)
    # env_version: bump it when what the reading adds (the index) changes.
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 5}
