"""openai 3.x SDK, Responses API (`POST /v1/responses`) through flakestorm: one test per LLM
fault mode. The origin speaks the Responses API (`_conformance.openai_responses_*`); the
provider is detected as OpenAI by the path."""

from __future__ import annotations

import json

import openai
import pytest

from _conformance import ANSWER, ANSWER_WORDS, TOOL_ARGS, TOOL_NAME, Timer
from _majors import OPENAI, openai_http

INPUT = "Tell me a story."
RULE = {"provider": "openai"}
# strict: the stream helper / parse() then json.loads the arguments of the final response.
TOOLS = [{"type": "function", "name": TOOL_NAME, "strict": True,
          "parameters": {"type": "object", "additionalProperties": False, "required": ["city_name", "unit"],
                         "properties": {"city_name": {"type": "string"}, "unit": {"type": "string"}}}}]


def rule(mode: str, **kw) -> dict:
    return {**RULE, "mode": mode, **kw}


def raw_events(client, model="gpt-test", **kw) -> list:
    """Every event of `responses.create(stream=True)`."""
    return list(client.responses.create(model=model, input=INPUT, stream=True, **kw))


def deltas(events) -> str:
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


def types(events) -> list[str]:
    return [e.type for e in events]


def call_args_streamed(events) -> str:
    return "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")


# ------------------------------------------------------------------------- baseline


def test_baseline_json_stream_and_helper(openai_client, origins):
    c = openai_client()
    r = c.responses.create(model="gpt-test", input=INPUT)
    assert (r.status, r.output_text, r.usage.total_tokens) == ("completed", ANSWER, 52)
    assert r.output[0].id == "msg_1"

    events = raw_events(c)
    assert deltas(events) == ANSWER
    assert types(events)[0] == "response.created" and types(events)[-1] == "response.completed"
    assert events[-1].response.output_text == ANSWER
    assert [e.sequence_number for e in events] == list(range(len(events)))

    with c.responses.stream(model="gpt-test", input=INPUT) as s:
        final = s.get_final_response()
    assert (final.status, final.output_text) == ("completed", ANSWER)
    assert origins.openai.count() == 3
    assert {r.path for r in origins.openai.requests} == {"/v1/responses"}


def test_baseline_function_call(openai_client):
    c = openai_client()
    r = c.responses.create(model="gpt-tools", input=INPUT, tools=TOOLS)
    call = r.output[0]
    assert (call.type, call.name, call.call_id) == ("function_call", TOOL_NAME, "call_1")
    assert json.loads(call.arguments) == TOOL_ARGS

    events = raw_events(c, model="gpt-tools", tools=TOOLS)
    assert json.loads(call_args_streamed(events)) == TOOL_ARGS

    with c.responses.stream(model="gpt-tools", input=INPUT, tools=TOOLS) as s:
        final = s.get_final_response()
    assert final.output[0].parsed_arguments == TOOL_ARGS  # strict tool: parsed by the helper


# ------------------------------------------------------ short-circuit (never forwarded)


def test_rate_limit_retried_then_rate_limit_error(openai_client, chaos, origins, flakestorm):
    chaos(rule("rate_limit", retry_after_s=0.1))
    before = flakestorm.injected("rate_limit")
    with pytest.raises(openai.RateLimitError) as ei:
        openai_client(max_retries=2).responses.create(model="gpt-test", input=INPUT)
    assert ei.value.code == "rate_limit_exceeded"
    assert flakestorm.wait_injected("rate_limit", before + 3) == before + 3
    assert origins.openai.count() == 0


def test_server_error_503(openai_client, chaos, origins):
    chaos(rule("server_error"))
    with pytest.raises(openai.InternalServerError) as ei:
        openai_client(max_retries=0).responses.create(model="gpt-test", input=INPUT)
    assert (ei.value.status_code, ei.value.type) == (503, "server_error")
    assert origins.openai.count() == 0


def test_timeout_is_api_timeout_error(openai_client, chaos, origins):
    chaos(rule("timeout", delay_ms=3000))
    with Timer() as t, pytest.raises(openai.APITimeoutError):
        openai_client(timeout=0.5, max_retries=0).responses.create(model="gpt-test", input=INPUT)
    assert t.elapsed < 2.5
    assert origins.openai.count() == 0


