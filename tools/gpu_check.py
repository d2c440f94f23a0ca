"""The book's GPU path on a real GPU, and a record of the run.

The stored outputs are made on a CPU-only machine, where the device cells
fall back to the meta device (chapters 6, 8) or the CPU (chapter 9). This
script shows that the CUDA branch runs and that the same stored outputs
hold there, and writes what it measured into the repository.

    python tools/gpu_check.py             # on a CUDA machine, from the root
    python tools/gpu_check.py --out DIR   # the same, the report into DIR
    python tools/gpu_check.py --dry-run   # any machine: every step on the CPU
    python tools/gpu_check.py --quick     # the dry run's short form (the test)
    python tools/gpu_check.py --index     # list book/gpu-runs/ on the page

A real run writes book/gpu-runs/<YYYY-MM-DD>-<device>.md (the page the site
shows), .json (the same data) and .log (every pytest output), and lists the
report on book/gpu_runs.md; with --out DIR the three files go to DIR and
nothing else is touched (on a GPU machine whose working tree is a copy:
copy them into book/gpu-runs/ afterwards and run --index). The report is
rewritten after every step, so a run cut short still leaves what it did.

The steps, and what each proves (one progress line per step, PASS/FAIL per
check):

  environment   device, driver, CUDA, cuDNN, torch and Python versions; torch
                against the pin of requirements.txt; the test tools import
  contract      every chapter keeps its side of the contract with this
                script: each device cell asserts MININN_EXPECT_CUDA, chapter
                6 asserts its starting TF32 state against MININN_EXPECT_TF32,
                chapter 9 writes MININN_RUN_RECORD; no chapter, helper or
                glossary entry uses the legacy TF32 flags away from the new
                API
  conversions   mininn against torch.nn on CUDA: every conversion (`cuda()`,
                `to`, `to_empty`, ...) keeps the same objects, dtypes and
                devices; parameters and grads stay the same objects; an
                optimizer built before `.cuda()` keeps training; errors
                have torch's text
  precision     float16 and bfloat16 forward passes, mininn and torch.nn
                twins, bit-identical on the GPU (same kernels)
  autocast      under torch.autocast("cuda"), the same dtype layer by layer,
                the same outputs and gradients
  dataparallel  DataParallel on one GPU, as chapter 8 says: the module moves
                to cuda:0 when wrapped, a forward makes no replicas
  nonblocking   chapter 6's trap: a GPU-to-host copy with non_blocking=True
                returns before its values land; synchronize() fixes it
  checkpoint    a checkpoint saved on the GPU, opened by a process that
                cannot see it: torch's refusal, then map_location="cpu"
  tf32          max |GPU - CPU| of chapter 6's model and of a small
                convolutional net with TF32 off and on, against the
                tolerances the chapters allow
  nbval         nbval over every chapter (and tests/) on CUDA with
                MININN_EXPECT_CUDA=1: a kernel that cannot see the GPU fails
                instead of quietly running the meta branch (run 1 of 3 of
                chapter 9)
  tf32-new      the chapters with a GPU path, TF32 allowed at kernel
                start by the new API (torch.backends.fp32_precision); the
                start-up file leaves a marker per kernel, and chapter 6
                asserts MININN_EXPECT_TF32=new
  tf32-legacy   the same with the legacy allow_tf32 flags, as older code
                sets them
  tf32-forced   the legacy start-up plus TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1,
                which some deployment images set (torch 2.13 takes it as
                cuBLAS's starting setting; its marker: TF32 already on
                before the start-up file sets it)
  rerun-2/3     chapter 9 twice more, default settings
  determinism   chapter 9's loss hashes: equal across its three runs, and
                between the mininn and torch.nn twins
  tf32-control  chapter 6 told to expect TF32 from the new API in a kernel
                that started without it (as if the start-up file had been
                ignored): it must fail, or its TF32 assert proves nothing
  cpu-baseline  only where torch is not the pinned version: the same nbval
                on this machine's CPU, so that failures a torch version
                causes are not read as GPU failures

The nbval passes are independent: a real run starts them all at the first
of them, side by side (each waits for its slowest notebook, so one alone
leaves most cores idle), and each step then waits for its own; --serial
runs one at a time, as a dry run does unless --quick or --parallel.

--dry-run runs every step on the CPU (the device steps on the CPU or meta,
each marked "(dry run: cpu)"; the nbval steps with CUDA hidden) and writes
the report to a temporary folder (or --out DIR), with a rendering of the
page beside it. --quick is the dry run's short form that the test suite
runs: a small generated notebook that keeps the chapters' contract stands
in for the chapters, and only one pass of each kind runs. --chapters 06,09
(numbers or paths) limits the nbval steps to those notebooks.

It needs a Python with torch (a CUDA build for the real run) and the test
tools of requirements.txt: pytest, pytest-xdist, nbval, ipykernel,
jupyter_client, nbformat. A CUDA image often has torch and pytest but not
the notebook tools; `--wheels` prints them (and what they need) pinned as
requirements.txt pins them, so that, where pip works,

    python3 -m pip download --no-deps --only-binary=:all: -d .whl \
        --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 \
        $(.venv/bin/python tools/gpu_check.py --wheels)

fetches them (36 wheels, 16 MB), and on the GPU machine

    python3 -m pip install -q --no-index --no-deps --target /tmp/site \
        .whl/*.whl && PYTHONPATH=/tmp/site python3 tools/gpu_check.py \
        --out DIR

runs the check with them. Where that torch is not the pinned version, the
cpu-baseline step tells the failures it causes from the GPU's. Exit
status: 0 every check passed, 1 some check failed, 2 no CUDA here (real
run), 3 the script itself broke in a step.
"""
import argparse
import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
REPORTS = BOOK / "gpu-runs"
INDEX_PAGE = BOOK / "gpu_runs.md"
SCHEMA = 1
REPORT_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$")
INDEX_BEGIN, INDEX_END = "% gpu-runs: begin", "% gpu-runs: end"
NO_RUN_YET = ("No GPU run has been recorded yet. Until one is, what the "
              "chapters say\nabout GPUs is what their code asserts and torch "
              "documents, not a measured\nresult.")
# A cell that picks its device: `torch.device("cuda" if ...`
PICKS = re.compile(r"torch\.device\(\s*[\"']cuda[\"']\s+if")
CHAPTER_TF32 = "06_apply.ipynb"      # asserts MININN_EXPECT_TF32
CHAPTER_RECORD = "09_capstone.ipynb"  # writes MININN_RUN_RECORD
# Chapter 6's gpu_tolerance(): full float32, or TF32 forced by the override;
# chapter 9's comparison of the GPU with the CPU (cell fc264734).
STRICT = {"rtol": 1e-4, "atol": 1e-5}
WIDENED = {"rtol": 1e-2, "atol": 1e-3}
CAPSTONE = {"rtol": 1e-2, "atol": 1e-2}
# Variables that would change what the chapters do; every pass sets its own.
CLEARED = ("CUBLAS_WORKSPACE_CONFIG", "MININN_EXPECT_CUDA",
           "MININN_EXPECT_TF32", "MININN_RUN_RECORD", "MININN_TF32_STARTUP",
           "MININN_TF32_SENTINEL", "IPYTHONDIR",
           "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "TORCH_FORCE_WEIGHTS_ONLY_LOAD",
           "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "PYTEST_ADDOPTS",
           "MININN_KERNEL_SERVER", "MININN_KERNEL_SERVER_PID",
           "PYTEST_PLUGINS")

# The IPython start-up file of a TF32 pass. It reads the state before and
# after setting it, leaves a marker in the kernel's environment (which
# chapter 6 asserts through MININN_EXPECT_TF32) and one line per kernel in
# the sentinel file (which this script counts). "legacy" uses the old
# allow_tf32 flags, the only place in the project where they appear away
# from a chapter's side-by-side showing: this *is* such a showing, the
# legacy pass run next to the new-API pass, because users still set them.
# torch 2.13 raises if a process mixes the two APIs, so each start-up file
# uses one, for its reads too.
TF32_STARTUP = {
    "legacy": {
        "read": "(torch.backends.cuda.matmul.allow_tf32, "
                "torch.backends.cudnn.allow_tf32)",
        "set": "torch.backends.cuda.matmul.allow_tf32 = True\n"
               "torch.backends.cudnn.allow_tf32 = True\n",
        "after": (True, True),
    },
    "new": {
        "read": "(torch.backends.cuda.matmul.fp32_precision, "
                "torch.backends.cudnn.conv.fp32_precision)",
        "set": 'torch.backends.fp32_precision = "tf32"\n',
        "after": ("tf32", "tf32"),
    },
}
STARTUP_TEMPLATE = '''\
# Written by tools/gpu_check.py: TF32 allowed at kernel start ({mode}).
import os

import torch

before = {read}
{set}after = {read}
os.environ["MININN_TF32_STARTUP"] = "{mode}"
with open(os.environ["MININN_TF32_SENTINEL"], "a") as sentinel:
    sentinel.write(f"{mode}\\t{{os.getpid()}}\\t{{before!r}}\\t{{after!r}}\\n")
'''


