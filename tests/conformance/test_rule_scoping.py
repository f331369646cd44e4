"""Rule scoping through the control API, seen by real SDKs: `provider`, `match_url`, 422."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from _conformance import ANSWER

MSG = [{"role": "user", "content": "Tell me a story."}]


def test_provider_narrows_rule(openai_client, anthropic_client, chaos, origins):
    chaos({"provider": "anthropic", "mode": "context_length_exceeded"})
    r = openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].message.content == ANSWER
    with pytest.raises(anthropic.BadRequestError):
        anthropic_client().messages.create(model="claude-test", max_tokens=10, messages=MSG)
    assert (origins.openai.count(), origins.anthropic.count()) == (1, 0)


def test_match_url_narrows_rule(openai_client, chaos, origins):
    # Glob on the full URL: only this origin's port is faulted.
    chaos({"mode": "context_length_exceeded", "match_url": f"https://localhost:{origins.openai.port}/*"})
    with pytest.raises(openai.BadRequestError):
        openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    chaos({"mode": "context_length_exceeded", "match_url": "https://api.example.invalid/*"})
    r = openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].message.content == ANSWER
    assert origins.openai.count() == 1


def test_invalid_rule_is_422_and_keeps_previous_rules(openai_client, chaos, flakestorm, origins):
    chaos({"provider": "openai", "mode": "context_length_exceeded"})
    status, body = flakestorm.control("PUT", "/v1/chaos", {"llm_faults": [{"mode": "no_such_mode"}]})
    assert status == 422, body
    errs = json.loads(body)["error"]["errors"]
    assert errs and all({"path", "message"} <= set(e) for e in errs)
    # The rejected PUT did not replace the active rules.
    with pytest.raises(openai.BadRequestError):
        openai_client().chat.completions.create(model="gpt-test", messages=MSG)


def test_delete_clears_rules(openai_client, chaos, flakestorm, origins):
    chaos({"provider": "openai", "mode": "context_length_exceeded"})
    status, _ = flakestorm.control("DELETE", "/v1/chaos")
    assert status in (200, 204)
    r = openai_client().chat.completions.create(model="gpt-test", messages=MSG)
    assert r.choices[0].message.content == ANSWER


def test_after_calls_lets_first_calls_through(openai_client, chaos, origins, flakestorm):
    chaos({"provider": "openai", "mode": "context_length_exceeded", "after_calls": 2})
    c = openai_client()
    for _ in range(2):
        assert c.chat.completions.create(model="gpt-test", messages=MSG).choices[0].message.content == ANSWER
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert origins.openai.count() == 2
