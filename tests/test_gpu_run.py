"""tools/gpu_run.py on the CPU, so that it cannot rot between GPU runs:
one of its passes end to end with CUDA hidden (pytest, nbval, a kernel
under the pass's start-up file, the junit XML, the report), and the
checks it makes of the start-up markers and of pytest's results."""
import json
import subprocess
import sys
from pathlib import Path

import gpu_run
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


def probe_notebook(path):
    """A one-cell chapter with a GPU path: it picks cuda when it can."""
    cell = nbformat.v4.new_code_cell(
        'device = torch.device("cuda" if torch.cuda.is_available() else '
        '"meta")\nprint(device.type in ("cuda", "meta"))', execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                           text="True\n")]
    notebook = nbformat.v4.new_notebook(cells=[cell], metadata={
        "kernelspec": {"name": "python3", "language": "python",
                       "display_name": "Python 3"}})
    nbformat.write(notebook, path)
    return path


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """The pass with the most to check: the old TF32 flags set at kernel
    start, under the cuBLAS override (the notebook uses the torch that the
    start-up file imported)."""
    folder = tmp_path_factory.mktemp("gpu-run")
    done = subprocess.run(
        [sys.executable, "tools/gpu_run.py", "--dry-run", "--out", folder,
         "--passes", "tf32-forced", "--notebooks",
         probe_notebook(folder / "probe.ipynb")],
        cwd=ROOT, capture_output=True, text=True)
    return done, folder


def test_a_dry_run_passes_and_reports_each_cell(dry_run):
    done, folder = dry_run
    assert done.returncode == 0, done.stdout + done.stderr
    [report] = folder.glob("*-dry-run.md")
    text = report.read_text()
    assert text.startswith("# GPU run of ") and "All passed" in text
    assert "| tf32-forced | the old flags, cuBLAS started in TF32 by the " \
        "override: probe | 1 | 0 | 0 | 0 | " in text


def markers(folder):
    """The start-up markers the dry run's kernel wrote (from the log)."""
    [log] = folder.glob("*-dry-run.log")
    return log.read_text().split("start-up markers:\n")[1].splitlines()


def test_each_kernel_ran_the_start_up_file_and_saw_no_cuda(dry_run):
    lines = markers(dry_run[1])
    assert gpu_run.marker_problems("tf32-forced", lines, 1, cuda=False) == []
    assert json.loads(lines[0])["cuda"] is False


def test_the_markers_fail_a_kernel_that_cannot_see_cuda(dry_run):
    lines = markers(dry_run[1])
    assert gpu_run.marker_problems("tf32-forced", lines, 1, cuda=True) == [
        "a kernel cannot see CUDA"]


def test_the_markers_fail_a_kernel_missing_or_in_another_tf32_state(dry_run):
    lines = markers(dry_run[1])
    assert gpu_run.marker_problems("tf32-forced", lines, 2, cuda=False) == [
        "1 start-up markers for 2 kernels"]
    problems = gpu_run.marker_problems("tf32-new", lines, 1, cuda=False)
    assert [p.split(" after")[0] for p in problems] == [
        "TF32 reads [True, True]"]
    # as the legacy start-up would leave it without the override
    marker = json.loads(lines[0]) | {"before": [False, True]}
    assert gpu_run.marker_problems("tf32-forced", [json.dumps(marker)], 1,
                                   cuda=False)[0].startswith(
        "cuBLAS did not start in TF32")


def test_a_failed_test_or_marker_fails_the_report():
    results = [("tests/gpu/test_x.py::test_a", "passed", "", {"max": "1"}),
               ("tests/gpu/test_x.py::test_b", "failed", "assert 1 == 2", {})]
    text, bad = gpu_run.render("title", {"device": "d"}, {
        "device": ("what", results, ["a kernel cannot see CUDA"], 1.0)})
    assert bad == 2 and "## Failures" in text
    assert "tests/gpu/test_x.py::test_b: assert 1 == 2" in text
    assert "a kernel cannot see CUDA" in text
    assert "| device | what | 1 | 1 | 0 | 0 | 1 |" in text
    assert "- passed: `tests/gpu/test_x.py::test_a`; max = 1" in text


def test_the_chapters_with_a_gpu_path_are_those_that_pick_cuda():
    every = gpu_run.chapters()
    with_gpu = gpu_run.chapters(gpu_path_only=True)
    assert with_gpu and set(with_gpu) < set(every)
    for path in every:
        code = "".join(c.source for c in nbformat.read(path, 4).cells
                       if c.cell_type == "code")
        assert (path in with_gpu) == ("torch.cuda.is_available() else" in code)


def test_pytests_xml_gives_each_outcome_its_message_and_properties(tmp_path):
    case = '<testcase name="test_{}" file="t.py">{}</testcase>'
    (tmp_path / "j.xml").write_text("<testsuites><testsuite>" + "".join([
        case.format("ok", '<properties><property name="gap" value="1e-5"/>'
                    "</properties>"),
        case.format("bad", '<failure message="m">E   assert 1 == 2</failure>'),
        case.format("err", '<error message="m">E   RuntimeError</error>'),
        case.format("skip", '<skipped message="needs CUDA">t.py:4</skipped>'),
    ]) + "</testsuite></testsuites>")
    assert gpu_run.junit(tmp_path / "j.xml") == [
        ("t.py::test_ok", "passed", "", {"gap": "1e-5"}),
        ("t.py::test_bad", "failed", "E   assert 1 == 2", {}),
        ("t.py::test_err", "error", "E   RuntimeError", {}),
        ("t.py::test_skip", "skipped", "needs CUDA", {})]
