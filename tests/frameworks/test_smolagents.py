"""smolagents under `flakestorm contract run` (docs/frameworks.md, "smolagents"): the
recipe is the test.

The agent (agents/smolagents_agent.py) is a `ToolCallingAgent` on `OpenAIServerModel`,
configured as its users configure it, with `retry=False` on the model: smolagents' own
rate-limit retry waits 60 s and more, ignoring `retry-after`, past any agent timeout. Its
model is the scripted origin, answering as a tool-calling model does for smolagents: a
`web_search` call for the question, then `final_answer` with what the observation said.
"""

from __future__ import annotations

import json

import pytest
from _frameworks import (FACT, SORRY, ScriptedLLM, Stack, assert_cells, cases, exchanges,
                         cut_case, run_cut_contract, run_small_contract, status)

PROMPTS = ["What was ACME's Q3 revenue?"]


def _text(content) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def tool_calling(req: dict) -> dict:
    """smolagents' tool-calling model: it must always call a tool. Once it has called one,
    the observation (the result, sent back as a user message, or the tool's error, which
    smolagents appends to the task's message) leads to `final_answer`, citing the result or
    admitting the outage."""
    messages = req.get("messages") or []
    called = any(m.get("role") == "assistant" for m in messages)
    seen = " ".join(_text(m.get("content")) for m in messages[1:] if m.get("role") == "user")

    def call(name: str, args: dict) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{len(messages)}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]}

    if called or "Error executing tool" in seen:
        said = f"According to web_search: {FACT}" if FACT in seen else SORRY
        return call("final_answer", {"answer": said})
    return call("web_search", {"query": _text(messages[-1].get("content")) if messages else ""})


class SmolagentsStack(Stack):
    AGENT = "smolagents_agent.py"

    def __init__(self, tmp):
        super().__init__(tmp)
        self.llm.close()
        self.llm = ScriptedLLM(tool_calling)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_small_contract(SmolagentsStack(tmp_path_factory.mktemp("smolagents")), PROMPTS)


def test_each_cell_is_what_smolagents_did(run):
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
    [limited] = cases(r, "llm-down-429")
    # The openai SDK's three attempts and no more: smolagents' own 60 s retry is off.
    assert [status(e) for e in exchanges(limited, "llm")] == [429, 429, 429], run.why()
    assert "AgentGenerationError" in limited["error"], limited
    assert (run.code, r["verdict"]) == (0, "pass"), run.why()


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory):
    return run_cut_contract(SmolagentsStack(tmp_path_factory.mktemp("smolagents-cut")), PROMPTS)


def test_an_answer_cut_mid_body_is_retried_then_an_agent_generation_error(cut_run):
    """With `retry=False` on the model, only the openai SDK's three attempts; then
    smolagents raises `AgentGenerationError` naming the connection error."""
    cut = cut_case(cut_run, 3)
    assert "AgentGenerationError" in cut["error"] and "Connection error." in cut["error"], cut