def startup_file(mode):
    """The text of the IPython start-up file that allows TF32 by `mode`."""
    spec = TF32_STARTUP[mode]
    return STARTUP_TEMPLATE.format(mode=mode, read=spec["read"],
                                   set=spec["set"])


# --------------------------------------------------------------------------
# pytest's output

SUMMARY = re.compile(
    r"^=*\s*(?P<counts>(?:\d+ \w+(?:, )?)+|no tests ran)"
    r"(?: in (?P<seconds>[\d.]+)s(?: \([\d:]+\))?)?\s*=*$")
COUNT = re.compile(r"(\d+) (\w+)")
PLURAL = {"error": "errors", "warning": "warnings"}


def parse_summary(output):
    """The counts of pytest's closing line, e.g. "3 failed, 40 passed,
    1 warning in 5.01s" -> {"failed": 3, "passed": 40, "warnings": 1,
    "seconds": 5.01, "line": ...}; None when there is no such line."""
    for line in reversed(output.strip().splitlines()):
        match = SUMMARY.match(line.strip())
        if not match:
            continue
        counts = {PLURAL.get(word, word): int(n)
                  for n, word in COUNT.findall(match["counts"])}
        if match["seconds"]:
            counts["seconds"] = float(match["seconds"])
        counts["line"] = line.strip().strip("= ")
        return counts
    return None


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_failures(output):
    """The FAILED/ERROR lines of pytest's short summary (-ra), in order,
    without the colour codes nbval puts in its reasons."""
    return [ANSI.sub("", line).strip() for line in output.splitlines()
            if line.startswith(("FAILED ", "ERROR "))]


def failed_files(failures):
    """The files ("book/06_apply.ipynb") that the FAILED/ERROR lines name."""
    files = []
    for line in failures:
        node = line.split(" ", 1)[1].split(" - ", 1)[0]
        name = node.split("::", 1)[0]
        if name not in files:
            files.append(name)
    return files


# --------------------------------------------------------------------------
# The run: its checks, steps and report

@dataclass
class Check:
    section: str
    label: str
    ok: bool
    detail: str = ""


@dataclass
class StepRecord:
    name: str
    title: str
    status: str = "not run"     # done, crashed, skipped, not run
    seconds: float = 0.0
    note: str = ""


@dataclass
class PassResult:
    name: str
    label: str
    notebooks: list
    returncode: int
    summary: str
    counts: dict
    failures: list
    seconds: float
    timed_out: bool = False
    sentinel: list = field(default_factory=list)
    record: dict = field(default_factory=dict)


class Run:
    """Everything a run learns, and the report it keeps up to date."""

    def __init__(self, args):
        self.args = args
        self.dry = args.dry_run or args.quick
        self.quick = args.quick
        self.mark = " (dry run: cpu)" if self.dry else ""
        self.started = time.monotonic()
        self.date = datetime.datetime.now(datetime.timezone.utc).date()
        self.checks = []
        self.steps = [StepRecord(s.name, s.title) for s in STEPS]
        self.step = None
        self.facts = {}
        self.tf32 = []
        self.passes = {}
        self.notes = []
        self.crashed = False
        self.complete = False
        self.scratch = Path(tempfile.mkdtemp(prefix="gpu-check-"))
        self.chapters, self.fixture = [], None
        self.out = None
        self.stem = None
        self.summary = None      # the last line, once the run is over
        self.specs, self.launched = {}, {}
        self.parallel = self.ahead = False

    # checks --------------------------------------------------------------
    def check(self, label, ok, detail=""):
        ok = bool(ok)
        self.checks.append(Check(self.step.name, label, ok, detail))
        line = ("PASS " if ok else "FAIL ") + label
        print("    " + line + (f": {detail}" if detail and not ok else ""),
              flush=True)
        return ok

    def left(self):
        """Seconds of the budget left."""
        return self.args.budget - (time.monotonic() - self.started)

    # the device ----------------------------------------------------------
    @property
    def device(self):
        import torch
        return torch.device("cpu" if self.dry else "cuda")

    # files ---------------------------------------------------------------
    def open_report(self):
        if self.args.out:
            self.out = Path(self.args.out).resolve()
        elif self.dry:
            self.out = Path(tempfile.mkdtemp(prefix="gpu-check-dry-run-"))
        else:
            self.out = REPORTS
        self.out.mkdir(parents=True, exist_ok=True)
        slug = slugify(self.facts.get("device", "cpu"))
        stem = f"{self.date.isoformat()}-{'dry-run-' if self.dry else ''}{slug}"
        self.stem, n = stem, 2
        while (self.out / f"{self.stem}.md").exists():
            self.stem, n = f"{stem}-{n}", n + 1
        self.log_path.write_text("")

    @property
    def log_path(self):
        return self.out / f"{self.stem}.log"

    def log(self, title, text):
        with self.log_path.open("a") as log:
            log.write(f"\n===== {title}\n{text}\n")

    def data(self):
        """The report as JSON-ready data."""
        passed = sum(c.ok for c in self.checks)
        sections = {}
        for c in self.checks:
            done = sections.setdefault(c.section, [0, 0])
            done[0] += c.ok
            done[1] += 1
        return {
            "schema": SCHEMA,
            "date": self.date.isoformat(),
            "dry_run": self.dry,
            "quick": self.quick,
            "complete": self.complete,
            "command": command_line(self.args.argv),
            "facts": self.facts,
            "passed": passed,
            "total": len(self.checks),
            "sections": sections,
            "summary": self.summary or summary_line(self),
            "wall_seconds": round(time.monotonic() - self.started, 1),
            "steps": [asdict(s) for s in self.steps],
            "checks": [asdict(c) for c in self.checks],
            "tf32": self.tf32,
            "nbval": [asdict(p) for p in self.passes.values()],
            "records": run_records(self),
            "notes": self.notes,
        }

    def write(self):
        """Rewrite the report (JSON and markdown), atomically each."""
        data = self.data()
        for suffix, text in ((".json", json.dumps(data, indent=1) + "\n"),
                             (".md", render_report(data))):
            path = self.out / (self.stem + suffix)
            part = path.with_suffix(suffix + ".part")
            part.write_text(text)
            part.replace(path)


def command_line(argv):
    """The command as run, with --out's folder written DIR (a path of the
    machine that ran it means nothing in the repository)."""
    words, hide = ["python", "tools/gpu_check.py"], False
    for word in argv:
        words.append("DIR" if hide else re.sub(r"^--out=.*", "--out=DIR",
                                               word))
        hide = word == "--out"
    return " ".join(words)


