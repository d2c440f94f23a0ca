"""Loaded by pytest for the notebooks (nbval) and tests/. The kernels nbval
starts inherit this environment, so it is set here, before any starts."""
import os
from pathlib import Path

# chapter 10's benchmarks: a short workload under test (`dev.py bench`: full)
os.environ.setdefault("MININN_QUICK", "1")
# one notebook per core already: no kernel starts a thread per core
os.environ.setdefault("OMP_NUM_THREADS", "1")

# pytest-xdist (--dist loadfile --no-loadscope-reorder, tools/dev.py) hands
# out whole files in collection order: the longest go first, so no core
# waits at the end. Seconds alone on 2 cores; a new slow file goes here.
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


def pytest_collection_modifyitems(items):
    root = Path(__file__).parent
    items.sort(key=lambda item: LONGEST_FIRST.get(  # stable: in-file order
        item.path.relative_to(root).as_posix(), 0), reverse=True)
