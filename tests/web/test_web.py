"""The web view (docs/web.md) in a real browser: logged in with the link `serve` prints,
a contract run started from the page and watched live (a case's timeline drawn before the
run ends), its reports downloaded, a second run compared and its regression named, a
third cancelled, a profile put for 5 s and seen to expire, a faulted tool call found in
the live traffic; and refused: a forged cookie (the login, no data), a change without the
CSRF header, and every request a page on another origin tries, from another site and
from the same site (127.0.0.1 on another port, which gets the cookie). Screenshots of
each page go to target/web/ and, with FLAKESTORM_DOCS_IMAGES=1, from there to
docs/images/web-*.png."""

from __future__ import annotations

import json
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import expect

import _frameworks
from _frameworks import q

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "target" / "web"
DOCS = REPO / "docs" / "images"

# Each case waits 1.2 s on its search (a `slow` fault, not a sleep here), so a run of
# several cases is still going when its first case's timeline is drawn.
def contract(search_fault: str) -> str:
    return f"""\
contract:
  name: Research agent
  invariants:
    - {{id: cites-source, type: regex, pattern: "(?i)according to", severity: critical}}
    - {{id: searches, type: tool_called, tool: web_search}}
  chaos_matrix:
    - name: search
      tool_faults: [{search_fault}]
"""


SLOW = "{id: search-slow, tool: web_search, mode: slow, delay_ms: 1200}"
DOWN = "{id: search-down, tool: web_search, mode: error, error_code: 503}"
PROMPTS = ["What was ACME's Q3 revenue?", "How did ACME's quarter go?", "Give me ACME's Q3 numbers."]


def shot(page, name: str):
    """A screenshot of the page, a test artefact in target/web/; copied over the docs'
    image only when FLAKESTORM_DOCS_IMAGES=1 (docs/web.md), so a test run leaves the
    working tree as it was."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"web-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("FLAKESTORM_DOCS_IMAGES") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS / path.name)


def start_run(page, config: str) -> str:
    page.goto(page.url.split("#")[0] + "#/start")
    page.select_option("#kind", "contract")
    page.fill("#config", config)
    page.click("#start-run")
    page.wait_for_url("**#/run/*")
    return page.url.split("#/run/")[1]


@pytest.fixture(scope="module")
def page(browser, fs):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    p = ctx.new_page()
    p.goto(fs.link)
    expect(p.get_by_role("heading", name="Runs")).to_be_visible()
    assert "token=" not in p.url, "the token stays out of the address bar"
    yield p
    ctx.close()


def test_a_contract_run_live_its_reports_and_a_comparison(page, stack):
    first = start_run(page, stack.config(contract(SLOW), PROMPTS))
    # A case's timeline is on the page while the run still runs.
    expect(page.locator("#cases svg.tl").first).to_be_visible(timeout=60_000)
    expect(page.locator("#run-status")).to_have_text("running")
    shot(page, "run-live")
    expect(page.locator("#run-status")).to_have_text("passed", timeout=120_000)
    expect(page.locator("#matrix td.c.v-pass").first).to_be_visible()
    # Its cases, and the no-chaos baseline the outcome classes are decided against.
    assert page.locator("#cases li").count() >= len(PROMPTS)
    with page.expect_download() as d:
        page.click("#reports >> text=HTML")
    assert b"<html" in Path(d.value.path()).read_bytes()
    for fmt in ("JSON", "JUnit XML", "Markdown"):
        expect(page.locator("#reports a", has_text=fmt)).to_have_attribute("href", f"/v1/runs/{first}/report?format={ {'JSON': 'json', 'JUnit XML': 'junit', 'Markdown': 'markdown'}[fmt]}")
    shot(page, "run")

    second = start_run(page, stack.config(contract(DOWN), PROMPTS))
    expect(page.locator("#run-status")).to_have_text("failed", timeout=120_000)
    page.goto(page.url.split("#")[0] + f"#/compare?base={first}&head={second}")
    expect(page.locator("#compare-summary")).to_contain_text("regression")
    row = page.locator("tr.ch-regression", has_text="cites-source")
    expect(row.first).to_be_visible()
    expect(row.first).to_contain_text("search")
    shot(page, "compare")
    page.goto(page.url.split("#")[0] + "#/runs")
    expect(page.locator(f"tr[data-run='{second}']")).to_contain_text("this daemon")
    shot(page, "runs")


def test_a_run_cancelled_from_the_page(page, stack):
    many = PROMPTS * 5
    start_run(page, stack.config(contract(SLOW), many))
    expect(page.locator("#cases li").first).to_be_visible(timeout=60_000)
    page.click("#cancel")
    expect(page.locator("#run-status")).to_have_text("cancelled", timeout=30_000)
    assert page.locator("#cases li").count() < len(many)


def test_chaos_with_a_ttl_and_the_live_traffic(page):
    page.goto(page.url.split("#")[0] + "#/chaos")
    page.select_option("#profile", index=0)
    page.fill("#pttl-n", "5")
    page.select_option("#pttl-u", "s")
    page.click("#put-profile")
    expect(page.locator("#ttl-left")).to_be_visible()
    expect(page.locator("#rules-summary")).not_to_contain_text("No chaos rules")
    shot(page, "chaos")
    # The revert is the daemon's; the page counts down and shows it happen.
    expect(page.locator("#rules-summary")).to_contain_text("No chaos rules", timeout=20_000)
    # The second run's faulted searches are in the journal.
    page.fill("#f-tool", "web_search")
    page.fill("#f-fault", "search-down")
    page.locator(".filters button", has_text="Filter").last.click()
    item = page.locator("#traffic li.faulted").first
    expect(item).to_contain_text("search-down (error)")
    item.locator("summary").click()
    expect(item.locator("pre").first).to_contain_text("GET ")
    shot(page, "traffic")


def test_a_forged_cookie_shows_the_login_and_no_data(browser, fs):
    port = fs.control_addr.rsplit(":", 1)[1]
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    ctx.add_cookies([{"name": f"flakestorm_session_{port}", "value": "f" * 64,
                      "url": f"http://{fs.control_addr}/"}])
    p = ctx.new_page()
    p.goto(f"http://{fs.control_addr}/")
    expect(p.get_by_role("heading", name="Log in")).to_be_visible()
    assert p.locator("table").count() == 0
    shot(p, "login-phone")
    ctx.close()


def test_a_change_without_the_csrf_header_is_refused(page):
    before = page.evaluate("fetch('/v1/chaos').then(r => r.json())")
    got = page.evaluate("""fetch('/v1/reset', {method: 'POST'}).then(async r => [r.status, await r.json()])""")
    assert got[0] == 403 and got[1]["error"]["code"] == "csrf", got
    assert page.evaluate("fetch('/v1/chaos').then(r => r.json())") == before


class _Attacker(BaseHTTPRequestHandler):
    """A page on another origin that tries everything a page can."""

    def log_message(self, *a):
        pass

    def do_GET(self):
        target = self.server.target
        body = f"""<!DOCTYPE html><html><body>
