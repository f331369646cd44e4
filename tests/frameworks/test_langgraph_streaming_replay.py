"""LangGraph streaming, 50 cases in a row: every exchange in its case, every failure
replayed offline (issue #24).

With `ChatOpenAI(streaming=True)` the answer turn is an SSE stream, and the agent can
answer before the proxy has recorded the end of that stream. Before cases settled
(`advanced.settle_ms`), that last exchange could then fall between cases
(`coverage[].outside_cases`): the failed case's tape lacked the very exchange whose text
was the answer, and the incident `flakestorm replay export` wrote could not be replayed
offline.

A `flakestorm contract run` of the streaming agent, started by flakestorm with
`agent.command`, 10 prompts × 5 scenarios, twice: one agent process (the default
`exclusive` attribution, one case at a time, as when the bug was seen) and a pool of two
instances (`{port}`: each on its own port behind its own proxy listener, two cases at a
time). Two scenarios fail a critical check: a truncated answer stream, and a tool outage
the agent apologises for. The tests check that no exchange fell outside a case, that each
case holds its final streamed LLM exchange, complete, and that each failed case's tape
holds it too; then the failures are exported, both origins stopped, and every exported
session replayed with `replays.on_miss: strict`: each must reproduce its recorded failure
from its tape alone.
"""

from __future__ import annotations

import json
import socket
import subprocess

import pytest
from _frameworks import FACT, SORRY, Stack, binary, exchanges, header, origin_seq, runner_env, script, status

PROMPTS = [f"What was ACME's Q3 revenue? (question {i})" for i in range(1, 11)]
ANSWER = f"According to web_search: {FACT}"
CUT = "According to web_search: ACME"  # 4 tokens of ANSWER
POOL = 2  # instances in the pool run

CONTRACT = """\
contract:
  name: LangGraph streaming agent, 50 cases
  invariants:
    - {id: cites-source, type: regex, pattern: "(?i)according to", severity: critical, when: no_chaos}
    - {id: searches, type: tool_called, tool: web_search}
    - {id: states-figure, type: contains, value: "$4.1B", severity: critical, when: any_chaos_active}
  chaos_matrix:
    - name: no-chaos
    - name: llm-slow-stream
      llm_faults: [{mode: slow_stream, first_token_ms: 50, between_ms: 15}]
    - name: search-slow
      tool_faults: [{tool: web_search, mode: slow, delay_ms: 100}]
    - name: search-down
      tool_faults: [{tool: web_search, mode: error, error_code: 503}]
    - name: llm-truncated
      llm_faults: [{mode: truncated_response, max_tokens: 4}]
replays:
  on_miss: strict
"""

SCENARIOS = ["no-chaos", "llm-slow-stream", "search-slow", "search-down", "llm-truncated"]
# The answer each scenario gets, and whether its cases fail (`states-figure`).
ANSWERS = {"no-chaos": ANSWER, "llm-slow-stream": ANSWER, "search-slow": ANSWER, "search-down": SORRY,
           "llm-truncated": CUT}
FAILING = {"search-down", "llm-truncated"}


