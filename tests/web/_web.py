"""Helpers of the web view suite (tests/web) and of scripts/bench_web.py:

* `StubAgent`  – an agent endpoint that answers at once (or after `delay_s`), calling no
                 tool: runs of a thousand cases in seconds.
* `stub_config` – a contract run of it: `cites` passes every case, `short` fails the
                  prompts that ask for detail.
* `Cutter`     – a TCP relay between the browser and the daemon that can drop every
                 connection through it (an event stream broken mid-run), and keeps the
                 request heads it relayed (to see the `Last-Event-ID` the browser sent).
* `seed_store` – a store filled with finished runs by the store's own code
                 (examples/seed_runs.rs).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        prompt = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}").get("input", "")
        if self.server.delay_s:
            time.sleep(self.server.delay_s)
        detail = " in detail" in prompt
        answer = f"According to the filing, {prompt}" + (" Here is a long and detailed account." if detail else "")
        body = json.dumps({"result": answer}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class StubAgent:
    def __init__(self, delay_s: float = 0.0):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
        self.server.daemon_threads = True
        self.server.delay_s = delay_s
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/invoke"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def prompts(n: int, detail_every: int = 0) -> list[str]:
    """`n` distinct prompts; every `detail_every`th asks for detail (and fails `short`)."""
    return [f"Question {i}: how did ACME do" + (" in detail" if detail_every and i % detail_every == 0 else "") + "?"
            for i in range(n)]


def stub_config(agent_url: str, golden: list[str], concurrency: int = 10) -> str:
    return (
        "agent:\n"
        f"  endpoint: {json.dumps(agent_url)}\n"
        "  timeout: 10000\n"
        f"advanced: {{seed: 1, concurrency: {concurrency}, settle_ms: 0}}\n"
        "golden_prompts:\n" + "".join(f"  - {json.dumps(p)}\n" for p in golden) +
        "contract:\n"
        "  name: Stub agent\n"
        "  invariants:\n"
        "    - {id: cites, type: regex, pattern: \"(?i)according to\", severity: high}\n"
        "    - {id: short, type: regex, pattern: \"^[^.]*\\\\?$\", severity: low}\n"
    )


class Cutter:
    """A loopback TCP relay to `target` ("host:port"); `cut()` drops every connection
    through it (new ones are still relayed)."""

    def __init__(self, target: str):
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.lock = threading.Lock()
        self.live: list[socket.socket] = []
        self.heads: list[str] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.live += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, request: bool):
        try:
            while data := src.recv(65536):
                if request and data[:4] in (b"GET ", b"POST", b"PUT ", b"DELE", b"HEAD"):
                    with self.lock:
                        self.heads.append(data.split(b"\r\n\r\n", 1)[0].decode("latin-1"))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self):
        """Drops every connection open now, mid-response, as a broken network would."""
        with self.lock:
            live, self.live = self.live, []
        for s in live:
            # shutdown wakes the relay threads blocked on it (a close alone would not).
            for end in (lambda: s.shutdown(socket.SHUT_RDWR), s.close):
                try:
                    end()
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.listener.close()
        self.cut()


def seed_store(data_dir: Path, n: int) -> float:
    """Writes `n` finished runs into the store at `data_dir` with the store's own code
    (examples/seed_runs.rs, built beside the flakestorm binary by `cargo test`
    or `cargo build --examples`); seconds taken."""
    import subprocess

    import flakestorm_harness as harness

    seeder = harness.binary().parent / "examples" / "seed_runs"
    if not seeder.is_file():
        raise AssertionError(f"{seeder} is missing: `cargo test` (or `cargo build --example seed_runs`) builds it")
    t = time.monotonic()
    done = subprocess.run([str(seeder), str(data_dir), str(n)], capture_output=True, text=True)
    assert done.returncode == 0, f"seed_runs exited {done.returncode}: {done.stderr}"
    return time.monotonic() - t
