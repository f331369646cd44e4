#!/usr/bin/env python3
"""The web view's two performance claims (issue #52, docs/benchmarks.md), measured in
Debian's Chromium (/usr/bin/chromium) through Playwright against `flakestorm serve`:

1. A contract run of CASES cases of a stub agent that answers at once (tests/web/_web.py),
   followed live by the run page. Per round, interleaved: the same run with no page
   following it (the baseline: how long the run takes) and with the page following it.
   Measured on the page (`live.js`'s `Meter`): events and batches applied, the largest
   batch, the longest an event waited between arriving and being drawn, the longest
   batch's drawing; the time from the run's end (`finished_ms` of its record) to the page
   showing its final status and count; and, sampled every 100 ms while it runs, how many
   cases the page's count trailed the daemon's.
2. The runs page of a store of RUNS runs (the runs above, and finished runs written by the
   store's own code from another process: examples/seed_runs.rs, as the CLI writes to a
   daemon's store), against the same page of the store of the few runs above: the time
   from navigation to the table drawn, median of ROUNDS.

Prints a markdown section for docs/benchmarks.md.

    cargo build --example seed_runs
    FLAKESTORM_BIN=target/debug/flakestorm .venv-tests/bin/python scripts/bench_web.py [ROUNDS] [CASES] [RUNS]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "pyharness"), str(REPO / "tests" / "web")]

import flakestorm_harness as harness  # noqa: E402
from _web import StubAgent, prompts, seed_store, stub_config  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def serve(tmp: Path):
    fs = harness.Flakestorm.start(tmp, harness.clean_env())
    fs.link = fs.wait_line(r"^flakestorm: web view at (\S+) ").group(1)
    return fs


def api(fs, method, path, body=None):
    status, raw = fs.control(method, path, body)
    assert status < 400, (status, raw[:500])
    return json.loads(raw) if raw else None


def wait_ended(fs, run_id: str) -> dict:
    while True:
        r = api(fs, "GET", f"/v1/runs/{run_id}")
        if r["status"] not in ("queued", "running"):
            return r
        time.sleep(0.05)


def unwatched(fs, config: str) -> float:
    """The run alone: seconds from its start to its end, by its record."""
    r = api(fs, "POST", "/v1/runs", {"kind": "contract", "config": config})
    r = wait_ended(fs, r["id"])
    return (r["finished_ms"] - r["started_ms"]) / 1000


def watched(page, fs, config: str) -> dict:
    """The run started from the page and followed by it."""
    page.goto(page.url.split("#")[0] + "#/start")
    page.select_option("#kind", "contract")
    page.fill("#config", config)
    page.click("#start-run")
    page.wait_for_url("**#/run/*")
    run_id = page.url.split("#/run/")[1]
    trail, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            r = api(fs, "GET", f"/v1/runs/{run_id}")
            trail.append(r["done"])
            if r["status"] not in ("queued", "running"):
                return
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    shown = []
    while True:
        text = page.locator("#run-counts").text_content()
        shown.append(int(text.split("/")[0]))
        if page.locator("#run-stream").get_attribute("data-done-at"):
            break
        time.sleep(0.1)
    stop.set()
    sampler.join()
    record = wait_ended(fs, run_id)
    meter = page.eval_on_selector("#run-stream", "e => ({...e.dataset})")
    final = page.locator("#run-counts").text_content()
    assert final == f"{record['total']}/{record['total']} cases", final
    behind = max((a - b for a, b in zip(trail, shown)), default=0)
    return {
        "id": run_id,
        "run_s": (record["finished_ms"] - record["started_ms"]) / 1000,
        "end_to_page_ms": int(meter["doneAt"]) - record["finished_ms"],
        "events": int(meter["events"]),
        "batches": int(meter["batches"]),
        "batch_peak": int(meter["batchPeak"]),
        "lag_max_ms": int(meter["lagMaxMs"]),
        "apply_max_ms": int(meter["applyMaxMs"]),
        "repeats": int(meter["repeats"]),
        "behind_max": behind,
    }


def runs_page(page, base: str, query: str = "") -> float:
    """Navigation to the runs page until its table is drawn, in ms."""
    page.goto(base + "#/chaos")
    page.wait_for_selector("#rules-summary")
    t = time.perf_counter()
    page.goto(base + "#/runs" + query)
    page.wait_for_selector("table.runs tbody tr")
    return (time.perf_counter() - t) * 1000


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    from playwright.sync_api import sync_playwright

    agent = StubAgent()
    config = stub_config(agent.url, prompts(cases, detail_every=7))
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        fs = serve(Path(tmp))
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox"] if os.geteuid() == 0 else [])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(fs.link)
            page.wait_for_selector("h1:text('Runs')")
            base = page.url.split("#")[0]
            alone, live = [], []
            for _ in range(rounds):
                alone.append(unwatched(fs, config))
                live.append(watched(page, fs, config))
            few = [runs_page(page, base) for _ in range(rounds)]
            # The store filled by the store's own code, in another process (as the CLI
            # writes runs on the daemon's store), then the page again.
            seeded_s = seed_store(Path(tmp) / ".flakestorm", runs - 2 * rounds)
            many = [runs_page(page, base) for _ in range(rounds)]
            widest = [runs_page(page, base, "?limit=1000") for _ in range(rounds)]
        finally:
            browser.close()
            fs.stop()
            agent.close()
    print(section(rounds, cases, runs, alone, live, few, many, widest, seeded_s, time.monotonic() - started))


def section(rounds, cases, runs, alone, live, few, many, widest, seeded_s, took) -> str:
    med = lambda k: statistics.median(r[k] for r in live)  # noqa: E731
    peak = lambda k: max(r[k] for r in live)  # noqa: E731
    return f"""## The web view (issue #52)

