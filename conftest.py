"""Loaded by pytest for every test under the repository root: the notebooks
(nbval) as well as tests/. The kernels nbval starts inherit this
environment, so it is set here, before any kernel starts."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

# Chapter 10's benchmarks run a short workload under test; `tools/dev.py
# bench` and `outputs` run the full one. Only outputs tagged
# nbval-ignore-output depend on it.
os.environ.setdefault("MININN_QUICK", "1")
# pytest-xdist already runs one notebook per core; kernels that each start
# a thread per core would fight over them. Stored outputs must not depend
# on the thread count anyway (see CONTRIBUTING.md).
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Kernels forked from a server that has imported torch, once per pytest
# process (tests/kernel_server.py says why, and where it is not used).
_spec = importlib.util.spec_from_file_location(
    "kernel_server", Path(__file__).parent / "tests" / "kernel_server.py")
kernel_server = importlib.util.module_from_spec(_spec)
sys.modules["kernel_server"] = kernel_server  # one server, for tests too
_spec.loader.exec_module(kernel_server)


def pytest_configure(config):
    if kernel_server.wanted():
        from nbval.kernel import NbvalKernelspecManager

        kernel_server.use_stand_in(NbvalKernelspecManager)
        config.add_cleanup(kernel_server.SERVER.stop)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if type(item).__name__ == "IPyNbCell" and kernel_server.wanted():
        kernel_server.SERVER.start()
