// The web view (docs/web.md) in Firefox: the behaviours tests/web checks in Chromium that
// a browser can get wrong, in Debian's Firefox ESR (firefox.mjs): the printed link logs in
// (an HttpOnly, SameSite=Strict cookie; the token out of the address bar and the history);
// a wrong token or a forged cookie gets the login and no data; the runs list; a run
// started from the page and followed live over its event stream to its verdict, its
// matrix cell by cell and a case's wire timeline drawn while it runs; a stream broken
// mid-run resumed from the last event id; a change without the CSRF header and every
// request of a page on another origin refused; a comparison naming its regression, a
// profile put for 5 s seen to expire, a faulted call in the live traffic; and on every
// page, no Content-Security-Policy violation, no console error and no request anywhere
// but the daemon.
//
// Run: FLAKESTORM_BIN=target/debug/flakestorm node --test tests/web/firefox/

import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";

import { Daemon } from "./daemon.mjs";
import { Watch, go, heading, launch, login, newPage, startRun, text, until } from "./firefox.mjs";
import { Agent, Cutter, Tool, contract, prompts } from "./stubs.mjs";

const s = {};
const watch = new Watch();

before(async () => {
  [s.browser, s.fs] = await Promise.all([launch(), Daemon.start()]);
  s.tool = await new Tool().start();
  s.agent = await new Agent({ proxy: s.fs.proxy, tool: s.tool.url }).start();
  s.slow = await new Agent({ delayMs: 40 }).start();
  s.origins = [s.fs.control];
  s.finished = await s.fs.finishedRun(contract(s.agent.url, prompts(6, 3), { tool: s.tool.url }));
});

after(async () => {
  await s.browser?.close();
  await Promise.all([s.agent?.close(), s.slow?.close(), s.tool?.close()]);
  await s.fs?.stop();
});

const port = () => s.fs.addrs.control.split(":")[1];

