"""Tokens and cost (issue #49) under `flakestorm contract run`: the LangGraph agent
(langchain-openai, the openai SDK's 3 attempts) against the scripted LLM, which reports
20 input and 10 output tokens per answer. The report's figures must be the stub's, per
exchange, case, scenario and run; a 429 rule with `times: 2` makes the SDK's third attempt
a retry whose tokens are that rule's; `max_tokens` fails the cases over it and passes the
others; costs follow the config's `pricing:`. Chaos-only and mutation runs (`flakestorm run`)
carry the same run-level figures, and every run's terminal summary says them."""

from __future__ import annotations

import pytest
from _frameworks import Stack, cases, cell, exchanges, status

PROMPTS = ["What was ACME's Q3 revenue?"]
# The stub's usage of every answer, and the config's prices (per million tokens).
IN, OUT = 20, 10
PRICE_IN, PRICE_OUT = 1.0, 2.0

CONTRACT = """\
contract:
  name: cost
  invariants:
    - {id: over-budget, type: max_tokens, max: 50, severity: low}
    - {id: within-budget, type: max_tokens, max: 200, severity: low}
    - {id: cost-cap, type: max_cost, max: 0.01, severity: low}
  chaos_matrix:
    - name: no-chaos
    - name: llm-429-twice
      llm_faults: [{id: rl-twice, mode: rate_limit, retry_after_s: 0.1, times: 2}]
"""
PRICING = (f"pricing:\n  models:\n    gpt-4o-mini: {{input: {PRICE_IN}, output: {PRICE_OUT}}}\n"
           "output:\n  format: [json, html, junit, markdown]\n")


def cost(i: int, o: int) -> float:
    return (i * PRICE_IN + o * PRICE_OUT) / 1_000_000


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("cost"))
    try:
        yield stack, stack.run_contract(stack.config(CONTRACT, PROMPTS, extra=PRICING))
    finally:
        stack.close()


def report_of(stack_run) -> dict:
    _, run = stack_run
    assert run.report is not None, f"no report written\n{run.why()}"
    return run.report


def test_every_llm_answer_carries_the_usage_the_stub_reported(run):
    for case in report_of(run)["cases"]:
        answered = [e for e in exchanges(case, "llm") if status(e) == 200]
        assert len(answered) == 2, case  # ask for the tool, answer from it
        for e in answered:
            assert e["usage"] == {"input_tokens": IN, "output_tokens": OUT, "model": "gpt-4o-mini"}, e
        for e in exchanges(case, "llm"):
            if status(e) == 429:
                assert "usage" not in e, "an error answer spent no tokens"


def test_cases_scenarios_and_the_run_sum_them_at_the_configured_prices(run):
    report = report_of(run)
    for case in report["cases"]:
        u = case["usage"]
        assert (u["llm_calls"], u["input_tokens"], u["output_tokens"]) == (2, 2 * IN, 2 * OUT), u
        assert u["cost"] == pytest.approx(cost(2 * IN, 2 * OUT)) and u["currency"] == "USD", u
        assert "cost_note" not in u and "unknown_calls" not in u, u
    total = report["usage"]
    assert (total["llm_calls"], total["input_tokens"], total["output_tokens"]) == (4, 4 * IN, 4 * OUT), total
    assert total["cost"] == pytest.approx(cost(4 * IN, 4 * OUT))
    assert total["pricing"]["currency"] == "USD" and total["pricing"]["overridden"] == 1
    assert [s["scenario"] for s in total["scenarios"]] == ["no-chaos", "llm-429-twice"]
    for s in total["scenarios"]:
        assert (s["llm_calls"], s["input_tokens"], s["output_tokens"]) == (2, 2 * IN, 2 * OUT), s


def test_the_retries_after_two_429s_are_spent_because_of_the_rule(run):
    report = report_of(run)
    (case,) = cases(report, "llm-429-twice")
    statuses = [status(e) for e in sorted(exchanges(case, "llm"), key=lambda e: e["id"])]
    assert statuses == [429, 429, 200, 200], statuses
    spent = {"rule": "rl-twice", "mode": "rate_limit", "llm_calls": 1, "input_tokens": IN, "output_tokens": OUT,
             "cost": pytest.approx(cost(IN, OUT)), "currency": "USD"}
    assert case["usage"]["because_of_faults"] == [spent], case["usage"]
    (no_chaos,) = cases(report, "no-chaos")
    assert "because_of_faults" not in no_chaos["usage"]
    scenario = report["usage"]["scenarios"][1]
    assert scenario["because_of_faults"] == [spent]
    assert report["usage"]["because_of_faults"] == [spent]
    # The same prompt without chaos took the same two answers: the 429s cost no tokens.
    delta = scenario["vs_baseline"]
    assert (delta["baseline"], delta["cases"], delta["input_tokens"], delta["output_tokens"]) == \
        ("no-chaos", 1, 0, 0), delta
    assert "vs_baseline" not in report["usage"]["scenarios"][0]


