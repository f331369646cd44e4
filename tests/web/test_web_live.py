"""The run page while a run runs (docs/web.md, "A run"): a run of 1,000 cases streamed to
the page in batches without the page falling behind (figures: scripts/bench_web.py); the
matrix filling in cell by cell before the run ends; an event stream broken mid-run
resumed from the last event id, with no event lost or applied twice."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from _web import Cutter, prompts, stub_config
from conftest import login


def start_run(page, config: str) -> str:
    page.goto(page.url.split("#")[0] + "#/start")
    page.select_option("#kind", "contract")
    page.fill("#config", config)
    page.click("#start-run")
    page.wait_for_url("**#/run/*")
    return page.url.split("#/run/")[1]


def meter(page) -> dict:
    return page.eval_on_selector("#run-stream", "e => ({...e.dataset})")


def ended(page, timeout=120_000):
    expect(page.locator("#run-stream")).to_have_attribute("data-done-at", re.compile(r"^\d+$"), timeout=timeout)


def test_a_run_of_a_thousand_cases_streams_to_the_page_in_batches(browser, fs, agent):
    page = login(browser, fs.link)
    run_id = start_run(page, stub_config(agent.url, prompts(1000, detail_every=7)))
    ended(page)
    record = json.loads(fs.control("GET", f"/v1/runs/{run_id}")[1])
    m = meter(page)
    expect(page.locator("#run-counts")).to_have_text("1000/1000 cases")
    assert page.locator("#cases li").count() == 1000
    # Every event once, in order; applied in batches, not one by one (the bench has about
    # 2,000 events in 4 to 10 batches).
    assert int(m["events"]) == int(m["lastEvent"]) > 2000, m
    assert m["repeats"] == "0", m
    assert int(m["batches"]) * 20 < int(m["events"]), m
    # Bounds far from what the bench measures (an event waits at most ~0.3-0.4 s to be
    # drawn; the page shows the end within ~25 ms of it): a page that fell behind would
    # take seconds.
    assert int(m["lagMaxMs"]) < 5000, m
    assert int(m["doneAt"]) - record["finished_ms"] < 5000, (m, record)
    cell = page.locator("#matrix td[data-invariant='short']")
    expect(cell).to_have_attribute("data-state", "final")
    expect(cell).to_have_class(re.compile(r"\bv-fail\b"))


def test_the_matrix_fills_cell_by_cell_while_the_run_runs(browser, fs, slow_agent):
    page = login(browser, fs.link)
    # One case at a time, 40 ms each: a few seconds of cases, batches every 250 ms.
    start_run(page, stub_config(slow_agent.url, prompts(80, detail_every=4), concurrency=1))
    short = page.locator("#matrix td[data-invariant='short']")
    cites = page.locator("#matrix td[data-invariant='cites']")
    expect(short).to_have_attribute("data-state", "live", timeout=30_000)
    first = int(short.get_attribute("data-ended"))
    # The same cell moves on while the run still runs, in provisional colours: a failure
    # so far (a prompt asking for detail) and passes so far (checked in one go on the page).
    page.wait_for_function(
        """n => {
          const td = (i) => document.querySelector(`#matrix td[data-invariant='${i}']`);
          const short = td("short"), cites = td("cites");
          return +short.dataset.ended > n && short.dataset.state === "live"
            && short.classList.contains("p-fail") && cites.classList.contains("p-pass")
            && /^\\d+\\/80/.test(short.textContent) && short.title.includes("so far")
            && document.querySelector("#run-status").textContent === "running";
        }""",
        arg=first,
        timeout=30_000,
    )
    ended(page)
    # The verdicts the run judged, in place of the progress.
    expect(short).to_have_attribute("data-state", "final")
    expect(short).to_have_class(re.compile(r"\bv-fail\b"))
    expect(cites).to_have_class(re.compile(r"\bv-pass\b"))


def test_a_stream_broken_mid_run_resumes_from_the_last_event(browser, fs, slow_agent):
    cutter = Cutter(fs.control_addr)
    try:
        page = login(browser, fs.link.replace(fs.control_addr, cutter.addr))
        want = prompts(120)
        start_run(page, stub_config(slow_agent.url, want, concurrency=1))
        expect(page.locator("#cases li").nth(4)).to_be_attached(timeout=30_000)
        seen = int(meter(page)["lastEvent"])
        cutter.cut()
        expect(page.locator("#run-stream")).to_contain_text("resumed after event", timeout=30_000)
        ended(page)
        # The browser asked for what followed the last event it had, and got it.
        again = [h for h in cutter.heads if "/events " in h.split("\r\n")[0] and re.search(r"(?im)^last-event-id:", h)]
        assert again, cutter.heads
        resumed_after = int(re.search(r"(?im)^last-event-id:\s*(\d+)", again[0]).group(1))
        assert resumed_after >= seen
        # Every case once: none lost in the break, none applied twice.
        m = meter(page)
        assert m["repeats"] == "0" and int(m["events"]) == int(m["lastEvent"]), m
        shown = page.locator("#cases li .prompt").all_text_contents()
        assert sorted(shown) == sorted(want)
        expect(page.locator("#run-counts")).to_have_text(f"{len(want)}/{len(want)} cases")
    finally:
        cutter.close()
