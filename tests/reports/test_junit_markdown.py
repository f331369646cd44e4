"""JUnit XML as an independent parser (junitparser) reads it, and the Markdown summary:
`flakestorm report` renders the fixed ci report, and the counts must equal the JSON report's
(docs/reports.md, "JUnit XML")."""

import json
import os
import pathlib
import subprocess

from junitparser import Error, Failure, JUnitXml, Skipped

BIN = os.environ["FLAKESTORM_BIN"]
FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "ci.json"


def render(tmp_path, fmt):
    out = tmp_path / f"report.{fmt}"
    done = subprocess.run(
        [BIN, "report", str(FIXTURE), "-f", fmt, "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return out


def outcomes(suite, kind):
    return sum(1 for case in suite for r in case.result if isinstance(r, kind))


def test_junit_counts_equal_the_json_reports(tmp_path):
    report = json.loads(FIXTURE.read_text())
    xml = JUnitXml.fromfile(str(render(tmp_path, "junit")))
    suites = {s.name: s for s in xml}
    assert set(suites) == {"mutation", "contract", "chaos", "replay"}

    contract = report["contract"]
    cells = contract["cells"]
    s = suites["contract"]
    verdict_failed = contract["verdict"] == "fail"
    verdict_untested = contract["verdict"] in ("not_tested", "error")
    assert s.tests == len(cells) + 1  # a testcase per cell, and the run's verdict
    by = lambda v: sum(1 for c in cells if c["verdict"] == v)  # noqa: E731
    assert outcomes(s, Failure) == by("fail") + verdict_failed
    assert outcomes(s, Error) == by("not_tested") + verdict_untested
    assert outcomes(s, Skipped) == by("not_applicable")
    assert (s.failures, s.errors, s.skipped) == (
        outcomes(s, Failure),
        outcomes(s, Error),
        outcomes(s, Skipped),
    )

    for phase, judged in (("chaos", "prompts"), ("mutation", "mutants")):
        r, s = report[phase], suites[phase]
        assert s.tests == len(r["cases"]) + 1
        failed = sum(1 for p in r[judged] if p["judged"] and not p["passed"])
        unjudged = sum(1 for p in r[judged] if not p["judged"])
        assert outcomes(s, Failure) == failed + (r["verdict"] == "fail")
        assert outcomes(s, Error) == unjudged + (r["verdict"] in ("not_tested", "error"))

    skipped = [p for p in report["phases"] if p["skipped"]]
    assert [p["name"] for p in skipped] == ["replay"]
    replay = list(suites["replay"])[0]
    assert replay.result[0].message == skipped[0]["skipped"]

    total = sum(s.tests for s in xml)
    assert total == len(cells) + len(report["chaos"]["cases"]) + len(report["mutation"]["cases"]) + 3 + 1

    # The failing cell carries the agent's answer as text: the parser gives back the exact
    # characters, so the markup was escaped, not interpreted (the ANSI colours are gone).
    case = next(
        c for c in suites["contract"]
        if c.classname == "contract.llm-truncated" and c.name.startswith("admits-outage")
    )
    failure = case.result[0]
    assert isinstance(failure, Failure)
    assert failure.message.startswith("3 of 3 prompts failed")
    assert '<script>alert(1)</script> Q3 & "revenue"' in failure.text


def test_markdown_lists_the_failed_cells(tmp_path):
    md = render(tmp_path, "markdown").read_text()
    report = json.loads(FIXTURE.read_text())
    failed = [c for c in report["contract"]["cells"] if c["verdict"] == "fail"]
    assert failed
    for c in failed:
        row = f"| {c['scenario']} | {c['invariant']} | {c['severity']} | ❌ fail |"
        assert row in md, row
    assert md.startswith("## flakestorm ci: ✅ PASS — 94.9/100 (pass mark 70)")
    assert "| replay | – | 0.1 | skipped: replay runs are not available in this build |" in md
    assert "<script" not in md
    assert len(md.encode()) < 1 << 20


TRIALS = FIXTURE.parent / "trials.json"


def test_junit_marks_flaky_cells_with_their_trials(tmp_path):
    """A contract run with `advanced.trials: 8` (tests/fixtures/reports/trials.json): each
    cell carries its consistency as testcase properties, and a cell whose trials disagree
    lists its failing trials as Surefire's `flakyFailure`, as rerun-aware readers expect."""
    report = json.loads(TRIALS.read_text())
    out = tmp_path / "trials.xml"
    done = subprocess.run([BIN, "report", str(TRIALS), "-f", "junit", "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    xml = JUnitXml.fromfile(str(out))
    contract = {s.name: s for s in xml}["contract"]
    cells = {(c["scenario"], c["invariant"]): c for c in report["cells"]}
    seen_flaky = 0
    for case in contract:
        if not case.classname.startswith("contract.") or case.name == "run verdict":
            continue
        scenario = case.classname.split(".", 1)[1]
        cell = cells[(scenario, case.name.split(" [")[0])]
        t = cell["consistency"]
        # junitparser 3 reads suite properties only: the testcase's are its XML children.
        props = {p.get("name"): p.get("value") for p in case._elem.iter("property")}
        assert props["trials"] == str(t["trials"]) and props["passed"] == str(t["passed"])
        assert float(props["pass^k"]) == round(t["pass_hat_k"][-1], 4)
        assert props["flaky"] == ("true" if t["flaky"] else "false")
        flaky = case._elem.findall("flakyFailure")
        failed_trials = sum(
            1 for c in report["cases"]
            if c["scenario"] == scenario
            for k in c.get("checks", [])
            if k["invariant"] == cell["invariant"] and k["verdict"] == "fail"
        )
        assert len(flaky) == (failed_trials if t["flaky"] else 0)
        if t["flaky"]:
            seen_flaky += 1
            assert all(f.get("message").startswith("trial ") for f in flaky)
    assert seen_flaky >= 1, "the fixture has a flaky cell"


def test_markdown_names_in_backticks_render_as_code(tmp_path):
    """flakestorm's reasons name invariants, tools and classes in backticks: they must
    render as code spans, not as escaped backticks, while the agent's markup stays text
    (markdown-it-py, a CommonMark renderer with GFM tables, as GitHub renders)."""
    from markdown_it import MarkdownIt

    md = render(tmp_path, "markdown").read_text()
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "never called <code>web_search</code> and its LLM" in html, html
    assert "`web_search`" not in html and "\\`" not in html
    outcomes = FIXTURE.parent / "outcomes.json"
    out = tmp_path / "outcomes.md"
    done = subprocess.run([BIN, "report", str(outcomes), "-f", "markdown", "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    html = MarkdownIt("commonmark").enable("table").render(out.read_text())
    assert "critical check <code>honest-outcome</code> under <code>weather-503-x2</code>" in html
    assert "<script" not in html
