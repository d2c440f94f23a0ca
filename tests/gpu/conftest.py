"""The device checks: ordinary tests, marked `gpu` in each file and skipped
without CUDA. On a GPU machine `python tools/gpu_run.py` runs them (as
`pytest -m gpu tests/gpu`) with the chapters, and writes the report."""
import os

import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def cuda():
    """The first GPU; every test here is skipped where there is none
    (before any other fixture of a test starts: this one is the widest)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA: tools/gpu_run.py runs it on a GPU machine")
    # cuBLAS reads it once, when it starts (here, after this): without it
    # a deterministic run refuses its products; chapter 9 sets it so too
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    return torch.device("cuda", 0)


@pytest.fixture
def deterministic():
    """Deterministic kernels only, as chapter 9 trains its twins: two
    models that run the same operations on the same numbers get the same
    bits, and an operation with no deterministic kernel raises."""
    before = (torch.are_deterministic_algorithms_enabled(),
              torch.backends.cudnn.deterministic)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0])
        torch.backends.cudnn.deterministic = before[1]


@pytest.fixture
def convnet():
    """convnet(nn): a small net of chapter 9's kind, two convolutions and a
    linear head, seeded."""
    return make_convnet


def make_convnet(nn):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
