"""Shared fixtures: the differential suite runs each test body on torch.nn and
on mininn through the `nn` fixture, which hands out one backend at a time."""
import os

import pytest
# the website's fixtures, for the test_site_*.py files (tests/site/)
from site_fixtures import browser, builds, site  # noqa: F401

# tools/mutants.py sets "mininn": a bug planted in mininn cannot fail a test
# body that runs on torch.nn. Unset, each test runs on both.
BACKENDS = os.environ.get("MININN_TEST_BACKENDS", "torch.nn,mininn").split(",")
assert set(BACKENDS) <= {"torch.nn", "mininn"}, BACKENDS


@pytest.fixture(params=BACKENDS)
def nn(request):
    """One backend; a test using it runs once per backend."""
    from support import Backend  # imports torch: not in xdist's controller

    return Backend(request.param)


@pytest.fixture
def both():
    """(torch.nn, mininn), for tests that compare the two directly."""
    from support import Backend

    return Backend("torch.nn"), Backend("mininn")
