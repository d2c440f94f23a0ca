"""The workbook: chapters 1-8 as exercises, checked by the book's own tests.

    python3 tools/dev.py workbook              write _build/workbook/ (+ .zip)
    python3 tools/dev.py workbook --out DIR 02 write chapter 2 only, into DIR
    python3 tools/dev.py mutants --workbook    type every listed bug into the
                                               reader's cells: a check must fail

Each export cell keeps its signature, docstring and a one-line hint; its
body becomes `raise NotImplementedError`. After each piece, a check cell
runs the behaviour tests of tests/test_<chapter>.py that exercise it (the
suite's own bodies, through the `nn` fixture) on the reader's code, in the
reader's kernel, and prints passed/failed and, for the first failure, what
torch does and what the reader's code does.

This one file is both the generator and the checker: it is copied into the
workbook as `book/workbook.py`, where the notebooks import `checks_for`.
There it needs only torch, pytest and hypothesis (the generator's imports
sit inside its functions). Which tests belong to which piece is measured,
not listed: the generator runs each chapter's tests on the book's own code
and records which of the chapter's functions each test calls; a test
belongs to the last piece it needs.
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
MAP_FILE = "checks.json"  # beside this file in the workbook


# --------------------------------------------------------------------------
# The checker (runs in the reader's kernel).

class _State:
    """What one pytest run saw: outcome per test, first failure, calls."""
    def __init__(self, profile_file=None):
        self.results, self.first, self.compare = [], None, None
        self.profile_file, self.calls = profile_file, {}


STATE = _State()


def _backend(name):
    from support import Backend
    return Backend(name)


@pytest.fixture
def nn():
    """The reader's code, behind the face the tests use (`nn.Module`)."""
    return _backend("mininn")


@pytest.fixture
def both():
    return _backend("torch.nn"), _backend("mininn")


