// Chaos: the rules in force (with their TTL counting down), the built-in profiles, rules
// put for N minutes (a profile, or a YAML rule set), cleared; and the proxy's live traffic
// from the journal, filterable by tool, provider and fault, redacted as the journal is.

import * as api from "./api.js";
import { h, show, problem, ms } from "./dom.js";

function ttlInput(id) {
  return h("span", { class: "ttl" }, h("label", { for: `${id}-n` }, "for"),
    h("input", { id: `${id}-n`, type: "number", min: 1, value: 10, class: "short" }),
    h("label", { for: `${id}-u`, class: "sr" }, "unit"),
    h("select", { id: `${id}-u` }, h("option", { value: "m" }, "minutes"), h("option", { value: "s" }, "seconds"), h("option", { value: "h" }, "hours")));
}

function ttlOf(id) {
  return `${document.getElementById(`${id}-n`).value}${document.getElementById(`${id}-u`).value}`;
}

export async function chaosPage() {
  const profiles = await api.call("GET", "/v1/profiles");
  const rules = h("div", { id: "rules", "aria-live": "polite" });
  const out = h("div", { "aria-live": "polite" });
  let timer = null;
  let expires = null;
  const tick = () => {
    const left = Math.max(0, Math.round((expires - Date.now()) / 1000));
    const el = document.getElementById("ttl-left");
    if (el) el.textContent = `${left} s`;
    if (left <= 0) refresh();
  };
  const refresh = async () => {
    const c = await api.call("GET", "/v1/chaos");
    const r = c.rules || {};
    const n = (r.tool_faults?.length || 0) + (r.llm_faults?.length || 0) + (r.context_attacks?.length || Object.keys(r.context_attacks || {}).length || 0);
    clearInterval(timer);
    timer = null;
    expires = c.expires_in_s != null ? Date.now() + c.expires_in_s * 1000 : null;
    rules.replaceChildren(
      h("p", { id: "rules-summary" }, n ? `${n} rule${n === 1 ? "" : "s"} in force` : "No chaos rules in force", ` · seed ${c.seed}`,
        expires ? [" · reverts in ", h("b", { id: "ttl-left" }, `${c.expires_in_s} s`), ` (ttl ${c.ttl_s} s)`] : ""),
      n ? h("pre", { class: "rules" }, JSON.stringify(r, null, 2)) : null);
    if (expires) timer = setInterval(tick, 1000);
  };
  const act = (f) => async (ev) => {
    ev.preventDefault();
    try { await f(); out.replaceChildren(); } catch (e) { if (!(e instanceof api.Unauthorized)) out.replaceChildren(problem(e)); }
    await refresh();
  };
  const profileForm = h("form", { class: "card", onsubmit: act(() => api.call("POST", `/v1/chaos/profiles/${encodeURIComponent(document.getElementById("profile").value)}?ttl=${ttlOf("pttl")}`)) },
    h("h2", {}, "Put a profile"),
    h("label", { for: "profile" }, "Profile"),
    h("select", { id: "profile" }, profiles.profiles.map((p) => h("option", { value: p.name, title: p.description }, `${p.name} — ${p.description}`))),
    ttlInput("pttl"), h("button", { type: "submit", id: "put-profile" }, "Put it"));
  const yamlForm = h("form", { class: "card", onsubmit: act(() => api.call("PUT", `/v1/chaos?ttl=${ttlOf("yttl")}`, document.getElementById("yaml").value, "application/yaml")) },
    h("h2", {}, "Put rules (YAML, a chaos: section)"),
    h("label", { for: "yaml" }, "Rules"),
    h("textarea", { id: "yaml", rows: 6, spellcheck: "false" }, "tool_faults:\n  - {tool: web_search, mode: error, error_code: 503}\n"),
    ttlInput("yttl"), h("button", { type: "submit", id: "put-rules" }, "Put them"));
  const clear = h("button", { type: "button", class: "danger", id: "clear-rules", onclick: act(() => api.call("DELETE", "/v1/chaos")) }, "Delete the rules in force");
  const traffic = new Traffic();
  show(h("h1", {}, "Chaos"), rules, h("p", {}, clear), out, h("div", { class: "pair" }, profileForm, yamlForm), h("h2", {}, "Live traffic"), traffic.el);
  await refresh();
  traffic.load();
  const poll = setInterval(() => traffic.load(), 2000);
  return () => { clearInterval(timer); clearInterval(poll); };
}

/** The journal's recent exchanges, newest first, filtered; each opens to its request and
 * answer. */
class Traffic {
  constructor() {
    const field = (id, label, hint) => [h("label", { for: id }, label), h("input", { id, placeholder: hint, class: "short2" })];
    this.list = h("ol", { class: "traffic", id: "traffic" });
    this.open = new Set();
    this.el = h("div", {},
      h("form", { class: "filters", onsubmit: (ev) => { ev.preventDefault(); this.load(); } },
        ...field("f-tool", "Tool", "web_search"), ...field("f-provider", "Provider", "openai"), ...field("f-fault", "Fault", "any, a rule or a mode"),
        h("button", { type: "submit" }, "Filter")),
      this.list);
  }
  async load() {
    const q = new URLSearchParams({ limit: 50 });
    for (const [k, id] of [["tool", "f-tool"], ["provider", "f-provider"], ["fault", "f-fault"]]) {
      const v = document.getElementById(id)?.value.trim();
      if (v) q.set(k, v);
    }
    let r;
    try { r = await api.call("GET", `/ui/api/traffic?${q}`); } catch (e) { this.list.replaceChildren(problem(e)); return; }
    this.list.replaceChildren(...(r.exchanges.length ? r.exchanges.map((e) => this.item(e)) : [h("li", { class: "dim" }, "No exchange matches (yet).")]));
  }
  item(e) {
    const res = e.outcome?.outcome === "response" ? e.outcome : null;
    const err = e.outcome?.outcome === "error" ? e.outcome : null;
    const status = res ? res.response.status : err ? `${err.status ?? ""} ${err.error?.kind ?? "error"}` : "?";
    const faults = [e.fault, ...(e.attacks || [])].filter((f) => f && f.applied).map((f) => `${f.rule} (${f.mode})`);
    const details = h("details", { open: this.open.has(e.id), ontoggle: (ev) => ev.target.open ? this.open.add(e.id) : this.open.delete(e.id) },
      h("summary", {}, h("span", { class: "mono" }, `#${e.id} `), h("b", {}, e.target_name), ` ${e.request.method} `, h("span", { class: "url" }, e.request.url), ` → ${status} · ${ms(e.timings?.total_ms)}`,
        faults.length ? h("span", { class: "fault" }, ` fault ${faults.join(", ")}`) : null),
      h("div", { class: "exchange" },
        h("h3", {}, "Request"), h("pre", {}, [`${e.request.method} ${e.request.url}`, ...e.request.headers.map(([k, v]) => `${k}: ${v}`)].join("\n")),
        e.request_body ? h("pre", {}, e.request_body) : null,
        h("h3", {}, "Answer"),
        h("pre", {}, res ? [`${res.response.status}`, ...res.response.headers.map(([k, v]) => `${k}: ${v}`)].join("\n") : JSON.stringify(err, null, 2)),
        e.response_body ? h("pre", {}, e.response_body) : null));
    return h("li", { class: faults.length ? "faulted" : "" }, details);
  }
}
