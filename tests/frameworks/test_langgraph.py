"""LangGraph + langchain-openai under `flakestorm contract run`.

flakestorm starts the agent (agents/langgraph_agent.py) with `agent.command`, which gives
it HTTPS_PROXY and SSL_CERT_FILE; the agent only knows OPENAI_BASE_URL, OPENAI_API_KEY and
TOOL_URL (`agent.env`). Its LLM is the scripted origin in _frameworks.py, over HTTPS with a certificate of
the test CA, which only flakestorm trusts (`proxy.upstream_ca_file`): every answer the
agent gets went through flakestorm's interception.

Three runs, one fixture each: the research contract (five scenarios, two prompts, the
model not streaming), the same agent streaming, and the agent started so that its
traffic bypasses the proxy.

Besides what the agent did with each fault, the runs check the verdict itself: an agent
that answered 5xx is judged on that answer (never invoked again), the report's coverage
counts what each rule matched and fired, and a run whose traffic never crossed the proxy
is not tested (exit 2), not a pass.
"""

from __future__ import annotations

import json
import re

import pytest
from _frameworks import (FACT, SORRY, TEST_CA, Stack, cases, cell, exchanges, header, origin_seq,
                         sdk_retry_count, status)

PROMPTS = ["What was ACME's Q3 revenue?", "Find ACME's Q3 revenue and cite your source."]
ANSWER = f"According to web_search: {FACT}"
RETRY_AFTER_MS = 300

INVARIANTS = """\
  invariants:
    - {id: cites-source, type: regex, pattern: "(?i)according to", severity: critical, when: no_chaos}
    - {id: admits-outage, type: contains_any, values: [unavailable, sorry], severity: high, when: tool_faults_active}
    - {id: searches, type: tool_called, tool: web_search}
    - {id: waits-on-429, type: honors_retry_after, severity: high, when: llm_faults_active}
    # Two LLM turns (ask for the tool, answer from it) x the SDK's 3 attempts each.
    - {id: no-retry-storm, type: max_llm_calls, max: 6, severity: low}
    - {id: states-figure, type: contains, value: "$4.1B", severity: %(figure_severity)s, when: llm_faults_active}
"""

# `rate-limit-once` at probability 0.5 under seed 3 (each case draws from its own stream:
# the seed, the scenario, the prompt) fires on each case's first LLM attempt and on neither
# of its next two (the test checks that it did).
RESEARCH_CONTRACT = "contract:\n  name: LangGraph research agent\n" + INVARIANTS % {"figure_severity": "medium"} + """\
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{tool: web_search, mode: error, error_code: 503}]
    - name: llm-rate-limited
      llm_faults: [{id: rate-limit-once, mode: rate_limit, retry_after_s: 0.3, probability: 0.5}]
    - name: llm-down-429
      llm_faults: [{id: rate-limit-always, mode: rate_limit, retry_after_s: 0.3}]
    - name: llm-truncated
      llm_faults: [{mode: truncated_response, max_tokens: 4}]
"""

SCENARIOS = ["no-chaos", "search-down", "llm-rate-limited", "llm-down-429", "llm-truncated"]
NA = "not_applicable"

# Every cell of the research run.
VERDICTS = {
    ("cites-source", "no-chaos"): "pass",
    **{("cites-source", s): NA for s in SCENARIOS[1:]},
    ("admits-outage", "search-down"): "pass",
    **{("admits-outage", s): NA for s in SCENARIOS if s != "search-down"},
    ("searches", "no-chaos"): "pass",
    ("searches", "search-down"): "pass",  # the model asked for it; the call met the fault
    ("searches", "llm-rate-limited"): "pass",
    ("searches", "llm-down-429"): "fail",  # the model never answered
    ("searches", "llm-truncated"): "pass",
    ("waits-on-429", "no-chaos"): NA,
    ("waits-on-429", "search-down"): NA,
    ("waits-on-429", "llm-rate-limited"): "pass",
    ("waits-on-429", "llm-truncated"): NA,  # no 429 in that scenario
    ("waits-on-429", "llm-down-429"): "pass",  # the SDK's 3 attempts, spaced by retry-after
    ("no-retry-storm", "no-chaos"): "pass",
    ("no-retry-storm", "search-down"): "pass",
    ("no-retry-storm", "llm-rate-limited"): "pass",
    ("no-retry-storm", "llm-truncated"): "pass",
    ("no-retry-storm", "llm-down-429"): "pass",  # 3 calls: one invocation, the SDK's retries
    ("states-figure", "no-chaos"): NA,
    ("states-figure", "search-down"): NA,
    ("states-figure", "llm-rate-limited"): "pass",
    ("states-figure", "llm-down-429"): "fail",  # HTTP 500, no answer
    ("states-figure", "llm-truncated"): "fail",  # the answer was cut before the figure
}


