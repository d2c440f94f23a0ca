"""The book's GPU path on a real GPU: run this on a machine with CUDA.

The stored outputs are made on a CPU-only machine, where the device cells
fall back to the meta device (chapters 6, 8) or the CPU (chapter 9). This script shows that the CUDA branch runs
and that the same stored outputs hold there:

  1. mininn against torch.nn on CUDA: every conversion (`cuda()`, `to`, ...)
     keeps the same objects, dtypes and devices; errors have the same text;
     an optimizer built before `.cuda()` keeps training;
  2. a checkpoint saved on the GPU, opened in a process that cannot see the
     GPU: torch's error, then the `map_location="cpu"` fix;
  3. (a, b) nbval over EVERY chapter on CUDA against the CPU-made outputs,
     with MININN_EXPECT_CUDA=1: each cell that picks a device asserts that
     it picked cuda, so a kernel that cannot see the GPU fails instead of
     quietly running the meta branch; first, every chapter that has a
     device cell is checked to carry that assert;
  4. (c) the chapters once more with TF32 allowed at kernel start
     (`torch.backends.cuda.matmul.allow_tf32 = True`,
     `torch.backends.cudnn.allow_tf32 = True`, as a user may set them),
     to show which tolerances still hold: the cells that compare GPU with
     CPU values set the precision they need themselves;
  5. (d) chapter 9 twice more under the same flags: its twins train with
     `torch.use_deterministic_algorithms(True)`, so identical losses on a
     GPU hold by construction (a nondeterministic kernel would raise);
  6. (e) one summary line.

    python tools/gpu_check.py     # from the repository root

It needs a Python with a CUDA build of torch 2.13 and the test tools of
requirements.txt (pytest, pytest-xdist, nbval, ipykernel, nbformat). Exit
status 0 when every check passes, 2 when there is no GPU.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book"))

import mininn as mini  # noqa: E402  (the finished package)
import torch.nn as nn  # noqa: E402

if not torch.cuda.is_available():
    print("no CUDA here: nothing to check")
    sys.exit(2)

cuda = torch.device("cuda")
DEVICE = torch.cuda.get_device_name(0)
print("device:", DEVICE, "| torch", torch.__version__, flush=True)
RESULTS = {}


def check(label, ok, section="parity"):
    print(("PASS " if ok else "FAIL ") + label, flush=True)
    RESULTS.setdefault(section, []).append(bool(ok))


def make(lib):
    torch.manual_seed(0)
    return lib.Sequential(lib.Linear(4, 8), lib.BatchNorm1d(8), lib.ReLU(),
                          lib.Linear(8, 3))


def snapshot(model, convert):
    before = {n: (p, p.grad) for n, p in model.named_parameters()}
    convert(model)
    rows = []
    for n, p in model.named_parameters():
        rows.append((n, p is before[n][0], p.dtype, str(p.device)))
        if p.grad is not None:
            rows.append((n + ".grad", p.grad is before[n][1], p.grad.dtype,
                         str(p.grad.device)))
    rows += [(n, b.dtype, str(b.device)) for n, b in model.named_buffers()]
    return rows


def with_grads(model):
    model(torch.randn(16, 4, device=next(model.parameters()).device)
          ).sum().backward()
    return model


# 1. every CUDA conversion: same identities, dtypes, devices as torch.nn
conversions = {
    "cuda()": lambda m: m.cuda(),
    "cuda(0)": lambda m: m.cuda(0),
    "cuda(torch.device('cuda:0'))": lambda m: m.cuda(torch.device("cuda:0")),
    "to('cuda')": lambda m: m.to("cuda"),
    "to(cuda, torch.half)": lambda m: m.to(cuda, torch.half),
    "to(cuda_tensor)": lambda m: m.to(torch.zeros(1, device=cuda,
                                                  dtype=torch.float64)),
    "to('cuda', non_blocking=True)": lambda m: m.to("cuda",
                                                    non_blocking=True),
    "cuda().half().cpu()": lambda m: m.cuda().half().cpu(),
    "to_empty(device='cuda')": lambda m: m.to_empty(device="cuda"),
    "to('meta').to_empty(device='cuda')":
        lambda m: m.to("meta").to_empty(device="cuda"),
}
for label, convert in conversions.items():
    ours = snapshot(with_grads(make(mini)), convert)
    theirs = snapshot(with_grads(make(nn)), convert)
    check(f"parity {label}", ours == theirs)

# 2. identity and grads on the default path to CUDA
model = with_grads(make(mini))
params = list(model.parameters())
grads = [p.grad for p in params]
model.cuda()
check("cuda keeps every parameter object",
      all(a is b for a, b in zip(params, model.parameters())))
check("cuda keeps every grad object and moves it",
      all(p.grad is g and p.grad.is_cuda
          for p, g in zip(model.parameters(), grads)))
check("integer buffer is int64 on cuda",
      model[1].num_batches_tracked.dtype == torch.int64
      and model[1].num_batches_tracked.is_cuda)

# 4. optimizer built before .cuda() keeps training (both libraries)
def train_losses(lib):
    torch.manual_seed(0)
    layer = lib.Linear(3, 1)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    layer.cuda()
    xs = torch.randn(8, 3, device=cuda)
    losses = []
    for _ in range(3):
        loss = layer(xs).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


ours, theirs = train_losses(mini), train_losses(nn)
check(f"optimizer before cuda() trains: {ours}",
      ours == theirs and ours[-1] < ours[0])

# 5. errors: meta -> cuda via to() points to to_empty, same text
def err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return None


ours = err(lambda: mini.Linear(2, 2).to("meta").to("cuda"))
theirs = err(lambda: nn.Linear(2, 2).to("meta").to("cuda"))
check("meta -> cuda error same as torch", ours == theirs and ours)
ours = err(lambda: mini.Linear(2, 2).cuda(99))
theirs = err(lambda: nn.Linear(2, 2).cuda(99))
check(f"cuda(99) error same as torch: {theirs}", ours == theirs and ours)

# 2. a GPU checkpoint in a process that cannot see the GPU
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "gpu.pt"
    torch.save(make(mini).cuda().state_dict(), path)
    probe = textwrap.dedent(f"""
        import torch
        try:
            torch.load({str(path)!r}, weights_only=True)
            print("loaded without map_location")
        except RuntimeError as e:
            print("refused:", str(e).split(".")[0])
        sd = torch.load({str(path)!r}, map_location="cpu", weights_only=True)
        print("map_location=cpu:", {{t.device.type for t in sd.values()}})
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True,
                         text=True, env={**os.environ,
                                         "CUDA_VISIBLE_DEVICES": ""})
    print(textwrap.indent(out.stdout.strip(), "    "))
    check("a CUDA checkpoint on a CPU-only process: refused, then loads",
          "refused: Attempting to deserialize object on a CUDA device"
          in out.stdout and "map_location=cpu: {'cpu'}" in out.stdout,
          "checkpoint")

