"""tools/gpu_check.py, kept from rotting between GPU runs.

No GPU is needed: its short dry run (`--quick`) runs the script end to end
on the CPU, over a small generated notebook that keeps the chapters'
contract, and the report it writes is checked for its shape. The parsers
are checked on real pytest output, and book/gpu_runs.md against the
reports in book/gpu-runs/.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import kernel_server
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import gpu_check

# The closing lines of real pytest 9 runs (-q), as the script reads them.
SUMMARIES = {
    "3 passed in 1.69s": {"passed": 3, "seconds": 1.69},
    "1 failed, 3 passed, 1 skipped, 1 xfailed, 1 warning, 1 error in 2.41s":
        {"failed": 1, "passed": 3, "skipped": 1, "xfailed": 1,
         "warnings": 1, "errors": 1, "seconds": 2.41},
    "2 failed, 2 passed, 4 warnings in 25.70s":
        {"failed": 2, "passed": 2, "warnings": 4, "seconds": 25.7},
    "7 deselected in 2.90s": {"deselected": 7, "seconds": 2.9},
    "no tests ran in 0.01s": {"seconds": 0.01},
    "===== 1 failed, 40 passed in 61.00s (0:01:01) =====":
        {"failed": 1, "passed": 40, "seconds": 61.0},
}

# The end of a real nbval run (xdist, -ra) with two failed cells.
NBVAL_TAIL = """\
-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
=========================== short test summary info ============================
FAILED book/06_apply.ipynb::Cell 2 - \x1b[91mNotebook cell execution failed\x1b[0m
FAILED book/06_apply.ipynb::Cell 1 - \x1b[91mNotebook cell execution failed\x1b[0m
ERROR tests/test_apply.py::test_x - RuntimeError: fixture broke
2 failed, 2 passed, 4 warnings, 1 error in 25.70s
"""


@pytest.mark.parametrize("line", SUMMARIES)
def test_parse_summary_reads_pytests_closing_line(line):
    output = "..F.                                  [100%]\n" + line + "\n"
    counts = gpu_check.parse_summary(output)
    assert counts.pop("line") == line.strip("= ")
    assert counts == SUMMARIES[line]


def test_parse_summary_is_none_without_a_closing_line():
    assert gpu_check.parse_summary("Traceback (most recent call last):\n"
                                   "ImportError: no nbval\n") is None


def test_parse_failures_strips_nbvals_colours_and_names_the_files():
    failures = gpu_check.parse_failures(NBVAL_TAIL)
    assert failures == [
        "FAILED book/06_apply.ipynb::Cell 2 - Notebook cell execution failed",
        "FAILED book/06_apply.ipynb::Cell 1 - Notebook cell execution failed",
        "ERROR tests/test_apply.py::test_x - RuntimeError: fixture broke"]
    assert gpu_check.failed_files(failures) == ["book/06_apply.ipynb",
                                                "tests/test_apply.py"]
    assert gpu_check.parse_summary(NBVAL_TAIL)["errors"] == 1


def test_parse_record_reads_label_and_hash_lines():
    a, b = "a" * 64, "b" * 64
    record = gpu_check.parse_record(f"mininn {a}\ntorch.nn {a}\nmain {b}\n"
                                    f"main {a}\n\n")
    assert record == {"mininn": a, "torch.nn": a, "main": f"{b},{a}"}
    assert "?malformed" in gpu_check.parse_record("mininn 1234\n")
    assert gpu_check.twins(record) == [("mininn", "torch.nn")]
    assert gpu_check.twins({"loop-mininn": a, "loop-torch": a}) == [
        ("loop-mininn", "loop-torch")]


def test_startup_files_use_one_tf32_api_each_and_leave_a_marker():
    legacy = gpu_check.startup_file("legacy")
    new = gpu_check.startup_file("new")
    assert "allow_tf32 = True" in legacy and "fp32_precision" not in legacy
    assert 'fp32_precision = "tf32"' in new and "allow_tf32" not in new
    for text in (legacy, new):
        compile(text, "startup", "exec")
        assert "MININN_TF32_STARTUP" in text
        assert "MININN_TF32_SENTINEL" in text


def test_legacy_tf32_flags_are_found_unless_the_new_api_is_beside(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Old: `torch.backends.cudnn.allow_tf32`.\n\n"
                    "Unrelated.\n\nUnrelated too.\n\n"
                    "Old `allow_tf32`, new `fp32_precision`.\n")
    assert gpu_check.legacy_tf32_uses([page]) == ["page.md paragraph 1"]
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "id": "a", "source": ["`allow_tf32`"]},
        {"cell_type": "code", "id": "b", "source": ["fp32_precision"]},
        {"cell_type": "code", "id": "c", "source": ["x = 1"]},
        {"cell_type": "code", "id": "d", "source": ["allow_tf32 = 1"]}]}))
    assert gpu_check.legacy_tf32_uses([notebook]) == ["nb.ipynb d"]


def test_device_cells_find_a_cell_without_the_cuda_assert(tmp_path):
    cells = [{"cell_type": "code", "id": "good", "source": [
        'device = torch.device("cuda" if torch.cuda.is_available() '
        'else "meta")\n', 'assert os.environ.get("MININN_EXPECT_CUDA")\n']},
        {"cell_type": "code", "id": "bad", "source": [
            'device = torch.device("cuda" if ok else "cpu")\n']},
        {"cell_type": "markdown", "id": "prose", "source": ["cuda"]}]
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": cells}))
    assert gpu_check.device_cells(notebook) == (["good", "bad"], ["bad"])


def test_command_line_hides_the_out_folder():
    line = gpu_check.command_line(["--out", "/tmp/x/y", "--chapters=06"])
    assert line == "python tools/gpu_check.py --out DIR --chapters=06"
    assert gpu_check.command_line(["--out=/a"]).endswith("--out=DIR")


def test_without_cuda_a_real_run_stops_at_once(monkeypatch, capsys):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main([]) == 2
    assert "no CUDA here" in capsys.readouterr().out


def test_wheels_are_the_notebook_tools_pinned_without_pytest():
    wheels = gpu_check.wheels()
    names = {w.split("==")[0] for w in wheels}
    assert {"nbval", "ipykernel", "jupyter-client", "nbformat",
            "pyzmq"} <= names
    assert not names & {"pytest", "pluggy", "pytest-xdist", "execnet"}
    for wheel in wheels:  # as tested together here
        name, version = wheel.split("==")
        assert gpu_check.pinned(name) == version, wheel


def determinism(records):
    """step_determinism's checks for runs that wrote `records`."""
    run = gpu_check.Run(gpu_check.parse_args(["--dry-run"]))
    shutil.rmtree(run.scratch)
    step = next(s for s in gpu_check.STEPS if s.name == "determinism")
    run.step, run.step_record = step, gpu_check.StepRecord(step.name,
                                                           step.title)
    for name, record in records.items():
        run.passes[name] = gpu_check.PassResult(
            name, name, [], 0, "", {}, [], 0.0, record=record)
    gpu_check.step_determinism(run)
    return [(c.label.split(" (")[0], c.ok) for c in run.checks]


def test_determinism_compares_the_three_runs_and_the_twins():
    same = {"mininn": "a" * 64, "torch.nn": "a" * 64}
    runs = ("nbval", "rerun-2", "rerun-3")
    wrote, across, twins = determinism({n: same for n in runs})
    assert wrote[1] and across == ("the same labels and loss hashes in all "
                                   "3 runs", True) and twins[1]
    drift = {**same, "mininn": "b" * 64}
    checks = determinism({"nbval": same, "rerun-2": same, "rerun-3": drift})
    assert [ok for _, ok in checks] == [True, False, True]
    assert [ok for _, ok in determinism({n: drift for n in runs})] == [
        True, True, False]
    silent = determinism({"nbval": same, "rerun-2": {}, "rerun-3": same})
    assert silent == [("chapter 9 wrote a run record in every run", False)]


def fake_report(folder, stem, passed=3, total=4):
    data = {"date": stem[:10], "passed": passed, "total": total,
            "facts": {"device": "NVIDIA H200", "torch": "2.13.0"}}
    (folder / f"{stem}.json").write_text(json.dumps(data))
    (folder / f"{stem}.md").write_text(f"# GPU run of {stem[:10]}\n")


def test_the_index_lists_and_includes_every_report(tmp_path):
    fake_report(tmp_path, "2026-01-02-nvidia-h200")
    fake_report(tmp_path, "2026-03-04-nvidia-h200", 4, 4)
    (tmp_path / "README.md").write_text("not a report")
    reports = gpu_check.reports_in(tmp_path)
    assert [md.name for md, _ in reports] == [
        "2026-03-04-nvidia-h200.md", "2026-01-02-nvidia-h200.md"]
    block = gpu_check.index_block(reports, "gpu-runs/")
    assert "No GPU run" not in block
    for stem in ("2026-03-04-nvidia-h200", "2026-01-02-nvidia-h200"):
        assert f"<gpu-run-{stem}>`" in block         # linked from the list
        assert f"(gpu-run-{stem})=" in block         # ... to its target
        assert f"```{{include}} gpu-runs/{stem}.md" in block
    assert "4 of 4 checks passed" in block
    assert gpu_check.index_block([], "") == gpu_check.NO_RUN_YET


def test_the_gpu_runs_page_lists_every_recorded_run():
    page = gpu_check.INDEX_PAGE.read_text()
    reports = gpu_check.reports_in(gpu_check.REPORTS)
    assert gpu_check.render_index(page, reports) == page, (
        "book/gpu_runs.md is out of date: python tools/gpu_check.py --index")
    files = sorted(p.name for p in gpu_check.REPORTS.glob("*.md")
                   if p.name != "README.md")
    assert files == sorted(md.name for md, _ in reports), (
        "a report in book/gpu-runs/ is not named <YYYY-MM-DD>-<device>.md")
    for name in files:
        assert f"gpu-runs/{name}" in page
    if not files:
        assert "No GPU run has been recorded yet" in page
    toc = (ROOT / "_toc.yml").read_text()
    assert "- file: book/gpu_runs" in toc.split("caption: Reference")[1]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The short dry run, end to end, in a subprocess: (exit status,
    stdout, report data, report markdown, rendered page)."""
    out = tmp_path_factory.mktemp("gpu-runs")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "MININN_EXPECT"))}
    done = subprocess.run(
        kernel_server.python_command(str(ROOT / "tools" / "gpu_check.py"),
                                     "--quick", "--out", str(out)),
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    reports = sorted(out.glob("*-dry-run-cpu.json"))
    assert reports, done.stdout + done.stderr
    data = json.loads(reports[0].read_text())
    markdown = reports[0].with_suffix(".md").read_text()
    page = (out / "gpu_runs.md").read_text()
    return done.returncode, done.stdout, data, markdown, page


def test_quick_dry_run_runs_every_step_and_ends_with_the_summary(quick):
    returncode, stdout, data, _, _ = quick
    assert returncode in (0, 1), stdout        # 3: the script itself broke
    assert data["dry_run"] and data["quick"] and data["complete"]
    lines = stdout.strip().splitlines()
    assert lines[-1] == data["summary"]
    assert lines[-1].startswith("gpu_check on cpu (dry run: cpu): ")
    assert re.search(r"\d+/\d+ checks passed", lines[-1])
    names = [s.name for s in gpu_check.STEPS]
    assert [s["name"] for s in data["steps"]] == names
    for index, name in enumerate(names, 1):      # a progress line per step
        assert f"[{index}/{len(names)}] {name}: " in stdout
    # one nbval pass: nothing to compare runs with (tested on its own)
    kept = {s.name for s in gpu_check.STEPS if not s.nbval} - {
        "determinism"} | gpu_check.QUICK_PASSES
    for step in data["steps"]:
        assert step["status"] == ("done" if step["name"] in kept
                                  else "skipped"), step
        assert step["status"] == "done" or step["note"]
        assert isinstance(step["seconds"], float)


def test_quick_dry_run_checks_pass_where_the_script_is_concerned(quick):
    returncode, _, data, _, _ = quick
    checks = data["checks"]
    assert len(checks) >= 40
    assert {c["section"] for c in checks} >= {
        "environment", "contract", "conversions", "precision", "autocast",
        "dataparallel", "nonblocking", "checkpoint", "tf32", "tf32-new"}
    # Everything but the chapters' side of the contract is the script's
    # own work on the fixture: it must pass. The contract may fail, with
    # a reason, until a chapter keeps its part.
    failing = [c for c in checks if not c["ok"]]
    assert all(c["section"] == "contract" and c["detail"] for c in failing)
    assert returncode == (1 if failing else 0)
    assert data["passed"] == len(checks) - len(failing)
    device_checks = [c for c in checks if c["section"] in (
        "conversions", "precision", "autocast", "dataparallel", "tf32")]
    assert all(c["label"].endswith("(dry run: cpu)") for c in device_checks)
    sentinel = [c for c in checks if c["section"] == "tf32-new"][0]
    assert "start-up file ran in each of the 1 kernels" in sentinel["label"]


def test_quick_dry_run_records_versions_tf32_hashes_and_nbval(quick):
    _, _, data, _, _ = quick
    import torch
    facts = data["facts"]
    assert facts["torch"] == torch.__version__
    assert facts["torch_pin"] and facts["device"] == "cpu"
    for key in ("driver", "cuda", "cudnn", "python", "nbval", "pytest"):
        assert facts[key]
    assert [t["what"] for t in data["tf32"]][:2] == [
        "chapter 6's model, batch 16", "chapter 6's model, batch 64"]
    assert all(t["tf32_off"] == t["tf32_on"] == 0.0 for t in data["tf32"])
    record = data["records"]["tf32-new"]
    assert sorted(record) == ["fixture-mininn", "fixture-torch.nn"]
    assert len(set(record.values())) == 1            # the twins agree
    nbval = {p["name"]: p for p in data["nbval"]}
    assert list(nbval) == ["tf32-new"]
    assert nbval["tf32-new"]["counts"]["passed"] == 3
    assert nbval["tf32-new"]["sentinel"][0].startswith("new\t")


def test_quick_dry_run_report_has_every_section(quick):
    _, _, data, markdown, page = quick
    for heading in ("# GPU run of ", "## Machine", "## Checks",
                    "## Max |GPU - CPU|, TF32 off and on",
                    "## Chapter 9's loss hashes", "## nbval passes",
                    "## Wall time per step"):
        assert heading in markdown
    for step in gpu_check.STEPS:
        assert f"### {step.name}: " in markdown
        assert f"| {step.name} | " in markdown          # its wall time
    marks = [line.split()[1] for line in markdown.splitlines()
             if re.match(r"- (PASS|\*\*FAIL\*\*) ", line)]
    assert len(marks) == data["total"]
    assert marks.count("PASS") == data["passed"]
    assert data["facts"]["torch"] in markdown
    # the page beside it lists the dry run's report, as book/gpu_runs.md
    # will list a real one
    stem = f"{data['date']}-dry-run-cpu"
    assert f"<gpu-run-{stem}>`" in page and f"{{include}} {stem}.md" in page
    assert "No GPU run has been recorded yet" not in page
