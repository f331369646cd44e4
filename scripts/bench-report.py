#!/usr/bin/env python3
"""How big the HTML report is at 1,000 cases and how fast Chromium shows it (issue #14's
targets: under 5 MB, rendered in under 2 s). docs/benchmarks.md has the figures.

    .venv-tests/bin/python scripts/bench-report.py        # after scripts/test.sh made the venv

It builds a 1,000-case `ci` report from tests/fixtures/reports/ci.json (the contract
cases repeated), renders it to HTML with `flakestorm report REPORT --format html -o PAGE`
(FLAKESTORM_BIN, else target/debug/flakestorm), then opens the page 5 times in headless Chromium
(/usr/bin/chromium, Playwright) and prints the file size and the median load time.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "reports" / "ci.json"
CASES = 1000
RUNS = 5


def thousand_case_report(out: Path) -> None:
    report = json.loads(FIXTURE.read_text())
    others = len(report["mutation"]["cases"]) + len(report["chaos"]["cases"])
    contract = report["contract"]["cases"]
    report["contract"]["cases"] = [contract[i % len(contract)] for i in range(CASES - others)]
    out.write_text(json.dumps(report))


def render(report: Path, page: Path) -> str:
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = os.environ.get("FLAKESTORM_BIN", str(target / "debug" / "flakestorm"))
    cmd = [binary, "report", str(report), "--format", "html", "-o", str(page)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return "flakestorm report REPORT.json --format html -o PAGE"


def load_times(page: Path) -> list[float]:
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=args)
        for _ in range(RUNS):
            tab = browser.new_page(viewport={"width": 1200, "height": 900})
            start = time.perf_counter()
            tab.goto(page.as_uri(), wait_until="load")
            # Until the first frame after load is painted.
            tab.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")
            times.append(time.perf_counter() - start)
            tab.close()
        browser.close()
    return times


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report, page = Path(tmp) / "ci-1000.json", Path(tmp) / "ci-1000.html"
        thousand_case_report(report)
        how = render(report, page)
        html = page.read_text()
        cases = html.count('<details class="case')
        size = page.stat().st_size
        times = load_times(page)
    print(f"rendered with: {how}")
    print(f"cases: {cases}")
    print(f"HTML size: {size:,} bytes ({size / 1e6:.2f} MB; target < 5 MB)")
    print("Chromium load times: " + ", ".join(f"{t * 1000:.0f} ms" for t in times))
    print(f"median of {RUNS}: {statistics.median(times) * 1000:.0f} ms (target < 2000 ms)")
    ok = size < 5_000_000 and statistics.median(times) < 2.0 and cases == CASES
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
