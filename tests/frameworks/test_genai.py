"""google-genai under `flakestorm contract run` (docs/frameworks.md, "google-genai"): the
recipe is the test.

The agent (agents/genai_agent.py) uses the SDK's automatic function calling with a Python
tool, configured as its users configure it (`GEMINI_API_KEY`, the endpoint in
`http_options`). Its model is the scripted Gemini origin of _frameworks.py. The SDK does
not retry by default: under a provider that answers 429, one call, then `ClientError 429
RESOURCE_EXHAUSTED`, and there is no retry for `honors_retry_after` to judge.
"""

from __future__ import annotations

import pytest
from _frameworks import (SORRY, ScriptedGemini, Stack, assert_cells, cases, cell, cut_case, exchanges, run_cut_contract,
                         run_small_contract, status)

PROMPTS = ["What was ACME's Q3 revenue?"]


class GenaiStack(Stack):
    AGENT = "genai_agent.py"

    def __init__(self, tmp):
        super().__init__(tmp)
        self.gemini = ScriptedGemini()

    def close(self):
        super().close()
        self.gemini.close()

    def agent_env(self, **extra: str) -> dict[str, str]:
        return super().agent_env(GEMINI_API_KEY="test-key", GEMINI_BASE_URL=self.gemini.url(), **extra)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_small_contract(GenaiStack(tmp_path_factory.mktemp("genai")), PROMPTS)


def test_each_cell_is_what_google_genai_did(run):
    want = {
        ("cites-source", "no-chaos"): "pass",
        ("admits-outage", "search-down"): "pass",  # automatic function calling reports the error
        ("searches", "no-chaos"): "pass",
        ("searches", "search-down"): "pass",
        ("searches", "llm-down-429"): "fail",
        # Gemini's 429 asks its delay in the body (RetryInfo), and the SDK never retried.
        ("waits-on-429", "llm-down-429"): "not_applicable",
    }
    r = assert_cells(run, want)
    reason = cell(r, "waits-on-429", "llm-down-429")["reason"]
    assert reason.startswith("1 rate-limited call(s), none with a delay in `retry-after`"), reason
    [down] = cases(r, "search-down")
    assert down["answer"] == SORRY, run.why()
    [clean] = cases(r, "no-chaos")
    assert [e["target"]["kind"] for e in clean["exchanges"]] == ["llm", "tool", "llm"], run.why()
    assert clean["exchanges"][0]["target"].get("provider") == "gemini", clean["exchanges"][0]
    [limited] = cases(r, "llm-down-429")
    assert [status(e) for e in exchanges(limited, "llm")] == [429], "google-genai does not retry"
    assert "429 RESOURCE_EXHAUSTED" in limited["error"], limited


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory):
    return run_cut_contract(GenaiStack(tmp_path_factory.mktemp("genai-cut")), PROMPTS)


def test_an_answer_cut_mid_body_ends_the_agent_at_once(cut_run):
    """google-genai neither retries a dropped connection nor wraps it in its own errors:
    httpx's `RemoteProtocolError` reaches the agent after one attempt."""
    cut = cut_case(cut_run, 1)
    assert "RemoteProtocolError: peer closed connection" in cut["error"], cut
