"""Chapter 9's run record for tools/gpu_check.py (issue 18).

When MININN_RUN_RECORD names a file, the capstone appends one line per twin
of its training run, "<label> <sha256 of the losses' float32 bytes>", so
that gpu_check can compare three runs on a GPU and the twins within each.
The test executes the notebook's own cell (found by its id) on made-up
losses, so it checks the code the notebook runs, not a copy.
"""
import hashlib
import os
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

NOTEBOOK = Path(__file__).resolve().parent.parent / "book/09_capstone.ipynb"
RECORD_CELL = "0c9e5a7d"


def record_cell():
    cells = [c for c in nbformat.read(NOTEBOOK, as_version=4).cells
             if c.get("id") == RECORD_CELL]
    assert len(cells) == 1, f"no cell {RECORD_CELL} in {NOTEBOOK.name}"
    return compile(cells[0].source, f"{NOTEBOOK.name}:{RECORD_CELL}", "exec")


def run_record(losses):
    exec(record_cell(), {"os": os, "torch": torch, "losses": losses})


def sha256_of(values):
    return hashlib.sha256(np.array(values, dtype=np.float32).tobytes()).hexdigest()


def twins_losses(torch_values, mininn_values):
    return {"torch.nn": [torch.tensor(v) for v in torch_values],
            "mininn": [torch.tensor(v) for v in mininn_values]}


@pytest.fixture
def record(tmp_path, monkeypatch):
    path = tmp_path / "record.txt"
    monkeypatch.setenv("MININN_RUN_RECORD", str(path))
    return path


def test_the_record_is_one_line_per_twin_with_the_hash_of_its_losses(record):
    run_record(twins_losses([1.5, 0.25, 0.125], [1.5, 0.25, 0.125]))
    expected = sha256_of([1.5, 0.25, 0.125])
    assert record.read_text().splitlines() == [f"torch.nn {expected}",
                                               f"mininn {expected}"]


def test_each_run_appends_so_runs_can_be_compared(record):
    run_record(twins_losses([1.0, 0.5], [1.0, 0.5]))
    run_record(twins_losses([1.0, 0.5], [1.0, 0.5]))
    lines = record.read_text().splitlines()
    assert len(lines) == 4 and lines[:2] == lines[2:]


def test_one_bit_of_difference_changes_the_hash(record):
    nudged = float(np.nextafter(np.float32(0.5), np.float32(1)))
    run_record(twins_losses([1.0, 0.5], [1.0, nudged]))
    theirs, ours = (line.split() for line in record.read_text().splitlines())
    assert theirs[0] == "torch.nn" and ours[0] == "mininn"
    assert theirs[1] == sha256_of([1.0, 0.5]) != ours[1]


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv("MININN_RUN_RECORD", raising=False)
    monkeypatch.chdir(tmp_path)
    run_record(twins_losses([1.0], [1.0]))
    assert list(tmp_path.iterdir()) == []
