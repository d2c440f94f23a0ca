"""The book's small helpers (book/helpers.py) do what the chapters rely on."""
import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from helpers import (  # noqa: E402
    compare_errors, copy_weights, draw_module_tree, error_of, same_tensors,
    table,
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
    assert compare_errors(cases, __builtins__, __builtins__) == 1
    assert "bad int" in capsys.readouterr().out


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


def test_draw_module_tree_draws_one_box_per_module():
    net = torch.nn.Sequential(torch.nn.Linear(2, 2),
                              torch.nn.Sequential(torch.nn.ReLU()))
    ax = draw_module_tree(net, title="net")
    labels = [t.get_text() for t in ax.texts]
    assert labels == ["root\nSequential", "0\nLinear", "1\nSequential",
                      "0\nReLU"]
    assert ax.get_title() == "net"
    matplotlib.pyplot.close("all")
