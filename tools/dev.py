"""One entry point for readers, contributors and CI. Needs only Python 3.11:
the first run creates .venv/ and installs requirements.txt into it.

    python3 tools/dev.py book        build the website -> _build/html/index.html
                                     (and its Chinese edition -> _build/html/zh/)
    python3 tools/dev.py i18n        after changing English prose: extract it,
                                     merge it into locale/zh_CN/ (tools/i18n.py)
    python3 tools/dev.py test        run the test suite (pytest args ok)
    python3 tools/dev.py test --pdf  print the two PDFs and check them
    python3 tools/dev.py lab         open the chapters in JupyterLab
    python3 tools/dev.py export      notebooks -> book/mininn/
    python3 tools/dev.py outputs     re-run notebooks in fresh kernels
                                     (all, or the ones named after it)
    python3 tools/dev.py bench       mininn vs torch.nn timings
    python3 tools/dev.py mutants     apply realistic bugs one at a time and
                                     check the tests catch each (slow)
    python3 tools/dev.py workbook    chapters 1-8 as exercises, checked by
                                     the book's tests -> _build/workbook/
    python3 tools/dev.py setup       only create .venv and install the pins

`test` runs pytest over both CPU cores (pytest-xdist, one worker per
notebook or test file); arguments after it go to pytest (`-n 0` runs in
one process). `lab` passes its arguments to `jupyter lab` and adds
--allow-root when run as root (Docker, CI). `--help` after any command
answers without installing anything.
"""
import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed"
REQUIREMENTS = ROOT / "requirements.txt"


def run(*cmd, **kwargs):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, **kwargs).returncode


def setup():
    """Create .venv and install the pins, unless that is already done."""
    fresh = STAMP.exists() and STAMP.stat().st_mtime >= REQUIREMENTS.stat().st_mtime
    if fresh:
        return
    if not (BIN / "python").exists():
        venv.create(VENV, with_pip=True)
    python = BIN / "python"
    for cmd in (
        [python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        [python, "-m", "pip", "install", "--quiet", "-r", REQUIREMENTS],
        [python, "-m", "pip", "check"],
    ):
        if run(*cmd) != 0:
            sys.exit("setup failed: see the pip output above")
    STAMP.touch()


def bytecode():
    """The environment, with Python allowed to cache bytecode. Where
    PYTHONDONTWRITEBYTECODE is set (some images set it), pytest would
    rewrite the asserts of every test module again in each of its
    processes, about 5 CPU-s each; the cache lives in __pycache__/."""
    return {k: v for k, v in os.environ.items()
            if k != "PYTHONDONTWRITEBYTECODE"}


def browser():
    """The site tests drive Debian's chromium-headless-shell, the Chinese
    PDF needs a Chinese font, and the PDFs Paged.js: .ci/install-browser
    installs all three where we can. The lookup is the PDF's printing module's
    (site/book_print.py)."""
    sys.path.insert(0, str(ROOT / "site"))
    from book_print import BROWSERS, PAGED_JS, chinese_font, chromium

    if Path(BROWSERS[0]).exists() and chinese_font() and PAGED_JS.exists():
        return
    script = ROOT / ".ci" / "install-browser"
    if script.exists() and hasattr(os, "geteuid") and os.geteuid() == 0:
        run("bash", script)
    elif Path(chromium()).exists() and chinese_font() and PAGED_JS.exists():
        print(f"note: the browser tests use {chromium()}; Debian's "
              "`chromium-headless-shell` runs them with less CPU", flush=True)
    else:
        print("note: install Debian's `chromium-headless-shell` and "
              "`fonts-wqy-microhei`, and Paged.js (`npm ci`), as "
              ".ci/install-browser does, for the browser tests and the PDFs",
              flush=True)


def notebooks(names):
    return names or sorted(str(p.relative_to(ROOT))
                           for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))


HELP = {
    "book": "Build the website into _build/html (jupyter-book, -W -n), "
            "then its\nChinese edition into _build/html/zh (tools/i18n.py).",
    "i18n": "Extract the English strings and merge them into "
            "locale/zh_CN/LC_MESSAGES/\n(new ones empty, changed ones fuzzy); "
            "print what is left to translate.",
    "test": "Run the suite: nbval, tests/, both editions of the site in a "
            "browser;\n`test --pdf` prints the two PDFs and checks them "
            "(CI runs both).\nArguments go to pytest, e.g. "
            "`test -m \"not site\"`, `test book/02_traversal.ipynb`, "
            "`test -n 0`.",
    "lab": "Open the chapters in JupyterLab; arguments go to `jupyter lab`\n"
           "(its own --help needs the environment: run `setup` first).",
    "export": "Write book/mininn/ from the notebooks' export cells.",
    "outputs": "Re-run notebooks (all, or those named) in fresh kernels and "
               "store their outputs.",
    "bench": "Time mininn against torch.nn (benchmarks/bench.py).",
    "mutants": "Apply each bug of tools/mutants/*.toml to a scratch copy, "
               "one at a time,\nand check that the chapter's notebook and "
               "tests catch it (`mutants 05`,\n`mutants --list`; "
               "`mutants --workbook`: in the workbook's cells). Slow: "
               "not part of `test`.",
    "workbook": "Write the workbook (chapters 1-8 as exercises, with checks "
                "that run\nthe book's tests on the reader's code) into "
                "_build/workbook/ (tools/workbook.py).",
    "setup": "Create .venv and install requirements.txt (done by every "
             "other command on first use).",
}


