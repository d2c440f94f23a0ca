"""What `tools/dev.py setup` leaves in .venv besides requirements.txt."""
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