def test_context_length_exceeded(openai_client, chaos, origins):
    chaos(rule("context_length_exceeded"))
    with pytest.raises(openai.BadRequestError) as ei:
        openai_client().responses.create(model="gpt-test", input=INPUT)
    assert (ei.value.status_code, ei.value.code) == (400, "context_length_exceeded")
    assert origins.openai.count() == 0


# --------------------------------------------------------------- truncated_response


def test_truncated_response_json(openai_client, chaos):
    chaos(rule("truncated_response", max_tokens=5))
    r = openai_client().responses.create(model="gpt-test", input=INPUT)
    assert r.status == "incomplete"
    assert r.incomplete_details.reason == "max_output_tokens"
    assert r.output_text.split() == ANSWER_WORDS[:5]


def test_truncated_response_json_item_status(openai_client, chaos):
    chaos(rule("truncated_response", max_tokens=5))
    r = openai_client().responses.create(model="gpt-test", input=INPUT)
    assert r.output[0].status == "incomplete"


@pytest.mark.parametrize("n", [5, 7, 38])  # 5: exactly one delta; 38: inside the last delta
def test_truncated_response_stream(openai_client, chaos, n):
    chaos(rule("truncated_response", max_tokens=n))
    events = raw_events(openai_client())
    assert deltas(events).split() == ANSWER_WORDS[:n]
    assert "response.completed" not in types(events)
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.status == "incomplete"
    assert last.response.incomplete_details.reason == "max_output_tokens"
    assert last.response.output_text == deltas(events)
    assert last.sequence_number == events[-2].sequence_number + 1


def test_truncated_response_stream_incomplete_item_keeps_id(openai_client, chaos):
    chaos(rule("truncated_response", max_tokens=5))
    last = raw_events(openai_client())[-1]
    assert last.type == "response.incomplete"
    assert last.response.output[0].id == "msg_1"


def test_truncated_response_stream_helper(openai_client, chaos):
    chaos(rule("truncated_response", max_tokens=7))
    with openai_client().responses.stream(model="gpt-test", input=INPUT) as s:
        events = list(s)
        # Observed (openai 3.54): only `response.completed` sets the final response, so a
        # stream that ends with `response.incomplete` (as the real API does at
        # max_output_tokens) makes get_final_response() raise; the helper still yields the
        # incomplete event, carrying the partial text.
        with pytest.raises(RuntimeError, match="response.completed"):
            s.get_final_response()
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.output_text.split() == ANSWER_WORDS[:7]


# ---------------------------------------------------------------------------- empty


def test_empty_json(openai_client, chaos):
    chaos(rule("empty"))
    r = openai_client().responses.create(model="gpt-test", input=INPUT)
    assert (r.status, r.output_text) == ("completed", "")


def test_empty_stream_every_copy(openai_client, chaos):
    chaos(rule("empty"))
    events = raw_events(openai_client())
    assert deltas(events) == ""
    done = next(e for e in events if e.type == "response.output_text.done")
    part = next(e for e in events if e.type == "response.content_part.done")
    item = next(e for e in events if e.type == "response.output_item.done")
    assert (done.text, part.part.text, item.item.content[0].text) == ("", "", "")
    assert events[-1].type == "response.completed" and events[-1].response.output_text == ""
    with openai_client().responses.stream(model="gpt-test", input=INPUT) as s:
        assert s.get_final_response().output_text == ""


# ----------------------------------------------------------------------- stream_cut


def test_stream_cut_quiet(openai_client, chaos, origins):
    chaos(rule("stream_cut", after_events=3))
    events = raw_events(openai_client())
    text = deltas(events)
    # No error: the iteration just ends, with partial text and no terminal event.
    assert text and ANSWER.startswith(text) and text != ANSWER
    assert not {"response.completed", "response.incomplete", "response.failed"} & set(types(events))
    assert origins.openai.count() == 1


def test_stream_cut_quiet_helper_raises_runtime_error(openai_client, chaos):
    chaos(rule("stream_cut", after_events=3))
    with openai_client().responses.stream(model="gpt-test", input=INPUT) as s:
        with pytest.raises(RuntimeError, match="Didn't receive a `response.completed` event"):
            s.get_final_response()


