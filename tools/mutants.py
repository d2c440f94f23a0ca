"""Break the book on purpose and check that the tests notice.

Each chapter that exports code has a list of realistic bugs in
`tools/mutants/NN_name.toml`: mistakes a person rebuilding `nn.Module` could
plausibly make (a flag ignored, an order reversed, an entry left stale).
For every bug, one at a time, in a scratch copy of the repository, this
script edits the chapter's export cell, re-exports `mininn/`, and runs that
chapter's notebook (nbval) with the test files the list names. A bug is

    caught        the run failed (what we want);
    MISSED        the run passed: a check is missing, write it;
    NOT APPLIED   its `find` text is not in its cell exactly once (the cell
                  changed since the bug was written): fix the list; never
                  counted as caught;
    ERROR         pytest could not run at all (usage error, no tests).

    python3 tools/dev.py mutants               every list
    python3 tools/dev.py mutants 05 07         chapters 5 and 7
    python3 tools/dev.py mutants --list        show the bugs, run nothing
    python3 tools/dev.py mutants -j 1          one bug at a time
    python3 tools/dev.py mutants --workbook    type each bug into the
                                               workbook's cells instead: a
                                               check must fail (tools/workbook.py)

Bugs run side by side (one per core, each in its own scratch copy); for
each, the list's test files run before the notebook and pytest stops at the
first failure, so a caught bug costs seconds and only a missed one pays for
the whole notebook.

A list looks like this (TOML; ''' strings keep code exactly as typed):

    tests = ["tests/test_hooks.py"]

    [[mutant]]
    id = "remove-misses-kwargs-dict"      # unique in the file
    cell = "09270d12"                      # an export cell of the notebook
    find = '''self.extra_dict_ref.pop(self.id, None)'''   # exactly once
    replace = '''pass'''
    why = "a handle that forgets one dict leaves the hook firing"

Exit status 0 only when every bug was applied and caught. Not part of the
README's test command (each bug re-runs a notebook); `tests/test_mutants.py`
checks there that every list still applies to today's cells.
"""
import argparse
import ast
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTS = ROOT / "tools" / "mutants"
FIELDS = {"id", "cell", "find", "replace", "why"}
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "_build", "__pycache__", ".hypothesis", "checkpoints",
    ".ipynb_checkpoints", "*.pyc")


@dataclass
class Mutant:
    chapter: str  # notebook stem, "05_hooks"
    id: str
    cell: str
    find: str
    replace: str
    why: str

    @property
    def name(self):
        return f"{self.chapter}/{self.id}"


@dataclass
class Chapter:
    stem: str
    notebook: Path
    tests: list[str]
    mutants: list[Mutant] = field(default_factory=list)


def load(path: Path) -> Chapter:
    """One list file; raises ValueError on a malformed one."""
    spec = tomllib.loads(path.read_text())
    stem = path.stem
    notebook = ROOT / "book" / f"{stem}.ipynb"
    if not notebook.exists():
        raise ValueError(f"{path.name}: no notebook book/{stem}.ipynb")
    tests = spec.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        raise ValueError(f"{path.name}: `tests` must be a list of paths")
    chapter = Chapter(stem, notebook, tests)
    seen = set()
    for entry in spec.get("mutant", []):
        if set(entry) != FIELDS:
            raise ValueError(f"{path.name}: a mutant needs exactly the fields "
                             f"{sorted(FIELDS)}, got {sorted(entry)}")
        if entry["id"] in seen:
            raise ValueError(f"{path.name}: mutant id {entry['id']!r} repeats")
        seen.add(entry["id"])
        chapter.mutants.append(Mutant(stem, **entry))
    return chapter


def chapters(selected=()) -> list[Chapter]:
    found = [load(p) for p in sorted(LISTS.glob("*.toml"))]
    if selected:
        found = [c for c in found if any(c.stem.startswith(s) for s in selected)]
    return found


def export_cells(notebook: Path) -> dict[str, dict]:
    nb = json.loads(notebook.read_text())
    return {c["id"]: c for c in nb["cells"]
            if c["cell_type"] == "code"
            and "export" in c.get("metadata", {}).get("tags", [])}


def source(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def problem(mutant: Mutant, cells: dict[str, dict]) -> str | None:
    """Why `mutant` does not apply to today's notebook, or None if it does."""
    if mutant.cell not in cells:
        return f"no export cell with id {mutant.cell}"
    text = source(cells[mutant.cell])
    count = text.count(mutant.find)
    if count != 1:
        return f"`find` occurs {count} times in cell {mutant.cell}, not once"
    if mutant.find == mutant.replace:
        return "`replace` equals `find`: it changes nothing"
    try:
        ast.parse(text.replace(mutant.find, mutant.replace))
    except SyntaxError as e:
        return f"the mutated cell is not valid Python ({e.msg}, line {e.lineno})"
    return None


def mutated_notebook(mutant: Mutant, notebook: Path) -> str:
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        if cell.get("id") == mutant.cell:
            new = source(cell).replace(mutant.find, mutant.replace)
            cell["source"] = new.splitlines(keepends=True)
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


def run_one(mutant: Mutant, chapter: Chapter, scratch: Path, workers: int):
    """(verdict, seconds, first failing test) for one applied mutant.

    The test files run before the notebook and pytest stops at the first
    failure (-x): most bugs are caught by a test in seconds, and only a bug
    the tests miss pays for the notebook's kernel."""
    target = scratch / "book" / chapter.notebook.name
    original = chapter.notebook.read_text()
    target.write_text(mutated_notebook(mutant, chapter.notebook))
    start = time.monotonic()
    try:
        exported = subprocess.run(
            [sys.executable, "tools/export.py"], cwd=scratch,
            capture_output=True, text=True)
        if exported.returncode != 0:
            return "caught", time.monotonic() - start, "tools/export.py failed"
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "--no-header",
               "-p", "no:randomly", *chapter.tests,
               f"book/{chapter.notebook.name}"]
        if workers > 1:
            cmd += ["-n", str(workers), "--dist", "loadfile"]
        else:
            cmd += ["-p", "no:xdist"]
        # the planted bug is in mininn: skip the torch.nn half of each test
        env = {k: v for k, v in os.environ.items()
               if k != "PYTHONDONTWRITEBYTECODE"}  # cache rewritten asserts
        env["MININN_TEST_BACKENDS"] = "mininn"
        done = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True,
                              timeout=900, env=env)
    finally:
        target.write_text(original)
    seconds = time.monotonic() - start
    first = FAILED.search(done.stdout)
    where = first.group(1) if first else ""
    if done.returncode in (1, 2):  # tests failed / collection failed
        return "caught", seconds, where
    if done.returncode == 0:
        return "MISSED", seconds, ""
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
    return "ERROR", seconds, f"pytest exit {done.returncode}: {' '.join(tail)}"


