// A run followed live over /v1/runs/{id}/events (Server-Sent Events). The browser's
// EventSource resumes a broken stream by itself from the last event id (Last-Event-ID);
// events are applied in batches (one DOM update and one timeline request per batch, at
// most every 250 ms), so a run of thousands of cases never leaves the page behind.

import * as api from "./api.js";
import { h, svg, ms } from "./dom.js";

const BATCH_MS = 250;

/** Follows run `id` into `view` (see run.js); returns a function that stops following.
 * How it keeps up is on `view.meter` (see `Meter`). */
export function follow(id, view) {
  const es = new EventSource(`/v1/runs/${encodeURIComponent(id)}/events`);
  let queue = [];
  let timer = null;
  let lastId = 0;
  const flush = () => {
    timer = null;
    const batch = queue;
    queue = [];
    const t0 = performance.now();
    apply(batch, view);
    view.meter?.batch(batch, t0);
  };
  const push = (kind) => (ev) => {
    lastId = Number(ev.lastEventId) || lastId;
    queue.push({ kind, data: JSON.parse(ev.data), id: lastId, at: performance.now() });
    if (kind === "done") {
      es.close();
      if (timer) clearTimeout(timer);
      flush();
    } else if (!timer) {
      timer = setTimeout(flush, BATCH_MS);
    }
  };
  for (const k of ["queued", "started", "case_started", "case", "phase", "cell", "done"]) es.addEventListener(k, push(k));
  es.onopen = () => view.stream(lastId ? `live (resumed after event ${lastId})` : "live");
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      view.stream("the stream was refused: reload the page");
      api.session().catch(() => {}); // a stale session shows the login
    } else {
      view.stream(`reconnecting after event ${lastId}…`);
    }
  };
  return () => { es.close(); if (timer) clearTimeout(timer); };
}

/** How the page keeps up with a stream, on an element's data attributes (the tests and
 * scripts/bench_web.py read them): events and batches applied, the largest batch, the
 * longest wait of an event between its arrival and its batch being drawn, the longest
 * batch, and the ids seen (first, last, and any out of order or repeated). */
export class Meter {
  constructor(el) {
    this.el = el;
    this.s = { events: 0, batches: 0, peak: 0, lagMax: 0, applyMax: 0, last: 0, repeats: 0 };
  }
  batch(batch, t0) {
    const now = performance.now();
    const s = this.s;
    s.events += batch.length;
    s.batches++;
    s.peak = Math.max(s.peak, batch.length);
    s.applyMax = Math.max(s.applyMax, now - t0);
    for (const e of batch) {
      s.lagMax = Math.max(s.lagMax, now - e.at);
      if (e.id <= s.last) s.repeats++;
      s.last = Math.max(s.last, e.id);
    }
    const d = this.el.dataset;
    d.events = s.events;
    d.batches = s.batches;
    d.batchPeak = s.peak;
    d.lagMaxMs = Math.round(s.lagMax);
    d.applyMaxMs = Math.round(s.applyMax);
    d.lastEvent = s.last;
    d.repeats = s.repeats;
    if (batch.some((e) => e.kind === "done")) d.doneAt = Date.now();
  }
}

function apply(batch, view) {
  const cases = [];
  for (const { kind, data } of batch) {
    if (kind === "case") cases.push(data);
    else if (kind === "case_started") view.started(data);
    else if (kind === "cell") view.cell(data);
    else if (kind === "started") view.status("running");
    else if (kind === "done") view.done(data);
  }
  if (cases.length) addCases(cases, view);
  view.drawn();
}

/** A case as it ends: its row (verdict, outcome class, faults), then its timeline. */
function addCases(cases, view) {
  const frag = document.createDocumentFragment();
  const drawn = [];
  for (const c of cases) {
    const verdict = c.error ? "error" : c.not_judged ? "not judged" : c.so_far === "unscored" ? "judged in its cells" : c.so_far;
    const box = h("div", { class: "tl-slot" }, c.exchanges ? h("span", { class: "dim" }, "drawing its calls…") : h("span", { class: "dim" }, "no timeline: its calls could not be attributed to it"));
    const item = h("li", { class: `case k-${c.so_far}` },
      h("div", { class: "case-head" },
        h("b", {}, c.scenario), " · ", h("span", { class: `v-${c.so_far}` }, verdict),
        c.outcome ? h("span", { class: `oc oc-${c.outcome}` }, c.outcome.replace("_", " ")) : null,
        h("span", { class: "dim" }, ` · ${ms(c.latency_ms)}`),
        c.instance ? h("span", { class: "dim" }, ` · instance ${c.instance}`) : null),
      h("div", { class: "prompt" }, c.input),
      c.fault_rules?.length ? h("div", { class: "faults" }, "faults: ", c.fault_rules.join(" · ")) : null,
      c.error ? h("div", { class: "v-failed" }, `error: ${c.error}`) : null,
      box);
    frag.append(item);
    if (c.exchanges?.length) drawn.push({ ids: c.exchanges, box });
    view.caseEnded(c);
  }
  view.cases.prepend(frag);
  for (let i = 0; i < drawn.length; i += 200) timelines(drawn.slice(i, i + 200));
}

async function timelines(list) {
  const q = list.map((d) => `c=${d.ids.join(",")}`).join("&");
  try {
    const r = await api.call("GET", `/ui/api/timelines?${q}`);
    r.timelines.forEach((t, i) => list[i].box.replaceChildren(t ? svg(t) : h("span", { class: "dim" }, "no timeline: its calls have left the daemon's journal (the report has them)")));
  } catch (e) {
    for (const d of list) d.box.replaceChildren(h("span", { class: "dim" }, `no timeline: ${e.message}`));
  }
}
