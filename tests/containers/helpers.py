"""Shared by tests/containers: running podman (with containers.conf), the offline base
images (mmdebstrap + podman import, cached), the images under test (the Dockerfile's
runtime stage from a prebuilt binary, the example agent, Prometheus from Debian), polling
with deadlines. Nothing here sleeps to wait: it polls a condition
until a deadline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("FLAKESTORM_CONTAINER_CACHE", "/var/cache/flakestorm-tests"))
BASE = "localhost/flakestorm-test/base:bookworm"
TOOLS = "localhost/flakestorm-test/tools:bookworm"
PROMETHEUS = "localhost/flakestorm-test/prometheus:bookworm"
IMAGE = "localhost/flakestorm:test"
AGENT = "localhost/flakestorm-example-agent:test"
MIRROR = "http://deb.debian.org/debian"
# The offline bases: a slim Debian (glibc, libgcc, CA roots: what distroless `cc` holds),
# and one with Python 3 and Prometheus for the example agent, its tool and Prometheus.
BASES = {
    BASE: ("base.tar", ["ca-certificates"]),
    TOOLS: ("tools.tar", ["ca-certificates", "python3", "prometheus"]),
}


def env() -> dict:
    e = dict(os.environ)
    e.setdefault("CONTAINERS_CONF", str(HERE / "containers.conf"))
    return e


def run(args, *, check=True, timeout=600, input=None, cwd=None, extra_env=None):
    e = env()
    e.update(extra_env or {})
    p = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, input=input, cwd=cwd, env=e
    )
    if check and p.returncode != 0:
        raise AssertionError(f"{args} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def podman(*args, **kw):
    return run(["podman", *args], **kw)


def poll(what: str, check, deadline_s: float = 60, every_s: float = 0.25):
    """Calls `check()` until it returns a truthy value, or fails after the deadline."""
    end = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < end:
        try:
            got = check()
            if got:
                return got
        except Exception as e:  # noqa: BLE001 - reported if the deadline passes
            last = e
        time.sleep(every_s)
    raise AssertionError(f"timed out after {deadline_s}s: {what} (last error: {last!r})")


def healthy(container: str) -> bool:
    """Runs the container's own health check once (podman's timers need systemd, which
    these machines lack, so the tests run it: the same command `HEALTHCHECK` names)."""
    return podman("healthcheck", "run", container, check=False, timeout=60).returncode == 0


def usable() -> str | None:
    """Why containers cannot run here, or None."""
    if not shutil.which("podman"):
        return "podman is not installed (scripts/test.sh installs it with apt)"
    p = podman("info", check=False, timeout=120)
    if p.returncode != 0:
        return f"`podman info` failed: {p.stderr.strip()[:500]}"
    return None


def ensure_bases(log=print):
    for image, (tar, packages) in BASES.items():
        if podman("image", "exists", image, check=False).returncode == 0:
            continue
        CACHE.mkdir(parents=True, exist_ok=True)
        path = CACHE / tar
        if not path.exists():
            start = time.monotonic()
            tmp = path.with_suffix(".tmp")
            run(
                [
                    "mmdebstrap", "--quiet", "--format=tar", "--variant=essential",
                    "--include=" + ",".join(packages),
                    "--dpkgopt=path-exclude=/usr/share/doc/*",
                    "--dpkgopt=path-exclude=/usr/share/man/*",
                    "--dpkgopt=path-exclude=/usr/share/locale/*",
                    "bookworm", str(tmp), MIRROR,
                ],
                timeout=1200,
            )
            tmp.rename(path)
            log(f"mmdebstrap {image}: {time.monotonic() - start:.0f}s")
        podman("import", "--quiet", str(path), image)


def image_id(name: str) -> str | None:
    p = podman("image", "inspect", "--format", "{{.Id}}", name, check=False)
    return p.stdout.strip() if p.returncode == 0 else None


def build_images(binary: str):
    """The Dockerfile's runtime stage with `binary`, the example agent, and Prometheus.
    The images they replace (a new binary each build) are removed with their untagged
    stages, so repeated runs do not fill the disk; one still in use is left."""
    before = {name: image_id(name) for name in (IMAGE, AGENT, PROMETHEUS)}
    existing = set(untagged())
    build(binary)
    for name, old in before.items():
        if old and image_id(name) != old:
            podman("rmi", old, check=False)
    # A stage the images do not derive from (the prebuilt binary's) is left untagged;
    # the layers the new images stand on are refused (they have children) and kept.
    for image in set(untagged()) - existing:
        podman("rmi", image, check=False)


def untagged() -> list[str]:
    return podman("images", "-a", "-q", "--no-trunc", "--filter", "dangling=true").stdout.split()


def build(binary: str):
    docker = REPO / "target" / "docker"
    docker.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, docker / "flakestorm")
    common = ["build", "--format", "docker", "--quiet"]
    podman(
        *common, "-f", "deploy/Dockerfile",
        "--build-arg", "BINARY_FROM=prebuilt",
        "--build-arg", "PREBUILT=target/docker/flakestorm",
        "--build-arg", f"RUNTIME_BASE={BASE}",
        "-t", IMAGE, ".", cwd=REPO,
    )
    podman(*common, "--build-arg", f"PYTHON_IMAGE={TOOLS}", "-t", AGENT, "deploy/compose/agent", cwd=REPO)
    podman(
        *common, "--build-arg", f"TOOLS_IMAGE={TOOLS}", "-t", PROMETHEUS,
        "-f", str(HERE / "prometheus.Dockerfile"), str(HERE),
    )


def inspect(name: str) -> dict:
    return json.loads(podman("inspect", name).stdout)[0]


def volumes_of(prefix: str) -> list[str]:
    """The volumes mounted by containers whose name starts with `prefix`, anonymous ones
    (an image's VOLUMEs) included: `compose down -v` and `kube down` leave those."""
    names = podman("ps", "-a", "--format", "{{.Names}}", check=False).stdout.split()
    out = []
    for n in (n for n in names if n.startswith(prefix)):
        for m in inspect(n).get("Mounts", []):
            if m.get("Type") == "volume" and m.get("Name"):
                out.append(m["Name"])
    return out


def remove_volumes(names: list[str]):
    for v in names:
        podman("volume", "rm", "-f", v, check=False)


def rss_kib(container: str) -> int:
    """VmRSS of the container's main process, read from the host's /proc."""
    pid = inspect(container)["State"]["Pid"]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {container}")


def figure(name: str, value):
    """Records a measured figure for docs (target/containers/figures.json) and prints it."""
    out = REPO / "target" / "containers"
    out.mkdir(parents=True, exist_ok=True)
    f = out / "figures.json"
    figures = json.loads(f.read_text()) if f.exists() else {}
    figures[name] = value
    f.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"figure: {name} = {value}", file=sys.stderr)
