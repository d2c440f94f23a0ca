"""Chapter 6 on a GPU: conversions, precision, autocast, the non_blocking
trap and TF32, each body run on torch.nn and on mininn (the `nn` fixture),
or the two compared (`both`)."""
import json
import os
from pathlib import Path

import pytest
import torch
from helpers import error_of, fp32_precision_restored
from support import make_mlp, with_grads

pytestmark = pytest.mark.gpu
CHAPTER_6 = Path(__file__).parents[2] / "book" / "06_apply.ipynb"


def convnet(nn):
    """A small net of chapter 9's kind, seeded: two convolutions, a head."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


@pytest.fixture
def deterministic():
    """Deterministic kernels only, as chapter 9 trains its twins: the same
    operations on the same numbers give the same bits."""
    before = (torch.are_deterministic_algorithms_enabled(),
              torch.backends.cudnn.deterministic)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    yield
    torch.use_deterministic_algorithms(before[0])
    torch.backends.cudnn.deterministic = before[1]


def snapshot(model, conversion):
    """(name, same object?, dtype, device) of every parameter, grad and
    buffer after the `conversion` of `m`, or the error it raised."""
    before = {n: (p, p.grad) for n, p in model.named_parameters()}
    error = error_of(eval, conversion, {"m": model, "torch": torch})
    if error:
        return error
    rows = []
    for n, p in model.named_parameters():
        rows += [(n, p is before[n][0], p.dtype, p.device),
                 (n + ".grad", p.grad is before[n][1], p.grad.dtype,
                  p.grad.device)]
    return rows + [(n, b.dtype, b.device) for n, b in model.named_buffers()]


@pytest.mark.parametrize("conversion", [
    "m.cuda()", "m.cuda(0)", "m.cuda(torch.device('cuda:0'))", "m.to('cuda')",
    "m.to('cuda', torch.half)", "m.to('cuda', non_blocking=True)",
    "m.to(torch.zeros(1, device='cuda', dtype=torch.float64))",
    "m.to('cuda').half().cpu()", "m.to_empty(device='cuda')",
    "m.to('meta').to_empty(device='cuda')"])
def test_a_conversion_to_cuda_does_what_torch_nn_does(both, conversion):
    real, mini = (snapshot(with_grads(make_mlp(nn, outputs=3)), conversion)
                  for nn in both)
    assert not isinstance(real, str), real  # torch.nn converts
    if conversion == "m.cuda()":  # every parameter and grad object kept
        assert all(row[1] is True for row in real if len(row) == 4), real
    assert mini == real


def test_an_optimizer_built_before_cuda_still_trains(both):
    """Three SGD steps of a layer whose optimizer was built on the CPU."""
    runs = []
    for nn in both:
        torch.manual_seed(0)
        layer = nn.Linear(3, 1)
        opt = torch.optim.SGD(layer.parameters(), lr=0.1)
        layer.cuda()
        xs = torch.randn(8, 3, device="cuda")
        runs.append([])
        for _ in range(3):
            loss = layer(xs).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            runs[-1].append(loss.item())
    real, mini = runs
    assert mini == real and real[-1] < real[0]


@pytest.mark.parametrize("move", ["nn.Linear(2, 2).to('meta').to('cuda')",
                                  "nn.Linear(2, 2).cuda(99)"])
def test_a_failed_move_raises_torch_nns_error(both, move, record_property):
    real, mini = (error_of(eval, move, {"nn": nn}) for nn in both)
    record_property("error", str(real)[:200])
    assert real is not None and mini == real


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("net", ["mlp", "convnet"])
def test_half_precision_forward_is_bit_identical(both, net, dtype, mode,
                                                 deterministic):
    build, shape = {"mlp": (make_mlp, (32, 4)),
                    "convnet": (convnet, (16, 1, 28, 28))}[net]
    torch.manual_seed(2)
    x = torch.randn(shape).to("cuda", dtype)
    outs, states = [], []
    for nn in both:
        model = getattr(build(nn).to("cuda", dtype), mode)()
        outs.append(model(x))
        states.append(list(model.state_dict().values()))
    assert (outs[0].dtype, outs[0].device.type) == (dtype, "cuda")
    assert torch.equal(*outs)
    assert all(map(torch.equal, *states))  # BatchNorm's statistics too


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_autocast_gives_the_same_dtypes_outputs_and_grads(both, dtype,
                                                          deterministic):
    seen = []
    for nn in both:
        model = convnet(nn).cuda()
        dtypes = []
        for layer in model.children():
            layer.register_forward_hook(
                lambda m, args, out, dtypes=dtypes: dtypes.append(out.dtype))
        torch.manual_seed(3)
        with torch.autocast("cuda", dtype):
            out = model(torch.randn(16, 1, 28, 28, device="cuda"))
        out.float().sum().backward()  # outside autocast, as usual
        seen.append((dtypes, out, [p.grad for p in model.parameters()]))
    (real_dtypes, real_out, real_grads), (dtypes, out, grads) = seen
    assert dtype in real_dtypes and dtypes == real_dtypes
    assert torch.equal(out, real_out) and all(map(torch.equal, grads,
                                                  real_grads))


def queue_work():
    """Queue a few hundred milliseconds of GPU work ahead of what follows."""
    a = torch.randn(4096, 4096, device="cuda")
    for _ in range(100):
        a = a @ a / 64


def test_a_non_blocking_copy_to_the_host_is_read_too_early():
    """Chapter 6's trap: to("cpu", non_blocking=True) returns before the
    values land; synchronize() fixes it; a plain .cpu() waits."""
    src = torch.empty(1 << 22, device="cuda")
    torch.cuda.synchronize()
    queue_work()
    src.uniform_()
    dst = src.to("cpu", non_blocking=True)
    pending = not torch.cuda.current_stream().query()
    early = dst.clone()  # the host reads without waiting
    torch.cuda.synchronize()
    truth = src.cpu()
    assert pending, "the copy had finished already"
    assert not torch.equal(early, truth)  # stale, and no error
    assert torch.equal(dst, truth)
    queue_work()
    src.add_(1)
    assert torch.equal(src.cpu(), truth + 1)


def chapter_6_gpu_tolerance():
    """gpu_tolerance() as chapter 6 defines it (its own cell, not a copy;
    running it pins "ieee" as the chapter does)."""
    cells = json.loads(CHAPTER_6.read_text(encoding="utf-8"))["cells"]
    [source] = [text for text in ("".join(c["source"]) for c in cells)
                if "def gpu_tolerance" in text]
    scope = {"torch": torch, "os": os}
    exec(source, scope)
    return scope["gpu_tolerance"]


@pytest.mark.parametrize("tf32", ["ieee", "tf32"])
@pytest.mark.parametrize("net, batch", [("mlp", 16), ("mlp", 64),
                                        ("convnet", 64)])
def test_a_model_on_the_gpu_is_within_its_chapters_tolerance(
        nn, net, batch, tf32, monkeypatch, record_property):
    """Chapter 6's MLP within gpu_tolerance()'s (TF32 on: the one it keeps
    for the cuBLAS override); chapter 9's convnet within the one it compares
    its GPU with the CPU by (cell fc264734)."""
    if net == "mlp":
        build, shape, tolerance = make_mlp, (batch, 4), None
        if tf32 == "tf32":
            monkeypatch.setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1")
    else:
        build, shape = convnet, (batch, 1, 28, 28)
        tolerance = {"rtol": 1e-2, "atol": 1e-2}
    torch.manual_seed(batch)
    x = torch.randn(shape)
    reference, model = build(nn).eval(), build(nn).eval().cuda()
    with fp32_precision_restored(), torch.no_grad():
        tolerance = tolerance or chapter_6_gpu_tolerance()()  # pins "ieee"
        torch.backends.cuda.matmul.fp32_precision = tf32
        torch.backends.cudnn.conv.fp32_precision = tf32
        out, expected = model(x.cuda()).cpu(), reference(x)
    record_property("max |gpu - cpu|", f"{(out - expected).abs().max():.2e}")
    torch.testing.assert_close(out, expected, **tolerance)


def test_tf32_changes_a_product_exactly_where_the_gpu_has_it():
    torch.manual_seed(6)
    a, b = torch.randn(2, 512, 512, device="cuda")
    products = {}
    with fp32_precision_restored():
        for mode in ("ieee", "tf32"):
            torch.backends.cuda.matmul.fp32_precision = mode
            products[mode] = a @ b
    has_tf32 = torch.cuda.get_device_capability(0) >= (8, 0)  # Ampere on
    assert torch.equal(*products.values()) != has_tf32
