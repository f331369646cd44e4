"""The cloud paths of two providers through flakestorm: Azure OpenAI (the openai SDK's
`AzureOpenAI`, `/openai/deployments/{deployment}/chat/completions?api-version=…`) and Vertex AI
(google-genai with `vertexai=True`, `/v1beta1/projects/…/publishers/google/models/…`). Each is
recognised as its provider's traffic on any host, and its faults reach the SDK in the form
the SDK reads from the real cloud service."""

from __future__ import annotations

import openai
import pytest
from google.genai import errors, types

from _conformance import ANSWER, ANSWER_PIECES, Timer

MSG = [{"role": "user", "content": "Tell me a story."}]
DEPLOYMENT = "gpt-4o-prod"


def azure_rule(mode: str, **kw) -> dict:
    return {"provider": "openai", "mode": mode, **kw}


def gemini_rule(mode: str, **kw) -> dict:
    return {"provider": "gemini", "mode": mode, **kw}


# ---------------------------------------------------------------------- Azure OpenAI


def test_azure_baseline_reaches_the_deployment_path(azure_client, origins):
    c = azure_client()
    r = c.chat.completions.create(model=DEPLOYMENT, messages=MSG)
    assert r.choices[0].message.content == ANSWER
    req = origins.openai.requests[-1]
    assert req.path == f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version=2024-10-21"
    assert req.headers["api-key"] == "sk-test-conformance"


def test_azure_rate_limit_retried_honouring_retry_after(azure_client, chaos, origins, flakestorm):
    chaos(azure_rule("rate_limit", retry_after_s=0.3))
    before = flakestorm.injected("rate_limit")
    with Timer() as t, pytest.raises(openai.RateLimitError) as ei:
        azure_client(max_retries=2).chat.completions.create(model=DEPLOYMENT, messages=MSG)
    assert ei.value.status_code == 429
    assert flakestorm.wait_injected("rate_limit", before + 3) == before + 3
    assert 0.6 <= t.elapsed < 1.4  # two waits of retry-after, not the SDK's back-off
    assert origins.openai.count() == 0


def test_azure_content_filter_as_azure_answers(azure_client, chaos, origins):
    chaos(azure_rule("content_filter"))
    c = azure_client()
    r = c.chat.completions.create(model=DEPLOYMENT, messages=MSG)
    choice = r.choices[0]
    assert (choice.finish_reason, choice.message.content) == ("content_filter", None)
    verdicts = choice.model_extra["content_filter_results"]
    assert verdicts["violence"] == {"filtered": True, "severity": "high"}
    text, finishes = "", []
    for chunk in c.chat.completions.create(model=DEPLOYMENT, messages=MSG, stream=True):
        for ch in chunk.choices:
            text += ch.delta.content or ""
            finishes += [ch.finish_reason] if ch.finish_reason else []
    assert (text, finishes) == (ANSWER_PIECES[0], ["content_filter"])
    assert origins.openai.count() == 2


def test_azure_blocked_prompt_is_the_400_azure_sends(azure_client, chaos, origins):
    chaos(azure_rule("content_filter", signal="blocked_prompt"))
    with pytest.raises(openai.BadRequestError) as ei:
        azure_client(max_retries=2).chat.completions.create(model=DEPLOYMENT, messages=MSG)
    assert (ei.value.code, ei.value.param) == ("content_filter", "prompt")
    assert ei.value.body["innererror"]["code"] == "ResponsibleAIPolicyViolation"
    assert origins.openai.count() == 0


def test_azure_stream_cut_is_a_silent_partial(azure_client, chaos):
    chaos(azure_rule("stream_cut", after_events=3))
    text, finishes = "", []
    for chunk in azure_client().chat.completions.create(model=DEPLOYMENT, messages=MSG, stream=True):
        for ch in chunk.choices:
            text += ch.delta.content or ""
            finishes += [ch.finish_reason] if ch.finish_reason else []
    assert finishes == [] and text and ANSWER.startswith(text) and text != ANSWER


# ------------------------------------------------------------------------- Vertex AI


def generate(client):
    # The client is held while it is used: google-genai closes its transport when the
    # Client object is collected.
    return client.models.generate_content(model="gemini-test", contents="Tell me a story.")


def test_vertex_baseline_reaches_the_publisher_model_path(vertex_client, origins):
    r = generate(vertex_client())
    assert r.text == ANSWER
    req = origins.gemini.requests[-1]
    assert req.path == ("/v1beta1/projects/acme-agents/locations/us-central1/publishers/google/"
                        "models/gemini-test:generateContent")
    assert req.headers["authorization"] == "Bearer ya29.conformance"


def test_vertex_rate_limit_is_resource_exhausted(vertex_client, chaos, origins):
    chaos(gemini_rule("rate_limit"))
    with pytest.raises(errors.ClientError) as ei:
        generate(vertex_client())
    assert (ei.value.code, ei.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert origins.gemini.count() == 0


def test_vertex_content_filter_recitation_and_safety(vertex_client, chaos):
    for signal, reason in (("recitation", types.FinishReason.RECITATION),
                           ("filtered", types.FinishReason.SAFETY)):
        chaos(gemini_rule("content_filter", signal=signal))
        r = generate(vertex_client())
        assert r.candidates[0].finish_reason == reason
        assert r.text is None


def test_vertex_stream_cut_has_no_finish_reason(vertex_client, chaos):
    chaos(gemini_rule("stream_cut", after_events=2))
    client = vertex_client()
    chunks = list(client.models.generate_content_stream(model="gemini-test", contents="Tell me a story."))
    finishes = [c.finish_reason for ch in chunks for c in (ch.candidates or []) if c.finish_reason]
    text = "".join(ch.text or "" for ch in chunks)
    assert finishes == [] and text and ANSWER.startswith(text) and text != ANSWER
