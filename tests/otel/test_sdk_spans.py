"""flakestorm's exchange spans, as a real OTLP receiver (gRPC here; HTTP/protobuf in
test_run_tree.py and below) gets them, for each provider's real SDK call, streamed and
not: the GenAI semantic conventions' attributes (operation, provider, request and response
model, the tokens the origin reported, finish reasons), HTTP attributes, `error.type` on a
faulted call and a `flakestorm.fault` event on exactly the faulted exchange. An agent
instrumented with the OpenTelemetry SDK (httpx instrumentation, sending `traceparent`)
finds flakestorm's spans in its own trace, under its own spans."""

from __future__ import annotations

import openai
import pytest

IN, OUT = 12, 40
MSG = [{"role": "user", "content": "Tell me a story."}]


def by_model(receiver, model: str, count: int):
    return receiver.wait(lambda s: s.attributes.get("gen_ai.request.model") == model, count)


def check_genai(span, provider: str, model: str, finish: str, origin):
    a = span.attributes
    assert a["gen_ai.operation.name"] == "chat", a
    assert a["gen_ai.provider.name"] == provider, a
    assert a["gen_ai.request.model"] == model and a["gen_ai.response.model"] == model, a
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (IN, OUT), a
    assert a["gen_ai.response.finish_reasons"] == [finish], a
    assert a["http.request.method"] == "POST" and a["http.response.status_code"] == 200, a
    assert a["server.address"] == "localhost" and a["server.port"] == origin.port, a
    assert a["url.full"].startswith(origin.url()), a
    assert span.name == f"chat {model}" and span.kind == 3  # SPAN_KIND_CLIENT
    assert span.end_ns > span.start_ns
    assert "error.type" not in a and span.events == []
    # Outside a run, with no traceparent: a root span, and no prompt text by default.
    assert span.parent_span_id == ""
    assert "flakestorm.request.body" not in a


def test_openai_chat_json_and_stream(openai_client, origins, grpc_receiver):
    c = openai_client()
    c.chat.completions.create(model="gpt-otel-a", messages=MSG)
    list(c.chat.completions.create(model="gpt-otel-a", messages=MSG, stream=True,
                                   stream_options={"include_usage": True}))
    spans = by_model(grpc_receiver, "gpt-otel-a", 2)
    assert len(spans) == 2, spans
    for s in spans:
        check_genai(s, "openai", "gpt-otel-a", "stop", origins.openai)
    assert spans[0].resource["service.name"] == "flakestorm"


def test_anthropic_json_and_stream(anthropic_client, origins, grpc_receiver):
    c = anthropic_client()
    c.messages.create(model="claude-otel", max_tokens=64, messages=MSG)
    with c.messages.stream(model="claude-otel", max_tokens=64, messages=MSG) as s:
        s.get_final_message()
    spans = by_model(grpc_receiver, "claude-otel", 2)
    assert len(spans) == 2, spans
    for s in spans:
        check_genai(s, "anthropic", "claude-otel", "end_turn", origins.anthropic)


def test_gemini_json_and_stream(genai_client, origins, grpc_receiver):
    c = genai_client()
    c.models.generate_content(model="gemini-otel", contents="Tell me a story.")
    list(c.models.generate_content_stream(model="gemini-otel", contents="Tell me a story."))
    spans = by_model(grpc_receiver, "gemini-otel", 2)
    assert len(spans) == 2, spans
    for s in spans:
        check_genai(s, "gcp.gemini", "gemini-otel", "STOP", origins.gemini)


