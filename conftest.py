"""Loaded by pytest for everything under the repository root: the notebooks
(nbval) as well as tests/. The kernels nbval starts inherit this
environment, so it is set here, before any kernel starts."""
import os
from pathlib import Path

# Chapter 10's benchmarks run a short workload under test; `tools/dev.py
# bench` and `outputs` run the full one. Only outputs tagged
# nbval-ignore-output depend on it.
os.environ.setdefault("MININN_QUICK", "1")
# pytest-xdist already runs one notebook per core; kernels that each start
# a thread per core would fight over them. Stored outputs must not depend
# on the thread count anyway (see CONTRIBUTING.md).
os.environ.setdefault("OMP_NUM_THREADS", "1")

# pytest-xdist (--dist loadfile) hands each worker a whole file at a time;
# with --no-loadscope-reorder (tools/dev.py), in collection order rather
# than most tests first. The longest files go first, so that the last file
# a worker starts is a short one and no core waits at the end for another.
# Seconds, as measured alone on a 2-core machine; unlisted files: short.
# A new slow file goes here.
LONGEST_FIRST = {
    "tests/test_site_pages.py": 230,  # builds both editions first
    "tests/test_workbook.py": 18,  # runs chapter 2's checks ~40 times
    "book/06_apply.ipynb": 14, "book/10_performance.ipynb": 14,
    "book/08_checkpoints.ipynb": 12, "book/05_hooks.ipynb": 11,
    "book/09_capstone.ipynb": 10, "tests/test_properties.py": 10,
    "book/02_traversal.ipynb": 9, "book/03_call_and_layers.ipynb": 7,
    "tests/test_gpu_run.py": 6, "book/07_state_dict.ipynb": 6,
    "book/04_containers.ipynb": 5, "book/01_registration.ipynb": 5,
}


def pytest_collection_modifyitems(session, config, items):
    root = Path(__file__).parent

    def seconds(item):
        path = Path(str(item.path)).relative_to(root).as_posix()
        return LONGEST_FIRST.get(path, 0)

    items.sort(key=seconds, reverse=True)  # stable: in-file order is kept
