// Two runs compared as `flakestorm runs compare` does: the score per phase, then the cells
// and cases whose verdict changed, regressions first, then fixes, with pass^k for cells
// measured over trials and a case's outcome class when it changed.

import * as api from "./api.js";
import { h, show, problem, wrap } from "./dom.js";

function pct(v) {
  return v === null || v === undefined ? "–" : `${(v * 100).toFixed(0)}%`;
}

export async function comparePage(params) {
  const base = params.get("base") || "";
  const head = params.get("head") || "";
  const form = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams({ base: ev.target.elements.base.value.trim(), head: ev.target.elements.head.value.trim() });
    location.hash = `#/compare?${q}`;
  } },
  h("label", { for: "base" }, "Base run (before)"), h("input", { id: "base", name: "base", value: base, required: true, size: 26 }),
  h("label", { for: "head" }, "Head run (after)"), h("input", { id: "head", name: "head", value: head, required: true, size: 26 }),
  h("button", { type: "submit" }, "Compare"));
  if (!base || !head) {
    show(h("h1", {}, "Compare two runs"), form, h("p", { class: "dim" }, "Pick two runs on the Runs page, or give their ids."));
    return;
  }
  let c;
  try {
    c = await api.call("GET", `/ui/api/compare?base=${encodeURIComponent(base)}&head=${encodeURIComponent(head)}`);
  } catch (e) {
    if (e instanceof api.Unauthorized) throw e;
    show(h("h1", {}, "Compare two runs"), form, problem(e));
    return;
  }
  const deltas = wrap(h("table", {}, h("thead", {}, h("tr", {}, ["phase", "base", "head", "change"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, c.deltas.map((d) => h("tr", {}, h("td", {}, d.phase), h("td", { class: "n" }, d.base?.toFixed(1) ?? "–"), h("td", { class: "n" }, d.head?.toFixed(1) ?? "–"),
      h("td", { class: `n ${d.delta < 0 ? "v-fail" : d.delta > 0 ? "v-pass" : ""}` }, d.delta === null ? "–" : `${d.delta > 0 ? "+" : ""}${d.delta.toFixed(1)}`))))));
  const counts = { regression: 0, fix: 0, other: 0 };
  for (const ch of c.changes) counts[ch.kind]++;
  const changes = c.changes.length
    ? wrap(h("table", { class: "changes" }, h("thead", {}, h("tr", {}, ["change", "", "phase", "scenario", "invariant / case", "before", "after", "pass^k", "why"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, c.changes.map((ch) => h("tr", { class: `ch-${ch.kind}` },
        h("td", {}, h("span", { class: `st st-${ch.kind}` }, ch.kind)),
        h("td", {}, ch.subject),
        h("td", {}, ch.phase),
        h("td", {}, ch.scenario),
        h("td", {}, ch.name, ch.trial ? ` (trial ${ch.trial})` : "", ch.severity ? h("span", { class: "sev" }, ch.severity) : null),
        h("td", {}, ch.before ?? "–", ch.outcome?.before ? ` · ${ch.outcome.before}` : ""),
        h("td", {}, ch.after ?? "–", ch.outcome?.after ? ` · ${ch.outcome.after}` : ""),
        h("td", {}, ch.pass_hat ? `pass^${ch.pass_hat.k}: ${pct(ch.pass_hat.before)} → ${pct(ch.pass_hat.after)}` : "–"),
        h("td", {}, ch.reason || ""))))))
    : h("p", {}, "No cell or case changed its verdict.");
  show(h("h1", {}, "Compare two runs"), form,
    h("p", { id: "compare-summary" }, h("a", { href: `#/run/${encodeURIComponent(c.base)}` }, c.base), " → ", h("a", { href: `#/run/${encodeURIComponent(c.head)}` }, c.head),
      `: ${counts.regression} regression${counts.regression === 1 ? "" : "s"}, ${counts.fix} fix${counts.fix === 1 ? "" : "es"}, ${counts.other} other change${counts.other === 1 ? "" : "s"}`),
    h("h2", {}, "Scores"), deltas, h("h2", {}, "Changes"), changes);
}
