"""anthropic 2.x SDK through flakestorm: one test per LLM fault mode (provider-wire-formats.md §2)."""

from __future__ import annotations

import json

import anthropic
import pytest

from _conformance import ANSWER, ANSWER_WORDS, TOOL_ARGS, TOOL_NAME, Timer
from _majors import ANTHROPIC, anthropic_http

MSG = [{"role": "user", "content": "Tell me a story."}]
MODEL = "claude-test"
TOOLS_MODEL = "claude-tools"


def rule(mode: str, **kw) -> dict:
    return {"provider": "anthropic", "mode": mode, **kw}


def create(client, model=MODEL, **kw):
    return client.messages.create(model=model, max_tokens=1024, messages=MSG, **kw)


def raw_stream(client, model=MODEL):
    """Raw `stream=True` iteration: (text, event types)."""
    text, types = "", []
    for ev in create(client, model=model, stream=True):
        types.append(ev.type)
        if ev.type == "content_block_delta" and ev.delta.type == "text_delta":
            text += ev.delta.text
    return text, types


def final_message(client, model=MODEL):
    with client.messages.stream(model=model, max_tokens=1024, messages=MSG) as s:
        for _ in s:
            pass
        return s.get_final_message()


def text_of(msg) -> str:
    return "".join(b.text for b in msg.content if b.type == "text")


def test_baseline_json_and_stream_pass_through(anthropic_client, origins):
    c = anthropic_client()
    r = create(c)
    assert (text_of(r), r.stop_reason) == (ANSWER, "end_turn")
    m = final_message(c)
    assert (text_of(m), m.stop_reason) == (ANSWER, "end_turn")
    t = final_message(c, TOOLS_MODEL)
    assert t.content[0].input == TOOL_ARGS
    assert origins.anthropic.count() == 3


# -------------------------------------------------------------------------- timeout


def test_timeout_hits_sdk_read_timeout(anthropic_client, chaos, origins):
    chaos(rule("timeout", delay_ms=3000))
    with Timer() as t, pytest.raises(anthropic.APITimeoutError):
        create(anthropic_client(timeout=0.5, max_retries=0))
    assert t.elapsed < 2.5
    assert origins.anthropic.count() == 0


def test_timeout_504_is_gateway_timeout_error(anthropic_client, chaos, origins):
    chaos(rule("timeout", delay_ms=100))
    with pytest.raises(anthropic.InternalServerError) as ei:
        create(anthropic_client(max_retries=0))
    assert ei.value.status_code == 504
    # anthropic 2.12 maps 504 to GatewayTimeoutError (doc §2.3), an InternalServerError
    # subclass; 0.125 has no class for 504 and raises InternalServerError itself.
    assert type(ei.value).__name__ == ("GatewayTimeoutError" if ANTHROPIC >= 2 else "InternalServerError")
    assert ei.value.body["error"]["type"] == "timeout_error"
    assert origins.anthropic.count() == 0


def test_timeout_close_is_connection_error(anthropic_client, chaos, origins):
    chaos(rule("timeout", delay_ms=50, then="close"))
    with pytest.raises(anthropic.APIConnectionError) as ei:
        create(anthropic_client(max_retries=0))
    assert not isinstance(ei.value, anthropic.APITimeoutError)
    assert origins.anthropic.count() == 0


def test_timeout_every_abandoned_attempt_is_counted(anthropic_client, chaos, origins, flakestorm):
    chaos(rule("timeout", delay_ms=30000))
    before = flakestorm.injected("timeout")
    before_req = flakestorm.metric("flakestorm_requests_total", target="llm", status_class="error")
    with pytest.raises(anthropic.APITimeoutError):
        create(anthropic_client(timeout=0.3, max_retries=2))
    assert flakestorm.wait_injected("timeout", before + 3) == before + 3
    assert flakestorm.wait_metric("flakestorm_requests_total", before_req + 3, target="llm",
                                  status_class="error") == before_req + 3
    assert origins.anthropic.count() == 0


# ----------------------------------------------------------------------- rate_limit


def test_rate_limit_retried_honouring_retry_after(anthropic_client, chaos, origins, flakestorm):
    chaos(rule("rate_limit", retry_after_s=0.3))
    before = flakestorm.injected("rate_limit")
    with Timer() as t, pytest.raises(anthropic.RateLimitError) as ei:
        create(anthropic_client(max_retries=2))
    e = ei.value
    assert e.status_code == 429
    assert e.body["error"]["type"] == "rate_limit_error"
    assert e.response.headers["retry-after"] == "0.3"
    assert e.request_id and e.request_id.startswith("req_")
    assert flakestorm.wait_injected("rate_limit", before + 3) == before + 3
    assert 0.6 <= t.elapsed < 1.4
    assert origins.anthropic.count() == 0