def slugify(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


# --------------------------------------------------------------------------
# Step 1: the environment

def version_of(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(name):
    """The version requirements.txt pins for `name`, or None."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if "==" in line and canonical(line.split("==")[0]) == canonical(
                name):
            return line.split("==")[1].split()[0]
    return None


def closure(names, python="3.12"):
    """`names` and everything they need, as installed here, for `python`."""
    from packaging.requirements import Requirement
    env = {"python_version": python, "python_full_version": f"{python}.0",
           "extra": ""}
    seen, todo = {}, list(names)
    while todo:
        name = canonical(todo.pop())
        if name in seen:
            continue
        seen[name] = version_of(name)
        for text in importlib.metadata.requires(name) or []:
            need = Requirement(text)
            if need.marker is None or need.marker.evaluate(env):
                todo.append(need.name)
    return seen


def wheels():
    """What a Python with torch and pytest lacks to run the notebooks under
    nbval, pinned as requirements.txt pins it: the list to fetch as wheels
    for a CUDA image. pytest and what it needs stay the image's own (its
    plugins are built against them)."""
    tools = closure(TEST_TOOLS)
    own = closure(["pytest", "pytest-xdist"])
    return [f"{name}=={pinned(name) or version}"
            for name, version in sorted(tools.items()) if name not in own]


def driver_version():
    """The NVIDIA driver's version: nvidia-smi's, or NVML's (nvidia-ml-py)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        try:
            import pynvml
            pynvml.nvmlInit()
            return str(pynvml.nvmlSystemGetDriverVersion())
        except Exception as e:  # no NVML either: say so, go on
            return f"unknown (no nvidia-smi; NVML: {type(e).__name__})"
    try:
        out = subprocess.run([smi, "--query-gpu=driver_version",
                              "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({type(e).__name__})"
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else (
        "unknown")


TEST_TOOLS = ("nbval", "ipykernel", "jupyter_client", "nbformat")


def step_environment(run):
    import torch
    facts = run.facts
    facts["torch"] = torch.__version__
    facts["torch_pin"] = pinned("torch")
    facts["python"] = platform.python_version()
    facts["cpu_cores"] = os.cpu_count()
    for dist in ("pytest", "pytest-xdist", "nbval", "ipykernel",
                 "jupyter_client", "nbformat"):
        facts[dist] = version_of(dist) or "missing"
    if run.dry:
        facts.update(device="cpu", capability="none", memory="none",
                     driver="none", cuda="none", cudnn="none")
    else:
        props = torch.cuda.get_device_properties(0)
        facts.update(
            device=torch.cuda.get_device_name(0),
            capability="{}.{}".format(*torch.cuda.get_device_capability(0)),
            memory=f"{props.total_memory / 2**30:.0f} GiB",
            gpus=torch.cuda.device_count(),
            driver=driver_version(), cuda=torch.version.cuda,
            cudnn=str(torch.backends.cudnn.version()))
    print(f"    device: {facts['device']} | torch {facts['torch']} | CUDA "
          f"{facts['cuda']} | cuDNN {facts['cudnn']} | driver "
          f"{facts['driver']}", flush=True)
    base = facts["torch"].split("+")[0]
    run.check(f"torch {facts['torch']} is the pinned {facts['torch_pin']}",
              base == facts["torch_pin"],
              "the stored outputs were made with the pin; see the CPU "
              "baseline step for what this version changes")
    missing = [d for d in ("pytest", "pytest-xdist", "nbval", "ipykernel",
                           "jupyter_client", "nbformat")
               if facts[d] == "missing"]
    run.check("the test tools are installed (pytest, pytest-xdist, nbval, "
              "ipykernel, jupyter_client, nbformat)", not missing,
              "missing: " + ", ".join(missing))
    if not run.dry:
        run.check("CUDA is available to torch", torch.cuda.is_available())


# --------------------------------------------------------------------------
# Step 2: the chapters' side of the contract (read, not run)

def code_cells(path):
    cells = json.loads(path.read_text())["cells"]
    return [(c.get("id", str(i)), "".join(c["source"]))
            for i, c in enumerate(cells) if c["cell_type"] == "code"]


def all_chapters():
    return sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))


def device_cells(path):
    """The ids of the code cells that pick a device, and of those among
    them that do not assert MININN_EXPECT_CUDA."""
    picking = [(cid, src) for cid, src in code_cells(path)
               if PICKS.search(src)]
    return ([cid for cid, _ in picking],
            [cid for cid, src in picking if "MININN_EXPECT_CUDA" not in src])


def mentions(path, word):
    return any(word in src for _, src in code_cells(path))


def legacy_tf32_uses(paths):
    """Where `allow_tf32` appears with no `fp32_precision` in the same or
    a neighbouring block (cell, or paragraph of a text file)."""
    found = []
    for path in paths:
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text())["cells"]
            blocks = [(c.get("id", str(i)), "".join(c["source"]))
                      for i, c in enumerate(cells)]
        else:
            paragraphs = re.split(r"\n\s*\n", path.read_text())
            blocks = [(f"paragraph {i + 1}", p)
                      for i, p in enumerate(paragraphs)]
        for i, (where, text) in enumerate(blocks):
            if "allow_tf32" not in text:
                continue
            near = " ".join(t for _, t in blocks[max(0, i - 1):i + 2])
            if "fp32_precision" not in near:
                found.append(f"{shown(path)} {where}")
    return found


def step_contract(run):
    chapters = all_chapters()
    with_device = []
    for path in chapters:
        picking, bare = device_cells(path)
        if picking:
            with_device.append(path.name)
            run.check(f"{path.name}: every device cell asserts the CUDA "
                      "branch (MININN_EXPECT_CUDA)", not bare,
                      "cells without the assert: " + ", ".join(bare))
    run.check("the chapters with a GPU path are found",
              len(with_device) >= 3, "found: " + ", ".join(with_device))
    run.facts["device_chapters"] = with_device
    tf32 = BOOK / CHAPTER_TF32
    run.check(f"{CHAPTER_TF32} asserts its starting TF32 state "
              "(MININN_EXPECT_TF32)", mentions(tf32, "MININN_EXPECT_TF32")
              or mentions(tf32, "expect_tf32_at_start"),
              "not yet: no code cell reads MININN_EXPECT_TF32, so a TF32 "
              "pass cannot show that its start-up file took effect")
    record = BOOK / CHAPTER_RECORD
    run.check(f"{CHAPTER_RECORD} writes its loss hashes "
              "(MININN_RUN_RECORD)", mentions(record, "MININN_RUN_RECORD"),
              "not yet: no code cell reads MININN_RUN_RECORD, so runs "
              "cannot be compared")
    texts = [*chapters, BOOK / "helpers.py", BOOK / "glossary.md",
             BOOK / "intro.md"]
    uses = legacy_tf32_uses([p for p in texts if p.exists()])
    run.check("no chapter, helper or glossary entry uses the legacy TF32 "
              "flags away from the new API", not uses,
              "allow_tf32 without fp32_precision beside it: "
              + "; ".join(uses))


# --------------------------------------------------------------------------
# Steps 3-9: direct checks in this process (on the CPU in a dry run)

def libraries():
    import torch.nn as nn

    import mininn as mini
    return (("torch.nn", nn), ("mininn", mini))


def make_mlp(lib):
    """The test suite's small model (tests/support.py), three outputs."""
    from support import make_mlp  # tests/ is on sys.path (main)
    return make_mlp(lib, outputs=3)


def make_convnet(lib):
    """A small net of chapter 9's kind: two convolutions, a linear head."""
    import torch
    torch.manual_seed(0)
    return lib.Sequential(
        lib.Conv2d(1, 8, 3, padding=1), lib.BatchNorm2d(8), lib.ReLU(),
        lib.MaxPool2d(2), lib.Conv2d(8, 16, 3, padding=1), lib.ReLU(),
        lib.MaxPool2d(2), lib.Flatten(), lib.Linear(16 * 7 * 7, 10))


def error_text(fn):
    try:
        fn()
    except Exception as e:  # any error is a result here
        return f"{type(e).__name__}: {e}"
    return None


def snapshot(model, convert):
    """(name, same object?, dtype, device) of every parameter, grad and
    buffer after `convert`, or the error it raised."""
    before = {n: (p, p.grad) for n, p in model.named_parameters()}
    message = error_text(lambda: convert(model))
    if message:
        return message
    rows = []
    for n, p in model.named_parameters():
        rows.append((n, p is before[n][0], str(p.dtype), str(p.device)))
        if p.grad is not None:
            rows.append((n + ".grad", p.grad is before[n][1],
                         str(p.grad.dtype), str(p.grad.device)))
    rows += [(n, str(b.dtype), str(b.device))
             for n, b in model.named_buffers()]
    return rows


def with_grads(model):
    import torch
    torch.manual_seed(1)
    model(torch.randn(16, 4)).sum().backward()
    return model


def conversions(run):
    """Label -> conversion. On the CPU (dry run) the cuda() forms raise
    torch's error in both libraries; the others move to the CPU."""
    import torch
    where = "cpu" if run.dry else "cuda"
    dev = run.device
    return {
        "cuda()": lambda m: m.cuda(),
        "cuda(0)": lambda m: m.cuda(0),
        "cuda(torch.device('cuda:0'))":
            lambda m: m.cuda(torch.device("cuda:0")),
        f"to('{where}')": lambda m: m.to(where),
        f"to({where}, torch.half)": lambda m: m.to(dev, torch.half),
        f"to(float64 tensor on {where})":
            lambda m: m.to(torch.zeros(1, device=dev, dtype=torch.float64)),
        f"to('{where}', non_blocking=True)":
            lambda m: m.to(where, non_blocking=True),
        f"to('{where}').half().cpu()": lambda m: m.to(where).half().cpu(),
        f"to_empty(device='{where}')": lambda m: m.to_empty(device=where),
        f"to('meta').to_empty(device='{where}')":
            lambda m: m.to("meta").to_empty(device=where),
    }


def move(run, model):
    """The move under test: .cuda() on a GPU; a real cast (.double(), which
    must keep the objects the same way) in a dry run."""
    return model.double() if run.dry else model.cuda()


def step_conversions(run):
    import torch
    (_, nn), (_, mini) = libraries()
    for label, convert in conversions(run).items():
        ours = snapshot(with_grads(make_mlp(mini)), convert)
        theirs = snapshot(with_grads(make_mlp(nn)), convert)
        expect_error = run.dry and label.startswith("cuda(")
        works = isinstance(theirs, str) == expect_error
        run.check(f"{label}: mininn as torch.nn{run.mark}",
                  ours == theirs and works,
                  f"mininn {ours!r} / torch.nn {theirs!r}")
    how = "double()" if run.dry else "cuda()"
    model = with_grads(make_mlp(mini))
    params = list(model.parameters())
    grads = [p.grad for p in params]
    move(run, model)
    run.check(f"{how} keeps every parameter object{run.mark}",
              all(a is b for a, b in zip(params, model.parameters())))
    run.check(f"{how} keeps every grad object and converts it{run.mark}",
              all(p.grad is g and p.grad.device.type == run.device.type
                  and p.grad.dtype == p.dtype
                  for p, g in zip(model.parameters(), grads)))
    counter = model[1].num_batches_tracked
    run.check(f"the integer buffer stays int64 on {run.device.type}"
              f"{run.mark}", counter.dtype == torch.int64
              and counter.device.type == run.device.type)

    def train(lib):
        torch.manual_seed(0)
        layer = lib.Linear(3, 1)
        opt = torch.optim.SGD(layer.parameters(), lr=0.1)
        move(run, layer)
        weight = layer.weight
        xs = torch.randn(8, 3, device=weight.device, dtype=weight.dtype)
        losses = []
        for _ in range(3):
            loss = layer(xs).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    ours, theirs = train(mini), train(nn)
    run.check(f"an optimizer built before {how} trains, as in torch.nn"
              f"{run.mark}", ours == theirs and ours[-1] < ours[0],
              f"mininn {ours} / torch.nn {theirs}")
    where = run.device.type
    errors = {
        f"meta -> {where} via to()":
            lambda lib: lib.Linear(2, 2).to("meta").to(where),
        "cuda(99)": lambda lib: lib.Linear(2, 2).cuda(99),
    }
    for label, fn in errors.items():
        ours = error_text(lambda fn=fn: fn(mini))
        theirs = error_text(lambda fn=fn: fn(nn))
        run.check(f"{label}: the same error as torch.nn{run.mark}",
                  ours == theirs and ours, f"{ours!r} / {theirs!r}")


