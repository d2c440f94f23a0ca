"""One entry point for readers, contributors and CI. Needs only Python 3.11:
the first run creates .venv/ and installs requirements.txt into it.
`python3 tools/dev.py` lists the commands; `COMMAND --help` answers without
installing anything."""
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
PYTHON = BIN / "python"
STAMP = VENV / ".installed"
REQUIREMENTS = ROOT / "requirements.txt"
COMMANDS = {
    "book": "build the website and its Chinese edition -> _build/html/",
    "i18n": "after changing English prose: merge it into locale/zh_CN/",
    "test": "run the suite (arguments go to pytest); `test --pdf`: the PDFs",
    "lab": "open the chapters in JupyterLab (arguments go to `jupyter lab`)",
    "export": "write book/mininn/ from the notebooks' export cells",
    "outputs": "re-run notebooks (all, or those named), store their outputs",
    "bench": "time mininn against torch.nn (benchmarks/bench.py)",
    "mutants": "check that the tests catch each bug in tools/mutants/ (slow)",
    "workbook": "chapters 1-8 as exercises -> _build/workbook/",
    "setup": "only create .venv and install the pins",
}
# the commands that hand their arguments to a script of the repository
SCRIPTS = {"i18n": ["tools/i18n.py", "update"], "export": ["tools/export.py"],
           "mutants": ["tools/mutants.py"], "workbook": ["tools/workbook.py"],
           "bench": ["benchmarks/bench.py"]}


def run(*cmd, drop=()):
    """Run `cmd` from the root without the names in `drop`; bytecode may be
    cached (else pytest rewrites the asserts again in every process)."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", *drop)}
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env).returncode


def setup():
    """Create .venv and install the pins, unless that is already done."""
    if STAMP.exists() and STAMP.stat().st_mtime >= REQUIREMENTS.stat().st_mtime:
        return
    if not PYTHON.exists():
        venv.create(VENV, with_pip=True)
    for cmd in ([PYTHON, "-m", "pip", "install", "-q", "-r", REQUIREMENTS],
                [PYTHON, "-m", "pip", "check"]):
        if run(*cmd) != 0:
            sys.exit("setup failed: see the pip output above")
    STAMP.touch()


def browser():
    """The browser, Chinese font and Paged.js the site tests and the PDFs
    need (looked up as site/book_print.py does), installed where we can."""
    sys.path.insert(0, str(ROOT / "site"))
    from book_print import BROWSERS, PAGED_JS, chinese_font

    if Path(BROWSERS[0]).exists() and chinese_font() and PAGED_JS.exists():
        return
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        run("bash", ROOT / ".ci" / "install-browser")
    else:
        print("note: the browser tests and the PDFs want Debian's "
              "`chromium-headless-shell`, `fonts-wqy-microhei` and Paged.js "
              "(`npm ci`), as .ci/install-browser installs them", flush=True)


def record_run(path, failed, seconds):
    """The chapter's line of reports/execution.json, which the book's
    execution-status table shows (site/execution_status.py)."""
    record = ROOT / "reports" / "execution.json"
    runs = json.loads(record.read_text(encoding="utf-8"))
    python, torch, machine = subprocess.run(
        [PYTHON, "-c", "import platform, torch; print(platform."
         "python_version(), torch.__version__, platform.machine())"],
        capture_output=True, text=True).stdout.split()
    cells = json.loads((ROOT / path).read_text(encoding="utf-8"))["cells"]
    runs[Path(path).name] = {
        "code_cells": sum(c["cell_type"] == "code" for c in cells),
        "status": "failed" if failed else "passed",
        "seconds": round(seconds, 1), "date": time.strftime("%Y-%m-%d"),
        "python": python, "torch": torch,
        "machine": f"{machine}, {os.cpu_count()} cores"}
    record.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n",
                      encoding="utf-8")


def test(rest):
    browser()
    parallel = []
    if not any(a.startswith("-n") or a == "no:xdist" for a in rest):
        # one worker per core, at most 4 (a dozen files), each taking a
        # whole file in conftest.py's order (longest first)
        parallel = ["-n", str(min(os.cpu_count() or 1, 4)), "--dist", "loadfile",
                    "--no-loadscope-reorder"]
    if "--pdf" in rest:  # the two PDFs: printed, then read page by page
        rest = ["-m", "pdf", *(a for a in rest if a != "--pdf")]
    elif not any(a.startswith("-m") or not a.startswith("-") for a in rest):
        # everything else; the PDFs' Paged.js layout alone costs more CPU
        # than the rest of the site (CI runs `test --pdf` as well)
        rest = ["-m", "not pdf", *rest]
    start, before = time.perf_counter(), os.times()
    code = run(PYTHON, "-m", "pytest", *parallel, *rest)
    after = os.times()
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    # CPU as `time` counts it: the detached Chromium is not in it
    print(f"dev.py test: {time.perf_counter() - start:.0f} s wall, "
          f"{cpu:.0f} s CPU (user+sys, without Chromium)")
    return code


def outputs(paths):
    """Each notebook in a fresh kernel, with the full workloads, its outputs
    stored without timing metadata."""
    code = 0
    for path in paths or sorted(str(p.relative_to(ROOT)) for p in
                                ROOT.glob("book/[0-9][0-9]_*.ipynb")):
        start = time.perf_counter()
        failed = run(BIN / "jupyter", "nbconvert", "--to", "notebook",
                     "--execute", "--inplace",
                     "--ExecutePreprocessor.kernel_name=python3",
                     "--ExecutePreprocessor.record_timing=False",
                     "--ExecutePreprocessor.timeout=600", path,
                     # then join the pieces a kernel flushed of one printed
                     # output: the site shows each piece as its own block
                     "--Exporter.preprocessors=nbconvert.preprocessors."
                     "CoalesceStreamsPreprocessor", drop=["MININN_QUICK"])
        record_run(path, failed, time.perf_counter() - start)
        code = code or failed
    return code


def main(argv):
    command, rest = (argv[0], argv[1:]) if argv else ("help", [])
    if command not in COMMANDS:
        print(__doc__ + "\n")
        for name, text in COMMANDS.items():
            print(f"  {name:9} {text}")
        return 0 if command in ("help", "-h", "--help") else 2
    # once installed, `lab` and the scripts answer --help themselves
    if {"-h", "--help"} & set(rest) and not (
            STAMP.exists() and command in ("lab", *SCRIPTS)):
        print(f"python3 tools/dev.py {command}: {COMMANDS[command]}")
        return 0
    setup()
    if command == "test":
        return test(rest)
    if command in SCRIPTS:
        # MININN_QUICK (chapter 10's short workload) is for the tests only
        return run(PYTHON, *SCRIPTS[command], *rest, drop=["MININN_QUICK"])
    if command == "book":
        browser()  # the build prints the PDF with chromium when it is there
        # the English edition, then the Chinese one beside it
        code = run(BIN / "jupyter-book", "build", "-W", "-n", "--keep-going",
                   ".", *rest) or run(PYTHON, "tools/i18n.py", "build")
        if code == 0:
            print("\nOpen _build/html/index.html in your browser "
                  "(中文版: _build/html/zh/index.html).")
        return code
    if command == "lab":
        root = hasattr(os, "geteuid") and os.geteuid() == 0
        return run(BIN / "jupyter", "lab", "--notebook-dir=book",
                   *(["--allow-root"] if root else []), *rest)
    if command == "outputs":
        return outputs(rest)
    return 0  # setup: done above


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
