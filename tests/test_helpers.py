"""The book's small helpers (book/helpers.py) do what the chapters rely on."""
import matplotlib

matplotlib.use("Agg")

import builtins  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from helpers import (  # noqa: E402
    compare_errors, copy_weights, draw_module_tree, error_of, inch_axes,
    rounded, same_tensors, table,
)


def test_error_of_names_the_type_and_message():
    assert error_of(int, "x") == (
        "ValueError: invalid literal for int() with base 10: 'x'"
    )


def test_error_of_returns_none_when_nothing_raises():
    assert error_of(int, "3") is None


def test_table_aligns_columns_and_cuts_long_cells(capsys):
    table(["a", "bb"], [["xxx", "y" * 20]], width=10)
    assert capsys.readouterr().out.splitlines() == [
        "a    bb", "---  ----------", "xxx  yyyyyyy...",
    ]


def test_compare_errors_passes_when_both_raise_alike(capsys):
    cases = {"bad int": lambda backend: backend.int("x")}
    compare_errors(cases, builtins, builtins)
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["bad", "input", "torch.nn", "and", "mininn",
                              "both", "raise"]
    assert out[2].split()[:4] == ["bad", "int", "ValueError:", "invalid"]


def test_compare_errors_fails_when_messages_differ():
    class Strict:
        @staticmethod
        def int(text):
            raise ValueError("no")

    cases = {"bad int": lambda backend: backend.int("x")}
    with pytest.raises(AssertionError, match="bad int"):
        compare_errors(cases, Strict, __builtins__)


def test_compare_errors_fails_when_torch_accepts_the_input():
    cases = {"fine": lambda backend: None}
    with pytest.raises(AssertionError, match="torch accepted"):
        compare_errors(cases, None, None)


def test_rounded_prints_values_far_from_a_rounding_boundary():
    assert rounded(1.5520474910736084, 4) == "1.5520"
    assert rounded(torch.tensor(0.26), 1) == "0.3"
    assert rounded(-2.0, 3) == "-2.000"


def test_rounded_refuses_a_value_one_ulp_from_flipping():
    # the float32 loss of issue 11: 1.552047|49 sits next to ...0475
    with pytest.raises(AssertionError, match="rounding boundary"):
        rounded(1.5520474910736084, 6)
    with pytest.raises(AssertionError, match="rounding boundary"):
        rounded(torch.tensor(0.25), 1)  # an exact tie


def test_copy_weights_makes_two_models_equal():
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    assert not same_tensors(a.named_parameters(), b.named_parameters())
    copy_weights(a, b)
    assert same_tensors(a.named_parameters(), b.named_parameters())


def test_copy_weights_refuses_different_shapes():
    with pytest.raises(AssertionError, match="weight"):
        copy_weights(torch.nn.Linear(3, 2), torch.nn.Linear(2, 2))


def test_same_tensors_sees_a_different_name():
    t = torch.zeros(2)
    assert not same_tensors([("a", t)], [("b", t)])


def test_draw_module_tree_draws_one_box_per_module_in_walk_order():
    net = torch.nn.Sequential(torch.nn.Linear(2, 2),
                              torch.nn.Sequential(torch.nn.ReLU()))
    numbers = {"": "1", "0": "2", "1": "3", "1.0": "4"}
    ax = draw_module_tree(inch_axes(4, 2), net, numbers)
    labels = [t.get_text() for t in ax.texts]
    assert labels == ["root: Sequential", "1", "0: Linear", "2",
                      "1: Sequential", "3", "0: ReLU", "4"]
    boxes = {t.get_text(): t.get_position() for t in ax.texts}
    # a child sits right of its parent; leaves go down in pre-order
    assert boxes["0: ReLU"][0] > boxes["1: Sequential"][0]
    assert boxes["1: Sequential"][0] > boxes["root: Sequential"][0]
    assert boxes["0: Linear"][1] > boxes["0: ReLU"][1]
    matplotlib.pyplot.close("all")