@contextlib.contextmanager
def deterministic():
    """Deterministic kernels only, as chapter 9 runs its twins: two models
    that run the same operations on the same numbers then get the same
    bits, and an operation with no deterministic kernel raises instead.
    (cuBLAS needs CUBLAS_WORKSPACE_CONFIG, which main() sets before CUDA
    starts.)"""
    import torch
    before = (torch.are_deterministic_algorithms_enabled(),
              torch.backends.cudnn.deterministic)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0])
        torch.backends.cudnn.deterministic = before[1]


def step_precision(run):
    import torch
    (_, nn), (_, mini) = libraries()
    dtypes = (torch.float16, torch.bfloat16)
    batch = 4 if run.dry else 16  # float16 convolutions are slow on a CPU
    nets = {"mlp": (make_mlp, (32, 4)),
            "convnet": (make_convnet, (batch, 1, 28, 28))}
    with deterministic():
        for (net, (build, shape)) in nets.items():
            for dtype in dtypes:
                for mode in ("eval", "train"):
                    torch.manual_seed(2)
                    x = torch.randn(shape).to(run.device, dtype)
                    outs, states = [], []
                    for lib in (nn, mini):
                        model = build(lib).to(run.device, dtype)
                        getattr(model, mode)()
                        outs.append(model(x))
                        states.append(model.state_dict())
                    same = torch.equal(*outs) and all(
                        torch.equal(a, b)
                        for a, b in zip(states[0].values(),
                                        states[1].values()))
                    name = str(dtype).replace("torch.", "")
                    run.check(f"{net} in {name}, {mode} mode: mininn output"
                              f" and state bit-identical to torch.nn"
                              f"{run.mark}", same and outs[0].dtype == dtype
                              and outs[0].device.type == run.device.type)


def step_autocast(run):
    import torch
    (_, nn), (_, mini) = libraries()
    kinds = [("cpu", torch.bfloat16)] if run.dry else [
        ("cuda", torch.float16), ("cuda", torch.bfloat16)]
    for device_type, dtype in kinds:
        seen = []
        for lib in (nn, mini):
            model = make_convnet(lib).to(run.device)
            dtypes = []
            for _, layer in model.named_children():
                layer.register_forward_hook(
                    lambda m, i, o, dtypes=dtypes: dtypes.append(o.dtype))
            torch.manual_seed(3)
            x = torch.randn(4 if run.dry else 16, 1, 28, 28,
                            device=run.device)
            with deterministic():
                with torch.autocast(device_type, dtype):
                    out = model(x)
                out.float().sum().backward()  # outside autocast, as usual
            grads = [p.grad for p in model.parameters()]
            seen.append((dtypes, out, grads))
        (d0, o0, g0), (d1, o1, g1) = seen
        name = str(dtype).replace("torch.", "")
        run.check(f'autocast("{device_type}", {name}): the same dtype after '
                  f"every layer{run.mark}", d0 == d1 and dtype in d0,
                  f"torch.nn {d0} / mininn {d1}")
        run.check(f'autocast("{device_type}", {name}): the same output and '
                  f"gradients{run.mark}", torch.equal(o0, o1)
                  and all(torch.equal(a, b) for a, b in zip(g0, g1)))


def step_dataparallel(run):
    import torch
    (_, nn), (_, mini) = libraries()
    outputs = []
    for name, lib in (("torch.nn", nn), ("mininn", mini)):
        model = make_mlp(lib).eval()
        ids = None if run.dry or torch.cuda.device_count() == 1 else [0]
        wrapped = torch.nn.DataParallel(model, device_ids=ids)
        first = torch.device("cpu") if run.dry else torch.device("cuda:0")
        moved = all(t.device == first
                    for t in [*model.parameters(), *model.buffers()])
        made = []
        replicate = wrapped.replicate
        wrapped.replicate = lambda *a, made=made, replicate=replicate: (
            made.append(1) or replicate(*a))
        torch.manual_seed(4)
        x = torch.randn(16, 4)
        with torch.no_grad():
            out = wrapped(x)
            expected = model(x.to(first))
        outputs.append(out)
        what = ("device_ids == [] (no GPU): it calls the module" if run.dry
                else "the module moved to cuda:0 when wrapped")
        run.check(f"DataParallel({name} model): {what}{run.mark}",
                  moved and (wrapped.device_ids == [] if run.dry
                             else wrapped.device_ids == [0]),
                  f"device_ids {wrapped.device_ids}, moved {moved}")
        run.check(f"DataParallel({name} model) forward: no replicas, the "
                  f"module's own output{run.mark}",
                  not made and out.device == first
                  and torch.equal(out, expected), f"replicas made: {len(made)}")
    run.check(f"DataParallel: mininn and torch.nn outputs identical"
              f"{run.mark}", torch.equal(*outputs))


def step_nonblocking(run):
    import torch
    if run.dry:
        src = torch.randn(1 << 16)
        dst = src.to("cpu", non_blocking=True)
        run.check("without CUDA a copy to the host is synchronous: "
                  "to('cpu', non_blocking=True) of a CPU tensor is the "
                  "tensor itself" + run.mark, dst is src)
        return

    def busy():
        """Queue ~0.1 s of GPU work ahead of what follows."""
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(200_000_000)
        else:
            a = torch.randn(4096, 4096, device="cuda")
            for _ in range(30):
                a = a @ a / 64

    src = torch.empty(1 << 22, device="cuda")
    torch.cuda.synchronize()
    busy()
    src.uniform_()
    dst = src.to("cpu", non_blocking=True)
    pending = not torch.cuda.current_stream().query()
    early = dst.clone()          # the host reads without waiting
    torch.cuda.synchronize()
    truth = src.cpu()
    run.check("to('cpu', non_blocking=True) returns while the copy is still "
              "queued", pending, f"pinned destination: {dst.is_pinned()}")
    run.check("read before synchronize(): stale values, and no error",
              not torch.equal(early, truth))
    run.check("after torch.cuda.synchronize(): the right values",
              torch.equal(dst, truth))
    busy()
    src.add_(1)
    waited = src.cpu()
    run.check("a plain .cpu() waits for the GPU", torch.equal(
        waited, truth + 1))


CHECKPOINT_PROBE = """
import json, sys
import torch
path, reference = sys.argv[1], sys.argv[2]
result = {"cuda_visible": torch.cuda.is_available()}
try:
    torch.load(path, weights_only=True)
    result["without_map_location"] = "loaded"
except RuntimeError as e:
    result["without_map_location"] = str(e)[:200]
sd = torch.load(path, map_location="cpu", weights_only=True)
ref = torch.load(reference, weights_only=True)
result["devices"] = sorted({t.device.type for t in sd.values()})
result["same_values"] = list(sd) == list(ref) and all(
    torch.equal(sd[k], ref[k]) for k in ref)
print(json.dumps(result))
"""


def as_if_saved_on_gpu(source, target):
    """Chapter 8's trick: a CPU checkpoint with every storage's location
    made cuda:0, the file a GPU would have written."""
    import zipfile
    cpu, cuda = b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/data.pkl"):
                data = data.replace(cpu, cuda)
            dst.writestr(info.filename, data)


def step_checkpoint(run):
    import torch
    (_, nn), (_, mini) = libraries()
    folder = run.scratch / "checkpoint"
    folder.mkdir(exist_ok=True)
    path, reference = folder / "gpu.pt", folder / "reference.pt"
    model = make_mlp(mini)
    torch.save(model.state_dict(), reference)
    if run.dry:
        as_if_saved_on_gpu(reference, path)
    else:
        torch.save(model.cuda().state_dict(), path)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-c", CHECKPOINT_PROBE, str(path),
                          str(reference)], capture_output=True, text=True,
                         env=env, timeout=max(30, run.left()))
    run.log("checkpoint probe", out.stdout + out.stderr)
    try:
        result = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        result = {}
    saved = "a file as chapter 8 simulates it" if run.dry else "on the GPU"
    run.check(f"a checkpoint saved {saved}, in a process that cannot see a "
              "GPU: torch refuses it", str(
                  result.get("without_map_location")).startswith(
                  "Attempting to deserialize object on a CUDA device")
              and result.get("cuda_visible") is False, repr(result))
    run.check('... and map_location="cpu" loads it, every value intact',
              result.get("devices") == ["cpu"] and result.get("same_values"),
              repr(result))


