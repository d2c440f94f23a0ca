"""The workbook: chapters 1-8 as exercises, checked by the book's own tests.

`python3 tools/dev.py workbook [--out DIR] [02 ...]` writes it. This file is
also its checker (copied in as book/workbook.py, needing only torch, pytest
and hypothesis): `check(piece)` runs the tests of tests/test_<chapter>.py that
call that piece on the reader's code and prints what differs from torch.nn.
"""
import contextlib
import importlib
import io
import json
import os
import reprlib
import sys
import types
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# --------------------------------------------------------------------------
# The checker (runs in the reader's kernel). STATE: the test running now and
# what a run saw ({test: passed}, the first failure's lines, the last `==`).
STATE = types.SimpleNamespace(test="")
_REPR = reprlib.Repr()  # a value in a report: 12 items, 120 characters
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = 12
_REPR.maxstring = _REPR.maxother = 120
SHORT = 20  # behaviours a check lists by name when all pass


@pytest.fixture
def nn():
    """The reader's code, behind the face the tests use (`nn.Module`)."""
    from support import Backend
    return Backend("mininn")


@pytest.fixture
def both():
    from support import Backend
    return Backend("torch.nn"), Backend("mininn")


def pytest_runtest_logstart(nodeid):
    STATE.test, STATE.compare = nodeid.partition("::")[2], None


def pytest_assertrepr_compare(op, left, right):
    STATE.compare = (op, left, right)  # the tests write `assert yours == torch's`


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.failed and STATE.first is None and call.excinfo:
        try:
            STATE.first = _describe(item, call.excinfo)
        except Exception as error:  # never hide the result itself
            STATE.first = [f"first failure: {item.name}: {error!r}"]
    if report.failed or report.when == "call" and report.passed:
        STATE.results.setdefault(STATE.test, report.passed)


def _describe(item, excinfo):
    """Lines saying what torch does and what the reader's code does."""
    error, test_file, compare = excinfo.value, str(item.path), STATE.compare
    lines = [f"first failure: {_behaviour(STATE.test)}"]
    in_test = [e for e in excinfo.traceback if str(e.path) == test_file]
    if in_test:
        lines.append(f"  the test does:  {_line(in_test[-1])}")
    if isinstance(error, AssertionError) and compare and compare[0] == "==":
        lines += [f"  torch.nn gives: {_short(compare[2])}",
                  f"  your code:      {_short(compare[1])}"]
    elif isinstance(error, NotImplementedError):
        lines.append(f"  not written yet: {error}")
    elif isinstance(error, AssertionError):
        said = str(error).split("\nassert ")[0].strip()
        lines.append(f"  torch.nn passes; with your code: {said[:600]}")
    elif isinstance(error, pytest.fail.Exception):  # pytest.raises saw none
        lines.append(f"  torch.nn raises here; your code: {error}")
    else:
        lines.append(f"  your code raised {type(error).__name__}: "
                     f"{str(error)[:600]}")
        mine = [e for e in excinfo.traceback if str(e.path) != test_file
                and "site-packages" not in str(e.path)
                and "tests" not in Path(str(e.path)).parts]
        if mine:
            lines.append(f"    in {mine[-1].name}: {_line(mine[-1])}")
    lines.append(f"  (the test: tests/{item.path.name}, "
                 f"line {item.reportinfo()[1] + 1}, {item.name})")
    return lines


def _short(value, width=400):
    text = repr(value) if isinstance(value, str) else _REPR.repr(value)
    return text if len(text) <= width else text[:width] + " ..."


def _line(entry):
    """The first line of a traceback entry's statement, '' if unknown."""
    try:
        text = str(entry.statement).strip().splitlines()
    except Exception:  # no source (a cell that is gone): say nothing
        return ""
    return text[0] + (" ..." if len(text) > 1 else "") if text else ""


