"""Runs read back from the store (docs/web.md): a run that ended, opened after the daemon
restarted on the same store (its events and the journal's calls gone), still shows each
case's wire timeline, drawn from the calls the store kept (no query string, no header);
a run merged from shards shows how many in the runs list and on its page."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

import _frameworks
import flakestorm_harness as harness
from conftest import login

SECRET = "sk-live-query-secret"


class _Tool(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = b'{"hits": ["ACME revenue rose"]}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Agent(BaseHTTPRequestHandler):
    """Searches the tool through the proxy (a query carrying a key), then answers."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        prompt = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}").get("input", "")
        via = urllib.request.build_opener(urllib.request.ProxyHandler({"http": self.server.proxy}))
        with via.open(f"{self.server.tool}/search?key={SECRET}&q=acme", timeout=10) as r:
            r.read()
        body = json.dumps({"result": f"According to the search, {prompt}"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _serve(handler, **attrs):
    s = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    s.daemon_threads = True
    for k, v in attrs.items():
        setattr(s, k, v)
    threading.Thread(target=s.serve_forever, args=(0.05,), daemon=True).start()
    return s


def _start(tmp):
    fs = harness.Flakestorm.start(tmp, _frameworks.runner_env())
    fs.link = fs.wait_line(r"^flakestorm: web view at (\S+) ").group(1)
    return fs


def _ended(fs, run_id: str) -> dict:
    for _ in range(600):
        r = json.loads(fs.control("GET", f"/v1/runs/{run_id}")[1])
        if r["status"] not in ("queued", "running"):
            return r
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end: {r}")


@pytest.fixture(scope="module")
def restarted(tmp_path_factory):
    """A contract run of the searching agent on a daemon, then that daemon stopped and
    another started on the same store: (the new daemon, the run's id, its report)."""
    tmp = tmp_path_factory.mktemp("stored")
    tool = _serve(_Tool)
    fs = _start(tmp)
    agent = _serve(_Agent, proxy=fs.proxy_url, tool=f"http://127.0.0.1:{tool.server_address[1]}")
    config = (
        "agent:\n"
        f"  endpoint: \"http://127.0.0.1:{agent.server_address[1]}/invoke\"\n"
        "advanced: {seed: 1, concurrency: 1, settle_ms: 0}\n"
        "golden_prompts: [\"How did ACME do?\", \"And in Q3?\"]\n"
        "contract:\n"
        "  name: Stored\n"
        "  invariants:\n"
        "    - {id: cites, type: regex, pattern: \"(?i)according to\", severity: high}\n"
    )
    try:
        status, body = fs.control("POST", "/v1/runs", {"kind": "contract", "config": config})
        assert status == 202, body
        run = _ended(fs, json.loads(body)["id"])
        assert run["status"] == "passed", run
        report = json.loads(fs.control("GET", f"/v1/runs/{run['id']}/report?format=json")[1])
    finally:
        fs.stop()
    again = _start(tmp)
    yield again, run["id"], report
    again.stop()
    for s in (agent, tool):
        s.shutdown()
        s.server_close()


def test_an_ended_run_shows_its_case_timelines_after_a_restart(browser, restarted):
    fs, run_id, _ = restarted
    status, body = fs.control("GET", f"/ui/api/runs/{run_id}/cases")
    assert status == 200, body
    cases = json.loads(body)["cases"]
    # Two prompts under the baseline: every case with its timeline, none with the key.
    assert len(cases) == 2, cases
    assert all(c["timeline"] and "&#x2f;search</title>" in c["timeline"] for c in cases), json.dumps(cases)[:3000]
    assert SECRET not in body.decode()
    page = login(browser, fs.link)
    page.goto(page.url.split("#")[0] + f"#/run/{run_id}")
    expect(page.locator("#cases li .tlbox svg")).to_have_count(2)
    # Newest first, as the API gives them.
    expect(page.locator("#cases li").first).to_contain_text(cases[0]["input"])
    assert SECRET not in page.content()
    page.context.close()


def test_a_merged_run_shows_its_shards(browser, restarted):
    fs, _, report = restarted
    report["run"]["merged_shards"] = 3
    status, body = fs.control("POST", "/v1/runs/import", report)
    assert status == 201, body[:300]
    merged = json.loads(body)["id"]
    record = json.loads(fs.control("GET", f"/v1/runs/{merged}")[1])
    assert record["shards"] == 3, record
    page = login(browser, fs.link)
    expect(page.locator(f"tr[data-run='{merged}']")).to_contain_text("3 merged")
    page.goto(page.url.split("#")[0] + f"#/run/{merged}")
    expect(page.locator("#run-shards")).to_contain_text("merged from 3 shards")
    page.context.close()

