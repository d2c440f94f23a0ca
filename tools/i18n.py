"""The Chinese edition (issue 20): Sphinx gettext, one catalog per page.

    python tools/i18n.py update     extract the English strings into
                                    _build/gettext/*.pot and merge them into
                                    locale/zh_CN/LC_MESSAGES/ (sphinx-intl:
                                    new strings empty, changed ones fuzzy)
    python tools/i18n.py build [OUT] [--all]   the Chinese site, -W, into
                                    OUT (default _build/html/zh); --all
                                    writes every page, not only the changed
    python tools/i18n.py status     what is left to translate, file by file

A page's catalog is book/<page>.po; the words the site's extensions write
themselves (`_("...")` in site/*.py) are book_site.po, extracted by Babel.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
GETTEXT = BUILD / "gettext"
ZH_HTML = BUILD / "html" / "zh"
ZH_DOCTREES = BUILD / ".doctrees-zh"
LOCALE = ROOT / "locale"
LANGUAGE = "zh_CN"
CATALOGS = LOCALE / LANGUAGE / "LC_MESSAGES"
PAGE_CATALOGS = CATALOGS / "book"
SITE_CATALOG = CATALOGS / "book_site.po"  # site_catalog.CATALOG
# What Sphinx and the themes write that their own zh_CN catalogs leave
# English; written by hand, read before theirs.
THEME_CATALOG = CATALOGS / "sphinx.po"
# What the Chinese build sets on top of _config.yml.
ZH_OVERRIDES = {
    "language": LANGUAGE,
    "html_search_language": "zh",  # split by jieba (pinned)
    "html_title": "从零重建 torch.nn.Module",
    "author": "《从零重建 torch.nn.Module》的作者们",
    "nb_code_prompt_show": "显示代码",
    "nb_code_prompt_hide": "隐藏代码",
    "html_theme_options": {"search_bar_text": "搜索本书……"},
    "togglebutton_hint": "点击显示",
    "togglebutton_hint_hide": "点击隐藏",
    # theme templates redone for Chinese: the sidebar buttons' tooltips
    # through THEME_CATALOG, no space after the author line's "："
    "templates_path": ["site/templates"],
}


def sphinx(builder, outdir, doctrees, overrides=None, force_all=False):
    """One Sphinx build, warnings as errors, with Jupyter Book's
    configuration (as `jupyter-book build` makes it from _config.yml and
    _toc.yml); `force_all`: write every page, not only the changed ones."""
    from jupyter_book.sphinx import build_sphinx

    config = {"external_toc_path": str(ROOT / "_toc.yml"),
              "latex_individualpages": False, "nitpicky": True,
              **(overrides or {})}
    return build_sphinx(
        ROOT, outdir, noconfig=True, path_config=str(ROOT / "_config.yml"),
        confoverrides=config, builder=builder, doctreedir=doctrees,
        warningiserror=True, keep_going=True, force_all=force_all)


def run(module, *args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", module, *args],
                          cwd=cwd).returncode


def update():
    """English -> _build/gettext/*.pot -> locale/zh_CN/LC_MESSAGES/*.po."""
    GETTEXT.mkdir(parents=True, exist_ok=True)
    return (sphinx("gettext", GETTEXT, BUILD / ".doctrees-gettext")
            or run("babel.messages.frontend", "extract", "-o",
                   f"{SITE_CATALOG.stem}.pot", "--no-default-keywords",
                   "-k", "_", "-k", "N_", "../../site", cwd=GETTEXT)
            or run("sphinx_intl", "update", "-p", str(GETTEXT), "-d",
                   str(LOCALE), "-l", LANGUAGE, "--no-obsolete"))


def main(argv):
    command, *rest = argv or ["help"]
    if command == "update":
        code = update() or run("sphinx_intl", "stat", "-d", str(LOCALE),
                               "-l", LANGUAGE)
        print("Next: translate the untranslated and fuzzy entries (remove "
              "the `#, fuzzy` line once the Chinese matches the English), "
              "then `python3 tools/dev.py test tests/test_i18n.py`.")
    elif command == "build":
        folders = [a for a in rest if a != "--all"]
        code = sphinx("html", Path(folders[0]) if folders else ZH_HTML,
                      ZH_DOCTREES, ZH_OVERRIDES, force_all="--all" in rest)
    elif command == "status":
        code = run("sphinx_intl", "stat", "-d", str(LOCALE), "-l", LANGUAGE)
    else:
        print(__doc__)
        return 0 if command in ("help", "-h", "--help") else 2
    return 1 if code else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