def _table(results):
    """A check's lines: each behaviour, or, past SHORT of them, the failures
    by name and a count of the rest."""
    long, passed = len(results) > SHORT, sum(results.values())
    lines = [f"  {'passed' if ok else 'FAILED'}  {_behaviour(name)}"
             for name, ok in results.items() if not (ok and long)]
    if long and passed:
        rest = "all" if passed == len(results) else "the other"
        lines.append(f"  passed  {rest} {passed}")
    return lines


def _behaviour(name):
    base, _, param = name.partition("[")
    return base.removeprefix("test_").replace("_", " ") + (
        f" [{param}" if param else "")


@contextlib.contextmanager
def _installed(chapter, reader):
    """mininn as the reader has it: the book's chapters before `chapter`, the
    reader's module itself as `chapter` (a test that resets one of its
    globals resets the reader's), and no later one (it would bring the
    book's own solution: ImportError)."""
    import mininn

    here, root = mininn.CHAPTERS.index(chapter), vars(mininn)
    books = [importlib.import_module(f"mininn.{c}") for c in mininn.CHAPTERS[:here]]
    modules = {f"mininn.{c}": None for c in mininn.CHAPTERS[here:]}
    modules[f"mininn.{chapter}"] = reader
    saved, saved_root = {k: sys.modules.get(k) for k in modules}, dict(root)
    for name in [*mininn.CHAPTERS[here:], *mininn._WHERE]:
        root.pop(name, None)
    for module in [*books, reader]:  # the latest chapter's name wins
        root.update({n: getattr(module, n) for n in mininn._WHERE
                     if hasattr(module, n)})
    root[chapter] = reader
    sys.modules.update(modules)
    try:
        yield
    finally:
        for key, module in saved.items():
            sys.modules[key] = module
            if module is None:
                del sys.modules[key]
        root.clear()
        root.update(saved_root)


def run_tests(spec, tests, reader, stop_at_first=False):
    """Run `tests` (none: all) of the chapter `spec` on the module `reader`
    as its chapter of mininn; returns STATE."""
    tests_dir, test_file = HERE / "tests", spec["test_file"]
    if str(tests_dir) not in sys.path:
        sys.path.insert(0, str(tests_dir))
    # imported again each time: its parameters may list the reader's classes
    sys.modules.pop(Path(test_file).stem, None)
    STATE.results, STATE.first = {}, None
    from hypothesis import settings
    settings.register_profile("workbook", database=None, derandomize=True)
    settings.load_profile("workbook")
    args = [f"{tests_dir / test_file}::{t}" for t in tests] or [
        str(tests_dir / test_file)]
    # quiet, in the reader's kernel; unraisableexception and threadexception
    # run a gc.collect() each (0.4 s a check)
    args += ("-q --tb=no --capture=sys --noconftest -W ignore -p no:xdist"
             " -p no:cacheprovider -p no:randomly -p no:faulthandler"
             " -p no:unraisableexception -p no:threadexception").split()
    args += ["--rootdir", str(tests_dir), *["-x"][:stop_at_first]]
    with _installed(spec["module"], reader), \
            contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[sys.modules[__name__]])
    return STATE


def checks_for(notebook):
    """check(piece) for one chapter ("02_traversal")."""
    spec = json.loads((HERE / "checks.json").read_text("utf-8"))[notebook]

    def check(piece, stop_at_first=False):
        """Run the book's tests of `piece` on your code; print what differs
        from torch.nn."""
        reader, tests = sys.modules["__main__"], spec["checks"].get(piece)
        if tests is None:
            print(f"no check named {piece!r}; this chapter has: "
                  + ", ".join(spec["checks"]))
            return
        if not hasattr(reader, "Module"):
            print("Run the cells above first: there is no Module yet.")
            return
        results = run_tests(spec, tests, reader, stop_at_first).results
        print(f"check({piece!r}): {sum(results.values())} of {len(tests)} "
              "behaviours as in torch.nn")
        print("\n".join(_table(results)))
        if STATE.first:
            print("\n".join(STATE.first))
        elif len(results) < len(tests):
            print("  (some tests did not run: is a cell above not run?)")
    return check


