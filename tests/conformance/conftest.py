"""Fixtures for the SDK conformance suite: real provider SDKs -> flakestorm -> local origins.

* `flakestorm`    – one `flakestorm serve` per session (temp config, readiness read from
                    stdout, SIGTERM at the end, exit code 0 required).
* `origins`       – provider-shaped origins (OpenAI/Anthropic/Gemini over HTTPS with a cert
                    from tests/fixtures/test-ca.pem, Ollama over plain HTTP). They record
                    every request; `origins.reset()` runs before each test.
* `chaos`         – `chaos(rule, ...)` PUTs `{"llm_faults": [...]}` to the control API and
                    the fixture DELETEs it after the test.
* `proxy_env`     – routes every client in this process through flakestorm, configured
                    ONLY through the environment (HTTP(S)_PROXY, SSL_CERT_FILE).
* `openai_client`, `anthropic_client`, `genai_client`, `ollama_client` – SDK client
                    factories (built after the environment is set).
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
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
TEST_CA = FIXTURES / "test-ca.pem"
READY_RE = re.compile(r"^flakestorm: (proxy|control) listening on (\S+)$")
STARTUP_DEADLINE_S = 30

PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
CA_VARS = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")

from _conformance import (ANSWER_PIECES, TOOL_ARGS, TOOL_ARGS_FRAGS, TOOL_ARGS_JSON, TOOL_NAME,
    USAGE_OPENAI, GEMINI_USAGE, is_tools_model, anthropic_json, anthropic_sse, gemini_json, gemini_sse,
    ollama_generate_json, ollama_generate_ndjson, ollama_json, ollama_ndjson, openai_json, openai_responses_json,
    openai_responses_sse, openai_sse)


# --------------------------------------------------------------------------- origins


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body or b"{}")


GEMINI_RE = re.compile(r"^/v1beta/models/([^/:]+):(generateContent|streamGenerateContent)$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self):
        body = self._read_body()
        origin: Origin = self.server.origin
        origin.record(Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        req = json.loads(body or b"{}")
        path = urlsplit(self.path).path
        model = req.get("model", "")
        kind = origin.kind
        if kind == "openai" and path == "/v1/chat/completions":
            if req.get("stream"):
                usage = bool((req.get("stream_options") or {}).get("include_usage"))
                return self._stream(openai_sse(model, usage), "text/event-stream")
            return self._json(openai_json(model))
        if kind == "openai" and path == "/v1/responses":
            if req.get("stream"):
                return self._stream(openai_responses_sse(model), "text/event-stream")
            return self._json(openai_responses_json(model))
        if kind == "anthropic" and path == "/v1/messages":
            if req.get("stream"):
                return self._stream(anthropic_sse(model), "text/event-stream")
            return self._json(anthropic_json(model))
        if kind == "gemini" and (m := GEMINI_RE.match(path)):
            model = m.group(1)
            if m.group(2) == "streamGenerateContent":
                return self._stream(gemini_sse(model), "text/event-stream")
            return self._json(gemini_json(model))
        if kind == "ollama" and path == "/api/chat":
            if req.get("stream", True):
                return self._stream(ollama_ndjson(model), "application/x-ndjson")
            return self._json(ollama_json(model))
        if kind == "ollama" and path == "/api/generate":
            if req.get("stream", True):
                return self._stream(ollama_generate_ndjson(model), "application/x-ndjson")
            return self._json(ollama_generate_json(model))
        self._json({"error": f"origin {kind} has no {self.command} {self.path}"}, 404)

    def _json(self, obj: dict, status: int = 200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, frames: list[bytes], ctype: str):
        # Chunked, one chunk per event, flushed as it goes (like the real APIs).
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for f in frames:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(f), f))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            pass  # the proxy dropped the stream (loud cuts)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, origin: "Origin", ssl_ctx: ssl.SSLContext | None):
        self.origin = origin
        self.ssl_ctx = ssl_ctx
        super().__init__(("127.0.0.1", 0), _Handler)

    def finish_request(self, request, client_address):
        if self.ssl_ctx is not None:
            try:
                request = self.ssl_ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        super().finish_request(request, client_address)


class Origin:
    def __init__(self, kind: str, tls: bool):
        self.kind = kind
        self.scheme = "https" if tls else "http"
        ctx = None
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(FIXTURES / "origin.pem", FIXTURES / "origin.key")
            ctx.set_alpn_protocols(["http/1.1"])
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self._server = _Server(self, ctx)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, host: str = "localhost") -> str:
        return f"{self.scheme}://{host}:{self.port}"

    def record(self, r: Recorded):
        with self._lock:
            self.requests.append(r)

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def reset(self):
        with self._lock:
            self.requests.clear()

    def close(self):
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Origins:
    openai: Origin
    anthropic: Origin
    gemini: Origin
    ollama: Origin

    def all(self) -> list[Origin]:
        return [self.openai, self.anthropic, self.gemini, self.ollama]

    def reset(self):
        for o in self.all():
            o.reset()


@pytest.fixture(scope="session")
def _origins():
    o = Origins(Origin("openai", True), Origin("anthropic", True), Origin("gemini", True), Origin("ollama", False))
    yield o
    for x in o.all():
        x.close()


@pytest.fixture
def origins(_origins) -> Origins:
    _origins.reset()
    return _origins


# ------------------------------------------------------------------------ flakestorm


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARS and k.upper() not in CA_VARS}


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

    def control(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # direct, no proxy
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://{self.control_addr}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
        try:
            with opener.open(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def metric(self, name: str, **labels: str) -> float:
        """Sum of every sample of `name` whose labels include `labels`."""
        status, body = self.control("GET", "/metrics")
        assert status == 200, body
        total = 0.0
        for line in body.decode().splitlines():
            m = re.match(rf"^{re.escape(name)}(?:\{{(.*)\}})?\s+(\S+)$", line)
            if not m:
                continue
            got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1) or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(m.group(2))
        return total

    def injected(self, mode: str) -> float:
        return self.metric("flakestorm_faults_injected_total", target="llm", mode=mode)

    def wait_metric(self, name: str, at_least: float, within_s: float = 5.0, **labels: str) -> float:
        """Poll until the counter reaches `target` (it may be bumped when the response body
        finishes, racing with the client). Returns the last value, which may exceed it."""
        deadline = time.monotonic() + within_s
        while (now := self.metric(name, **labels)) < at_least and time.monotonic() < deadline:
            time.sleep(0.02)
        return now

    def wait_injected(self, mode: str, at_least: float, within_s: float = 5.0) -> float:
        return self.wait_metric("flakestorm_faults_injected_total", at_least, within_s, target="llm", mode=mode)

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            return self.stderr_file.read_text(errors="replace")[-n:]
        except OSError:
            return "<no stderr>"


def _binary() -> Path:
    path = Path(os.environ.get("FLAKESTORM_BIN") or REPO / "target" / "debug" / "flakestorm")
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"flakestorm binary not found at {path}: run `cargo build` in {REPO} first "
                    "(or set FLAKESTORM_BIN)", pytrace=False)
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
        "advanced:\n"
        "  seed: 7\n"
    )
    stderr_file = tmp / "flakestorm.stderr"
    with open(stderr_file, "wb") as err:
        proc = subprocess.Popen([str(binary), "serve", "-c", str(config)], stdout=subprocess.PIPE,
                                stderr=err, stdin=subprocess.DEVNULL, env=_clean_env())
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
        if line is None:
            proc.kill()
            proc.wait()
            pytest.fail(f"flakestorm did not report both listeners (exit code {proc.returncode}).\nstdout:\n"
                        + "\n".join(seen) + "\nstderr:\n" + stderr_file.read_text(errors="replace")[-4000:],
                        pytrace=False)
        seen.append(line)
        if m := READY_RE.match(line):
            addrs[m.group(1)] = m.group(2)

    fs = Flakestorm(proc, addrs["proxy"], addrs["control"], tmp / "certs" / "ca.pem", stderr_file, seen)
    assert fs.ca_file.is_file(), f"proxy CA not created at {fs.ca_file}"
    yield fs

    fs.control("DELETE", "/v1/chaos")
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail("flakestorm did not exit within 20s of SIGTERM\nstderr:\n" + fs.stderr_tail())
    assert rc == 0, f"flakestorm exited {rc} on SIGTERM\nstderr:\n{fs.stderr_tail()}"


@pytest.fixture
def chaos(flakestorm):
    """`chaos(rule, ...)` installs `{"llm_faults": [rules]}`; cleared after the test."""

    def put(*rules: dict, **extra) -> None:
        body = {"llm_faults": list(rules), **extra}
        status, resp = flakestorm.control("PUT", "/v1/chaos", body)
        assert status == 200, f"PUT /v1/chaos {body} -> {status} {resp!r}"

    yield put
    status, resp = flakestorm.control("DELETE", "/v1/chaos")
    assert status in (200, 204), f"DELETE /v1/chaos -> {status} {resp!r}"


# ---------------------------------------------------------------------------- clients


@pytest.fixture
def proxy_env(flakestorm, monkeypatch):
    """Route this process's SDK clients through flakestorm via the environment only."""
    for name in list(os.environ):
        if name.lower() in PROXY_VARS or name.upper() in CA_VARS:
            monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, flakestorm.proxy_url)
    monkeypatch.setenv("SSL_CERT_FILE", str(flakestorm.ca_file))
    return flakestorm


API_KEY = "sk-test-conformance"


@pytest.fixture
def openai_client(proxy_env, origins):
    import openai

    def make(**kw):
        kw.setdefault("max_retries", 2)
        return openai.OpenAI(base_url=f"{origins.openai.url()}/v1", api_key=API_KEY, **kw)

    return make


@pytest.fixture
def anthropic_client(proxy_env, origins):
    import anthropic

    def make(**kw):
        kw.setdefault("max_retries", 2)
        return anthropic.Anthropic(base_url=origins.anthropic.url(), api_key=API_KEY, **kw)

    return make


@pytest.fixture
def genai_client(proxy_env, origins):
    from google import genai
    from google.genai import types

    def make(**http_kw):
        return genai.Client(api_key=API_KEY,
                            http_options=types.HttpOptions(base_url=origins.gemini.url(), api_version="v1beta",
                                                               **http_kw))

    return make


@pytest.fixture
def ollama_client(proxy_env, origins):
    import ollama

    def make(**kw):
        return ollama.Client(host=origins.ollama.url("127.0.0.1"), **kw)

    return make