@contextlib.contextmanager
def matmul_precision(value):
    """cuBLAS and cuDNN convolutions in "ieee" (full float32) or "tf32",
    through the new API only (this process never touches the old flags)."""
    import torch
    matmul, conv = torch.backends.cuda.matmul, torch.backends.cudnn.conv
    before = (matmul.fp32_precision, conv.fp32_precision)
    matmul.fp32_precision = conv.fp32_precision = value
    try:
        yield
    finally:
        matmul.fp32_precision, conv.fp32_precision = before


def max_diff(a, b):
    return float((a.double().cpu() - b.double().cpu()).abs().max())


def within(a, b, tolerance):
    import torch
    return torch.allclose(a.cpu(), b.cpu(), **tolerance)


def step_tf32(run):
    import torch
    (_, nn), (_, mini) = libraries()
    cases = []
    for seed, batch in ((0, 16), (1, 64)):
        torch.manual_seed(seed)
        cases.append((f"chapter 6's model, batch {batch}", make_mlp,
                      torch.randn(batch, 4), STRICT, WIDENED))
    torch.manual_seed(5)
    batch = 8 if run.dry else 64
    cases.append((f"a convolutional net like chapter 9's, batch {batch}",
                  make_convnet, torch.randn(batch, 1, 28, 28), CAPSTONE,
                  CAPSTONE))
    for what, build, x, off_tol, on_tol in cases:
        reference = build(mini).eval()
        model = build(mini).eval().to(run.device)
        with torch.no_grad():
            expected = reference(x)
            results = {}
            for mode in ("ieee", "tf32"):
                with matmul_precision(mode):
                    results[mode] = model(x.to(run.device))
        off, on = (max_diff(results[m], expected) for m in ("ieee", "tf32"))
        run.tf32.append({"what": what, "tf32_off": off, "tf32_on": on,
                         "allowed_off": off_tol, "allowed_on": on_tol})
        print(f"    {what}: max |{run.device.type} - cpu| {off:.2e} "
              f"(TF32 off), {on:.2e} (TF32 on)", flush=True)
        run.check(f"{what}, TF32 off: within rtol={off_tol['rtol']}, "
                  f"atol={off_tol['atol']}{run.mark}",
                  within(results["ieee"], expected, off_tol), f"{off:.3e}")
        run.check(f"{what}, TF32 on: within rtol={on_tol['rtol']}, "
                  f"atol={on_tol['atol']}{run.mark}",
                  within(results["tf32"], expected, on_tol), f"{on:.3e}")
    # Does the switch reach the kernels? A product big enough for tensor
    # cores, in float32 and in TF32.
    torch.manual_seed(6)
    a = torch.randn(512, 512, device=run.device)
    b = torch.randn(512, 512, device=run.device)
    with matmul_precision("ieee"):
        full = a @ b
    with matmul_precision("tf32"):
        tf32 = a @ b
    changed = not torch.equal(full, tf32)
    capable = (not run.dry
               and torch.cuda.get_device_capability(0) >= (8, 0))
    run.facts["tf32_changes_a_product"] = changed
    if capable:
        run.check("fp32_precision='tf32' changes a 512x512 product on this "
                  "GPU (TF32 takes effect)", changed)
    else:
        run.check("no TF32 here: a 512x512 product is the same either way"
                  + run.mark, not changed)


# --------------------------------------------------------------------------
# Steps 10-17: nbval in fresh processes

FIXTURE_CELLS = [
    ("import hashlib\n"
     "import os\n"
     "\n"
     "# The quick dry run's stand-in for a chapter with a GPU path: it keeps\n"
     "# the chapters' side of the contract with tools/gpu_check.py without\n"
     "# importing torch (every kernel start is CPU time in the test suite).\n"
     'cuda = os.environ.get("CUDA_VISIBLE_DEVICES") != ""\n'
     'device = "cuda" if cuda else "cpu"\n'
     'assert device == "cuda" or os.environ.get("MININN_EXPECT_CUDA") != "1"\n'
     'print("device cell ran")', "device cell ran\n"),
    ('expect = os.environ.get("MININN_EXPECT_TF32")\n'
     "if expect:\n"
     "    import torch  # the start-up file has imported it\n"
     "\n"
     '    if expect == "legacy":\n'
     "        state = (torch.backends.cuda.matmul.allow_tf32,\n"
     "                 torch.backends.cudnn.allow_tf32)\n"
     "        assert state == (True, True), state\n"
     "    else:\n"
     "        state = (torch.backends.cuda.matmul.fp32_precision,\n"
     "                 torch.backends.cudnn.conv.fp32_precision)\n"
     '        assert state == ("tf32", "tf32"), state\n'
     '    assert os.environ["MININN_TF32_STARTUP"] == expect\n'
     'print("TF32 at kernel start: as expected")',
     "TF32 at kernel start: as expected\n"),
    ("losses = [0.5 ** step for step in range(10)]\n"
     'record = os.environ.get("MININN_RUN_RECORD")\n'
     "if record:\n"
     "    digest = hashlib.sha256(repr(losses).encode()).hexdigest()\n"
     '    with open(record, "a") as f:\n'
     '        for label in ("mininn", "torch.nn"):\n'
     '            f.write(f"fixture-{label} {digest}\\n")\n'
     'print("losses:", len(losses))', "losses: 10\n"),
]


def write_fixture(folder):
    """A three-cell notebook with stored outputs that keeps the chapters'
    contract: the quick dry run's chapter."""
    cells = []
    for n, (source, output) in enumerate(FIXTURE_CELLS, 1):
        cells.append({
            "cell_type": "code", "execution_count": n, "id": f"cell-{n}",
            "metadata": {}, "source": source.splitlines(keepends=True),
            "outputs": [{"name": "stdout", "output_type": "stream",
                         "text": [output]}]})
    notebook = {
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                    "display_name": "Python 3"}}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gpu_check_fixture.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    return path


def shown(path):
    path = Path(path)
    with contextlib.suppress(ValueError):
        return path.relative_to(ROOT).as_posix()
    return path.name


def pass_env(run, extra):
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(MININN_QUICK="1", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
               PYTHONDONTWRITEBYTECODE="1",
               # every kernel imports torch itself, under the settings and
               # start-up files of its pass (tests/kernel_server.py)
               MININN_FRESH_KERNELS="1")
    if run.dry:  # a dry run hides any GPU from its kernels
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env["MININN_EXPECT_CUDA"] = "1"
    env.update(extra)
    return env


def pytest_command(run, paths, with_tests):
    cmd = [sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pytest.ini"),
           "--rootdir", str(ROOT)]
    if run.quick:  # one small notebook: no workers, no plugins to scan
        cmd += ["-p", "nbval.plugin"]
    else:
        workers = min(len(paths) + 6 * with_tests, os.cpu_count() or 1)
        cmd += ["-n", str(workers), "--dist", "loadfile"] if workers > 1 else [
            "-n", "0"]
    if with_tests:
        # the linter and the website: nothing a device changes
        cmd += ["-m", "not site", "--ignore", "tests/test_lint.py",
                "--ignore", "tests/test_site.py"]
    return cmd + [str(p) for p in paths]


@dataclass
class PassSpec:
    """One pytest process: what it runs and with which settings."""
    name: str
    label: str
    paths: list
    env: dict = field(default_factory=dict)
    with_tests: bool = False
    record: Path = None       # MININN_RUN_RECORD, when chapter 9 runs
    sentinel: Path = None     # the TF32 start-up file's markers
    expect_failure: bool = False


def has_record(run, paths):
    return any(p == run.fixture or p.name == CHAPTER_RECORD for p in paths)


def make_spec(run, name, label, paths, env=None, **kw):
    spec = PassSpec(name, label, list(paths), dict(env or {}), **kw)
    if has_record(run, spec.paths):
        spec.record = run.scratch / f"record-{name}.txt"
        spec.record.write_text("")
        spec.env["MININN_RUN_RECORD"] = str(spec.record)
    return spec


def tf32_spec(run, name, mode, forced=False):
    """A pass over the chapters with a GPU path, TF32 allowed at kernel
    start by `mode`'s start-up file (and forced by the override)."""
    ipython = run.scratch / f"ipython-{name}"
    startup = ipython / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-mininn-tf32.py").write_text(startup_file(mode))
    sentinel = run.scratch / f"sentinel-{name}.txt"
    sentinel.write_text("")
    env = {"IPYTHONDIR": str(ipython), "MININN_TF32_SENTINEL": str(sentinel),
           "MININN_EXPECT_TF32": mode}
    if forced:
        env["TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"] = "1"
    label = (f"TF32 allowed by the {mode} API" if not forced else
             "TF32 started by the cuBLAS override, legacy start-up")
    return make_spec(run, name, label, selected(run, device_only=True), env,
                     sentinel=sentinel)