def coalesce_streams(path):
    """Join the pieces of a cell's printed output into one output per
    stream. A kernel sends text in pieces as it flushes; the site
    (myst-nb) shows each piece as its own block, so one printed line could
    appear broken in two. nbval compares the joined text either way."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        joined = []
        for out in cell.get("outputs", []):
            last = joined[-1] if joined else None
            if (out.get("output_type") == "stream" and last is not None
                    and last.get("output_type") == "stream"
                    and last["name"] == out["name"]):
                text = "".join(last["text"]) + "".join(out["text"])
                last["text"] = text.splitlines(keepends=True)
            else:
                joined.append(out)
        if "outputs" in cell:
            cell["outputs"] = joined
    path.write_text(json.dumps(nb, sort_keys=True, indent=1,
                               ensure_ascii=False) + "\n", encoding="utf-8")


def record_run(path, failed, seconds):
    """The chapter's line of reports/execution.json, which the book's
    execution-status table shows (site/execution_status.py)."""
    record = ROOT / "reports" / "execution.json"
    runs = (json.loads(record.read_text(encoding="utf-8"))
            if record.exists() else {})
    versions = subprocess.run(
        [str(BIN / "python"), "-c", "import platform, torch; print("
         "platform.python_version(), torch.__version__, platform.machine())"],
        capture_output=True, text=True).stdout.split()
    cells = json.loads((ROOT / path).read_text(encoding="utf-8"))["cells"]
    runs[Path(path).name] = {
        "code_cells": sum(c["cell_type"] == "code" for c in cells),
        "status": "failed" if failed else "passed",
        "seconds": round(seconds, 1),
        "date": time.strftime("%Y-%m-%d"),
        "python": versions[0], "torch": versions[1],
        "machine": f"{versions[2]}, {os.cpu_count()} cores"}
    record.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n",
                      encoding="utf-8")


def wants_help(rest):
    return any(arg in ("-h", "--help") for arg in rest)


def workers():
    """pytest-xdist workers: one per core, at most 4 (a dozen files)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def main(argv):
    command, rest = (argv[0], argv[1:]) if argv else ("help", [])
    python = BIN / "python"
    if command in ("help", "-h", "--help") or command not in COMMANDS:
        print(__doc__)
        return 0 if command in ("help", "-h", "--help") else 2
    installed = (BIN / "python").exists() and STAMP.exists()
    if wants_help(rest) and (command != "lab" or not installed):
        print(f"python3 tools/dev.py {command}: {HELP[command]}")
        if command in ("test", "lab") and not installed:
            print("(.venv is not set up yet; the first real run installs it)")
        return 0
    setup()
    if command == "setup":
        return 0
    if command == "test":
        browser()
        parallel = [] if any(a.startswith("-n") or a == "no:xdist"
                             for a in rest) else [
            "-n", str(workers()), "--dist", "loadfile",
            # in conftest.py's order (longest first), not by test count
            "--no-loadscope-reorder"]
        if "--pdf" in rest:  # the two PDFs: printed, then read page by page
            rest = ["-m", "pdf", *(a for a in rest if a != "--pdf")]
        elif not any(a.startswith("-m") or not a.startswith("-")
                     for a in rest):
            # everything else; the PDFs' Paged.js layout alone costs more
            # CPU than the rest of the site (CI runs `test --pdf` as well)
            rest = ["-m", "not pdf", *rest]
        start, before = time.perf_counter(), os.times()
        code = run(python, "-m", "pytest", *parallel, *rest, env=bytecode())
        after = os.times()
        cpu = (after.children_user - before.children_user
               + after.children_system - before.children_system)
        # CPU as `time` counts it: the detached Chromium is not in it
        print(f"dev.py test: {time.perf_counter() - start:.0f} s wall, "
              f"{cpu:.0f} s CPU (user+sys, without Chromium)")
        return code
    if command == "book":
        browser()  # the build prints the PDF with chromium when it is there
        code = run(BIN / "jupyter-book", "build", "-W", "-n", "--keep-going",
                   ".", *rest)
        if code == 0:  # the Chinese edition, beside it (issue 20)
            code = run(python, "tools/i18n.py", "build")
        if code == 0:
            print("\nOpen _build/html/index.html in your browser "
                  "(中文版: _build/html/zh/index.html).")
        return code
    if command == "i18n":
        return run(python, "tools/i18n.py", "update", *rest)
    if command == "lab":
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        return run(BIN / "jupyter", "lab", "--notebook-dir=book",
                   *(["--allow-root"] if root else []), *rest)
    if command == "export":
        return run(python, "tools/export.py", *rest)
    if command == "outputs":  # fresh kernel each, no timing metadata stored
        env = {k: v for k, v in os.environ.items() if k != "MININN_QUICK"}
        code = 0
        for path in notebooks(rest):
            start = time.perf_counter()
            failed = run(BIN / "jupyter", "nbconvert", "--to", "notebook",
                         "--execute", "--inplace",
                         "--ExecutePreprocessor.kernel_name=python3",
                         "--ExecutePreprocessor.record_timing=False",
                         "--ExecutePreprocessor.timeout=600", path, env=env)
            coalesce_streams(ROOT / path)
            record_run(path, failed, time.perf_counter() - start)
            code = code or failed
        return code
    if command == "mutants":
        return run(python, "tools/mutants.py", *rest)
    if command == "workbook":
        return run(python, "tools/workbook.py", *rest)
    if command == "bench":
        env = {k: v for k, v in os.environ.items() if k != "MININN_QUICK"}
        return run(python, "benchmarks/bench.py", *rest, env=env)
    return 2


COMMANDS = {"help", "setup", "test", "book", "lab", "export", "outputs",
            "bench", "mutants", "i18n", "workbook"}

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
