"""Loaded by pytest for every test under the repository root: the notebooks
(nbval) as well as tests/. The kernels nbval starts inherit this
environment, so it is set here, before any kernel starts."""
import gc
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


def runs_tests(config):
    """False in pytest-xdist's controller, which hands the tests to its
    workers and runs none: it need not import torch to ask wanted()."""
    return bool(hasattr(config, "workerinput")
                or not getattr(config.option, "numprocesses", None))


def pytest_configure(config):
    if not kernel_server.allowed():
        return
    if not hasattr(config, "workerinput") and kernel_server.notebooks_asked(
            config.args, config.invocation_params.dir):
        # the controller (or pytest alone): one server for every worker
        # and every kernel; pytest-xdist's workers (as -n sets them) are
        # forked from it too, once it has imported torch
        kernel_server.SERVER.start()
        if getattr(config.option, "tx", None):
            config.option.tx = kernel_server.worker_specs(config.option.tx)
    if runs_tests(config) and kernel_server.wanted():
        from nbval.kernel import NbvalKernelspecManager

        kernel_server.use_stand_in(NbvalKernelspecManager)
    config.add_cleanup(kernel_server.SERVER.stop)  # the one it started


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if type(item).__name__ == "IPyNbCell" and kernel_server.wanted():
        kernel_server.SERVER.ready()


# pytest-xdist (--dist loadfile) hands each worker a whole file at a time;
# with --no-loadscope-reorder (tools/dev.py), in collection order rather
# than most tests first. The longest files go first, so that the last file
# a worker starts is a short one and no core waits at the end for another.
# Seconds, as measured alone on a 2-core machine; unlisted files: short.
LONGEST_FIRST = {
    "tests/test_site.py": 90, "tests/test_i18n.py": 60,
    "book/06_apply.ipynb": 14, "book/10_performance.ipynb": 14,
    "book/08_checkpoints.ipynb": 12, "book/05_hooks.ipynb": 11,
    "tests/test_gpu_check.py": 11, "book/09_capstone.ipynb": 10,
    "tests/test_properties.py": 10, "book/02_traversal.ipynb": 9,
    "book/03_call_and_layers.ipynb": 7, "book/07_state_dict.ipynb": 6,
    "book/04_containers.ipynb": 5, "book/01_registration.ipynb": 5,
}


def pytest_collection_modifyitems(session, config, items):
    root = Path(__file__).parent

    def seconds(item):
        path = Path(str(item.path)).relative_to(root).as_posix()
        return LONGEST_FIRST.get(path, 0)

    items.sort(key=seconds, reverse=True)  # stable: in-file order is kept


def pytest_collection_finish(session):
    """Everything alive once the tests are collected (torch, mininn, every
    test module and item: some 300,000 objects) stays alive to the end.
    Frozen, it is left out of the collector's full passes, which would
    otherwise walk all of it some ten times per worker for the few
    thousand objects each test leaves behind."""
    if runs_tests(session.config):
        gc.collect()
        gc.freeze()
