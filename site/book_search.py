"""Sphinx extension: the index and the search as a map of mininn.

The index lists every public function, method and class that an export
cell defines, at that cell: genindex becomes a map of where each piece of
mininn is built, and a search for a name such as ``register_forward_hook``
puts the chapter that builds it first (search_scorer.js ranks the defining
cells above everything else).
"""
import re
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform

# tools/export.py decides what a cell defines, for the package and for this
# index alike. Sphinx runs outside pytest's pythonpath, so tools/ is put on
# sys.path here, once.
TOOLS = Path(__file__).resolve().parent.parent / "tools"
if str(TOOLS) not in sys.path:
    sys.path.append(str(TOOLS))
import export  # noqa: E402


def public(name):
    """A name a reader may look up: not a private helper (`_load_one`),
    though a dunder (`__setattr__`) is public."""
    return not name.startswith("_") or (name.startswith("__")
                                       and name.endswith("__"))


def defined_names(source, chapter=None):
    """(entry text, name) for each public class, function and method that
    a cell defines, as two-level index entries: "state_dict(); Module
    method, chapter 7". The first level is the bare name, so a search for
    `state_dict` matches it (Sphinx's search skips an index entry more than
    twice as long as the query); the second says what and where it is.
    Private helpers stay out. What is defined comes from the exporter's own
    `definitions`, so the index and the package agree."""
    where = f", chapter {chapter}" if chapter else ""
    entries = []
    for kind, name, owner in export.definitions(source):
        if not public(name) or owner and not public(owner):
            continue
        text = {"class": f"{name}; class{where}",
                "function": f"{name}(); function{where}",
                "method": f"{name}(); {owner} method{where}"}[kind]
        entries.append((text, name))
    return entries


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
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or "export" not in (
                    cell.get("cell_metadata", {}).get("tags", [])):
                continue
            blocks = list(cell.findall(nodes.literal_block))
            if not blocks:
                continue
            names = defined_names(blocks[0].astext(), chapter)
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
                ("single", text, anchor, "main", None) for text, _ in names])
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
            "env_version": 4}