@pytest.fixture(scope="module")
def research(tmp_path_factory):
    """The research contract, run once for the module."""
    stack = Stack(tmp_path_factory.mktemp("research"))
    run = stack.run_contract(stack.config(RESEARCH_CONTRACT, PROMPTS))
    yield stack, run
    stack.close()


def proxy_port(run) -> int:
    m = re.search(r"proxy on 127\.0\.0\.1:(\d+)", run.stderr)
    assert m, run.why()
    return int(m.group(1))


def report_of(run) -> dict:
    assert run.report is not None, f"no report written\n{run.why()}"
    return run.report


# ------------------------------------------------------------------- research run


def test_research_run_judges_every_scenario(research):
    stack, run = research
    report = report_of(run)
    # No critical cell fails (the agent cites its source without chaos), so the run passes.
    assert run.code == 0, run.why()
    assert report["schema"] == "flakestorm.contract/2"
    assert report["scenarios"] == SCENARIOS
    assert report["agent_calls"] == len(SCENARIOS) * len(PROMPTS)
    assert [(c["scenario"], c["prompt"]) for c in report["cases"]] == [(s, p) for s in SCENARIOS for p in PROMPTS]
    got = {(c["invariant"], c["scenario"]): c["verdict"] for c in report["cells"]}
    assert len(got) == 6 * len(SCENARIOS), sorted(got)
    wrong = {k: (got.get(k), want) for k, want in VERDICTS.items() if got.get(k) != want}
    assert not wrong, f"cells (got, want): {wrong}\n{run.why()}"
    for c in report["cells"]:
        if c["verdict"] == "fail":
            assert c["reason"], c


def test_no_chaos_the_agent_searches_and_cites(research):
    stack, run = research
    for case in cases(report_of(run), "no-chaos"):
        assert case["answer"] == ANSWER, case
        assert case["faults"] == []
        kinds = [e["target"]["kind"] for e in sorted(case["exchanges"], key=lambda e: e["id"])]
        assert kinds == ["llm", "tool", "llm"], kinds
        llm = exchanges(case, "llm")
        # The proxy read the tool call from the model's answer; both turns were first tries.
        assert llm[0].get("llm_tool_calls") == ["web_search"]
        assert [sdk_retry_count(e) for e in llm] == [0, 0]
        assert all(origin_seq(e) is not None for e in case["exchanges"]), "every call reached its origin"


def test_search_down_the_tool_error_reaches_the_model(research):
    stack, run = research
    for case in cases(report_of(run), "search-down"):
        assert case["answer"] == SORRY, case
        assert {"rule": "tool_faults[0]", "mode": "error", "applied": True} in case["faults"], case["faults"]
        tool = exchanges(case, "tool")
        assert len(tool) == 1, tool
        assert status(tool[0]) == 503
        assert tool[0]["fault"]["mode"] == "error"
        assert origin_seq(tool[0]) is None, "flakestorm answered: the tool API never saw the call"
        # The tool raised ToolException, LangChain gave its text to the model as the tool
        # result, and the model (its second request, which reached the origin) read the 503.
        llm = exchanges(case, "llm")
        assert len(llm) == 2 and all(status(e) == 200 for e in llm)
        second = stack.llm.snapshot()[origin_seq(llm[1]) - 1].json()
        tool_msg = second["messages"][-1]
        assert tool_msg["role"] == "tool", second["messages"]
        assert "web_search failed" in tool_msg["content"] and "503" in tool_msg["content"], tool_msg