def test_rate_limit_quota_is_credit_balance_400_not_retried(anthropic_client, chaos, origins, flakestorm):
    # The live API answers an exhausted credit balance with 400 invalid_request_error, not
    # a 429: the SDK raises BadRequestError at once, no retry, no back-off.
    chaos(rule("rate_limit", retry_after_s=0.3, quota=True))
    before = flakestorm.injected("rate_limit")
    with Timer() as t, pytest.raises(anthropic.BadRequestError) as ei:
        create(anthropic_client(max_retries=2))
    e = ei.value
    assert e.status_code == 400
    assert e.body["error"]["type"] == "invalid_request_error"
    assert e.body["error"]["message"].startswith("Your credit balance is too low to access the Anthropic API.")
    assert e.request_id and e.request_id.startswith("req_")
    assert "retry-after" not in e.response.headers
    assert flakestorm.wait_injected("rate_limit", before + 1) == before + 1
    assert t.elapsed < 0.3
    assert origins.anthropic.count() == 0


# --------------------------------------------------------------------- server_error


def test_server_error_529_overloaded_after_retries(anthropic_client, chaos, origins, flakestorm):
    chaos(rule("server_error"))
    before = flakestorm.injected("server_error")
    with pytest.raises(anthropic.OverloadedError) as ei:
        create(anthropic_client(max_retries=1))
    # anthropic 2.x made OverloadedError an InternalServerError; in 0.x it is a sibling
    # (APIStatusError), so `except InternalServerError` does not catch a 529 there.
    assert isinstance(ei.value, anthropic.InternalServerError) == (ANTHROPIC >= 2)
    assert ei.value.status_code == 529
    assert ei.value.body["error"]["type"] == "overloaded_error"
    assert flakestorm.wait_injected("server_error", before + 2) == before + 2
    assert origins.anthropic.count() == 0


def test_server_error_in_stream_is_status_error_200(anthropic_client, chaos, origins):
    chaos(rule("server_error", in_stream=True))
    with pytest.raises(anthropic.APIStatusError) as ei:
        raw_stream(anthropic_client())
    # doc §2.5: a mid-stream `event: error` is APIStatusError with status 200, NOT OverloadedError.
    assert ei.value.status_code == 200
    assert not isinstance(ei.value, anthropic.OverloadedError)
    assert "overloaded" in str(ei.value).lower()
    assert origins.anthropic.count() == 1


# ---------------------------------------------------------- context_length_exceeded


def test_context_length_exceeded(anthropic_client, chaos, origins):
    chaos(rule("context_length_exceeded"))
    with pytest.raises(anthropic.BadRequestError) as ei:
        create(anthropic_client())
    assert ei.value.status_code == 400
    assert ei.value.body["error"]["type"] == "invalid_request_error"
    assert "prompt is too long" in ei.value.message
    assert origins.anthropic.count() == 0


# --------------------------------------------------------------- truncated_response


def test_truncated_response_json(anthropic_client, chaos):
    chaos(rule("truncated_response", max_tokens=6))
    r = create(anthropic_client())
    assert r.stop_reason == "max_tokens"
    assert text_of(r).split() == ANSWER_WORDS[:6]


@pytest.mark.parametrize("n", [5, 6, 38])
def test_truncated_response_stream_final_message(anthropic_client, chaos, n):
    chaos(rule("truncated_response", max_tokens=n))
    m = final_message(anthropic_client())
    assert m.stop_reason == "max_tokens"
    assert text_of(m).split() == ANSWER_WORDS[:n]


# ----------------------------------------------------------------------- stream_cut


def test_stream_cut_quiet_raw_iteration_stops(anthropic_client, chaos):
    chaos(rule("stream_cut", after_events=3))
    text, types = raw_stream(anthropic_client())
    assert "message_stop" not in types and "message_delta" not in types
    assert text and ANSWER.startswith(text) and text != ANSWER


def test_stream_cut_quiet_final_message_has_no_stop_reason(anthropic_client, chaos):
    chaos(rule("stream_cut", after_events=3))
    m = final_message(anthropic_client())
    assert m.stop_reason is None
    assert ANSWER.startswith(text_of(m)) and text_of(m) != ANSWER


