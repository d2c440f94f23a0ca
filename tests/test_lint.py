"""ruff, configured in pyproject.toml, finds nothing in the project's
Python: tools/, tests/, the site extension, helpers.py, the benchmarks and
the generated package (a finding there is fixed in its export cell). And
the machinery that builds, tests and publishes the book stays the size of
a book's, not of a second project (issue 36)."""
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    ruff = Path(sys.executable).with_name("ruff")
    ruff = str(ruff) if ruff.exists() else shutil.which("ruff")
    assert ruff, "ruff is not installed: run `python3 tools/dev.py setup`"
    done = subprocess.run([ruff, "check", "--no-cache", "--output-format",
                           "concise", "."], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# Everything but the book (the chapters' package and helpers), the
# benchmarks and the behaviour tests: tools/, site/, the site's and the
# GPU's test support, the conftests. Counted as `wc -l` counts.
MACHINERY_CAP = 4500
NOT_MACHINERY = re.compile(r"book/mininn/|book/helpers\.py$|benchmarks/"
                           r"|tests/test_[^/]*\.py$")


def test_the_machinery_stays_within_its_cap():
    listed = subprocess.run(["git", "ls-files", "*.py", "*.js"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    counts = {name: len((ROOT / name).read_text().splitlines())
              for name in listed.stdout.split()
              if not NOT_MACHINERY.match(name) and (ROOT / name).exists()}
    biggest = sorted(counts.items(), key=lambda item: -item[1])[:8]
    assert sum(counts.values()) <= MACHINERY_CAP, (
        f"{sum(counts.values())} lines of machinery, the cap is "
        f"{MACHINERY_CAP}; the largest files: {biggest}")


def test_the_longest_first_order_names_files_that_exist():
    # conftest.py's scheduling table: a renamed file would quietly lose its
    # early start (and the run its balance on two cores)
    spec = importlib.util.spec_from_file_location("root_conftest",
                                                  ROOT / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    names = list(conftest.LONGEST_FIRST)
    assert len(names) > 10
    assert [n for n in names if not (ROOT / n).is_file()] == []
