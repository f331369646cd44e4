"""openai 3.x SDK through flakestorm: one test per LLM fault mode (provider-wire-formats.md §1)."""

from __future__ import annotations

import json

import openai
import pydantic
import pytest

from _conformance import ANSWER, ANSWER_PIECES, ANSWER_WORDS, TOOL_ARGS, TOOL_NAME, Timer
from _majors import OPENAI, openai_http

MSG = [{"role": "user", "content": "Tell me a story."}]
RULE = {"provider": "openai"}


def rule(mode: str, **kw) -> dict:
    return {**RULE, "mode": mode, **kw}


def stream_text(client, model="gpt-test", **kw):
    """Iterate a chat stream; return (text, finish_reasons, n_chunks)."""
    text, finishes, n = "", [], 0
    for chunk in client.chat.completions.create(model=model, messages=MSG, stream=True, **kw):
        n += 1
        for c in chunk.choices:
            text += c.delta.content or ""
            if c.finish_reason:
                finishes.append(c.finish_reason)
    return text, finishes, n


# ------------------------------------------------------------------------- baseline


def test_baseline_json_and_stream_pass_through(openai_client, origins, flakestorm):
    c = openai_client()
    r = c.chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].message.content == ANSWER
    assert r.choices[0].finish_reason == "stop"
    text, finishes, _ = stream_text(c)
    assert (text, finishes) == (ANSWER, ["stop"])
    assert origins.openai.count() == 2


# -------------------------------------------------------------------------- timeout


def test_timeout_status_504_hits_sdk_read_timeout(openai_client, chaos, origins):
    chaos(rule("timeout", delay_ms=3000))
    c = openai_client(timeout=0.5, max_retries=0)
    with Timer() as t, pytest.raises(openai.APITimeoutError):
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert t.elapsed < 2.5
    assert origins.openai.count() == 0


def test_timeout_504_after_delay_is_internal_server_error(openai_client, chaos, origins, flakestorm):
    chaos(rule("timeout", delay_ms=100))
    before = flakestorm.injected("timeout")
    c = openai_client(max_retries=0)
    with pytest.raises(openai.InternalServerError) as ei:
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert ei.value.status_code == 504
    assert ei.value.type == "server_error"
    assert flakestorm.wait_injected("timeout", before + 1) == before + 1
    assert origins.openai.count() == 0


def test_timeout_close_is_connection_error(openai_client, chaos, origins):
    chaos(rule("timeout", delay_ms=50, then="close"))
    c = openai_client(max_retries=0)
    with pytest.raises(openai.APIConnectionError) as ei:
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert not isinstance(ei.value, openai.APITimeoutError)
    assert origins.openai.count() == 0


def test_timeout_every_abandoned_attempt_is_counted(openai_client, chaos, origins, flakestorm):
    # The SDK gives up on each attempt (read timeout) and retries: all 3 attempts must show
    # in the metrics, as requests and as injected faults, once the client has left.
    chaos(rule("timeout", delay_ms=30000))
    before = flakestorm.injected("timeout")
    before_req = flakestorm.metric("flakestorm_requests_total", target="llm", status_class="error")
    c = openai_client(timeout=0.3, max_retries=2)
    with Timer() as t, pytest.raises(openai.APITimeoutError):
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert flakestorm.wait_injected("timeout", before + 3) == before + 3
    assert flakestorm.wait_metric("flakestorm_requests_total", before_req + 3, target="llm",
                                  status_class="error") == before_req + 3
    assert t.elapsed < 10
    assert origins.openai.count() == 0


# ----------------------------------------------------------------------- rate_limit


def test_rate_limit_retried_honouring_retry_after(openai_client, chaos, origins, flakestorm):
    chaos(rule("rate_limit", retry_after_s=0.3))
    before = flakestorm.injected("rate_limit")
    c = openai_client(max_retries=2)
    with Timer() as t, pytest.raises(openai.RateLimitError) as ei:
        c.chat.completions.create(model="gpt-test", messages=MSG)
    e = ei.value
    assert e.status_code == 429
    assert e.code == "rate_limit_exceeded"
    assert e.response.headers["retry-after"] == "0.3"
    assert e.response.headers["retry-after-ms"] == "300"
    assert e.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert e.response.headers["x-request-id"].startswith("req_")
    # 3 attempts, two waits of exactly retry-after-ms (not the 0.5 s/1 s back-off).
    assert flakestorm.wait_injected("rate_limit", before + 3) == before + 3
    assert 0.6 <= t.elapsed < 1.4
    assert origins.openai.count() == 0


