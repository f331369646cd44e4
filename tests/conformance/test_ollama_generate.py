"""ollama 0.6 `generate()` (`POST /api/generate`, whose text is in `response`, not
`message`) through flakestorm: the answer-rewriting faults, as on `/api/chat`
(test_ollama.py), end the way Ollama ends a generate answer."""

from __future__ import annotations

import json

import httpx
import ollama
import pytest

from _conformance import ANSWER, ANSWER_WORDS, Timer

MODEL = "llama-test"


def rule(mode: str, **kw) -> dict:
    return {"provider": "ollama", "mode": mode, **kw}


def stream(client):
    parts = list(client.generate(model=MODEL, prompt="story", stream=True))
    return "".join(p.response or "" for p in parts), parts


def test_baseline_stream(ollama_client):
    text, parts = stream(ollama_client())
    assert text == ANSWER and parts[-1].done and parts[-1].done_reason == "stop"


def test_truncated_response_json(ollama_client, chaos):
    chaos(rule("truncated_response", max_tokens=9))
    r = ollama_client().generate(model=MODEL, prompt="story", stream=False)
    assert r.response.split() == ANSWER_WORDS[:9]
    assert r.done and r.done_reason == "length"


def test_empty_stream(ollama_client, chaos):
    chaos(rule("empty"))
    text, parts = stream(ollama_client())
    assert text == "" and parts[-1].done and parts[-1].done_reason == "stop"


def test_stream_cut_quiet_last_chunk_not_done(ollama_client, chaos):
    chaos(rule("stream_cut", after_events=3))
    text, parts = stream(ollama_client())
    assert not any(p.done for p in parts)
    assert text and ANSWER.startswith(text) and text != ANSWER


def test_stream_cut_loud_raw_httpx_error(ollama_client, chaos):
    chaos(rule("stream_cut", after_events=3, loud=True))
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        stream(ollama_client())


def test_stream_cut_plain_is_a_dropped_connection(ollama_client, chaos, origins):
    chaos(rule("stream_cut", after_events=2))
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        ollama_client().generate(model=MODEL, prompt="story", stream=False)
    assert origins.ollama.count() == 1  # ollama never retries


def test_server_error_in_stream_status_minus_one(ollama_client, chaos):
    chaos(rule("server_error", in_stream=True))
    got = ""
    with pytest.raises(ollama.ResponseError) as ei:
        for p in ollama_client().generate(model=MODEL, prompt="story", stream=True):
            got += p.response or ""
    assert ei.value.status_code == -1
    assert got and ANSWER.startswith(got) and got != ANSWER


@pytest.mark.parametrize("streamed", [False, True])
def test_garbage_is_json_decode_error(ollama_client, chaos, streamed):
    chaos(rule("garbage"))
    with pytest.raises(json.JSONDecodeError):
        if streamed:
            stream(ollama_client())
        else:
            ollama_client().generate(model=MODEL, prompt="story", stream=False)


@pytest.mark.parametrize("streamed", [False, True])
def test_response_drift_tone_shift(ollama_client, chaos, streamed):
    chaos(rule("response_drift", drift_type="tone_shift", severity="significant"))
    if streamed:
        text, parts = stream(ollama_client())
        assert parts[-1].done
    else:
        text = ollama_client().generate(model=MODEL, prompt="story", stream=False).response
    assert text == ANSWER.upper()


def test_slow_stream_paces_every_line(ollama_client, chaos):
    chaos(rule("slow_stream", first_token_ms=200, between_ms=30))
    with Timer() as t:
        text, parts = stream(ollama_client())
    assert text == ANSWER and parts[-1].done
    assert len(parts) == 9
    assert t.elapsed >= 0.2 + 8 * 0.03 - 0.02, t.elapsed


@pytest.mark.parametrize("streamed", [False, True])
def test_context_length_exceeded_keeps_the_newest_half_of_the_prompt(ollama_client, chaos, origins, flakestorm,
                                                                     streamed):
    # Over num_ctx Ollama keeps the newest tokens of a generate prompt and answers as usual:
    # the SDK succeeds, and the model never saw the prompt's start.
    chaos(rule("context_length_exceeded"))
    before = flakestorm.injected("context_length_exceeded")
    prompt = "My name is Ada. " * 4 + "What is my name?"
    if streamed:
        parts = list(ollama_client().generate(model=MODEL, prompt=prompt, stream=True))
        assert "".join(p.response or "" for p in parts) == ANSWER and parts[-1].done
    else:
        r = ollama_client().generate(model=MODEL, prompt=prompt, stream=False)
        assert r.response == ANSWER and r.done_reason == "stop"
    assert origins.ollama.only_request().json()["prompt"] == prompt[len(prompt) // 2:]
    assert flakestorm.wait_injected("context_length_exceeded", before + 1) == before + 1
