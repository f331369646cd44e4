"""ollama SDK (plain HTTP, via HTTP_PROXY) through flakestorm: one test per LLM fault mode
(provider-wire-formats.md §4)."""

from __future__ import annotations

import json

import httpx
import ollama
import pytest

from _conformance import ANSWER, ANSWER_WORDS, TOOL_ARGS, TOOL_NAME, Timer

MODEL = "llama-test"
TOOLS_MODEL = "llama-tools"
MSG = [{"role": "user", "content": "Tell me a story."}]


def rule(mode: str, **kw) -> dict:
    return {"provider": "ollama", "mode": mode, **kw}


def chat(client, model=MODEL):
    return client.chat(model=model, messages=MSG, stream=False)


def stream(client, model=MODEL):
    parts = list(client.chat(model=model, messages=MSG, stream=True))
    return "".join(p.message.content or "" for p in parts), parts


def test_baseline_json_and_stream_pass_through(ollama_client, origins, flakestorm):
    before = flakestorm.metric("flakestorm_requests_total")
    c = ollama_client()
    r = chat(c)
    assert (r.message.content, r.done, r.done_reason) == (ANSWER, True, "stop")
    text, parts = stream(c)
    assert text == ANSWER and parts[-1].done and parts[-1].done_reason == "stop"
    assert chat(c, TOOLS_MODEL).message.tool_calls[0].function.arguments == TOOL_ARGS
    assert origins.ollama.count() == 3
    # plain HTTP: prove the requests went through the proxy, not direct.
    assert flakestorm.wait_metric("flakestorm_requests_total", before + 3) >= before + 3


# -------------------------------------------------------------------------- timeout


def test_timeout_client_timeout(ollama_client, chaos, origins, flakestorm):
    chaos(rule("timeout", delay_ms=30000))
    before = flakestorm.injected("timeout")
    # ollama has no timeout by default and does not wrap transport errors: raw httpx.
    with Timer() as t, pytest.raises(httpx.ReadTimeout):
        chat(ollama_client(timeout=0.5))
    assert t.elapsed < 2.5
    # The abandoned attempt is counted once the client has left (not 30 s later).
    assert flakestorm.wait_injected("timeout", before + 1) == before + 1
    assert origins.ollama.count() == 0


def test_timeout_504_is_response_error(ollama_client, chaos, origins):
    chaos(rule("timeout", delay_ms=100))
    with pytest.raises(ollama.ResponseError) as ei:
        chat(ollama_client())
    assert ei.value.status_code == 504
    assert origins.ollama.count() == 0


def test_timeout_close_is_raw_transport_error(ollama_client, chaos, origins):
    chaos(rule("timeout", delay_ms=50, then="close"))
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        chat(ollama_client())
    assert origins.ollama.count() == 0


# ----------------------------------------------------------------------- rate_limit


def test_rate_limit_response_error_429(ollama_client, chaos, origins, flakestorm):
    chaos(rule("rate_limit", retry_after_s=0.2))
    before = flakestorm.injected("rate_limit")
    with pytest.raises(ollama.ResponseError) as ei:
        chat(ollama_client())
    assert ei.value.status_code == 429
    assert ei.value.error == "too many requests"
    assert flakestorm.wait_injected("rate_limit", before + 1) == before + 1  # no retries in ollama
    assert origins.ollama.count() == 0


# --------------------------------------------------------------------- server_error


def test_server_error_500(ollama_client, chaos, origins):
    chaos(rule("server_error"))
    with pytest.raises(ollama.ResponseError) as ei:
        chat(ollama_client())
    assert ei.value.status_code == 500
    assert "stopped" in ei.value.error
    assert origins.ollama.count() == 0


def test_server_error_in_stream_status_minus_one(ollama_client, chaos, origins):
    chaos(rule("server_error", in_stream=True))
    got = ""
    with pytest.raises(ollama.ResponseError) as ei:
        for p in ollama_client().chat(model=MODEL, messages=MSG, stream=True):
            got += p.message.content or ""
    assert ei.value.status_code == -1
    assert got and ANSWER.startswith(got) and got != ANSWER
    assert origins.ollama.count() == 1


# ---------------------------------------------------------- context_length_exceeded


def test_context_length_exceeded_drops_early_turns_silently(ollama_client, chaos, origins, flakestorm):
    # Ollama has no "prompt too long" error on /api/chat: over num_ctx it keeps the system
    # messages and the newest turns and drops the rest without a word (doc §4; its log
    # says "truncating input prompt"). So the SDK succeeds, and the model never saw the
    # early turns.
    chaos(rule("context_length_exceeded"))
    before = flakestorm.injected("context_length_exceeded")
    history = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Noted, Ada."},
        {"role": "user", "content": "I live in Paris."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "What is my name?"},
    ]
    r = ollama_client().chat(model=MODEL, messages=history, stream=False)
    assert r.message.content == ANSWER and r.done_reason == "stop"
    sent = origins.ollama.only_request().json()["messages"]
    assert sent == [history[0], *history[-2:]], sent
    assert flakestorm.wait_injected("context_length_exceeded", before + 1) == before + 1