def in_the_workbook(selected) -> int:
    """Each bug typed into the reader's cell of a fresh workbook: the check
    of its piece (or a later one of its chapter) must report a failure."""
    import workbook

    missed = total = 0
    with tempfile.TemporaryDirectory(prefix="mininn-workbook-") as tmp:
        out = Path(tmp) / workbook.NAME
        workbook.write(out, selected)
        for notebook, proof in workbook.proofs(out, selected).items():
            for mutant_id, (start, counts) in proof["mutants"].items():
                failing = [piece for piece, (_, bad) in counts.items() if bad]
                total += 1
                missed += not failing
                verdict = (f"caught       by check({failing[0]!r})"
                           if failing else "MISSED      ")
                later = failing and failing[0] != start
                print(f"{verdict} {notebook}/{mutant_id}"
                      + (f" (its own check({start!r}) passed)" if later
                         else ""), flush=True)
            wrong = [p for p, (_, bad) in proof["in order"].items() if bad]
            total, missed = total + 1, missed + bool(wrong)
            print(f"{'ok' if not wrong else 'WRONG':12} {notebook}: "
                  "written in order, each check passes with the book's "
                  "code after its piece" + (f"; not: {wrong}" if wrong
                                            else ""), flush=True)
            for run, want in (("stubs", "fail"), ("book", "pass")):
                wrong = [p for p, (_, bad) in proof[run].items()
                         if bool(bad) != (want == "fail")]
                total, missed = total + 1, missed + bool(wrong)
                print(f"{'ok' if not wrong else 'WRONG':12} {notebook}: "
                      f"with the {run}, every check should {want}"
                      + (f"; not: {wrong}" if wrong else ""), flush=True)
    print(f"workbook: {total - missed} of {total} as they should be")
    return 1 if missed else 0


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 tools/dev.py mutants",
        description="Apply each listed bug to a scratch copy and check that "
                    "the chapter's notebook and tests catch it.")
    parser.add_argument("chapters", nargs="*",
                        help="chapter prefixes (05, 07_state); default: all")
    parser.add_argument("--list", action="store_true",
                        help="print the bugs and whether they apply; run nothing")
    parser.add_argument("-j", "--jobs", type=int, default=cores(),
                        help="bugs run side by side, each in its own scratch "
                             "copy (default: one per core)")
    parser.add_argument("-n", "--workers", type=int, default=1,
                        help="pytest-xdist workers per bug (default 1: none)")
    parser.add_argument("--workbook", action="store_true",
                        help="type each bug into the workbook's cells and "
                             "check that a check cell fails (tools/workbook.py)")
    args = parser.parse_args(argv)
    if args.workbook:
        return in_the_workbook(args.chapters)

    todo = chapters(args.chapters)
    if not todo:
        print("no mutant list matches", " ".join(args.chapters))
        return 2
    counts = {"caught": 0, "MISSED": 0, "NOT APPLIED": 0, "ERROR": 0}
    runnable = []
    for chapter in todo:
        cells = export_cells(chapter.notebook)
        for mutant in chapter.mutants:
            why_not = problem(mutant, cells)
            if args.list:
                state = f"NOT APPLIED ({why_not})" if why_not else "applies"
                print(f"{mutant.name:55} {state}\n    {mutant.why}")
            elif why_not:
                counts["NOT APPLIED"] += 1
                print(f"NOT APPLIED  {mutant.name}: {why_not}", flush=True)
            else:
                runnable.append((mutant, chapter))
    if args.list:
        return 0
    base = Path(tempfile.mkdtemp(prefix="mininn-mutants-"))
    free = queue.Queue()  # scratch copies, one per job
    try:
        for i in range(max(1, min(args.jobs, len(runnable)))):
            shutil.copytree(ROOT, base / str(i), ignore=COPY_IGNORE)
            free.put(base / str(i))

        def job(item):
            scratch = free.get()
            try:
                return run_one(*item, scratch, args.workers)
            finally:
                free.put(scratch)

        with ThreadPoolExecutor(max_workers=free.qsize() or 1) as pool:
            for (mutant, _), (verdict, seconds, where) in zip(
                    runnable, pool.map(job, runnable)):
                counts[verdict] += 1
                print(f"{verdict:12} {mutant.name} ({seconds:.0f} s)"
                      + (f": {where}" if where else ""), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    total = sum(counts.values())
    print(f"mutants: {counts['caught']} of {total} caught, "
          f"{counts['MISSED']} missed, {counts['NOT APPLIED']} not applied, "
          f"{counts['ERROR']} errors")
    return 0 if counts["caught"] == total else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