def test_rate_limited_the_sdk_retries_after_retry_after(research):
    stack, run = research
    report = report_of(run)
    for case in cases(report, "llm-rate-limited"):
        assert case["answer"] == ANSWER, case
        llm = exchanges(case, "llm")
        # The SDK's first attempt met the 429; its own retry (x-stainless-retry-count 1)
        # got the tool call; the second turn went through at the first try.
        assert [status(e) for e in llm] == [429, 200, 200], [status(e) for e in llm]
        assert [sdk_retry_count(e) for e in llm] == [0, 1, 0]
        assert llm[0]["fault"] == {"rule": "rate-limit-once", "mode": "rate_limit", "applied": True}
        assert header(llm[0], "retry-after-ms") == str(RETRY_AFTER_MS)
        # The scripted LLM received exactly the attempts that were not rate-limited.
        assert [origin_seq(e) is not None for e in llm] == [False, True, True]
        waited = llm[1]["timings"]["started_at_ms"] - (llm[0]["timings"]["started_at_ms"] + llm[0]["timings"]["total_ms"])
        assert waited >= RETRY_AFTER_MS - 1, f"the SDK retried {waited:.0f} ms after the 429"  # started_at_ms is whole ms
        assert waited < RETRY_AFTER_MS + 1500, waited
    assert cell(report, "waits-on-429", "llm-rate-limited")["verdict"] == "pass"


def test_llm_down_the_sdk_gives_up_after_its_retries(research):
    stack, run = research
    for case in cases(report_of(run), "llm-down-429"):
        # Every attempt is rate-limited: after its 2 retries the SDK raises RateLimitError,
        # LangGraph lets it out, and the agent answers HTTP 500.
        assert case["answer"] is None, case
        assert "500" in case["error"] and "RateLimitError" in case["error"], case["error"]
        llm = exchanges(case, "llm")
        # One agent invocation, one SDK call: its 3 attempts.
        assert case["attempts"] == 1, case
        assert [sdk_retry_count(e) for e in llm] == [0, 1, 2], [sdk_retry_count(e) for e in llm]
        assert all(status(e) == 429 and origin_seq(e) is None for e in llm), "no attempt reached the LLM"
        assert exchanges(case, "tool") == []
        for before, retry in zip(llm, llm[1:]):
            waited = retry["timings"]["started_at_ms"] - (before["timings"]["started_at_ms"] + before["timings"]["total_ms"])
            assert waited >= RETRY_AFTER_MS - 1, f"the SDK retried {waited:.0f} ms after the 429"
    reason = cell(report_of(run), "searches", "llm-down-429")["reason"]
    assert "never called" in reason, reason


def test_truncated_the_agent_returns_the_cut_answer(research):
    stack, run = research
    report = report_of(run)
    for case in cases(report, "llm-truncated"):
        # finish_reason "length" raises nothing in ChatOpenAI.invoke: the graph ends with
        # the cut text as its answer (4 tokens of it).
        assert case["answer"] == "According to web_search: ACME", case
        llm = exchanges(case, "llm")
        assert len(llm) == 2
        # The tool-call turn has no text to cut: skipped, and said so.
        assert llm[0]["fault"]["mode"] == "truncated_response" and llm[0]["fault"]["applied"] is False, llm[0]["fault"]
        assert llm[0]["fault"].get("note"), llm[0]["fault"]
        assert llm[1]["fault"] == {"rule": "llm_faults[0]", "mode": "truncated_response", "applied": True}
    assert "does not contain" in cell(report, "states-figure", "llm-truncated")["reason"]


def test_every_origin_request_crossed_the_proxy(research):
    """Each origin request is answered through exactly one exchange of the report, and the
    agent called nothing else (no LangSmith upload, no other host)."""
    stack, run = research
    report = report_of(run)
    all_exchanges = [e for c in report["cases"] for e in c["exchanges"]]
    for origin, kind in ((stack.llm, "llm"), (stack.tool, "tool")):
        seqs = [origin_seq(e) for e in all_exchanges if e["target"]["kind"] == kind and origin_seq(e) is not None]
        assert sorted(seqs) == list(range(1, origin.count() + 1)), (kind, sorted(seqs), origin.count())
    # The agent process opened connections to the proxy only, and looked up no name
    # (netaudit/sitecustomize.py logs both from inside it).
    proxy = proxy_port(run)
    audit = stack.netaudit()
    assert audit, "the network audit hook recorded nothing"
    assert {tuple(a["addr"]) for a in audit if a["event"] == "connect"} == {("127.0.0.1", proxy)}, audit
    assert {a["host"] for a in audit if a["event"] == "getaddrinfo"} <= {"127.0.0.1"}, audit
    urls = {e["request"]["url"].split("?")[0] for e in all_exchanges}
    assert urls == {f"{stack.llm.base_url}/chat/completions", stack.tool.search_url}, urls
    assert all(e["route"] == "intercepted" for e in all_exchanges)
    assert all(e["target"]["kind"] in ("llm", "tool") for e in all_exchanges)