- Command: `cargo build --example seed_runs && FLAKESTORM_BIN=target/debug/flakestorm .venv-tests/bin/python scripts/bench_web.py {rounds} {cases} {runs}` (debug build; Debian's Chromium, headless, through Playwright)
- Machine: {os.cpu_count()} cores; date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; whole benchmark {took:.0f} s
- Method: a contract run of {cases} cases (2 invariants, 1 scenario) of a stub agent that answers at once, concurrency 10, started from the page and followed live, interleaved with the same run started through the API and followed by nothing (the baseline); {rounds} rounds, medians (worst round in brackets). Then the runs page (newest 50, the default page) on a store of {len(alone) + len(live)} runs and, after {runs - len(alone) - len(live)} finished runs written by the store's own code from another process (`examples/seed_runs.rs`, {seeded_s:.1f} s), of {runs} runs: navigation to the table drawn.

| measure | figure |
|---|--:|
| run of {cases} cases, no page following (baseline) | {statistics.median(alone):.2f} s |
| the same run, followed live by the page | {med('run_s'):.2f} s ({statistics.median(r['run_s'] for r in live) / statistics.median(alone):.2f}× the baseline) |
| events the page applied, in batches | {med('events'):.0f} in {med('batches'):.0f} batches (largest {peak('batch_peak')}) |
| longest an event waited between arriving and being drawn | {med('lag_max_ms'):.0f} ms ({peak('lag_max_ms')}) |
| longest batch to draw | {med('apply_max_ms'):.0f} ms ({peak('apply_max_ms')}) |
| events applied twice | {peak('repeats')} |
| most cases the page's count trailed the daemon's (sampled every 100 ms) | {med('behind_max'):.0f} ({peak('behind_max')}) |
| the run's end to the page showing its final status and count | {med('end_to_page_ms'):.0f} ms ({peak('end_to_page_ms')}) |
| runs page, store of {len(alone) + len(live)} runs: navigation to the table drawn | {statistics.median(few):.0f} ms |
| runs page, store of {runs} runs | {statistics.median(many):.0f} ms ({statistics.median(many) / statistics.median(few):.2f}×; target < 1000 ms) |
| the same, 1,000 runs a page (the API's largest page) | {statistics.median(widest):.0f} ms |
"""


if __name__ == "__main__":
    main()
