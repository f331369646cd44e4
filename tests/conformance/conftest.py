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

The origin server, the `flakestorm serve` lifecycle and `clean_env` come from
tests/pyharness/flakestorm_harness.py (shared with tests/clients); the response shapes
live in `_conformance.py`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

# The shared harness (tests/pyharness) is not below this suite's directory, which is the
# only one pytest puts on sys.path; add it before importing from it.
_HARNESS_DIR = str(Path(__file__).resolve().parents[1] / "pyharness")
if _HARNESS_DIR not in sys.path:
    sys.path.insert(0, _HARNESS_DIR)

import flakestorm_harness as harness  # noqa: E402
from flakestorm_harness import CA_VARS, PROXY_VARS, Recorded, clean_env  # noqa: E402

from _conformance import (ANSWER_PIECES, TOOL_ARGS, TOOL_ARGS_FRAGS, TOOL_ARGS_JSON, TOOL_NAME,
    USAGE_OPENAI, GEMINI_USAGE, is_tools_model, anthropic_json, anthropic_sse, gemini_json, gemini_sse,
    ollama_generate_json, ollama_generate_ndjson, ollama_json, ollama_ndjson, openai_completion_json,
    openai_completion_sse, openai_json, openai_responses_json,
    openai_responses_sse, openai_sse)


# --------------------------------------------------------------------------- origins


GEMINI_RE = re.compile(r"^/v1beta/models/([^/:]+):(generateContent|streamGenerateContent)$")
# Vertex AI's form of the same call (google-genai with vertexai=True).
VERTEX_RE = re.compile(
    r"^/v1beta1/projects/[^/]+/locations/[^/]+/publishers/google/models/([^/:]+):(generateContent|streamGenerateContent)$")
# Azure OpenAI's chat path: the deployment names the model; `api-version` is a query.
AZURE_CHAT_RE = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")


class _Handler(harness.OriginHandler):
    def do_POST(self):
        body = self._read_body()
        origin: Origin = self.server.origin
        origin.record(Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        req = json.loads(body or b"{}")
        path = urlsplit(self.path).path
        model = req.get("model", "")
        kind = origin.kind
        if kind == "openai" and (azure := AZURE_CHAT_RE.match(path)):
            model, path = azure.group(1), "/v1/chat/completions"
        if kind == "openai" and path == "/v1/chat/completions":
            if req.get("stream"):
                usage = bool((req.get("stream_options") or {}).get("include_usage"))
                return self._stream(openai_sse(model, usage), "text/event-stream")
            return self._json(openai_json(model))
        if kind == "openai" and path == "/v1/completions":
            if req.get("stream"):
                return self._stream(openai_completion_sse(model), "text/event-stream")
            return self._json(openai_completion_json(model))
        if kind == "openai" and path == "/v1/responses":
            if req.get("stream"):
                return self._stream(openai_responses_sse(model), "text/event-stream")
            return self._json(openai_responses_json(model))
        if kind == "anthropic" and path == "/v1/messages":
            if req.get("stream"):
                return self._stream(anthropic_sse(model), "text/event-stream")
            return self._json(anthropic_json(model))
        if kind == "gemini" and (m := GEMINI_RE.match(path) or VERTEX_RE.match(path)):
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
        self._start_chunked(ctype)
        try:
            for f in frames:
                self._write_chunk(f)
            self._end_chunked()
        except OSError:
            pass  # the proxy dropped the stream (loud cuts)


class Origin(harness.Origin):
    def __init__(self, kind: str, tls: bool):
        self.kind = kind
        super().__init__(tls, _Handler)


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


class Flakestorm(harness.Flakestorm):
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


@pytest.fixture(scope="session")
def flakestorm(tmp_path_factory) -> Flakestorm:
    fs = Flakestorm.start(tmp_path_factory.mktemp("flakestorm"), env=clean_env(), extra_config="advanced:\n  seed: 7\n")
    yield fs
    fs.control("DELETE", "/v1/chaos")
    fs.stop()


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
def azure_client(proxy_env, origins):
    """Azure OpenAI as its users configure it: an endpoint, a key and an API version."""
    import openai

    def make(**kw):
        kw.setdefault("max_retries", 2)
        return openai.AzureOpenAI(azure_endpoint=origins.openai.url(), api_key=API_KEY,
                                  api_version="2024-10-21", **kw)

    return make


@pytest.fixture
def vertex_client(proxy_env, origins):
    """google-genai on Vertex AI: a project, a location and OAuth credentials (here an
    access token given as it is: no Google account exists on this machine, and the origin
    checks none)."""
    from google import genai
    from google.genai import types
    from google.oauth2.credentials import Credentials

    def make():
        return genai.Client(vertexai=True, project="acme-agents", location="us-central1",
                            credentials=Credentials(token="ya29.conformance"),
                            http_options=types.HttpOptions(base_url=origins.gemini.url()))

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


# ------------------------------------------------------------------------ matrix cells

# Autouse: records each test's fault × surface × plain/streamed × SDK cells for
# scripts/conformance_matrix.py (see _matrix_cells.py).
from _matrix_cells import matrix_cells  # noqa: E402,F401
