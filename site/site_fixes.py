"""Sphinx extension: book.js on every page, one copy of each script, and
MathJax cut to what renders the book's math."""
from pathlib import Path

# What the pages load from the MathJax tree; the rest is deleted.
MATHJAX_KEEP = ("tex-chtml.js", "output/chtml/fonts/woff-v2/")


def one_of_each_script(app, pagename, templatename, context, doctree):
    # sphinx-thebe 0.3.1 adds its inline script in a way that Sphinx 7.4
    # registers twice (named None, then ""), and the second copy fails in the
    # browser: "Identifier 'THEBE_JS_URL' has already been declared".
    unique = {}
    for script in context["script_files"]:
        unique.setdefault((script.filename or "",
                           tuple(sorted(script.attributes.items()))), script)
    # in place: later handlers add a page's scripts to this very list
    context["script_files"][:] = unique.values()


def trim_mathjax(app, exception):
    # sphinx-mathjax-offline copies the whole tree (24 MB); the site a reader
    # downloads or hosts keeps tex-chtml.js and its fonts (under 3 MB).
    tree = Path(app.outdir) / "_static" / "mathjax"
    if exception is not None or not (tree / MATHJAX_KEEP[0]).exists():
        return
    for path in sorted(tree.rglob("*"), reverse=True):
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
        elif not path.relative_to(tree).as_posix().startswith(MATHJAX_KEEP):
            path.unlink()


def setup(app):
    # late, after the handlers that add scripts to a page
    app.connect("html-page-context", one_of_each_script, priority=900)
    app.add_js_file("book.js", loading_method="defer")  # site/static
    # after sphinx-mathjax-offline has copied its tree (priority 500)
    app.connect("build-finished", trim_mathjax, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