@pytest.fixture(scope="module", params=[0, POOL], ids=["one-agent", f"pool-{POOL}"])
def settled(request, tmp_path_factory):
    """The run, its failures exported, the origins stopped, and the exports replayed."""
    tmp = tmp_path_factory.mktemp("settled")
    stack = Stack(tmp, pool=request.param)
    config = stack.config(CONTRACT, PROMPTS, LLM_STREAMING="1")
    run = stack.run_contract(config)
    llm_requests = stack.llm.snapshot()
    exported = tmp / "exported"
    export = subprocess.run(
        [str(binary()), "replay", "export", "--from-report", str(tmp / "report.json"), "-o", str(exported)],
        cwd=tmp, env=runner_env(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    # Offline: nothing listens where the agent's OPENAI_BASE_URL and TOOL_URL point.
    stack.close()
    replay = stack.run_replay(config, exported) if export.returncode == 0 else None
    yield stack, run, llm_requests, export, exported, replay


def report_of(run) -> dict:
    assert run.report is not None, f"no report written\n{run.why()}"
    return run.report


def final_llm(case: dict) -> dict:
    """The case's last LLM exchange: the streamed answer turn."""
    llm = exchanges(case, "llm")
    assert llm, f"no LLM exchange in the case: {case}"
    return llm[-1]


def test_fifty_cases_nothing_outside_them(settled):
    stack, run, _, _, _, _ = settled
    report = report_of(run)
    assert run.code == 1, run.why()  # the two failing scenarios fail a critical check
    assert [(c["scenario"], c["prompt"]) for c in report["cases"]] == [(s, p) for s in SCENARIOS for p in PROMPTS]
    assert len(report["cases"]) == 50
    outside = {c["scenario"]: c["outside_cases"] for c in report["coverage"]}
    assert sum(outside.values()) == 0, f"exchanges outside every case: {outside}\n{json.dumps(report['coverage'])}"
    # Every exchange recorded while the run went on is in exactly one case.
    in_cases = [e["id"] for c in report["cases"] for e in c["exchanges"] or []]
    assert len(in_cases) == len(set(in_cases))
    assert sum(c["exchanges"] for c in report["coverage"]) == len(in_cases), report["coverage"]
    # In the pool run both instances took cases; every case was judged on its first
    # invocation.
    instances = {c.get("instance") for c in report["cases"]}
    # POOL running and spares to settle on: 4 × POOL at the start, more started while
    # cases wait for one, never more than the run's 50 cases (docs/config.md, "How a case
    # settles").
    pooled = set(range(1, POOL + 1)) <= instances <= set(range(1, len(report["cases"]) + 1))
    assert (pooled if stack.concurrency > 1 else instances == {None}), instances
    for case in report["cases"]:
        assert case["exchanges"] is not None, f"case without exchanges: {case}"
        assert case["not_judged"] is None and case["attempts"] == 1, case


def test_each_case_holds_its_final_streamed_llm_exchange(settled):
    """The exchange whose stream became the answer is the case's: complete, streamed, and
    the scripted model's answer to that case's tool result."""
    stack, run, llm_requests, _, _, _ = settled
    report = report_of(run)
    for case in report["cases"]:
        want = ANSWERS[case["scenario"]]
        assert case["answer"] == want, case
        last = final_llm(case)
        assert status(last) == 200, last
        assert last["outcome"]["body"]["end"] == "complete", last["outcome"]
        assert header(last, "content-type") == "text/event-stream", last["outcome"]
        seq = origin_seq(last)
        assert seq is not None, f"the answer turn never reached the model: {last}"
        req = llm_requests[seq - 1].json()
        assert req.get("stream") is True and req["messages"][-1]["role"] == "tool", req["messages"]
        assert {"role": "user", "content": case["prompt"]} in req["messages"], req["messages"]
        # Its text is the answer (cut to 4 tokens under llm-truncated).
        assert script(req)["content"].startswith(want), (script(req), want)
        # The exchanges of a case: ask for the tool, call it, answer.
        kinds = [e["target"]["kind"] for e in sorted(case["exchanges"], key=lambda e: e["id"])]
        assert kinds == ["llm", "tool", "llm"], kinds
        assert not case.get("after_answer"), case.get("after_answer")
    # Each request the model received was answered through one exchange of a case.
    seqs = sorted(origin_seq(e) for c in report["cases"] for e in exchanges(c, "llm") if origin_seq(e) is not None)
    assert seqs == list(range(1, len(llm_requests) + 1)), (seqs, len(llm_requests))


def har_entries(path) -> list[dict]:
    return json.loads(path.read_text())["log"]["entries"]


def test_each_failure_is_exported_with_its_whole_traffic(settled):
    stack, run, _, export, exported, _ = settled
    report = report_of(run)
    assert export.returncode == 0, f"exit {export.returncode}\n{export.stdout}\n{export.stderr}"
    failed = [i for i, c in enumerate(report["cases"]) if any(k["verdict"] == "fail" for k in c["checks"])]
    assert [report["cases"][i]["scenario"] for i in failed] == [s for s in SCENARIOS if s in FAILING for _ in PROMPTS]
    assert sorted(p.name for p in exported.glob("*.json")) == sorted(f"contract-{i}.json" for i in failed)
    for i in failed:
        case = report["cases"][i]
        session = json.loads((exported / f"contract-{i}.json").read_text())
        assert session["input"] == case["prompt"] and session["tape"] == f"contract-{i}.har", session
        assert session["contract"] == "LangGraph streaming agent, 50 cases", session
        assert session["expected_failure"] == '`states-figure`: does not contain "$4.1B"', session
        entries = har_entries(exported / session["tape"])
        # The tape is the case's exchanges, the final streamed answer included.
        assert sorted(e["_id"] for e in entries) == sorted(e["id"] for e in case["exchanges"]), \
            ([e["_id"] for e in entries], [e["id"] for e in case["exchanges"]])
        assert {e["_case"] for e in entries} == {f"contract-{i} ({case['scenario']})"}
        last = [e for e in entries if e["_id"] == final_llm(case)["id"]]
        assert len(last) == 1, f"the tape of contract-{i} lacks the answer's stream"
        content = last[0]["response"]["content"]
        streamed = "".join(ev["text"] for ev in content.get("_events", []))
        assert "[DONE]" in streamed and all(w in streamed for w in case["answer"].split()), content


def test_every_exported_failure_replays_offline(settled):
    stack, run, _, export, exported, replay = settled
    report = report_of(run)
    assert replay is not None, f"nothing to replay: the export failed\n{export.stderr}"
    for origin in (stack.llm, stack.tool):
        with socket.socket() as s, pytest.raises(ConnectionRefusedError):
            s.connect(("127.0.0.1", origin.port))
    got = report_of(replay)
    # Each session reproduces its failure, with no miss: the run fails (exit 1).
    assert replay.code == 1, replay.why()
    assert got["on_miss"] == "strict"
    assert sorted(s["id"] for s in got["sessions"]) == sorted(p.stem for p in exported.glob("*.json"))
    assert len(got["sessions"]) == 10 * len(FAILING)
    outside = [c["outside_cases"] for c in got["coverage"]]
    assert sum(outside) == 0, f"replayed exchanges outside every session: {json.dumps(got['coverage'])}"
    for s in got["sessions"]:
        case = report["cases"][int(s["id"].removeprefix("contract-"))]
        assert (s["verdict"], s["misses"], s["missed"]) == ("fail", [], 0), s
        assert "; ".join(s["reasons"]) == s["expected_failure"], s
        # The tape answered every call, and every one of its entries was used.
        assert s["served"] == s["recorded"] == len(case["exchanges"]), s
        played = got["cases"][s["case"]]
        assert played["answer"] == case["answer"], (played["answer"], case["answer"])
        assert played["not_judged"] is None, played
        # Each call the agent made was answered from the tape (nothing went to the
        # stopped origins): the same calls as in the run.
        assert [(e["fault"]["rule"], e["fault"]["mode"]) for e in played["exchanges"]] == \
            [("replay", "replayed")] * len(case["exchanges"]), played["exchanges"]
        assert [e["request"]["url"] for e in sorted(played["exchanges"], key=lambda e: e["id"])] == \
            [e["request"]["url"] for e in sorted(case["exchanges"], key=lambda e: e["id"])]
