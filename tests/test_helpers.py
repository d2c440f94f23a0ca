"""The book's small helpers (book/helpers.py) do what the chapters rely on."""
import matplotlib

matplotlib.use("Agg")

import ast
import base64
import builtins
import io
import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib import font_manager

import figures  # site/figures.py
import helpers
from helpers import (
    compare_errors, copy_weights, draw_module_tree, error_of, figure_text,
    inch_axes, rounded, same_tensors, table,
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


def test_draw_flows_draws_each_step_in_its_column_top_down():
    from helpers import draw_flows

    fig = draw_flows([("save", [("a", "#fff"), ("b", "#fff")]),
                      ("load", [("c", "#fff")])])
    left, right = fig.axes
    def words(ax):  # the arrows are empty texts
        return [t.get_text() for t in ax.texts if t.get_text()]

    assert words(left) == ["a", "b"] and words(right) == ["c"]
    assert left.get_title() == "save" and right.get_title() == "load"
    assert left.texts[0].get_position()[1] > left.texts[1].get_position()[1]
    assert len(left.texts) == 3  # two boxes, one arrow
    matplotlib.pyplot.close("all")


def test_draw_decision_map_puts_each_cure_right_of_its_problem():
    from helpers import draw_decision_map

    fig = draw_decision_map([("p1", "c1"), ("p2", "c2")], ("if", "then"))
    texts = {t.get_text(): t.get_position() for t in fig.axes[0].texts
             if t.get_text()}  # the arrows are empty texts
    assert list(texts) == ["if", "then", "p1", "c1", "p2", "c2"]
    assert texts["c1"][0] > texts["p1"][0] and texts["c1"][1] == texts["p1"][1]
    assert texts["p1"][1] > texts["p2"][1]  # rows go down in order
    matplotlib.pyplot.close("all")


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/maps"),
                    reason="/proc/self/maps is Linux's")
def test_mapped_file_tells_a_mapped_tensor_from_the_heap(tmp_path):
    from helpers import mapped_file

    path = tmp_path / "t.pt"
    torch.save(torch.arange(100_000, dtype=torch.float32), path)
    assert mapped_file(torch.load(path, weights_only=True)) is None
    assert mapped_file(torch.load(path, mmap=True, weights_only=True)) == "t.pt"


def test_draw_reference_paths_sends_holders_to_the_old_object_if_they_stay():
    from helpers import draw_reference_paths

    fig = draw_reference_paths([("kept", "same", "#2a7", True, "note 1"),
                                ("lost", "new", "#c33", False, "note 2")])
    kept, lost = fig.axes
    assert [kept.get_title(), lost.get_title()] == ["kept", "lost"]

    def words(ax):
        return [t.get_text() for t in ax.texts if t.get_text()]

    old = "old object,\nold data"
    assert old not in words(kept) and "note 1" in words(kept)
    assert old in words(lost) and "note 2" in words(lost)
    arrows = [t.arrow_patch.get_edgecolor() for t in lost.texts
              if not t.get_text()][1:]  # the first is the slot's arrow
    assert len(arrows) == 3 and all(a == arrows[0] for a in arrows)
    assert arrows[0] == matplotlib.colors.to_rgba("gray")
    matplotlib.pyplot.close("all")


def test_fp32_precision_restored_puts_both_tf32_apis_back():
    from helpers import fp32_precision_restored, fp32_precision_state

    before = fp32_precision_state()
    with fp32_precision_restored() as saved:
        assert saved == before
        torch.backends.fp32_precision = "tf32"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        assert fp32_precision_state() != before
    assert fp32_precision_state() == before


def test_fp32_precision_restored_fails_when_a_setting_differs(monkeypatch):
    import helpers

    with pytest.raises(AssertionError, match="not restored"):
        with helpers.fp32_precision_restored():
            monkeypatch.setattr(helpers, "FP32_SETTINGS", [])


def test_set_first_weight_writes_in_place():
    from helpers import set_first_weight

    layers = [torch.nn.Linear(2, 2), torch.nn.Conv2d(1, 1, 2)]
    weights = [layer.weight for layer in layers]
    set_first_weight(layers, 7.0)
    assert all(layer.weight is w for layer, w in zip(layers, weights))
    assert [w.detach().view(-1)[0].item() for w in weights] == [7.0, 7.0]
    assert all(w.requires_grad and w.grad_fn is None for w in weights)


# --------------------------------------------------------------------------
# Figures in the reader's language (helpers.figure_text, site/figures.py)

BOOK = Path(helpers.__file__).parent
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
CHINESE = helpers.LABELS["zh_CN"]


