"""deploy/prometheus and deploy/grafana against a live daemon's /metrics: `promtool check
config`, `check rules`, `test rules` and `check metrics`, and every query of the Grafana
dashboard (panels and annotations) parsed by promtool and naming only series the daemon
exports. Needs no container engine: the daemon runs as a process (FLAKESTORM_BIN)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from helpers import REPO

PROM = REPO / "deploy" / "prometheus"
DASHBOARD = REPO / "deploy" / "grafana" / "flakestorm.json"
TOKEN = "observability-test-token"


def promtool(*args, stdin=None):
    if not shutil.which("promtool"):
        pytest.fail("promtool is missing (Debian's `prometheus` package; scripts/test.sh installs it)")
    return subprocess.run(["promtool", *args], capture_output=True, text=True, input=stdin)


class Tool(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def do_POST(self):  # the agent of the daemon's run
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b'{"result": "an answer"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    """The /metrics text of a daemon that proxied a tool call, faulted one, has rules with a
    ttl, and drove a run (so the run families have series)."""
    tool = ThreadingHTTPServer(("127.0.0.1", 0), Tool)
    threading.Thread(target=tool.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{tool.server_address[1]}"
    d = tmp_path_factory.mktemp("serve")
    (d / "f.yaml").write_text(
        "proxy: {listen: '127.0.0.1:0'}\ncontrol: {listen: '127.0.0.1:0', token: " + TOKEN + "}\n"
        f"tools: [{{name: search, match_url: ['{url}/*']}}]\n"
    )
    p = subprocess.Popen([os.environ["FLAKESTORM_BIN"], "serve", "-c", "f.yaml"], cwd=d,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        addrs = {}
        for line in p.stdout:
            m = re.match(r"flakestorm: (proxy|control) listening on (\S+)$", line.strip())
            if m:
                addrs[m[1]] = m[2]
            if line.startswith("flakestorm: point the agent"):
                break
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        proxied = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://{addrs['proxy']}"}))
        proxied.open(f"{url}/search", timeout=5).read()
        rules = json.dumps({"tool_faults": [{"tool": "search", "mode": "error", "error_code": 503}]}).encode()
        req = urllib.request.Request(f"http://{addrs['control']}/v1/chaos?ttl=10m", data=rules, method="PUT",
                                     headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"})
        direct.open(req, timeout=5).read()
        try:
            proxied.open(f"{url}/search", timeout=5)
        except urllib.error.HTTPError as e:
            assert e.code == 503
        config = (f"agent: {{endpoint: '{url}/invoke'}}\ngolden_prompts: [hi]\ncontract:\n  name: c\n"
                  "  invariants: [{id: a, type: output_not_empty}]\n  chaos_matrix: [{name: no-chaos}]\n")
        req = urllib.request.Request(
            f"http://{addrs['control']}/v1/runs", method="POST",
            data=json.dumps({"kind": "contract", "config": config}).encode(),
            headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"})
        run = json.load(direct.open(req, timeout=5))
        get = urllib.request.Request(f"http://{addrs['control']}/v1/runs/{run['id']}",
                                     headers={"authorization": f"Bearer {TOKEN}"})
        deadline = time.monotonic() + 60
        while json.load(direct.open(get, timeout=5))["status"] in ("queued", "running"):
            assert time.monotonic() < deadline, "the run did not end"
            time.sleep(0.2)
        served = direct.open(f"http://{addrs['control']}/metrics", timeout=5)
        assert served.headers["content-type"].startswith("text/plain; version=0.0.4"), served.headers
        text = served.read().decode()
        # Prometheus asks for OpenMetrics first, and gets it: the same samples.
        om = urllib.request.Request(f"http://{addrs['control']}/metrics", headers={
            "accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"})
        om = direct.open(om, timeout=5)
        assert om.headers["content-type"].startswith("application/openmetrics-text"), om.headers
        om = om.read().decode()
        assert om.endswith("# EOF\n") and "# TYPE flakestorm_runs counter" in om, om[-200:]
        samples = lambda t: sorted(l.split(" ")[0] for l in t.splitlines() if not l.startswith("#"))
        assert samples(om) == samples(text)
        yield text
    finally:
        p.terminate()
        p.wait(timeout=30)
        tool.shutdown()


def exported(text: str) -> set[str]:
    """Every series name the metrics text exports (families with their suffixes), in the
    Prometheus text format (a counter named by its `_total` sample) or as OpenMetrics."""
    names = set()
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        name, kind = m[1], m[2]
        family = name.removesuffix("_total") if kind == "counter" else name
        names |= {
            "counter": {f"{family}_total", f"{family}_created"},
            "histogram": {f"{name}_bucket", f"{name}_sum", f"{name}_count"},
        }.get(kind, {name})
    return names


def test_promtool_checks_the_config_rules_and_alerts():
    p = promtool("check", "config", str(PROM / "prometheus.yml"))
    assert p.returncode == 0, p.stdout + p.stderr
    # Debian's Prometheus is built without Kubernetes discovery: the same file with its
    # discovery as a static target (every relabel rule still checked).
    k8s = yaml.safe_load((PROM / "kubernetes.yml").read_text())
    for job in k8s["scrape_configs"]:
        job.pop("kubernetes_sd_configs")
        job["static_configs"] = [{"targets": ["10.0.0.1:8081"]}]
    tmp = REPO / "target" / "containers" / "kubernetes-static.yml"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(yaml.safe_dump(k8s))
    shutil.copy(PROM / "rules.yml", tmp.parent / "rules.yml")
    p = promtool("check", "config", str(tmp))
    assert p.returncode == 0, p.stdout + p.stderr
    p = promtool("check", "rules", str(PROM / "rules.yml"))
    assert p.returncode == 0 and "4 rules found" in p.stdout, p.stdout + p.stderr
    p = subprocess.run(["promtool", "test", "rules", "rules_test.yml"], cwd=PROM, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_promtool_checks_the_metrics(metrics):
    assert "flakestorm_chaos_active 1" in metrics
    assert 'flakestorm_faults_injected_total{target="tool",mode="error"} 1' in metrics
    assert 'flakestorm_cases_total{' in metrics, "a run's counters are there"
    # Checked as served: promtool 2.42 reads the Prometheus text format, which /metrics
    # serves to a reader that does not ask for OpenMetrics.
    p = promtool("check", "metrics", stdin=metrics)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), p.stdout + p.stderr


def dashboard_queries() -> list[str]:
    d = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in d["panels"] for t in panel.get("targets", [])]
    exprs += [a["expr"] for a in d["annotations"]["list"]]
    return exprs


def registered() -> dict[str, str]:
    """Families the daemon registers (src/telemetry), with their kind: those that have no
    series yet (no proxy error, no refused connection so far) are not in /metrics."""
    out = {}
    for f in (REPO / "src" / "telemetry").glob("*.rs"):
        text = f.read_text()
        for m in re.finditer(r'registry\.register\(\s*"([a-z_]+)",\s*"[^"]*",\s*(\w+)\.clone\(\)', text):
            decl = re.search(rf"let {m[2]} = ([^;]+);", text)
            kind = "histogram" if "Histogram" in decl[1] else "gauge" if "Gauge" in decl[1] else "counter"
            out["flakestorm_" + m[1]] = kind
    return out


def known(names: set[str]) -> set[str]:
    fams = "\n".join(f"# TYPE {n} {k}" for n, k in registered().items())
    return names | exported(fams)


def test_every_dashboard_and_alert_query_names_exported_series(metrics):
    names = exported(metrics)
    assert names <= known(names), "every family /metrics shows is registered in src/telemetry"
    assert len(registered()) >= 18, registered()
    names = known(names)
    queries = dashboard_queries()
    assert len(queries) >= 15
    rules = yaml.safe_load((PROM / "rules.yml").read_text())
    alerts = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    for q in queries + alerts:
        used = set(re.findall(r"\bflakestorm_[a-z_]+", q))
        assert used or q.startswith('up{job="flakestorm"}'), q
        missing = used - names
        assert not missing, f"{q} names {missing}, which /metrics does not export"
    # Each query parses as PromQL: promtool checks them as recording rules.
    groups = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:q{i}", "expr": q} for i, q in enumerate(queries)]}]}
    tmp = REPO / "target" / "containers" / "dashboard-queries.yml"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(yaml.safe_dump(groups))
    p = promtool("check", "rules", str(tmp))
    assert p.returncode == 0, p.stdout + p.stderr
    # The dashboard shades chaos windows and marks runs.
    titles = {a["name"] for a in json.loads(DASHBOARD.read_text())["annotations"]["list"]}
    assert titles == {"Chaos active", "Run started", "Run ended"}
