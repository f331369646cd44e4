"""The OpenAI Agents SDK under `flakestorm contract run` (docs/frameworks.md, "OpenAI
Agents SDK"): the recipe is the test.

The agent (agents/openai_agents_agent.py) is configured as its users configure it: the
SDK's default client from OPENAI_BASE_URL and OPENAI_API_KEY, tracing uploads off
(OPENAI_AGENTS_DISABLE_TRACING=1, without which every run also tries the real API), the
Chat Completions API. flakestorm starts it with `agent.command`; its LLM and tool are the
scripted HTTPS origins of _frameworks.py, whose test CA only flakestorm trusts.
"""

from __future__ import annotations

import pytest
from _frameworks import SORRY, Stack, assert_cells, cases, exchanges, cut_case, run_cut_contract, run_small_contract, status

PROMPTS = ["What was ACME's Q3 revenue?"]


class AgentsSdkStack(Stack):
    AGENT = "openai_agents_agent.py"
    AGENT_ENV = {"OPENAI_AGENTS_DISABLE_TRACING": "1"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_small_contract(AgentsSdkStack(tmp_path_factory.mktemp("agents-sdk")), PROMPTS)


def test_each_cell_is_what_the_agents_sdk_did(run):
    want = {
        ("cites-source", "no-chaos"): "pass",
        ("admits-outage", "search-down"): "pass",  # the tool's error handed to the model
        ("searches", "no-chaos"): "pass",
        ("searches", "search-down"): "pass",
        ("searches", "llm-down-429"): "fail",  # the model never answered
        ("waits-on-429", "llm-down-429"): "pass",  # the openai SDK's attempts, spaced by retry-after
    }
    r = assert_cells(run, want)
    [down] = cases(r, "search-down")
    assert down["answer"] == SORRY, run.why()
    assert (run.code, r["verdict"]) == (0, "pass"), run.why()


def test_every_call_of_the_agents_sdk_crossed_the_proxy(run):
    r = run.report
    assert r is not None, run.why()
    [clean] = cases(r, "no-chaos")
    assert clean["answer"].startswith("According to web_search"), run.why()
    assert [status(e) for e in exchanges(clean, "llm")] == [200, 200], run.why()
    assert [status(e) for e in exchanges(clean, "tool")] == [200], run.why()
    [limited] = cases(r, "llm-down-429")
    assert [status(e) for e in exchanges(limited, "llm")] == [429, 429, 429], run.why()
    assert "RateLimitError" in limited["error"], limited
    # No trace upload tried to leave (it would show as an exchange to api.openai.com).
    hosts = {e["request"]["url"].split("/")[2] for c in r["cases"] for e in c["exchanges"] or []}
    assert not any("openai.com" in h for h in hosts), hosts


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory):
    return run_cut_contract(AgentsSdkStack(tmp_path_factory.mktemp("agents-sdk-cut")), PROMPTS)


def test_an_answer_cut_mid_body_is_retried_then_ends_the_run(cut_run):
    """A connection dropped mid-answer: the openai SDK under the Agents SDK tries three
    times (as for a 5xx), then `Runner.run` raises `APIConnectionError`."""
    cut = cut_case(cut_run, 3)
    assert "APIConnectionError: Connection error." in cut["error"], cut