def main_spec(run):
    with_tests = not run.args.chapters and not run.quick
    what = ("the fixture notebook" if run.quick else "the chapters chosen"
            if run.args.chapters else "every chapter")
    on = "the CPU (CUDA hidden)" if run.dry else "CUDA"
    return make_spec(run, "nbval", f"{what}{' + tests/' * with_tests} on "
                     f"{on}", selected(run), with_tests=with_tests)


def control_spec(run):
    # As if IPYTHONDIR were ignored: no start-up file, TF32 at torch's
    # defaults, and the kernel told that the new API allowed it.
    ipython = run.scratch / "ipython-control"
    ipython.mkdir(exist_ok=True)
    return make_spec(run, "tf32-control", "no start-up file, told to expect "
                     "the new API: must fail",
                     [p for p in run.chapters if p.name == CHAPTER_TF32],
                     {"IPYTHONDIR": str(ipython), "MININN_EXPECT_TF32": "new"},
                     expect_failure=True)


def baseline_spec(run):
    spec = main_spec(run)
    spec.name, spec.label = "cpu-baseline", (
        f"{spec.label.rsplit(' on ', 1)[0]} on this machine's CPU, CUDA "
        "hidden")
    spec.env.update(CUDA_VISIBLE_DEVICES="", MININN_EXPECT_CUDA="")
    return spec


# The pass of each nbval step, built once (its files are made then).
SPECS = {
    "nbval": main_spec,
    "tf32-new": lambda run: tf32_spec(run, "tf32-new", "new"),
    "tf32-legacy": lambda run: tf32_spec(run, "tf32-legacy", "legacy"),
    "tf32-forced": lambda run: tf32_spec(run, "tf32-forced", "legacy",
                                         forced=True),
    "rerun-2": lambda run: make_spec(run, "rerun-2", "chapter 9, run 2 "
                                     "(default settings)",
                                     selected(run, recording=True)),
    "rerun-3": lambda run: make_spec(run, "rerun-3", "chapter 9, run 3 "
                                     "(default settings)",
                                     selected(run, recording=True)),
    "tf32-control": control_spec,
    "cpu-baseline": baseline_spec,
}


def spec_of(run, name):
    if name not in run.specs:
        run.specs[name] = SPECS[name](run)
    return run.specs[name]


def launch(run, spec):
    """Start the pytest process of `spec`; it runs until finish()."""
    env = pass_env(run, spec.env)
    if run.quick:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    cmd = pytest_command(run, [*spec.paths, *(["tests"] * spec.with_tests)],
                         spec.with_tests)
    # its own session, so that a timeout ends its workers and kernels too
    process = subprocess.Popen(cmd, cwd=ROOT, env=env, text=True,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               start_new_session=True)
    run.launched[spec.name] = (process, cmd, time.monotonic())


def finish(run, spec):
    """Wait for the pass of `spec` (started now if it was not yet) within
    the budget, and read what it left: summary, failures, markers, record."""
    if spec.name not in run.launched:
        launch(run, spec)
    process, cmd, start = run.launched.pop(spec.name)
    timed_out = False
    try:
        output, _ = process.communicate(timeout=max(10.0, run.left()))
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
    seconds = time.monotonic() - start
    run.log(f"{spec.name}: {spec.label}\n$ {' '.join(cmd)}", output)
    counts = parse_summary(output) or {}
    summary = counts.pop("line", "no summary line")
    if timed_out:
        summary = f"timed out after {seconds:.0f} s ({summary})"
    result = PassResult(
        spec.name, spec.label, [shown(p) for p in spec.paths],
        process.returncode, summary, counts, parse_failures(output),
        round(seconds, 1), timed_out)
    if spec.sentinel:
        result.sentinel = spec.sentinel.read_text().splitlines()
    if spec.record:
        result.record = parse_record(spec.record.read_text())
    run.passes[spec.name] = result
    print(f"    {summary}", flush=True)
    for line in result.failures[:30]:
        print("      " + line, flush=True)
    return result


def stop_launched(run):
    """End the passes still running (the run stops early)."""
    for process, _, _ in run.launched.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
    run.launched.clear()


def parse_record(text):
    """Chapter 9's MININN_RUN_RECORD lines, "<label> <sha256>", as a dict
    (a label written twice keeps every hash, joined by commas)."""
    record = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"[0-9a-f]{64}", parts[1]):
            hashes = [record[parts[0]]] if parts[0] in record else []
            record[parts[0]] = ",".join([*hashes, parts[1]])
        elif line.strip():
            record.setdefault("?malformed", line.strip())
    return record


def selected(run, *, device_only=False, recording=False):
    """The notebooks a pass runs: every selected one, those with a GPU path,
    or those that write a run record."""
    paths = list(run.chapters)
    if device_only:
        paths = [p for p in paths if p == run.fixture or device_cells(p)[0]]
    if recording:
        paths = [p for p in paths
                 if p == run.fixture or p.name == CHAPTER_RECORD
                 or mentions(p, "MININN_RUN_RECORD")]
    return paths


def skip(run, why):
    run.step_record.status = "skipped"
    run.step_record.note = why
    print(f"    skipped: {why}", flush=True)


def passed_cleanly(result):
    return (result.returncode == 0 and not result.timed_out
            and result.counts.get("passed", 0) > 0)


def why_not_run(run, name):
    """Why the pass of step `name` has nothing to run, or None."""
    if name in ("tf32-new", "tf32-legacy", "tf32-forced") and not selected(
            run, device_only=True):
        return "none of the chapters chosen has a GPU path"
    if name.startswith("rerun-") and not selected(run, recording=True):
        return f"{CHAPTER_RECORD} is not among the chapters chosen"
    if name == "tf32-control" and not any(p.name == CHAPTER_TF32
                                          for p in run.chapters):
        return f"{CHAPTER_TF32} is not among the chapters chosen"
    if name == "cpu-baseline":
        if run.dry:
            return "a dry run is on the CPU already"
        if run.facts.get("torch", "").split("+")[0] == run.facts.get(
                "torch_pin"):
            return "torch is the pinned version: nothing to separate"
    return None


def step_nbval(run):
    spec = spec_of(run, "nbval")
    result = finish(run, spec)
    run.check(f"nbval of {spec.label.replace(' + ', ' and ')}",
              passed_cleanly(result), result.summary)


def step_tf32_pass(run, name):
    spec = spec_of(run, name)
    result = finish(run, spec)
    mode = spec.env["MININN_EXPECT_TF32"]
    forced = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE" in spec.env
    lines = [line.split("\t") for line in result.sentinel]
    after = repr(TF32_STARTUP[mode]["after"])
    ran = (len(lines) == len(spec.paths)
           and all(len(p) == 4 and p[0] == mode and p[3] == after
                   for p in lines))
    if forced:  # the override shows: cuBLAS in TF32 before anything set it
        ran = ran and all(p[2].startswith("(True,") for p in lines)
        marker = "and TF32 already on before it set it"
    else:
        marker = f"and set {TF32_STARTUP[mode]['after']}"
    run.check(f"{spec.label}: the start-up file ran in each of the "
              f"{len(spec.paths)} kernels {marker}{run.mark}", ran,
              f"{len(lines)} marker lines: {result.sentinel}")
    run.check(f"nbval of the chapters with a GPU path, {spec.label}"
              f"{run.mark}", passed_cleanly(result), result.summary)


def step_tf32_new(run):
    step_tf32_pass(run, "tf32-new")


def step_tf32_legacy(run):
    step_tf32_pass(run, "tf32-legacy")


def step_tf32_forced(run):
    step_tf32_pass(run, "tf32-forced")


def step_tf32_control(run):
    spec = spec_of(run, "tf32-control")
    result = finish(run, spec)
    run.check(f"{CHAPTER_TF32} fails when its kernel did not start as "
              f"MININN_EXPECT_TF32 says{run.mark}",
              result.returncode == 1 and not result.timed_out
              and failed_files(result.failures) == [shown(spec.paths[0])],
              f"it {'passed' if result.returncode == 0 else 'ended'}: "
              f"{result.summary}")


def step_rerun(run, name):
    spec = spec_of(run, name)
    result = finish(run, spec)
    run.check(f"nbval of {', '.join(p.name for p in spec.paths)}, "
              f"{spec.label.split(', ')[1].split(' (')[0]}{run.mark}",
              passed_cleanly(result), result.summary)


def step_rerun_2(run):
    step_rerun(run, "rerun-2")


def step_rerun_3(run):
    step_rerun(run, "rerun-3")


def twins(record):
    """Pairs of labels that differ only by the library: mininn / torch.nn
    (or torch)."""
    pairs = []
    for label in record:
        if "mininn" not in label:
            continue
        for other in ("torch.nn", "torch"):
            twin = label.replace("mininn", other)
            if twin in record:
                pairs.append((label, twin))
                break
    return pairs


