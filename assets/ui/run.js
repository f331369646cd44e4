// One run: its record, live while it runs (live.js): the contract matrix filling in cell
// by cell (matrix.js), each case as it ends with its timeline, the agent pool's instances, cancel;
// when it ends, its reports (HTML, JSON, JUnit, Markdown) and tapes to download.

import * as api from "./api.js";
import { h, show, ms, when, badge, problem, wrap } from "./dom.js";
import { follow, Meter } from "./live.js";
import { Matrix } from "./matrix.js";
import { storedCases } from "./stored.js";

const LIVE = new Set(["queued", "running"]);
const FORMATS = [["html", "HTML"], ["json", "JSON"], ["junit", "JUnit XML"], ["markdown", "Markdown"]];
/** A JSON report larger than this is offered as a download, not drawn. */
const DRAW_LIMIT = 8 * 1024 * 1024;

export async function runPage(id) {
  const r = await api.call("GET", `/v1/runs/${encodeURIComponent(id)}`);
  const status = h("span", { id: "run-status" }, badge(r.status));
  const progress = h("progress", { id: "run-progress", max: r.total || 1, value: r.done });
  const counts = h("span", { id: "run-counts" }, `${r.done}/${r.total} cases`);
  const stream = h("span", { class: "dim", id: "run-stream", "aria-live": "polite" });
  const note = h("div", { "aria-live": "polite" });
  const cancel = h("button", { type: "button", id: "cancel", class: "danger", hidden: !LIVE.has(r.status), onclick: async () => {
    cancel.disabled = true;
    try { await api.call("DELETE", `/v1/runs/${encodeURIComponent(id)}`); } catch (e) { note.replaceChildren(problem(e)); cancel.disabled = false; }
  } }, "Cancel the run");
  const reports = h("section", { id: "reports", "aria-label": "reports" });
  const matrix = new Matrix();
  const pool = new Pool();
  const cases = h("ol", { class: "cases", id: "cases", reversed: true });
  show(h("h1", {}, `Run ${r.id}`),
    h("p", { class: "facts" }, status, " ", r.kind, r.contract ? ` · ${r.contract}` : "", r.shards ? h("span", { class: "merged", id: "run-shards" }, ` · merged from ${r.shards} shards`) : "", ` · started ${when(r.started_ms)}`, " · ", counts, " ", progress, " ", stream),
    r.reason ? h("p", { class: "reason" }, r.reason) : null,
    h("p", {}, cancel), note, reports,
    h("h2", {}, "Matrix"), matrix.el,
    h("h2", {}, "Agent pool"), pool.el,
    h("h2", {}, "Cases"), h("p", { class: "dim" }, "Newest first; each with the calls its agent made, as the proxy saw them."), cases);
  const view = {
    cases,
    meter: new Meter(stream),
    stream: (t) => { stream.textContent = t; },
    status: (s) => status.replaceChildren(badge(s)),
    started: (c) => matrix.scenario(c.scenario),
    caseEnded: (c) => {
      progress.max = Math.max(c.total, 1);
      progress.value = c.done;
      counts.textContent = `${c.done}/${c.total} cases`;
      matrix.caseEnded(c);
      pool.caseEnded(c);
    },
    cell: (c) => matrix.cell(c),
    drawn: () => { matrix.draw(); pool.draw(); },
    done: (rec) => {
      status.replaceChildren(badge(rec.status));
      cancel.hidden = true;
      stream.textContent = "ended";
      if (rec.reason) note.replaceChildren(h("p", { class: "reason" }, rec.reason));
      ended(rec, reports, matrix);
    },
  };
  if (LIVE.has(r.status)) return follow(r.id, view);
  if (r.status === "running") stream.textContent = "running elsewhere (the CLI or another daemon): reload for its progress";
  else cases.removeAttribute("reversed"); // the store's, newest first, a page at a time
  const stored = storedCases(r.id, cases);
  await ended(r, reports, matrix);
  await stored;
  return null;
}

/** A run that ended: its reports to download, and (when it has one) the matrix from it. */
async function ended(r, reports, matrix) {
  const id = encodeURIComponent(r.id);
  if (!r.scores || !Object.keys(r.scores).length) {
    reports.replaceChildren(h("p", { class: "dim" }, "No report: the run ended without a verdict."));
    return;
  }
  const links = FORMATS.map(([f, label]) => h("li", {}, h("a", { href: `/v1/runs/${id}/report?format=${f}`, download: `${r.id}.${f === "markdown" ? "md" : f === "junit" ? "xml" : f}` }, label)));
  reports.replaceChildren(h("h2", {}, "Reports"), h("ul", { class: "downloads" }, links));
  api.call("GET", `/ui/api/runs/${id}/tapes`).then((t) => {
    if (t.tapes.length) reports.append(h("p", {}, "Tapes: ", t.tapes.map((n) => h("a", { href: `/ui/api/runs/${id}/tapes/${encodeURIComponent(n)}`, download: n }, n, " "))));
  }).catch(() => {});
  if (matrix.cells) return; // drawn live from its cell events
  const resp = await fetch(`/v1/runs/${id}/report?format=json`, { method: "HEAD", credentials: "same-origin" });
  const size = Number(resp.headers.get("content-length") || 0);
  if (size > DRAW_LIMIT) {
    reports.append(h("p", { class: "problem", id: "too-large" }, `This run's report is ${(size / 1048576).toFixed(1)} MiB, too large to draw here: download it above (the HTML report has every case and timeline).`));
    return;
  }
  const report = await api.call("GET", `/v1/runs/${id}/report?format=json`).catch(() => null);
  for (const c of report?.contract?.cells || report?.cells || []) matrix.cell(c);
  matrix.draw();
}

/** The agent pool's instances, as the cases that ran on them say. */
class Pool {
  constructor() {
    this.el = h("div", { id: "pool" }, h("p", { class: "dim" }, "The instances appear as cases end on them (a run whose agent flakestorm did not start has none)."));
    this.instances = new Map();
  }
  caseEnded(c) {
    if (!c.instance) return;
    const i = this.instances.get(c.instance) || { cases: 0 };
    i.cases++;
    i.last = c.input;
    this.instances.set(c.instance, i);
    this.dirty = true;
  }
  draw() {
    if (!this.dirty) return;
    this.dirty = false;
    const rows = [...this.instances.entries()].sort((a, b) => a[0] - b[0]).map(([n, i]) => h("tr", {}, h("td", {}, n), h("td", { class: "n" }, i.cases), h("td", {}, i.last)));
    this.el.replaceChildren(wrap(h("table", {}, h("thead", {}, h("tr", {}, ["instance", "cases", "last case"].map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows))));
  }
}