# --------------------------------------------------------------------------
# The generator's measurement and proofs, run by `in_workbook` in a fresh
# Python in the workbook's book/, as a reader's kernel would be.

def _fresh_main(cells=()):
    """A fresh kernel: no mininn imported, a new __main__ that ran `cells`."""
    for name in [n for n in sys.modules if n.partition(".")[0] == "mininn"
                 or n.startswith("test_")]:
        del sys.modules[name]
    sys.modules["__main__"] = main = types.ModuleType("__main__")
    for number, source in enumerate(cells):
        exec(compile(source, f"<reader's cell {number}>", "exec"), vars(main))
    return main


def measure(spec):
    """{"checks": {piece: the tests that call it last, in reading order},
    "later": tests that need a later chapter, "untouched": the rest}."""
    _fresh_main()
    module = importlib.import_module(f"mininn.{spec['module']}")
    calls = {}  # test: the qualnames of `module` it calls
    # a method added by add_to_class keeps its bare name in its code; its
    # __qualname__ says its class (Module's and _NormBase's
    # _load_from_state_dict are two pieces)
    qualname = {f.__code__: f.__qualname__ for c in vars(module).values()
                if isinstance(c, type) for f in vars(c).values()
                if getattr(f, "__code__", None)}

    def tracer(frame, event, arg):
        code = frame.f_code
        if event == "call" and code.co_filename == module.__file__:
            calls.setdefault(STATE.test, set()).add(qualname.get(
                code, code.co_qualname.partition(".<locals>")[0]))
    sys.setprofile(tracer)
    results = run_tests(spec, [], module).results
    sys.setprofile(None)
    order, piece_of = spec["pieces"], spec["qualnames"]
    done = {"checks": {p: [] for p in order}, "later": [], "untouched": []}
    for name, ok in results.items():
        pieces = {piece_of[q] for q in calls.get(name, ()) if q in piece_of}
        # a test of one class that calls none of its code (its signature):
        # the last piece of that class
        param = name.partition("[")[2].rstrip("]")
        if not pieces and param in piece_of:
            pieces = {p for q, p in piece_of.items()
                      if q.partition(".")[0] == param}
        if not ok:
            done["later"].append(name)
        elif not pieces:
            done["untouched"].append(name)
        else:
            done["checks"][max(pieces, key=order.index)].append(name)
    done["checks"] = {p: tests for p, tests in done["checks"].items() if tests}
    return done


def prove(notebook, cells, mutants, show=None):
    """{piece: [passed, failed]} of a chapter's checks on the stubs, on the
    book's `cells` {id: source}, written in order (the book's cells up to
    each piece, stubs after it) and with each of `mutants` typed in (from its
    piece's check to the first that fails); "shown": what `show`'s prints."""
    spec = json.loads((HERE / "checks.json").read_text("utf-8"))[notebook]
    checks, order, piece_of = spec["checks"], spec["pieces"], spec["cells"]
    check, ids = checks_for(notebook), list(cells)

    def run(sources, start=None, stop=True):
        _fresh_main(sources)
        counts, shown = {}, ""
        for piece in list(checks)[list(checks).index(start) if start else 0:]:
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                check(piece, stop)
            passed = sum(STATE.results.values())
            counts[piece] = [passed, len(checks[piece]) - passed]
            shown = shown or printed.getvalue()
            if start and passed < len(checks[piece]):
                break
        return counts, shown

    done = {"stubs": run([stub(c) for c in cells.values()])[0],
            "book": run(cells.values())[0], "in order": {}, "mutants": {}}
    for piece in (p for p in order if p in checks):
        done["in order"][piece] = run([
            source if order.index(piece_of.get(i, order[0]))
            <= order.index(piece) else stub(source)
            for i, source in cells.items()], piece)[0][piece]
    for m in mutants:
        # from the check of the mutated cell's piece, or the next one
        start = next(piece_of[i] for i in ids[ids.index(m["cell"]):]
                     if piece_of.get(i) in checks)
        counts, shown = run([source.replace(m["find"], m["replace"], 1)
                             if i == m["cell"] else source
                             for i, source in cells.items()], start,
                            stop=m["id"] != show)
        done["mutants"][m["id"]] = start, counts
        if m["id"] == show:
            done["shown"] = shown
    return done


