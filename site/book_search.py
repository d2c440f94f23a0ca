"""Sphinx extension: the index and the search as a map of mininn.

The index lists every function, method and class that an export cell
defines, private ones included (`_call_impl` and `_apply` are what the book
is about), at that cell: genindex becomes a map of where each piece of
mininn is built, and a search for a name such as ``register_forward_hook``
puts the chapter that builds it first (search_scorer.js ranks the defining
cells above everything else). A name Module defines has Module's cell as
its main entry; another class's method of that name (ParameterList's
`__call__`) is a secondary entry, which the search lists after the rest.
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
# index alike. Sphinx runs outside pytest's pythonpath, so tools/ is put on
# sys.path here, once.
TOOLS = Path(__file__).resolve().parent.parent / "tools"
if str(TOOLS) not in sys.path:
    sys.path.append(str(TOOLS))
import export  # noqa: E402


def definitions(source):
    """The exporter's `definitions` of a cell, and the methods it binds by
    assignment: `Module.__call__ = Module._wrapped_call_impl` gives
    ("method", "__call__", "Module"). An attribute set to anything but a
    name (`Module._version = 1`) is not a method."""
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


# An index entry's words, in the build's language (site_catalog): "第 7
# 章" in the Chinese edition's index.
ENTRIES = {"class": N_("{name}; class{where}"),
           "function": N_("{name}(); function{where}"),
           "method": N_("{name}(); {owner} method{where}")}


def defined_names(source, chapter=None, on_module=frozenset()):
    """(entry text, name, main) for each class, function and method that
    a cell defines, as two-level index entries: "state_dict(); Module
    method, chapter 7". The first level is the bare name, so a search for
    `state_dict` matches it (Sphinx's search skips an index entry more than
    twice as long as the query); the second says what and where it is.
    `main` is "main", or "" for a method of another class that Module
    defines too (a name in `on_module`). What is defined comes from the
    exporter's own `definitions`, so the index and the package agree."""
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
    """The names that the export cells of `notebooks` (paths) define on
    Module. Read once per build: a chapter's entries depend on the others'
    cells, which a build that reads only changed pages (not --all) may not
    see."""
    names = set()
    for path in notebooks:
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if "export" in cell.get("metadata", {}).get("tags", []):
                source = cell["source"]
                names |= {name for _, name, owner in definitions(
                    "".join(source) if isinstance(source, list) else source)
                    if owner == "Module"}
    return frozenset(names)


def chapter_number(docname):
    """5 for "book/05_hooks", None for a page that is not a chapter."""
    found = re.match(r"(\d+)_", docname.rpartition("/")[2])
    return int(found.group(1)) if found else None


class IndexExportCells(SphinxTransform):
    """Index entries, with a target, before every export cell. Runs before
    SphinxDomains (850), which collects index entries for genindex."""

    default_priority = 840

    def apply(self, **kwargs):
        taken = set(self.document.ids)
        chapter = chapter_number(self.env.docname)
        on_module = module_methods(tuple(sorted(
            str(self.env.doc2path(docname)) for docname in self.env.found_docs
            if chapter_number(docname))))
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or "export" not in (
                    cell.get("cell_metadata", {}).get("tags", [])):
                continue
            blocks = list(cell.findall(nodes.literal_block))
            if not blocks:
                continue
            names = defined_names(blocks[0].astext(), chapter, on_module)
            if not names:
                continue
            # The anchor is the cell itself, not an empty target: Sphinx's
            # search shows the text at the anchor under each result (and
            # fails in the browser on an empty one).
            anchor = base = nodes.make_id(f"mininn-{names[0][1]}")
            count = 1
            while anchor in taken:
                count += 1
                anchor = f"{base}-{count}"
            taken.add(anchor)
            cell["ids"].insert(0, anchor)
            self.document.ids[anchor] = cell
            index = addnodes.index(entries=[
                ("single", text, anchor, main, None)
                for text, _, main in names])
            cell.parent.insert(cell.parent.index(cell), index)


# The search ranks a result by how much of an index entry the query covers;
# a glossary term ("state_dict", 100) would beat the cell that defines the
# method ("state_dict()", 83). This scorer puts the defining cells (their
# anchors start "mininn-") above everything else, in their own order.
SEARCH_SCORER = Path(__file__).with_name("search_scorer.js")


def use_search_scorer(app, config):
    if not config.html_search_scorer:
        config.html_search_scorer = str(SEARCH_SCORER)


def setup(app):
    app.add_transform(IndexExportCells)
    app.connect("config-inited", use_search_scorer)
    # env_version: bump it when what the reading adds (the index) changes.
    return {"parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 5}