def run_records(run):
    """Pass name -> chapter 9's record in that pass (the nbval pass is run
    1, the reruns 2 and 3; the TF32 passes write one too)."""
    return {name: result.record for name, result in run.passes.items()
            if result.record}


def step_determinism(run):
    default = [run.passes[n] for n in ("nbval", "rerun-2", "rerun-3")
               if n in run.passes]
    records = [p.record for p in default]
    if len(default) < 2:
        return skip(run, "fewer than two runs of chapter 9 were made")
    names = ", ".join(p.name for p in default)
    run.check(f"chapter 9 wrote a run record in every run ({names})",
              all(records) and all("?malformed" not in r for r in records),
              "a run wrote no MININN_RUN_RECORD line: chapter 9 does not "
              "honour it yet" if not all(records) else repr(records))
    if not all(records):
        return
    run.check(f"the same labels and loss hashes in all {len(default)} runs "
              f"(determinism across runs){run.mark}",
              all(r == records[0] for r in records), repr(records))
    pairs = twins(records[0])
    run.check("the mininn and torch.nn twins have identical loss hashes"
              f"{run.mark}", pairs and all(records[0][a] == records[0][b]
                                           for a, b in pairs),
              f"twin labels {pairs} in {sorted(records[0])}")
    for p in run.passes.values():
        if p.name.startswith("tf32-") and p.record:
            same = p.record == records[0]
            run.notes.append(f"chapter 9 under {p.label}: loss hashes "
                             f"{'the same as' if same else 'differ from'} "
                             "the default runs'")


def step_cpu_baseline(run):
    result = finish(run, spec_of(run, "cpu-baseline"))
    gpu = run.passes.get("nbval")
    extra = [f for f in (gpu.failures if gpu else [])
             if f not in result.failures]
    run.notes.append(f"CPU baseline with torch {run.facts['torch']}: "
                     f"{result.summary}; failures on CUDA only: "
                     f"{len(extra)}")
    run.check("no nbval failure on CUDA that this torch does not also have "
              "on the CPU", gpu is not None and not extra,
              "; ".join(extra[:10]))


# --------------------------------------------------------------------------
# The step table

@dataclass
class Step:
    name: str
    title: str
    fn: object
    nbval: bool = False      # a pytest pass: skipped by --quick unless kept


STEPS = [
    Step("environment", "versions, and torch against its pin",
         step_environment),
    Step("contract", "the chapters' side of the contract (read)",
         step_contract),
    Step("conversions", "conversions, identities and errors, mininn vs "
         "torch.nn", step_conversions),
    Step("precision", "float16 and bfloat16 forward parity", step_precision),
    Step("autocast", "autocast: dtypes, outputs and gradients",
         step_autocast),
    Step("dataparallel", "DataParallel on one GPU", step_dataparallel),
    Step("nonblocking", "the non_blocking copy to the host", step_nonblocking),
    Step("checkpoint", "a GPU checkpoint in a CPU-only process",
         step_checkpoint),
    Step("tf32", "max |GPU - CPU|, TF32 off and on", step_tf32),
    Step("nbval", "nbval over the chapters", step_nbval, True),
    Step("tf32-new", "TF32 at kernel start, new API", step_tf32_new, True),
    Step("tf32-legacy", "TF32 at kernel start, legacy flags",
         step_tf32_legacy, True),
    Step("tf32-forced", "TF32 started by the cuBLAS override",
         step_tf32_forced, True),
    Step("rerun-2", "chapter 9, run 2", step_rerun_2, True),
    Step("rerun-3", "chapter 9, run 3", step_rerun_3, True),
    Step("determinism", "chapter 9's loss hashes across runs",
         step_determinism),
    Step("tf32-control", "chapter 6's TF32 assert can fail",
         step_tf32_control, True),
    Step("cpu-baseline", "nbval on this machine's CPU (other torch only)",
         step_cpu_baseline, True),
]
# --quick keeps one nbval pass, the one with the most machinery: a start-up
# file and its markers, MININN_EXPECT_TF32 and a run record. Each pass
# costs seconds of CPU in the test suite; the comparison of runs is tested
# on its own (tests/test_gpu_check.py).
QUICK_PASSES = {"tf32-new"}


def why_skipped(run, step):
    if not step.nbval:
        return None
    if run.quick and step.name not in QUICK_PASSES:
        return "--quick runs one nbval pass"
    return why_not_run(run, step.name)


def launch_ahead(run):
    """Start every nbval pass that will run, side by side: they are
    independent, and one pass alone leaves most cores idle (each waits for
    its slowest notebook). Each step then waits for its own."""
    for step in STEPS:
        if step.nbval and not why_skipped(run, step):
            launch(run, spec_of(run, step.name))
    print(f"    started side by side: {', '.join(run.launched) or 'none'}",
          flush=True)


def run_step(run, index, step, record):
    run.step, run.step_record = step, record
    print(f"[{index}/{len(STEPS)}] {step.name}: {step.title}", flush=True)
    before = len(run.checks)
    start = time.monotonic()
    if step.nbval and run.parallel and not run.ahead and run.left() >= 10:
        run.ahead = True
        launch_ahead(run)
    why = why_skipped(run, step)
    if why:
        skip(run, why)
    elif step.nbval and run.left() < 10 and step.name not in run.launched:
        run.check(f"{step.name} ran", False, "not run: the time budget "
                  f"({run.args.budget:.0f} s) was spent")
    else:
        try:
            step.fn(run)
            if record.status == "not run":
                record.status = "done"
        except Exception as e:  # the step broke: record it, go on
            record.status = "crashed"
            run.crashed = True
            run.log(f"{step.name} crashed", traceback.format_exc())
            run.check(f"{step.name} ran to its end", False,
                      f"{type(e).__name__}: {e}")
    record.seconds = round(time.monotonic() - start, 1)
    mine = run.checks[before:]
    print(f"    {record.seconds:.1f} s, {sum(c.ok for c in mine)}/{len(mine)}"
          " checks passed", flush=True)
    run.write()


# --------------------------------------------------------------------------
# The summary line and the report

def pass_summary(run, name):
    result = run.passes.get(name)
    return result.summary if result else "not run"


def summary_line(run):
    passed = sum(c.ok for c in run.checks)
    device = run.facts.get("device", "?")
    sections = {}
    for c in run.checks:
        done = sections.setdefault(c.section, [0, 0])
        done[0] += c.ok
        done[1] += 1
    failing = [k for k, (p, t) in sections.items() if p < t]
    det = [c for c in run.checks if c.section == "determinism"
           and "across runs" in c.label]
    hashes = ("equal across runs" if det and det[0].ok else
              "differ" if det else "not compared")
    skipped = [s.name for s in run.steps if s.status == "skipped"]
    parts = [
        f"gpu_check on {device}{run.mark}: {passed}/{len(run.checks)} checks "
        "passed" + (f" (failing: {', '.join(failing)})" if failing else ""),
        f"nbval: {pass_summary(run, 'nbval')}",
        f"TF32 new: {pass_summary(run, 'tf32-new')}",
        f"TF32 legacy: {pass_summary(run, 'tf32-legacy')}",
        f"TF32 override: {pass_summary(run, 'tf32-forced')}",
        f"chapter 9 hashes: {hashes}",
        f"{time.monotonic() - run.started:.0f} s",
    ]
    if skipped:
        parts.append(f"skipped: {', '.join(skipped)}")
    return "; ".join(parts)


