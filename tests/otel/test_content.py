"""`telemetry.otlp.content: true`: what an LLM call said, as the GenAI conventions spell it
(`gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`, JSON
text), read from each real SDK's request and from the answer it got, streamed or not, and
never the bodies themselves or the key the SDK sent."""

from __future__ import annotations

import json

import pytest
import conformance_conftest as conformance  # loaded by this suite's conftest
from flakestorm_harness import clean_env
from otlp_receiver import GrpcReceiver, telemetry_config

PROMPT = "Tell me a story."


@pytest.fixture(scope="module")
def receiver():
    r = GrpcReceiver()
    yield r
    r.close()


@pytest.fixture(scope="module")
def flakestorm(tmp_path_factory, receiver):
    """This module's own daemon: spans with content."""
    fs = conformance.Flakestorm.start(
        tmp_path_factory.mktemp("flakestorm-otel-content"), env=clean_env(),
        extra_config=telemetry_config(receiver, "    content: true\n"))
    yield fs
    fs.stop()


def said(receiver, model: str, count: int):
    spans = receiver.wait(lambda s: s.attributes.get("gen_ai.request.model") == model, count)
    assert len(spans) == count, spans
    for s in spans:
        a = s.attributes
        assert "flakestorm.request.body" not in a and "flakestorm.response.body" not in a, a
        assert conformance.API_KEY not in json.dumps(a), "the SDK's key is not on the span"
    return [{k: json.loads(v) for k, v in s.attributes.items()
             if k in ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages")}
            for s in spans]


def answer(text: str, finish: str) -> list:
    return [{"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": finish}]


def test_openai_chat_whole_and_streamed(openai_client, receiver):
    c = openai_client()
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]
    whole = c.chat.completions.create(model="gpt-said", messages=msgs).choices[0].message.content
    streamed = "".join(ch.choices[0].delta.content or "" for ch in c.chat.completions.create(
        model="gpt-said", messages=msgs, stream=True) if ch.choices)
    want_in = [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
               {"role": "user", "parts": [{"type": "text", "content": PROMPT}]}]
    got = said(receiver, "gpt-said", 2)
    assert got[0] == {"gen_ai.input.messages": want_in, "gen_ai.output.messages": answer(whole, "stop")}
    assert got[1] == {"gen_ai.input.messages": want_in, "gen_ai.output.messages": answer(streamed, "stop")}


def test_anthropic_system_and_a_stream(anthropic_client, receiver):
    c = anthropic_client()
    with c.messages.stream(model="claude-said", max_tokens=64, system="Be brief.",
                           messages=[{"role": "user", "content": PROMPT}]) as s:
        text = s.get_final_text()
    (got,) = said(receiver, "claude-said", 1)
    assert got == {
        "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
        "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": PROMPT}]}],
        "gen_ai.output.messages": answer(text, "end_turn"),
    }


def test_gemini_stream(genai_client, receiver):
    c = genai_client()
    text = "".join(ch.text or "" for ch in c.models.generate_content_stream(model="gemini-said", contents=PROMPT))
    (got,) = said(receiver, "gemini-said", 1)
    assert got["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text", "content": PROMPT}]}]
    assert got["gen_ai.output.messages"] == answer(text, "STOP")
