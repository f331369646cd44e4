"""LiteLLM under `flakestorm contract run` (docs/frameworks.md, "LiteLLM"): the recipe is
the test, and it shows what flakestorm catches in the stack.

The agent (agents/litellm_agent.py) calls `litellm.completion(model="openai/…",
num_retries=2)` in a tool loop, configured as LiteLLM users configure it
(`LITELLM_LOCAL_MODEL_COST_MAP=True`, without which it fetches its cost map from GitHub at
import). Under a provider that answers 429 every time, the openai SDK underneath makes its
three attempts spaced by `retry-after`; then LiteLLM's own `num_retries` tries twice more
at once, ignoring `retry-after`: the `honors_retry_after` check fails on those, and says
by how much.
"""

from __future__ import annotations

import pytest
from _frameworks import SORRY, Stack, assert_cells, cases, cell, exchanges, cut_case, run_cut_contract, run_small_contract, status

PROMPTS = ["What was ACME's Q3 revenue?"]


class LiteLLMStack(Stack):
    AGENT = "litellm_agent.py"
    AGENT_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_small_contract(LiteLLMStack(tmp_path_factory.mktemp("litellm")), PROMPTS)


def test_litellms_own_retries_ignore_retry_after_and_the_check_says_so(run):
    want = {
        ("cites-source", "no-chaos"): "pass",
        ("admits-outage", "search-down"): "pass",
        ("searches", "no-chaos"): "pass",
        ("searches", "search-down"): "pass",
        ("searches", "llm-down-429"): "fail",
        ("waits-on-429", "llm-down-429"): "fail",  # num_retries ignores retry-after
    }
    r = assert_cells(run, want)
    reason = cell(r, "waits-on-429", "llm-down-429")["reason"]
    assert "retry-after asked for 300 ms" in reason, reason
    [limited] = cases(r, "llm-down-429")
    llm = exchanges(limited, "llm")
    # The openai SDK's 3 attempts, then LiteLLM's 2: all answered 429 by flakestorm.
    assert [status(e) for e in llm] == [429] * 5, run.why()
    assert "RateLimitError" in limited["error"], limited
    [down] = cases(r, "search-down")
    assert down["answer"] == SORRY, run.why()
    # A medium and a high cell failed: 3 of 10 weights lost, 70.0, on the pass mark.
    assert r["score"]["value"] == pytest.approx(70.0), run.why()


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory):
    return run_cut_contract(LiteLLMStack(tmp_path_factory.mktemp("litellm-cut")), PROMPTS)


def test_an_answer_cut_mid_body_is_tried_five_times_and_called_a_server_error(cut_run):
    """The openai SDK's three attempts, then LiteLLM's `num_retries` two more; LiteLLM maps
    the dropped connection to its `InternalServerError`, the name the agent sees."""
    cut = cut_case(cut_run, 5)
    assert "litellm.InternalServerError" in cut["error"] and "Connection error." in cut["error"], cut
