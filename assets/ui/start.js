// Starting a run from a config, as POST /v1/runs takes it (the same rules: an inline
// config, or on a loopback daemon a config file of its host; every problem at its path).

import * as api from "./api.js";
import { h, show, problem } from "./dom.js";

export async function startPage() {
  const profiles = await api.call("GET", "/v1/profiles");
  const out = h("div", { "aria-live": "polite" });
  const form = h("form", { class: "card start", onsubmit: async (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    const body = { kind: f.kind.value };
    if (f.config_path && f.config_path.value.trim()) body.config_path = f.config_path.value.trim();
    else body.config = f.config.value;
    if (f.seed.value) body.seed = Number(f.seed.value);
    if (f.profile.value) body.profile = f.profile.value;
    if (f.min_score.value) body.min_score = Number(f.min_score.value);
    try {
      const r = await api.call("POST", "/v1/runs", body);
      location.hash = `#/run/${encodeURIComponent(r.id)}`;
    } catch (e) {
      if (e instanceof api.Unauthorized) return;
      out.replaceChildren(problem(e));
    }
  } },
  h("h1", {}, "Start a run"),
  h("label", { for: "kind" }, "Kind"),
  h("select", { id: "kind", name: "kind" }, ["contract", "chaos", "mutation", "replay", "ci"].map((k) => h("option", { value: k }, k))),
  h("label", { for: "config" }, "Config (YAML or JSON; it needs an agent: section)"),
  h("textarea", { id: "config", name: "config", rows: 14, spellcheck: "false" }),
  api.loopback ? [h("label", { for: "config_path" }, "…or a config file of the daemon's host (instead of the text above)"),
    h("input", { id: "config_path", name: "config_path", class: "wide" })] : h("p", { class: "dim" }, "This daemon is not on loopback: runs cannot name files of its host."),
  h("div", { class: "row" },
    h("span", {}, h("label", { for: "seed" }, "Seed"), h("input", { id: "seed", name: "seed", type: "number", min: 0 })),
    h("span", {}, h("label", { for: "profile" }, "Chaos profile"), h("select", { id: "profile", name: "profile" }, h("option", { value: "" }, "the config's chaos"), profiles.profiles.map((p) => h("option", { value: p.name }, p.name)))),
    h("span", {}, h("label", { for: "min_score" }, "Pass mark"), h("input", { id: "min_score", name: "min_score", type: "number", min: 0, max: 100 }))),
  h("button", { type: "submit", id: "start-run" }, "Start"), out);
  show(form);
}
