"""google-genai 3.x SDK through flakestorm: one test per LLM fault mode (provider-wire-formats.md §3)."""

from __future__ import annotations

import json

import pytest
from google.genai import errors, types

from _conformance import ANSWER, ANSWER_WORDS, TOOL_ARGS, TOOL_NAME, Timer
from _majors import genai_http

MODEL = "gemini-test"
TOOLS_MODEL = "gemini-tools"
PROMPT = "Tell me a story."


def rule(mode: str, **kw) -> dict:
    return {"provider": "gemini", "mode": mode, **kw}


def generate(client, model=MODEL):
    return client.models.generate_content(model=model, contents=PROMPT)


def stream(client, model=MODEL):
    """(text, finish reasons of every chunk, chunks)."""
    chunks = list(client.models.generate_content_stream(model=model, contents=PROMPT))
    text = "".join(p.text or "" for c in chunks for cand in (c.candidates or []) if cand.content
                   for p in (cand.content.parts or []))
    finishes = [cand.finish_reason for c in chunks for cand in (c.candidates or []) if cand.finish_reason]
    return text, finishes, chunks


def test_baseline_json_and_stream_pass_through(genai_client, origins):
    c = genai_client()
    r = generate(c)
    assert r.text == ANSWER
    assert r.candidates[0].finish_reason == types.FinishReason.STOP
    text, finishes, _ = stream(c)
    assert (text, finishes) == (ANSWER, [types.FinishReason.STOP])
    assert generate(c, TOOLS_MODEL).function_calls[0].args == TOOL_ARGS
    assert origins.gemini.count() == 3


# -------------------------------------------------------------------------- timeout


def test_timeout_client_timeout(genai_client, chaos, origins, flakestorm):
    chaos(rule("timeout", delay_ms=30000))
    before = flakestorm.injected("timeout")
    # HttpOptions.timeout is in milliseconds. genai does not wrap transport errors:
    # the raw httpx2 (google-genai 1.x: httpx) ReadTimeout reaches the caller.
    with Timer() as t, pytest.raises(genai_http.ReadTimeout):
        generate(genai_client(timeout=500))
    assert t.elapsed < 2.5
    # The abandoned attempt is counted once the client has left (not 30 s later).
    assert flakestorm.wait_injected("timeout", before + 1) == before + 1
    assert origins.gemini.count() == 0


def test_timeout_504_is_server_error(genai_client, chaos, origins):
    chaos(rule("timeout", delay_ms=100))
    with pytest.raises(errors.ServerError) as ei:
        generate(genai_client())
    assert ei.value.code == 504
    assert ei.value.status == "DEADLINE_EXCEEDED"
    assert origins.gemini.count() == 0


def test_timeout_close_is_raw_transport_error(genai_client, chaos, origins):
    chaos(rule("timeout", delay_ms=50, then="close"))
    # Observed: connection closed with no response -> raw genai_http.RemoteProtocolError.
    with pytest.raises((genai_http.RemoteProtocolError, genai_http.ReadError)):
        generate(genai_client())
    assert origins.gemini.count() == 0


# ----------------------------------------------------------------------- rate_limit


