"""Both editions of the website, built once per test run (their PDFs only
for the tests marked pdf; under pytest-xdist by the first worker while the
others wait), served by one server and browsed by one Chromium per test
process. BOOK_SITE_BUILT=1 tests the sites _build/html holds as they are."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

import book_pdf
import book_print
import book_zip
from checks import ANSWERED, BUILT, EDITIONS, HTML, PAGES, ROOT


def build_editions(pdf):
    """Build both editions at once, with their PDFs if `pdf`; {edition:
    {"returncode", "log", "pdf", "stale": the files it did not write}}."""
    start = time.time() - 1
    pdf = pdf and book_print.pdf_possible()[0]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if not pdf:
        env["BOOK_PDF"] = "0"  # Paged.js takes 80 CPU-s an edition
    commands = {
        "en": [str(Path(sys.executable).parent / "jupyter-book"), "build",
               "-W", "-n", "--keep-going", "--all", "."],
        "zh": [sys.executable, str(ROOT / "tools" / "i18n.py"), "build",
               "--all"]}
    running = {edition: subprocess.Popen(
        command, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT) for edition, command in commands.items()}
    made = [d + ".html" for d in PAGES] + [book_zip.ZIP_NAME] + (
        [book_pdf.PDF_NAME] if pdf else [])
    results = {}
    for edition, process in running.items():
        log = re.sub(r"\x1b\[[0-9;]*m", "", process.communicate()[0])
        folder = EDITIONS[edition]
        results[edition] = {
            "returncode": process.returncode, "log": log, "pdf": pdf,
            "stale": [name for name in made if not (folder / name).exists()
                      or (folder / name).stat().st_mtime < start]}
    return results


@pytest.fixture(scope="session")
def builds(request, tmp_path_factory):
    if BUILT:
        return {edition: {"returncode": None, "log": "", "stale": [],
                          "pdf": (folder / book_pdf.PDF_NAME).exists()}
                for edition, folder in EDITIONS.items()}
    # every pytest-xdist worker collects the whole selection: all agree
    pdf = any(item.get_closest_marker("pdf")
              for item in request.session.items)
    if not hasattr(request.config, "workerinput"):  # one process
        return build_editions(pdf)
    shared = tmp_path_factory.getbasetemp().parent / "site-builds.json"
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
    """Chromium through playwright, once per test process: two sync
    playwrights cannot share one, and a launch costs about 2 CPU-s."""
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
