"""Chapter 9's run record for tools/gpu_check.py (issue 18), and the
claims of the pages around it that no cell can prove: the intro is prose,
so its count of a Module's dictionaries is checked here against torch, and
what the intro and chapter 9 say about GPU runs against book/gpu-runs/.

When MININN_RUN_RECORD names a file, the capstone appends one line per twin
of its training run, "<label> <sha256 of the losses' float32 bytes>", so
that gpu_check can compare three runs on a GPU and the twins within each.
The test executes the notebook's own cell (found by its id) on made-up
losses, so it checks the code the notebook runs, not a copy.
"""
import hashlib
import os
import sys
from collections import OrderedDict
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "book/09_capstone.ipynb"
INTRO = ROOT / "book/intro.md"
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


# --------------------------------------------------------------------------
# The intro's claims, which a prose page cannot run.

FLAG_TABLES = ["_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks_with_kwargs"]


def prose(text):
    return " ".join(text.split())


@pytest.mark.parametrize("lib", ["torch.nn", "mininn"])
def test_a_module_has_three_dicts_and_eleven_ordered_dicts(lib):
    import mininn
    nn = torch.nn if lib == "torch.nn" else mininn
    state = vars(nn.Module())
    plain = [k for k, v in state.items() if type(v) is dict]
    ordered = [k for k, v in state.items() if type(v) is OrderedDict]
    assert plain == ["_parameters", "_buffers", "_modules"]
    assert len(ordered) == 11
    assert [k for k in ordered if k in FLAG_TABLES] == FLAG_TABLES
    hooks = [k for k in ordered if k not in FLAG_TABLES]
    assert len(hooks) == 8 and all(k.endswith("_hooks") for k in hooks)
    # the three flag tables hold a flag per hook id, not a hook
    module = nn.Module()
    module.register_forward_hook(lambda *a: None, with_kwargs=True,
                                 always_call=True)
    module.register_forward_pre_hook(lambda *a: None, with_kwargs=True)
    assert all(list(getattr(module, k).values()) == [True]
               for k in FLAG_TABLES)
    assert all(callable(h) for k in hooks for h in getattr(module, k).values())


def test_the_intro_counts_the_dictionaries_as_torch_makes_them():
    text = prose(INTRO.read_text())
    assert "three plain `dict`s, `_parameters`, `_buffers` and `_modules`" in text
    assert ("eleven `OrderedDict`s: eight tables of {term}`hooks <hook>`, one "
            "per kind, and three tables of flags") in text


def test_the_pages_say_no_gpu_run_only_while_none_is_recorded():
    # "No GPU run has been recorded yet" must go from the intro and chapter
    # 9 the day tools/gpu_check.py records one in book/gpu-runs/.
    sys.path.insert(0, str(ROOT / "tools"))
    import gpu_check
    recorded = bool(gpu_check.reports_in(gpu_check.REPORTS))
    chapter = " ".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4)
                       .cells if c.cell_type == "markdown")
    for name, text in [("intro.md", INTRO.read_text()),
                       (NOTEBOOK.name, chapter)]:
        text = prose(text)
        says_none = "No GPU run has been recorded yet" in text
        assert says_none != recorded, (
            f"{name}: a GPU run is recorded in book/gpu-runs/; say so"
            if recorded else f"{name}: say plainly that no GPU run is recorded")
        assert "[GPU runs](gpu_runs.md)" in text, f"{name}: link the record"
