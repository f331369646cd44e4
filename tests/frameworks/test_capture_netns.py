"""`agent.capture: netns` (docs/capture.md) with agents whose HTTP clients ignore the proxy
variables: a Node 20 agent on the global `fetch` alone (node/fetch_agent.mjs: no
dispatcher, no NODE_USE_ENV_PROXY) and a Python agent on `httpx.Client(trust_env=False)`
(agents/httpx_no_env_agent.py). Each calls a search tool over plain HTTP and an
OpenAI-compatible LLM over HTTPS (the test CA, which only flakestorm trusts upstream), on
`localhost` as their users configure them, in a pool of 2 instances.

Checked: under `capture: netns` their calls cross flakestorm and get the run's faults (an
HTTP tool error, an HTTPS LLM 429), each cell has the verdict the agent deserves, and no
exchange is outside a case; the same contract under `capture: proxy` is NOT TESTED and says
no request crossed the proxy; a raw-socket HTTP/1.1 client is captured too; an agent that
opens hundreds of connections meets `proxy.max_connections`, and the run ends.

These need a machine that can make network namespaces (`unshare`, `ip`, `nft`): without
one they fail with the reason, unless FLAKESTORM_SKIP_NETNS=1 says to skip them.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from _frameworks import (AGENTS, SORRY, Stack, ToolAPI, _SeqOrigin, _ToolHandler, assert_cells, cases, exchanges,
                         status)
from _frameworks import runner_env
from flakestorm_harness import TEST_CA, binary

NODE_DIR = Path(__file__).resolve().parent / "node"
PROMPTS = ["What was ACME's Q3 revenue?", "What was ACME's Q2 revenue?"]

CONTRACT = """\
contract:
  name: Captured research agent
  invariants:
    - {id: cites-source, type: regex, pattern: "(?i)according to", severity: critical, when: no_chaos}
    - {id: admits-outage, type: contains_any, values: [unavailable, sorry], severity: high, when: tool_faults_active}
    - {id: searches, type: tool_called, tool: web_search}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{tool: web_search, mode: error, error_code: 503}]
    - name: llm-429
      llm_faults: [{mode: rate_limit, retry_after_s: 0.1}]
