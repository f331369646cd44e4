"""pytest set-up for the agent-framework suite: the shared harness (tests/pyharness) is
not below this suite's directory, which is the only one pytest puts on sys.path, so add it
before the tests import `_frameworks` (which imports it). `chaos`: rules put on the
module's `flakestorm serve` (its `fs` fixture) for one test, cleared after it."""

import sys
from pathlib import Path

import pytest

_HARNESS_DIR = str(Path(__file__).resolve().parents[1] / "pyharness")
if _HARNESS_DIR not in sys.path:
    sys.path.insert(0, _HARNESS_DIR)


@pytest.fixture
def chaos(fs):
    def put(**spec) -> None:
        status, resp = fs.control("PUT", "/v1/chaos", spec)
        assert status == 200, f"PUT /v1/chaos {spec} -> {status} {resp!r}"

    yield put
    fs.control("DELETE", "/v1/chaos")