describe("the web view in Firefox", { timeout: 110_000 }, () => {
  test("the printed link logs in: an HttpOnly SameSite=Strict cookie, the token gone from the address and the history; the runs list", async () => {
    const page = await login(s.browser, watch, s.fs.link);
    assert.ok(s.fs.link.includes("#token="), s.fs.link);
    const where = await page.evaluate(() => ({ href: location.href, history: history.length, cookie: document.cookie }));
    assert.equal(where.href, `${s.fs.control}/#/runs`);
    assert.equal(where.history, 1, "the link's entry was replaced, not kept in the history");
    const cookie = (await page.cookies()).find((c) => c.name === `flakestorm_session_${port()}`);
    assert.ok(cookie, `no session cookie: ${JSON.stringify(await page.cookies())}`);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, "Strict");
    assert.ok(!cookie.value.includes(s.fs.token), "the cookie is not the token");
    assert.equal(where.cookie, "", "the page's scripts cannot read the session");
    // The run made over the API, with its verdict and where it ran.
    const row = `tr[data-run='${s.finished.id}']`;
    await until(page, row);
    const cells = await page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent));
    assert.equal(cells[4], s.finished.status, cells.join(" | "));
    assert.equal(cells[7], "12/12", cells.join(" | "));
    assert.equal(cells[9], "–", `not merged from shards: ${cells.join(" | ")}`);
    assert.equal(cells[11], "this daemon", cells.join(" | "));
    assert.equal(await page.$eval("#nav", (n) => n.hidden), false);
    await page.browserContext().close();
  });

  test("a wrong token or a forged cookie gets the login and no data; the token pasted logs in", async () => {
    const page = await newPage(s.browser, watch);
    await page.goto(`${s.fs.control}/#token=${"f".repeat(64)}`);
    await heading(page, "Log in");
    assert.match(await text(page, "#login-why"), /token was refused/);
    assert.equal(await page.$$eval("table", (t) => t.length), 0);
    assert.equal(await page.$eval("#nav", (n) => n.hidden), true);
    assert.deepEqual(await page.cookies(), [], "a refused token sets no cookie");

    // A stale or forged session cookie, as another page of this host could leave one.
    await page.evaluate((name) => { document.cookie = `${name}=${"f".repeat(64)}; path=/; SameSite=Strict`; }, `flakestorm_session_${port()}`);
    await page.goto(`${s.fs.control}/`);
    await heading(page, "Log in");
    assert.equal(await page.$$eval("table", (t) => t.length), 0);

    await page.type("#token", s.fs.token);
    await page.keyboard.press("Enter");
    await heading(page, "Runs");
    const cookies = await page.cookies();
    assert.equal(cookies.length, 1, JSON.stringify(cookies));
    assert.equal(cookies[0].httpOnly, true, "the daemon's cookie took the forged one's place");
    await page.browserContext().close();
  });

  test("a run started from the page is followed live: the matrix cell by cell, then its verdict", async () => {
    const page = await login(s.browser, watch, s.fs.link);
    // One case at a time, 40 ms each: a few seconds of cases, drawn in batches.
    const id = await startRun(page, contract(s.slow.url, prompts(80, 4), { concurrency: 1 }));
    const cell = (inv) => `#matrix td[data-invariant='${inv}']`;
    await until(page, (c) => document.querySelector(c)?.dataset.state === "live", cell("short"));
    const first = Number(await page.$eval(cell("short"), (td) => td.dataset.ended));
    // The same cell moves on while the run runs, in provisional colours.
    await until(page, (n) => {
      const td = (i) => document.querySelector(`#matrix td[data-invariant='${i}']`);
      const short = td("short"), cites = td("cites");
      return +short.dataset.ended > n && short.dataset.state === "live"
        && short.classList.contains("p-fail") && cites.classList.contains("p-pass")
        && /^\d+\/80/.test(short.textContent) && short.title.includes("so far")
        && document.querySelector("#run-status").textContent === "running";
    }, first);
    await until(page, () => /^\d+$/.test(document.querySelector("#run-stream")?.dataset.doneAt ?? ""), undefined, 60_000);
    const [, record] = await s.fs.api("GET", `/v1/runs/${id}`);
    assert.equal(await text(page, "#run-status"), record.status);
    assert.equal(await text(page, "#run-counts"), "80/80 cases");
    assert.equal(await page.$$eval("#cases li", (l) => l.length), 80);
    const final = await page.$$eval("#matrix td[data-invariant]", (tds) => tds.map((td) => [td.dataset.invariant, td.dataset.state, td.className]));
    assert.ok(final.some(([i, st, c]) => i === "short" && st === "final" && /\bv-fail\b/.test(c)), JSON.stringify(final));
    assert.ok(final.some(([i, st, c]) => i === "cites" && st === "final" && /\bv-pass\b/.test(c)), JSON.stringify(final));
    // Every event once, in order, applied in batches.
    const m = await page.$eval("#run-stream", (e) => ({ ...e.dataset }));
    assert.equal(m.repeats, "0", JSON.stringify(m));
    assert.equal(m.events, m.lastEvent, JSON.stringify(m));
    assert.ok(Number(m.batches) * 5 < Number(m.events), JSON.stringify(m));
    await page.browserContext().close();
  });

  test("a case's wire timeline is drawn while its run runs; the run's page has its matrix and reports", async () => {
    const page = await login(s.browser, watch, s.fs.link);
    // Each search in the `search` scenario is slowed by 500 ms (a fault, not a sleep here),
    // one case at a time: the run is still going when the first case's timeline is drawn.
    const id = await startRun(page, contract(s.agent.url, prompts(8), { concurrency: 1, tool: s.tool.url, slowMs: 500 }));
    s.passed = id;
    await until(page, "#cases svg.tl", undefined, 60_000);
    assert.equal(await text(page, "#run-status"), "running");
    await until(page, () => document.querySelector("#run-stream")?.textContent === "ended", undefined, 60_000);
    assert.equal(await text(page, "#run-status"), "passed");
    // The finished run's page, drawn from its report.
    await go(page, "#/runs");
    await heading(page, "Runs");
    await go(page, `#/run/${id}`);
    await until(page, "#matrix td.c.v-pass");
    const links = await page.$$eval("#reports a", (as) => as.map((a) => [a.textContent, a.getAttribute("href")]));
    for (const f of ["html", "json", "junit", "markdown"]) {
      assert.ok(links.some(([, href]) => href === `/v1/runs/${id}/report?format=${f}`), JSON.stringify(links));
    }
    const html = await page.evaluate((u) => fetch(u).then((r) => r.text()), `/v1/runs/${id}/report?format=html`);
    assert.match(html, /<html/);
    await page.browserContext().close();
  });

  test("an event stream broken mid-run resumes from the last event id, nothing lost or repeated", async () => {
    const cutter = await new Cutter(s.fs.addrs.control).start();
    s.origins.push(`http://${cutter.addr}`);
    try {
      const page = await login(s.browser, watch, s.fs.link.replace(s.fs.addrs.control, cutter.addr));
      // 250 cases of at least 40 ms each, one at a time: still running when Firefox
      // reconnects (after the stream's `retry: 1000`; without it Firefox waits 5 s).
      const want = prompts(250);
      await startRun(page, contract(s.slow.url, want, { concurrency: 1 }));
      await until(page, "#cases li:nth-child(5)");
      const seen = Number(await page.$eval("#run-stream", (e) => e.dataset.lastEvent));
      const cutAt = Date.now();
      cutter.cut();
      await until(page, () => /resumed after event/.test(document.querySelector("#run-stream").textContent), undefined, 30_000);
      await until(page, () => /^\d+$/.test(document.querySelector("#run-stream")?.dataset.doneAt ?? ""), undefined, 60_000);
      const resumes = cutter.heads.map((hd, i) => [hd, cutter.times[i]]).filter(([hd]) => / \/v1\/runs\/[^ ]+\/events /.test(hd.split("\r\n")[0]) && /^last-event-id:/im.test(hd));
      const again = resumes.map(([hd]) => hd);
      assert.ok(again.length, cutter.heads.join("\n---\n"));
      // The stream's `retry: 1000` is honoured: Firefox's own default would be 5 s.
      const waited = resumes[0][1] - cutAt;
      assert.ok(waited < 4000, `resumed ${waited} ms after the break`);
      assert.ok(Number(again[0].match(/^last-event-id:\s*(\d+)/im)[1]) >= seen);
      const m = await page.$eval("#run-stream", (e) => ({ ...e.dataset }));
      assert.equal(m.repeats, "0", JSON.stringify(m));
      assert.equal(m.events, m.lastEvent, JSON.stringify(m));
      const shown = await page.$$eval("#cases li .prompt", (ps) => ps.map((p) => p.textContent));
      assert.deepEqual(shown.sort(), [...want].sort());
      await page.browserContext().close();
    } finally {
      await cutter.close();
    }
  });

  test("a change without the CSRF header, and every request of a page on another origin, are refused", async () => {
    const page = await login(s.browser, watch, s.fs.link);
    const count = () => page.evaluate(() => fetch("/v1/runs?limit=1000").then((r) => r.json()).then((j) => j.runs.length));
    const chaos = () => page.evaluate(() => fetch("/v1/chaos").then((r) => r.text()));
    const [runsBefore, chaosBefore] = [await count(), await chaos()];
    const got = await page.evaluate(() => fetch("/v1/reset", { method: "POST" }).then(async (r) => [r.status, await r.json()]));
    assert.equal(got[0], 403, JSON.stringify(got));
    assert.equal(got[1].error.code, "csrf");

    const evil = attacker(s.fs.control);
    const evilPort = await new Promise((ok) => evil.listen(0, "127.0.0.1", () => ok(evil.address().port)));
    try {
      // localhost is another origin (and site) than 127.0.0.1: the browser sends the
      // session cookie only where SameSite allows, and the daemon refuses the rest.
      const other = await page.browserContext().newPage();
      await other.goto(`http://localhost:${evilPort}/`);
      await until(other, () => document.title.length > 0);
      const title = await other.title();
      assert.ok(!title.includes("read"), `another origin read an answer: ${title}`);
      assert.equal(JSON.parse(title).length, 4, title);
      await Promise.all([other.waitForNavigation(), other.evaluate(() => document.getElementById("f").submit())]);
      assert.ok(!(await other.content()).includes("run_not_found"));
      await other.close();
    } finally {
      evil.closeAllConnections();
      evil.close();
    }
    assert.equal(await count(), runsBefore);
    assert.equal(await chaos(), chaosBefore);
    await page.browserContext().close();
  });

  test("compare names the regression; a profile put for 5 s expires on the page; a faulted call in the live traffic", async () => {
    const page = await login(s.browser, watch, s.fs.link);
    // The run that passed, then the one whose detailed answers broke `short`.
    await go(page, `#/compare?base=${s.passed}&head=${s.finished.id}`);
    await until(page, "#compare-summary");
    assert.match(await text(page, "#compare-summary"), /[1-9]\d* regressions?\b/);
    const row = await page.$$eval("tr.ch-regression", (rs) => rs.map((r) => r.textContent));
    assert.ok(row.some((r) => r.includes("short")), row.join("\n"));

    await go(page, "#/chaos");
    await heading(page, "Chaos");
    await until(page, "#rules-summary");
    await page.select("#profile", await page.$eval("#profile option", (o) => o.value));
    await page.$eval("#pttl-n", (el) => { el.value = ""; });
    await page.type("#pttl-n", "5");
    await page.select("#pttl-u", "s");
    await page.click("#put-profile");
    await until(page, "#ttl-left");
    assert.doesNotMatch(await text(page, "#rules-summary"), /No chaos rules/);
    // The revert is the daemon's; the page counts down and shows it happen.
    await until(page, () => /No chaos rules/.test(document.querySelector("#rules-summary")?.textContent), undefined, 20_000);

    // The searches the `search` scenario slowed, in the journal.
    await page.type("#f-tool", "web_search");
    await page.type("#f-fault", "search-slow");
    await page.click(".filters button");
    await until(page, () => /search-slow \(slow\)/.test(document.querySelector("#traffic li.faulted")?.textContent));
    await page.click("#traffic li.faulted summary");
    await until(page, () => /^GET http:\/\/127\.0\.0\.1:\d+\/search\?q=/.test(document.querySelector("#traffic li.faulted details[open] pre")?.textContent));
    await page.browserContext().close();
  });

  test("every page: no CSP violation, no console error, no request but to the daemon", async () => {
    const page = await login(s.browser, watch, s.fs.link);
    const [, other] = await s.fs.api("GET", "/v1/runs?limit=2");
    const pages = [["#/runs", "Runs"], [`#/run/${s.finished.id}`, `Run ${s.finished.id}`],
      [`#/compare?base=${other.runs[1].id}&head=${other.runs[0].id}`, "Compare two runs"], ["#/chaos", "Chaos"], ["#/start", "Start a run"]];
    for (const [hash, title] of pages) {
      await go(page, hash);
      await heading(page, title);
      await page.waitForNetworkIdle({ idleTime: 300 });
    }
    const problems = [...watch.problems];
    const violations = await page.evaluate(() => window.__violations);
    // The watch sees a violation when there is one: an inline script, which the policy
    // forbids, is refused and reported.
    const reported = new Promise((ok) => page.on("console", (m) => m.text().startsWith("CSP violation: script-src") && ok()));
    await page.evaluate(() => document.body.append(Object.assign(document.createElement("script"), { textContent: "window.ran = 1" })));
    await reported;
    assert.equal(await page.evaluate(() => window.ran), undefined);
    assert.equal((await page.evaluate(() => window.__violations)).length, 1);
    assert.deepEqual(violations, []);
    assert.deepEqual(problems, [], "the pages reported problems in the console");
    assert.ok(watch.requests.some((u) => u === `${s.fs.control}/ui/app.js`), watch.requests.join("\n"));
    const elsewhere = watch.requests.filter((u) => !s.origins.some((o) => u.startsWith(`${o}/`)) && !u.startsWith("data:"));
    assert.deepEqual(elsewhere, [], "requests to anything but the daemon");
    await page.browserContext().close();
  });
});

/** A page on another origin that tries everything a page can against `target`. */
function attacker(target) {
  const body = `<!DOCTYPE html><html><body>
<form id=f method=POST action="${target}/v1/runs" enctype="text/plain">
<input name='{"kind":"contract","config":"x","a":"' value='"}'></form>
<script>
const tries = [
  fetch("${target}/v1/runs", {credentials: "include"}).then(r => r.text()),
  fetch("${target}/ui/api/runs", {credentials: "include"}).then(r => r.text()),
  fetch("${target}/v1/chaos/profiles/api_outage", {method: "POST", credentials: "include", mode: "no-cors"}),
  fetch("${target}/v1/runs", {method: "POST", credentials: "include", mode: "no-cors",
    headers: {"content-type": "text/plain"}, body: '{"kind":"contract","config":"agent: {endpoint: http://127.0.0.1:9/}"}'}),
];
Promise.allSettled(tries).then(rs => {
  document.title = JSON.stringify(rs.map(r => r.status === "fulfilled" && typeof r.value === "string" ? "read" : r.status));
});
</script></body></html>`;
  return http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
}
