"""The Chinese edition's figures: the chapters' cells run again with
BOOK_LANGUAGE=zh_CN (every word of a figure goes through `helpers.label()`),

    .venv/bin/python site/figures.py [book/NN_name.ipynb ...]   (no argument: all)

store each figure as locale/zh_CN/figures/<chapter>/<cell id>.png, and in
figures.json what it was drawn from (tests/test_helpers.py names a stale one).
As a Sphinx extension, it puts them in place of the English ones in the
Chinese build.
"""
import ast
import base64
import hashlib
import json
import os
import shutil
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
FIGURES = ROOT / "locale" / "zh_CN" / "figures"
MANIFEST = FIGURES / "figures.json"


def drawn_from(cell_source):
    """A hash of the cell's code and helpers.py's, as Python parses them."""
    code = [ast.dump(ast.parse(text)) for text in (
        cell_source, (BOOK / "helpers.py").read_text())]
    return hashlib.sha256("\n".join(code).encode()).hexdigest()[:16]


def figure_cells(notebook):
    """{cell id: cell} of the code cells of `notebook` that store a PNG."""
    return {cell["id"]: cell for cell in notebook["cells"]
            if cell["cell_type"] == "code" and any(
                "image/png" in out.get("data", {})
                for out in cell.get("outputs", []))}


def png_size(data):
    return struct.unpack(">II", data[16:24])


def draw(path):
    """Run the notebook at `path` in Chinese; store its figures."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    wanted = set(figure_cells(notebook))
    os.environ["BOOK_LANGUAGE"] = "zh_CN"  # the kernel inherits it
    os.environ.pop("MININN_QUICK", None)   # the full run, as `outputs`
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(BOOK)}}).execute()
    drawn = {}
    for cell in notebook.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") + "".join(out.get("traceback", []))
            if "missing from font" in text or out.output_type == "error":
                sys.exit(f"{path.name}, cell {cell.id}: {text[-500:]}")
        pngs = [out.data["image/png"] for out in cell.get("outputs", [])
                if "image/png" in out.get("data", {})]
        if pngs:
            drawn[cell.id] = (base64.b64decode(pngs[0]), cell.source)
    if set(drawn) != wanted:
        sys.exit(f"{path.name}: drew {sorted(drawn)}, stores {sorted(wanted)}")
    folder = FIGURES / path.stem
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    manifest[path.stem] = {}
    for cell_id, (png, source) in drawn.items():
        (folder / f"{cell_id}.png").write_bytes(png)
        manifest[path.stem][cell_id] = drawn_from(source)
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"{path.name}: {len(drawn)} figures in Chinese")


def _chinese_figures(app, docname, source):
    """In the Chinese build, a notebook's figures as read are the Chinese."""
    path = Path(app.env.doc2path(docname))
    folder = FIGURES / path.stem
    if not (app.config.language or "").startswith("zh") or (
            path.suffix != ".ipynb" or not folder.is_dir()):
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


def setup(app):
    app.connect("source-read", _chinese_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    chosen = [Path(a).resolve() for a in sys.argv[1:]] or sorted(
        BOOK.glob("[0-9][0-9]_*.ipynb"))
    for notebook_path in chosen:
        draw(notebook_path)