def test_stream_cut_after_all_deltas_drops_only_completed(openai_client, chaos):
    # after_events beyond the 8 deltas: everything but the terminal event arrives.
    chaos(rule("stream_cut", after_events=50))
    events = raw_events(openai_client())
    assert deltas(events) == ANSWER
    assert types(events)[-1] == "response.output_item.done"


def test_stream_cut_loud_is_connection_error(openai_client, chaos):
    chaos(rule("stream_cut", after_events=3, loud=True))
    got = []
    # openai 3.54 wraps a transport error mid-stream as APIConnectionError (cause kept);
    # 1.109 lets the raw httpx error through (its Stream has no such wrapper).
    dropped = (openai_http.RemoteProtocolError, openai_http.ReadError)
    with pytest.raises(openai.APIConnectionError if OPENAI >= 3 else dropped) as ei:
        for e in openai_client().responses.create(model="gpt-test", input=INPUT, stream=True):
            got.append(e)
    if OPENAI >= 3:
        assert isinstance(ei.value.__cause__, dropped), repr(ei.value.__cause__)
    assert ANSWER.startswith(deltas(got)) and deltas(got) != ANSWER


def test_stream_cut_non_stream_is_a_dropped_connection_retried(openai_client, chaos, origins, flakestorm):
    chaos(rule("stream_cut", after_events=2))
    before = flakestorm.injected("stream_cut")
    with pytest.raises(openai.APIConnectionError) as ei:
        openai_client(max_retries=2).responses.create(model="gpt-test", input=INPUT)
    assert isinstance(ei.value.__cause__, (openai_http.RemoteProtocolError, openai_http.ReadError)), repr(ei.value.__cause__)
    assert flakestorm.wait_injected("stream_cut", before + 3) == before + 3
    assert origins.openai.count() == 3


# ---------------------------------------------------------------------- slow_stream


def test_slow_stream(openai_client, chaos):
    chaos(rule("slow_stream", first_token_ms=200, between_ms=20))
    with Timer() as t:
        events = raw_events(openai_client())
    assert deltas(events) == ANSWER and events[-1].type == "response.completed"
    n = len(events)  # created, in_progress, 2 added, 8 deltas, 3 done, completed: all paced
    assert n == 16
    assert t.elapsed >= 0.2 + (n - 1) * 0.02 - 0.02, t.elapsed


# -------------------------------------------------------------------------- garbage


