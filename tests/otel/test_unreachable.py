"""A collector that is down (nothing listens) or slow (it takes the connection and never
answers): the agent's calls through the proxy succeed as before, flakestorm warns once,
and the spans it could not export are counted in `flakestorm_otlp_dropped_spans_total`."""

from __future__ import annotations

import socket
import time

import openai
import pytest
import conformance_conftest as conformance  # loaded by this suite's conftest
from flakestorm_harness import clean_env

MSG = [{"role": "user", "content": "Tell me a story."}]


@pytest.fixture(params=["down", "slow"])
def collector(request):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    if request.param == "down":
        # Bound, never listening: connections are refused, and no other process can take
        # the port while the test runs.
        yield request.param, port
        s.close()
        return
    s.listen(16)  # connections complete in the backlog; nothing ever answers
    yield request.param, port
    s.close()


def test_the_proxy_and_its_calls_are_unaffected(collector, tmp_path, origins, monkeypatch):
    kind, port = collector
    protocol = "grpc" if kind == "down" else "http/protobuf"
    env = clean_env()
    env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "300"
    fs = conformance.Flakestorm.start(tmp_path, env=env, extra_config=(
        f"telemetry:\n  otlp: {{endpoint: \"http://127.0.0.1:{port}\", protocol: \"{protocol}\"}}\n"))
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            monkeypatch.setenv(name, fs.proxy_url)
        monkeypatch.setenv("SSL_CERT_FILE", str(fs.ca_file))
        c = openai.OpenAI(base_url=f"{origins.openai.url()}/v1", api_key="sk-test", max_retries=0)
        for _ in range(5):
            r = c.chat.completions.create(model="gpt-otel-down", messages=MSG)
            assert r.choices[0].message.content
        dropped = fs.wait_metric("flakestorm_otlp_dropped_spans_total", 5, within_s=10, reason="export_failed")
        assert dropped >= 5, dropped
        assert fs.metric("flakestorm_otlp_exported_spans_total") == 0
        status, body = fs.control("GET", "/metrics")
        text = body.decode()
        assert "# TYPE flakestorm_otlp_dropped_spans_total counter" in text
        assert "# HELP flakestorm_otlp_dropped_spans_total " in text
        # Five more calls: still answered, still no second warning.
        for _ in range(5):
            c.chat.completions.create(model="gpt-otel-down", messages=MSG)
        fs.wait_metric("flakestorm_otlp_dropped_spans_total", 10, within_s=10, reason="export_failed")
    finally:
        fs.stop()
    warnings = [l for l in fs.stderr_tail(100_000).splitlines() if "OTLP export to" in l]
    assert len(warnings) == 1, warnings
    assert f"127.0.0.1:{port}" in warnings[0] and "flakestorm_otlp_dropped_spans_total" in warnings[0]


def test_export_resumes_when_the_collector_comes_back(tmp_path, origins, monkeypatch):
    """While exports fail the proxy drops exchanges before building their spans; once the
    back-off ends, the next exchange is sent at once as a probe and export goes on."""
    from otlp_receiver import HttpReceiver

    held = socket.socket()
    held.bind(("127.0.0.1", 0))  # bound, never listening: refused, and nobody takes it
    port = held.getsockname()[1]
    fs = conformance.Flakestorm.start(tmp_path, env=clean_env(), extra_config=(
        f"telemetry:\n  otlp: {{endpoint: \"http://127.0.0.1:{port}\", protocol: \"http/protobuf\"}}\n"))
    receiver = None
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            monkeypatch.setenv(name, fs.proxy_url)
        monkeypatch.setenv("SSL_CERT_FILE", str(fs.ca_file))
        c = openai.OpenAI(base_url=f"{origins.openai.url()}/v1", api_key="sk-test", max_retries=0)
        c.chat.completions.create(model="gpt-otel-before", messages=MSG)
        fs.wait_metric("flakestorm_otlp_dropped_spans_total", 1, within_s=10, reason="export_failed")

        held.close()
        receiver = HttpReceiver(port=port)
        # Within the back-off (5 s at most) calls are dropped; after it, one is a probe.
        deadline = time.monotonic() + 20
        while not receiver.spans and time.monotonic() < deadline:
            c.chat.completions.create(model="gpt-otel-after", messages=MSG)
            receiver.wait(lambda s: True, count=1, within_s=0.5)
        assert receiver.spans, "no span exported after the collector came back"
        assert fs.metric("flakestorm_otlp_exported_spans_total") >= 1
        assert any(s.attributes.get("gen_ai.request.model") == "gpt-otel-after" for s in receiver.spans)
    finally:
        fs.stop()
        held.close()
        if receiver:
            receiver.close()
    log = fs.stderr_tail(100_000)
    assert "works again" in log, log[-2000:]
