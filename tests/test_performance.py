"""Chapter 10's grouped loader gives the answers torch gives: every
`load_state_dict` test of chapter 7 (tests/test_state_dict.py) and of the
property-based parity suite (tests/test_properties.py) runs again here, on
torch.nn and on mininn, with mininn loading through `_load_tree_grouped`.

Chapter 10 exports nothing, so the loader comes from the notebook itself:
the test executes the cell that defines it (found by its id; the cell
imports what it needs) and uses the cell's own `grouped_loading()`. That
way the test checks the code the page prints, not a copy that could drift
from it, and a missing or renamed cell fails here loudly.
"""
import inspect
from pathlib import Path

import nbformat
import pytest

import mininn.state
import test_properties
import test_state_dict

NOTEBOOK = Path(__file__).resolve().parent.parent / "book/10_performance.ipynb"
GROUPED_CELL = "2dd558ec"


def run_cell(path, cell_id):
    """The namespace left by executing one code cell of a notebook."""
    cells = [c for c in nbformat.read(path, as_version=4).cells
             if c.get("id") == cell_id]
    assert len(cells) == 1, f"no cell {cell_id} in {path.name}"
    namespace = {"__name__": f"{path.stem}_{cell_id}"}
    exec(compile(cells[0].source, f"{path.name}:{cell_id}", "exec"), namespace)
    return namespace


CHAPTER = run_cell(NOTEBOOK, GROUPED_CELL)


@pytest.fixture(autouse=True, scope="module")
def grouped_loader():
    # Module scope: hypothesis refuses function-scoped fixtures with @given
    with CHAPTER["grouped_loading"]():
        yield


def loads_state_dicts(test):
    return "load_state_dict" in inspect.getsource(test)


# Collected again in this module, so the fixture above is in force for them
AGAIN = {}
for _module in (test_state_dict, test_properties):
    for _name, _test in vars(_module).items():
        if (_name.startswith("test_") and inspect.isfunction(_test)
                and loads_state_dicts(_test)):
            assert _name not in globals(), _name
            globals()[_name] = _test
            AGAIN.setdefault(_module.__name__, []).append(_name)


def test_the_grouped_loader_is_the_one_in_force():
    assert mininn.state._load_tree is CHAPTER["_load_tree_grouped"]


def test_the_suites_load_state_dict_tests_run_here_again():
    # chapter 7's slicing, strict, assign, hook and metadata tests, and the
    # property suite's random trees
    assert len(AGAIN["test_state_dict"]) >= 30, AGAIN
    assert len(AGAIN["test_properties"]) >= 2, AGAIN


def startswith_calls(nn, layers):
    """str.startswith calls of one load_state_dict of `layers` Linears."""
    calls = []

    class Key(str):
        def startswith(self, prefix, *args):
            calls.append(prefix)
            return super().startswith(prefix, *args)

    model = nn.Sequential(*[nn.Linear(1, 1) for _ in range(layers)])
    model.load_state_dict({Key(k): v for k, v in model.state_dict().items()})
    return len(calls)


def test_the_grouped_loader_does_linear_work_in_the_children(both):
    # torch's per-child filter scans all 2n keys for each of n children
    real, mini = both
    assert startswith_calls(mini, 40) == 2 * startswith_calls(mini, 20)
    assert startswith_calls(real, 40) > 3 * startswith_calls(real, 20)
