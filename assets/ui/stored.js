// An ended run's cases as the store keeps them (GET /ui/api/runs/{id}/cases), newest
// first, a page at a time: each with its verdict, outcome class, faults and the wire
// timeline the daemon drew from the calls the store kept for it. The page of a run that
// ended before the daemon started (or whose events are gone) draws its cases from here.

import * as api from "./api.js";
import { h, svg, ms } from "./dom.js";

/** The live page's words for a stored verdict (the `k-` classes colour the row). */
const SO_FAR = { pass: "passed", fail: "failed", not_tested: "not_judged", not_applicable: "unscored" };

/** Appends run `id`'s stored cases (those before case `before`) to `list`, with a button
 * for the older ones when there are more. */
export async function storedCases(id, list, before) {
  const q = before ? `?before=${before}` : "";
  let page;
  try {
    page = await api.call("GET", `/ui/api/runs/${encodeURIComponent(id)}/cases${q}`);
  } catch (e) {
    list.append(h("li", {}, h("span", { class: "dim" }, `no cases: ${e.message}`)));
    return;
  }
  for (const c of page.cases) list.append(row(c));
  if (!before && !page.cases.length) list.append(h("li", { class: "dim" }, "The store has no cases of this run."));
  if (page.next_before) {
    const more = h("li", { class: "more" }, h("button", { type: "button", id: "older-cases", onclick: () => {
      more.remove();
      storedCases(id, list, page.next_before);
    } }, "Older cases"));
    list.append(more);
  }
}

function row(c) {
  const soFar = c.verdict ? SO_FAR[c.verdict] || c.verdict : "unscored";
  const verdict = c.error ? "error" : soFar === "unscored" ? "judged in its cells" : soFar.replace("_", " ");
  return h("li", { class: `case k-${soFar}`, "data-seq": c.seq },
    h("div", { class: "case-head" },
      h("b", {}, c.scenario), " · ", h("span", { class: `v-${soFar}` }, verdict),
      c.outcome ? h("span", { class: `oc oc-${c.outcome}` }, c.outcome.replace("_", " ")) : null,
      h("span", { class: "dim" }, ` · ${ms(c.latency_ms)}`),
      c.trial ? h("span", { class: "dim" }, ` · trial ${c.trial}`) : null),
    h("div", { class: "prompt" }, c.input),
    c.fault_rules?.length ? h("div", { class: "faults" }, "faults: ", c.fault_rules.join(" · ")) : null,
    c.error ? h("div", { class: "v-failed" }, `error: ${c.error}`) : null,
    h("div", { class: "tl-slot" }, c.timeline ? svg(c.timeline) : h("span", { class: "dim" }, `no timeline: ${c.no_timeline}`)));
}
