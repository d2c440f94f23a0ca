"""The package book/mininn/ is generated from the notebooks and must never
drift from them: re-export into a temporary folder and compare every file."""
import ast
import filecmp
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
PACKAGE = BOOK / "mininn"
sys.path.insert(0, str(ROOT / "tools"))
export = importlib.import_module("export")


def stale_files(package, tmp_path):
    """Names of files that differ between `package` and a fresh export."""
    fresh = tmp_path / "fresh"
    export.export(fresh)
    names = {p.name for p in package.glob("*.py")}
    names |= {p.name for p in fresh.glob("*.py")}
    return sorted(
        name for name in names
        if not (package / name).exists() or not (fresh / name).exists()
        or not filecmp.cmp(package / name, fresh / name, shallow=False)
    )


def chapters():
    """The chapter modules, in book order, as the generated root lists them."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    return next(ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", "") == "CHAPTERS")


def run_in_book(code):
    out = subprocess.run([sys.executable, "-c", code], cwd=BOOK,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_package_is_exactly_what_the_notebooks_export(tmp_path):
    assert stale_files(PACKAGE, tmp_path) == [], "run `make export`"


def test_a_hand_edit_of_the_package_is_caught(tmp_path):
    copy = tmp_path / "mininn"
    shutil.copytree(PACKAGE, copy)
    with open(copy / "registration.py", "a") as f:
        f.write("# edited by hand\n")
    (copy / "orphan.py").write_text("")
    assert stale_files(copy, tmp_path) == ["orphan.py", "registration.py"]


def test_every_generated_file_names_its_notebook():
    for path in PACKAGE.glob("*.py"):
        if path.name == "__init__.py":
            continue
        banner = path.read_text().splitlines()[0]
        notebook = banner.split("book/")[1].split()[0].rstrip(".")
        assert (BOOK / notebook).exists(), (path.name, notebook)


def test_chapters_are_listed_in_book_order():
    notebooks = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
    modules = [export.exported(nb) for nb in notebooks]
    assert chapters() == [name for name, source in modules if source]
    assert chapters()[0] == "registration"  # where Module is born


# What each import loads, measured in ONE fresh interpreter (torch is
# imported once): before each import every mininn module is dropped from
# sys.modules, so each import starts from nothing, as in a new process.
PROBE = """
import importlib, json, sys
import torch

def loaded(name):
    for key in [k for k in sys.modules if k.split(".")[0] == "mininn"]:
        del sys.modules[key]
    importlib.import_module(name)
    if name == "mininn":
        sys.modules["mininn"].Module  # the lazy root finishes the Module
    return sorted(m for m in sys.modules if m.startswith("mininn."))

names = json.loads(sys.argv[1])
print(json.dumps({name: loaded(name) for name in names}))
"""


@pytest.fixture(scope="module")
def imports():
    """{import name: mininn chapter modules it loaded}."""
    names = [f"mininn.{c}" for c in chapters()] + ["mininn"]
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(names)],
                         cwd=BOOK, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("position", range(len(chapters())))
def test_importing_a_chapter_does_not_import_later_ones(imports, position):
    order = chapters()
    assert imports[f"mininn.{order[position]}"] == sorted(
        f"mininn.{c}" for c in order[: position + 1])


def test_the_probe_sees_a_chapter_that_imports_a_later_one(tmp_path):
    """The import check can fail: a chapter that reaches forward is seen."""
    copy = tmp_path / "mininn"
    shutil.copytree(PACKAGE, copy)
    first, last = chapters()[0], chapters()[-1]
    with open(copy / f"{first}.py", "a") as f:
        f.write(f"\nimport mininn.{last}  # planted\n")
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([f"mininn.{first}"])],
        cwd=tmp_path, capture_output=True, text=True, check=True)
    assert f"mininn.{last}" in json.loads(out.stdout)[f"mininn.{first}"]


def test_package_root_hands_out_the_finished_module(imports):
    assert imports["mininn"] == sorted(f"mininn.{c}" for c in chapters())


def test_package_root_rejects_unknown_names():
    out = run_in_book(
        "import mininn\n"
        "try:\n    mininn.Nope\n"
        "except AttributeError as e:\n    print(e)"
    )
    assert out == "module 'mininn' has no attribute 'Nope'"


def test_no_chapter_file_outgrows_a_reader():
    """Each file of the package is one chapter's code, read in one sitting:
    a chapter that needs more than 600 lines teaches more than Module."""
    sizes = {p.name: len(p.read_text().splitlines())
             for p in PACKAGE.glob("*.py")}
    assert max(sizes.values()) <= 600, sizes
