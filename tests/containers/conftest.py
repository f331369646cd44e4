"""tests/containers: flakestorm deployed as operators deploy it, in a real container engine
(podman with runc). The session fixture makes the offline base images once (cached) and
builds the images under test from FLAKESTORM_BIN, and another process holds host ports
8080, 8081 and 8790 for the whole suite (`held_ports`): no test may need them. A machine
that cannot run containers skips the suite with a loud message; every other failure
fails."""

from __future__ import annotations

import os
import sys
import time

import pytest

import helpers
from held_ports import PORTS, Holder


def pytest_configure(config):
    config.addinivalue_line("markers", "engine: needs a container engine")


@pytest.fixture(scope="session")
def binary() -> str:
    b = os.environ.get("FLAKESTORM_BIN")
    assert b and os.path.exists(b), "set FLAKESTORM_BIN to a built flakestorm binary"
    return b


@pytest.fixture(scope="session")
def engine(binary):
    why = helpers.usable()
    if why:
        banner = "!" * 78
        msg = f"CONTAINER TESTS SKIPPED: this machine cannot run containers: {why}"
        sys.stderr.write(f"\n{banner}\n{msg}\n{banner}\n")
        pytest.skip(msg)
    start = time.monotonic()
    helpers.ensure_bases(log=lambda m: sys.stderr.write(m + "\n"))
    helpers.build_images(binary)
    helpers.figure("images_ready_s", round(time.monotonic() - start, 1))
    return helpers


@pytest.fixture(scope="session", autouse=True)
def held_ports():
    """8080, 8081 and 8790 held by another process while every test of the suite runs."""
    holder = Holder()
    try:
        taken = holder.taken()
        assert taken == list(PORTS), f"only {taken} of {PORTS} could be held"
        sys.stderr.write(f"\nhost ports {PORTS} held by another process for the suite "
                         f"(by the suite's holder: {holder.ours})\n")
        yield taken
    finally:
        holder.stop()
