"""Fixtures for the real-client conformance suite.

* `flakestorm`  – one `flakestorm serve` process per session (started from a temp
                  config, readiness read from its stdout, stopped with SIGTERM).
* `http_origin` / `https_origin` – stdlib origins on 127.0.0.1 that record every
                  request and can answer OpenAI-shaped chat completions (JSON or SSE).
* `client_env`  – the environment a client subprocess gets: proxy + CA variables
                  only, every inherited proxy/CA variable removed.
* `run_python` / `run_curl` – run a client in a subprocess with that environment.

The origin server, the `flakestorm serve` lifecycle and `clean_env` come from
tests/pyharness/flakestorm_harness.py (shared with tests/conformance); the response
content lives in `_clients.py`.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# The shared harness (tests/pyharness) is not below this suite's directory, which is the
# only one pytest puts on sys.path; add it before importing from it.
_HARNESS_DIR = str(Path(__file__).resolve().parents[1] / "pyharness")
if _HARNESS_DIR not in sys.path:
    sys.path.insert(0, _HARNESS_DIR)

import flakestorm_harness as harness  # noqa: E402
from _clients import (CLIENT_TIMEOUT_S, SSE_GATE_TIMEOUT_S, chat_chunks, chat_completion,  # noqa: E402
                      clean_env)
from flakestorm_harness import Recorded  # noqa: E402

# --------------------------------------------------------------------------- origins


class _Handler(harness.OriginHandler):
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
                return self._send_sse([json.dumps(c) for c in chat_chunks(model)] + ["[DONE]"])
            return self._send(200, json.dumps(chat_completion(model)).encode(), "application/json")

        if self.path == "/close-delimited":
            return self._send_close_delimited()

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

    def _send_close_delimited(self):
        # As `http.server` behind `ssl` answers without a length: the body ends when the
        # connection closes, and SSLSocket's close sends no TLS close_notify.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for d in [json.dumps(c) for c in chat_chunks("gpt-test")] + ["[DONE]"]:
            self.wfile.write(f"data: {d}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def _send_sse(self, datas: list[str]):
        # Chunked, like the real API: one chunk per SSE frame, flushed as it goes.
        self._start_chunked("text/event-stream")
        origin: Origin = self.server.origin
        for i, d in enumerate(datas):
            if i == 2 and origin.sse_gate is not None:
                # Hold the rest of the stream until the client proves it already got the
                # first delta; a buffering proxy makes this wait time out.
                origin.sse_gate_opened = origin.sse_gate.wait(SSE_GATE_TIMEOUT_S)
            self._write_chunk(f"data: {d}\n\n".encode())
        self._end_chunked()


class Origin(harness.Origin):
    def __init__(self, tls: bool):
        self.sse_gate: threading.Event | None = None  # set by a test to pause SSE mid-stream
        self.sse_gate_opened: bool | None = None
        super().__init__(tls, _Handler)


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


class Flakestorm(harness.Flakestorm):
    @property
    def proxy_port(self) -> int:
        return int(self.proxy_addr.rsplit(":", 1)[1])

    def control_get(self, path: str) -> tuple[int, bytes]:
        return self.control("GET", path)

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


@pytest.fixture(scope="session")
def flakestorm(tmp_path_factory) -> Flakestorm:
    fs = Flakestorm.start(tmp_path_factory.mktemp("flakestorm"), env=clean_env())
    yield fs
    fs.stop()


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
def closed_port():
    """A loopback port that refuses connections for the whole test: a socket holds it bound
    and never listens, so no other process can listen there meanwhile (no SO_REUSEADDR)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]
