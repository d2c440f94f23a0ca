"""The website as a reader meets it, in both editions.

Both editions are built once per test run, at the same time: the English one
with `jupyter-book build -W -n --keep-going --all .` into _build/html, the
Chinese one with `tools/i18n.py build` into _build/html/zh; each prints its
PDF (site/book_pdf.py) only in a run that reads the PDFs, `python3 tools/dev.py
test --pdf` (the tests marked pdf). One server serves _build/html (the Chinese edition
under zh/), and one Chromium per test process (playwright) browses it: two
sync playwrights cannot share a process.

Under pytest-xdist the first worker that needs the sites builds them while
the others wait for it (a file lock, as pytest-xdist's documentation does it
for a session fixture): the two builds keep both cores busy meanwhile.

BOOK_SITE_BUILT=1 tests the sites _build/html holds, without building them
(the build's own tests are then skipped). BOOK_SCREENSHOTS=1 saves a
screenshot of every page visited under _build/screenshots/.
"""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import book_pdf
import book_print
import book_zip
from checks import ANSWERED, BUILT, EDITIONS, HTML, PAGES, ROOT

# --------------------------------------------------------------------------
# Build (both editions, once per run), serve, browse.

def expected_files(edition, pdf):
    made = [d + ".html" for d in PAGES] + [book_zip.ZIP_NAME]
    if pdf and book_print.pdf_possible()[0]:
        made.append(book_pdf.PDF_NAME)
    return made


def build_editions(pdf):
    """Build both editions at once, with their PDFs if `pdf`; {edition:
    {"returncode", "log", "stale": the expected files this build did not
    write}}."""
    start = time.time() - 1
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if not pdf:
        env["BOOK_PDF"] = "0"  # book_print.pdf_possible()
    commands = {
        "en": [str(Path(sys.executable).parent / "jupyter-book"), "build",
               "-W", "-n", "--keep-going", "--all", "."],
        "zh": [sys.executable, str(ROOT / "tools" / "i18n.py"), "build",
               "--all"]}
    running = {edition: subprocess.Popen(
        command, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT) for edition, command in commands.items()}
    results = {}
    for edition, process in running.items():
        log = re.sub(r"\x1b\[[0-9;]*m", "", process.communicate()[0])
        folder = EDITIONS[edition]
        results[edition] = {
            "returncode": process.returncode, "log": log,
            "pdf": pdf and book_print.pdf_possible()[0],
            "stale": [name for name in expected_files(edition, pdf)
                      if not (folder / name).exists()
                      or (folder / name).stat().st_mtime < start]}
    return results


@pytest.fixture(scope="session")
def builds(request, tmp_path_factory):
    if BUILT:
        return {edition: {"returncode": None, "log": "", "stale": [],
                          "pdf": (folder / book_pdf.PDF_NAME).exists()}
                for edition, folder in EDITIONS.items()}
    # the PDFs only for a run that reads them (tests marked pdf): every
    # pytest-xdist worker collects the whole selection, so all agree
    pdf = any(item.get_closest_marker("pdf")
              for item in request.session.items)
    if not hasattr(request.config, "workerinput"):  # one process
        return build_editions(pdf)
    shared = tmp_path_factory.getbasetemp().parent / "site-builds.json"
    from filelock import FileLock

    with FileLock(f"{shared}.lock"):
        if not shared.exists():
            shared.write_text(json.dumps(build_editions(pdf)))
        return json.loads(shared.read_text())


@pytest.fixture(scope="session")
def site(builds):
    """{edition: its base URL}, served on 127.0.0.1 by one server."""
    stale = {edition: (built["stale"], built["log"][-3000:])
             for edition, built in builds.items() if built["stale"]}
    if stale:  # never test files left over from an earlier build
        pytest.fail(f"the build did not write {stale}")
    with book_print.serve(HTML, cache_assets=True, errors=ANSWERED) as base:
        yield {edition: base + folder.relative_to(HTML).as_posix() + "/"
               if folder != HTML else base
               for edition, folder in EDITIONS.items()}


@pytest.fixture(scope="session")
def browser():
    """Chromium (book_print.chromium(), launched with its CHROMIUM_ARGS)
    through playwright, once per test process for every test that browses.
    Two of playwright's sync APIs cannot run in one process, and a launch
    costs about 2 CPU-s with its driver."""
    chromium = book_print.chromium()
    if not Path(chromium).exists():
        message = (f"{chromium} is missing: install Debian's "
                   "chromium-headless-shell (.ci/install-browser), or name "
                   "a Chromium in BOOK_CHROMIUM, to run the browser tests")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium, args=book_print.CHROMIUM_ARGS)
        yield launched
        launched.close()
