"""What each conformance test exercised, recorded as matrix cells in pytest's results.

A cell is fault × SDK surface × plain/streamed × SDK version. Nothing here is declared by
hand: the fault is what the test installed with `PUT /v1/chaos` (or, in
test_connect_failure.py, the proxy's `upstream_connect_failure` setting), and the surface
and plain/streamed are read from the requests the SDK actually sent, by watching the
`handle_request` of httpx's and httpx2's transports (watching only: every call goes on to
the real transport). Each cell becomes a `conformance.cell` property of the test, which
`--junitxml` writes out and scripts/conformance_matrix.py counts.
"""

from __future__ import annotations

import importlib.metadata
import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

PROPERTY = "conformance.cell"

# Modules that test rule scoping (which requests a rule applies to), not how a fault looks.
NOT_FAULT_FIDELITY = {"test_rule_scoping"}

# Rule fields that make a different failure of the same mode, shown as their own row.
VARIANTS = (("quota", True, "quota"), ("in_stream", True, "in_stream"), ("loud", True, "loud"),
            ("then", "close", "then: close"))

SDK_OF = {"openai chat": "openai", "openai responses": "openai", "openai completions": "openai",
          "anthropic messages": "anthropic",
          "google-genai generate_content": "google-genai", "ollama chat": "ollama",
          "ollama generate": "ollama"}
PROVIDER_OF = {"openai": "openai", "anthropic": "anthropic", "google-genai": "gemini", "ollama": "ollama"}


def surface_of(url: str, body: bytes) -> tuple[str, bool] | None:
    """(surface, streamed) of one SDK request, or None when it is not a generation call."""
    path = urlsplit(url).path
    try:
        req = json.loads(body or b"{}")
    except ValueError:
        req = {}
    if not isinstance(req, dict):
        req = {}
    if path.endswith(":streamGenerateContent"):
        return "google-genai generate_content", True
    if path.endswith(":generateContent"):
        return "google-genai generate_content", False
    if path.endswith("/api/chat") or path.endswith("/api/generate"):
        # The ollama API streams unless the request says `"stream": false`.
        name = "ollama chat" if path.endswith("/api/chat") else "ollama generate"
        return name, req.get("stream", True) is not False
    for suffix, name in (("/chat/completions", "openai chat"), ("/responses", "openai responses"),
                         ("/completions", "openai completions"), ("/messages", "anthropic messages")):
        if path.endswith(suffix):
            return name, req.get("stream") is True
    return None


def fault_of(rule: dict) -> str:
    variants = [label for key, value, label in VARIANTS if rule.get(key) == value]
    return " ".join([rule.get("mode", "?"), *variants])


@dataclass
class Seen:
    rules: list[dict] = field(default_factory=list)
    requests: list[tuple[str, bool]] = field(default_factory=list)
    fixed_fault: str | None = None

    def cells(self) -> set[str]:
        out = set()
        for surface, streamed in self.requests:
            sdk = SDK_OF[surface]
            faults = [self.fixed_fault] if self.fixed_fault else [
                fault_of(r) for r in self.rules if r.get("provider") in (None, PROVIDER_OF[sdk])]
            if not self.rules and not self.fixed_fault:
                faults = ["none (baseline)"]
            version = f"{sdk} {importlib.metadata.version(sdk)}"
            for fault in faults:
                out.add("|".join([fault, surface, "streamed" if streamed else "plain", version]))
        return out


def _watch(monkeypatch, seen: Seen) -> None:
    libs = []
    for name in ("httpx", "httpx2"):
        try:
            libs.append(importlib.import_module(name))
        except ImportError:
            pass
    for lib in libs:
        original = lib.HTTPTransport.handle_request

        def handle_request(self, request, _original=original, _not_read=lib.RequestNotRead):
            try:
                body = request.content
            except _not_read:  # a streamed upload, which no SDK generation call sends
                body = b""
            got = surface_of(str(request.url), body)
            if got:
                seen.requests.append(got)
            return _original(self, request)

        monkeypatch.setattr(lib.HTTPTransport, "handle_request", handle_request)


@pytest.fixture(autouse=True)
def matrix_cells(request, monkeypatch):
    """Records this test's cells as `conformance.cell` properties (see module doc)."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    if module in NOT_FAULT_FIDELITY:
        yield
        return
    seen = Seen()
    if module == "test_connect_failure":
        close = "closing_flakestorm" in request.fixturenames
        seen.fixed_fault = f"unreachable upstream ({'close' if close else 'default 502'})"
    _watch(monkeypatch, seen)
    import conftest  # the suite's conftest, loaded by pytest before any fixture runs

    original_control = conftest.Flakestorm.control

    def control(self, method, path, body=None):
        if method == "PUT" and path == "/v1/chaos" and isinstance(body, dict):
            seen.rules.extend(r for r in body.get("llm_faults", []) if isinstance(r, dict))
        return original_control(self, method, path, body)

    monkeypatch.setattr(conftest.Flakestorm, "control", control)
    yield
    for cell in sorted(seen.cells()):
        request.node.user_properties.append((PROPERTY, cell))