def _command():
    """{name: function(**job)} for the jobs on stdin, as JSON on stdout."""
    function, jobs = globals()[sys.argv[1]], json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # stdout: the answer only
        done = {name: function(**job) for name, job in jobs.items()}
    print(json.dumps(done))


# --------------------------------------------------------------------------
# The generator (runs in the repository, with .venv).

ROOT = HERE.parent
NAME = "rebuilding-nn-module-workbook"
KEEP = {"add_to_class"}  # the book's tool, not a piece of the Module
HINT = "the text above says what it does; its check says where it differs"


def _pieces(cells):
    """{"pieces": in reading order, "qualnames": {qualname: piece}, "cells":
    {cell id: piece}} of a chapter's export cells {id: source}: a piece is
    named after its cell's first public definition, qualified if it repeats."""
    from export import definitions

    order, qualnames, of_cell = [], {}, {}
    for ident, source in cells.items():
        found = definitions(source)
        if not found:
            continue
        quals = [f"{owner}.{name}" if owner else name
                 for _, name, owner in found]
        first = next((i for i, (_, name, _) in enumerate(found)
                      if not name.startswith("_") or name.endswith("__")), 0)
        base = quals[first] if found[first][1] in order else found[first][1]
        copies = sum(p.partition(" (")[0] == base for p in order)
        order.append(f"{base} ({copies + 1})" if copies else base)
        of_cell[ident] = order[-1]
        qualnames.update(dict.fromkeys(quals, order[-1]))
    return {"pieces": order, "qualnames": qualnames, "cells": of_cell}


def stub(source, mutants=()):
    """`source` with each function's body (after its docstring) replaced by a
    hint and `raise NotImplementedError`. The hint: the mistake of a listed
    bug (of `mutants`) in that body, else its first comment."""
    import ast
    import re

    functions = [f for node in ast.parse(source).body for f in (
        node.body if isinstance(node, ast.ClassDef) else [node])
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        and f.name not in KEEP]
    lines = source.split("\n")
    for fn in reversed(functions):  # from the last: line numbers stay right
        body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
        start = body[0].lineno - 1 if body else fn.body[0].end_lineno
        indent = " " * (body or fn.body)[0].col_offset
        written = "\n".join(lines[start:fn.end_lineno]).lstrip()
        comments = re.findall(r"#\s*(.+)", written)
        hint = next((f"a common mistake: {m.why}" for m in mutants
                     if m.find in written), comments[0] if comments else HINT)
        lines[start:fn.end_lineno] = [f"{indent}# Hint: {hint}", f"{indent}"
                                      f"raise NotImplementedError({fn.name!r})"]
    return "\n".join(lines)


def workbook_notebook(path, spec, mutants):
    """The exercise version of one chapter notebook."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell

    nb = nbformat.read(path, as_version=4)
    checks = new_code_cell(
        f"from workbook import checks_for\n\ncheck = checks_for({path.stem!r})"
        "  # check(\"piece\"): the book's tests of a piece, on your code",
        id="workbook-checks")
    # the README's opening paragraph opens each chapter too
    intro = (HERE / "workbook_README.md").read_text("utf-8").split("\n\n")[1]
    cells, in_solution = [new_markdown_cell(intro, id="workbook-intro")], False
    for cell in nb.cells:
        exported = "export" in cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            in_solution = ("{solution-start}" in cell.source or in_solution) \
                and "{solution-end}" not in cell.source
        elif in_solution and cell.metadata.get("jupyter", {}).get(
                "source_hidden"):  # an exercise's solution (not its check)
            cell.source, cell.outputs = "# Your answer here.", []
            cell.execution_count = None
            cell.metadata.pop("jupyter")  # not folded: it is to be written
        if exported and checks not in cells:
            cells.append(checks)
        cells.append(cell)
        if exported:
            cell.source = stub(cell.source, mutants)
            if spec["cells"].get(cell.id) in spec["checks"]:
                cells.append(new_code_cell(f"check({spec['cells'][cell.id]!r})",
                                           id=f"check-{cell.id}"))
    nb.cells = cells
    return nb


def in_workbook(book, function, jobs):
    """{name: `function`(**job)} for `jobs`, run in the workbook's folder
    `book` by a fresh Python with no path to the repository, as a reader's."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("OMP_NUM_THREADS", "1")
    return json.loads(subprocess.run(
        [sys.executable, "-c", "import workbook; workbook._command()", function],
        input=json.dumps(jobs), stdout=subprocess.PIPE, text=True, cwd=book,
        env=env, check=True).stdout)


