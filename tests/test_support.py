"""tests/support.py holds the helpers the test files share; every other
module-level helper name belongs to one test file only, so one name never
means two things (two `raises` that compared messages differently, three
`names`, three `make_mlp` were the reason for this file)."""
import ast
from pathlib import Path

import pytest

from support import raises_exactly

TESTS = Path(__file__).resolve().parent

# Names that may be defined in more than one test file, and why.
ALLOWED = {
    # pytest finds hooks by name, one set per conftest or plugin
    **{hook: "a pytest hook" for hook in (
        "pytest_collection_modifyitems", "pytest_configure",
        "pytest_generate_tests", "pytest_collect_file")},
}


def top_level_names(source):
    """Functions and classes defined at the top level of `source`."""
    return [node.name for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef))]


def defined_twice(sources):
    """{name: [files]} for each name defined at top level in two files of
    `sources` ({file name: text}), leaving out ALLOWED."""
    where = {}
    for name, text in sources.items():
        for defined in set(top_level_names(text)):
            where.setdefault(defined, []).append(name)
    return {name: sorted(files) for name, files in where.items()
            if len(files) > 1 and name not in ALLOWED}


def test_no_helper_name_is_defined_in_two_test_files():
    sources = {path.name: path.read_text(encoding="utf-8")
               for path in sorted(TESTS.glob("*.py"))}
    assert len(sources) > 15  # the glob found the suite
    assert defined_twice(sources) == {}


def test_the_name_check_finds_a_second_definition():
    sources = {"test_a.py": "def raises(): pass\nclass Net: pass\n",
               "test_b.py": "def raises(): pass\ndef pytest_configure(): pass",
               "conftest.py": "def pytest_configure(): pass\nNet = 1\n"}
    assert defined_twice(sources) == {"raises": ["test_a.py", "test_b.py"]}


def test_playwright_is_started_by_the_one_browser_fixture():
    # Two of playwright's sync APIs cannot run in one process: when the
    # site's tests and the Chinese edition's each started their own, a
    # single worker (`-n 0`, or one core) failed every Chinese page check.
    # Both use the session `browser` fixture of tests/site/site_fixtures.py.
    starting = [path.relative_to(TESTS).as_posix()
                for path in TESTS.rglob("*.py")
                if "sync_playwright" in path.read_text(encoding="utf-8")
                and path.name != "test_support.py"]
    assert starting == ["site/site_fixtures.py"]


def error(exc, *args):
    def fn():
        raise exc(*args)
    return fn


def test_raises_exactly_compares_the_argument_not_str():
    # str(KeyError("x")) is "'x'"; the message is the argument
    found = raises_exactly(KeyError, "x", error(KeyError, "x"))
    assert type(found) is KeyError
    with pytest.raises(AssertionError, match="message"):
        raises_exactly(KeyError, "'x'", error(KeyError, "x"))


@pytest.mark.parametrize("exc, args, problem", [
    (KeyError, ("x",), "expected LookupError"),  # a subclass is not enough
    (LookupError, ("x", 2), "message"),  # a second argument is not the text
    (LookupError, ("y",), "message"),
])
def test_raises_exactly_rejects_near_misses(exc, args, problem):
    with pytest.raises(AssertionError, match=problem):
        raises_exactly(LookupError, "x", error(exc, *args))


def test_raises_exactly_rejects_no_error():
    with pytest.raises(AssertionError, match="no KeyError raised"):
        raises_exactly(KeyError, "x", lambda: None)
