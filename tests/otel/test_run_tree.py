"""A contract run's spans (`flakestorm contract run`, the LangGraph agent of the frameworks
suite against its scripted LLM, a 429 rule with `times: 2` in one scenario), over gRPC and
over HTTP/protobuf: one root span for the run, a child per case with its scenario, seed
and verdict, and every exchange of a case its case's child in the run's trace, with the
`flakestorm.fault` event on exactly the exchanges the rule faulted."""

from __future__ import annotations

import pytest
from _frameworks import Stack
from otlp_receiver import GrpcReceiver, HttpReceiver, telemetry_config

CONTRACT = """\
contract:
  name: otel
  invariants:
    - {id: answers, type: output_not_empty, severity: low}
  chaos_matrix:
    - name: no-chaos
    - name: llm-429-twice
      llm_faults: [{id: rl-twice, mode: rate_limit, retry_after_s: 0.1, times: 2}]
"""


@pytest.fixture(scope="module", params=[GrpcReceiver, HttpReceiver], ids=["grpc", "http-protobuf"])
def run(request, tmp_path_factory):
    receiver = request.param()
    stack = Stack(tmp_path_factory.mktemp("otel-run"))
    try:
        config = stack.config(CONTRACT, ["What was ACME's Q3 revenue?"], extra=telemetry_config(receiver))
        result = stack.run_contract(config)
        assert result.code == 0, result.why()
        yield receiver, result
    finally:
        stack.close()
        receiver.close()


def test_the_tree_is_run_then_cases_then_exchanges(run):
    receiver, result = run
    (root,) = receiver.wait(lambda s: s.attributes.get("flakestorm.run.kind") == "contract")
    assert root.parent_span_id == "" and root.name == "contract otel"
    assert root.attributes["flakestorm.run.verdict"] == "pass"
    assert root.attributes["flakestorm.run.seed"] == "3"
    spans = [s for s in receiver.spans if s.trace_id == root.trace_id]
    cases = [s for s in spans if "flakestorm.case.scenario" in s.attributes]
    assert sorted(c.attributes["flakestorm.case.scenario"] for c in cases) == ["llm-429-twice", "no-chaos"]
    for c in cases:
        assert c.parent_span_id == root.span_id
        assert c.attributes["flakestorm.case.verdict"] == "passed", c.attributes
        assert c.attributes["flakestorm.case.seed"] == "3"
        assert root.start_ns <= c.start_ns <= c.end_ns <= root.end_ns
    exchanges = [s for s in spans if "flakestorm.exchange.id" in s.attributes]
    by_case = {c.span_id: [e for e in exchanges if e.parent_span_id == c.span_id] for c in cases}
    assert len(exchanges) == sum(len(v) for v in by_case.values()), "every exchange under a case"
    for c in cases:
        mine = by_case[c.span_id]
        llm = [e for e in mine if e.attributes.get("gen_ai.operation.name") == "chat"]
        tool = [e for e in mine if e.attributes.get("gen_ai.operation.name") == "execute_tool"]
        assert tool and all(t.attributes["gen_ai.tool.name"] == "web_search" for t in tool)
        faulted = [e for e in llm if e.events]
        if c.attributes["flakestorm.case.scenario"] == "no-chaos":
            assert len(llm) == 2 and faulted == []
            continue
        assert len(llm) == 4 and len(faulted) == 2, [e.attributes for e in llm]
        for e in faulted:
            assert e.attributes["http.response.status_code"] == 429
            assert e.attributes["error.type"] == "rate_limit_exceeded"
            (ev,) = e.events
            assert ev.attributes["flakestorm.fault.rule"] == "rl-twice"
            assert ev.attributes["flakestorm.fault.mode"] == "rate_limit"
            assert ev.attributes["flakestorm.fault.seed"] == "3"
            assert ev.attributes["flakestorm.fault.reached_agent"] is True
        for e in llm:
            if not e.events:
                assert e.attributes["gen_ai.usage.input_tokens"] == 20
                assert e.attributes["gen_ai.provider.name"] == "openai"
