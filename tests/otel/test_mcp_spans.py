"""An MCP server's calls as spans: the official MCP Python SDK's client and server (the
frameworks suite's agents/mcp_client.py and mcp_server.py, Streamable HTTP over TLS),
routed through a `flakestorm serve` that exports to the gRPC receiver, the server declared
`protocol: mcp`. Each `tools/call` is an `execute_tool` span of the MCP tool it called
(`mcp.method.name`, `gen_ai.tool.name`); the other methods execute no tool; a fault on a
call is a `flakestorm.fault` event on exactly that call's span."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _frameworks import AGENTS, McpServer
from flakestorm_harness import Flakestorm, clean_env
from otlp_receiver import telemetry_config


@pytest.fixture(scope="module")
def mcp_fs(tmp_path_factory, grpc_receiver):
    server = McpServer()
    tools = f'tools:\n  - {{name: crm, match_url: "{server.origin}/*", protocol: mcp}}\n'
    fs = Flakestorm.start(tmp_path_factory.mktemp("otel-mcp"), env=clean_env(),
                          extra_config=tools + telemetry_config(grpc_receiver))
    yield fs, server.url
    fs.stop()
    server.close()


def steps(fs: Flakestorm, url: str) -> list[dict]:
    env = {**clean_env(), "HTTPS_PROXY": fs.proxy_url, "SSL_CERT_FILE": str(fs.ca_file)}
    out = subprocess.run([sys.executable, str(AGENTS / "mcp_client.py"), url], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip(), out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])["steps"]


def mcp_spans(receiver, method: str, count: int):
    return receiver.wait(lambda s: s.attributes.get("mcp.method.name") == method, count)


def test_tools_call_spans_name_the_mcp_method_and_tool(mcp_fs, grpc_receiver):
    fs, url = mcp_fs
    grpc_receiver.clear()
    assert steps(fs, url)[1] == {"is_error": False, "text": "Sunny, 22C in Oslo"}
    calls = mcp_spans(grpc_receiver, "tools/call", 2)
    assert len(calls) == 2, [s.attributes for s in grpc_receiver.spans]
    for s in calls:
        a = s.attributes
        assert a["gen_ai.operation.name"] == "execute_tool", a
        assert a["gen_ai.tool.name"] == "get_weather", a
        assert s.name == "tools/call get_weather"
        assert a["http.request.method"] == "POST" and a["http.response.status_code"] == 200, a
        assert a["flakestorm.target"] == "tool" and s.events == [] and "error.type" not in a
    lists = mcp_spans(grpc_receiver, "tools/list", 2)
    assert lists and all("gen_ai.tool.name" not in s.attributes and
                         "gen_ai.operation.name" not in s.attributes for s in lists)
    assert all(s.name == "tools/list" for s in lists)
    (init,) = mcp_spans(grpc_receiver, "initialize", 1)
    assert "gen_ai.tool.name" not in init.attributes


def test_a_faulted_tool_call_carries_the_fault_event(mcp_fs, grpc_receiver):
    fs, url = mcp_fs
    grpc_receiver.clear()
    status, resp = fs.control("PUT", "/v1/chaos", {"tool_faults": [
        {"id": "wx-down", "tool": "crm", "mode": "mcp_tool_error", "message": "Weather service unavailable"}]})
    assert status == 200, resp
    try:
        got = steps(fs, url)
    finally:
        fs.control("DELETE", "/v1/chaos")
    assert got[1] == {"is_error": True, "text": "Weather service unavailable"}
    calls = mcp_spans(grpc_receiver, "tools/call", 2)
    assert len(calls) == 2
    for s in calls:
        (event,) = s.events
        assert event.name == "flakestorm.fault"
        assert event.attributes["flakestorm.fault.rule"] == "wx-down"
        assert event.attributes["flakestorm.fault.mode"] == "mcp_tool_error"
        assert event.attributes["flakestorm.fault.reached_agent"] is True
        assert s.attributes["gen_ai.tool.name"] == "get_weather"
    others = [s for s in grpc_receiver.spans if s.attributes.get("mcp.method.name") in ("initialize", "tools/list")]
    assert others and all(s.events == [] for s in others), "only the calls were faulted"
