"""pydantic-ai with Anthropic under `flakestorm contract run` (docs/frameworks.md,
"pydantic-ai"): the recipe is the test.

The agent (agents/pydantic_ai_agent.py) is `Agent("anthropic:claude-sonnet-4-5")` with a
plain tool, configured by ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL (read by the anthropic
SDK underneath). pydantic-ai streams its model calls; its model is the scripted Anthropic
origin of _frameworks.py (Messages API, JSON and event streams).
"""

from __future__ import annotations

import pytest
from _frameworks import (SORRY, ScriptedAnthropic, Stack, assert_cells, cases, exchanges,
                         run_cut_contract, run_small_contract, status)

PROMPTS = ["What was ACME's Q3 revenue?"]


class PydanticAiStack(Stack):
    AGENT = "pydantic_ai_agent.py"

    def __init__(self, tmp):
        super().__init__(tmp)
        self.anthropic = ScriptedAnthropic()

    def close(self):
        super().close()
        self.anthropic.close()

    def agent_env(self, **extra: str) -> dict[str, str]:
        return super().agent_env(ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=self.anthropic.url(), **extra)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_small_contract(PydanticAiStack(tmp_path_factory.mktemp("pydantic-ai")), PROMPTS)


def test_each_cell_is_what_pydantic_ai_did(run):
    want = {
        ("cites-source", "no-chaos"): "pass",
        ("admits-outage", "search-down"): "pass",
        ("searches", "no-chaos"): "pass",
        ("searches", "search-down"): "pass",
        ("searches", "llm-down-429"): "fail",
        ("waits-on-429", "llm-down-429"): "pass",  # the anthropic SDK's attempts, spaced by retry-after
    }
    r = assert_cells(run, want)
    [down] = cases(r, "search-down")
    assert down["answer"] == SORRY, run.why()
    [clean] = cases(r, "no-chaos")
    assert [e["target"]["kind"] for e in clean["exchanges"]] == ["llm", "tool", "llm"], run.why()
    assert clean["exchanges"][0]["target"].get("provider") == "anthropic", clean["exchanges"][0]
    [limited] = cases(r, "llm-down-429")
    assert [status(e) for e in exchanges(limited, "llm")] == [429, 429, 429], run.why()
    assert "ModelRateLimitError: status_code: 429" in limited["error"], limited
    assert (run.code, r["verdict"]) == (0, "pass"), run.why()


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory):
    return run_cut_contract(PydanticAiStack(tmp_path_factory.mktemp("pydantic-ai-cut")), PROMPTS)


def test_a_stream_cut_after_its_first_event_is_taken_as_the_whole_answer(cut_run):
    """pydantic-ai streams from Anthropic and does not notice a stream that ends without
    `message_delta`/`message_stop`: each turn cut after its first content event (the whole
    tool call, then the whole text, in this scripted model) is acted on as complete. Nothing
    raises and the contract passes: a truncated turn would be taken as the answer. A check on
    the answer itself (a `regex`, a `similarity`) is what catches a cut in a pydantic-ai agent."""
    r = assert_cells(cut_run, {("answers", "llm-cut"): "pass", ("searches", "llm-cut"): "pass"})
    [cut] = cases(r, "llm-cut")
    llm = exchanges(cut, "llm")
    assert [(e["fault"]["mode"], e["fault"]["applied"]) for e in llm] == [("stream_cut", True)] * 2, cut_run.why()
    assert [e["target"]["kind"] for e in cut["exchanges"]] == ["llm", "tool", "llm"], cut_run.why()
    assert not cut.get("error") and cut["answer"].startswith("According to web_search"), cut
    assert cut_run.code == 0, cut_run.why()
