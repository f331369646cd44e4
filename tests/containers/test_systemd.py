"""deploy/systemd/flakestorm.service: `systemd-analyze verify` finds nothing to say (an
unknown or misspelt key is only a warning there, so any output fails the test), the
hardening the unit promises is in it, and the config it names loads. Needs no engine."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import REPO

UNIT = REPO / "deploy" / "systemd" / "flakestorm.service"


def verify(text: str, tmp: Path) -> subprocess.CompletedProcess:
    if not shutil.which("systemd-analyze"):
        pytest.fail("systemd-analyze is missing (Debian's systemd package)")
    unit = tmp / "flakestorm.service"
    # The binary under test stands in for /usr/local/bin/flakestorm (verify checks it runs).
    unit.write_text(text.replace("/usr/local/bin/flakestorm", os.environ["FLAKESTORM_BIN"]))
    return subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)


def test_the_unit_verifies_cleanly_and_is_hardened(tmp_path):
    text = UNIT.read_text()
    p = verify(text, tmp_path)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), p.stdout + p.stderr
    # A misspelt key is reported (so the clean result above means something).
    p = verify(text.replace("ProtectSystem=strict", "ProtectSystm=strict"), tmp_path)
    assert "Unknown key" in p.stderr, p.stderr
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read_string(text)
    service = unit["Service"]
    for key, want in {
        "DynamicUser": "yes", "ProtectSystem": "strict", "NoNewPrivileges": "yes",
        "StateDirectory": "flakestorm", "ProtectHome": "yes", "PrivateTmp": "yes",
        "CapabilityBoundingSet": "", "KillSignal": "SIGTERM",
    }.items():
        assert service.get(key) == want, key


def test_the_deploy_configs_load():
    bin_ = os.environ["FLAKESTORM_BIN"]
    env = {**os.environ, "FLAKESTORM_API_TOKEN": "t" * 32, "RUST_LOG": "warn"}
    for cfg in [
        "deploy/systemd/flakestorm.yaml", "deploy/image/flakestorm.yaml",
        "deploy/compose/flakestorm.yaml", "deploy/compose/ci.yaml",
        "deploy/compose/ci-failing.yaml", "deploy/kubernetes/base/flakestorm.yaml",
        "deploy/kubernetes/base/ci.yaml",
    ]:
        p = subprocess.run([bin_, "validate", "-c", cfg], cwd=REPO, capture_output=True, text=True, env=env)
        assert p.returncode == 0 and "warning" not in p.stderr, f"{cfg}: {p.stdout}{p.stderr}"