def test_a_faulted_call_has_error_type_and_the_only_fault_event(openai_client, chaos, grpc_receiver):
    chaos({"id": "rl-once", "mode": "rate_limit", "retry_after_s": 0.01, "times": 1})
    c = openai_client(max_retries=1)
    c.chat.completions.create(model="gpt-otel-fault", messages=MSG)  # a 429, then the retry
    spans = sorted(by_model(grpc_receiver, "gpt-otel-fault", 2), key=lambda s: s.start_ns)
    assert len(spans) == 2, spans
    faulted, retry = spans
    assert faulted.attributes["http.response.status_code"] == 429
    assert faulted.attributes["error.type"] == "rate_limit_exceeded", faulted.attributes
    assert faulted.status_code == 2  # STATUS_CODE_ERROR
    (event,) = faulted.events
    assert event.name == "flakestorm.fault"
    assert event.attributes == {
        "flakestorm.fault.kind": "fault", "flakestorm.fault.rule": "rl-once",
        "flakestorm.fault.mode": "rate_limit", "flakestorm.fault.seed": "7",
        "flakestorm.fault.reached_agent": True,
    }
    assert retry.events == [] and "error.type" not in retry.attributes
    assert retry.attributes["gen_ai.usage.output_tokens"] == OUT


def test_the_configured_headers_reach_the_collector(grpc_receiver, openai_client):
    openai_client().chat.completions.create(model="gpt-otel-h", messages=MSG)
    assert by_model(grpc_receiver, "gpt-otel-h", 1)
    assert all(h.get("x-receiver-key") == "test-key" for h in grpc_receiver.headers)


def test_an_instrumented_agents_spans_are_the_parents(proxy_env, origins, grpc_receiver):
    """An agent with the OpenTelemetry SDK and the httpx instrumentation calls its LLM with
    httpx (through the proxy, by the environment), which sends `traceparent`: flakestorm's
    span of that exchange is in the agent's trace, a child of the agent's httpx span."""
    import httpx
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mine = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(mine))
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    try:
        with provider.get_tracer("agent").start_as_current_span("agent turn") as turn, \
                httpx.Client() as http:
            r = http.post(f"{origins.openai.url()}/v1/chat/completions",
                          json={"model": "gpt-otel-agent", "messages": MSG},
                          headers={"authorization": "Bearer sk-test"})
            assert r.status_code == 200, r.text
    finally:
        HTTPXClientInstrumentor().uninstrument()
    assert "traceparent" in origins.openai.only_request().headers
    (theirs,) = by_model(grpc_receiver, "gpt-otel-agent", 1)
    httpx_spans = [s for s in mine.get_finished_spans() if s.name != "agent turn"]
    assert len(httpx_spans) == 1, httpx_spans
    assert httpx_spans[0].parent.span_id == turn.get_span_context().span_id
    assert theirs.trace_id == format(turn.get_span_context().trace_id, "032x")
    assert theirs.parent_span_id == format(httpx_spans[0].get_span_context().span_id, "016x")


@pytest.mark.parametrize("protocol", ["http/protobuf"])
def test_http_protobuf_export(protocol, tmp_path, http_receiver, origins, monkeypatch):
    """The same span over HTTP/protobuf (POST /v1/traces), from a daemon configured by the
    standard variables alone: no `telemetry:` in its config."""
    import flakestorm_harness as harness
    import conformance_conftest as conformance  # loaded by this suite's conftest

    env = harness.clean_env()
    env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": http_receiver.endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                "OTEL_EXPORTER_OTLP_HEADERS": "x-receiver-key=from%20env"})
    fs = conformance.Flakestorm.start(tmp_path, env=env)
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            monkeypatch.setenv(name, fs.proxy_url)
        monkeypatch.setenv("SSL_CERT_FILE", str(fs.ca_file))
        c = openai.OpenAI(base_url=f"{origins.openai.url()}/v1", api_key="sk-test", max_retries=0)
        c.chat.completions.create(model="gpt-otel-http", messages=MSG)
        (span,) = by_model(http_receiver, "gpt-otel-http", 1)
        check_genai(span, "openai", "gpt-otel-http", "stop", origins.openai)
        assert http_receiver.headers[-1]["x-receiver-key"] == "from env"
    finally:
        fs.stop()