def test_rate_limit_quota_is_not_retried(openai_client, chaos, origins, flakestorm):
    chaos(rule("rate_limit", retry_after_s=0.3, quota=True))
    before = flakestorm.injected("rate_limit")
    c = openai_client(max_retries=2)
    with Timer() as t, pytest.raises(openai.RateLimitError) as ei:
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert ei.value.code == "insufficient_quota"
    assert ei.value.type == "insufficient_quota"
    assert ei.value.response.headers["x-should-retry"] == "false"
    assert flakestorm.wait_injected("rate_limit", before + 1) == before + 1
    assert t.elapsed < 0.3  # no back-off sleep happened
    assert origins.openai.count() == 0


# --------------------------------------------------------------------- server_error


def test_server_error_503_retried_then_internal_server_error(openai_client, chaos, origins, flakestorm):
    chaos(rule("server_error"))
    before = flakestorm.injected("server_error")
    c = openai_client(max_retries=1)
    with pytest.raises(openai.InternalServerError) as ei:
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert ei.value.status_code == 503
    assert ei.value.type == "server_error"
    assert flakestorm.wait_injected("server_error", before + 2) == before + 2
    assert origins.openai.count() == 0


def test_server_error_in_stream_is_api_error(openai_client, chaos, origins):
    chaos(rule("server_error", in_stream=True))
    c = openai_client()
    got = ""
    with pytest.raises(openai.APIError) as ei:
        for chunk in c.chat.completions.create(model="gpt-test", messages=MSG, stream=True):
            for ch in chunk.choices:
                got += ch.delta.content or ""
    # Mid-stream error: not a status error, the HTTP status was 200.
    assert not isinstance(ei.value, openai.APIStatusError)
    # error.message / error.type of the `data: {"error":…}` frame land on the exception.
    assert ei.value.message.startswith("The server had an error")
    assert ei.value.type == "server_error"
    assert ANSWER.startswith(got) and got != ANSWER
    assert origins.openai.count() == 1  # no retry once the stream started


# ---------------------------------------------------------- context_length_exceeded


def test_context_length_exceeded(openai_client, chaos, origins):
    chaos(rule("context_length_exceeded"))
    c = openai_client()
    with pytest.raises(openai.BadRequestError) as ei:
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert ei.value.status_code == 400
    assert ei.value.code == "context_length_exceeded"
    assert ei.value.param == "messages"
    assert origins.openai.count() == 0  # not retried, never forwarded


# --------------------------------------------------------------- truncated_response


def test_truncated_response_json(openai_client, chaos):
    chaos(rule("truncated_response", max_tokens=7))
    r = openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].finish_reason == "length"
    assert r.choices[0].message.content.split() == ANSWER_WORDS[:7]


@pytest.mark.parametrize("n", [5, 7, 38])  # 5: exactly one event; 38: inside the last event
def test_truncated_response_stream(openai_client, chaos, n):
    chaos(rule("truncated_response", max_tokens=n))
    text, finishes, _ = stream_text(openai_client())
    assert text.split() == ANSWER_WORDS[:n]
    assert finishes == ["length"]


def test_truncated_response_parse_raises_length_error(openai_client, chaos):
    class Story(pydantic.BaseModel):
        text: str

    chaos(rule("truncated_response", max_tokens=5))
    with pytest.raises(openai.LengthFinishReasonError):
        openai_client().chat.completions.parse(model="gpt-test", messages=MSG, response_format=Story)


# ----------------------------------------------------------------------- stream_cut


def test_stream_cut_quiet_is_silent_partial(openai_client, chaos, origins):
    chaos(rule("stream_cut", after_events=3))
    text, finishes, _ = stream_text(openai_client())
    # No error, no finish_reason, partial text (doc §1.2 / §1.6).
    assert finishes == []
    assert text and ANSWER.startswith(text) and text != ANSWER
    assert origins.openai.count() == 1


