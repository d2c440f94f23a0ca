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
TAGS = {"export", "nbval-ignore-output", "remove-cell", "hide-input"}
# A code cell a reader must read is at most this long (DESIGN.md): longer
# code is split, moved to helpers.py, or folded (`hide-input`).
READING_LINES = 25
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
# A decimal number in printed text: 1.5520, -0.25, .5, 3.1e-05 (not 1,234 or
# a version such as 2.13.0, which the lookarounds leave out).
DECIMAL = re.compile(r"(?<![\w.])[-+]?(\d*\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
SIGNIFICANT = 5        # digits from which kernel choice can flip the last one
OUTPUT_COLUMNS = 88    # what the website's text column shows without scrolling
PATH = re.compile(r"(/root/|/tmp/|/home/|/work/|site-packages|[A-Z]:\\\\)")


def load(path):
    return nbformat.read(path, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def output_text(cell):
    """A cell's outputs as JSON, without the base64 of its images (random
    letters there can spell "0x9b80FF" or "/tmp/" by chance)."""
    def textual(output):
        data = {k: v for k, v in output.get("data", {}).items()
                if not k.startswith("image/")}
        return {**output, "data": data} if "data" in output else output
    return json.dumps([textual(o) for o in cell.get("outputs", [])])


def printed(cell):
    """The text a reader sees in a cell's outputs (stdout and text/plain)."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        else:
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def flippable_numbers(cell):
    """Decimal numbers with 5+ significant digits in outputs nbval compares.

    Such a digit is at the mercy of kernel choice: another CPU (AVX2 or
    AVX-512, x86 or ARM), thread count or a GPU may round the last bit the
    other way. Assert the exact claim in the cell and print a comparison,
    print fewer digits (helpers.rounded checks the distance to a rounding
    boundary), or tag the cell nbval-ignore-output where it only
    illustrates.
    """
    if "nbval-ignore-output" in cell.metadata.get("tags", []):
        return []
    found = []
    for match in DECIMAL.finditer(printed(cell)):
        digits = match.group(1).replace(".", "").lstrip("0")
        if len(digits) >= SIGNIFICANT:
            found.append(match.group(0))
    return found


@pytest.fixture(scope="module", params=NOTEBOOKS, ids=lambda p: p.name)
def notebook(request):
    """(path, notebook), read once for all the tests of this file (they
    only read it)."""
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


def in_reading_path(cell):
    """A code cell the website shows unfolded: not folded (`hide-input`),
    not removed, not a solution (those open on request)."""
    tags = cell.metadata.get("tags", [])
    hidden = cell.metadata.get("jupyter", {}).get("source_hidden", False)
    return not ({"hide-input", "remove-cell"} & set(tags) or hidden)


def test_code_cells_in_the_reading_path_are_at_most_25_lines(notebook):
    _, nb = notebook
    long = {c.get("id"): len(c.source.splitlines()) for c in code_cells(nb)
            if in_reading_path(c)
            and len(c.source.splitlines()) > READING_LINES}
    assert not long, (f"cells over {READING_LINES} lines: split them, move "
                      f"drawing code to helpers.py, or fold them", long)


def test_the_reading_path_rule_sees_folded_and_solution_cells():
    cell = nbformat.v4.new_code_cell("x = 1\n" * 30)
    assert in_reading_path(cell)
    cell.metadata["tags"] = ["hide-input"]
    assert not in_reading_path(cell)
    solution = nbformat.v4.new_code_cell("x = 1")
    solution.metadata["jupyter"] = {"source_hidden": True}
    assert not in_reading_path(solution)


def test_no_compared_output_prints_a_digit_that_kernels_can_flip(notebook):
    _, nb = notebook
    bad = {c.get("id"): flippable_numbers(c)[:3] for c in code_cells(nb)}
    assert not {k: v for k, v in bad.items() if v}, (
        "these cells print 5+ significant digits that another CPU or a GPU "
        "may round differently; see CONTRIBUTING.md, 'Notebook rules'")


def test_the_guard_rejects_the_seven_cells_of_issue_11():
    """The outputs that failed nbval on another CPU, exactly as they were
    stored (tests/fixtures/flippable_outputs.json): each must be caught,
    and tagging it nbval-ignore-output must be the only way to pass."""
    stored = json.loads((ROOT / "tests" / "fixtures"
                         / "flippable_outputs.json").read_text())["cells"]
    assert len(stored) == 7
    for cell_id, entry in stored.items():
        cell = nbformat.v4.new_code_cell("...")
        cell.outputs = [nbformat.from_dict(o) for o in entry["outputs"]]
        assert flippable_numbers(cell), cell_id
        cell.metadata["tags"] = ["nbval-ignore-output"]
        assert not flippable_numbers(cell), cell_id


def test_the_guard_passes_exact_facts_and_coarse_numbers():
    cell = nbformat.v4.new_code_cell("...")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=(
        "4 parameters, torch 2.13.0, 61,100,840 numbers, loss 1.55, 0.0012,"
        " same: True, 3e-05, tensor([0.5000, 1.2500])\n"))]
    assert flippable_numbers(cell) == ["1.2500"]


def test_outputs_fit_the_text_column(notebook):
    """No printed line wider than the website shows without scrolling."""
    _, nb = notebook
    wide = [(c.get("id"), len(line)) for c in code_cells(nb)
            for line in printed(c).splitlines() if len(line) > OUTPUT_COLUMNS]
    assert not wide, f"lines over {OUTPUT_COLUMNS} columns: {wide[:8]}"


def test_exercises_are_numbered_with_collapsed_solutions(notebook):
    """`exercise` blocks (sphinx-exercise) and gated `solution` blocks that
    open as a dropdown, holding the cell that checks the solution too; the
    solution's code is collapsed in JupyterLab too."""
    path, nb = notebook
    labels, solved = [], []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        labels += re.findall(r"^:::\{exercise\}.*\n:label: (\S+)",
                             cell.source, re.M)
        start = re.match(r":::\{solution-start\} (\S+)\n:class: dropdown\n",
                         cell.source)
        if start:
            solved.append(start.group(1))
            inner = nb.cells[i + 1]
            assert inner.cell_type == "code", start.group(1)
            assert inner.metadata.get("jupyter", {}).get("source_hidden")
            # the solution, then the cell that checks it (whose output
            # gives the answer away), folded together
            end = next(j for j in range(i + 1, len(nb.cells))
                       if nb.cells[j].cell_type == "markdown")
            assert nb.cells[end].source.startswith(":::{solution-end}"), (
                start.group(1))
            after = nb.cells[end + 1] if end + 1 < len(nb.cells) else None
            assert not (after and after.cell_type == "code"
                        and after.outputs), (
                f"{start.group(1)}: a cell after the solution prints its "
                "answer; fold it into the solution")
    slug = path.stem.split("_", 1)[1].replace("_", "-")
    assert all(label.startswith(f"ex-{slug}-") for label in labels), labels
    assert len(set(labels)) == len(labels), labels
    assert set(solved) <= set(labels), solved


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
    assert any(c.cell_type == "markdown" and ":::{solution-start}" in c.source
               for c in nb.cells)


def test_every_chapter_is_in_the_table_of_contents():
    toc = (ROOT / "_toc.yml").read_text()
    for path in NOTEBOOKS:
        assert f"book/{path.stem}" in toc, path.name


def test_every_device_cell_picks_cuda_when_it_is_available(notebook):
    """A GPU run (tools/gpu_run.py) checks once per kernel that the kernel
    sees CUDA; a cell that picks its device must then take cuda, in the one
    form by which the runner finds the chapters with a GPU path."""
    import gpu_run

    _, nb = notebook
    for cell in code_cells(nb):
        for line in cell.source.splitlines():
            if re.match(r"device\s*=", line):  # a top-level choice
                assert gpu_run.DEVICE_PICK.fullmatch(
                    line.split("=", 1)[1].strip()), line


def test_a_phone_drawing_is_folded_in_jupyterlab(notebook):
    # the narrow twin of a wide figure (class phone-figure) shows on the
    # site at <= 700 px only; in JupyterLab its output starts folded, so a
    # reader running the notebook meets each figure once
    _, nb = notebook
    unfolded = [c.get("id") for c in code_cells(nb)
                if c.metadata.get("mystnb", {}).get("image", {})
                .get("classes") == "phone-figure"
                and not c.metadata.get("jupyter", {}).get("outputs_hidden")]
    assert not unfolded, unfolded