def test_rate_limit_client_error_429_not_retried(genai_client, chaos, origins, flakestorm):
    chaos(rule("rate_limit", retry_after_s=0.3))
    before = flakestorm.injected("rate_limit")
    with pytest.raises(errors.ClientError) as ei:
        generate(genai_client())
    e = ei.value
    assert (e.code, e.status) == (429, "RESOURCE_EXHAUSTED")
    details = e.details["error"]["details"]
    assert details[0]["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
    assert details[0]["retryDelay"] == "0.3s"
    # genai retries nothing by default (doc §3.4): exactly one attempt.
    assert flakestorm.wait_injected("rate_limit", before + 1) == before + 1
    assert origins.gemini.count() == 0


# --------------------------------------------------------------------- server_error


def test_server_error_503_unavailable(genai_client, chaos, origins):
    chaos(rule("server_error"))
    with pytest.raises(errors.ServerError) as ei:
        generate(genai_client())
    assert (ei.value.code, ei.value.status) == (503, "UNAVAILABLE")
    assert origins.gemini.count() == 0


def test_server_error_500_internal(genai_client, chaos):
    chaos(rule("server_error", status=500))
    with pytest.raises(errors.ServerError) as ei:
        generate(genai_client())
    assert (ei.value.code, ei.value.status) == (500, "INTERNAL")


def test_server_error_in_stream(genai_client, chaos, origins):
    chaos(rule("server_error", in_stream=True))
    got = []
    c = genai_client()  # keep a reference: a collected genai Client closes its HTTP client
    with pytest.raises(errors.ServerError) as ei:
        for ch in c.models.generate_content_stream(model=MODEL, contents=PROMPT):
            got.append(ch.text)
    assert ei.value.code >= 500
    assert got, "the stream should start before the error frame"
    assert origins.gemini.count() == 1


# ---------------------------------------------------------- context_length_exceeded


def test_context_length_exceeded(genai_client, chaos, origins):
    chaos(rule("context_length_exceeded"))
    with pytest.raises(errors.ClientError) as ei:
        generate(genai_client())
    assert (ei.value.code, ei.value.status) == (400, "INVALID_ARGUMENT")
    assert "exceeds the maximum number of tokens" in ei.value.message
    assert origins.gemini.count() == 0


# --------------------------------------------------------------- truncated_response


def test_truncated_response_json(genai_client, chaos):
    chaos(rule("truncated_response", max_tokens=8))
    r = generate(genai_client())
    assert r.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert r.text.split() == ANSWER_WORDS[:8]


# 35 ends exactly at the last content frame; 38 falls in the frame that also holds
# finishReason (real Gemini puts the last text there), which must be cut and marked itself.
@pytest.mark.parametrize("n", [5, 8, 35, 38])
def test_truncated_response_stream(genai_client, chaos, n):
    chaos(rule("truncated_response", max_tokens=n))
    text, finishes, _ = stream(genai_client())
    assert text.split() == ANSWER_WORDS[:n]
    assert finishes[-1] == types.FinishReason.MAX_TOKENS
    assert types.FinishReason.STOP not in finishes


# ----------------------------------------------------------------------- stream_cut


def test_stream_cut_quiet_no_finish_reason(genai_client, chaos):
    chaos(rule("stream_cut", after_events=3))
    text, finishes, chunks = stream(genai_client())
    assert finishes == []
    assert chunks[-1].candidates[0].finish_reason is None
    assert text and ANSWER.startswith(text) and text != ANSWER


def test_stream_cut_loud_raw_transport_error(genai_client, chaos):
    chaos(rule("stream_cut", after_events=3, loud=True))
    with pytest.raises((genai_http.RemoteProtocolError, genai_http.ReadError)):
        stream(genai_client())


def test_stream_cut_non_stream_is_a_dropped_connection(genai_client, chaos, origins, flakestorm):
    # google-genai does not wrap transport errors and does not retry by default.
    chaos(rule("stream_cut", after_events=2))
    before = flakestorm.injected("stream_cut")
    with pytest.raises((genai_http.RemoteProtocolError, genai_http.ReadError)):
        generate(genai_client())
    assert flakestorm.wait_injected("stream_cut", before + 1) == before + 1
    assert origins.gemini.count() == 1


# ---------------------------------------------------------------------- slow_stream


def test_slow_stream_delays_but_keeps_content(genai_client, chaos):
    chaos(rule("slow_stream", first_token_ms=300, between_ms=30))
    with Timer() as t:
        text, finishes, chunks = stream(genai_client())
    assert (text, finishes) == (ANSWER, [types.FinishReason.STOP])
    n = len(chunks)
    assert n == 8
    assert t.elapsed >= 0.3 + (n - 1) * 0.03 - 0.02, t.elapsed


# ---------------------------------------------------------------------------- empty


def test_empty_json(genai_client, chaos):
    chaos(rule("empty"))
    r = generate(genai_client())
    assert not r.text  # "" or None
    assert r.candidates[0].finish_reason == types.FinishReason.STOP


def test_empty_stream(genai_client, chaos):
    chaos(rule("empty"))
    text, finishes, _ = stream(genai_client())
    assert text == ""
    assert finishes == [types.FinishReason.STOP]


# -------------------------------------------------------------------------- garbage


def test_garbage_json(genai_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        generate(genai_client())


def test_garbage_stream_frame(genai_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(errors.UnknownApiResponseError):
        stream(genai_client())


# ------------------------------------------------------------- tool_call_corruption


def test_tool_call_corruption_invalid_json(genai_client, chaos):
    chaos(rule("tool_call_corruption"))
    # As real Gemini reports a broken call: no function call, finishReason
    # MALFORMED_FUNCTION_CALL (the SDK parses it; the agent must handle the missing call).
    r = generate(genai_client(), TOOLS_MODEL)
    assert not r.function_calls
    assert r.candidates[0].finish_reason == types.FinishReason.MALFORMED_FUNCTION_CALL


def test_tool_call_corruption_invalid_json_stream(genai_client, chaos):
    chaos(rule("tool_call_corruption"))
    _, finishes, chunks = stream(genai_client(), TOOLS_MODEL)
    assert not [fc for c in chunks for fc in (c.function_calls or [])]
    assert types.FinishReason.MALFORMED_FUNCTION_CALL in finishes


def test_tool_call_corruption_unknown_tool_stream(genai_client, chaos):
    chaos(rule("tool_call_corruption", corruption="unknown_tool"))
    _, _, chunks = stream(genai_client(), TOOLS_MODEL)
    calls = [fc for c in chunks for fc in (c.function_calls or [])]
    assert [fc.name for fc in calls] == [f"{TOOL_NAME}_v2"]
    assert calls[0].args == TOOL_ARGS


# ------------------------------------------------------------------- response_drift


def test_response_drift_tone_shift(genai_client, chaos):
    chaos(rule("response_drift", drift_type="tone_shift", severity="significant"))
    r = generate(genai_client())
    assert r.text == ANSWER.upper()


def test_response_drift_json_field_rename_stream(genai_client, chaos):
    chaos(rule("response_drift", drift_type="json_field_rename", severity="subtle"))
    _, _, chunks = stream(genai_client(), TOOLS_MODEL)
    calls = [fc for c in chunks for fc in (c.function_calls or [])]
    # subtle renames one key
    assert calls[0].args == {"cityName": "Paris", "unit": "celsius"}


# --------------------------------------------------------------------- client_error


@pytest.mark.parametrize(
    "kind,code,status",
    [
        # The live API answers a bad key and an oversized body with 400.
        ("unauthorized", 400, "INVALID_ARGUMENT"),
        ("forbidden", 403, "PERMISSION_DENIED"),
        ("model_not_found", 404, "NOT_FOUND"),
        ("request_too_large", 400, "INVALID_ARGUMENT"),
        ("payment_required", 429, "RESOURCE_EXHAUSTED"),
    ],
)
def test_client_error_is_a_client_error(genai_client, chaos, origins, flakestorm, kind, code, status):
    chaos(rule("client_error", error=kind))
    before = flakestorm.injected("client_error")
    with pytest.raises(errors.ClientError) as ei:
        generate(genai_client())
    assert (ei.value.code, ei.value.status) == (code, status)
    assert flakestorm.wait_injected("client_error", before + 1) == before + 1
    assert origins.gemini.count() == 0


# ------------------------------------------------------------------ html_error_page


def test_html_error_page_is_a_server_error(genai_client, chaos, origins, flakestorm):
    chaos(rule("html_error_page"))
    before = flakestorm.injected("html_error_page")
    with pytest.raises(errors.ServerError) as ei:
        generate(genai_client())
    assert ei.value.code == 502
    assert flakestorm.wait_injected("html_error_page", before + 1) == before + 1
    assert origins.gemini.count() == 0


# ------------------------------------------------------------------- content_filter


@pytest.mark.parametrize("signal,reason", [
    ("filtered", types.FinishReason.SAFETY),
    ("refusal", types.FinishReason.SAFETY),  # Gemini has no refusal signal of its own
    ("recitation", types.FinishReason.RECITATION),
])
def test_content_filter_finish_reason_json(genai_client, chaos, signal, reason):
    chaos(rule("content_filter", signal=signal))
    r = generate(genai_client())
    cand = r.candidates[0]
    assert cand.finish_reason == reason
    assert cand.content is None and r.text is None
    blocked = [s for s in cand.safety_ratings if s.blocked]
    if reason == types.FinishReason.SAFETY:
        assert [(s.category, s.probability) for s in blocked] == [
            (types.HarmCategory.HARM_CATEGORY_DANGEROUS_CONTENT, types.HarmProbability.HIGH)]
    else:
        assert blocked == []


def test_content_filter_stream_ends_with_safety_after_first_chunk(genai_client, chaos):
    chaos(rule("content_filter"))
    text, finishes, chunks = stream(genai_client())
    assert finishes == [types.FinishReason.SAFETY]
    assert ANSWER.startswith(text) and 0 < len(text) < len(ANSWER)
    assert len(chunks) == 2


def test_content_filter_blocked_prompt_json_and_stream(genai_client, chaos, origins):
    chaos(rule("content_filter", signal="blocked_prompt"))
    c = genai_client()
    r = generate(c)
    # A 200 with no candidates: nothing raised, `text` is None, the reason in promptFeedback.
    assert r.candidates is None and r.text is None
    assert r.prompt_feedback.block_reason == types.BlockedReason.SAFETY
    chunks = list(c.models.generate_content_stream(model=MODEL, contents=PROMPT))
    assert len(chunks) == 1
    assert chunks[0].candidates is None
    assert chunks[0].prompt_feedback.block_reason == types.BlockedReason.SAFETY
    assert origins.gemini.count() == 2


# ------------------------------------------------------------- mid-stream position


def test_server_error_in_stream_after_events(genai_client, chaos, origins):
    chaos(rule("server_error", in_stream=True, after_events=3))
    got = []
    c = genai_client()
    with pytest.raises(errors.ServerError) as ei:
        for ch in c.models.generate_content_stream(model=MODEL, contents=PROMPT):
            got.append(ch.text)
    assert (ei.value.code, ei.value.status) == (503, "UNAVAILABLE")
    assert len(got) == 3
    assert origins.gemini.count() == 1
