"""The book's GPU checks on a CUDA machine (`--dry-run`: any machine, CUDA
hidden), and their report: reports/gpu/<date>-<device>.md, pytest's output
beside it (.log). Each pass is a pytest run with --junitxml: `device` runs
`pytest -m gpu tests/gpu`, the others the chapters under nbval, each kernel
started by an IPython start-up file that sets TF32 its way and writes a
line: whether it sees CUDA, TF32 before and after. So a kernel that cannot
see the GPU fails the run instead of passing on the meta device. Exit
status: 0 all passed, 1 something failed, 2 no CUDA here.
"""
import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports" / "gpu"
# A cell that picks its device, cuda when there is one (tests/
# test_notebook_hygiene.py holds every chapter to this form).
DEVICE_PICK = re.compile(
    r'torch\.device\("cuda" if torch\.cuda\.is_available\(\) else "\w+"\)')
NEW = ("torch.backends.cuda.matmul.fp32_precision, "
       "torch.backends.cudnn.conv.fp32_precision")
OLD = "torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32"
SET_OLD = ("torch.backends.cuda.matmul.allow_tf32 = True\n"
           "torch.backends.cudnn.allow_tf32 = True")
# name: (what, TF32 read by, set by, expected after, environment). torch
# refuses a process that mixes the two APIs, so each file reads as it sets.
PASSES = {
    "chapters": ("every chapter", NEW, "", None, {}),
    "tf32-new": ("TF32 allowed at kernel start by the new API", NEW,
                 'torch.backends.fp32_precision = "tf32"', ["tf32", "tf32"],
                 {}),
    "tf32-legacy": ("TF32 allowed at kernel start by the old flags", OLD,
                    SET_OLD, [True, True], {}),
    # some deployment images set the override
    "tf32-forced": ("the old flags, cuBLAS started in TF32 by the override",
                    OLD, SET_OLD, [True, True],
                    {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}),
}
STARTUP = '''\
import json, os, torch
before = [{read}]
{set}
with open(os.environ["MININN_GPU_MARKERS"], "a") as markers:
    markers.write(json.dumps({{"cuda": torch.cuda.is_available(),
                              "before": before, "after": [{read}]}}) + "\\n")
'''


def chapters(gpu_path_only=False):
    """The chapters, or those with a cell that picks cuda when it can."""
    paths = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    return [p for p in paths if not gpu_path_only or any(
        DEVICE_PICK.search("".join(cell["source"])) for cell in
        json.loads(p.read_text(encoding="utf-8"))["cells"])]


def recorded():
    """The reports of real runs in reports/gpu/, oldest first."""
    return sorted(p for p in REPORTS.glob("[0-9][0-9][0-9][0-9]-*.md")
                  if not p.stem.endswith("dry-run"))


def marker_problems(name, lines, kernels, cuda):
    """What is wrong with the start-up markers of pass `name`: one line
    per kernel, each seeing CUDA exactly when `cuda`, TF32 as set."""
    _, _, _, after, env = PASSES[name]
    problems = set()
    if len(lines) != kernels:
        problems.add(f"{len(lines)} start-up markers for {kernels} kernels")
    for m in map(json.loads, lines):
        if m["cuda"] != cuda:
            problems.add(f"a kernel {'cannot' if cuda else 'can'} see CUDA")
        if after is not None and m["after"] != after:
            problems.add(f"TF32 reads {m['after']} after the start-up file, "
                         f"not {after}")
        if env and m["before"][0] is not True:  # the override's pass
            problems.add(f"cuBLAS did not start in TF32 under the override: "
                         f"{m['before']}")
    return sorted(problems)