"""


def _netns_or_skip():
    """Fails with the reason when this machine cannot make the agent's namespace."""
    missing = [t for t in ("unshare", "ip", "nft") if not (shutil.which(t) or Path("/usr/sbin", t).exists())]
    probe = None if missing else subprocess.run(
        ["unshare", "--net", "true"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--net", "true"],
        capture_output=True, text=True)
    why = (f"missing {missing}" if missing else
           None if probe.returncode == 0 else f"unshare refused: {probe.stderr.strip()}")
    if why is None:
        return
    if os.environ.get("FLAKESTORM_SKIP_NETNS") == "1":
        pytest.skip(f"network namespaces unavailable ({why}); FLAKESTORM_SKIP_NETNS=1")
    pytest.fail(f"agent.capture: netns needs network namespaces here: {why} "
                "(set FLAKESTORM_SKIP_NETNS=1 to skip on purpose)", pytrace=False)


class PlainToolAPI(ToolAPI):
    """The search API over plain HTTP."""

    def __init__(self):
        _SeqOrigin.__init__(self, False, _ToolHandler)


class CapturedStack(Stack):
    """A stack whose tool speaks plain HTTP, its agent one of this file's, `capture` set."""

    def __init__(self, tmp: Path, agent: str, capture: str, pool: int = 2, proxy_extra: str = ""):
        super().__init__(tmp, pool=pool)
        self.tool.close()
        self.tool = PlainToolAPI()
        self.kind, self.capture, self.proxy_extra = agent, capture, proxy_extra

    def agent_command(self, prefix: str = "") -> str:
        if self.kind == "node":
            return f"{prefix}cd {shlex.quote(str(NODE_DIR))} && exec node fetch_agent.mjs {self.agent_port}"
        agent = AGENTS / "httpx_no_env_agent.py"
        return f"{prefix}exec {shlex.quote(sys.executable)} {shlex.quote(str(agent))} {self.agent_port}"

    def agent_env(self, **extra: str) -> dict[str, str]:
        env = super().agent_env(**extra)
        # flakestorm's CA (created by the run) and, for a run where the agent goes around
        # flakestorm, the origins' own.
        env["AGENT_CA_BUNDLE"] = f"{self.tmp / 'certs' / 'ca.pem'}{os.pathsep}{TEST_CA}"
        return env

    def config(self, contract: str, golden_prompts: list[str], **kw) -> str:
        text = super().config(contract, golden_prompts, **kw)
        text = text.replace("agent:\n", f"agent:\n  capture: {self.capture}\n", 1)
        return text.replace("proxy:\n", f"proxy:\n{self.proxy_extra}", 1)


def _run(tmp: Path, agent: str, capture: str, contract: str = CONTRACT, prompts=PROMPTS, env=None, **kw):
    if agent == "node" and shutil.which("node") is None:
        pytest.fail("node is needed", pytrace=False)
    stack = CapturedStack(tmp, agent, capture, **kw)
    try:
        return stack, stack.run_contract(stack.config(contract, prompts, **(env or {})))
    finally:
        stack.close()


@pytest.fixture(scope="module", params=["python", "node"])
def netns_run(request, tmp_path_factory):
    _netns_or_skip()
    return _run(tmp_path_factory.mktemp(f"netns-{request.param}"), request.param, "netns")


@pytest.fixture(scope="module", params=["python", "node"])
def proxy_run(request, tmp_path_factory):
    return _run(tmp_path_factory.mktemp(f"proxy-{request.param}"), request.param, "proxy")


def test_every_call_is_captured_and_the_verdict_is_tested(netns_run):
    stack, run = netns_run
    want = {
        ("cites-source", "no-chaos"): "pass",
        ("admits-outage", "search-down"): "pass",
        ("searches", "no-chaos"): "pass",
        ("searches", "search-down"): "pass",
        ("searches", "llm-429"): "fail",  # the model never answered: the agent has no retry
    }
    r = assert_cells(run, want)
    assert r["verdict"] in ("pass", "fail") and run.code in (0, 1), run.why()
    for clean in cases(r, "no-chaos"):
        assert clean["answer"].startswith("According to web_search"), run.why()
        # Two LLM turns (HTTPS, by name) and one tool call (plain HTTP), answered by the origins.
        assert [status(e) for e in exchanges(clean, "llm")] == [200, 200], run.why()
        assert [status(e) for e in exchanges(clean, "tool")] == [200], run.why()
        assert all(e["request"]["url"].startswith("https://localhost:") for e in exchanges(clean, "llm")), clean
    for down in cases(r, "search-down"):
        assert down["answer"] == SORRY, run.why()
        [tool] = exchanges(down, "tool")
        assert tool["fault"]["applied"] and status(tool) == 503, tool
    for limited in cases(r, "llm-429"):
        [llm] = exchanges(limited, "llm")
        assert llm["fault"]["applied"] and status(llm) == 429, llm
        assert limited["answer"] is None, limited
    # Every exchange was some case's, on both instances.
    for cov in r["coverage"]:
        assert cov["outside_cases"] == 0 and cov["exchanges"] > 0, cov
    # The origins saw only what flakestorm forwarded: one tool call per unfaulted case.
    assert stack.tool.count() == len(cases(r, "no-chaos")), stack.tool.count()


def test_the_same_agent_in_proxy_mode_is_not_tested(proxy_run):
    stack, run = proxy_run
    r = run.report
    assert r is not None, run.why()
    assert (run.code, r["verdict"]) == (2, "not_tested"), run.why()
    said = run.stdout + run.stderr
    assert "proxy" in said and "not tested" in said.lower(), said
    for cov in r["coverage"]:
        assert cov["exchanges"] == 0, cov
        assert cov["not_tested"] or cov["scenario"] == "no-chaos", cov
    # It names the way out for a client that ignores proxy variables.
    assert "agent.capture: netns" in said, said


TOOL_CONTRACT = """\
contract:
  name: Captured research agent, tool down
  invariants:
    - {id: admits-outage, type: contains_any, values: [unavailable, sorry], severity: high, when: tool_faults_active}
    - {id: searches, type: tool_called, tool: web_search}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{tool: web_search, mode: error, error_code: 503}]
"""


def test_a_raw_socket_http_client_is_captured(tmp_path):
    """The tool called with HTTP/1.1 written on a plain socket: no proxy support at all,
    and its calls are still the case's exchanges, faulted."""
    _netns_or_skip()
    stack, run = _run(tmp_path, "python", "netns", TOOL_CONTRACT, env={"RAW_TOOL": "1"})
    r = assert_cells(run, {("admits-outage", "search-down"): "pass", ("searches", "no-chaos"): "pass",
                           ("searches", "search-down"): "pass"})
    for clean in cases(r, "no-chaos"):
        [tool] = exchanges(clean, "tool")
        assert status(tool) == 200 and tool["request"]["url"].startswith("http://localhost:"), tool
    for down in cases(r, "search-down"):
        [tool] = exchanges(down, "tool")
        assert tool["fault"]["applied"] and status(tool) == 503, tool
        assert down["answer"] == SORRY, down
    assert (run.code, r["verdict"]) == (0, "pass"), run.why()


class _Echo(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(self.rfile.readline())


def test_other_tcp_is_relayed_untouched_and_journaled_with_its_bytes(tmp_path):
    """A line protocol (neither HTTP nor TLS) to a server on the host's loopback: relayed
    as it is (the agent reads its echo and answers as usual), and each case's timeline has
    the connection as a `tcp` exchange with its bytes each way."""
    _netns_or_skip()
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    try:
        stack, run = _run(tmp_path, "python", "netns", TOOL_CONTRACT, env={"TCP_ECHO": address})
    finally:
        server.shutdown()
        server.server_close()
    r = assert_cells(run, {("searches", "no-chaos"): "pass", ("searches", "search-down"): "pass"})
    for case in r["cases"]:
        tcp = [e for e in case["exchanges"] or [] if e["route"] == "tcp"]
        assert len(tcp) == 1, case
        [e] = tcp
        assert e["request"]["url"] == f"tcp://{address}/" and e["request"]["method"] == "TCP", e
        assert e["tcp"] == {"sent": 5, "received": 5}, e
        assert e["target"]["kind"] == "other", e
    assert (run.code, r["verdict"]) == (0, "pass"), run.why()


def test_an_agent_flooding_connections_meets_the_cap_and_the_run_ends(tmp_path):
    """Each case first opens 150 connections and holds them, with proxy.max_connections
    at 40: the proxy refuses what is over the cap and says so, the agent's own calls meet
    the same cap, and the run ends with a verdict (no hang)."""
    _netns_or_skip()
    stack, run = _run(tmp_path, "python", "netns", TOOL_CONTRACT, prompts=PROMPTS[:1], env={"FLOOD": "150"},
                      proxy_extra="  max_connections: 40\n")
    r = run.report
    assert r is not None, run.why()
    assert run.code in (0, 1, 2), run.why()
    assert "proxy.max_connections" in run.stderr, run.why()
    # Connections over the cap never reached the tool: it saw at most the cap's worth.
    assert stack.tool.count() <= 40, stack.tool.count()
    # What the run says when nothing readable crossed at all: the cap, not a missing proxy
    # setting. (Which calls the cap lets through depends on timing: some may cross.)
    if all(cov["exchanges"] == 0 for cov in r["coverage"]):
        assert "agent.capture: netns" in run.stdout and "proxy.max_connections" in run.stdout, run.why()


def test_doctor_names_the_calls_that_bypass_the_proxy(tmp_path):
    """`flakestorm doctor` on the httpx agent's config: netns is available, and both its
    calls (the LLM over HTTPS, the tool over HTTP) are named as going around HTTPS_PROXY."""
    _netns_or_skip()
    stack = CapturedStack(tmp_path, "python", "proxy", pool=0)
    try:
        path = tmp_path / "flakestorm.yaml"
        path.write_text(stack.config(CONTRACT, PROMPTS[:1]))
        p = subprocess.run([str(binary()), "doctor", "-c", str(path)], cwd=tmp_path, env=runner_env(),
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    finally:
        stack.close()
    out = p.stdout
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "agent.capture: netns is available on this machine" in out, out
    around = next(line for line in out.splitlines() if "around it" in line)
    assert f"https://localhost:{stack.llm.port}" in around and f"http://localhost:{stack.tool.port}" in around, out
    through = next(line for line in out.splitlines() if "through HTTPS_PROXY" in line)
    assert through.rstrip().endswith("none"), out
    assert "capture: netns captures them" in out, out
