"""Break the book on purpose and check that the tests notice.

`tools/mutants/NN_name.toml` lists realistic bugs in a chapter's export
cells: mistakes a person rebuilding nn.Module could make. Each bug, one at
a time, in a scratch copy of the repository: edit the cell, re-export
mininn/, run the list's test files and then the notebook (nbval), stopping
at the first failure. A bug is `caught` (the run failed), `MISSED` (write
the missing check), `NOT APPLIED` (its `find` text is not in its cell
exactly once: update the list) or `ERROR` (pytest could not run).

    python3 tools/dev.py mutants [05 07] [--list] [-j JOBS] [--workbook]

A list (TOML) names its `tests` and has a [[mutant]] table per bug: `id`,
the export `cell`, a `find` text that occurs there exactly once, its
`replace`ment (''' strings keep code as typed) and `why` it is
realistic. Exit status 0 only when every bug was applied and caught.
"""
import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTS = ROOT / "tools" / "mutants"
FIELDS = {"id", "cell", "find", "replace", "why"}
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "_build", "node_modules", "__pycache__", ".hypothesis",
    "checkpoints", ".ipynb_checkpoints", "*.pyc")
FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


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
    chapter = Chapter(path.stem, ROOT / "book" / f"{path.stem}.ipynb",
                      spec.get("tests", []))
    for entry in spec.get("mutant", []):
        if set(entry) != FIELDS:
            raise ValueError(f"{path.name}: a mutant needs exactly the fields "
                             f"{sorted(FIELDS)}, got {sorted(entry)}")
        if entry["id"] in {m.id for m in chapter.mutants}:
            raise ValueError(f"{path.name}: mutant id {entry['id']!r} repeats")
        chapter.mutants.append(Mutant(path.stem, **entry))
    return chapter


def chapters(selected=()) -> list[Chapter]:
    return [load(p) for p in sorted(LISTS.glob("*.toml"))
            if not selected or any(p.stem.startswith(s) for s in selected)]


def export_cells(notebook: Path) -> dict[str, dict]:
    cells = json.loads(notebook.read_text())["cells"]
    return {c["id"]: c for c in cells if c["cell_type"] == "code"
            and "export" in c.get("metadata", {}).get("tags", [])}


def source(cell) -> str:
    return "".join(cell["source"])  # a list of lines, or one string


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


def run_one(mutant: Mutant, chapter: Chapter, scratch: Path):
    """(verdict, seconds, first failing test) for one applied mutant."""
    nb = json.loads(chapter.notebook.read_text())
    for cell in nb["cells"]:
        if cell.get("id") == mutant.cell:
            cell["source"] = source(cell).replace(
                mutant.find, mutant.replace).splitlines(keepends=True)
    target = scratch / "book" / chapter.notebook.name
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    start = time.monotonic()
    try:
        if subprocess.run([sys.executable, "tools/export.py"], cwd=scratch,
                          capture_output=True).returncode != 0:
            return "caught", time.monotonic() - start, "tools/export.py failed"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "--no-header", "-p",
             "no:xdist", *chapter.tests, f"book/{chapter.notebook.name}"],
            cwd=scratch, capture_output=True, text=True, timeout=900,
            # the bug is in mininn: a test's torch.nn half cannot see it
            env=dict(os.environ, MININN_TEST_BACKENDS="mininn"))
    finally:
        shutil.copy(chapter.notebook, target)
    seconds = time.monotonic() - start
    if done.returncode in (1, 2):  # tests failed / collection failed
        first = FAILED.search(done.stdout)
        return "caught", seconds, first.group(1) if first else ""
    if done.returncode == 0:
        return "MISSED", seconds, ""
    tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
    return "ERROR", seconds, f"pytest exit {done.returncode}: {' '.join(tail)}"


def in_the_workbook(selected) -> int:
    """Each bug typed into the reader's cell of a fresh workbook: the check
    of its piece (or a later one of its chapter) must report a failure."""
    import workbook

    verdicts = []  # one per bug and per proof: as it should be?
    with tempfile.TemporaryDirectory(prefix="mininn-workbook-") as tmp:
        out = Path(tmp) / workbook.NAME
        workbook.write(out, selected)
        for notebook, proof in workbook.proofs(out, selected).items():
            for mutant_id, (start, counts) in proof["mutants"].items():
                failing = [piece for piece, (_, bad) in counts.items() if bad]
                verdicts.append(bool(failing))
                late = failing and failing[0] != start
                print(f"caught       by check({failing[0]!r})" if failing
                      else "MISSED      ", f"{notebook}/{mutant_id}" + (
                          f" (its own check({start!r}) passed)" if late else ""),
                      flush=True)
            for run, want, what in (
                    ("in order", "pass", "written in order, each check passes "
                     "with the book's code after its piece"),
                    ("stubs", "fail", "with the stubs, every check should fail"),
                    ("book", "pass", "with the book, every check should pass")):
                wrong = [p for p, (_, bad) in proof[run].items()
                         if bool(bad) != (want == "fail")]
                verdicts.append(not wrong)
                print(f"{'ok' if not wrong else 'WRONG':12} {notebook}: {what}"
                      + (f"; not: {wrong}" if wrong else ""), flush=True)
    print(f"workbook: {sum(verdicts)} of {len(verdicts)} as they should be")
    return 0 if all(verdicts) else 1


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 tools/dev.py mutants",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*",
                        help="chapter prefixes (05, 07_state); default: all")
    parser.add_argument("--list", action="store_true",
                        help="print the bugs and whether they apply")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count(),
                        help="bugs side by side (default: one per core)")
    parser.add_argument("--workbook", action="store_true", help="type each "
                        "bug into the workbook's cells instead (a check fails)")
    args = parser.parse_args(argv)
    if args.workbook:
        return in_the_workbook(args.chapters)
    todo = chapters(args.chapters)
    if not todo:
        print("no mutant list matches", " ".join(args.chapters))
        return 2
    counts = Counter()
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
    with tempfile.TemporaryDirectory(prefix="mininn-mutants-") as base:
        local = threading.local()  # a scratch copy for each thread

        def job(item):
            if not hasattr(local, "scratch"):
                local.scratch = Path(shutil.copytree(
                    ROOT, Path(base) / str(threading.get_ident()),
                    ignore=COPY_IGNORE))
            return run_one(*item, local.scratch)

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for (mutant, _), (verdict, seconds, where) in zip(
                    runnable, pool.map(job, runnable)):
                counts[verdict] += 1
                print(f"{verdict:12} {mutant.name} ({seconds:.0f} s)"
                      + (f": {where}" if where else ""), flush=True)
    total = counts.total()
    print(f"mutants: {counts['caught']} of {total} caught, "
          f"{counts['MISSED']} missed, {counts['NOT APPLIED']} not applied, "
          f"{counts['ERROR']} errors")
    return 0 if counts["caught"] == total else 1


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
