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