<form id=f method=POST action="{target}/v1/runs" enctype="text/plain">
<input name='{{"kind":"contract","config":"x","a":"' value='"}}'></form>
<script>
const out = [];
const tries = [
  fetch("{target}/v1/runs", {{credentials: "include"}}).then(r => r.text()),
  fetch("{target}/ui/api/runs", {{credentials: "include"}}).then(r => r.text()),
  fetch("{target}/v1/chaos/profiles/api_outage", {{method: "POST", credentials: "include", mode: "no-cors"}}),
  fetch("{target}/v1/runs", {{method: "POST", credentials: "include", mode: "no-cors",
    headers: {{"content-type": "text/plain"}}, body: '{{"kind":"contract","config":"agent: {{endpoint: http://127.0.0.1:9/}}"}}'}}),
];
Promise.allSettled(tries).then(rs => {{
  document.title = JSON.stringify(rs.map(r => r.status === "fulfilled" && typeof r.value === "string" ? "read" : r.status));
}});
</script></body></html>"""
        data = body.encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_page_on_another_origin_gets_nothing_and_changes_nothing(page, fs):
    runs_before = page.evaluate("fetch('/v1/runs?limit=1000').then(r => r.json()).then(j => j.runs.length)")
    chaos_before = page.evaluate("fetch('/v1/chaos').then(r => r.json())")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    server.target = f"http://{fs.control_addr}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    session = f"flakestorm_session_{fs.control_addr.rsplit(':', 1)[1]}"
    try:
        # localhost is another site than 127.0.0.1: SameSite keeps the session cookie from
        # its requests. 127.0.0.1 on another port is the same site: the browser sends the
        # cookie (cookies know no ports), so only the daemon's own checks refuse it.
        for origin, same_site in ((f"http://localhost:{port}", False), (f"http://127.0.0.1:{port}", True)):
            jar = [c["name"] for c in page.context.cookies(f"{origin}/")]
            assert (session in jar) == same_site, (origin, jar)
            evil = page.context.new_page()
            evil.goto(f"{origin}/")
            evil.wait_for_function("document.title.length > 0")
            title = evil.title()
            assert "read" not in title, f"{origin} read an answer: {title}"
            # A form POST (text/plain, with the cookie where the browser sends it): refused.
            with evil.expect_navigation():
                evil.evaluate("document.getElementById('f').submit()")
            answer = evil.content()
            assert "forbidden_origin" in answer and "run_not_found" not in answer, (origin, answer)
            evil.close()
    finally:
        server.shutdown()
    assert page.evaluate("fetch('/v1/runs?limit=1000').then(r => r.json()).then(j => j.runs.length)") == runs_before
    assert page.evaluate("fetch('/v1/chaos').then(r => r.json())") == chaos_before
