"""The book's GPU checks on a CUDA machine, and their report.

    python tools/gpu_run.py             # on a CUDA machine, from the root
    python tools/gpu_run.py --out DIR   # the report into DIR
    python tools/gpu_run.py --dry-run   # any machine, CUDA hidden

It runs pytest a few times, each with --junitxml, and renders the XML into
reports/gpu/<date>-<device>.md (and the pytest output beside it, .log):

  device       `pytest -m gpu tests/gpu`: mininn against torch.nn on CUDA,
               the TF32 tolerances, a GPU checkpoint in a CPU-only process,
               the capstone's losses across three runs
  chapters     every chapter under nbval
  tf32-new     the chapters with a GPU path, TF32 allowed at kernel start
               by torch.backends.fp32_precision
  tf32-legacy  the same by the old allow_tf32 flags
  tf32-forced  the legacy start plus TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1,
               which some deployment images set

Each nbval pass starts its kernels with an IPython start-up file that
writes one line per kernel: whether that kernel sees CUDA and how TF32
read before and after the file set it. The report checks those lines, so
a kernel that cannot see the GPU fails the run instead of passing on the
meta device. A dry run hides CUDA and expects no kernel to see it: it
shows that the machinery works, and, where torch is not the pinned
version, what that torch changes on the CPU. Exit status: 0 all passed,
1 something failed, 2 no CUDA here (without --dry-run).
"""
import argparse
import datetime
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
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
# name: (what, TF32 read by, set by, expected after, environment). torch
# refuses a process that mixes the two APIs, so each file reads as it sets.
PASSES = {
    "chapters": ("every chapter", NEW, "", None, {}),
    "tf32-new": ("TF32 allowed at kernel start by the new API", NEW,
                 'torch.backends.fp32_precision = "tf32"', ["tf32", "tf32"],
                 {}),
    "tf32-legacy": ("TF32 allowed at kernel start by the old flags", OLD,
                    "torch.backends.cuda.matmul.allow_tf32 = True\n"
                    "torch.backends.cudnn.allow_tf32 = True", [True, True],
                    {}),
    "tf32-forced": ("the old flags, cuBLAS started in TF32 by the override",
                    OLD, "torch.backends.cuda.matmul.allow_tf32 = True\n"
                    "torch.backends.cudnn.allow_tf32 = True", [True, True],
                    {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}),
}
STARTUP = '''\
# Written by tools/gpu_run.py for its pass "{name}".
import json
import os

import torch

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
    markers = [json.loads(line) for line in lines]
    problems = []
    if len(markers) != kernels:
        problems.append(f"{len(markers)} start-up markers for {kernels} "
                        "kernels")
    for m in markers:
        if m["cuda"] != cuda:
            problems.append("a kernel " + ("cannot" if cuda else "can")
                            + " see CUDA")
        if after is not None and m["after"] != after:
            problems.append(f"TF32 reads {m['after']} after the start-up "
                            f"file, not {after}")
        if env and m["before"][0] is not True:  # the override's pass
            problems.append("cuBLAS did not start in TF32 under the "
                            f"override: {m['before']}")
    return sorted(set(problems))


def run_pass(name, paths, folder, env, timeout):
    """pytest over `paths` with a --junitxml; (results, output, problems)."""
    xml = folder / f"{name}.xml"
    # the repository's configuration wherever the notebooks are; only the
    # plugins the passes need, whatever else a CUDA image has installed;
    # xunit1, the junit flavour that keeps record_property's values
    cmd = [sys.executable, "-m", "pytest", "-q", "-c", str(ROOT /
           "pyproject.toml"), "--rootdir", str(ROOT), "-p", "nbval.plugin",
           "-p", "xdist.plugin", "-p", "no:cacheprovider", "-o",
           "junit_family=xunit1", f"--junitxml={xml}"]
    env = dict(env, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    if name == "device":
        cmd += ["-m", "gpu", "tests/gpu"]
    else:
        startup = folder / f"ipython-{name}" / "profile_default" / "startup"
        startup.mkdir(parents=True)
        _, read, setting, _, extra = PASSES[name]
        (startup / "00-gpu-run.py").write_text(
            STARTUP.format(name=name, read=read, set=setting))
        markers = folder / f"{name}.markers"
        markers.write_text("")
        env.update(extra, IPYTHONDIR=str(startup.parent.parent),
                   MININN_GPU_MARKERS=str(markers))
        workers = min(len(paths), os.cpu_count() or 1)
        if workers > 1:
            cmd += ["-n", str(workers), "--dist", "loadfile"]
        cmd += [str(p) for p in paths]
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=max(timeout, 30))
        output = done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:  # its output is bytes
        output = f"timed out after {e.timeout:.0f} s\n" + (
            e.output or b"").decode(errors="replace")
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
                outcome = {"failure": "failed", "error": "error",
                           "skipped": "skipped"}[child.tag]
                message = child.get("message") or ""
                if child.tag != "skipped":
                    message = (child.text or message).strip()
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        where = case.get("file") or case.get("classname", "")
        results.append((f"{where}::{case.get('name')}", outcome, message,
                        props))
    return results


def facts(dry):
    """The machine and the versions, as the report's first table."""
    version = importlib.metadata.version
    rows = {"python": sys.version.split()[0]}
    pin = re.search(r"^torch==(\S+)", (ROOT / "requirements.txt").read_text(),
                    re.M)
    for dist in ("torch", "pytest", "pytest-xdist", "nbval", "ipykernel"):
        try:
            rows[dist] = version(dist)
        except importlib.metadata.PackageNotFoundError:
            rows[dist] = "missing"
    rows["torch"] += f" (requirements.txt pins {pin[1]})"
    if dry:
        rows["device"] = "cpu (dry run, CUDA hidden)"
        return rows
    import torch
    props = torch.cuda.get_device_properties(0)
    rows.update(device=f"{props.name} ({torch.cuda.device_count()} GPU(s), "
                f"compute capability {props.major}.{props.minor}, "
                f"{props.total_memory / 2**30:.0f} GiB)",
                cuda=torch.version.cuda,
                cudnn=str(torch.backends.cudnn.version()))
    return rows


def render(title, machine, passes):
    """The report: the machine, a line per pass, what failed, every test."""
    counts = {name: {k: sum(r[1] == k for r in results) for k in
                     ("passed", "failed", "error", "skipped")}
              for name, (_, results, _, _) in passes.items()}
    bad = sum(c["failed"] + c["error"] for c in counts.values()) + sum(
        len(p[2]) for p in passes.values())
    lines = [f"# {title}", "", f"{'All passed' if not bad else f'{bad} failures'}"
             f"; `python tools/gpu_run.py`.", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in machine.items()]
    lines += ["", "| pass | what | passed | failed | errors | skipped | "
              "seconds |", "|---|---|---|---|---|---|---|"]
    for name, (what, _, _, seconds) in passes.items():
        c = counts[name]
        lines.append(f"| {name} | {what} | {c['passed']} | {c['failed']} | "
                     f"{c['error']} | {c['skipped']} | {seconds:.0f} |")
    failed = [(name, p) for name, (_, _, problems, _) in passes.items()
              for p in problems]
    failed += [(name, f"{tid}: {message}") for name, (_, results, _, _)
               in passes.items() for tid, outcome, message, _ in results
               if outcome in ("failed", "error")]
    if failed:
        lines += ["", "## Failures", ""]
        for name, text in failed:  # nbval colours its messages
            text = re.sub(r"\x1b\[[0-9;]*m", "", text)[-3000:]
            lines += [f"{name}:", "", "```text", text, "```", ""]
    lines += ["", "## Every test", ""]
    for name, (_, results, _, _) in passes.items():
        lines += [f"### {name}", ""]
        if name == "device":  # each test, with what it measured
            for tid, outcome, message, props in results:
                extra = "; ".join(f"{k} = {v}" for k, v in props.items())
                note = f" ({message})" if outcome == "skipped" else ""
                lines.append(f"- {outcome}: `{tid}`{note}"
                             + (f": {extra}" if extra else ""))
        else:  # each notebook, its cells counted
            files = {}
            for tid, outcome, _, _ in results:
                files.setdefault(tid.split("::")[0], []).append(outcome)
            lines += [f"- `{file}`: " + ", ".join(
                f"{outcomes.count(k)} cells {k}" for k in sorted(set(
                    outcomes))) for file, outcomes in files.items()]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n", bad


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="hide CUDA; report into a temporary folder "
                        "unless --out")
    parser.add_argument("--out", type=Path, help="the report's folder")
    parser.add_argument("--passes", default="device," + ",".join(PASSES),
                        help="comma-separated, of: device, " +
                        ", ".join(PASSES))
    parser.add_argument("--notebooks", nargs="+", type=Path,
                        help="these instead of the chapters (the dry run's "
                        "test)")
    parser.add_argument("--budget", type=float, default=540,
                        help="seconds for every pass together")
    args = parser.parse_args(argv)
    unknown = set(args.passes.split(",")) - {"device", *PASSES}
    if unknown:
        parser.error(f"no pass {', '.join(sorted(unknown))}")
    env = {k: v for k, v in os.environ.items()
           if "TF32" not in k and k not in ("IPYTHONDIR", "PYTEST_ADDOPTS")}
    if args.dry_run:
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        import torch
        if not torch.cuda.is_available():
            print("no CUDA here: nothing to check (--dry-run runs the "
                  "machinery on the CPU)")
            return 2
    machine = facts(args.dry_run)
    date = datetime.date.today().isoformat()
    slug = "dry-run" if args.dry_run else re.sub(
        r"[^a-z0-9]+", "-", machine["device"].split(" (")[0].lower())
    out = args.out or (Path(tempfile.mkdtemp()) if args.dry_run else REPORTS)
    out.mkdir(parents=True, exist_ok=True)
    stem, passes, log = out / f"{date}-{slug.strip('-')}", {}, []
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.passes.split(","):
            paths = args.notebooks or chapters(name.startswith("tf32"))
            what = ("`pytest -m gpu tests/gpu`" if name == "device" else
                    f"{PASSES[name][0]}: " + ", ".join(p.stem for p in
                                                        paths))
            print(f"{name}: {what}", flush=True)
            began = time.monotonic()
            left = args.budget - (began - start)
            results, output, problems = run_pass(name, paths, Path(scratch),
                                                 env, left)
            passes[name] = (what, results, problems, time.monotonic() - began)
            log += [f"===== {name}", output]
            outcomes = [r[1] for r in results]
            for line in [", ".join(f"{outcomes.count(k)} {k}" for k in sorted(
                    set(outcomes))) or "no results", *problems]:
                print("    " + line, flush=True)
    title = f"GPU run of {date} on {machine['device']}"
    text, bad = render(title, machine, passes)
    stem.with_suffix(".md").write_text(text, encoding="utf-8")
    stem.with_suffix(".log").write_text("\n".join(log), encoding="utf-8")
    print(f"report: {stem}.md ({bad} failures)")
    if not args.dry_run:
        print("reports/gpu/README.md says which pages then change")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