def pytest_assertrepr_compare(config, op, left, right):
    # The tests write `assert yours == torch's`: remember both sides.
    STATE.compare = (op, left, right)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if STATE.profile_file is None:
        yield
        return
    seen = STATE.calls.setdefault(item.nodeid.partition("::")[2], set())

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == STATE.profile_file:
            seen.add(frame.f_code.co_qualname.partition(".<locals>")[0])
    sys.setprofile(tracer)
    try:
        yield
    finally:
        sys.setprofile(None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.when == "setup":
        STATE.compare = None
    if report.failed or (report.when == "call" and report.passed):
        name = item.nodeid.partition("::")[2]
        if report.failed and STATE.first is None and call.excinfo:
            try:
                STATE.first = _describe(item, call.excinfo)
            except Exception as error:  # never hide the result itself
                STATE.first = [f"first failure: {item.name}: {error!r}"]
        if not any(n == name for n, _ in STATE.results):
            STATE.results.append((name, report.passed))


def _short(value, width=400):
    shorter = reprlib.Repr()
    shorter.maxlist = shorter.maxtuple = shorter.maxdict = 12
    shorter.maxstring = shorter.maxother = 120
    text = repr(value) if isinstance(value, str) else shorter.repr(value)
    return text if len(text) <= width else text[:width] + " ..."


def _describe(item, excinfo):
    """Lines saying what torch does and what the reader's code does."""
    error = excinfo.value
    lines = [f"first failure: {_behaviour(item.nodeid.partition('::')[2])}"]
    test_file = str(item.path)
    entries = [e for e in excinfo.traceback if str(e.path) == test_file]
    if entries:
        lines.append(f"  the test does:  {_line(entries[-1])}")
    compare = STATE.compare
    if isinstance(error, AssertionError) and compare and compare[0] == "==":
        lines.append(f"  torch.nn gives: {_short(compare[2])}")
        lines.append(f"  your code:      {_short(compare[1])}")
    elif isinstance(error, NotImplementedError):
        lines.append(f"  not written yet: {error}")
    elif isinstance(error, AssertionError):
        said = str(error).split("\nassert ")[0].strip()
        lines.append(f"  torch.nn passes; with your code: {said[:600]}")
    elif type(error).__name__ == "Failed":  # pytest.raises saw no error
        lines.append(f"  torch.nn raises here; your code: {str(error)}")
    else:
        lines.append(f"  your code raised {type(error).__name__}: "
                     f"{str(error)[:600]}")
        mine = [e for e in excinfo.traceback
                if "site-packages" not in str(e.path)
                and str(e.path) != test_file
                and "tests" not in Path(str(e.path)).parts]
        if mine:
            lines.append(f"    in {mine[-1].name}: {_line(mine[-1])}")
    lines.append(f"  (the test: tests/{item.path.name}, "
                 f"line {item.reportinfo()[1] + 1}, {item.name})")
    return lines


def _line(entry):
    """The first line of a traceback entry's statement, '' if unknown."""
    try:
        text = str(entry.statement).strip().splitlines()
    except Exception:  # no source (a cell that is gone): say nothing
        return ""
    return text[0] + (" ..." if len(text) > 1 else "") if text else ""


def _behaviour(name):
    base, _, param = name.partition("[")
    text = base.removeprefix("test_").replace("_", " ")
    return text + (f" [{param}" if param else "")


@contextlib.contextmanager
def _installed(chapter, reader):
    """mininn as the reader has it: the book's modules for the chapters
    before `chapter`, the reader's module (a kernel's __main__) as
    `chapter` itself, and no later chapter (importing one would bring the
    book's own solution). The reader's module is used as it is, not copied:
    a test that resets one of its globals resets the reader's code's."""
    import mininn

    names = list(mininn.CHAPTERS)
    here = names.index(chapter)
    earlier = [importlib.import_module(f"mininn.{c}") for c in names[:here]]
    keys = [f"mininn.{c}" for c in names[here:]]
    saved_modules = {k: sys.modules.get(k, False) for k in keys}
    saved_root = dict(vars(mininn))
    sys.modules[keys[0]] = reader
    setattr(mininn, chapter, reader)
    for key, later in zip(keys[1:], names[here + 1:]):
        sys.modules[key] = None  # ImportError: not built yet
        vars(mininn).pop(later, None)
    for name in mininn._WHERE:
        vars(mininn).pop(name, None)
        for module in [reader, *reversed(earlier)]:
            if hasattr(module, name):
                setattr(mininn, name, getattr(module, name))
                break
    try:
        yield
    finally:
        for key, module in saved_modules.items():
            if module is False:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = module
        vars(mininn).clear()
        vars(mininn).update(saved_root)


def run_tests(chapter, test_file, tests, reader, stop_at_first=False):
    """Run `tests` (names in `test_file`) on the module `reader` as chapter
    `chapter` of mininn; fills STATE and returns it."""
    global STATE
    tests_dir = HERE / "tests"
    if str(tests_dir) not in sys.path:
        sys.path.insert(0, str(tests_dir))
    # imported again each time: its parameters may list the reader's classes
    sys.modules.pop(Path(test_file).stem, None)
    keep = STATE.profile_file
    STATE = _State(keep)
    from hypothesis import settings
    settings.register_profile("workbook", database=None, derandomize=True)
    settings.load_profile("workbook")
    args = [f"{tests_dir / test_file}::{t}" for t in tests] or [
        str(tests_dir / test_file)]
    # quiet, in a notebook's kernel; unraisableexception and
    # threadexception run a gc.collect() each (0.4 s a check)
    args += ["-q", "--tb=no", "--capture=sys", "--noconftest", "-W",
             "ignore", "--rootdir", str(tests_dir)]
    for plugin in ("cacheprovider", "randomly", "xdist", "faulthandler",
                   "unraisableexception", "threadexception"):
        args += ["-p", f"no:{plugin}"]
    if stop_at_first:
        args.append("-x")
    with _installed(chapter, reader), \
            contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[sys.modules[__name__]])
    return STATE


def _load_map():
    return json.loads((HERE / MAP_FILE).read_text(encoding="utf-8"))


def checks_for(notebook):
    """check(piece) for one chapter ("02_traversal")."""
    spec = _load_map()[notebook]

    def check(piece):
        """Run the book's tests of `piece` on your code; print what differs
        from torch.nn."""
        if piece not in spec["checks"]:
            print(f"no check named {piece!r}; this chapter has: "
                  + ", ".join(spec["checks"]))
            return
        reader = sys.modules["__main__"]
        if not hasattr(reader, "Module"):
            print("Run the cells above first: there is no Module yet.")
            return
        tests = spec["checks"][piece]
        state = run_tests(spec["module"], spec["test_file"], tests, reader)
        passed = sum(ok for _, ok in state.results)
        print(f"check({piece!r}): {passed} of {len(tests)} behaviours "
              "as in torch.nn")
        for name, ok in state.results:
            print(f"  {'passed' if ok else 'FAILED'}  {_behaviour(name)}")
        if state.first:
            print("\n".join(state.first))
        elif len(state.results) < len(tests):
            print("  (some tests did not run: is a cell above not run?)")
    return check


