"""The claims of the pages around chapter 9 that no cell can prove: the
intro is prose, so its count of a Module's dictionaries is checked here
against torch, and what the intro and chapter 9 say about GPU runs against
reports/gpu/. (Chapter 9 on a GPU: tests/gpu/test_gpu_capstone.py.)
"""
from collections import OrderedDict
from pathlib import Path

import nbformat
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "book/09_capstone.ipynb"
INTRO = ROOT / "book/intro.md"


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
    # "No GPU run has been recorded yet" must go from the intro, chapter 9
    # and the GPU runs page the day tools/gpu_run.py records one in
    # reports/gpu/; the page then links each report.
    import gpu_run
    reports = gpu_run.recorded()
    chapter = " ".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4)
                       .cells if c.cell_type == "markdown")
    page = (ROOT / "book/gpu_runs.md").read_text()
    for name, text in [("intro.md", INTRO.read_text()),
                       (NOTEBOOK.name, chapter), ("gpu_runs.md", page)]:
        text = prose(text)
        says_none = "No GPU run has been recorded yet" in text
        assert says_none != bool(reports), (
            f"{name}: a GPU run is recorded in reports/gpu/; say so"
            if reports else f"{name}: say plainly that no GPU run is recorded")
        if name != "gpu_runs.md":
            assert "[GPU runs](gpu_runs.md)" in text, f"{name}: link it"
    assert all(report.name in page for report in reports), "list each run"
