"""The package book/mininn/ is generated from the notebooks and must never
drift from them: re-export into a temporary folder and compare every file."""
import ast
import filecmp
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import export

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
PACKAGE = BOOK / "mininn"


@pytest.fixture(scope="module")
def fresh_export(tmp_path_factory):
    """The package as the notebooks export it now, in a temporary folder."""
    folder = tmp_path_factory.mktemp("fresh")
    export.export(folder)
    return folder


def stale_files(package, fresh):
    """Names of files that differ between `package` and a fresh export."""
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


def test_package_is_exactly_what_the_notebooks_export(fresh_export):
    assert stale_files(PACKAGE, fresh_export) == [], "run `make export`"


def test_a_hand_edit_of_the_package_is_caught(fresh_export, tmp_path):
    copy = tmp_path / "mininn"
    shutil.copytree(PACKAGE, copy)
    with open(copy / "registration.py", "a") as f:
        f.write("# edited by hand\n")
    (copy / "orphan.py").write_text("")
    assert stale_files(copy, fresh_export) == ["orphan.py", "registration.py"]


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
# imported once, for the book's package and for a planted copy): before
# each import every mininn module is dropped from sys.modules and the
# package's folder put first on sys.path, so each import starts from
# nothing, as in a new process.
PROBE = """
import importlib, json, sys
import torch

def fresh(folder):
    for key in [k for k in sys.modules if k.split(".")[0] == "mininn"]:
        del sys.modules[key]
    sys.path[0] = folder
    importlib.invalidate_caches()

def loaded(folder, name):
    fresh(folder)
    importlib.import_module(name)
    if name == "mininn":
        sys.modules["mininn"].Module  # the lazy root finishes the Module
    return sorted(m for m in sys.modules if m.startswith("mininn."))

def unknown_name(folder):
    fresh(folder)
    import mininn
    try:
        mininn.Nope
    except AttributeError as e:
        return str(e)

jobs = json.loads(sys.argv[1])
print(json.dumps({
    "loaded": [loaded(folder, name) for folder, name in jobs["loaded"]],
    "unknown_name": unknown_name(jobs["unknown_name"]),
}))
"""


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """The probe's answers: what each chapter import loads from book/, what
    the first chapter loads from a copy where it imports the last one, and
    the root's error for an unknown name."""
    planted = tmp_path_factory.mktemp("planted")
    shutil.copytree(PACKAGE, planted / "mininn")
    first, last = chapters()[0], chapters()[-1]
    with open(planted / "mininn" / f"{first}.py", "a") as f:
        f.write(f"\nimport mininn.{last}  # planted\n")
    names = [f"mininn.{c}" for c in chapters()] + ["mininn"]
    jobs = {"loaded": [[str(BOOK), name] for name in names]
            + [[str(planted), f"mininn.{first}"]],
            "unknown_name": str(BOOK)}
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(jobs)],
                         cwd=BOOK, capture_output=True, text=True, check=True)
    answers = json.loads(out.stdout)
    *book, planted_first = answers["loaded"]
    return dict(zip(names, book)), planted_first, answers["unknown_name"]


@pytest.fixture(scope="module")
def imports(probed):
    """{import name: mininn chapter modules it loaded}."""
    return probed[0]


@pytest.mark.parametrize("position", range(len(chapters())))
def test_importing_a_chapter_does_not_import_later_ones(imports, position):
    order = chapters()
    assert imports[f"mininn.{order[position]}"] == sorted(
        f"mininn.{c}" for c in order[: position + 1])


def test_the_probe_sees_a_chapter_that_imports_a_later_one(probed):
    """The import check can fail: a chapter that reaches forward is seen."""
    assert f"mininn.{chapters()[-1]}" in probed[1]


def test_package_root_hands_out_the_finished_module(imports):
    assert imports["mininn"] == sorted(f"mininn.{c}" for c in chapters())


def test_package_root_rejects_unknown_names(probed):
    assert probed[2] == "module 'mininn' has no attribute 'Nope'"


def test_no_chapter_file_outgrows_a_reader():
    """Each file of the package is one chapter's code, read in one sitting:
    a chapter that needs more than 600 lines teaches more than Module."""
    sizes = {p.name: len(p.read_text().splitlines())
             for p in PACKAGE.glob("*.py")}
    assert max(sizes.values()) <= 600, sizes
