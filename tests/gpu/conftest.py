"""The device tests: ordinary tests, marked `gpu` in each file and skipped
without CUDA. On a GPU machine `python tools/gpu_run.py` runs them (as
`pytest -m gpu tests/gpu`) with the chapters, and writes the report."""
import os

import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def cuda():
    """Every test here is skipped where there is no GPU (this fixture is
    the widest, so it runs before any other of a test)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA: tools/gpu_run.py runs it on a GPU machine")
    # cuBLAS reads it once, when it starts (here, after this): without it
    # a deterministic run refuses its products; chapter 9 sets it so too
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