def test_stream_cut_loud_raw_transport_error(anthropic_client, chaos):
    chaos(rule("stream_cut", after_events=3, loud=True))
    # doc §2.5: anthropic does NOT wrap mid-stream transport errors.
    with pytest.raises((anthropic_http.RemoteProtocolError, anthropic_http.ReadError)):
        raw_stream(anthropic_client())


def test_stream_cut_non_stream_is_a_dropped_connection_retried(anthropic_client, chaos, origins, flakestorm):
    # Non-streamed, the body is read inside the SDK's retry loop: the dropped connection is
    # an APIConnectionError (cause RemoteProtocolError), retried like a real one.
    chaos(rule("stream_cut", after_events=2))
    before = flakestorm.injected("stream_cut")
    with pytest.raises(anthropic.APIConnectionError) as ei:
        create(anthropic_client(max_retries=2))
    assert not isinstance(ei.value, anthropic.APITimeoutError)
    assert isinstance(ei.value.__cause__, (anthropic_http.RemoteProtocolError, anthropic_http.ReadError)), repr(ei.value.__cause__)
    assert flakestorm.wait_injected("stream_cut", before + 3) == before + 3
    assert origins.anthropic.count() == 3


# ---------------------------------------------------------------------- slow_stream


def test_slow_stream_delays_but_keeps_content(anthropic_client, chaos):
    chaos(rule("slow_stream", first_token_ms=300, between_ms=30))
    with Timer() as t:
        text, types = raw_stream(anthropic_client())
    assert text == ANSWER and types[-1] == "message_stop"
    n = len(types)
    assert t.elapsed >= 0.3 + (n - 1) * 0.03 - 0.02, (t.elapsed, n)


# ---------------------------------------------------------------------------- empty


def test_empty_json(anthropic_client, chaos):
    chaos(rule("empty"))
    r = create(anthropic_client())
    assert r.content[0].type == "text" and r.content[0].text == ""
    assert r.stop_reason == "end_turn"


def test_empty_stream(anthropic_client, chaos):
    chaos(rule("empty"))
    m = final_message(anthropic_client())
    assert text_of(m) == ""
    assert m.stop_reason == "end_turn"


# -------------------------------------------------------------------------- garbage


