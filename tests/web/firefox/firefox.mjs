// Debian's Firefox ESR, headless, driven by puppeteer-core over WebDriver BiDi: the
// browser the machine has, and no driver or browser build downloaded (Playwright's Firefox
// and geckodriver come from hosts the test machines cannot reach).
//
// Every page the suite opens is watched (`Watch`): its console errors and warnings, its
// uncaught errors, each Content-Security-Policy violation the page sees (the
// `securitypolicyviolation` event, listened to before the page's own scripts run) and
// every request it makes, so a test can say none of them was wrong.

import { existsSync } from "node:fs";
import puppeteer from "puppeteer-core";

export const FIREFOX = process.env.FIREFOX_BIN || "/usr/bin/firefox-esr";

export async function launch() {
  if (!existsSync(FIREFOX)) {
    throw new Error(`${FIREFOX} is missing: install Debian's \`firefox-esr\` (scripts/test.sh does)`);
  }
  return puppeteer.launch({ browser: "firefox", protocol: "webDriverBiDi", executablePath: FIREFOX, headless: true });
}

// Runs in every document before its scripts: a violation goes to the console (where the
// watch sees it) and to a list the test can read.
const SEE_VIOLATIONS = () => {
  window.__violations = [];
  window.addEventListener("securitypolicyviolation", (e) => {
    const v = `${e.violatedDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile || "?"}:${e.lineNumber})`;
    window.__violations.push(v);
    console.error(`CSP violation: ${v}`);
  }, true);
};

export class Watch {
  constructor() {
    this.problems = [];
    this.requests = [];
  }

  /** Watches `page` from its first document on. */
  async attach(page) {
    await page.evaluateOnNewDocument(SEE_VIOLATIONS);
    page.on("console", (m) => {
      if (["error", "warn", "warning", "assert"].includes(m.type())) this.problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on("pageerror", (e) => this.problems.push(`uncaught: ${e.message || e}`));
    page.on("request", (r) => this.requests.push(r.url()));
    return page;
  }

  /** Requests to anything but `origin` (the daemon's), and the page's own data URLs. */
  elsewhere(origin) {
    return this.requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith("data:") && !u.startsWith("blob:"));
  }
}

/** A new browser context (its own cookies) and page, watched, at 1280 px. */
export async function newPage(browser, watch) {
  const ctx = await browser.createBrowserContext();
  const page = await ctx.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  await watch.attach(page);
  return page;
}

/** Waits until `fn(arg)` is true in the page (a string is a CSS selector present). */
export async function until(page, fn, arg, timeout = 30_000) {
  if (typeof fn === "string") return page.waitForSelector(fn, { timeout });
  return page.waitForFunction(fn, { timeout, polling: 50 }, arg);
}

/** The text of the first element `selector` matches ("" when none). */
export function text(page, selector) {
  return page.evaluate((s) => document.querySelector(s)?.textContent ?? "", selector);
}

/** Until the page's main heading is `title` (a page of the view has been drawn). */
export function heading(page, title, timeout = 30_000) {
  return until(page, (t) => document.querySelector("main h1")?.textContent === t, title, timeout);
}

/** Moves the view to `hash` (#/runs, #/run/ID, …) as its links do. */
export function go(page, hash) {
  return page.evaluate((h) => { location.hash = h; }, hash);
}

/** Logs in with `link` in a new context: its page, on the runs page. */
export async function login(browser, watch, link) {
  const page = await newPage(browser, watch);
  await page.goto(link);
  await heading(page, "Runs");
  return page;
}

/** Starts a contract run of `config` from the start page: its id. */
export async function startRun(page, config) {
  await go(page, "#/start");
  await heading(page, "Start a run");
  await page.select("#kind", "contract");
  // Set as a paste would: typing a long YAML key by key would only slow the suite.
  await page.$eval("#config", (el, v) => { el.value = v; }, config);
  await page.click("#start-run");
  await until(page, () => /^#\/run\/./.test(location.hash));
  return page.evaluate(() => decodeURIComponent(location.hash.slice("#/run/".length)));
}