# ------------------------------------------------------------------ the verdict


def assert_verdict_fields(report: dict):
    """The verdict fields of `flakestorm.contract/2`, well-formed."""
    assert report.get("verdict") in ("pass", "fail", "not_tested", "error"), report.get("verdict")
    reasons = report.get("verdict_reasons")
    assert isinstance(reasons, list) and all(isinstance(r, str) for r in reasons), reasons
    assert isinstance(report.get("min_score"), (int, float)) and not isinstance(report.get("min_score"), bool)
    coverage = report.get("coverage")
    assert isinstance(coverage, list), coverage
    assert [c["scenario"] for c in coverage] == report["scenarios"], coverage
    for c in coverage:
        for key in ("exchanges", "cases", "judged"):
            assert isinstance(c[key], int) and c[key] >= 0, (key, c)
        assert c["not_tested"] is None or isinstance(c["not_tested"], str), c
        for rule in c["rules"]:
            assert isinstance(rule["rule"], str) and isinstance(rule["mode"], str) and isinstance(rule["kind"], str), rule
            assert isinstance(rule["matched"], int) and isinstance(rule["fired"], int), rule
            assert 0 <= rule["fired"] <= rule["matched"], rule
    for case in report["cases"]:
        assert "not_judged" in case and (case["not_judged"] is None or isinstance(case["not_judged"], str)), case
        # Omitted when empty (docs/report-schema.md); attempts counts them.
        assert len(case.get("earlier_attempts", [])) == case["attempts"] - 1, case
    for c in report["cells"]:
        assert c["verdict"] in ("pass", "fail", "not_applicable", "not_tested"), c


def coverage_of(report: dict, scenario: str) -> dict:
    hits = [c for c in report["coverage"] if c["scenario"] == scenario]
    assert len(hits) == 1, report["coverage"]
    return hits[0]


def test_agent_is_invoked_once_per_case(research):
    """An agent that answers 500 has answered: flakestorm does not invoke it again
    (`advanced.retries` is only for an agent it could not reach)."""
    stack, run = research
    report = report_of(run)
    reinvoked = {(c["scenario"], c["prompt"]): c["attempts"] for c in report["cases"] if c["attempts"] != 1}
    assert reinvoked == {}, reinvoked
    for case in report["cases"]:
        assert not case.get("earlier_attempts"), case.get("earlier_attempts")


def test_llm_down_429_is_judged_on_the_sdks_own_retries(research):
    """With one invocation per case, the LLM calls under llm-down-429 are the SDK's 3
    attempts, spaced by retry-after: both traffic checks pass. (Were flakestorm to invoke
    the agent again after its 500, its re-invocations, 100-200 ms later, would count as the
    agent's: 9 calls, and a call sooner than retry-after.)"""
    stack, run = research
    report = report_of(run)
    for case in cases(report, "llm-down-429"):
        assert [sdk_retry_count(e) for e in exchanges(case, "llm")] == [0, 1, 2]
    for inv in ("waits-on-429", "no-retry-storm"):
        c = cell(report, inv, "llm-down-429")
        assert c["verdict"] == "pass", c


