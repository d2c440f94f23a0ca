"""Chapter 9 on a GPU: its training, run three times in fresh processes by
the chapter's own cells, gives the same loss bits every time, and the
mininn twin the same as the torch.nn twin."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
BOOK = Path(__file__).parents[2] / "book"
VERDICT = "46e4b448"  # the cell that compares the twins' 50 losses

# The chapter's code cells up to the verdict, then a SHA-256 of each
# twin's losses (float32 bytes, in step order): equal hashes, equal bits.
TRAIN = """
import hashlib, json, sys
cells = json.load(open(sys.argv[1], encoding="utf-8"))["cells"]
scope = {}
for cell in cells:
    if cell["cell_type"] == "code":
        exec(compile("".join(cell["source"]), cell["id"], "exec"), scope)
        if cell["id"] == sys.argv[2]:
            break
else:
    sys.exit(f"no cell {sys.argv[2]}")
hashes = {name: hashlib.sha256(scope["torch"].stack(losses).cpu().numpy()
                               .tobytes()).hexdigest()
          for name, losses in scope["losses"].items()}
print(json.dumps({"device": scope["device"].type, **hashes}))
"""


@pytest.fixture(scope="module")
def runs():
    """Three runs of chapter 9's training, each in a fresh process."""
    return [json.loads(subprocess.run(
        [sys.executable, "-c", TRAIN, str(BOOK / "09_capstone.ipynb"),
         VERDICT], cwd=BOOK, env={**os.environ, "MPLBACKEND": "Agg"},
        capture_output=True, text=True, check=True).stdout.splitlines()[-1])
        for _ in range(3)]


def test_the_capstone_trains_on_the_gpu(runs):
    assert [run["device"] for run in runs] == ["cuda"] * 3


def test_the_twins_have_the_same_loss_bits_in_every_run(runs):
    assert all(run["mininn"] == run["torch.nn"] for run in runs), runs


def test_three_runs_have_the_same_loss_bits(runs, record_property):
    record_property("loss hashes", ", ".join(run["mininn"][:12]
                                             for run in runs))
    assert runs[1] == runs[0] and runs[2] == runs[0], runs