def test_figure_text_is_the_english_in_the_english_edition(monkeypatch):
    monkeypatch.setattr(helpers, "LANGUAGE", "en")
    assert figure_text("yes") == "yes"
    assert figure_text("a word nobody translated") == "a word nobody translated"


def test_figure_text_refuses_a_word_the_chinese_table_lacks(monkeypatch):
    # a word left out is an error when the Chinese figures are drawn,
    # never an English word in a Chinese figure
    monkeypatch.setattr(helpers, "LANGUAGE", "zh_CN")
    assert figure_text("yes") == "是"  # ch1's prose: follow the first “是”
    with pytest.raises(KeyError):
        figure_text("a word nobody translated")


def words_given_to_figure_text(source):
    """The literal strings `source` (Python) passes to figure_text()."""
    return [node.args[0].value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and getattr(
                node.func, "attr", getattr(node.func, "id", None))
            == "figure_text" and isinstance(node.args[0], ast.Constant)]


def test_every_word_the_figure_cells_name_is_in_the_chinese_table():
    named = words_given_to_figure_text((BOOK / "helpers.py").read_text())
    for path in CHAPTERS:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                named += words_given_to_figure_text("".join(cell["source"]))
    assert len(named) > 30
    missing = sorted(set(named) - set(CHINESE))
    assert not missing, missing


def test_every_chinese_word_has_its_glyphs_in_the_figure_font():
    # the Chinese figures' fonts, as helpers.py sets them when drawing in
    # Chinese: a glyph that no family has (an empty box) is then an error
    with plt.rc_context(), warnings.catch_warnings():
        helpers._figures_in_chinese()
        try:
            for family in plt.rcParams["font.family"]:
                font_manager.findfont(family, fallback_to_default=False)
        except ValueError as missing:
            pytest.skip(f"{missing} (.ci/install-browser installs it)")
        fig = plt.figure(figsize=(4, 20))
        for i, text in enumerate(sorted(set(CHINESE.values()))):
            fig.text(0, i / len(CHINESE), text, fontsize=8)
        fig.savefig(io.BytesIO(), format="png", dpi=20)  # glyphs, not looks
        plt.close(fig)
    with pytest.raises(UserWarning, match="missing from font"):  # the check
        with plt.rc_context(), warnings.catch_warnings():
            helpers._figures_in_chinese()
            plt.rcParams["font.family"] = ["DejaVu Sans"]
            fig = plt.figure()
            fig.text(0, 0, CHINESE["yes"])
            fig.savefig(io.BytesIO(), format="png", dpi=20)
    plt.close("all")


def test_every_figure_has_a_current_chinese_drawing():
    # made by `.venv/bin/python site/figures.py`: one PNG per figure the chapters
    # store, drawn from today's cell and helpers.py, and not the English
    manifest = json.loads(figures.MANIFEST.read_text())
    stale = []
    for path in CHAPTERS:
        notebook = json.loads(path.read_text())
        for cell_id, cell in figures.figure_cells(notebook).items():
            png = figures.FIGURES / path.stem / f"{cell_id}.png"
            drawn = manifest.get(path.stem, {}).get(cell_id)
            english = [base64.b64decode(out["data"]["image/png"])
                       for out in cell["outputs"]
                       if "image/png" in out.get("data", {})]
            if not png.exists() or drawn != figures.drawn_from(
                    "".join(cell["source"])):
                stale.append(f"{path.name} cell {cell_id}")
            elif png.read_bytes() in english:
                stale.append(f"{path.name} cell {cell_id}: the English one")
    assert not stale, ("run .venv/bin/python site/figures.py on these chapters: "
                       f"{stale}")


def test_the_chinese_build_reads_each_notebook_with_its_chinese_figures():
    path = BOOK / "01_registration.ipynb"
    source = [path.read_text()]
    noted = []
    app = SimpleNamespace(
        config=SimpleNamespace(language="zh_CN"),
        env=SimpleNamespace(doc2path=lambda docname: str(path),
                            note_dependency=noted.append))
    figures._chinese_figures(app, "book/01_registration", source)
    read = figures.figure_cells(json.loads(source[0]))
    stored = figures.figure_cells(json.loads(path.read_text()))
    assert read.keys() == stored.keys() and len(noted) == len(stored)
    for cell_id, cell in read.items():
        png = (figures.FIGURES / path.stem / f"{cell_id}.png").read_bytes()
        assert cell["outputs"][0]["data"]["image/png"] == (
            base64.b64encode(png).decode())
    # the English build reads the notebook as it is
    english = [path.read_text()]
    app.config.language = None
    figures._chinese_figures(app, "book/01_registration", english)
    assert english == [path.read_text()]
