"""The execution-status table (book/gpu_runs.md, site/execution_status.py)
tells the truth about the notebooks as they are: reports/execution.json,
written by `python3 tools/dev.py outputs`, has a line for every chapter,
with its code cells as the notebook holds them now and every cell run."""
import json

import nbformat
import pytest

from checks import CHAPTERS, EDITIONS, ROOT, source_of

RECORD = ROOT / "reports" / "execution.json"


def test_every_chapter_has_a_record_of_its_last_run():
    runs = json.loads(RECORD.read_text(encoding="utf-8"))
    notebooks = [source_of(d).name for d in CHAPTERS]
    assert sorted(runs) == sorted(notebooks)
    for name in notebooks:
        cells = nbformat.read(ROOT / "book" / name, as_version=4).cells
        code = sum(c.cell_type == "code" for c in cells)
        run = runs[name]
        assert run["code_cells"] == code, (
            f"{name} has {code} code cells, its record {run['code_cells']}: "
            f"run `python3 tools/dev.py outputs book/{name}`")
        assert run["status"] == "passed", f"{name}: a cell failed"
        assert run["seconds"] > 0 and run["torch"].startswith("2.13.0")


@pytest.mark.site
@pytest.mark.parametrize("edition", EDITIONS)
def test_the_status_page_shows_every_chapter_with_its_record(site, edition):
    page = (EDITIONS[edition] / "book" / "gpu_runs.html").read_text(
        encoding="utf-8")
    table = page.partition("<table")[2].partition("</table>")[0]
    runs = json.loads(RECORD.read_text(encoding="utf-8"))
    rows = table.split("<tr")[2:]  # after the header
    assert len(rows) == len(runs)
    for row, (name, run) in zip(rows, sorted(runs.items())):
        assert f'href="{name.removesuffix(".ipynb")}.html"' in row
        assert f">{run['code_cells']}<" in row and run["date"] in row
