"""The image (deploy/Dockerfile's runtime stage, built for real from a prebuilt binary on an
offline Debian base): its metadata, its health check, a read-only non-root container that
keeps its CA across a restart and a re-creation, and the start-up errors an operator meets
(a control API off loopback with no token, a CA whose key does not match)."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest


@pytest.fixture
def names(engine):
    """Unique names for containers and volumes, removed after the test."""
    made = {"containers": [], "volumes": []}
    tag = uuid.uuid4().hex[:8]

    def name(kind: str, base: str) -> str:
        n = f"fs-test-{base}-{tag}"
        made[kind].append(n)
        return n

    yield name
    for c in made["containers"]:
        engine.podman("rm", "-f", "-v", c, check=False)
    for v in made["volumes"]:
        engine.podman("volume", "rm", "-f", v, check=False)


def hardened(engine, name, *args):
    """`podman run -d` as a restricted runtime would: read-only root, no capabilities."""
    return engine.podman(
        "run", "-d", "--name", name, "--read-only", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", *args,
    )


def test_the_runtime_stage_is_non_root_with_volumes_and_a_health_check(engine):
    image = engine.inspect(engine.IMAGE)
    config = image["Config"]
    user = config["User"]
    assert user == "65532:65532", user
    assert set(config["Volumes"]) == {
        "/var/lib/flakestorm/ca", "/var/lib/flakestorm/data", "/var/lib/flakestorm/trust",
    }
    assert config["Entrypoint"] == ["/usr/local/bin/flakestorm"]
    health = image.get("Healthcheck") or config.get("Healthcheck")
    assert health and health["Test"] == ["CMD", "/usr/local/bin/flakestorm", "health", "--ready"]
    engine.figure("image_size_bytes", image["Size"])
    engine.figure("base_size_bytes", engine.inspect(engine.BASE)["Size"])


def test_a_container_is_ready_keeps_its_ca_and_announces_usable_addresses(engine, names):
    c, ca = names("containers", "serve"), names("volumes", "ca")
    hardened(engine, c, "-v", f"{ca}:/var/lib/flakestorm/ca", engine.IMAGE)
    engine.poll("the container's health check passes", lambda: engine.healthy(c), 60)
    out = engine.podman("exec", c, "flakestorm", "health", "--ready").stdout
    assert out.strip() == "http://127.0.0.1:8081/readyz: ready", out
    logs = engine.podman("logs", c).stdout
    assert "flakestorm: proxy listening on 127.0.0.1:8080" in logs, logs
    assert "SSL_CERT_FILE=/var/lib/flakestorm/trust/bundle.pem" in logs, logs
    assert "0.0.0.0" not in logs
    engine.figure("container_idle_rss_kib", engine.rss_kib(c))
    export = ["exec", c, "flakestorm", "ca", "export", "-c", "/etc/flakestorm/flakestorm.yaml"]
    pem = engine.podman(*export).stdout
    assert pem.startswith("-----BEGIN CERTIFICATE-----")
    # The bundle agents trust: the CA, then the system's roots.
    bundle = engine.podman("exec", c, "cat", "/var/lib/flakestorm/trust/bundle.pem").stdout
    assert bundle.startswith(pem.strip()) and bundle.count("BEGIN CERTIFICATE") > 100
    # The key stays private in the volume.
    mode = engine.podman("exec", c, "stat", "-c", "%a %u", "/var/lib/flakestorm/ca/ca.key").stdout
    assert mode.split() == ["600", "65532"], mode
    # A restart (the kubelet's, compose's `restart:`) and a new container on the same
    # volume both keep the CA: clients that trust it keep working.
    engine.podman("restart", c)
    engine.poll("ready again after a restart", lambda: engine.healthy(c), 60)
    assert engine.podman(*export).stdout == pem
    engine.podman("rm", "-f", "-v", c)
    hardened(engine, c, "-v", f"{ca}:/var/lib/flakestorm/ca", engine.IMAGE)
    engine.poll("a new container is ready", lambda: engine.healthy(c), 60)
    assert engine.podman(*export).stdout == pem
    assert "created a new CA" not in engine.podman("logs", c).stdout


def test_start_up_errors_say_what_to_fix(engine, names, tmp_path):
    # A control API off loopback without a token: refused, with the line to fix it.
    c = names("containers", "open")
    p = engine.podman(
        "run", "--name", c, "-e", "FLAKESTORM_CONTROL__LISTEN=0.0.0.0:8081", engine.IMAGE,
        check=False, timeout=60,
    )
    assert p.returncode == 2, p
    assert "control.token: required when control.listen (0.0.0.0:8081)" in p.stderr, p.stderr
    assert 'token: "${FLAKESTORM_API_TOKEN}"' in p.stderr
    # A CA "Secret" whose key is another CA's: a clear start-up error naming both files.
    for d in ("a", "b"):
        subprocess.run(
            [os.environ["FLAKESTORM_BIN"], "ca", "init", "--ca-dir", str(tmp_path / d)],
            check=True, capture_output=True,
        )
    secret = tmp_path / "secret"
    secret.mkdir(mode=0o755)
    (secret / "tls.crt").write_text((tmp_path / "a" / "ca.pem").read_text())
    (secret / "tls.key").write_text((tmp_path / "b" / "ca.key").read_text())
    for f in secret.iterdir():
        f.chmod(0o644)  # readable by the container's user (a Secret's 0440 + fsGroup)
    c = names("containers", "mismatch")
    p = engine.podman(
        "run", "--name", c, "-v", f"{secret}:/etc/flakestorm/ca:ro",
        "-e", "FLAKESTORM_CA__CERT_FILE=/etc/flakestorm/ca/tls.crt",
        "-e", "FLAKESTORM_CA__KEY_FILE=/etc/flakestorm/ca/tls.key",
        engine.IMAGE, check=False, timeout=60,
    )
    assert p.returncode == 1, p
    assert "does not match the certificate /etc/flakestorm/ca/tls.crt" in p.stderr, p.stderr
    assert "listening" not in p.stdout