# 3a. every chapter with a device cell asserts MININN_EXPECT_CUDA
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
PICKS = re.compile(r"torch\.device\(\s*[\"']cuda[\"']\s+if")
with_device = []
for nb_path in CHAPTERS:
    cells = json.loads(nb_path.read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    picking = [src for src in sources if PICKS.search(src)]
    if picking:
        with_device.append(nb_path.name)
        check(f"{nb_path.name}: every device cell asserts the CUDA branch",
              all("MININN_EXPECT_CUDA" in src for src in picking), "nbval")
print("chapters with device cells:", ", ".join(with_device) or "none")


def nbval(label, extra_env, paths, section):
    """pytest (nbval + tests) in a fresh process; prints its summary."""
    env = {**os.environ, "MININN_EXPECT_CUDA": "1", **extra_env}
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "not site",
           "-n", str(min(8, os.cpu_count() or 1)), "--dist", "loadfile",
           *paths]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                         env=env)
    lines = run.stdout.strip().splitlines()
    failures = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    print("\n".join(failures[:30] + lines[-1:]), flush=True)
    check(label, run.returncode == 0, section)
    return lines[-1] if lines else "no output"


# 3b. nbval over every chapter (and the tests) on CUDA
summary_nbval = nbval("nbval of every chapter + tests/ on CUDA", {},
                      ["book", "tests"], "nbval")

# 4. the same chapters with TF32: first allowed at kernel start, as a user
# may set the flags (the cells that compare GPU with CPU values switch
# them off again); then forced by TORCH_ALLOW_TF32_CUBLAS_OVERRIDE, which
# no flag can undo (those cells then widen their tolerance, and say why)
with tempfile.TemporaryDirectory() as ipython:
    startup = Path(ipython) / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-tf32.py").write_text(
        "import torch\n"
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "torch.backends.cudnn.allow_tf32 = True\n")
    summary_tf32 = nbval("nbval of every chapter with TF32 allowed",
                         {"IPYTHONDIR": ipython}, ["book"], "tf32")
    summary_forced = nbval(
        "nbval of every chapter with TF32 forced for cuBLAS",
        {"IPYTHONDIR": ipython, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"},
        ["book"], "tf32")

# 5. chapter 9's deterministic twins, twice more
summary_det = [nbval(f"chapter 9 on CUDA, run {i} (deterministic twins)",
                     {}, ["book/09_capstone.ipynb"], "determinism")
               for i in (2, 3)]

# 6. one line
passed = sum(sum(v) for v in RESULTS.values())
total = sum(len(v) for v in RESULTS.values())
parts = ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in RESULTS.items())
print(f"gpu_check on {DEVICE}: {passed}/{total} checks passed ({parts}); "
      f"nbval: {summary_nbval}; TF32 allowed: {summary_tf32}; "
      f"TF32 forced: {summary_forced}; "
      f"chapter 9 reruns: {' / '.join(summary_det)}")
sys.exit(0 if passed == total else 1)
