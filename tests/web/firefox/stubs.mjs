// What the suite's runs run against, all on loopback ports the OS picks (the Node
// counterparts of tests/web/_web.py):
// * `Agent`  – an agent endpoint that answers "According to the filing, <prompt>" after
//              `delayMs`, and, given a proxy, first calls a search tool through it (so its
//              cases have a wire timeline to draw);
// * `Tool`   – that search tool, a JSON API;
// * `Cutter` – a TCP relay to the daemon that can drop every connection through it (an
//              event stream broken mid-run) and keeps the request heads it relayed;
// * `contract` – a contract run's config: `cites` passes every case, `short` fails the
//              prompts that ask for detail.

import http from "node:http";
import net from "node:net";

function listen(server) {
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok(server.address().port)));
}

function close(server) {
  server.closeAllConnections?.();
  return new Promise((ok) => server.close(() => ok()));
}

export class Tool {
  async start() {
    this.server = http.createServer((req, res) => {
      const body = JSON.stringify({ results: [{ title: "ACME Q3 filing", snippet: "Revenue rose 12%." }], url: req.url });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
    this.url = `http://127.0.0.1:${await listen(this.server)}`;
    return this;
  }
  close() { return close(this.server); }
}

/** A GET of `url` through the HTTP proxy at `proxy` ("host:port"), as an agent whose
 * HTTP_PROXY names the daemon makes it. */
function viaProxy(proxy, url) {
  const [host, port] = proxy.split(":");
  return new Promise((ok, fail) => {
    const req = http.request({ host, port: Number(port), method: "GET", path: url, headers: { host: new URL(url).host } }, (res) => {
      res.resume();
      res.on("end", () => ok(res.statusCode));
    });
    req.on("error", fail);
    req.end();
  });
}

export class Agent {
  constructor({ delayMs = 0, proxy = null, tool = null } = {}) {
    Object.assign(this, { delayMs, proxy, tool });
  }

  async start() {
    this.server = http.createServer(async (req, res) => {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const prompt = JSON.parse(Buffer.concat(chunks).toString() || "{}").input || "";
      let found = "";
      if (this.proxy) {
        const status = await viaProxy(this.proxy, `${this.tool}/search?q=${encodeURIComponent(prompt)}`).catch((e) => e.code);
        if (status !== 200) found = ` The search failed (${status}).`;
      }
      if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
      const detail = prompt.includes(" in detail") ? " Here is a long and detailed account." : "";
      const body = JSON.stringify({ result: `According to the filing, ${prompt}${found}${detail}` });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    });
    this.url = `http://127.0.0.1:${await listen(this.server)}/invoke`;
    return this;
  }
  close() { return close(this.server); }
}

/** `n` distinct prompts; every `detailEvery`th asks for detail (and fails `short`). */
export function prompts(n, detailEvery = 0) {
  return Array.from({ length: n }, (_, i) => `Question ${i}: how did ACME do${detailEvery && i % detailEvery === 0 ? " in detail" : ""}?`);
}

/** A contract run of `agentUrl` over `golden`; with `tool` (its base URL), the search tool
 * declared and a chaos scenario that slows it by `slowMs`. */
export function contract(agentUrl, golden, { concurrency = 10, tool = null, slowMs = 200 } = {}) {
  const q = JSON.stringify;
  return [
    `agent:\n  endpoint: ${q(agentUrl)}\n  timeout: 10000\n`,
    `advanced: {seed: 1, concurrency: ${concurrency}, settle_ms: 0}\n`,
    tool ? `tools:\n  - {name: web_search, match_url: ${q(`${tool}/*`)}}\n` : "",
    "golden_prompts:\n", ...golden.map((p) => `  - ${q(p)}\n`),
    "contract:\n  name: Stub agent\n  invariants:\n",
    '    - {id: cites, type: regex, pattern: "(?i)according to", severity: high}\n',
    '    - {id: short, type: regex, pattern: "^[^.]*\\\\?$", severity: low}\n',
    tool ? `  chaos_matrix:\n    - name: search\n      tool_faults: [{id: search-slow, tool: web_search, mode: slow, delay_ms: ${slowMs}}]\n` : "",
  ].join("");
}

export class Cutter {
  /** A relay to `target` ("host:port"). */
  constructor(target) {
    const [host, port] = target.split(":");
    this.live = new Set();
    this.heads = [];
    /** When each of `heads` arrived (Date.now()). */
    this.times = [];
    this.server = net.createServer((client) => {
      const upstream = net.connect(Number(port), host);
      for (const s of [client, upstream]) {
        this.live.add(s);
        s.on("close", () => this.live.delete(s));
        s.on("error", () => {});
      }
      client.on("data", (d) => {
        if (/^(GET|POST|PUT|DELETE|HEAD) /.test(d.subarray(0, 8).toString("latin1"))) {
          this.heads.push(d.toString("latin1").split("\r\n\r\n")[0]);
          this.times.push(Date.now());
        }
      });
      client.pipe(upstream).pipe(client);
    });
  }
  async start() {
    this.addr = `127.0.0.1:${await listen(this.server)}`;
    return this;
  }
  /** Drops every connection open now, mid-response, as a broken network would. */
  cut() {
    for (const s of this.live) s.destroy();
  }
  close() {
    this.cut();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}
