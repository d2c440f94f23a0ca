"""The device tests, marked `gpu` and skipped without CUDA: on a GPU machine
`python tools/gpu_run.py` runs them with the chapters, and reports."""
import os

import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def cuda():
    """Every test here is skipped without a GPU (before its other fixtures:
    this one is the widest)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA: tools/gpu_run.py runs it on a GPU machine")
    # cuBLAS reads it once, when it starts (here, after this): without it
    # a deterministic run refuses its products; chapter 9 sets it so too
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