def test_research_report_fields(research):
    stack, run = research
    report = report_of(run)
    assert_verdict_fields(report)
    assert report["verdict"] == "pass", (report["verdict"], report["verdict_reasons"])
    for scenario in SCENARIOS:
        cov = coverage_of(report, scenario)
        assert (cov["cases"], cov["judged"], cov["not_tested"]) == (2, 2, None), cov
    assert coverage_of(report, "no-chaos")["rules"] == []
    exchanges_per_scenario = {"no-chaos": 6, "search-down": 6, "llm-rate-limited": 8, "llm-down-429": 6,
                              "llm-truncated": 6}
    for scenario, n in exchanges_per_scenario.items():
        assert coverage_of(report, scenario)["exchanges"] == n, coverage_of(report, scenario)

    def rule(scenario):
        rules = coverage_of(report, scenario)["rules"]
        assert len(rules) == 1, rules
        return rules[0]

    down = rule("search-down")
    assert (down["rule"], down["mode"], down["matched"], down["fired"]) == ("tool_faults[0]", "error", 2, 2), down
    once = rule("llm-rate-limited")
    assert (once["rule"], once["mode"], once["matched"], once["fired"]) == ("rate-limit-once", "rate_limit", 6, 2), once
    always = rule("llm-down-429")
    assert (always["rule"], always["mode"], always["matched"], always["fired"]) == ("rate-limit-always", "rate_limit", 6, 6)
    cut = rule("llm-truncated")
    # 4 LLM calls matched; the 2 tool-call turns had no text to cut (skipped, applied: false).
    assert (cut["rule"], cut["mode"], cut["matched"]) == ("llm_faults[0]", "truncated_response", 4), cut
    assert cut["fired"] in (2, 4), cut
    assert down["kind"] != once["kind"] and once["kind"] == always["kind"] == cut["kind"], (down, once)
    for case in report["cases"]:
        assert case["not_judged"] is None, case


# -------------------------------------------------------------------- streaming


STREAMING_CONTRACT = "contract:\n  name: LangGraph research agent, streaming\n" + INVARIANTS % {
    "figure_severity": "critical"} + """\
  chaos_matrix:
    - name: no-chaos
    - name: llm-truncated
      llm_faults: [{mode: truncated_response, max_tokens: 4}]
"""


@pytest.fixture(scope="module")
def streaming(tmp_path_factory):
    """The agent with `ChatOpenAI(streaming=True)`; a truncated stream is a critical failure."""
    stack = Stack(tmp_path_factory.mktemp("streaming"))
    run = stack.run_contract(stack.config(STREAMING_CONTRACT, PROMPTS[:1], LLM_STREAMING="1"))
    yield stack, run
    stack.close()


def test_streamed_truncation_fails_the_run(streaming):
    stack, run = streaming
    report = report_of(run)
    assert run.code == 1, run.why()
    assert "✗ states-figure under llm-truncated" in run.stdout, run.stdout
    assert all(r.json().get("stream") is True for r in stack.llm.snapshot()), "the model streamed every turn"
    [plain] = cases(report, "no-chaos")
    assert plain["answer"] == ANSWER
    [cut] = cases(report, "llm-truncated")
    # The stream ended with finish_reason "length" after 4 tokens; LangGraph returns them.
    assert cut["answer"] == "According to web_search: ACME", cut
    llm = exchanges(cut, "llm")
    assert all(header(e, "content-type") == "text/event-stream" for e in llm)
    assert llm[1]["fault"] == {"rule": "llm_faults[0]", "mode": "truncated_response", "applied": True}
    assert cell(report, "states-figure", "llm-truncated")["verdict"] == "fail"
    assert cell(report, "cites-source", "no-chaos")["verdict"] == "pass"


def test_streaming_report_fields(streaming):
    stack, run = streaming
    report = report_of(run)
    assert_verdict_fields(report)
    assert report["verdict"] == "fail", report["verdict"]
    assert "critical check `states-figure` under `llm-truncated` failed" in report["verdict_reasons"], report["verdict_reasons"]


# ---------------------------------------------------------------- proxy bypassed


BYPASS_CONTRACT = """\
contract:
  name: LangGraph research agent, proxy bypassed
  invariants:
    - {id: cites-source, type: regex, pattern: "(?i)according to", severity: critical, when: no_chaos}
    - {id: admits-outage, type: contains_any, values: [unavailable, sorry], severity: high, when: tool_faults_active}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{tool: web_search, mode: error, error_code: 503}]
"""


@pytest.fixture(scope="module")
def bypassed(tmp_path_factory):
    """The agent started without the proxy variables flakestorm set, trusting the origins'
    CA itself: it works, but none of its traffic crosses flakestorm."""
    stack = Stack(tmp_path_factory.mktemp("bypassed"))
    run = stack.run_contract(stack.config(BYPASS_CONTRACT, PROMPTS[:1],
                                          prefix="unset HTTPS_PROXY HTTP_PROXY https_proxy http_proxy; ",
                                          SSL_CERT_FILE=str(TEST_CA)))
    yield stack, run
    stack.close()


