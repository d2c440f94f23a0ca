"""Small Sphinx extension: a fix for the built site that config cannot reach.

sphinx-thebe 0.3.1 adds its inline configuration script in a way that Sphinx
7.4 registers twice (once named None, once ""), and the second copy fails in
the browser: "Identifier 'THEBE_JS_URL' has already been declared". Each page
keeps one copy of every script.
"""


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


def setup(app):
    # Late, after the handlers that add scripts to a page.
    app.connect("html-page-context", _one_of_each_script, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
