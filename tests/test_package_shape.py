"""The generated package reads as a library: each class whole in the file
that defines it, `@add_to_class` only for classes of earlier chapters, a
banner that says what a file adds to them, and a root map from every
method to the file that defines it."""
import ast
import importlib
import inspect
import textwrap
from pathlib import Path

import pytest

import export

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "book" / "mininn"
FILES = sorted(p for p in PACKAGE.glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_method_is_added_to_a_class_of_the_same_file(path):
    tree = ast.parse(path.read_text())
    here = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    stray = [n.name for n in tree.body if export.added_to(n) in here]
    assert not stray, (f"{path.name}: write these in their class body (the "
                       f"exporter gathers them unless a global name is "
                       f"read): {stray}")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_banner_lists_what_a_file_adds_to_earlier_classes(path):
    text = path.read_text()
    tree = ast.parse(text)
    added = {}
    for node in tree.body:
        if export.added_to(node):
            added.setdefault(export.added_to(node), []).append(node.name)
    head = "".join(line.lstrip("# ") for line in text.splitlines()
                   if line.startswith("#"))  # banner and comments
    for cls, names in added.items():
        assert f"Adds to {cls} (from " in text.split("\n\n")[0], cls
        assert all(name in head for name in names), (cls, names)


def test_the_method_map_names_the_file_of_every_method():
    import mininn

    assert mininn.METHODS, "the root's method map is empty"
    for key, file in mininn.METHODS.items():
        cls, name = key.split(".")
        owner = getattr(mininn, cls, None) or getattr(
            importlib.import_module(f"mininn.{file}"), cls)
        method = inspect.unwrap(owner.__dict__[name])
        method = getattr(method, "__func__", method)  # static/class methods
        method = getattr(method, "fget", method)  # properties
        assert method.__module__ == f"mininn.{file}", (key, method.__module__)


def test_the_method_map_misses_no_method_of_the_finished_classes():
    import mininn

    for cls_name in ("Module", "Linear", "Sequential", "ParameterDict",
                     "RemovableHandle"):
        cls = getattr(mininn, cls_name)
        own = [n for n, v in vars(cls).items()  # aliases such as
               if inspect.isfunction(v) and v.__name__ == n]  # __call__
        missing = [n for n in own if f"{cls_name}.{n}" not in mininn.METHODS]
        assert not missing, (cls_name, missing)


GROWN = textwrap.dedent('''
    class Box:
        """A box."""

        def size(self):
            return 0


    # why: boxes grow
    @add_to_class(Box)
    def size(self):
        """Its size."""
        return 1


    @add_to_class(Box)
    def label(self, text="""a
    b"""):
        return text


    @add_to_class(Box)
    def __getattr__(self, name):
        raise AttributeError(name)


    del __getattr__


    @add_to_class(Box)
    def used(self):
        return 2


    print(used)
''')


def test_gathering_moves_methods_into_the_class_and_keeps_meaning():
    out = export.gather_classes(GROWN)
    namespace = {"add_to_class": lambda cls: (lambda fn: setattr(
        cls, fn.__name__, fn) or fn), "print": lambda *a: None}
    exec(compile(out, "<gathered>", "exec"), namespace)
    box = namespace["Box"]()
    assert box.size() == 1  # the later definition replaced the first
    assert box.label() == "a\nb"  # a multi-line default is not indented
    assert "# why: boxes grow" in out.split("class Box")[1].split("@")[0]
    tree = ast.parse(out)
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [m.name for m in cls.body[1:]] == ["size", "label", "__getattr__"]
    assert "del __getattr__" not in out
    # `used` is read as a global below it, so it stays outside the class
    assert [export.added_to(n) for n in tree.body] == [None, "Box", None]


def test_the_root_hands_out_torchs_names_and_the_listed_additions():
    import torch.nn
    import torch.nn.modules._functions
    import torch.nn.modules.module
    import torch.nn.modules.utils
    import torch.utils.hooks

    import mininn

    places = (torch.nn, torch.nn.modules.module, torch.nn.modules.utils,
              torch.nn.modules._functions, torch.utils.hooks)
    foreign = [name for name in mininn.__all__
               if not any(hasattr(p, name) for p in places)
               and name not in export.BOOK_ADDS]
    assert not foreign, ("not torch's names; list them in BOOK_ADDS with a "
                         f"reason: {foreign}")
    assert set(export.BOOK_ADDS) <= set(mininn.__all__)
