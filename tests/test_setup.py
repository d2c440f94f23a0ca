"""What `tools/dev.py setup` leaves in .venv besides requirements.txt,
which browser tools/dev.py hands the site's tests and the PDFs, and what
conftest.py sets up in the processes that run the tests."""
import gc
import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import dev


def test_packages_removed_after_the_install_stay_removed():
    # each costs seconds in every process of the test command (dev.py)
    left = [name for name in dev.UNWANTED
            if importlib.util.find_spec(name.replace("-", "_"))]
    assert not left, f"installed again: {left} (run `tools/dev.py setup`)"


def test_the_headless_shell_is_chosen_first_and_chromium_otherwise(
        tmp_path, monkeypatch):
    shell, full = tmp_path / "chromium-headless-shell", tmp_path / "chromium"
    monkeypatch.setattr(dev, "BROWSERS", (str(shell), str(full)))
    monkeypatch.delenv("BOOK_CHROMIUM", raising=False)
    assert dev.chromium() == str(shell)  # none installed: what to install
    full.touch()
    assert dev.chromium() == str(full)
    shell.touch()
    assert dev.chromium() == str(shell)
    monkeypatch.setenv("BOOK_CHROMIUM", "/opt/another/chrome")
    assert dev.chromium() == "/opt/another/chrome"


def test_what_the_tests_were_collected_with_is_frozen():
    # conftest.py's pytest_collection_finish: torch, mininn and the test
    # modules are left out of the collector's full passes
    assert gc.get_freeze_count() > 100_000
