"""Sphinx extension: what the site's pages need beyond the theme's own
configuration.

- Each page keeps one copy of every script. sphinx-thebe 0.3.1 adds its
  inline configuration script in a way that Sphinx 7.4 registers twice (once
  named None, once ""), and the second copy fails in the browser:
  "Identifier 'THEBE_JS_URL' has already been declared".
- book.js (site/static): a tap on a link in a phone's sidebar dialog closes
  the dialog, and the language switch keeps the reader's section.
- The MathJax tree that sphinx-mathjax-offline copies into the site (24 MB)
  is cut to what renders the book's math (tex-chtml.js and its fonts, under
  3 MB): the site a reader downloads or hosts is that much smaller.
"""
from pathlib import Path

# What the pages load from the MathJax tree; the rest is deleted.
MATHJAX_KEEP = ("tex-chtml.js", "output/chtml/fonts/woff-v2/")


def _one_of_each_script(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for script in scripts:
        key = (getattr(script, "filename", script) or "",
               tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    # In place: later handlers add page scripts to this very list.
    scripts[:] = unique


def trim_mathjax(app, exception):
    tree = Path(app.outdir) / "_static" / "mathjax"
    if exception is not None or not (tree / MATHJAX_KEEP[0]).exists():
        return
    for path in sorted(tree.rglob("*"), reverse=True):
        name = path.relative_to(tree).as_posix()
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
        elif not name.startswith(MATHJAX_KEEP):
            path.unlink()


def setup(app):
    # Late, after the handlers that add scripts to a page.
    app.connect("html-page-context", _one_of_each_script, priority=900)
    # site/static (html_static_path) holds it; every page loads it.
    app.add_js_file("book.js", loading_method="defer")
    # After sphinx-mathjax-offline has copied its tree (priority 500).
    app.connect("build-finished", trim_mathjax, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