def test_stream_cut_loud_is_connection_error(openai_client, chaos):
    chaos(rule("stream_cut", after_events=3, loud=True))
    got = ""
    # openai 3.54 wraps a transport error mid-stream as APIConnectionError (cause kept);
    # 1.109 lets the raw httpx error through (its Stream has no such wrapper).
    dropped = (openai_http.RemoteProtocolError, openai_http.ReadError)
    with pytest.raises(openai.APIConnectionError if OPENAI >= 3 else dropped) as ei:
        for chunk in openai_client().chat.completions.create(model="gpt-test", messages=MSG, stream=True):
            for ch in chunk.choices:
                got += ch.delta.content or ""
    if OPENAI >= 3:
        assert isinstance(ei.value.__cause__, dropped), repr(ei.value.__cause__)
    assert ANSWER.startswith(got) and got != ANSWER


def test_stream_cut_non_stream_is_a_dropped_connection_retried(openai_client, chaos, origins, flakestorm):
    # A cut whole answer is a connection dropped mid-body (chunked, never terminated), as
    # doc §1.6 "RST/FIN mid-body, non-stream": APIConnectionError, retried (3 attempts).
    chaos(rule("stream_cut", after_events=2))
    before = flakestorm.injected("stream_cut")
    with pytest.raises(openai.APIConnectionError) as ei:
        openai_client(max_retries=2).chat.completions.create(model="gpt-test", messages=MSG)
    assert not isinstance(ei.value, openai.APITimeoutError)
    assert isinstance(ei.value.__cause__, (openai_http.RemoteProtocolError, openai_http.ReadError)), repr(ei.value.__cause__)
    assert flakestorm.wait_injected("stream_cut", before + 3) == before + 3
    assert origins.openai.count() == 3


# ---------------------------------------------------------------------- slow_stream


def test_slow_stream_delays_but_keeps_content(openai_client, chaos):
    chaos(rule("slow_stream", first_token_ms=300, between_ms=30))
    with Timer() as t:
        text, finishes, n = stream_text(openai_client())
    assert (text, finishes) == (ANSWER, ["stop"])
    # role chunk + 8 content + finish chunk (+ [DONE], not yielded) => >= 9 frames spaced.
    assert n == 10
    assert t.elapsed >= 0.3 + (n - 1) * 0.03 - 0.02, t.elapsed


def test_slow_stream_json_first_byte_delayed(openai_client, chaos):
    chaos(rule("slow_stream", first_token_ms=400, between_ms=10))
    with Timer() as t:
        r = openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].message.content == ANSWER
    assert t.elapsed >= 0.4


# ---------------------------------------------------------------------------- empty


def test_empty_json(openai_client, chaos):
    chaos(rule("empty"))
    r = openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].message.content == ""
    assert r.choices[0].finish_reason == "stop"


def test_empty_stream(openai_client, chaos):
    chaos(rule("empty"))
    text, finishes, _ = stream_text(openai_client())
    assert text == ""
    assert finishes == ["stop"]


# -------------------------------------------------------------------------- garbage


