// One `flakestorm serve` for the suite, as tests/web/conftest.py starts it: its proxy and
// control listeners on loopback ports the OS picks, its CA and store in a temporary
// directory, the token it makes for itself (data_dir/control.token), and the login link it
// prints on stdout.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const REPO = resolve(import.meta.dirname, "../../..");
const STARTUP_MS = 30_000;
const READY = /^flakestorm: (proxy|control) listening on (\S+)$/;
const LINK = /^flakestorm: web view at (\S+) /;

/** The binary under test: FLAKESTORM_BIN, as the Python suites take it. */
export function binary() {
  return process.env.FLAKESTORM_BIN || join(REPO, "target", "debug", "flakestorm");
}

// The daemon must not route itself through a proxy the shell has, nor trust another CA.
function cleanEnv() {
  const drop = new Set(["http_proxy", "https_proxy", "all_proxy", "no_proxy"]);
  const ca = new Set(["SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"]);
  return Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !drop.has(k.toLowerCase()) && !ca.has(k.toUpperCase())),
  );
}

export class Daemon {
  /** Starts `flakestorm serve` and resolves once it has printed both listeners and the
   * login link. */
  static async start() {
    const dir = mkdtempSync(join(tmpdir(), "flakestorm-firefox-"));
    const config = join(dir, "flakestorm.yaml");
    writeFileSync(
      config,
      'proxy:\n  listen: "127.0.0.1:0"\ncontrol:\n  listen: "127.0.0.1:0"\n' + `ca:\n  dir: ${JSON.stringify(join(dir, "certs"))}\n`,
    );
    const proc = spawn(binary(), ["serve", "-c", config], { env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] });
    const d = new Daemon(proc, dir);
    await d.ready();
    return d;
  }

  constructor(proc, dir) {
    this.proc = proc;
    this.dir = dir;
    this.addrs = {};
    this.stdout = [];
    this.stderr = "";
    proc.stderr.on("data", (b) => { this.stderr = (this.stderr + b).slice(-8000); });
  }

  ready() {
    return new Promise((ok, fail) => {
      const why = (what) => new Error(`flakestorm serve ${what}\nstdout:\n${this.stdout.join("\n")}\nstderr:\n${this.stderr}`);
      const timer = setTimeout(() => { this.proc.kill("SIGKILL"); fail(why(`printed no login link within ${STARTUP_MS} ms`)); }, STARTUP_MS);
      this.proc.on("error", (e) => { clearTimeout(timer); fail(why(`could not start: ${e.message} (FLAKESTORM_BIN=${binary()})`)); });
      this.proc.on("exit", (code) => { clearTimeout(timer); fail(why(`exited with ${code} before it was ready`)); });
      createInterface({ input: this.proc.stdout }).on("line", (line) => {
        this.stdout.push(line);
        const m = line.match(READY);
        if (m) this.addrs[m[1]] = m[2];
        const l = line.match(LINK);
        if (l) this.link = l[1];
        if (this.link && this.addrs.proxy && this.addrs.control) {
          clearTimeout(timer);
          ok();
        }
      });
    });
  }

  get control() { return `http://${this.addrs.control}`; }
  get proxy() { return this.addrs.proxy; }
  get token() { return readFileSync(join(this.dir, ".flakestorm", "control.token"), "utf8").trim(); }

  /** A control API call with the bearer token, as a script would make it: [status, JSON]. */
  async api(method, path, body) {
    const headers = { authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const r = await fetch(this.control + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return [r.status, text ? JSON.parse(text) : null];
  }

  /** Starts a contract run over the API and waits for its end: the run's record. */
  async finishedRun(config) {
    const [status, body] = await this.api("POST", "/v1/runs", { kind: "contract", config });
    if (status !== 202) throw new Error(`POST /v1/runs: ${status} ${JSON.stringify(body)}`);
    for (let i = 0; i < 1200; i++) {
      const [, run] = await this.api("GET", `/v1/runs/${body.id}`);
      if (!["queued", "running"].includes(run.status)) return run;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`run ${body.id} did not end within 2 minutes`);
  }

  /** SIGTERM, and a clean exit (code 0) within 20 s. */
  async stop() {
    const code = await new Promise((ok) => {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) return ok(this.proc.exitCode ?? this.proc.signalCode);
      const timer = setTimeout(() => { this.proc.kill("SIGKILL"); ok("killed after 20 s"); }, 20_000);
      this.proc.removeAllListeners("exit");
      this.proc.on("exit", (c) => { clearTimeout(timer); ok(c); });
      this.proc.kill("SIGTERM");
    });
    rmSync(this.dir, { recursive: true, force: true });
    if (code !== 0) throw new Error(`flakestorm exited ${code} on SIGTERM\nstderr:\n${this.stderr}`);
  }
}
