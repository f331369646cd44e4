// The runs page: the store's history, newest first, with /v1/runs' filters and paging;
// each run's kind, contract or config, verdict, score, duration, trials, the shards a
// merged run was made of (`report merge`) and where it ran.

import * as api from "./api.js";
import { h, show, ms, when, score, badge, wrap } from "./dom.js";

const KINDS = ["", "contract", "chaos", "mutation", "replay", "ci"];
const STATUSES = ["", "queued", "running", "passed", "failed", "not_tested", "error", "cancelled", "interrupted"];

function select(id, label, values, current) {
  return [h("label", { for: id }, label),
    h("select", { id, name: id }, values.map((v) => h("option", { value: v, selected: v === current }, v || "any")))];
}

export async function runsPage(params) {
  const q = new URLSearchParams();
  for (const k of ["kind", "status", "limit", "cursor"]) if (params.get(k)) q.set(k, params.get(k));
  const page = await api.call("GET", `/ui/api/runs?${q}`);
  const picked = new Set();
  const compare = h("a", { class: "button", id: "compare-picked", "aria-disabled": "true" }, "Compare the two picked");
  const pick = (id, on) => {
    on ? picked.add(id) : picked.delete(id);
    const two = [...picked];
    if (two.length === 2) {
      compare.href = `#/compare?base=${encodeURIComponent(two[1])}&head=${encodeURIComponent(two[0])}`;
      compare.setAttribute("aria-disabled", "false");
    } else {
      compare.removeAttribute("href");
      compare.setAttribute("aria-disabled", "true");
    }
  };
  const filters = h("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    const f = new URLSearchParams();
    for (const k of ["kind", "status", "limit"]) {
      const v = ev.target.elements[k].value;
      if (v) f.set(k, v);
    }
    location.hash = `#/runs?${f}`;
  } },
  ...select("kind", "Kind", KINDS, params.get("kind") || ""),
  ...select("status", "Status", STATUSES, params.get("status") || ""),
  h("label", { for: "limit" }, "Per page"),
  h("input", { id: "limit", name: "limit", type: "number", min: 1, max: 1000, value: params.get("limit") || 50 }),
  h("button", { type: "submit" }, "Filter"));
  const rows = page.runs.map((r) => h("tr", { "data-run": r.id },
    h("td", {}, h("input", { type: "checkbox", "aria-label": `pick ${r.id} to compare`, onchange: (ev) => pick(r.id, ev.target.checked) })),
    h("td", {}, h("a", { href: `#/run/${encodeURIComponent(r.id)}` }, r.id)),
    h("td", {}, r.kind),
    h("td", { class: "mono" }, r.contract || (r.config_digest || "").slice(0, 19) || "–"),
    h("td", {}, badge(r.status)),
    h("td", { class: "n" }, score(r.scores)),
    h("td", { class: "n" }, r.finished_ms ? ms(r.finished_ms - r.started_ms) : "–"),
    h("td", { class: "n" }, `${r.done}/${r.total}`),
    h("td", {}, r.trials ? `${r.trials.trials} (${r.trials.consistency})` : "1"),
    h("td", { class: "n" }, r.shards ? h("span", { class: "merged", title: `merged from ${r.shards} shard reports` }, `${r.shards} merged`) : "–"),
    h("td", {}, when(r.started_ms)),
    h("td", {}, r.source)));
  const next = new URLSearchParams(q);
  const more = page.next_cursor
    ? (next.set("cursor", page.next_cursor), h("a", { class: "button", href: `#/runs?${next}` }, "Older runs"))
    : h("span", { class: "dim" }, "No older runs.");
  show(h("h1", {}, "Runs"), filters,
    rows.length
      ? wrap(h("table", { class: "runs" },
        h("thead", {}, h("tr", {}, ["", "run", "kind", "contract / config", "verdict", "score", "duration", "cases", "trials", "shards", "started", "source"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows)))
      : h("p", {}, "No runs match. ", h("a", { href: "#/start" }, "Start one.")),
    h("p", { class: "actions" }, compare, " ", more));
}
