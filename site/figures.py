"""Figures on a phone (issue 38), and the Chinese edition's figures
(issue 39, section 2).

On any screen a figure wider than its box (on a phone, most of them) gets
the class book-too-wide, measured in the browser (TOO_WIDE below), so that
site/static/book.css gives it the shadow and the line that say it scrolls
and opens whole when tapped. (The figures drawn narrow for a phone, and
the rules that choose between the two drawings, are all in book.css.)

The chapters' cells draw every figure, and every word of a figure goes
through `helpers.label()`, which reads the language from BOOK_LANGUAGE. So
the Chinese figures are the same cells run again in Chinese:

    .venv/bin/python site/figures.py [book/NN_name.ipynb ...]   (no argument: all)

runs the chapters in a fresh kernel with BOOK_LANGUAGE=zh_CN (as `dev.py
outputs` runs them in English) and stores each figure it draws as
locale/zh_CN/figures/<chapter>/<cell id>.png; figures.json records what it
was drawn from (the cell's code and helpers.py), so tests/test_helpers.py
can say when a figure is missing or stale. Run it after changing a figure
cell or helpers.py; it takes as long as the chapters take to run.

In the Chinese build (language zh_CN) this extension puts those PNGs in
place of the English ones as each notebook is read, so the Chinese site and
its PDF (printed from the same build) show them. The notebooks, their code
and the English build are untouched.
"""
import ast
import base64
import hashlib
import json
import os
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
FIGURES = ROOT / "locale" / "zh_CN" / "figures"
MANIFEST = FIGURES / "figures.json"
LANGUAGE = "zh_CN"


def drawn_from(cell_source):
    """What a figure depends on: its cell's code and helpers.py's (as
    Python parses them, so that a comment changes nothing)."""
    code = [ast.dump(ast.parse(text)) for text in (
        cell_source, (BOOK / "helpers.py").read_text())]
    return hashlib.sha256("\n".join(code).encode()).hexdigest()[:16]


def figure_cells(notebook):
    """{cell id: cell} of the code cells of `notebook` (a dict, as JSON)
    that store a PNG."""
    return {cell["id"]: cell for cell in notebook["cells"]
            if cell["cell_type"] == "code" and any(
                "image/png" in out.get("data", {})
                for out in cell.get("outputs", []))}


def png_size(data):
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# --------------------------------------------------------------------------
# Drawing them: .venv/bin/python site/figures.py

def draw(path):
    """Run the notebook at `path` in Chinese; store its figures."""
    import nbformat
    from nbclient import NotebookClient

    english = json.loads(path.read_text())
    notebook = nbformat.read(path, as_version=4)
    os.environ["BOOK_LANGUAGE"] = LANGUAGE  # the kernel inherits it
    os.environ.pop("MININN_QUICK", None)    # the full run, as `outputs`
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(BOOK)}}).execute()
    drawn = {}
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            text = out.get("text", "") + "".join(out.get("traceback", []))
            if "missing from font" in text or out.output_type == "error":
                sys.exit(f"{path.name}, cell {cell.id}: {text[-500:]}")
        pngs = [out.data["image/png"] for out in cell.outputs
                if "image/png" in out.get("data", {})]
        if pngs:
            drawn[cell.id] = (base64.b64decode(pngs[0]), cell.source)
    wanted = figure_cells(english)
    if set(drawn) != set(wanted):
        sys.exit(f"{path.name}: drew {sorted(drawn)}, stores {sorted(wanted)}")
    folder = FIGURES / path.stem
    for old in folder.glob("*.png"):
        old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    manifest[path.stem] = {}
    for cell_id, (png, source) in drawn.items():
        (folder / f"{cell_id}.png").write_bytes(png)
        manifest[path.stem][cell_id] = drawn_from(source)
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"{path.name}: {len(drawn)} figures in Chinese")


# --------------------------------------------------------------------------
# Using them: the Chinese build

def _chinese_figures(app, docname, source):
    """In the Chinese build, the notebook `docname` as read, with each
    figure's PNG replaced by its Chinese drawing."""
    if not (app.config.language or "").startswith("zh"):
        return
    path = Path(app.env.doc2path(docname))
    folder = FIGURES / path.stem
    if path.suffix != ".ipynb" or not folder.is_dir():
        return
    notebook = json.loads(source[0])
    for cell_id, cell in figure_cells(notebook).items():
        png = folder / f"{cell_id}.png"
        if not png.exists():
            continue  # tests/test_helpers.py names it
        app.env.note_dependency(str(png))
        data = png.read_bytes()
        width, height = png_size(data)
        for out in cell["outputs"]:
            if "image/png" in out.get("data", {}):
                out["data"]["image/png"] = base64.b64encode(data).decode()
                # a retina PNG is shown at half its pixels, as in English
                out.setdefault("metadata", {})["image/png"] = {
                    "width": width // 2, "height": height // 2}
    source[0] = json.dumps(notebook)


# Measured when the page is laid out and again when the screen turns (the
# images carry their size, so nothing waits for them to load).
TOO_WIDE = """
function bookTooWide() {
  for (const box of document.querySelectorAll("div.cell_output")) {
    const wide = box.querySelector("img") !== null
      && box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("book-too-wide", wide);
  }
}
document.addEventListener("DOMContentLoaded", bookTooWide);
window.addEventListener("resize", bookTooWide);
"""


def setup(app):
    app.add_js_file(None, body=TOO_WIDE)
    app.connect("source-read", _chinese_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    chosen = [Path(a).resolve() for a in sys.argv[1:]] or sorted(
        BOOK.glob("[0-9][0-9]_*.ipynb"))
    for notebook_path in chosen:
        draw(notebook_path)
