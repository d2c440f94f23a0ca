"""Every chapter notebook is stored the way a fresh kernel leaves it, with
nothing in its outputs that would differ on another machine or confuse a
reader (addresses, paths, tracebacks), and tags used one way throughout."""
import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
NOTEBOOKS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
TAGS = {"export", "hide-input", "nbval-ignore-output", "remove-cell"}
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
PATH = re.compile(r"(/root/|/tmp/|/home/|/work/|site-packages|[A-Z]:\\\\)")


def load(path):
    return nbformat.read(path, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def output_text(cell):
    return json.dumps(cell.get("outputs", []))


@pytest.fixture(params=NOTEBOOKS, ids=lambda p: p.name)
def notebook(request):
    return request.param, load(request.param)


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 6


def test_kernel_is_python3(notebook):
    _, nb = notebook
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_cells_ran_in_order_from_one(notebook):
    _, nb = notebook
    counts = [c.execution_count for c in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), "run `make outputs`"


def test_no_empty_code_cells(notebook):
    _, nb = notebook
    assert all(c.source.strip() for c in code_cells(nb))


def test_outputs_hold_no_addresses_paths_or_tracebacks(notebook):
    _, nb = notebook
    for i, cell in enumerate(code_cells(nb)):
        text = output_text(cell)
        tags = cell.metadata.get("tags", [])
        where = f"code cell {i}: {cell.source[:60]!r}"
        assert not any(o.output_type == "error" for o in cell.outputs), where
        assert "Traceback" not in text, where
        assert not PATH.search(text), where
        if "nbval-ignore-output" not in tags:
            assert not ADDRESS.search(text), where


def test_no_warnings_on_stderr(notebook):
    """A warning in a stored output is either a bug or varies by machine."""
    _, nb = notebook
    for cell in code_cells(nb):
        if "nbval-ignore-output" in cell.metadata.get("tags", []):
            continue
        streams = [o.name for o in cell.outputs if o.output_type == "stream"]
        assert "stderr" not in streams, cell.source[:80]


def test_only_known_tags(notebook):
    _, nb = notebook
    for cell in nb.cells:
        unknown = set(cell.metadata.get("tags", [])) - TAGS
        assert not unknown, (unknown, cell.source[:60])


def test_export_cells_print_nothing_and_fit_79_columns(notebook):
    _, nb = notebook
    for cell in code_cells(nb):
        if "export" not in cell.metadata.get("tags", []):
            continue
        assert cell.outputs == [], cell.source[:60]
        long = [line for line in cell.source.splitlines() if len(line) > 79]
        assert not long, long


def test_solutions_are_hidden_everywhere(notebook):
    """Tagged for the website, and collapsed in JupyterLab too."""
    _, nb = notebook
    for cell in code_cells(nb):
        if "hide-input" in cell.metadata.get("tags", []):
            assert cell.metadata.get("jupyter", {}).get("source_hidden")


def test_chapters_that_build_mininn_end_with_parity_and_exercises(notebook):
    path, nb = notebook
    if not any("export" in c.metadata.get("tags", []) for c in nb.cells):
        pytest.skip(f"{path.name} builds no part of mininn")
    headings = [
        line.lstrip("#").strip().lower()
        for c in nb.cells if c.cell_type == "markdown"
        for line in c.source.splitlines() if line.startswith("## ")
    ]
    assert any(h.startswith("parity") for h in headings), headings
    assert any(h.startswith("exercises") for h in headings), headings
    assert any("hide-input" in c.metadata.get("tags", []) for c in nb.cells)


def test_every_chapter_is_in_the_table_of_contents():
    toc = (ROOT / "_toc.yml").read_text()
    for path in NOTEBOOKS:
        assert f"book/{path.stem}" in toc, path.name
