"""ruff, configured in pyproject.toml, finds nothing in the project's
Python: tools/, tests/, the site extension, helpers.py, the benchmarks and
the generated package (a finding there is fixed in its export cell)."""
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