def test_garbage_json(anthropic_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        create(anthropic_client(max_retries=0))


def test_garbage_stream_frame(anthropic_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        raw_stream(anthropic_client())


# ------------------------------------------------------------- tool_call_corruption


def test_tool_call_corruption_stream_helper_raises(anthropic_client, chaos):
    chaos(rule("tool_call_corruption"))
    with pytest.raises(ValueError, match="Unable to parse tool parameter JSON"):
        final_message(anthropic_client(), TOOLS_MODEL)


def test_tool_call_corruption_json_input_is_an_object_missing_an_argument(anthropic_client, chaos, flakestorm):
    # The real API always sends `input` as an object; a call the model got wrong reaches
    # the agent as an object missing an argument, so calling the tool with it fails.
    chaos(rule("tool_call_corruption"))
    before = flakestorm.injected("tool_call_corruption")
    r = create(anthropic_client(), model=TOOLS_MODEL)
    block = next(b for b in r.content if b.type == "tool_use")
    assert block.name == TOOL_NAME
    assert isinstance(block.input, dict), block.input
    assert block.input == {k: v for k, v in TOOL_ARGS.items() if k != "city_name"}

    def get_weather(city_name: str, unit: str) -> str:
        return f"{city_name} {unit}"

    with pytest.raises(TypeError, match="city_name"):
        get_weather(**block.input)
    assert flakestorm.wait_injected("tool_call_corruption", before + 1) == before + 1


def test_tool_call_corruption_unknown_tool(anthropic_client, chaos):
    chaos(rule("tool_call_corruption", corruption="unknown_tool"))
    m = final_message(anthropic_client(), TOOLS_MODEL)
    block = next(b for b in m.content if b.type == "tool_use")
    assert block.name == f"{TOOL_NAME}_v2"
    assert block.input == TOOL_ARGS


# ------------------------------------------------------------------- response_drift


def test_response_drift_refusal_rephrase_stream(anthropic_client, chaos):
    chaos(rule("response_drift", drift_type="refusal_rephrase", severity="significant"))
    m = final_message(anthropic_client())
    assert "cannot assist" in text_of(m), text_of(m)
    assert m.stop_reason == "end_turn"


def test_response_drift_json_field_rename_tool_input(anthropic_client, chaos):
    chaos(rule("response_drift", drift_type="json_field_rename", severity="significant"))
    r = create(anthropic_client(), model=TOOLS_MODEL)
    block = next(b for b in r.content if b.type == "tool_use")
    assert block.input == {"cityName": "Paris", "unitValue": "celsius"}


# --------------------------------------------------------------------- client_error


@pytest.mark.parametrize(
    "kind,exc,status,etype",
    [
        ("unauthorized", anthropic.AuthenticationError, 401, "authentication_error"),
        ("forbidden", anthropic.PermissionDeniedError, 403, "permission_error"),
        ("model_not_found", anthropic.NotFoundError, 404, "not_found_error"),
        # 2.x has PaymentRequiredError for 402; 0.x maps 402 to no class of its own.
        ("payment_required", anthropic.PaymentRequiredError if ANTHROPIC >= 2 else anthropic.APIStatusError,
         402, "billing_error"),
        # RequestTooLargeError in both (2.x: a deprecated alias of ContentTooLargeError).
        ("request_too_large", anthropic.RequestTooLargeError, 413, "request_too_large"),
    ],
)
def test_client_error_is_the_sdks_own_class_and_not_retried(
    anthropic_client, chaos, origins, flakestorm, kind, exc, status, etype
):
    chaos(rule("client_error", error=kind))
    before = flakestorm.injected("client_error")
    with pytest.raises(exc) as ei:
        create(anthropic_client(max_retries=2))
    assert ei.value.status_code == status
    assert ei.value.body["error"]["type"] == etype
    assert not isinstance(ei.value, anthropic.InternalServerError)
    assert flakestorm.wait_injected("client_error", before + 1) == before + 1
    assert origins.anthropic.count() == 0


# ------------------------------------------------------------------ html_error_page


def test_html_error_page_is_an_internal_server_error_and_retried(anthropic_client, chaos, origins, flakestorm):
    chaos(rule("html_error_page", status=503))
    before = flakestorm.injected("html_error_page")
    with pytest.raises(anthropic.InternalServerError) as ei:
        create(anthropic_client(max_retries=1))
    assert ei.value.status_code == 503
    assert "<h1>503 Service Unavailable</h1>" in ei.value.response.text
    assert flakestorm.wait_injected("html_error_page", before + 2) == before + 2
    assert origins.anthropic.count() == 0


# ------------------------------------------------------------------- content_filter
# Anthropic's one signal is `stop_reason: "refusal"`: every `signal` is that.


@pytest.mark.parametrize("signal", ["filtered", "blocked_prompt", "refusal"])
def test_content_filter_is_stop_reason_refusal_json(anthropic_client, chaos, origins, signal):
    chaos(rule("content_filter", signal=signal))
    r = create(anthropic_client())
    assert (r.stop_reason, r.content) == ("refusal", [])
    assert origins.anthropic.count() == 1


def test_content_filter_stream_stops_with_refusal_after_first_piece(anthropic_client, chaos):
    chaos(rule("content_filter"))
    c = anthropic_client()
    text, types = raw_stream(c)
    assert types[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert ANSWER.startswith(text) and 0 < len(text) < len(ANSWER)
    final = final_message(c)
    assert final.stop_reason == "refusal"
    assert final.content[0].text == text


def test_content_filter_refusal_stream_has_no_text_and_no_tool_call(anthropic_client, chaos):
    chaos(rule("content_filter", signal="refusal"))
    c = anthropic_client()
    final = final_message(c)
    assert final.stop_reason == "refusal"
    assert [b.text for b in final.content] == [""]
    final = final_message(c, model=TOOLS_MODEL)
    assert final.stop_reason == "refusal" and final.content == []


# ------------------------------------------------------------- mid-stream position


def test_server_error_in_stream_after_events(anthropic_client, chaos, origins):
    chaos(rule("server_error", in_stream=True, after_events=4))
    text, types = "", []
    with pytest.raises(anthropic.APIStatusError) as ei:
        for ev in create(anthropic_client(), stream=True):
            types.append(ev.type)
            if ev.type == "content_block_delta":
                text += ev.delta.text
    assert ei.value.status_code == 200
    assert types.count("content_block_delta") == 4
    assert ANSWER.startswith(text) and text != ANSWER
    assert origins.anthropic.count() == 1
