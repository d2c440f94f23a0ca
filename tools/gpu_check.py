"""The book's GPU cells on a real GPU, for a machine with CUDA.

The stored outputs were made on a CPU-only machine, where the GPU cells fall
back to the meta device. This script checks the CUDA path: chapter 6's
conversions, mininn against torch.nn, then nbval of chapters 6-9 (whose
GPU cells must pass with the same stored outputs) and their tests.

    python tools/gpu_check.py      # from the repository root, torch with CUDA

Exit status 0 when every check passes; prints one line per check.
"""
import subprocess
import sys
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
print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__)


def check(label, ok):
    print(("PASS " if ok else "FAIL ") + label)
    if not ok:
        check.failed += 1


check.failed = 0


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

# 3. the notebook's GPU cells: run on the GPU, compare with the CPU
model, reference = make(mini).eval(), make(mini).eval()
before = list(model.parameters())
model.to(cuda)
check("to(cuda): all tensors on cuda",
      all(t.is_cuda for t in [*model.parameters(), *model.buffers()]))
check("to(cuda): objects kept",
      all(a is b for a, b in zip(before, model.parameters())))
torch.manual_seed(0)
x = torch.randn(16, 4)
out = model(x.to(cuda))
try:
    torch.testing.assert_close(out.cpu(), reference(x), rtol=1e-4, atol=1e-5)
    check("GPU output matches the CPU reference within tolerance", True)
except AssertionError as e:
    print(e)
    check("GPU output matches the CPU reference within tolerance", False)
torch.manual_seed(1)
batch = torch.randn(64, 4).pin_memory()
check("pinned batch", batch.is_pinned())
on_device = batch.to(cuda, non_blocking=True)
out = model(on_device)
torch.cuda.synchronize()
check("non_blocking result matches",
      torch.allclose(out.cpu(), reference(batch), rtol=1e-4, atol=1e-5))
model.cpu()
check("back on the CPU bit for bit",
      all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                            reference.state_dict().values())))

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

# 6. chapters 6-9 (GPU cells: moving, map_location, training on CUDA) and
# their tests, stored outputs compared by nbval on a GPU
cmd = [sys.executable, "-m", "pytest", "book/06_apply.ipynb",
       "book/07_state_dict.ipynb", "book/09_capstone.ipynb",
       "tests/test_apply.py", "tests/test_state_dict.py", "-q"]
run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
print("\n".join(run.stdout.strip().splitlines()[-5:]))
check("nbval of chapters 6-9 + their tests on the GPU",
      run.returncode == 0)

print("failed:", check.failed)
sys.exit(1 if check.failed else 0)
