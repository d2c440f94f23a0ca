"""The Chinese edition (issue 20): Sphinx gettext, one catalog per page.

    python tools/i18n.py update     extract the English strings into
                                    _build/gettext/*.pot, merge them into
                                    locale/zh_CN/LC_MESSAGES/book/<page>.po
                                    (new strings empty, changed ones fuzzy)
    python tools/i18n.py build [OUT] [--all]   the Chinese site, -W, into
                                    OUT (default _build/html/zh); --all
                                    writes every page, not only the changed
    python tools/i18n.py status     what is left to translate, page by page

`python3 tools/dev.py i18n` runs `update` then `status`; `dev.py book` builds
the English site and then this one. The English notebooks and pages are the
only source: a .po holds the Chinese for each English paragraph, heading,
list item, caption, admonition, exercise and glossary entry, keyed by the
English text itself. Code cells and their outputs are never in a catalog.
The words the site's extensions write themselves (site/*.py: the note under
each title, the PDF's cover and metadata, the footer's licence line) have
one catalog of their own, locale/zh_CN/LC_MESSAGES/book_site.po, extracted
from those files and merged the same way. The Chinese build, like the
English one, prints its PDF when a browser is there (site/book_pdf.py).
"""
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
GETTEXT = BUILD / "gettext"
# BOOK_ZH_HTML: another folder for the Chinese site (experiments, tests
# run beside a build of the English site).
ZH_HTML = Path(os.environ.get("BOOK_ZH_HTML", BUILD / "html" / "zh"))
ZH_DOCTREES = BUILD / ".doctrees-zh"
LOCALE = ROOT / "locale"
LANGUAGE = "zh_CN"
CATALOGS = LOCALE / LANGUAGE / "LC_MESSAGES"
# The pages' catalogs (book/<page>.po), and the one of the words that the
# site's extensions write themselves (site_catalog.CATALOG, "book_site").
PAGE_CATALOGS = CATALOGS / "book"
SITE_SOURCES = sorted((ROOT / "site").glob("*.py"))
SITE_CATALOG = CATALOGS / "book_site.po"
# The Chinese of what Sphinx and the themes write (their domain "sphinx")
# and their zh_CN catalogs leave English; written by hand, read by Sphinx
# from locale_dirs before its own.
THEME_CATALOG = CATALOGS / "sphinx.po"
# What the Chinese build sets on top of _config.yml (the English build
# leaves `language` at its default, "en").
ZH_OVERRIDES = {
    "language": LANGUAGE,
    # Sphinx's Chinese search splits words with jieba (pinned).
    "html_search_language": "zh",
    "html_title": "从零重建 torch.nn.Module",
    # the cover of the PDF, its metadata, the footer of every page
    "author": "《从零重建 torch.nn.Module》的作者们",
    # myst-nb's button on folded cells (the book folds only sources).
    "nb_code_prompt_show": "显示代码",
    "nb_code_prompt_hide": "隐藏代码",
    # The theme's search box, and sphinx-togglebutton's hint on a folded
    # solution (printed when a page is printed).
    "html_theme_options": {"search_bar_text": "搜索本书……"},
    "togglebutton_hint": "点击显示",
    "togglebutton_hint_hide": "点击隐藏",
    # Theme templates redone for Chinese (site/templates): the sidebar
    # buttons' tooltips go through THEME_CATALOG (the theme writes them in
    # English), the author line has no space after its "：".
    "templates_path": ["site/templates"],
}


def sphinx(builder, outdir, doctrees, overrides=None, warnings_as_errors=True,
           jobs=None, quiet=False, force_all=False):
    """One Sphinx build with Jupyter Book's configuration (as
    `jupyter-book build` makes it from _config.yml and _toc.yml);
    `force_all`: write every page, not only those that changed."""
    from jupyter_book.sphinx import build_sphinx

    config = {"external_toc_path": str(ROOT / "_toc.yml"),
              "latex_individualpages": False, "nitpicky": True,
              **(overrides or {})}
    return build_sphinx(
        ROOT, outdir, noconfig=True, path_config=str(ROOT / "_config.yml"),
        confoverrides=config, builder=builder, doctreedir=doctrees,
        warningiserror=warnings_as_errors, keep_going=True, jobs=jobs,
        quiet=quiet, force_all=force_all)