def run_pass(name, paths, folder, env, timeout):
    """pytest over `paths` with a --junitxml; (results, output, problems)."""
    xml = folder / f"{name}.xml"
    # the repository's configuration wherever the notebooks are; only the
    # plugins the passes need, whatever else a CUDA image has installed;
    # xunit1, the junit flavour that keeps record_property's values
    cmd = [sys.executable, "-m", "pytest", "-q", "-c", ROOT / "pyproject.toml",
           "--rootdir", ROOT, "-p", "nbval.plugin", "-p", "xdist.plugin",
           "-o", "junit_family=xunit1", f"--junitxml={xml}"]
    env = dict(env, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    if name == "device":
        cmd += ["-m", "gpu", "tests/gpu"]
    else:
        startup = folder / f"ipython-{name}" / "profile_default" / "startup"
        startup.mkdir(parents=True)
        _, read, setting, _, extra = PASSES[name]
        (startup / "00-gpu-run.py").write_text(
            STARTUP.format(read=read, set=setting))
        markers = folder / f"{name}.markers"
        markers.write_text("")
        env.update(extra, IPYTHONDIR=str(startup.parents[1]),
                   MININN_GPU_MARKERS=str(markers))
        workers = min(len(paths), os.cpu_count() or 1)
        cmd += ["-n", str(workers), "--dist", "loadfile"] * (workers > 1)
        cmd += paths
    try:
        done = subprocess.run([str(c) for c in cmd], cwd=ROOT, env=env,
                              capture_output=True, text=True,
                              timeout=max(timeout, 30))
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:
        output = f"timed out after {e.timeout:.0f} s\n" + (  # in bytes
            e.stdout or b"").decode(errors="replace")
    results = junit(xml) if xml.exists() else []
    problems = [] if xml.exists() else ["no junit XML: see the log"]
    if name != "device":
        lines = markers.read_text().splitlines()
        output += "\nstart-up markers:\n" + "\n".join(lines)
        problems += marker_problems(name, lines, len(paths),
                                    env.get("CUDA_VISIBLE_DEVICES") != "")
    return results, output, problems


def junit(path):
    """[(test id, outcome, message, {property: value})] from pytest's XML."""
    results = []
    for case in ET.parse(path).iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                text = child.text if child.tag != "skipped" else None
                message = (text or child.get("message") or "").strip()
        results.append((f"{case.get('file')}::{case.get('name')}", outcome,
                        message, {p.get("name"): p.get("value")
                                  for p in case.iter("property")}))
    return results


def facts(dry):
    """The machine and the versions, as the report's first table."""
    rows = {"python": sys.version.split()[0]} | {
        dist: importlib.metadata.version(dist) for dist in
        ("torch", "pytest", "pytest-xdist", "nbval", "ipykernel")}
    pin = re.search(r"^torch==(\S+)", (ROOT / "requirements.txt").read_text(),
                    re.M)[1]
    rows["torch"] += f" (requirements.txt pins {pin})"
    if dry:
        return rows | {"device": "cpu (dry run, CUDA hidden)"}
    import torch
    gpu = torch.cuda.get_device_properties(0)
    return rows | {
        "device": f"{gpu.name} ({torch.cuda.device_count()} GPU(s), compute "
                  f"capability {gpu.major}.{gpu.minor}, "
                  f"{gpu.total_memory / 2**30:.0f} GiB)",
        "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}


def render(title, machine, passes):
    """(report, failures): the machine, a line per pass, what failed, each
    device test; `passes`: {name: (what, results, problems, seconds)}."""
    failed = [(name, p) for name, (_, _, problems, _) in passes.items()
              for p in problems]
    failed += [(name, f"{tid}: {message}") for name, (_, results, _, _)
               in passes.items() for tid, outcome, message, _ in results
               if outcome in ("failed", "error")]
    verdict = f"{len(failed)} failures" if failed else "All passed"
    lines = [f"# {title}", "", f"{verdict}; `python tools/gpu_run.py`.", "",
             "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in machine.items()]
    lines += ["", "| pass | what | passed | failed | errors | skipped | "
              "seconds |", "|---|---|---|---|---|---|---|"]
    for name, (what, results, _, seconds) in passes.items():
        n = Counter(outcome for _, outcome, _, _ in results)
        lines.append(f"| {name} | {what} | {n['passed']} | {n['failed']} | "
                     f"{n['error']} | {n['skipped']} | {seconds:.0f} |")
    if failed:
        lines += ["", "## Failures", ""]
        for name, text in failed:  # nbval colours its messages
            text = re.sub(r"\x1b\[[0-9;]*m", "", text)[-3000:]
            lines += [f"{name}:", "", "```text", text, "```", ""]
    if "device" in passes:
        lines += ["", "## The device tests", ""]
        for tid, outcome, message, props in passes["device"][1]:
            note = f" ({message})" if outcome == "skipped" else ""
            lines.append(f"- {outcome}: `{tid}`{note}" + "".join(
                f"; {k} = {v}" for k, v in props.items()))  # measured
    return "\n".join(lines).rstrip() + "\n", len(failed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split(" (")[0])
    parser.add_argument("--dry-run", action="store_true", help="hide CUDA")
    parser.add_argument("--out", type=Path, help="the report's folder "
                        "(a dry run's: a temporary one)")
    parser.add_argument("--passes", nargs="+", choices=["device", *PASSES],
                        default=["device", *PASSES])
    parser.add_argument("--notebooks", nargs="+", type=Path,
                        help="instead of the chapters (the dry run's test)")
    parser.add_argument("--budget", type=float, default=540,
                        help="seconds for every pass together")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items()
           if "TF32" not in k and k not in ("IPYTHONDIR", "PYTEST_ADDOPTS")}
    if args.dry_run:
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        import torch
        if not torch.cuda.is_available():
            print("no CUDA here (--dry-run runs the machinery on the CPU)")
            return 2
    machine = facts(args.dry_run)
    date = time.strftime("%Y-%m-%d")
    slug = "dry-run" if args.dry_run else re.sub(
        r"[^a-z0-9]+", "-", machine["device"].split(" (")[0].lower()).strip("-")
    out = args.out or (Path(tempfile.mkdtemp()) if args.dry_run else REPORTS)
    out.mkdir(parents=True, exist_ok=True)
    passes, log, start = {}, [], time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.passes:
            paths = args.notebooks or chapters(name.startswith("tf32"))
            what = ("`pytest -m gpu tests/gpu`" if name == "device" else
                    PASSES[name][0] + ": " + ", ".join(p.stem for p in paths))
            print(f"{name}: {what}", flush=True)
            began = time.monotonic()
            results, output, problems = run_pass(
                name, paths, Path(scratch), env, args.budget - began + start)
            passes[name] = (what, results, problems, time.monotonic() - began)
            log += [f"===== {name}", output]
            print(f"    {dict(Counter(r[1] for r in results))}", *problems,
                  sep="\n    ", flush=True)
    text, bad = render(f"GPU run of {date} on {machine['device']}", machine,
                       passes)
    stem = out / f"{date}-{slug}"
    stem.with_suffix(".md").write_text(text, encoding="utf-8")
    stem.with_suffix(".log").write_text("\n".join(log), encoding="utf-8")
    print(f"report: {stem}.md ({bad} failures)")
    if not args.dry_run:
        print("reports/gpu/README.md says which pages then change")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
