"""The package book/mininn/ is generated from the notebooks and must never
drift from them: re-export into a temporary folder and compare every file."""
import filecmp
import importlib
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
    source = (PACKAGE / "__init__.py").read_text()
    line = next(s for s in source.splitlines() if s.startswith("CHAPTERS ="))
    return eval(line.split("=", 1)[1])  # a literal list of names


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


@pytest.mark.parametrize("position", range(5))
def test_importing_a_chapter_does_not_import_later_ones(position):
    order = chapters()
    if position + 1 >= len(order):
        pytest.skip("no later chapter")
    loaded = run_in_book(
        f"import sys, mininn.{order[position]}; "
        "print(sorted(m for m in sys.modules if m.startswith('mininn.')))"
    )
    assert eval(loaded) == sorted(f"mininn.{c}" for c in order[: position + 1])


def test_package_root_hands_out_the_finished_module():
    loaded = run_in_book(
        "import sys, mininn; mininn.Module; "
        "print(sorted(m for m in sys.modules if m.startswith('mininn.')))"
    )
    assert eval(loaded) == sorted(f"mininn.{c}" for c in chapters())


def test_package_root_rejects_unknown_names():
    out = run_in_book(
        "import mininn\n"
        "try:\n    mininn.Nope\n"
        "except AttributeError as e:\n    print(e)"
    )
    assert out == "module 'mininn' has no attribute 'Nope'"
