"""The HTML report in a real browser: the page `flakestorm demo` writes renders in
headless Chromium with its heatmap and timelines, logs no console error, requests nothing
but itself, and runs no script; a full-page screenshot goes to target/report-screenshot.png
for review (docs/img/report.png is a copy of it). Once the binary has `flakestorm report`,
it re-renders the fixed report exactly as the golden page."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import REPO, flakestorm_bin

SCREENSHOT = REPO / "target" / "report-screenshot.png"


def open_page(browser, html: Path):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.as_uri(), wait_until="load")
    return page, requests, errors


def test_the_demo_report_renders_with_heatmap_and_timelines(browser, demo_html):
    page, requests, errors = open_page(browser, demo_html)
    try:
        assert page.title().startswith("flakestorm ci report: ")
        verdict = page.locator(".banner .v").inner_text()
        assert verdict in {"PASS", "FAIL", "NOT TESTED", "ERROR"}

        # The contract matrix: a row per invariant, a link per cell, every link landing on
        # an element of the page.
        heatmap = page.locator("table.heatmap")
        assert heatmap.count() == 1
        assert heatmap.is_visible()
        cells = page.locator("table.heatmap td.c a")
        assert cells.count() >= 4
        for href in {cells.nth(i).get_attribute("href") for i in range(cells.count())}:
            assert href.startswith("#")
            assert page.locator(f"[id='{href[1:]}']").count() == 1, f"{href} leads nowhere"

        # Timelines: one SVG per case with attributed calls, bars with a width; open the
        # failed cases so theirs are drawn (and shown in the screenshot).
        timelines = page.locator("svg.tl")
        assert timelines.count() >= 1
        page.evaluate("document.querySelectorAll('details.k-fail').forEach(d => d.open = true)")
        first = page.locator("details[open] svg.tl").first
        first.scroll_into_view_if_needed()
        assert first.is_visible()
        box = first.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 10
        widths = [float(w) for w in first.locator("rect").evaluate_all("rs => rs.map(r => r.getAttribute('width'))")]
        assert widths and all(w > 0 for w in widths)

        # A self-contained page: no script, nothing fetched, nothing logged.
        assert page.locator("script").count() == 0
        assert requests == [demo_html.as_uri()], f"requests beyond the file: {requests}"
        assert errors == [], f"console errors: {errors}"

        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        assert SCREENSHOT.stat().st_size > 10_000
    finally:
        page.close()


def test_an_answer_with_a_script_tag_is_shown_as_text(browser, tmp_path):
    # The golden page of the fixed report (tests/fixtures/reports/ci.html, rendered from
    # ci.json by the Rust golden test) carries `<script>alert(1)</script>` as an answer.
    html = REPO / "tests" / "fixtures" / "reports" / "ci.html"
    page, requests, errors = open_page(browser, html)
    try:
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.locator("script").count() == 0
        assert page.get_by_text("<script>alert(1)</script> Q3 & \"revenue\"").count() == 1
        assert dialogs == []
        assert requests == [html.as_uri()]
        assert errors == []
    finally:
        page.close()


def test_flakestorm_report_renders_the_fixture_as_the_golden_page(tmp_path):
    # `flakestorm report` (re-rendering a saved report) renders exactly what the Rust
    # golden test pins. Skipped by a binary without the command.
    binary = flakestorm_bin()
    if subprocess.run([binary, "report", "--help"], capture_output=True).returncode != 0:
        pytest.skip("this flakestorm has no `report` command")
    fixtures = REPO / "tests" / "fixtures" / "reports"
    out = tmp_path / "ci.html"
    run = subprocess.run([binary, "report", str(fixtures / "ci.json"), "--format", "html", "-o", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == (fixtures / "ci.html").read_bytes()


def test_a_flaky_cell_shows_its_trials_in_the_heatmap(browser, tmp_path):
    # tests/fixtures/reports/trials.json: a contract run with `advanced.trials: 8`, whose
    # `cites` cell under `flaky-search` passed some trials and failed others.
    import json

    fixture = REPO / "tests" / "fixtures" / "reports" / "trials.json"
    report = json.loads(fixture.read_text())
    out = tmp_path / "trials.html"
    run = subprocess.run([flakestorm_bin(), "report", str(fixture), "--format", "html", "-o", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    page, requests, errors = open_page(browser, out)
    try:
        flaky = [c for c in report["cells"] if c.get("consistency", {}).get("flaky")]
        assert flaky, "the fixture has a flaky cell"
        shown = page.locator("table.heatmap td.c.flaky")
        assert shown.count() == len(flaky)
        t = flaky[0]["consistency"]
        assert shown.first.is_visible()
        assert shown.first.inner_text().split() == ["✗", f"{t['passed']}/{t['trials']}", "flaky"]
        assert f"{t['passed']} of {t['trials']} trials passed" in shown.first.get_attribute("title")
        # The flaky cell: a passing and a failing trial of one case, timelines side by side.
        pair = page.locator(".cell .pair")
        assert pair.count() == len(flaky)
        sides = pair.first.locator(".side")
        assert sides.count() == 2
        labels = [sides.nth(i).locator("a").inner_text() for i in range(2)]
        assert labels[0].endswith("(passed)") and labels[1].endswith("(failed)"), labels
        assert sides.nth(0).locator("svg.tl").count() == 1 and sides.nth(1).locator("svg.tl").count() == 1
        box0, box1 = (sides.nth(i).bounding_box() for i in range(2))
        assert box0["y"] == box1["y"] and box0["x"] < box1["x"], (box0, box1)
        for i in range(2):
            href = sides.nth(i).locator("a").get_attribute("href")
            assert page.locator(href).count() == 1, href
        steady = page.locator("table.heatmap td.c:not(.flaky) small.trials")
        assert steady.count() == len(report["cells"]) - len(flaky)
        assert requests == [out.as_uri()] and errors == []
    finally:
        page.close()


OUTCOMES = REPO / "tests" / "fixtures" / "reports" / "outcomes.json"
OUTCOMES_SCREENSHOT = REPO / "target" / "report-outcomes-screenshot.png"
VERDICTS = ["propagated", "fabricated", "failed", "degraded_honest", "recovered"]


def render(source: Path, out: Path) -> None:
    run = subprocess.run([flakestorm_bin(), "report", str(source), "--format", "html", "-o", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


def test_outcome_classes_show_as_badges_a_profile_and_timeline_marks(browser, tmp_path):
    # tests/fixtures/reports/outcomes.json: a contract run of a weather agent (five
    # behaviours, by prompt) under a tool error, corrupted tool data, a flaky timeout and
    # LLM 429s, two trials each: every class but `undecided`.
    import json
    import re

    report = json.loads(OUTCOMES.read_text())
    out = tmp_path / "outcomes.html"
    render(OUTCOMES, out)
    assert out.read_bytes() == (OUTCOMES.parent / "outcomes.html").read_bytes()
    page, requests, errors = open_page(browser, out)
    try:
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        classed = [c for c in report["cases"] if c.get("outcome")]
        assert classed
        # A badge on every classed case's line, with its class in words (not colour alone).
        badges = page.locator("details.case > summary .oc")
        assert badges.count() == len(classed)
        words = {c["outcome"]["class"].replace("_", " ") for c in classed}
        shown = set(badges.all_inner_texts())
        assert shown == words, (shown, words)
        for cls in {c["outcome"]["class"] for c in classed}:
            badge = page.locator(f"details.case > summary .oc-{cls}").first
            assert badge.is_visible()
            bg = badge.evaluate("e => getComputedStyle(e).backgroundColor")
            assert bg not in ("rgba(0, 0, 0, 0)", "transparent"), cls
        # Each classed case says why and lists its evidence.
        assert page.locator(".outcome").count() == len(classed)
        evidence = sum(len(c["outcome"]["evidence"]) for c in classed)
        assert page.locator("ul.ev > li").count() == evidence

        # The profile: a row per scenario with classes, counts as in the JSON, the five
        # shares adding up to 100% per row.
        rows = page.locator("table.profile:not(.families) tr:has(td)")
        covered = [c for c in report["coverage"] if c.get("outcomes")]
        assert rows.count() == len(covered)
        for i, c in enumerate(covered):
            cells = rows.nth(i).locator("td").all_inner_texts()
            assert cells[0] == c["scenario"]
            judged = sum(c["outcomes"].get(k, 0) for k in VERDICTS)
            assert int(cells[1]) == judged
            pcts = []
            for k, text in zip(VERDICTS, cells[3:8]):
                n = c["outcomes"].get(k, 0)
                if n == 0:
                    assert text == "–"
                    continue
                m = re.fullmatch(r"(\d+) \((\d+)%\)", text)
                assert m and int(m.group(1)) == n, (k, text)
                assert abs(int(m.group(2)) - 100 * n / judged) < 1
                pcts.append(int(m.group(2)))
            assert sum(pcts) == 100, (c["scenario"], pcts)
            assert cells[8:] == [str(c["outcomes"].get("not_exercised", 0)),
                                 str(c["outcomes"].get("undecided", 0))]
            bar = rows.nth(i).locator(".ocbar")
            assert bar.is_visible()
            total = bar.bounding_box()["width"]
            segs = sum(b["width"] for b in bar.locator("i").evaluate_all(
                "is => is.map(i => i.getBoundingClientRect()).map(r => ({width: r.width}))"))
            assert abs(segs - total) < 2, (segs, total)
        families = page.locator("table.profile.families tr:has(td)")
        assert families.count() >= 2
        assert page.locator("table.profile").first.is_visible()

        # The heatmap's cells carry their cases' classes.
        with_classes = page.locator("table.heatmap td.c .ocb")
        assert with_classes.count() == sum(1 for c in report["cells"] if c.get("outcomes"))
        assert "outcomes: " in page.locator("table.heatmap td.c:has(.ocb)").first.get_attribute("title")

        # Timeline marks: the call a fault planted values in, the call that carried them on.
        marks = page.locator("svg.tl g.mk")
        assert marks.count() >= 1
        planted = page.locator("svg.tl g.mk:has-text('◆')").first
        planted.scroll_into_view_if_needed()
        assert planted.is_visible()
        assert planted.locator("title").text_content().startswith("◆ planted ")
        assert page.locator("svg.tl rect.mk").count() == marks.count()
        assert page.locator(".tl-key").first.is_visible()

        assert page.locator("script").count() == 0
        assert requests == [out.as_uri()], f"requests beyond the file: {requests}"
        assert errors == [], f"console errors: {errors}"

        # For review: the matrix and the profile, then a case whose corrupted data reached
        # the answer.
        OUTCOMES_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        # Bounding boxes are the viewport's: from the top of the page, they are the page's.
        page.evaluate("window.scrollTo(0, 0)")
        top = page.locator("table.heatmap").bounding_box()
        profile = page.locator("table.profile.families").bounding_box()
        rome = page.locator("details.case:has(.oc-propagated)").first
        end = rome.bounding_box()
        page.screenshot(path=str(OUTCOMES_SCREENSHOT), full_page=True,
                        clip={"x": 0, "y": top["y"] - 60, "width": 1200,
                              "height": profile["y"] + profile["height"] - top["y"] + 80})
        rome.screenshot(path=str(OUTCOMES_SCREENSHOT.with_name("report-outcome-case.png")))
        assert end["height"] > 100
    finally:
        page.close()


def test_planted_values_and_facts_with_markup_stay_text(browser, tmp_path):
    # A tool's corrupted value or an answer's fact is the agent's world's text: a report
    # with `<script>` in them shows it and runs nothing.
    import json

    report = json.loads(OUTCOMES.read_text())
    script = "<script>alert('planted')</script>"
    for case in report["cases"]:
        for e in (case.get("outcome") or {}).get("evidence", []):
            if e["kind"] == "planted":
                e["planted"] = script
            if e["kind"] == "unsupported":
                e["fact"] = "<img src=x onerror=alert(1)>"
    source = tmp_path / "hostile.json"
    source.write_text(json.dumps(report))
    out = tmp_path / "hostile.html"
    render(source, out)
    page, requests, errors = open_page(browser, out)
    try:
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.locator("script").count() == 0
        assert page.locator("img").count() == 0
        assert page.locator(f"ul.ev code:text-is(\"{script}\")").count() > 0
        assert page.locator("ul.ev code:text-is('<img src=x onerror=alert(1)>')").count() > 0
        assert dialogs == []
        assert requests == [out.as_uri()] and errors == []
    finally:
        page.close()
