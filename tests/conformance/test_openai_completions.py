"""The openai SDK's legacy Completions API (`client.completions.create`, `POST /v1/completions`,
`object: "text_completion"`) through flakestorm: still served by OpenAI for instruct models
and by most OpenAI-compatible servers. Faults that rewrite the answer edit `choices[].text`,
in the whole answer and in each stream chunk, and end a stream with a chunk of its own kind."""

from __future__ import annotations

import json

import openai
import pytest

from _conformance import ANSWER, ANSWER_PIECES, ANSWER_WORDS, Timer
from _majors import OPENAI, openai_http

MODEL = "gpt-3.5-turbo-instruct"
PROMPT = "Tell me a story."


def rule(mode: str, **kw) -> dict:
    return {"provider": "openai", "mode": mode, **kw}


def stream(client):
    """(text, finish reasons) of a streamed completion."""
    text, finishes = "", []
    for chunk in client.completions.create(model=MODEL, prompt=PROMPT, stream=True):
        for c in chunk.choices:
            text += c.text or ""
            finishes += [c.finish_reason] if c.finish_reason else []
    return text, finishes


def test_baseline_json_and_stream_pass_through(openai_client, origins):
    c = openai_client()
    r = c.completions.create(model=MODEL, prompt=PROMPT)
    assert (r.choices[0].text, r.choices[0].finish_reason) == (ANSWER, "stop")
    assert stream(c) == (ANSWER, ["stop"])
    assert origins.openai.count() == 2


def test_truncated_response_json_and_stream(openai_client, chaos):
    chaos(rule("truncated_response", max_tokens=7))
    c = openai_client()
    r = c.completions.create(model=MODEL, prompt=PROMPT)
    assert r.choices[0].finish_reason == "length"
    assert r.choices[0].text.split() == ANSWER_WORDS[:7]
    text, finishes = stream(c)
    assert (text.split(), finishes) == (ANSWER_WORDS[:7], ["length"])


def test_empty_json_and_stream(openai_client, chaos):
    chaos(rule("empty"))
    c = openai_client()
    assert c.completions.create(model=MODEL, prompt=PROMPT).choices[0].text == ""
    assert stream(c)[0] == ""


def test_content_filter_json_and_stream(openai_client, chaos):
    chaos(rule("content_filter"))
    c = openai_client()
    choice = c.completions.create(model=MODEL, prompt=PROMPT).choices[0]
    assert (choice.text, choice.finish_reason) == ("", "content_filter")
    assert choice.model_extra["content_filter_results"]["violence"]["filtered"] is True
    assert stream(c) == (ANSWER_PIECES[0], ["content_filter"])


def test_stream_cut_quiet_is_a_silent_partial(openai_client, chaos):
    chaos(rule("stream_cut", after_events=3))
    text, finishes = stream(openai_client())
    assert finishes == [] and text == "".join(ANSWER_PIECES[:3])


def test_rate_limit_retried_honouring_retry_after(openai_client, chaos, origins, flakestorm):
    chaos(rule("rate_limit", retry_after_s=0.3))
    before = flakestorm.injected("rate_limit")
    with Timer() as t, pytest.raises(openai.RateLimitError) as ei:
        openai_client(max_retries=2).completions.create(model=MODEL, prompt=PROMPT)
    assert ei.value.code == "rate_limit_exceeded"
    assert flakestorm.wait_injected("rate_limit", before + 3) == before + 3
    assert 0.6 <= t.elapsed < 1.4
    assert origins.openai.count() == 0


def test_garbage_json_and_stream_frame_are_json_decode_errors(openai_client, chaos):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        openai_client(max_retries=0).completions.create(model=MODEL, prompt=PROMPT)
    with pytest.raises(json.JSONDecodeError):
        stream(openai_client())


def test_stream_cut_loud_is_a_dropped_connection(openai_client, chaos):
    chaos(rule("stream_cut", after_events=3, loud=True))
    dropped = (openai_http.RemoteProtocolError, openai_http.ReadError)
    # As on chat: openai 3.x wraps the transport error as APIConnectionError, 1.x does not.
    with pytest.raises(openai.APIConnectionError if OPENAI >= 3 else dropped):
        stream(openai_client())


def test_stream_cut_plain_is_a_dropped_connection_retried(openai_client, chaos, origins, flakestorm):
    chaos(rule("stream_cut", after_events=2))
    before = flakestorm.injected("stream_cut")
    with pytest.raises(openai.APIConnectionError) as ei:
        openai_client(max_retries=2).completions.create(model=MODEL, prompt=PROMPT)
    assert isinstance(ei.value.__cause__, (openai_http.RemoteProtocolError, openai_http.ReadError))
    assert flakestorm.wait_injected("stream_cut", before + 3) == before + 3
    assert origins.openai.count() == 3


def test_server_error_in_stream_after_events(openai_client, chaos, origins):
    chaos(rule("server_error", in_stream=True, after_events=3))
    got = ""
    with pytest.raises(openai.APIError) as ei:
        for chunk in openai_client().completions.create(model=MODEL, prompt=PROMPT, stream=True):
            got += "".join(c.text or "" for c in chunk.choices)
    assert not isinstance(ei.value, openai.APIStatusError)
    assert got == "".join(ANSWER_PIECES[:3])
    assert origins.openai.count() == 1


def test_slow_stream_delays_but_keeps_content(openai_client, chaos):
    chaos(rule("slow_stream", first_token_ms=300, between_ms=30))
    with Timer() as t:
        text, finishes = stream(openai_client())
    assert (text, finishes) == (ANSWER, ["stop"])
    # 8 text chunks and the finish chunk, spaced.
    assert t.elapsed >= 0.3 + 8 * 0.03 - 0.02, t.elapsed


def test_response_drift_rewrites_the_text_plain_and_streamed(openai_client, chaos):
    chaos(rule("response_drift", drift_type="refusal_rephrase", severity="moderate"))
    text = openai_client().completions.create(model=MODEL, prompt=PROMPT).choices[0].text
    assert text != ANSWER and ("not able to help" in text or "cannot assist" in text), text
    chaos(rule("response_drift", drift_type="verbosity_shift", direction="expand", factor=2.0))
    text, finishes = stream(openai_client())
    assert finishes == ["stop"] and len(text.split()) > len(ANSWER_WORDS)
