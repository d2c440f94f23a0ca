"""Chapter 10's grouped loader gives the answers torch gives: every
`load_state_dict` test of chapter 7 (tests/test_state_dict.py) and of the
property-based parity suite (tests/test_properties.py) runs again here, on
torch.nn and on mininn, with mininn loading through `_load_tree_grouped`.
They take part by their mark, `@pytest.mark.loads_state_dict`: this
module binds them into its own namespace, so pytest collects them again.

Chapter 10 exports nothing, so the loader comes from the notebook itself:
the test executes the cell that defines it (found by its id; the cell
imports what it needs) and uses the cell's own `grouped_loading()`. That
way the test checks the code the page prints, not a copy that could drift
from it, and a missing or renamed cell fails here loudly.
"""
import ast
import inspect
import sys
import textwrap
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


RERUN = (test_state_dict, test_properties)


def test_the_grouped_loader_is_the_one_in_force():
    assert mininn.state._load_tree is CHAPTER["_load_tree_grouped"]


def marked(module):
    """The names of the tests of `module` marked loads_state_dict."""
    return [name for name, test in vars(module).items()
            if name.startswith("test_") and "loads_state_dict" in {
                m.name for m in getattr(test, "pytestmark", [])}]


# Every test marked loads_state_dict in RERUN is collected again here (pytest
# collects the tests a module holds), so the fixture above is in force for it.
for _module in RERUN:
    assert not set(marked(_module)) & set(globals()), "a name is taken here"
    globals().update({name: getattr(_module, name) for name in marked(_module)})


def test_the_suites_load_state_dict_tests_run_here_again():
    # chapter 7's slicing, strict, assign, hook and metadata tests, and the
    # property suite's random trees, bound here
    here = sys.modules[__name__]
    for module, least in [(test_state_dict, 49), (test_properties, 2)]:
        names = marked(module)
        assert len(names) >= least, names
        assert all(getattr(here, name) is getattr(module, name)
                   for name in names)


def calls_load_state_dict(function):
    """Whether a test's own code calls .load_state_dict (read with ast)."""
    source = textwrap.dedent(inspect.getsource(inspect.unwrap(function)))
    return any(isinstance(node, ast.Attribute)
               and node.attr == "load_state_dict"
               for node in ast.walk(ast.parse(source)))


@pytest.mark.parametrize("module", RERUN,
                         ids=lambda m: m.__name__)
def test_every_test_that_loads_a_state_dict_is_marked(module):
    # The wiring is the mark; this keeps a new loading test from being
    # left out of chapter 10's re-run by a forgotten mark.
    unmarked = [name for name, test in vars(module).items()
                if name.startswith("test_") and inspect.isfunction(test)
                and calls_load_state_dict(test)
                and name not in marked(module)]
    assert unmarked == [], "mark each @pytest.mark.loads_state_dict"


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
