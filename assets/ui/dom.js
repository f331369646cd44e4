// Building the page without innerHTML: every text goes in as text. The one exception is
// `svg()`, for the timelines the daemon draws with the HTML report's own (escaping) code.

/** An element: h("a", {href: "#/x", class: "c"}, "text", child, …). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** The daemon's SVG timeline (rendered server-side by the report's template). */
export function svg(markup) {
  const box = document.createElement("div");
  box.className = "tlbox";
  const doc = new DOMParser().parseFromString(markup, "text/html");
  for (const n of [...doc.body.childNodes]) box.append(document.importNode(n, true));
  return box;
}

/** Replaces the main area's content, focusing it for keyboard and screen-reader users. */
export function show(...children) {
  const main = document.getElementById("main");
  main.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return main;
}

export function ms(v) {
  if (v === null || v === undefined) return "–";
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 60000) return `${(v / 1000).toFixed(1)} s`;
  return `${Math.floor(v / 60000)} min ${Math.round((v % 60000) / 1000)} s`;
}

export function when(unixMs) {
  return unixMs ? new Date(unixMs).toLocaleString() : "–";
}

export function score(scores) {
  const e = Object.entries(scores || {});
  if (!e.length) return "–";
  const overall = scores.overall ?? e[0][1];
  return overall.toFixed(1);
}

/** A status as a badge: passed, failed, running, … */
export function badge(status) {
  return h("span", { class: `st st-${status}` }, status);
}

/** An error box naming what went wrong (and each problem at its path). */
export function problem(err) {
  const box = h("div", { class: "problem", role: "alert" }, String(err.message || err));
  for (const p of err.errors || []) box.append(h("div", {}, h("code", {}, p.path), ": ", p.message));
  return box;
}

export function wrap(table) {
  return h("div", { class: "scroll" }, table);
}
