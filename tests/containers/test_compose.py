"""deploy/compose, end to end under podman-compose: the agent's tool call gets the 503
injected by its sidecar (over HTTPS too, trusting the bundle from the shared volume),
Prometheus scrapes flakestorm_requests_total for the tool, another container calls the
control API by the service's name (control.allowed_hosts), and the `ci` service's exit code
is the compose run's (0 for the passing contract, 1 for the failing one). Also the compose
file against the compose specification's schema.

podman 4.3 (Debian 12) has no `podman wait --condition=healthy`, so podman-compose skips
`depends_on: condition: service_healthy` there, and without systemd podman runs no timed
health checks: the test brings the services up, runs each container's own health check
until it passes, then starts `ci` (docs/deploy.md says the same for such hosts)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from helpers import REPO

COMPOSE = REPO / "deploy" / "compose"
SERVICES = ["flakestorm", "tool", "agent", "prometheus"]


def venv_bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def test_the_compose_file_follows_the_compose_specification():
    p = __import__("subprocess").run(
        [venv_bin("check-jsonschema"), "--builtin-schema", "vendor.compose-spec",
         str(COMPOSE / "compose.yaml")],
        capture_output=True, text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    # And a broken one is refused (the check is real).
    broken = (COMPOSE / "compose.yaml").read_text().replace("    network_mode:", "    network_mod:", 1)
    tmp = REPO / "target" / "containers" / "broken-compose.yaml"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(broken)
    p = __import__("subprocess").run(
        [venv_bin("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(tmp)],
        capture_output=True, text=True,
    )
    assert p.returncode != 0 and "network_mod" in p.stdout + p.stderr, p.stdout


class Project:
    def __init__(self, engine):
        self.engine = engine
        self.name = "fstest" + secrets.token_hex(4)
        self.port: int | None = None  # Prometheus' host port, once up (`up`)
        self.token = secrets.token_hex(16)
        self.volumes: set[str] = set()
        self.env = {
            "FLAKESTORM_IMAGE": engine.IMAGE,
            "AGENT_IMAGE": engine.AGENT,
            "PROMETHEUS_IMAGE": engine.PROMETHEUS,
            # "127.0.0.1::9090": a host port podman picks when it publishes the container
            # (none chosen here and used later, which another process could take meanwhile).
            "PROMETHEUS_PORT": "127.0.0.1:",
            "FLAKESTORM_API_TOKEN": self.token,
        }

    def compose(self, *args, check=True, timeout=300, **env):
        p = self.engine.run(
            [venv_bin("podman-compose"), "-p", self.name, *args],
            cwd=COMPOSE, check=check, timeout=timeout, extra_env={**self.env, **env},
        )
        # Every volume its containers had, the anonymous ones of a container `up`
        # re-creates included, to remove at the end.
        self.volumes.update(self.engine.volumes_of(self.name + "_"))
        return p

    def container(self, service: str) -> str:
        return f"{self.name}_{service}_1"

    def up(self):
        self.compose("up", "-d", "--no-build", *SERVICES)
        published = self.engine.podman("port", self.container("prometheus"), "9090/tcp").stdout
        self.port = int(published.split()[0].rsplit(":", 1)[1])
        for s in ("flakestorm", "tool", "agent"):
            c = self.container(s)
            self.engine.poll(f"{s} is healthy", lambda c=c: self.engine.healthy(c), 90)

    def query(self, promql: str):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=5) as r:
            return json.load(r)["data"]["result"]


@pytest.fixture
def project(engine):
    if not shutil.which(venv_bin("podman-compose")):
        pytest.fail("podman-compose is missing from the test venv (tests/containers/requirements.txt)")
    p = Project(engine)
    yield p
    p.compose("down", "-v", check=False)
    engine.remove_volumes(sorted(p.volumes))


def test_the_sidecar_faults_the_agents_tool_calls_and_ci_sets_the_exit_code(engine, project):
    start = time.monotonic()
    project.up()
    flakestorm = project.container("flakestorm")
    idle = engine.rss_kib(flakestorm)
    script = (Path(__file__).parent / "in_agent.py").read_text()
    p = engine.podman(
        "exec", "-i", project.container("agent"), "python3", "-", project.token, "800",
        input=script, timeout=300,
    )
    seen = json.loads(p.stdout)
    assert seen["answer_before"].startswith("According to the search tool"), seen
    assert seen["put"] == 200, seen
    status, body = seen["bad_ttl"]
    assert status == 400 and body["error"]["errors"][0]["path"] == "ttl", seen
    assert "HTTP 503" in seen["answer_under_fault"], seen
    assert seen["https"] == 503, f"HTTPS through the sidecar with the bundle: {seen['https']}"
    assert seen["answer_after"].startswith("According to"), seen
    assert seen["load_errors"] == 0, seen
    engine.figure("compose_sidecar_idle_rss_kib", idle)
    engine.figure("compose_sidecar_rss_after_800_agent_calls_kib", engine.rss_kib(flakestorm))
    # Prometheus scraped the sidecar: the agent's tool requests, by target.
    got = engine.poll(
        "Prometheus has flakestorm_requests_total for the tool",
        lambda: project.query('flakestorm_requests_total{target="tool"}'), 60, 1,
    )
    classes = {r["metric"]["status_class"] for r in got}
    assert {"2xx", "5xx"} <= classes, got
    assert project.query("flakestorm_chaos_active") is not None
    # Another container of the compose network reaches the control API by the service's
    # name, which control.allowed_hosts lists, with the token from .env.
    call = ("import urllib.request as u,sys; o=u.build_opener(u.ProxyHandler({}));"
            "r=u.Request('http://flakestorm:8081/v1/chaos', headers={'authorization': 'Bearer '+sys.argv[1]});"
            "print(o.open(r, timeout=5).status)")
    p = engine.podman("exec", project.container("prometheus"), "python3", "-c", call, project.token)
    assert p.stdout.strip() == "200", p.stdout + p.stderr
    # The ci service: its exit code is the run's.
    p = project.compose("up", "--no-build", "--exit-code-from", "ci", "ci", check=False, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "overall 100.0/100 (pass mark 70): PASS" in p.stdout, p.stdout[-3000:]
    project.up()
    p = project.compose(
        "up", "--no-build", "--exit-code-from", "ci", "ci", check=False, timeout=300,
        CI_CONFIG="ci-failing.yaml",
    )
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    assert "FAIL" in p.stdout
    engine.figure("compose_e2e_s", round(time.monotonic() - start, 1))