def test_context_length_exceeded_streamed_drops_early_turns_silently(ollama_client, chaos, origins, flakestorm):
    # The same silent cut when the answer streams: a normal stream, early turns gone.
    chaos(rule("context_length_exceeded"))
    before = flakestorm.injected("context_length_exceeded")
    history = [{"role": "system", "content": "You are terse."}] + [
        {"role": r, "content": f"turn {i}"} for i, r in enumerate(["user", "assistant"] * 2 + ["user"])]
    parts = list(ollama_client().chat(model=MODEL, messages=history, stream=True))
    assert "".join(p.message.content or "" for p in parts) == ANSWER and parts[-1].done
    sent = origins.ollama.only_request().json()["messages"]
    assert sent == [history[0], *history[-2:]], sent
    assert flakestorm.wait_injected("context_length_exceeded", before + 1) == before + 1


# --------------------------------------------------------------- truncated_response


def test_truncated_response_json(ollama_client, chaos):
    chaos(rule("truncated_response", max_tokens=9))
    r = chat(ollama_client())
    assert r.done_reason == "length"
    assert r.message.content.split() == ANSWER_WORDS[:9]


@pytest.mark.parametrize("n", [5, 9, 38])
def test_truncated_response_stream(ollama_client, chaos, n):
    chaos(rule("truncated_response", max_tokens=n))
    text, parts = stream(ollama_client())
    assert text.split() == ANSWER_WORDS[:n]
    assert parts[-1].done and parts[-1].done_reason == "length"


# ----------------------------------------------------------------------- stream_cut


def test_stream_cut_quiet_last_chunk_not_done(ollama_client, chaos):
    chaos(rule("stream_cut", after_events=3))
    text, parts = stream(ollama_client())
    assert parts[-1].done is False
    assert not any(p.done for p in parts)
    assert text and ANSWER.startswith(text) and text != ANSWER


def test_stream_cut_loud_raw_httpx_error(ollama_client, chaos):
    chaos(rule("stream_cut", after_events=3, loud=True))
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        stream(ollama_client())


def test_stream_cut_non_stream_is_a_dropped_connection(ollama_client, chaos, origins):
    # ollama does not wrap transport errors and never retries.
    chaos(rule("stream_cut", after_events=2))
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        chat(ollama_client())
    assert origins.ollama.count() == 1


# ---------------------------------------------------------------------- slow_stream


def test_slow_stream_delays_but_keeps_content(ollama_client, chaos):
    chaos(rule("slow_stream", first_token_ms=300, between_ms=30))
    with Timer() as t:
        text, parts = stream(ollama_client())
    assert text == ANSWER and parts[-1].done
    n = len(parts)
    assert n == 9
    assert t.elapsed >= 0.3 + (n - 1) * 0.03 - 0.02, t.elapsed


# ---------------------------------------------------------------------------- empty


def test_empty_json(ollama_client, chaos):
    chaos(rule("empty"))
    r = chat(ollama_client())
    assert r.message.content == "" and r.done_reason == "stop"


def test_empty_stream(ollama_client, chaos):
    chaos(rule("empty"))
    text, parts = stream(ollama_client())
    assert text == "" and parts[-1].done and parts[-1].done_reason == "stop"


# -------------------------------------------------------------------------- garbage