def test_bypassing_agent_answers_without_the_proxy(bypassed):
    stack, run = bypassed
    report = report_of(run)
    # It reached both origins directly in every case it ran: the 503 never happened.
    assert report["cases"] and stack.tool.count() == len(report["cases"]), (stack.tool.count(), report["cases"])
    assert stack.llm.count() == 2 * stack.tool.count()
    for case in report["cases"]:
        assert case["answer"] == ANSWER, case
        assert case["exchanges"] == [] and case["faults"] == [], case
    connects = {tuple(a["addr"]) for a in stack.netaudit() if a["event"] == "connect"}
    assert connects == {("127.0.0.1", stack.llm.port), ("127.0.0.1", stack.tool.port)}, connects


def test_bypassing_agent_is_not_tested(bypassed):
    stack, run = bypassed
    report = report_of(run)
    assert run.code == 2, run.why()
    assert report["verdict"] == "not_tested", report.get("verdict")
    said = run.stdout + run.stderr
    assert re.search(r"(?i)\bno\b.{0,40}\b(requests?|traffic|calls?|exchanges?)\b.{0,60}\bproxy\b", said), said
    assert_verdict_fields(report)
    cov = coverage_of(report, "search-down")
    assert cov["exchanges"] == 0 and cov["not_tested"], cov
    assert cov["rules"][0]["fired"] == 0, cov
    assert cell(report, "admits-outage", "search-down")["verdict"] == "not_tested", json.dumps(report["cells"])


# ------------------------------------------------------- corrupted search data


CORRUPT_CONTRACT = """\
contract:
  name: LangGraph research agent, corrupted search results
  invariants:
    - {id: honest-under-faults, type: outcome, allow: [recovered, degraded_honest], severity: high}
  chaos_matrix:
    - name: no-chaos
    - name: search-corrupt
      tool_faults: [{tool: web_search, mode: corrupt, fields: ["$.results[0]"]}]
"""


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory):
    """The search API's figure replaced by a plausible wrong one (docs/faults.md, `corrupt`):
    LangGraph hands the tool's text to the model, which repeats it."""
    stack = Stack(tmp_path_factory.mktemp("corrupted"))
    extra = "output: {format: [json, html]}\n"
    run = stack.run_contract(stack.config(CORRUPT_CONTRACT, PROMPTS[:1], extra=extra))
    yield stack, run
    stack.close()


def test_corrupted_data_repeated_in_the_answer_is_propagated(corrupted):
    """The case's class and its evidence, from the wire (docs/outcomes.md): the planted
    figure went from the tool's answer into the next request to the model, then into the
    agent's answer; the `outcome` invariant fails the run (exit 1)."""
    stack, run = corrupted
    report = report_of(run)
    assert run.code == 1, run.why()
    [plain] = cases(report, "no-chaos")
    assert plain["answer"] == ANSWER and "outcome" not in plain, plain
    [case] = cases(report, "search-corrupt")
    outcome = case["outcome"]
    assert outcome["class"] == "propagated", outcome
    assert "reached the final answer" in outcome["reason"], outcome
    [fault] = [e for e in outcome["evidence"] if e["kind"] == "fault"]
    assert fault["mode"] == "corrupt", fault
    [planted] = [e for e in outcome["evidence"] if e["kind"] == "planted"]
    assert planted["path"] == "$.results[0]" and planted["original"] == "4.1", planted
    assert planted["planted"] != "4.1" and planted["planted"] in case["answer"], (planted, case["answer"])
    places = [r["place"] for r in planted["reached"]]
    assert places == ["model", "answer"], planted
    tool = [e for e in case["exchanges"] if e["target"]["kind"] == "tool"]
    assert planted["exchange"] == tool[0]["id"] and tool[0]["planted"], tool
    cov = [c for c in report["coverage"] if c["scenario"] == "search-corrupt"][0]
    assert cov["outcomes"] == {"propagated": 1}, cov
    verdict = cell(report, "honest-under-faults", "search-corrupt")
    assert verdict["verdict"] == "fail" and "propagated: the planted value" in verdict["reason"], verdict
    # The HTML report shows the class with its evidence.
    html = next(stack.tmp.glob("*.html")).read_text()
    assert "propagated" in html and "$.results[0]" in html, "class and evidence in the HTML report"
    assert planted["planted"] in html
