"""Fixtures for the HTML report suite.

* `demo_html` – the HTML report `flakestorm demo` writes (the demo's report folder is put
                under a temp dir through TMPDIR, and the page's path read from its output).
* `browser`   – Debian's headless Chromium (/usr/bin/chromium) through Playwright.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "pyharness"))
import flakestorm_harness as harness  # noqa: E402


def flakestorm_bin() -> str:
    path = os.environ.get("FLAKESTORM_BIN")
    if not path:
        pytest.fail("FLAKESTORM_BIN is not set: point it at the built flakestorm binary")
    return path


@pytest.fixture(scope="session")
def demo_html(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("demo")
    env = dict(os.environ, TMPDIR=str(tmp))
    run = subprocess.run([flakestorm_bin(), "demo"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, f"flakestorm demo failed:\n{run.stdout}\n{run.stderr}"
    found = re.findall(r"^\s*(?:report: )?(\S+\.html)\s*$", run.stdout, re.M)
    assert found, f"the demo printed no HTML report path:\n{run.stdout}"
    page = Path(found[0])
    assert page.is_file(), f"{page} (printed by the demo) does not exist"
    assert str(page).startswith(str(tmp)), f"{page} is not under the demo's TMPDIR {tmp}"
    return page


@pytest.fixture(scope="session")
def browser():
    yield from harness.chromium()