def test_garbage_json_is_raw_json_decode_error(openai_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        openai_client(max_retries=0).chat.completions.create(model="gpt-test", messages=MSG)


def test_garbage_stream_frame_is_json_decode_error(openai_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        stream_text(openai_client())


# ------------------------------------------------------------- tool_call_corruption


def test_tool_call_corruption_invalid_json(openai_client, chaos):
    chaos(rule("tool_call_corruption"))
    r = openai_client().chat.completions.create(model="gpt-tools", messages=MSG)
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == TOOL_NAME
    with pytest.raises(json.JSONDecodeError):
        json.loads(call.function.arguments)


def test_tool_call_corruption_invalid_json_stream(openai_client, chaos):
    chaos(rule("tool_call_corruption"))
    args, name = "", None
    for chunk in openai_client().chat.completions.create(model="gpt-tools", messages=MSG, stream=True):
        for ch in chunk.choices:
            for tc in ch.delta.tool_calls or []:
                name = tc.function.name or name
                args += tc.function.arguments or ""
    assert name == TOOL_NAME
    with pytest.raises(json.JSONDecodeError):
        json.loads(args)


def test_tool_call_corruption_unknown_tool(openai_client, chaos):
    chaos(rule("tool_call_corruption", corruption="unknown_tool"))
    r = openai_client().chat.completions.create(model="gpt-tools", messages=MSG)
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == f"{TOOL_NAME}_v2"
    assert json.loads(call.function.arguments) == TOOL_ARGS


def test_tool_call_corruption_skipped_without_tool_call(openai_client, chaos, flakestorm):
    chaos(rule("tool_call_corruption"))
    before = flakestorm.metric("flakestorm_faults_skipped_total")
    r = openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].message.content == ANSWER
    # Nothing to corrupt: the answer passes untouched and the skip is counted.
    assert flakestorm.wait_metric("flakestorm_faults_skipped_total", before + 1) >= before + 1


# ------------------------------------------------------------------- response_drift


def test_response_drift_refusal_rephrase(openai_client, chaos):
    chaos(rule("response_drift", drift_type="refusal_rephrase", severity="moderate"))
    r = openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    content = r.choices[0].message.content
    assert content != ANSWER
    assert "not able to help" in content or "cannot assist" in content, content


def test_response_drift_json_field_rename_tool_args(openai_client, chaos):
    # severity significant renames every key (subtle: 1, moderate: half).
    chaos(rule("response_drift", drift_type="json_field_rename", severity="significant"))
    r = openai_client().chat.completions.create(model="gpt-tools", messages=MSG)
    args = json.loads(r.choices[0].message.tool_calls[0].function.arguments)
    assert args == {"cityName": "Paris", "unitValue": "celsius"}


def test_response_drift_verbosity_expand_stream(openai_client, chaos):
    chaos(rule("response_drift", drift_type="verbosity_shift", direction="expand", factor=2.0))
    text, finishes, _ = stream_text(openai_client())
    assert finishes == ["stop"]
    assert len(text.split()) > len(ANSWER_WORDS)


def test_stream_cut_quiet_with_include_usage(openai_client, chaos):
    # The usage-only chunk (choices: []) is a terminal event too: it must be dropped with the
    # finish chunk, so the agent sees neither a finish_reason nor usage.
    chaos(rule("stream_cut", after_events=4))
    chunks = list(openai_client().chat.completions.create(
        model="gpt-test", messages=MSG, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.delta.content or "" for ch in chunks for c in ch.choices)
    assert all(c.finish_reason is None for ch in chunks for c in ch.choices)
    assert all(ch.usage is None for ch in chunks)
    assert ANSWER.startswith(text) and text != ANSWER


def test_baseline_include_usage(openai_client):
    chunks = list(openai_client().chat.completions.create(
        model="gpt-test", messages=MSG, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 52


def test_response_drift_json_field_rename_stream_is_skipped(openai_client, chaos, flakestorm):
    # Streamed argument fragments cannot be renamed: flakestorm passes them untouched and
    # counts the fault as skipped (not injected), so a chaos report does not over-claim.
    chaos(rule("response_drift", drift_type="json_field_rename", severity="significant"))
    before = flakestorm.metric("flakestorm_faults_skipped_total", mode="response_drift")
    args = ""
    for chunk in openai_client().chat.completions.create(model="gpt-tools", messages=MSG, stream=True):
        for ch in chunk.choices:
            for tc in ch.delta.tool_calls or []:
                args += tc.function.arguments or ""
    assert json.loads(args) == TOOL_ARGS
    assert flakestorm.wait_metric("flakestorm_faults_skipped_total", before + 1, mode="response_drift") == before + 1


# --------------------------------------------------------------------- client_error


@pytest.mark.parametrize(
    "kind,exc,status,code",
    [
        ("unauthorized", openai.AuthenticationError, 401, "invalid_api_key"),
        ("forbidden", openai.PermissionDeniedError, 403, "unsupported_country_region_territory"),
        ("model_not_found", openai.NotFoundError, 404, "model_not_found"),
        ("request_too_large", openai.APIStatusError, 413, None),
        # OpenAI has no 402: an account out of credit is the non-retryable 429.
        ("payment_required", openai.RateLimitError, 429, "insufficient_quota"),
    ],
)
def test_client_error_is_the_sdks_own_class_and_not_retried(
    openai_client, chaos, origins, flakestorm, kind, exc, status, code
):
    chaos(rule("client_error", error=kind))
    before = flakestorm.injected("client_error")
    with pytest.raises(exc) as ei:
        openai_client(max_retries=2).chat.completions.create(model="gpt-test", messages=MSG)
    assert ei.value.status_code == status
    assert ei.value.code == code
    assert flakestorm.wait_injected("client_error", before + 1) == before + 1
    assert origins.openai.count() == 0


# ------------------------------------------------------------------ html_error_page


def test_html_error_page_is_a_status_error_by_status_and_retried(openai_client, chaos, origins, flakestorm):
    chaos(rule("html_error_page"))
    before = flakestorm.injected("html_error_page")
    with pytest.raises(openai.InternalServerError) as ei:
        openai_client(max_retries=1).chat.completions.create(model="gpt-test", messages=MSG)
    assert ei.value.status_code == 502
    assert ei.value.response.headers["content-type"] == "text/html"
    assert ei.value.code is None  # no JSON body to read a code from
    assert flakestorm.wait_injected("html_error_page", before + 2) == before + 2
    assert origins.openai.count() == 0


# ------------------------------------------------------------------- content_filter


def test_content_filter_finish_reason_json_and_parse_helper(openai_client, chaos, origins):
    chaos(rule("content_filter"))
    c = openai_client()
    r = c.chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].finish_reason == "content_filter"
    # As the real filtered answer: content null, not an empty string.
    assert r.choices[0].message.content is None
    # The parse helpers refuse a filtered answer with their own error.
    with pytest.raises(openai.ContentFilterFinishReasonError):
        c.chat.completions.parse(model="gpt-test", messages=MSG)
    assert origins.openai.count() == 2


def test_content_filter_stream_ends_with_content_filter_after_first_piece(openai_client, chaos):
    chaos(rule("content_filter"))
    text, finishes, _ = stream_text(openai_client())
    assert (text, finishes) == (ANSWER_PIECES[0], ["content_filter"])


def test_content_filter_blocked_prompt_is_azures_400_not_retried(openai_client, chaos, origins, flakestorm):
    chaos(rule("content_filter", signal="blocked_prompt"))
    before = flakestorm.injected("content_filter")
    with pytest.raises(openai.BadRequestError) as ei:
        openai_client(max_retries=2).chat.completions.create(model="gpt-test", messages=MSG)
    assert ei.value.status_code == 400
    assert ei.value.code == "content_filter"
    assert ei.value.param == "prompt"
    assert ei.value.body["innererror"]["code"] == "ResponsibleAIPolicyViolation"
    assert ei.value.body["innererror"]["content_filter_result"]["jailbreak"]["filtered"] is True
    assert flakestorm.wait_injected("content_filter", before + 1) == before + 1
    assert origins.openai.count() == 0


def test_content_filter_refusal_json_and_stream(openai_client, chaos):
    chaos(rule("content_filter", signal="refusal"))
    c = openai_client()
    m = c.chat.completions.create(model="gpt-test", messages=MSG).choices[0].message
    assert (m.content, m.refusal) == (None, "I'm sorry, but I can't help with that.")
    refusal, text, finishes = "", "", []
    for chunk in c.chat.completions.create(model="gpt-test", messages=MSG, stream=True):
        for ch in chunk.choices:
            refusal += ch.delta.refusal or ""
            text += ch.delta.content or ""
            finishes += [ch.finish_reason] if ch.finish_reason else []
    assert (text, refusal, finishes) == ("", "I'm sorry, but I can't help with that.", ["stop"])
    # The stream helper collects the refusal on the final message.
    with c.chat.completions.stream(model="gpt-test", messages=MSG) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.refusal == "I'm sorry, but I can't help with that."


# ------------------------------------------------------------- mid-stream position


def test_server_error_in_stream_after_events(openai_client, chaos, origins):
    chaos(rule("server_error", in_stream=True, after_events=3))
    got = ""
    with pytest.raises(openai.APIError) as ei:
        for chunk in openai_client().chat.completions.create(model="gpt-test", messages=MSG, stream=True):
            for ch in chunk.choices:
                got += ch.delta.content or ""
    assert not isinstance(ei.value, openai.APIStatusError)
    assert got == "".join(ANSWER_PIECES[:3])
    assert origins.openai.count() == 1
