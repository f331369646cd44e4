"""Harness shared by the Python suites (tests/clients, tests/conformance).

* `Origin`      – a stdlib `ThreadingHTTPServer` on 127.0.0.1:0, optionally TLS with
                  tests/fixtures/origin.pem (signed by tests/fixtures/test-ca.pem), that
                  records every request. Each suite subclasses it and `OriginHandler`.
* `Flakestorm`  – one `flakestorm serve` process: `Flakestorm.start()` writes a temp
                  config, reads readiness from stdout, `stop()` sends SIGTERM and requires
                  exit code 0. Each suite subclasses it for its control-API helpers.
* `clean_env()` – os.environ without proxy or CA-bundle variables.
* `chromium()`  – Debian's headless Chromium (/usr/bin/chromium) through Playwright, for
                  the `browser` fixtures of tests/reports and tests/web.

Neither suite is a package, so pytest puts each suite's own directory on sys.path; each
conftest.py adds this directory too before importing this module.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
TEST_CA = FIXTURES / "test-ca.pem"
READY_RE = re.compile(r"^flakestorm: (proxy|control) listening on (\S+)$")
STARTUP_DEADLINE_S = 30

# Variables that would route a client elsewhere (NO_PROXY would make localhost
# bypass the proxy) or make it trust something other than the proxy CA.
PROXY_VARS = frozenset({"http_proxy", "https_proxy", "all_proxy", "no_proxy"})
CA_VARS = frozenset({"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"})


CHROMIUM = "/usr/bin/chromium"


def chromium():
    """Yields Debian's headless Chromium through Playwright (no browser download), then
    closes it: the body of a `browser` fixture."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's `chromium` (scripts/test.sh does)")
    from playwright.sync_api import sync_playwright

    # Chromium refuses to sandbox as root (containers, CI).
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        yield b
        b.close()


def clean_env(proxy_vars: Iterable[str] = PROXY_VARS) -> dict[str, str]:
    """os.environ without any proxy or CA-bundle variable (in either case)."""
    proxy_vars = frozenset(proxy_vars)
    return {k: v for k, v in os.environ.items() if k.lower() not in proxy_vars and k.upper() not in CA_VARS}


# --------------------------------------------------------------------------- origins


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body or b"{}")


class OriginHandler(BaseHTTPRequestHandler):
    """Base for the suites' origin handlers: body reading and chunked responses."""

    protocol_version = "HTTP/1.1"  # keep-alive; every non-streamed response has Content-Length

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    # Streams are chunked like the real APIs: one chunk per event, flushed as it goes.
    def _start_chunked(self, ctype: str):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, origin: "Origin", ssl_ctx: ssl.SSLContext | None, handler: type[OriginHandler]):
        self.origin = origin
        self.ssl_ctx = ssl_ctx
        super().__init__(("127.0.0.1", 0), handler)

    def finish_request(self, request, client_address):
        # TLS handshake in the per-connection thread, so a stalled client can't block accept().
        if self.ssl_ctx is not None:
            try:
                request = self.ssl_ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        super().finish_request(request, client_address)


class Origin:
    """A running origin; the handler reaches it as `self.server.origin`. Subclasses set
    their own attributes before calling this, which starts serving."""

    def __init__(self, tls: bool, handler: type[OriginHandler]):
        self.scheme = "https" if tls else "http"
        ctx = None
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(FIXTURES / "origin.pem", FIXTURES / "origin.key")
            ctx.set_alpn_protocols(["http/1.1"])  # stdlib server speaks HTTP/1.1 only
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self._server = _Server(self, ctx, handler)
        self.port = self._server.server_address[1]
        # Short poll interval: shutdown() at fixture teardown waits up to one interval.
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, host: str = "localhost") -> str:
        return f"{self.scheme}://{host}:{self.port}"

    def record(self, r: Recorded):
        with self._lock:
            self.requests.append(r)

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def only_request(self) -> Recorded:
        with self._lock:
            assert len(self.requests) == 1, f"origin expected exactly 1 request, saw {self.requests!r}"
            return self.requests[0]

    def reset(self):
        with self._lock:
            self.requests.clear()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


# ------------------------------------------------------------------------ flakestorm


def binary() -> Path:
    path = Path(os.environ.get("FLAKESTORM_BIN") or REPO / "target" / "debug" / "flakestorm")
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"flakestorm binary not found at {path}: run `cargo build` in {REPO} first "
            "(or point FLAKESTORM_BIN at a built binary)",
            pytrace=False,
        )
    return path