# --------------------------------------------------------------------------
# The generator's measurement and proofs (run in the workbook's book/ as
# `python workbook.py --map ...` / `--prove ...`).

def _fresh_main():
    """A new __main__ namespace and no mininn imported: a fresh kernel."""
    for name in [n for n in sys.modules
                 if n == "mininn" or n.startswith("mininn.")
                 or n.startswith("test_")]:
        del sys.modules[name]
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    return main


def measure(spec):
    """{piece: [tests]}: each test that passes on the book's own code goes
    to the last piece (in reading order) whose functions it calls."""
    global STATE
    _fresh_main()
    module = importlib.import_module(f"mininn.{spec['module']}")
    STATE = _State(module.__file__)
    state = run_tests(spec["module"], spec["test_file"], [], module)
    STATE = _State()
    order = spec["pieces"]
    checks, later, untouched = {p: [] for p in order}, [], []
    for name, ok in state.results:
        pieces = {spec["qualnames"].get(q) for q in state.calls.get(name, ())}
        pieces.discard(None)
        # a test about one class, which calls none of its code (its
        # signature): the last piece of that class
        param = name.partition("[")[2].rstrip("]")
        if ok and not pieces and param in spec["qualnames"]:
            pieces = {piece for qual, piece in spec["qualnames"].items()
                      if qual.partition(".")[0] == param}
        if not ok:
            later.append(name)  # needs a later chapter (or is about files)
        elif not pieces:
            untouched.append(name)
        else:
            checks[max(pieces, key=order.index)].append(name)
    return {p: t for p, t in checks.items() if t}, later, untouched


def prove(spec, cells, start_piece=None, stop_at_first=False):
    """Run the chapter's `cells` (sources) in a fresh namespace, then its
    checks (from `start_piece` on): {piece: [passed, failed]}. With
    `stop_at_first`, each check stops at its first failure (the rest of its
    tests count as failed); with a `start_piece` too, the first check that
    fails ends the run."""
    main = _fresh_main()
    for number, source in enumerate(cells):
        exec(compile(source, f"<reader's cell {number}>", "exec"), vars(main))
    counts, started = {}, start_piece is None
    for piece, tests in spec["checks"].items():
        started = started or piece == start_piece
        if not started:
            continue
        state = run_tests(spec["module"], spec["test_file"], tests, main,
                          stop_at_first)
        passed = sum(ok for _, ok in state.results)
        counts[piece] = [passed, len(tests) - passed]  # not run: failed
        if start_piece and passed < len(tests):
            break
    return counts


def _command(argv):
    what, path = argv[0], Path(argv[1])
    todo = json.loads(path.read_text(encoding="utf-8"))
    if what == "--map":
        done = {}
        for notebook, spec in todo.items():
            checks, later, untouched = measure(spec)
            done[notebook] = {"checks": checks, "later": later,
                              "untouched": untouched}
    else:  # --prove: {name: {"chapter", "cells", "start", "show"}}; all
        # but "book" stop at a check's first failure, a mutant (with a
        # start) at the first failing check; "show": what its check cell
        # prints, as a reader would see it
        full, done = _load_map(), {}
        for name, job in todo.items():
            spec = full[job["chapter"]]
            done[name] = prove(spec, job["cells"], job["start"],
                               name != "book")
            if job.get("show"):
                with contextlib.redirect_stdout(io.StringIO()) as shown:
                    checks_for(job["chapter"])(job["start"])
                done[name] = {"counts": done[name],
                              "shown": shown.getvalue()}
    path.write_text(json.dumps(done, indent=1), encoding="utf-8")


# --------------------------------------------------------------------------
# The generator (runs in the repository, with .venv).

ROOT = HERE.parent
NAME = "rebuilding-nn-module-workbook"
KEEP = {"add_to_class"}  # the book's tool, not a piece of the Module
HINT = "the text above says what it does; its check says where it differs"