def test_garbage_json(ollama_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        chat(ollama_client())


def test_garbage_stream_line(ollama_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        stream(ollama_client())


# ------------------------------------------------------------- tool_call_corruption


@pytest.mark.parametrize("streamed", [False, True])
def test_tool_call_corruption_invalid_json_is_the_tool_parser_500(ollama_client, chaos, origins, flakestorm, streamed):
    # As Ollama answers when the model's call does not parse: HTTP 500
    # `{"error":"error parsing tool call: raw='…', err=…"}`, streamed requests too (the call
    # is parsed before the stream opens). The SDK raises ResponseError(500); it never retries.
    chaos(rule("tool_call_corruption"))
    before = flakestorm.injected("tool_call_corruption")
    with pytest.raises(ollama.ResponseError) as ei:
        if streamed:
            stream(ollama_client(), TOOLS_MODEL)
        else:
            chat(ollama_client(), TOOLS_MODEL)
    assert ei.value.status_code == 500
    assert ei.value.error.startswith("error parsing tool call: raw='")
    assert ei.value.error.endswith("', err=unexpected end of JSON input")
    assert flakestorm.wait_injected("tool_call_corruption", before + 1) == before + 1
    assert origins.ollama.count() == 0


def test_tool_call_corruption_unknown_tool_stream(ollama_client, chaos):
    chaos(rule("tool_call_corruption", corruption="unknown_tool"))
    _, parts = stream(ollama_client(), TOOLS_MODEL)
    calls = [tc for p in parts for tc in (p.message.tool_calls or [])]
    assert [tc.function.name for tc in calls] == [f"{TOOL_NAME}_v2"]
    assert calls[0].function.arguments == TOOL_ARGS


# ------------------------------------------------------------------- response_drift


def test_response_drift_format_change(ollama_client, chaos):
    chaos(rule("response_drift", drift_type="format_change", severity="significant"))
    r = chat(ollama_client())
    assert r.message.content == f"```\n{ANSWER}\n```"


def test_response_drift_verbosity_compress_stream(ollama_client, chaos):
    chaos(rule("response_drift", drift_type="verbosity_shift", direction="compress", factor=5.0))
    text, parts = stream(ollama_client())
    assert parts[-1].done
    # each 5-word event keeps ceil(5/5) = 1 word
    assert 0 < len(text.split()) < len(ANSWER_WORDS)


# ------------------------------------------------------------------- /api/generate


def test_generate_truncated_response_stream(ollama_client, chaos):
    chaos(rule("truncated_response", max_tokens=9))
    parts = list(ollama_client().generate(model=MODEL, prompt="story", stream=True))
    text = "".join(p.response or "" for p in parts)
    assert text.split() == ANSWER_WORDS[:9]
    assert parts[-1].done and parts[-1].done_reason == "length"


def test_generate_empty_json(ollama_client, chaos):
    chaos(rule("empty"))
    r = ollama_client().generate(model=MODEL, prompt="story", stream=False)
    assert r.response == "" and r.done


def test_generate_baseline(ollama_client, origins):
    r = ollama_client().generate(model=MODEL, prompt="story", stream=False)
    assert r.response == ANSWER and r.done_reason == "stop"


# --------------------------------------------------------------------- client_error


@pytest.mark.parametrize(
    "kind,status,text",
    [
        ("unauthorized", 401, "unauthorized"),
        ("payment_required", 402, "payment required"),
        ("forbidden", 403, "forbidden"),
        ("model_not_found", 404, "model not found, try pulling it first"),
        ("request_too_large", 413, "request entity too large"),
    ],
)
def test_client_error_response_error(ollama_client, chaos, origins, flakestorm, kind, status, text):
    chaos(rule("client_error", error=kind))
    before = flakestorm.injected("client_error")
    with pytest.raises(ollama.ResponseError) as ei:
        chat(ollama_client())
    assert (ei.value.status_code, ei.value.error) == (status, text)
    assert flakestorm.wait_injected("client_error", before + 1) == before + 1
    assert origins.ollama.count() == 0


# ------------------------------------------------------------------ html_error_page


def test_html_error_page_is_a_response_error_with_the_page(ollama_client, chaos, origins, flakestorm):
    chaos(rule("html_error_page"))
    before = flakestorm.injected("html_error_page")
    with pytest.raises(ollama.ResponseError) as ei:
        chat(ollama_client())
    assert ei.value.status_code == 502
    assert "<h1>502 Bad Gateway</h1>" in ei.value.error
    assert flakestorm.wait_injected("html_error_page", before + 1) == before + 1
    assert origins.ollama.count() == 0


# ------------------------------------------------------------------- content_filter


def test_content_filter_on_an_ollama_rule_is_refused(flakestorm):
    # Ollama has no content-filter or refusal signal: a rule asking for one is a 422 naming
    # the field and the closest real behaviour, and the rules in force stay.
    status, body = flakestorm.control("PUT", "/v1/chaos", {"llm_faults": [rule("content_filter")]})
    assert status == 422, body
    errs = json.loads(body)["error"]["errors"]
    assert [e["path"] for e in errs] == ["chaos.llm_faults[0].provider"]
    assert "refusal_rephrase" in errs[0]["message"]


def test_content_filter_without_provider_passes_ollama_through(ollama_client, chaos, flakestorm):
    chaos({"mode": "content_filter"})
    before = flakestorm.metric("flakestorm_faults_skipped_total")
    assert chat(ollama_client()).message.content == ANSWER
    assert flakestorm.wait_metric("flakestorm_faults_skipped_total", before + 1) >= before + 1


# ------------------------------------------------------------- mid-stream position


def test_server_error_in_stream_after_events(ollama_client, chaos, origins):
    chaos(rule("server_error", in_stream=True, after_events=5))
    parts = []
    with pytest.raises(ollama.ResponseError) as ei:
        for p in ollama_client().chat(model=MODEL, messages=MSG, stream=True):
            parts.append(p)
    assert ei.value.status_code == -1
    assert ei.value.error == "model runner has unexpectedly stopped"
    assert len(parts) == 5
    assert origins.ollama.count() == 1
