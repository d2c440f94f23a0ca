"""What a reader downloads: the runnable zip (unzipped into an empty folder,
and chapter 1 run from it), the Chinese edition's zip (its prose Chinese,
its code the English zip's), the workbook, a chapter's notebook alone
(which says what it needs), the licences beside the pages."""
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

import book_zip
from checks import CHAPTERS, EDITIONS, ROOT, page_id, source_of

pytestmark = pytest.mark.site

# Run chapter 1 of the unzipped book with nbclient, with one more cell that
# says where the kernel found the book's imports.
RUN_CHAPTER_ONE = r"""
import json, os, sys
import nbformat
from nbclient import NotebookClient

book = sys.argv[1]
nb = nbformat.read(os.path.join(book, "01_registration.ipynb"), as_version=4)
code = sum(cell.cell_type == "code" for cell in nb.cells)
nb.cells.append(nbformat.v4.new_code_cell(
    "import helpers, mininn, os\n"
    "print(os.path.dirname(helpers.__file__))\n"
    "print(os.path.dirname(mininn.__file__))"))
NotebookClient(nb, kernel_name="python3", timeout=300,
               resources={"metadata": {"path": book}}).execute()
ran = sum(cell.cell_type == "code" and cell.execution_count is not None
          for cell in nb.cells[:-1])
print(json.dumps({"code_cells": code, "ran": ran,
                  "imports_from": nb.cells[-1].outputs[0]["text"].split()}))
"""


def test_zip_holds_the_runnable_book(site):
    # The notebooks are the book's own, outputs and all; the package is
    # every module of book/mininn/.
    with zipfile.ZipFile(EDITIONS["en"] / book_zip.ZIP_NAME) as archive:
        names = archive.namelist()
        inside = {n.partition("/")[2]: n for n in names}
        for docname in CHAPTERS:
            assert archive.read(inside[docname + ".ipynb"]) == (
                source_of(docname).read_bytes()), docname
        readme = archive.read(inside["README.md"]).decode()
        reader = archive.read(inside["requirements-reader.txt"]).decode()
    assert len({n.partition("/")[0] for n in names}) == 1, "one folder"
    package = {f"book/mininn/{p.name}"
               for p in (ROOT / "book" / "mininn").glob("*.py")}
    assert package <= set(inside), package - set(inside)
    for wanted in ("README.md", "requirements.txt", "book/helpers.py",
                   "benchmarks/bench.py", "LICENSE", "LICENSE-text"):
        assert wanted in inside, wanted
    # A reader installs the CPU-only torch (on Linux) before the pins,
    # and the reader's pins, at the versions of requirements.txt.
    assert readme.index("download.pytorch.org/whl/cpu") < readme.index(
        "pip install -r requirements-reader.txt")
    pins = dict(line.split("==") for line in reader.splitlines()
                if "==" in line)
    assert sorted(pins) == sorted(book_zip.READER_PACKAGES)
    ours = (ROOT / "requirements.txt").read_text().splitlines()
    assert all(f"{name}=={version}" in ours for name, version in pins.items())
    assert f"Python {book_zip.TESTED_PYTHONS}" in readme


def zipped(edition):
    """{path inside the zip's folder: bytes} of an edition's zip."""
    with zipfile.ZipFile(EDITIONS[edition] / book_zip.ZIP_NAME) as archive:
        return {n.partition("/")[2]: archive.read(n)
                for n in archive.namelist()}


CHINESE = re.compile(r"[\u4e00-\u9fff]")


