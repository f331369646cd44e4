// The contract matrix of a run page: invariants × scenarios. Live, each cell fills in as
// its cases end (the `case` event's `cells`: cases ended of the cell's total, passes and
// failures so far, a provisional colour); its verdict replaces that when the run judges it
// (the `cell` event, or the report of a run that has ended). Drawn once per batch of
// events, never once per event.

import { h } from "./dom.js";

const key = (invariant, scenario) => `${invariant}\u0000${scenario}`;

export class Matrix {
  constructor() {
    this.el = h("div", { class: "scroll", id: "matrix" }, h("p", { class: "dim" }, "Scenarios appear as their cases run."));
    this.scenarios = [];
    this.invariants = [];
    this.done = {};
    this.verdicts = {};
    this.progress = {};
    this.cells = 0;
    this.dirty = false;
  }
  scenario(s) {
    if (!this.scenarios.includes(s)) { this.scenarios.push(s); this.dirty = true; }
  }
  invariant(i) {
    if (!this.invariants.includes(i)) { this.invariants.push(i); this.dirty = true; }
  }
  caseEnded(c) {
    this.scenario(c.scenario);
    this.done[c.scenario] = (this.done[c.scenario] || 0) + 1;
    for (const cell of c.cells || []) {
      this.invariant(cell.invariant);
      const k = key(cell.invariant, c.scenario);
      const p = this.progress[k] || (this.progress[k] = { ended: 0, of: cell.of, pass: 0, fail: 0 });
      p.ended++;
      p.of = cell.of;
      if (cell.verdict === "pass") p.pass++;
      else if (cell.verdict === "fail") p.fail++;
      else p.other = cell.verdict;
    }
    this.dirty = true;
  }
  cell(c) {
    this.cells++;
    this.scenario(c.scenario);
    this.invariant(c.invariant);
    this.verdicts[key(c.invariant, c.scenario)] = c;
    this.dirty = true;
  }
  /** Draws what changed since the last draw (called once per batch). */
  draw() {
    if (!this.dirty) return;
    this.dirty = false;
    const head = h("tr", {}, h("th", { scope: "col" }, "invariant \\ scenario"), this.scenarios.map((s) => h("th", { scope: "col" }, s)));
    const count = h("tr", {}, h("th", { scope: "row" }, "cases ended"), this.scenarios.map((s) => h("td", { class: "n", "data-count": s }, this.done[s] || 0)));
    const rows = this.invariants.map((i) => h("tr", {}, h("th", { scope: "row" }, i), this.scenarios.map((s) => this.td(i, s))));
    this.el.replaceChildren(h("table", { class: "matrix" }, h("thead", {}, head), h("tbody", {}, count, rows)));
  }
  td(invariant, scenario) {
    const k = key(invariant, scenario);
    const at = { "data-invariant": invariant, "data-scenario": scenario };
    const c = this.verdicts[k];
    if (c) {
      const v = (c.verdict?.verdict || c.verdict || "").toString();
      return h("td", { ...at, "data-state": "final", class: `c v-${v || "none"}`, title: c.verdict?.reason || c.reason || v }, v.replace("_", " "));
    }
    const p = this.progress[k];
    if (!p) return h("td", { ...at, "data-state": "none", class: "c v-none", title: "no case of it has ended yet" }, "…");
    // Provisional: the colour of what its cases say so far; the verdict comes at the end.
    const tone = p.fail ? "fail" : p.pass ? "pass" : p.other || "none";
    const why = `${p.ended} of ${p.of} cases ended: ${p.pass} passed, ${p.fail} failed (so far: the run judges the cell when it ends)`;
    return h("td", { ...at, "data-state": "live", "data-ended": p.ended, class: `c live p-${tone}`, title: why },
      h("span", { class: "frac" }, `${p.ended}/${p.of}`),
      h("span", { class: "tally" }, h("span", { class: "ok" }, `✓${p.pass}`), " ", h("span", { class: "ko" }, `✗${p.fail}`)));
  }
}
