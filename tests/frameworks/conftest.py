"""pytest set-up for the agent-framework suite: the shared harness (tests/pyharness) is
not below this suite's directory, which is the only one pytest puts on sys.path, so add it
before the tests import `_frameworks` (which imports it)."""

import sys
from pathlib import Path

_HARNESS_DIR = str(Path(__file__).resolve().parents[1] / "pyharness")
if _HARNESS_DIR not in sys.path:
    sys.path.insert(0, _HARNESS_DIR)