def _pieces(cells):
    """(pieces in reading order, {qualname: piece}, {cell id: piece}) of a
    chapter's export cells; a piece is named after its cell's first
    definition (qualified by its class where the short name repeats)."""
    from export import definitions

    classes = {name for c in cells for kind, name, _ in
               definitions(c["source"]) if kind == "class"}
    order, qualnames, of_cell = [], {}, {}
    for cell in cells:
        found = definitions(cell["source"])
        if not found:
            continue
        quals = [(f"{owner}.{name}" if owner in classes else name)
                 for kind, name, owner in found]
        # named after its first public definition (`get_submodule`, not
        # the helper `_get_name` above it)
        first = next((i for i, (_, name, _) in enumerate(found)
                      if not name.startswith("_") or name.endswith("__")), 0)
        name, qual = found[first][1], quals[first]
        piece = base = name if name not in order else qual
        for n in range(2, len(cells) + 2):  # a second piece of one name
            if piece not in order:
                break
            piece = f"{base} ({n})"
        order.append(piece)
        of_cell[cell["id"]] = piece
        for qual in quals:
            qualnames[qual] = piece
    return order, qualnames, of_cell


def _offset(lines, line, col):
    return sum(len(text) for text in lines[:line - 1]) + col


def stub(source, hints=()):
    """`source` with each function's body (after its docstring) replaced
    by a hint and `raise NotImplementedError`; everything else kept."""
    import ast
    import re

    tree = ast.parse(source)
    functions = []
    for node in tree.body:
        inner = node.body if isinstance(node, ast.ClassDef) else [node]
        functions += [f for f in inner if isinstance(
            f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and f.name not in KEEP]
    lines = source.splitlines(keepends=True)
    for fn in sorted(functions, key=lambda f: f.lineno, reverse=True):
        has_doc = ast.get_docstring(fn) is not None
        body = fn.body[1:] if has_doc else fn.body
        start_line = body[0].lineno if body else fn.body[0].end_lineno
        end = _offset(lines, fn.end_lineno,
                      len(lines[fn.end_lineno - 1].rstrip("\n")))
        text = "".join(lines)
        if body:
            start = _offset(lines, body[0].lineno, body[0].col_offset)
            indent = " " * body[0].col_offset
        else:
            start = _offset(lines, fn.body[0].end_lineno,
                            fn.body[0].end_col_offset)
            indent = " " * fn.body[0].col_offset
        comments = re.findall(r"#\s*(.+)", "".join(
            lines[start_line - 1:fn.end_lineno]))
        # a bug of tools/mutants/ in this body is a mistake to avoid
        hint = next((f"a common mistake: {why}" for find, why in hints
                     if find in text[start:end]),
                    comments[0] if comments else HINT)
        raise_line = (f"# Hint: {hint}\n{indent}"
                      f"raise NotImplementedError({fn.name!r})")
        text = text[:start] + ("\n" + indent if not body else "") \
            + raise_line + text[end:]
        lines = text.splitlines(keepends=True)
    return "".join(lines)


def _cell(kind, source, ident):
    import nbformat

    cell = (nbformat.v4.new_code_cell if kind == "code"
            else nbformat.v4.new_markdown_cell)(source)
    cell.id = ident
    return cell


INTRO = """\
**Workbook: rebuild it yourself.** This is the chapter as an exercise.
Every cell that builds the mini Module ends in `raise NotImplementedError`:
its signature, docstring and a one-line hint are left; the body is yours
to write, and the prose above it says what it must do. After each piece a
`check(...)` cell runs the book's own tests of that piece on your code (the
same tests that hold the book's `mininn` to `torch.nn`) and prints a table
and, for the first failure, what `torch.nn` does and what your code does.
The chapters before this one are the book's solutions (`mininn/`), so you
can start anywhere; this chapter's solution is in the book itself. The
cells below still show the book's outputs: run them once your pieces pass.
"""


def workbook_notebook(path, spec, of_cell, hints):
    """The exercise version of one chapter notebook."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    cells, in_solution, first = [_cell("markdown", INTRO, "workbook-intro")], \
        False, True
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            in_solution = ("{solution-start}" in cell.source or in_solution) \
                and "{solution-end}" not in cell.source
        elif in_solution and cell.metadata.get("jupyter", {}).get(
                "source_hidden"):  # an exercise's solution (not its check)
            cell.source, cell.outputs = "# Your answer here.", []
            cell.execution_count = None
            cell.metadata.pop("jupyter")  # not folded: it is to be written
        if "export" in tags:
            if first:
                cells.append(_cell("code", (
                    "from workbook import checks_for\n\n"
                    f"check = checks_for({path.stem!r})  # check(\"piece\")"
                    ": the book's tests of a piece, on your code"),
                    "workbook-checks"))
                first = False
            cell.source = stub(cell.source, hints)
        cells.append(cell)
        piece = of_cell.get(cell.get("id"))
        if "export" in tags and piece in spec["checks"]:
            cells.append(_cell("code", f"check({piece!r})",
                               f"check-{cell.id}"))
    nb.cells = cells
    return nb


def _specs(selected=()):
    """{notebook: what the checker needs} for the chapters with a list of
    bugs in tools/mutants/ (which names their tests), and the lists."""
    import mutants

    specs, lists = {}, {}
    for chapter in mutants.chapters(selected):
        cells = [dict(c, source=mutants.source(c))
                 for c in mutants.export_cells(chapter.notebook).values()]
        order, qualnames, of_cell = _pieces(cells)
        (test_file,) = chapter.tests
        module = json.loads(chapter.notebook.read_text())["metadata"].get(
            "mininn", {}).get("module", chapter.stem[3:])
        specs[chapter.stem] = {"module": module,
                               "test_file": Path(test_file).name,
                               "pieces": order, "qualnames": qualnames,
                               "cells": of_cell}
        lists[chapter.stem] = chapter
    return specs, lists


def reader_env():
    """The environment of a reader's kernel: no path to the repository."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def in_workbook(book, flag, jobs):
    """Run this file's --map or --prove in the workbook's book/ folder."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(jobs, f)
    try:
        done = subprocess.run([sys.executable, "-c", (
            "import sys, workbook; workbook._command(sys.argv[1:])"),
            flag, f.name], cwd=book, env=reader_env(), capture_output=True,
            text=True)
        if done.returncode:
            raise RuntimeError(f"workbook.py {flag} failed:\n"
                               + done.stderr[-3000:])
        return json.loads(Path(f.name).read_text(encoding="utf-8"))
    finally:
        os.unlink(f.name)


def write(out, selected=()):
    """Write the workbook into `out` (a folder named NAME); returns the
    checks' map."""
    import shutil

    sys.path.insert(0, str(ROOT / "site"))
    from book_zip import reader_requirements

    book = out / "book"
    shutil.rmtree(out, ignore_errors=True)
    (book / "tests").mkdir(parents=True)
    shutil.copytree(ROOT / "book" / "mininn", book / "mininn",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("helpers.py",):
        shutil.copy(ROOT / "book" / name, book / name)
    shutil.copy(Path(__file__), book / "workbook.py")
    shutil.copy(ROOT / "tests" / "support.py", book / "tests" / "support.py")
    (book / "tests" / "pytest.ini").write_text(
        "[pytest]\n# The book's behaviour tests, run by workbook.py's "
        "check(): python_files = test_*.py\n")
    specs, lists = _specs(selected)
    for spec in specs.values():
        shutil.copy(ROOT / "tests" / spec["test_file"],
                    book / "tests" / spec["test_file"])
    measured = in_workbook(book, "--map", specs)
    for notebook, spec in specs.items():
        spec.update(measured[notebook])
    (book / MAP_FILE).write_text(json.dumps(specs, indent=1) + "\n")
    for notebook, spec in specs.items():
        hints = [(m.find, m.why) for m in lists[notebook].mutants]
        nb = workbook_notebook(lists[notebook].notebook, spec, spec["cells"],
                               hints)
        import nbformat
        nbformat.write(nb, book / f"{notebook}.ipynb")
    (out / "requirements-reader.txt").write_text(
        reader_requirements(ROOT) + _pins("pytest", "hypothesis"))
    (out / "README.md").write_text(README)
    return specs


def _pins(*names):
    pins = {line.partition("==")[0].strip().lower(): line.strip()
            for line in (ROOT / "requirements.txt").read_text().splitlines()
            if "==" in line}
    return "".join(pins[n] + "\n" for n in names)


README = """\
# Rebuilding torch.nn.Module: the workbook

Chapters 1-8 of the book as exercises. In `book/NN_name.ipynb`, every cell
that builds the mini Module keeps its signature, its docstring and a hint,
and its body is `raise NotImplementedError`: you write it. After each piece
a `check("...")` cell runs the book's own tests of that piece (the tests
that hold the book's `mininn` to `torch.nn`, in `book/tests/`) on your code,
in your kernel, in seconds, and prints one line per behaviour, passed or
FAILED, and for the first failure what `torch.nn` does and what your code
does: names and order, values, or the error's type and message.

## Run it

Install as for the book's notebooks (Python 3.11 or newer; on Linux, the
CPU-only torch first):

```
python3 -m venv .venv
.venv/bin/pip install torch==2.13.0+cpu --index-url https://download.pytorch.org/whl/cpu
.venv/bin/pip install -r requirements-reader.txt
.venv/bin/jupyter lab --notebook-dir=book
```

(On macOS and Windows skip the second line; on Windows the commands are
`.venv\\Scripts\\pip` and `.venv\\Scripts\\jupyter`.)

Open any chapter: chapter N starts from the book's own solutions of the
chapters before it (`book/mininn/`, the book's package), so you need not
do them in order. Run the cells top to bottom; write each piece; run its
check. The cells between the pieces keep the book's outputs, so you can
see what your code should print.

## Where the solutions are

In the book: each chapter's pieces are its cells tagged `export`, on the
website and in the notebooks zip. `book/mininn/` holds them too, one file
per chapter (so the chapter you are writing is in there: don't open its
file until you are done).
"""


def proofs(out, selected=(), show=None):
    """Run the written workbook's checks (in `out`) on the stubs, on the
    book's own cells, and on the book's cells with each listed bug typed
    in. Returns {chapter: {"stubs": {piece: [passed, failed]}, "book":
    ..., "in order": {piece: its counts with the book's cells up to it
    and stubs after}, "mutants": {id: (piece its check starts at, {piece:
    counts})},
    "shown": what the check cell of the bug `show` prints}}."""
    specs, lists = _specs(selected)
    results = {}
    for notebook, chapter in lists.items():
        nb = json.loads(chapter.notebook.read_text())
        cells = {c["id"]: "".join(c["source"]) for c in nb["cells"]
                 if "export" in c["metadata"].get("tags", [])}
        ids = list(cells)
        checked = json.loads((out / "book" / MAP_FILE).read_text())[
            notebook]["checks"]
        jobs = {"stubs": {"cells": [stub(c) for c in cells.values()],
                          "start": None},
                "book": {"cells": list(cells.values()), "start": None}}
        starts = {}
        for mutant in chapter.mutants:
            mutated = dict(cells)
            mutated[mutant.cell] = mutated[mutant.cell].replace(
                mutant.find, mutant.replace, 1)
            # the check of the mutated cell's piece, or the next one
            after = ids[ids.index(mutant.cell):]
            start = next(specs[notebook]["cells"][i] for i in after
                         if specs[notebook]["cells"].get(i) in checked)
            starts[mutant.id] = start
            jobs[mutant.id] = {"cells": list(mutated.values()),
                               "start": start, "show": mutant.id == show}
        # a reader who writes the pieces in order, rightly: the book's
        # cells up to each checked piece, stubs after it
        order = specs[notebook]["pieces"]
        for piece in (p for p in order if p in checked):
            upto = order.index(piece)
            jobs[f"in order: {piece}"] = {"start": piece, "cells": [
                source if order.index(specs[notebook]["cells"].get(
                    i, order[0])) <= upto else stub(source)
                for i, source in cells.items()]}
        for job in jobs.values():
            job["chapter"] = notebook
        done = in_workbook(out / "book", "--prove", jobs)
        shown = ""
        if show in done:
            shown, done[show] = done[show]["shown"], done[show]["counts"]
        in_order = {name.removeprefix("in order: "): done.pop(name)[
            name.removeprefix("in order: ")]
            for name in [n for n in done if n.startswith("in order: ")]}
        results[notebook] = {
            "stubs": done.pop("stubs"), "book": done.pop("book"),
            "in order": in_order,
            "mutants": {m: (starts[m], counts) for m, counts in done.items()},
            "shown": shown}
    return results


def main(argv=None):
    import argparse
    import zipfile

    parser = argparse.ArgumentParser(prog="python3 tools/dev.py workbook",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*",
                        help="chapter prefixes (02, 05_hooks); default: 1-8")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" /
                        "workbook", help="folder to write into")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tools"))
    out = args.out / NAME
    specs = write(out, args.chapters)
    for notebook, spec in specs.items():
        tests = sum(map(len, spec["checks"].values()))
        print(f"{notebook}: {len(spec['checks'])} checks, {tests} tests "
              f"({len(spec['later'])} wait for later chapters, "
              f"{len(spec['untouched'])} call nothing of this chapter)")
    target = args.out / f"{NAME}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(out.rglob("*")):
            if path.is_file() and not {"__pycache__", ".hypothesis"} & set(
                    path.relative_to(out).parts):
                archive.write(path, path.relative_to(args.out))
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}"
          f" and {target.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