@dataclass
class Flakestorm:
    proc: subprocess.Popen
    proxy_addr: str
    control_addr: str
    ca_file: Path
    stderr_file: Path
    stdout_lines: list[str] = field(default_factory=list)
    token_file: Path | None = None
    # The rest of its stdout, line by line (None at EOF), for `wait_line`.
    _lines: queue.Queue | None = None

    @classmethod
    def start(cls, tmp: Path, env: dict[str, str], extra_config: str = "", args: tuple[str, ...] = (),
              proxy_config: str = ""):
        """Run `flakestorm serve` (with `args`, e.g. `--record DIR`) on loopback ports chosen
        by the OS, with its CA in `tmp/certs`, and return once stdout has reported both
        listeners. `proxy_config`: more `proxy:` fields, indented two spaces."""
        config = tmp / "flakestorm.yaml"
        config.write_text(
            "proxy:\n"
            '  listen: "127.0.0.1:0"\n'
            f'  upstream_ca_file: "{TEST_CA}"\n' + proxy_config +
            "control:\n"
            '  listen: "127.0.0.1:0"\n'
            "ca:\n"
            f'  dir: "{tmp / "certs"}"\n' + extra_config
        )
        stderr_file = tmp / "flakestorm.stderr"
        with open(stderr_file, "wb") as err:
            # `env` comes from clean_env(): the proxy must not itself be routed through an
            # inherited proxy.
            proc = subprocess.Popen(
                [str(binary()), "serve", "-c", str(config), *args],
                stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, env=env,
            )

        # Drain stdout forever in a thread (a full pipe would block the proxy); hand lines over.
        lines: queue.Queue = queue.Queue()
        seen: list[str] = []

        def pump():
            for raw in proc.stdout:
                lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

        addrs: dict[str, str] = {}
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        while len(addrs) < 2:
            remaining = deadline - time.monotonic()
            try:
                line = lines.get(timeout=remaining) if remaining > 0 else None
            except queue.Empty:
                line = None
            if line is None:  # EOF or deadline
                proc.kill()
                proc.wait()
                pytest.fail(
                    f"flakestorm did not report both listeners (exited on its own, or {STARTUP_DEADLINE_S}s "
                    f"deadline passed; exit code {proc.returncode}).\nstdout:\n" + "\n".join(seen)
                    + "\nstderr:\n" + stderr_file.read_text(errors="replace")[-4000:],
                    pytrace=False,
                )
            seen.append(line)
            if m := READY_RE.match(line):
                addrs[m.group(1)] = m.group(2)

        fs = cls(proc, addrs["proxy"], addrs["control"], tmp / "certs" / "ca.pem", stderr_file, seen,
                 _lines=lines)
        # The control API's token: serve keeps it in data_dir (here the default, beside the
        # config) when the config sets no control.token.
        fs.token_file = tmp / ".flakestorm" / "control.token"
        assert fs.ca_file.is_file(), f"proxy CA not created at {fs.ca_file}"
        return fs

    def wait_line(self, pattern: str, deadline_s: float = STARTUP_DEADLINE_S) -> re.Match:
        """The first stdout line (seen so far or to come) that `pattern` matches."""
        for line in self.stdout_lines:
            if m := re.search(pattern, line):
                return m
        end = time.monotonic() + deadline_s
        while (left := end - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.stdout_lines.append(line)
            if m := re.search(pattern, line):
                return m
        pytest.fail(f"flakestorm never printed a line matching {pattern!r}:\n" + "\n".join(self.stdout_lines),
                    pytrace=False)

    def stop(self):
        """SIGTERM, then require a clean exit (code 0) within 20 s."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("flakestorm did not exit within 20s of SIGTERM\nstderr:\n" + self.stderr_tail())
        assert rc == 0, f"flakestorm exited {rc} on SIGTERM\nstderr:\n{self.stderr_tail()}"

    @property
    def proxy_url(self) -> str:
        return f"http://{self.proxy_addr}"

    def control(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        # Explicitly no proxy: the control listener is reached directly.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        if self.token_file is not None:
            headers["Authorization"] = "Bearer " + self.token_file.read_text().strip()
        req = urllib.request.Request(f"http://{self.control_addr}{path}", data=data, method=method,
                                     headers=headers)
        try:
            with opener.open(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            return self.stderr_file.read_text(errors="replace")[-n:]
        except OSError:
            return "<no stderr>"