def test_garbage_json(openai_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        openai_client(max_retries=0).responses.create(model="gpt-test", input=INPUT)


def test_garbage_stream(openai_client, chaos):
    chaos(rule("garbage"))
    got = []
    with pytest.raises(json.JSONDecodeError):
        for e in openai_client().responses.create(model="gpt-test", input=INPUT, stream=True):
            got.append(e)
    assert deltas(got) == "The quick brown fox jumps "  # the first delta, then the junk frame


# ------------------------------------------------------------- server_error in_stream


def test_server_error_in_stream_is_response_failed(openai_client, chaos, origins):
    chaos(rule("server_error", in_stream=True))
    events = raw_events(openai_client())
    # Observed: the SDK raises nothing for `response.failed` (its in-stream APIError is only
    # for a top-level `error` key); the event is yielded and iteration ends.
    last = events[-1]
    assert last.type == "response.failed"
    assert last.response.status == "failed"
    assert last.response.error.code == "server_error"
    assert last.sequence_number == events[-2].sequence_number + 1
    assert ANSWER.startswith(deltas(events)) and deltas(events) != ANSWER
    assert origins.openai.count() == 1


def test_server_error_in_stream_helper(openai_client, chaos):
    chaos(rule("server_error", in_stream=True))
    with openai_client().responses.stream(model="gpt-test", input=INPUT) as s:
        events = list(s)
        with pytest.raises(RuntimeError, match="response.completed"):
            s.get_final_response()
    assert events[-1].type == "response.failed"
    assert events[-1].response.error.code == "server_error"


# ------------------------------------------------------------- tool_call_corruption


def test_tool_call_corruption_invalid_json(openai_client, chaos):
    chaos(rule("tool_call_corruption"))
    r = openai_client().responses.create(model="gpt-tools", input=INPUT, tools=TOOLS)
    call = r.output[0]
    assert call.name == TOOL_NAME
    with pytest.raises(json.JSONDecodeError):
        json.loads(call.arguments)


def test_tool_call_corruption_invalid_json_stream_deltas(openai_client, chaos):
    chaos(rule("tool_call_corruption"))
    events = raw_events(openai_client(), model="gpt-tools", tools=TOOLS)
    with pytest.raises(json.JSONDecodeError):
        json.loads(call_args_streamed(events))


def test_tool_call_corruption_invalid_json_stream_every_copy(openai_client, chaos):
    chaos(rule("tool_call_corruption"))
    events = raw_events(openai_client(), model="gpt-tools", tools=TOOLS)
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    item = next(e for e in events if e.type == "response.output_item.done")
    for args in (done.arguments, item.item.arguments, events[-1].response.output[0].arguments):
        with pytest.raises(json.JSONDecodeError):
            json.loads(args)


def test_tool_call_corruption_invalid_json_stream_helper(openai_client, chaos):
    chaos(rule("tool_call_corruption"))
    # With a strict tool the helper json.loads the final arguments: a broken call raises.
    with pytest.raises(json.JSONDecodeError):
        with openai_client().responses.stream(model="gpt-tools", input=INPUT, tools=TOOLS) as s:
            s.get_final_response()


def test_tool_call_corruption_unknown_tool(openai_client, chaos):
    chaos(rule("tool_call_corruption", corruption="unknown_tool"))
    r = openai_client().responses.create(model="gpt-tools", input=INPUT, tools=TOOLS)
    assert r.output[0].name == f"{TOOL_NAME}_v2"
    assert json.loads(r.output[0].arguments) == TOOL_ARGS


def test_tool_call_corruption_unknown_tool_stream(openai_client, chaos):
    chaos(rule("tool_call_corruption", corruption="unknown_tool"))
    with openai_client().responses.stream(model="gpt-tools", input=INPUT, tools=TOOLS) as s:
        events = list(s)
        final = s.get_final_response()
    added = next(e for e in events if e.type == "response.output_item.added")
    assert added.item.name == f"{TOOL_NAME}_v2"
    call = final.output[0]
    assert call.name == f"{TOOL_NAME}_v2"
    assert json.loads(call.arguments) == TOOL_ARGS
    # The unknown name matches no input tool, so the helper does not parse the arguments.
    assert call.parsed_arguments is None


# ------------------------------------------------------------------- response_drift


def test_response_drift_refusal_rephrase_json(openai_client, chaos):
    chaos(rule("response_drift", drift_type="refusal_rephrase", severity="moderate"))
    r = openai_client().responses.create(model="gpt-test", input=INPUT)
    assert r.output_text != ANSWER
    assert "not able to help" in r.output_text, r.output_text


def drifted_copies(events) -> tuple:
    done = next(e for e in events if e.type == "response.output_text.done")
    part = next(e for e in events if e.type == "response.content_part.done")
    item = next(e for e in events if e.type == "response.output_item.done")
    assert events[-1].type == "response.completed"
    return done.text, part.part.text, item.item.content[0].text, events[-1].response.output_text


@pytest.mark.parametrize("drift,expect", [
    ({"drift_type": "refusal_rephrase", "severity": "moderate"}, lambda t: "not able to help" in t),
    ({"drift_type": "tone_shift", "severity": "significant"}, lambda t: t == ANSWER.upper()),
    ({"drift_type": "verbosity_shift", "direction": "compress", "factor": 2},
     lambda t: 0 < len(t.split()) < len(ANSWER_WORDS) and t != ANSWER),
])
def test_response_drift_stream_every_copy(openai_client, chaos, flakestorm, drift, expect):
    # The deltas are drifted as they stream, and every copy that repeats the text whole
    # (output_text.done, content_part.done, output_item.done, response.completed) says
    # exactly what the deltas said, as the real API's copies always do.
    chaos(rule("response_drift", **drift))
    before = flakestorm.injected("response_drift")
    events = raw_events(openai_client())
    said = deltas(events)
    assert said != ANSWER and expect(said), said
    assert drifted_copies(events) == (said, said, said, said)
    assert flakestorm.wait_injected("response_drift", before + 1) == before + 1
    with openai_client().responses.stream(model="gpt-test", input=INPUT) as s:
        assert s.get_final_response().output_text == said


def test_response_drift_stream_field_rename_is_skipped(openai_client, chaos, flakestorm):
    # Streamed argument fragments cannot be renamed (as on Chat Completions): noted skipped.
    chaos(rule("response_drift", drift_type="json_field_rename", severity="significant"))
    before = flakestorm.metric("flakestorm_faults_skipped_total", target="llm", mode="response_drift")
    events = raw_events(openai_client(), model="gpt-tools")
    assert json.loads(call_args_streamed(events)) == TOOL_ARGS
    assert flakestorm.wait_metric("flakestorm_faults_skipped_total", before + 1,
                                  target="llm", mode="response_drift") == before + 1


# --------------------------------------------------- server_error in_stream: `error` event


def test_server_error_in_stream_error_event_raises_api_error(openai_client, chaos, origins):
    chaos(rule("server_error", in_stream=True, responses_event="error", after_events=2))
    got = []
    with pytest.raises(openai.APIError) as ei:
        for e in openai_client().responses.create(model="gpt-test", input=INPUT, stream=True):
            got.append(e)
    # The live API nests the fields under `error`, which the SDK raises as an APIError (not a
    # status error: the HTTP status was 200); no retry once the stream started.
    assert not isinstance(ei.value, openai.APIStatusError)
    assert ei.value.message.startswith("The server had an error")
    assert ei.value.code == "server_error"
    assert ei.value.type == "server_error"
    assert ANSWER.startswith(deltas(got)) and deltas(got) != ANSWER
    assert len([e for e in got if e.type == "response.output_text.delta"]) == 2
    assert origins.openai.count() == 1


# ------------------------------------------------------------------- content_filter


REFUSAL = "I'm sorry, but I can't help with that."


def test_content_filter_json_is_incomplete_by_content_filter(openai_client, chaos):
    chaos(rule("content_filter"))
    r = openai_client().responses.create(model="gpt-test", input=INPUT)
    assert (r.status, r.incomplete_details.reason, r.output_text) == ("incomplete", "content_filter", "")
    assert r.output == []  # as the real filtered response: no message item at all


def test_content_filter_stream_ends_with_response_incomplete(openai_client, chaos):
    chaos(rule("content_filter"))
    c = openai_client()
    events = raw_events(c)
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.incomplete_details.reason == "content_filter"
    first_delta = next(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas(events) == first_delta == last.response.output_text
    assert [e.sequence_number for e in events] == list(range(len(events)))
    # As at the token limit, the helper only accepts `response.completed` as final.
    with c.responses.stream(model="gpt-test", input=INPUT) as s:
        list(s)
        with pytest.raises(RuntimeError, match="response.completed"):
            s.get_final_response()


def test_content_filter_blocked_prompt_is_azures_400(openai_client, chaos, origins):
    chaos(rule("content_filter", signal="blocked_prompt"))
    with pytest.raises(openai.BadRequestError) as ei:
        openai_client(max_retries=2).responses.create(model="gpt-test", input=INPUT)
    assert (ei.value.status_code, ei.value.code) == (400, "content_filter")
    assert origins.openai.count() == 0


def test_content_filter_refusal_part_json_stream_and_helper(openai_client, chaos):
    chaos(rule("content_filter", signal="refusal"))
    c = openai_client()
    r = c.responses.create(model="gpt-test", input=INPUT)
    part = r.output[0].content[0]
    assert (r.status, part.type, part.refusal, r.output_text) == ("completed", "refusal", REFUSAL, "")
    events = raw_events(c)
    assert "response.refusal.delta" in types(events) and deltas(events) == ""
    assert events[-1].type == "response.completed"
    assert events[-1].response.output[0].content[0].refusal == REFUSAL
    assert [e.sequence_number for e in events] == list(range(len(events)))
    with c.responses.stream(model="gpt-test", input=INPUT) as s:
        final = s.get_final_response()
    assert final.output[0].content[0].type == "refusal"
    # A call the model was about to make is replaced by the refusal message.
    with c.responses.stream(model="gpt-tools", input=INPUT, tools=TOOLS) as s:
        final = s.get_final_response()
    assert [o.type for o in final.output] == ["message"]
    assert final.output[0].content[0].refusal == REFUSAL
