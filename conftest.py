"""Loaded by pytest for every test under the repository root: the notebooks
(nbval) as well as tests/. The kernels nbval starts inherit this
environment, so it is set here, before any kernel starts."""
import os

# Chapter 10's benchmarks run a short workload under test; `tools/dev.py
# bench` and `outputs` run the full one. Only outputs tagged
# nbval-ignore-output depend on it.
os.environ.setdefault("MININN_QUICK", "1")
# pytest-xdist already runs one notebook per core; kernels that each start
# a thread per core would fight over them. Stored outputs must not depend
# on the thread count anyway (see CONTRIBUTING.md).
os.environ.setdefault("OMP_NUM_THREADS", "1")