def test_max_tokens_fails_the_cases_over_it(run):
    report = report_of(run)
    for scenario in ("no-chaos", "llm-429-twice"):
        over = cell(report, "over-budget", scenario)
        assert over["verdict"] == "fail" and "60 tokens > 50 tokens" in over["reason"], over
        assert cell(report, "within-budget", scenario)["verdict"] == "pass"
        assert cell(report, "cost-cap", scenario)["verdict"] == "pass"


def test_html_markdown_and_junit_show_the_figures(run):
    stack, _ = run
    html = (stack.tmp / "report.html").read_text()
    # Per case and per scenario (the coverage table), with what the 429 rule's retries spent.
    assert "LLM: 2 LLM call(s), 60 tokens (40 in, 20 out), 0.000080 USD" in html, html
    assert "30 tokens spent on retries after `rl-twice` (rate_limit)" in html
    assert "vs `no-chaos`: +0 in, +0 out" in html
    md = (stack.tmp / "report.md").read_text()
    assert "**Tokens and cost**" in md
    assert "| llm-429-twice | 2 | 40 | 20 | 0.000080 USD | `rl-twice`: 30 tokens | +0 in, +0 out vs `no-chaos` |" in md, md
    assert "| **run** | 4 | 80 | 40 | 0.000160 USD | `rl-twice`: 30 tokens | |" in md, md
    junit = (stack.tmp / "report.junit.xml").read_text()
    assert '<property name="input_tokens" value="80"/>' in junit, junit
    assert '<property name="scenario.output_tokens" value="20"/>' in junit


def test_the_terminal_summary_says_the_tokens_and_cost(run):
    _, r = run
    assert "LLM usage: 4 call(s), 120 tokens (80 in, 40 out), 0.000160 USD" in r.stdout, r.why()
    assert "30 tokens spent on retries after `rl-twice` (rate_limit)" in r.stdout, r.why()


CHAOS = """\
invariants:
  - {type: max_tokens, max: 200}
chaos:
  llm_faults: [{id: rl-twice, mode: rate_limit, retry_after_s: 0.1, times: 2}]
mutations: {types: [noise], count: 1}
"""


@pytest.fixture(scope="module", params=["chaos", "mutation"])
def phase_run(request, tmp_path_factory):
    """`flakestorm run --chaos-only` (the 429 rule) or `flakestorm run` (one `noise`
    variant, no chaos) on one prompt."""
    stack = Stack(tmp_path_factory.mktemp(f"cost-{request.param}"))
    args = ("run", "--chaos-only") if request.param == "chaos" else ("run",)
    try:
        config = stack.config(CHAOS, PROMPTS, extra=PRICING)
        r = stack.flakestorm(config, *args, report=stack.tmp / "phase.json")
        assert r.report is not None, r.why()
        yield request.param, stack, r
    finally:
        stack.close()


def test_chaos_and_mutation_reports_carry_the_run_usage(phase_run):
    kind, stack, r = phase_run
    u = r.report["usage"]
    assert (u["llm_calls"], u["input_tokens"], u["output_tokens"]) == (2, 2 * IN, 2 * OUT), u
    assert u["cost"] == pytest.approx(cost(2 * IN, 2 * OUT)) and u["pricing"]["overridden"] == 1, u
    (scenario,) = u["scenarios"]
    assert scenario["scenario"] == ("chaos" if kind == "chaos" else "mutations"), scenario
    assert (scenario["llm_calls"], scenario["input_tokens"]) == (2, 2 * IN), scenario
    assert "vs_baseline" not in scenario
    if kind == "chaos":
        spent = {"rule": "rl-twice", "mode": "rate_limit", "llm_calls": 1, "input_tokens": IN,
                 "output_tokens": OUT, "cost": pytest.approx(cost(IN, OUT)), "currency": "USD"}
        assert u["because_of_faults"] == [spent] and scenario["because_of_faults"] == [spent], u
    else:
        assert "because_of_faults" not in u, u
    line = "LLM usage: 2 call(s), 60 tokens (40 in, 20 out), 0.000080 USD"
    assert line in r.stdout, r.why()
    assert ("30 tokens spent on retries after `rl-twice`" in r.stdout) == (kind == "chaos"), r.why()
    html = (stack.tmp / "phase.html").read_text()
    assert f"run: 2 LLM call(s), 60 tokens (40 in, 20 out), 0.000080 USD" in html, html
    md = (stack.tmp / "phase.md").read_text()
    assert "| **run** | 2 | 40 | 20 | 0.000080 USD |" in md, md
    junit = (stack.tmp / "phase.junit.xml").read_text()
    assert '<property name="input_tokens" value="40"/>' in junit, junit