def test_the_chinese_zip_is_the_english_one_with_chinese_prose(site):
    english, chinese = zipped("en"), zipped("zh")
    assert english.keys() == chinese.keys()
    pages = {n for n in english if n.startswith("book/")
             and n.endswith(".md")}  # intro, glossary, ...
    assert {"book/intro.md", "book/glossary.md"} <= pages
    prose = pages | {"README.md"} | {f"{d}.ipynb" for d in CHAPTERS}
    for name in english.keys() - prose:  # the package, helpers, licences
        assert english[name] == chinese[name], name
    for name in prose - {f"{docname}.ipynb" for docname in CHAPTERS}:
        text = chinese[name].decode()
        assert len(CHINESE.findall(text)) > len(text) / 5, name
    readme = chinese["README.md"].decode()
    assert readme.index("download.pytorch.org/whl/cpu") < readme.index(
        "pip install -r requirements-reader.txt")
    for docname in CHAPTERS:
        en, zh = (nbformat.reads(z[f"{docname}.ipynb"], as_version=4)
                  for z in (english, chinese))
        assert [(c.cell_type, c.source, c.get("outputs")) for c in en.cells
                if c.cell_type == "code"] == [
            (c.cell_type, c.source, c.get("outputs")) for c in zh.cells
            if c.cell_type == "code"], docname
        prose_cells = [c.source for c in zh.cells if c.cell_type == "markdown"
                       and re.search(r"(?m)^(?![:`]).*[A-Za-z\u4e00-\u9fff]",
                                     c.source)]  # not only ::: markers
        in_chinese = [s for s in prose_cells if CHINESE.search(s)]
        # the rest are headings that are names (## Conv2d)
        assert len(in_chinese) >= 0.9 * len(prose_cells) > 10, docname


def test_chapter_one_runs_from_the_zip_in_an_empty_folder(site, tmp_path):
    # The Chinese zip's: its code and every file it imports are the
    # English zip's (the test above), so one run proves both.
    with zipfile.ZipFile(EDITIONS["zh"] / book_zip.ZIP_NAME) as archive:
        archive.extractall(tmp_path)
    (top,) = tmp_path.iterdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", RUN_CHAPTER_ONE, str(top / "book")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["ran"] == report["code_cells"] > 0
    # The kernel found the book's imports in the unzipped folder.
    for where in report["imports_from"]:
        assert Path(where).resolve().is_relative_to(tmp_path.resolve())


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("docname", CHAPTERS, ids=page_id)
def test_a_chapter_downloaded_alone_says_what_it_needs_once(site, edition,
                                                            docname):
    # Its first cell; once, though the Chinese build in these tests is
    # incremental (a page it did not write again kept its note).
    alone = nbformat.read(EDITIONS[edition] / "_sources" / (
        docname + ".ipynb"), as_version=4)
    notes = [i for i, cell in enumerate(alone.cells)
             if "downloaded-alone" in cell.metadata.get("tags", [])]
    assert notes == [0]
    first = alone.cells[0]
    assert first.cell_type == "markdown" and book_zip.ZIP_NAME in first.source
    assert "cannot run" in first.source
    source = nbformat.read(source_of(docname), as_version=4)
    assert [c.source for c in alone.cells[1:]] == [
        c.source for c in source.cells]


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_workbook_is_beside_the_zip(site, edition):
    # tools/workbook.py made it; tests/test_workbook.py runs its checks
    with zipfile.ZipFile(EDITIONS[edition] / book_zip.WORKBOOK_NAME) as wb:
        names = {n.partition("/")[2] for n in wb.namelist()}
        chapter = wb.read(f"{book_zip.WORKBOOK_NAME[:-4]}/book/"
                          "02_traversal.ipynb").decode()
    assert {"README.md", "book/workbook.py", "book/checks.json",
            "book/01_registration.ipynb", "book/08_checkpoints.ipynb",
            "book/tests/test_traversal.py", "book/mininn/__init__.py"} <= names
    assert "check('named_modules')" in chapter
    assert "raise NotImplementedError('named_modules')" in chapter


@pytest.mark.parametrize("edition", EDITIONS)
def test_licences_are_in_the_repository_and_beside_the_pages(site, edition):
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "CC BY-SA 4.0" in (ROOT / "LICENSE-text").read_text()
    for source, published in zip(("LICENSE", "LICENSE-text"),
                                 book_zip.LICENCE_FILES):
        assert (EDITIONS[edition] / published).read_bytes() == (
            ROOT / source).read_bytes()
