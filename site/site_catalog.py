"""Sphinx extension: the catalog of the words the site's extensions write
themselves (the download note and menu, the footer's licence line, the PDF's
cover). They are English in the code, marked `_("...")` where used or
`N_("...")` where defined; `tools/i18n.py update` extracts them into
locale/<language>/LC_MESSAGES/book_site.po. The English build has no catalog.
"""
from pathlib import Path

from sphinx.locale import get_translation

CATALOG = "book_site"
_translation = get_translation(CATALOG)


def _(message):
    """`message` in the language of the build."""
    return str(_translation(message))


def N_(message):
    """Marks a message for the catalog; `_` translates it where used."""
    return message


def add_catalog(app, config):
    """Compile the .po when it is newer than its .mo (Sphinx compiles only
    the pages' catalogs) and register it for the build's language."""
    from sphinx.util.i18n import CatalogInfo

    for folder in config.locale_dirs:
        base = Path(app.srcdir, folder)
        catalog = CatalogInfo(str(base / (config.language or "en")
                                  / "LC_MESSAGES"), CATALOG, "utf-8")
        if Path(catalog.po_path).exists() and catalog.is_outdated():
            catalog.write_mo(config.language)
        app.add_message_catalog(CATALOG, str(base))


def setup(app):
    app.connect("config-inited", add_catalog)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