def extract(quiet=False):
    """English strings -> _build/gettext/book/<page>.pot."""
    return sphinx("gettext", GETTEXT, BUILD / ".doctrees-gettext",
                  quiet=quiet)


def site_messages():
    """[(English, file, line)] of every `_("...")` and `N_("...")` of the
    site's extensions, in order (Babel's extractor, as `pybabel
    extract`)."""
    from babel.messages.extract import extract_from_file

    found = {}
    for source in SITE_SOURCES:
        for line, message, _comments, _context in extract_from_file(
                "python", source, keywords={"_": None, "N_": None}):
            found.setdefault(message, (source, line))
    return [(message, source, line)
            for message, (source, line) in found.items()]


def extract_site(quiet=False):
    """The site's own words -> _build/gettext/book_site.pot."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    catalog = Catalog(project="Rebuilding torch.nn.Module", fuzzy=False)
    for message, source, line in site_messages():
        where = source.relative_to(ROOT).as_posix()
        catalog.add(message, locations=[(f"../../{where}", line)])
    GETTEXT.mkdir(parents=True, exist_ok=True)
    with (GETTEXT / f"{SITE_CATALOG.stem}.pot").open("wb") as handle:
        write_po(handle, catalog, width=76)
    return 0


def merge():
    """Every .pot into its .po: new strings empty, changed ones fuzzy
    (keeping the Chinese of the old English), removed ones dropped."""
    return subprocess.run(
        [sys.executable, "-m", "sphinx_intl", "update", "-p", str(GETTEXT),
         "-d", str(LOCALE), "-l", LANGUAGE, "--no-obsolete"],
        cwd=ROOT).returncode


def build(outdir=ZH_HTML, quiet=False, force_all=False):
    """The Chinese site, warnings as errors."""
    return sphinx("html", Path(outdir), ZH_DOCTREES, ZH_OVERRIDES,
                  quiet=quiet, force_all=force_all)


def catalog_status():
    """{page: (total, untranslated, fuzzy)} from the .po files."""
    from babel.messages.pofile import read_po

    status = {}
    for po in sorted(CATALOGS.rglob("*.po")):
        with po.open("rb") as handle:
            catalog = read_po(handle)
        messages = [m for m in catalog if m.id]
        status[po.relative_to(ROOT).as_posix()] = (
            len(messages),
            sum(not m.string and not m.fuzzy for m in messages),
            sum(m.fuzzy for m in messages))
    return status


def print_status():
    rows = catalog_status()
    width = max(len(name) for name in rows)
    total = [0, 0, 0]
    print(f"{'catalog':<{width}}  strings  untranslated  fuzzy")
    for name, counts in rows.items():
        total = [a + b for a, b in zip(total, counts)]
        print(f"{name:<{width}}  {counts[0]:7}  {counts[1]:12}  {counts[2]:5}")
    print(f"{'all':<{width}}  {total[0]:7}  {total[1]:12}  {total[2]:5}")
    return total


def main(argv):
    command = argv[0] if argv else "help"
    start = time.perf_counter()
    if command == "update":
        code = extract(quiet=True) or extract_site()
        if code != 0:
            return 1
        code = merge()
        if code == 0:
            print_status()
            print("Next: translate the empty and fuzzy entries (remove the "
                  "`#, fuzzy` line once the Chinese matches the English), "
                  "then `.venv/bin/python -m pytest -p no:xdist -q "
                  "tests/test_i18n.py`.")
    elif command == "build":
        everything = "--all" in argv
        folders = [a for a in argv[1:] if a != "--all"]
        code = build(Path(folders[0]) if folders else ZH_HTML,
                     force_all=everything)
    elif command == "status":
        print_status()
        code = 0
    else:
        print(__doc__)
        return 0 if command in ("help", "-h", "--help") else 2
    print(f"i18n {command}: {time.perf_counter() - start:.1f} s",
          file=sys.stderr)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main(sys.argv[1:]))