def render_report(data):
    """The markdown page of one run, from its data."""
    facts = data["facts"]
    device = facts.get("device", "?")
    dry = " (dry run: cpu)" if data["dry_run"] else ""
    minutes, seconds = divmod(round(data["wall_seconds"]), 60)
    lines = [
        f"# GPU run of {data['date']} on {device}{dry}", "",
        f"{data['passed']} of {data['total']} checks passed in {minutes} min "
        f"{seconds} s, by `{data['command']}`."
        + ("" if data["complete"] else
           " **The run stopped early: this report holds the steps it "
           "finished.**"), "",
        "Its last line:", "", "```text", *textwrap.wrap(
            data["summary"], 72, subsequent_indent="  "), "```", "",
        "## Machine", "",
        "| what | version |", "|---|---|",
    ]
    rows = [("device", f"{device} (compute capability "
             f"{facts.get('capability')}, {facts.get('memory')})"),
            ("driver", facts.get("driver")), ("CUDA", facts.get("cuda")),
            ("cuDNN", facts.get("cudnn")),
            ("torch", f"{facts.get('torch')} (pinned: "
             f"{facts.get('torch_pin')})"),
            ("Python", facts.get("python")),
            ("nbval, pytest", f"{facts.get('nbval')}, {facts.get('pytest')}"),
            ("CPU cores", facts.get("cpu_cores"))]
    lines += [f"| {k} | {v} |" for k, v in rows]
    lines += ["", "## Checks", ""]
    by_step = {}
    for c in data["checks"]:
        by_step.setdefault(c["section"], []).append(c)
    for step in data["steps"]:
        checks = by_step.get(step["name"], [])
        passed = sum(c["ok"] for c in checks)
        head = f"### {step['name']}: {step['title']}"
        lines += [head, ""]
        if step["status"] == "skipped":
            lines += [f"Skipped: {step['note']}", ""]
            continue
        if step["status"] == "not run":
            lines += ["Not run.", ""]
            continue
        lines += [f"{passed} of {len(checks)} passed, {step['seconds']} s"
                  + (" (the step crashed; see the log)"
                     if step["status"] == "crashed" else "") + ".", ""]
        for c in checks:
            mark = "PASS" if c["ok"] else "**FAIL**"
            detail = (f" ({c['detail']})" if c["detail"] and not c["ok"]
                      else "")
            lines.append(f"- {mark} {escape(c['label'])}{escape(detail)}")
        lines.append("")
    if data["tf32"]:
        lines += ["## Max |GPU - CPU|, TF32 off and on", "",
                  "Allowed: (rtol, atol) as the chapters compare, chapter "
                  "6's `gpu_tolerance()` (TF32 off, or forced on) and "
                  "chapter 9's comparison of the GPU with the CPU.", "",
                  "| model | TF32 off | TF32 on | allowed off / on |",
                  "|---|---|---|---|"]
        for row in data["tf32"]:
            allowed = " / ".join(
                f"({tol['rtol']:g}, {tol['atol']:g})"
                for tol in (row["allowed_off"], row["allowed_on"]))
            lines.append(f"| {row['what']} | {row['tf32_off']:.2e} | "
                         f"{row['tf32_on']:.2e} | {allowed} |")
        lines.append("")
    if data["records"]:
        lines += ["## Chapter 9's loss hashes", "",
                  "The first 12 hex digits of each SHA-256, by run:", ""]
        for name, record in data["records"].items():
            lines.append(f"- {name}: " + ", ".join(
                f"{escape(k)} `{v[:12]}`" for k, v in sorted(record.items())))
        lines.append("")
    if data["nbval"]:
        lines += ["## nbval passes", ""]
        for p in data["nbval"]:
            lines.append(f"- **{p['name']}** ({p['label']}; "
                         f"{', '.join(p['notebooks']) or 'no notebook'}): "
                         f"{escape(p['summary'])}")
            lines += [f"  - {escape(f)}" for f in p["failures"][:20]]
        lines.append("")
    if data["notes"]:
        lines += ["## Notes", ""] + [f"- {escape(n)}" for n in data["notes"]]
        lines.append("")
    # An nbval pass may have run alongside others: its step only waited
    # for it, and the pass's own wall time is the second number.
    own = {p["name"]: p["seconds"] for p in data["nbval"]}
    lines += ["## Wall time per step", "",
              "Seconds in the step, and for an nbval pass its own wall time "
              "(the passes run side by side unless `--serial`).", "",
              "| step | seconds | its pass |", "|---|---|---|"]
    lines += [f"| {s['name']} | {s['seconds']} | {own.get(s['name'], '')} |"
              for s in data["steps"]]
    lines.append("")
    return "\n".join(lines)


def escape(text):
    """Plain text in markdown: no stray markup from a label or a message."""
    return re.sub(r"([\\`*_{}\[\]<>|$])", r"\\\1", str(text))


# --------------------------------------------------------------------------
# The page that lists the reports (book/gpu_runs.md)

def reports_in(folder):
    """The reports in `folder`, newest first, with their data."""
    found = []
    for md in sorted(Path(folder).glob("*.md"), reverse=True):
        if not REPORT_NAME.match(md.name):
            continue
        data_path = md.with_suffix(".json")
        data = json.loads(data_path.read_text()) if data_path.exists() else {}
        found.append((md, data))
    return found


def index_block(reports, prefix):
    """The generated part of the page: a list of the reports, then each
    report included whole. `prefix` is the folder from the page to them."""
    if not reports:
        return NO_RUN_YET
    lines = []
    for md, data in reports:
        facts = data.get("facts", {})
        lines.append(
            f"- {{ref}}`{data.get('date', md.stem[:10])} on "
            f"{facts.get('device', '?')} <gpu-run-{md.stem}>`: "
            f"{data.get('passed', '?')} of {data.get('total', '?')} checks "
            f"passed, torch {facts.get('torch', '?')}")
    for md, _ in reports:
        lines += ["", f"(gpu-run-{md.stem})=",
                  f"```{{include}} {prefix}{md.name}", ":heading-offset: 1",
                  "```"]
    return "\n".join(lines)


def render_index(page_text, reports, prefix="gpu-runs/"):
    """`page_text` with its generated block replaced."""
    begin = page_text.index(INDEX_BEGIN) + len(INDEX_BEGIN)
    end = page_text.index(INDEX_END)
    return (page_text[:begin] + "\n" + index_block(reports, prefix) + "\n"
            + page_text[end:])


def update_index(page=INDEX_PAGE, folder=REPORTS, prefix="gpu-runs/"):
    text = page.read_text()
    new = render_index(text, reports_in(folder), prefix)
    if new != text:
        page.write_text(new)
    return new


# --------------------------------------------------------------------------

def choose_chapters(run):
    if run.quick and not run.args.chapters:
        run.fixture = write_fixture(run.scratch / "fixture")
        return [run.fixture]
    if not run.args.chapters:
        return all_chapters()
    chosen = []
    for item in run.args.chapters.split(","):
        item = item.strip()
        matches = (sorted(BOOK.glob(f"{item}_*.ipynb")) if item.isdigit()
                   else [Path(item).resolve()])
        if not matches or not matches[0].exists():
            raise SystemExit(f"--chapters: no notebook {item!r}")
        chosen += matches
    return chosen


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Run the book's GPU path and record it (see the "
        "docstring of tools/gpu_check.py).")
    parser.add_argument("--dry-run", action="store_true",
                        help="every step on the CPU; report in a temporary "
                        "folder unless --out")
    parser.add_argument("--quick", action="store_true",
                        help="the dry run's short form (the test suite's)")
    parser.add_argument("--chapters", help="nbval steps over these only: "
                        "numbers (06,09) or notebook paths")
    parser.add_argument("--out", help="write the report into this folder "
                        "(and not into book/gpu-runs/)")
    parser.add_argument("--budget", type=float, help="seconds for the whole "
                        "run; nbval steps stop when it is spent (default 360,"
                        " or 3600 for a dry run, 120 for --quick)")
    parser.add_argument("--index", action="store_true",
                        help="only list book/gpu-runs/ on book/gpu_runs.md")
    side = parser.add_mutually_exclusive_group()
    side.add_argument("--serial", action="store_true",
                      help="one nbval pass at a time (the default for "
                      "--dry-run)")
    side.add_argument("--parallel", action="store_true",
                      help="the nbval passes side by side (the default "
                      "otherwise)")
    parser.add_argument("--wheels", action="store_true",
                        help="only print the packages (name==version) a "
                        "CUDA image with torch and pytest may lack")
    args = parser.parse_args(argv)
    args.argv = list(argv)
    if args.budget is None:
        args.budget = (120 if args.quick else 3600 if args.dry_run else 360)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.wheels:
        print("\n".join(wheels()))
        return 0
    if args.index:
        update_index()
        print(f"{shown(INDEX_PAGE)}: {len(reports_in(REPORTS))} report(s) "
              "listed")
        return 0
    if args.dry_run or args.quick:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch looks
    # cuBLAS reads it when it starts: deterministic() needs it (the kernels
    # of the nbval passes do not get it: chapter 9 sets its own)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    sys.path.insert(0, str(BOOK))
    sys.path.append(str(ROOT / "tests"))  # the suite's support, no pytest
    import torch
    if not (args.dry_run or args.quick) and not torch.cuda.is_available():
        print("no CUDA here: nothing to check (--dry-run runs every step on "
              "the CPU)")
        return 2
    run = Run(args)
    run.parallel = args.parallel or not (
        args.serial or (args.dry_run and not args.quick))
    run.chapters = choose_chapters(run)
    run.facts["device"] = ("cpu" if run.dry
                           else torch.cuda.get_device_name(0))
    run.open_report()
    print(f"gpu_check{run.mark}: {len(run.chapters)} notebook(s); report "
          f"{shown(run.out / run.stem)}.md; budget {args.budget:.0f} s",
          flush=True)
    try:
        for index, (step, record) in enumerate(zip(STEPS, run.steps), 1):
            run_step(run, index, step, record)
    finally:
        stop_launched(run)
    run.complete = True
    run.summary = summary_line(run)
    run.write()
    if run.dry:
        page = run.out / "gpu_runs.md"
        page.write_text(render_index(INDEX_PAGE.read_text(),
                                     reports_in(run.out), prefix=""))
    elif not args.out:
        update_index()
    print(f"report: {shown(run.out / run.stem)}.md (and .json, .log)")
    print(run.summary, flush=True)
    shutil.rmtree(run.scratch, ignore_errors=True)
    if run.crashed:
        return 3
    return 0 if all(c.ok for c in run.checks) else 1


if __name__ == "__main__":
    sys.exit(main())
