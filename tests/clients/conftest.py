"""Fixtures for the real-client conformance suite.

* `flakestorm`  – one `flakestorm serve` process per session (started from a temp
                  config, readiness read from its stdout, stopped with SIGTERM).
* `http_origin` / `https_origin` – stdlib origins on 127.0.0.1 that record every
                  request and can answer OpenAI-shaped chat completions (JSON or SSE).
* `client_env`  – the environment a client subprocess gets: proxy + CA variables
                  only, every inherited proxy/CA variable removed.
* `run_python` / `run_curl` – run a client in a subprocess with that environment.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
TEST_CA = FIXTURES / "test-ca.pem"
READY_RE = re.compile(r"^flakestorm: (proxy|control) listening on (\S+)$")
STARTUP_DEADLINE_S = 30
CLIENT_TIMEOUT_S = 60
SSE_GATE_TIMEOUT_S = 10

# Variables that would route a client elsewhere (NO_PROXY would make localhost
# bypass the proxy) or make it trust something other than the proxy CA.
PROXY_VARS = {"http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"}
CA_VARS = {"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}


def clean_env() -> dict[str, str]:
    """os.environ without any proxy or CA-bundle variable (in either case)."""
    return {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in PROXY_VARS and k.upper() not in CA_VARS
    }


# --------------------------------------------------------------------------- origins


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes


CHAT_ID = "chatcmpl-flakestorm-test"
CHAT_CONTENT = "Hello from the origin ✓"  # non-ASCII on purpose: bytes must survive the proxy
STREAM_PIECES = ["Hel", "lo, ", "strë", "am!"]
USAGE = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}


def _chat_completion(model: str) -> dict:
    return {
        "id": CHAT_ID,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": CHAT_CONTENT},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": USAGE,
    }


def _chat_chunks(model: str) -> list[dict]:
    def chunk(delta: dict, finish: str | None) -> dict:
        return {
            "id": CHAT_ID,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    return (
        [chunk({"role": "assistant", "content": ""}, None)]
        + [chunk({"content": p}, None) for p in STREAM_PIECES]
        + [chunk({}, "stop")]
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every non-SSE response has Content-Length

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

    def _handle(self):
        body = self._read_body()
        origin: Origin = self.server.origin
        headers: dict[str, str] = {}
        for k, v in self.headers.items():
            headers[k.lower()] = f"{headers[k.lower()]}, {v}" if k.lower() in headers else v
        origin.record(Recorded(self.command, self.path, headers, body))

        if self.command == "POST" and self.path == "/v1/chat/completions":
            req = json.loads(body or b"{}")
            model = req.get("model", "gpt-test")
            if req.get("stream"):
                return self._send_sse([json.dumps(c) for c in _chat_chunks(model)] + ["[DONE]"])
            return self._send(200, json.dumps(_chat_completion(model)).encode(), "application/json")

        # Everything else: an echo the client can assert on, tagged with the origin kind.
        echo = {"origin": origin.scheme, "method": self.command, "path": self.path, "body": body.decode("utf-8", "replace")}
        self._send(200, json.dumps(echo).encode(), "application/json", {"X-Origin": origin.scheme})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    def _send(self, status: int, body: bytes, ctype: str, extra: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _send_sse(self, datas: list[str]):
        # Chunked, like the real API: one chunk per SSE frame, flushed as it goes.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        origin: Origin = self.server.origin
        for i, d in enumerate(datas):
            if i == 2 and origin.sse_gate is not None:
                # Hold the rest of the stream until the client proves it already got the
                # first delta; a buffering proxy makes this wait time out.
                origin.sse_gate_opened = origin.sse_gate.wait(SSE_GATE_TIMEOUT_S)
            frame = f"data: {d}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, origin: "Origin", ssl_ctx: ssl.SSLContext | None):
        self.origin = origin
        self.ssl_ctx = ssl_ctx
        super().__init__(("127.0.0.1", 0), _Handler)

    def finish_request(self, request, client_address):
        # TLS handshake in the per-connection thread, so a stalled client can't block accept().
        if self.ssl_ctx is not None:
            try:
                request = self.ssl_ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        super().finish_request(request, client_address)


class Origin:
    def __init__(self, tls: bool):
        self.scheme = "https" if tls else "http"
        ctx = None
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(FIXTURES / "origin.pem", FIXTURES / "origin.key")
            ctx.set_alpn_protocols(["http/1.1"])  # stdlib server speaks HTTP/1.1 only
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.sse_gate: threading.Event | None = None  # set by a test to pause SSE mid-stream
        self.sse_gate_opened: bool | None = None
        self._server = _Server(self, ctx)
        self.port = self._server.server_address[1]
        # Short poll interval: shutdown() at fixture teardown waits up to one interval.
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, host: str = "localhost") -> str:
        return f"{self.scheme}://{host}:{self.port}"

    def record(self, r: Recorded):
        with self._lock:
            self.requests.append(r)

    def only_request(self) -> Recorded:
        with self._lock:
            assert len(self.requests) == 1, f"origin expected exactly 1 request, saw {self.requests!r}"
            return self.requests[0]

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def http_origin():
    o = Origin(tls=False)
    yield o
    o.close()


@pytest.fixture
def https_origin():
    o = Origin(tls=True)
    yield o
    o.close()


# ------------------------------------------------------------------------ flakestorm


@dataclass
class Flakestorm:
    proc: subprocess.Popen
    proxy_addr: str
    control_addr: str
    ca_file: Path
    stderr_file: Path
    stdout_lines: list[str] = field(default_factory=list)

    @property
    def proxy_url(self) -> str:
        return f"http://{self.proxy_addr}"

    @property
    def proxy_port(self) -> int:
        return int(self.proxy_addr.rsplit(":", 1)[1])

    def control_get(self, path: str) -> tuple[int, bytes]:
        # Explicitly no proxy: the control listener is reached directly.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(f"http://{self.control_addr}{path}", timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def requests_total(self) -> float:
        """Sum of every flakestorm_requests_total sample (all label sets)."""
        status, body = self.control_get("/metrics")
        assert status == 200, body
        total = 0.0
        for line in body.decode().splitlines():
            if re.match(r"^flakestorm_requests_total(\{.*\})?\s", line):
                total += float(line.rsplit(None, 1)[1])
        return total

    def assert_counted(self, before: float, at_least: int = 1, within_s: float = 5.0):
        """The proxy's request counter grew by `at_least` since `before`: the client
        really went through flakestorm. Polled, because the counter may be bumped
        when the response body finishes, racing with the client's exit."""
        deadline = time.monotonic() + within_s
        while (now := self.requests_total()) < before + at_least and time.monotonic() < deadline:
            time.sleep(0.05)
        assert now >= before + at_least, f"flakestorm_requests_total went {before} -> {now}"

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            return self.stderr_file.read_text(errors="replace")[-n:]
        except OSError:
            return "<no stderr>"


