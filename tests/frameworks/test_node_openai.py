"""A Node agent on the `openai` npm SDK under `flakestorm contract run` (docs/frameworks.md,
"Node.js agents"): the recipe is the test.

The agent (node/agent.mjs) is written as a Node user writes one: the SDK configured by
OPENAI_BASE_URL and OPENAI_API_KEY, `fetch` for its tool, and, because Node 20's `fetch`
ignores HTTPS_PROXY, undici's EnvHttpProxyAgent as the global dispatcher. flakestorm
starts it with `agent.command` (which sets the proxy variables, NODE_USE_ENV_PROXY and
NODE_EXTRA_CA_CERTS). Its LLM and tool are the scripted HTTPS origins of _frameworks.py,
whose test CA only flakestorm trusts: every answer the agent got crossed the proxy.

Checked: each cell's verdict under a tool outage and a provider that answers 429 every
time (the SDK's own three attempts, spaced by `retry-after`, are what is judged), and the
exchanges each case made.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from _frameworks import SMALL_CONTRACT, SORRY, Stack, assert_cells, cases, cell, exchanges, status

NODE_DIR = Path(__file__).resolve().parent / "node"
PROMPTS = ["What was ACME's Q3 revenue?"]



class NodeStack(Stack):
    def agent_command(self, prefix: str = "") -> str:
        return f"{prefix}cd {shlex.quote(str(NODE_DIR))} && exec node agent.mjs {self.agent_port}"


def _run(tmp: Path, contract: str, **env: str):
    if shutil.which("node") is None or not (NODE_DIR / "node_modules" / "undici").is_dir():
        pytest.fail("node and tests/frameworks/node's packages are needed (scripts/test.sh runs "
                    "`npm ci --prefix tests/frameworks/node`)", pytrace=False)
    stack = NodeStack(tmp)
    try:
        return stack.run_contract(stack.config(contract, PROMPTS, **env))
    finally:
        stack.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("node"), SMALL_CONTRACT)


STREAM_CONTRACT = """\
contract:
  name: Node research agent, streaming
  invariants:
    - {id: searches, type: tool_called, tool: web_search}
    - {id: answers, type: contains, value: "According to", severity: critical}
  chaos_matrix:
    - name: no-chaos
    - name: llm-stream-cut
      llm_faults: [{mode: stream_cut, after_events: 2}]
"""


def test_a_quiet_stream_cut_gives_the_node_sdk_half_a_tool_call(tmp_path):
    """`stream_cut` (quiet) on the agent's streamed first turn: the SDK raises nothing and
    ends the stream; the tool call's arguments are cut in half, the agent's JSON.parse
    throws, the agent answers 500, and the critical `answers` fails the run (exit 1)."""
    run = _run(tmp_path, STREAM_CONTRACT, LLM_STREAMING="1")
    r = run.report
    assert r is not None, run.why()
    [clean] = cases(r, "no-chaos")
    assert clean["answer"].startswith("According to web_search"), run.why()
    [cut] = cases(r, "llm-stream-cut")
    [llm] = exchanges(cut, "llm")
    assert llm["fault"]["applied"] and status(llm) == 200, llm
    assert "SyntaxError" in cut["error"], cut
    assert cell(r, "answers", "llm-stream-cut")["verdict"] == "fail", run.why()
    assert (run.code, r["verdict"]) == (1, "fail"), run.why()


def test_each_cell_is_what_the_node_sdk_did(run):
    want = {
        ("cites-source", "no-chaos"): "pass",
        ("admits-outage", "search-down"): "pass",
        ("searches", "no-chaos"): "pass",
        ("searches", "search-down"): "pass",
        ("searches", "llm-down-429"): "fail",  # the model never answered
        ("waits-on-429", "llm-down-429"): "pass",  # the SDK's attempts, spaced by retry-after
    }
    r = assert_cells(run, want)
    [down] = cases(r, "search-down")
    assert down["answer"] == SORRY, run.why()


def test_every_call_of_the_node_agent_crossed_the_proxy(run):
    r = run.report
    assert r is not None, run.why()
    [clean] = cases(r, "no-chaos")
    assert clean["answer"].startswith("According to web_search"), run.why()
    # Its two LLM turns and its tool call, through undici's tunnel, answered by the origins.
    assert [status(e) for e in exchanges(clean, "llm")] == [200, 200], run.why()
    assert [status(e) for e in exchanges(clean, "tool")] == [200], run.why()
    [limited] = cases(r, "llm-down-429")
    # openai-node's default: 2 retries, so 3 attempts, each answered 429 by flakestorm.
    assert [status(e) for e in exchanges(limited, "llm")] == [429, 429, 429], run.why()
    # The SDK then raised the real provider's error, which the agent answered 500 with.
    assert limited["answer"] is None, limited
    assert "RateLimitError: 429 Rate limit reached" in limited["error"], limited
    # A pass: the critical cell passed and the score is over the mark.
    assert (run.code, r["verdict"]) == (0, "pass"), run.why()