def write(out, selected=()):
    """Write the workbook into `out` (a folder named NAME); returns the
    checks' map."""
    import shutil

    import mutants
    import nbformat
    from export import exported
    sys.path.insert(0, str(ROOT / "site"))
    from book_zip import reader_requirements

    book = out / "book"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(ROOT / "book" / "mininn", book / "mininn",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "book" / "helpers.py", book)
    shutil.copy(__file__, book / "workbook.py")
    shutil.copy(HERE / "workbook_README.md", out / "README.md")
    (book / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "support.py", book / "tests")
    # the tests' own rootdir: no configuration from the folders above
    (book / "tests" / "pytest.ini").write_text("[pytest]\n")
    chapters, specs = mutants.chapters(selected), {}
    for chapter in chapters:
        (test_file,) = chapter.tests
        shutil.copy(ROOT / test_file, book / "tests")
        specs[chapter.stem] = {
            "module": exported(chapter.notebook)[0],
            "test_file": Path(test_file).name,
            **_pieces({i: mutants.source(c) for i, c in
                       mutants.export_cells(chapter.notebook).items()})}
    for notebook, measured in in_workbook(book, "measure", {
            n: {"spec": spec} for n, spec in specs.items()}).items():
        specs[notebook].update(measured)
    (book / "checks.json").write_text(json.dumps(specs, indent=1) + "\n")
    for chapter in chapters:
        nbformat.write(workbook_notebook(chapter.notebook, specs[chapter.stem],
                                         chapter.mutants), book / chapter.notebook.name)
    pins = [line + "\n" for line in (ROOT / "requirements.txt").read_text(
        ).splitlines() if line.partition("==")[0] in ("pytest", "hypothesis")]
    (out / "requirements-reader.txt").write_text(
        reader_requirements(ROOT) + "".join(pins))
    return specs


def proofs(out, selected=(), show=None):
    """{chapter: what `prove` says of the workbook written in `out`}."""
    import mutants

    return in_workbook(out / "book", "prove", {c.stem: {
        "notebook": c.stem, "show": show, "mutants": [vars(m) for m in c.mutants],
        "cells": {i: mutants.source(cell) for i, cell in
                  mutants.export_cells(c.notebook).items()}}
        for c in mutants.chapters(selected)})


def main(argv=None):
    import argparse
    import shutil

    parser = argparse.ArgumentParser(prog="python3 tools/dev.py workbook",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*",
                        help="chapter prefixes (02, 05_hooks); default: 1-8")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" /
                        "workbook", help="folder to write into")
    args = parser.parse_args(argv)
    out = args.out / NAME
    for notebook, spec in write(out, args.chapters).items():
        print(f"{notebook}: {len(spec['checks'])} checks, "
              f"{sum(map(len, spec['checks'].values()))} tests "
              f"({len(spec['later'])} wait for later chapters, "
              f"{len(spec['untouched'])} call nothing of this chapter)")
    for junk in [*out.rglob("__pycache__"), *out.rglob(".hypothesis")]:
        shutil.rmtree(junk)
    shutil.make_archive(str(out), "zip", args.out, NAME)
    print(f"wrote {out} and {NAME}.zip")


if __name__ == "__main__":
    main()
