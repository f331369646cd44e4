"""What LangGraph + langchain-openai do with each fault: the table in docs/frameworks.md.

The agent's graph (agents/langgraph_agent.py, imported twice: not streaming and
`LLM_STREAMING=1`) runs in this process, configured by the environment only: HTTPS_PROXY
at one `flakestorm serve`, SSL_CERT_FILE at its CA, OPENAI_BASE_URL at the scripted LLM.
Each row installs its rules with `PUT /v1/chaos`, invokes the graph once and checks what
came out (an answer, or the exception the graph raised), how many LLM calls crossed the
proxy (the SDK's attempts) and how many reached the scripted LLM.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from dataclasses import dataclass

import openai
import pytest
from _frameworks import (_FOREIGN_PREFIXES, AGENTS, FACT, SORRY, Flakestorm, ScriptedLLM, ToolAPI, q,
                      runner_env)
from flakestorm_harness import CA_VARS, PROXY_VARS
from langchain_core.tools import ToolException

QUESTION = "What was ACME's Q3 revenue?"
ANSWER = f"According to web_search: {FACT}"


@dataclass
class Row:
    id: str
    rules: dict
    stream: bool = False
    raises: type | None = None
    answer: str | None = None  # the graph's last message, exactly
    finish: str | None = "stop"  # its response_metadata["finish_reason"]
    llm_calls: int | None = None  # LLM calls through the proxy (SDK attempts, all turns)
    origin_calls: int | None = None  # of which reached the scripted LLM
    tool_result: str | None = None  # a substring of the ToolMessage the model got
    min_elapsed_s: float = 0.0
    handle_tool_error: bool = True


def llm(*rules: dict) -> dict:
    return {"llm_faults": list(rules)}


def tool(*rules: dict) -> dict:
    return {"tool_faults": [{"tool": "web_search", **r} for r in rules]}


ROWS = [
    Row("baseline", {}, answer=ANSWER, finish="stop", llm_calls=2, origin_calls=2, tool_result=FACT),
    Row("baseline-stream", {}, stream=True, answer=ANSWER, finish="stop", llm_calls=2, origin_calls=2),
    # The SDK's 2 retries, each after the advertised 0.3 s, then RateLimitError out of the graph.
    Row("rate_limit", llm({"mode": "rate_limit", "retry_after_s": 0.3}), raises=openai.RateLimitError,
        llm_calls=3, origin_calls=0, min_elapsed_s=0.6),
    Row("rate_limit-stream", llm({"mode": "rate_limit", "retry_after_s": 0.3}), stream=True,
        raises=openai.RateLimitError, llm_calls=3, origin_calls=0, min_elapsed_s=0.6),
    # x-should-retry: false: one attempt.
    Row("rate_limit-quota", llm({"mode": "rate_limit", "retry_after_s": 0.3, "quota": True}),
        raises=openai.RateLimitError, llm_calls=1, origin_calls=0),
    Row("server_error", llm({"mode": "server_error"}), raises=openai.InternalServerError, llm_calls=3,
        origin_calls=0),
    Row("timeout-504", llm({"mode": "timeout", "delay_ms": 200}), raises=openai.InternalServerError,
        llm_calls=3, origin_calls=0, min_elapsed_s=0.6),
    # finish_reason "length" raises nothing: the cut text is the graph's answer.
    Row("truncated_response", llm({"mode": "truncated_response", "max_tokens": 4}),
        answer="According to web_search: ACME", finish="length", llm_calls=2, origin_calls=2),
    Row("truncated_response-stream", llm({"mode": "truncated_response", "max_tokens": 4}), stream=True,
        answer="According to web_search: ACME", finish="length", llm_calls=2, origin_calls=2),
    Row("empty", llm({"mode": "empty"}), answer="", finish="stop", llm_calls=2, origin_calls=2),
    # Not an SDK error: a raw JSONDecodeError, not retried.
    Row("garbage", llm({"mode": "garbage"}), raises=json.JSONDecodeError, llm_calls=1, origin_calls=1),
    Row("garbage-stream", llm({"mode": "garbage"}), stream=True, raises=json.JSONDecodeError, llm_calls=1,
        origin_calls=1),
    # A cut non-streamed answer is a dropped connection (the body never ends), as a real one:
    # APIConnectionError after the SDK's 2 retries, each attempt reaching the origin.
    Row("stream_cut-on-json", llm({"mode": "stream_cut", "after_events": 1}), raises=openai.APIConnectionError,
        llm_calls=3, origin_calls=3),
    # A quiet cut: no error. The tool call lost its arguments, ToolNode sent the validation
    # error back as the tool result; the answer was cut too (no finish_reason).
    Row("stream_cut-stream", llm({"mode": "stream_cut", "after_events": 1}), stream=True, answer="Sorry,",
        finish=None, llm_calls=2, origin_calls=2, tool_result="query: Field required"),
    # Non-streamed, the broken call lands in AIMessage.invalid_tool_calls: no tool call, so
    # the graph ends at once with an empty answer.
    Row("tool_call_corruption-invalid_json",
        llm({"mode": "tool_call_corruption", "corruption": "invalid_json"}), answer="", finish="tool_calls",
        llm_calls=1, origin_calls=1, tool_result=""),
    # Streamed, the broken arguments become {} and ToolNode reports the missing field.
    Row("tool_call_corruption-invalid_json-stream",
        llm({"mode": "tool_call_corruption", "corruption": "invalid_json"}), stream=True, answer=SORRY,
        finish="stop", llm_calls=2, origin_calls=2, tool_result="query: Field required"),
    Row("tool_call_corruption-unknown_tool",
        llm({"mode": "tool_call_corruption", "corruption": "unknown_tool"}), answer=SORRY, llm_calls=2,
        origin_calls=2, tool_result="web_search_v2 is not a valid tool"),
    # Tool faults: the tool raises ToolException, LangChain gives its text to the model.
    Row("tool-error-503", tool({"mode": "error", "error_code": 503}), answer=SORRY, llm_calls=2,
        origin_calls=2, tool_result="503 Service Unavailable"),
    Row("tool-timeout-504", tool({"mode": "timeout", "delay_ms": 200}), answer=SORRY, llm_calls=2,
        origin_calls=2, tool_result="504 Gateway Timeout", min_elapsed_s=0.2),
    Row("tool-malformed", tool({"mode": "malformed"}), answer=SORRY, llm_calls=2, origin_calls=2,
        tool_result="web_search failed: Expecting"),
    # Without handle_tool_error the ToolException leaves the graph: LangGraph's ToolNode only
    # turns argument errors into tool results by default.
    Row("tool-error-503-unhandled", tool({"mode": "error", "error_code": 503}), raises=ToolException,
        llm_calls=1, origin_calls=1, handle_tool_error=False),
]


@dataclass
class Served:
    fs: Flakestorm
    llm: ScriptedLLM
    tool: ToolAPI
    agents: dict


def _load_agent(name: str):
    spec = importlib.util.spec_from_file_location(name, AGENTS / "langgraph_agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    llm_origin, tool_origin = ScriptedLLM(), ToolAPI()
    fs = Flakestorm.start(tmp_path_factory.mktemp("serve"), env=runner_env(), extra_config=(
        f"tools:\n  - {{name: web_search, match_url: {q(tool_origin.url() + '/*')}}}\n"
        "advanced: {seed: 7}\n"))
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name in list(os.environ):
                if name.lower() in PROXY_VARS or name.upper() in CA_VARS or name.upper().startswith(_FOREIGN_PREFIXES):
                    mp.delenv(name)
            for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
                mp.setenv(name, fs.proxy_url)
            mp.setenv("SSL_CERT_FILE", str(fs.ca_file))
            mp.setenv("OPENAI_BASE_URL", llm_origin.base_url)
            mp.setenv("OPENAI_API_KEY", "sk-test")
            mp.setenv("TOOL_URL", tool_origin.search_url)
            mp.setenv("LANGSMITH_TRACING", "false")
            agents = {}
            for stream in (False, True):
                mp.setenv("LLM_STREAMING", "1" if stream else "0")
                agents[stream] = _load_agent(f"langgraph_agent_{'stream' if stream else 'json'}")
            yield Served(fs, llm_origin, tool_origin, agents)
    finally:
        fs.control("DELETE", "/v1/chaos")
        fs.stop()
        llm_origin.close()
        tool_origin.close()


def _settled_llm_calls(fs: Flakestorm, at_least: float) -> float:
    """The proxy's LLM call counter (bumped when a response ends, so it may lag a little)."""
    deadline = time.monotonic() + 5
    while (n := fs.llm_calls()) < at_least and time.monotonic() < deadline:
        time.sleep(0.02)
    return n


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_fault(served, row: Row):
    agent = served.agents[row.stream]
    served.fs.chaos(row.rules)
    agent.web_search.handle_tool_error = row.handle_tool_error
    origin_before, calls_before = served.llm.count(), served.fs.llm_calls()
    started = time.monotonic()
    raised, state = None, None
    try:
        state = agent.graph.invoke({"messages": [{"role": "user", "content": QUESTION}]})
    except Exception as e:  # noqa: BLE001 - what the graph raised is the observation
        raised = e
    finally:
        elapsed = time.monotonic() - started
        agent.web_search.handle_tool_error = True
        served.fs.control("DELETE", "/v1/chaos")

    if row.raises is not None:
        assert isinstance(raised, row.raises), f"expected {row.raises.__name__}, got {raised!r}"
    else:
        assert raised is None, f"the graph raised {raised!r}"
        last = state["messages"][-1]
        assert last.content == row.answer, last
        assert last.response_metadata.get("finish_reason") == row.finish, last.response_metadata
        results = [m.content for m in state["messages"] if m.type == "tool"]
        if row.tool_result == "":
            assert results == [], results
        elif row.tool_result is not None:
            assert len(results) == 1 and row.tool_result in results[0], results
    if row.llm_calls is not None:
        calls = _settled_llm_calls(served.fs, calls_before + row.llm_calls) - calls_before
        assert calls == row.llm_calls, f"{calls} LLM calls crossed the proxy"
    if row.origin_calls is not None:
        assert served.llm.count() - origin_before == row.origin_calls
    assert elapsed >= row.min_elapsed_s, elapsed