def _binary() -> Path:
    path = Path(os.environ.get("FLAKESTORM_BIN") or REPO / "target" / "debug" / "flakestorm")
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"flakestorm binary not found at {path}: run `cargo build` in {REPO} first "
            "(or point FLAKESTORM_BIN at a built binary)",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def flakestorm(tmp_path_factory) -> Flakestorm:
    binary = _binary()
    tmp = tmp_path_factory.mktemp("flakestorm")
    config = tmp / "flakestorm.yaml"
    config.write_text(
        "proxy:\n"
        '  listen: "127.0.0.1:0"\n'
        f'  upstream_ca_file: "{TEST_CA}"\n'
        "control:\n"
        '  listen: "127.0.0.1:0"\n'
        "ca:\n"
        f'  dir: "{tmp / "certs"}"\n'
    )
    stderr_file = tmp / "flakestorm.stderr"
    with open(stderr_file, "wb") as err:
        # clean_env(): the proxy must not itself be routed through an inherited proxy.
        proc = subprocess.Popen(
            [str(binary), "serve", "-c", str(config)],
            stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, env=clean_env(),
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
            line = lines.get(timeout=max(remaining, 0)) if remaining > 0 else None
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

    fs = Flakestorm(proc, addrs["proxy"], addrs["control"], tmp / "certs" / "ca.pem", stderr_file, seen)
    assert fs.ca_file.is_file(), f"proxy CA not created at {fs.ca_file}"
    yield fs

    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail("flakestorm did not exit within 20s of SIGTERM\nstderr:\n" + fs.stderr_tail())
    assert rc == 0, f"flakestorm exited {rc} on SIGTERM\nstderr:\n{fs.stderr_tail()}"


# ---------------------------------------------------------------------------- clients


@pytest.fixture
def client_env(flakestorm) -> dict[str, str]:
    """Environment for a client that must use the proxy and trust ONLY its CA."""
    env = clean_env()
    for name in ("HTTP_PROXY", "HTTPS_PROXY"):
        # Both spellings: curl ignores upper-case HTTP_PROXY (CGI "httpoxy" guard).
        env[name] = env[name.lower()] = flakestorm.proxy_url
    for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        env[name] = str(flakestorm.ca_file)
    return env


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)


@pytest.fixture
def run_python(flakestorm):
    """Run a Python client script in a subprocess; it must print one JSON object last."""

    def run(script: str, env: dict[str, str], *args: str) -> dict:
        p = _run([sys.executable, "-c", script, *args], env)
        if p.returncode != 0:
            pytest.fail(
                f"client exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-4000:]}"
                f"\nflakestorm stderr:\n{flakestorm.stderr_tail()}",
                pytrace=False,
            )
        return json.loads(p.stdout.strip().splitlines()[-1])

    return run


@pytest.fixture
def run_curl():
    """Run curl (ignoring any ~/.curlrc) with the given env; body on stdout, -v on stderr."""

    def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
        return _run(["curl", "-q", "-sS", "-v", "--max-time", "30", *args], env)

    return run


@pytest.fixture
def closed_port() -> int:
    """A loopback port that was just bound and released, so connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
