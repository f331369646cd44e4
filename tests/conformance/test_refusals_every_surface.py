"""Faults that answer before any answer starts, on every SDK surface, plain and streamed.

`rate_limit`, `server_error`, `timeout`, `client_error`, `html_error_page` and
`context_length_exceeded` answer with the provider's error status and JSON (or, for
`timeout then: close`, a closed connection) whether or not the request asked for a stream,
as the real providers do: an error comes before any stream starts. So a streamed call must
raise exactly what the plain call raises, at the call or at its first iteration. The
per-provider files test each fault's details on one surface; this one checks the SDK class,
status and attempts on all of them (the matrix in docs/conformance-matrix.md)."""

from __future__ import annotations

import anthropic
import httpx
import ollama
import openai
import pytest
from google.genai import errors

from _majors import anthropic_http, genai_http, openai_http
from _surfaces import SURFACES

# fault -> (rule fields, {sdk: (exception, status or None)}); an sdk missing means the fault
# has no real counterpart there (see docs/faults.md and the matrix's n/a notes).
FAULTS = {
    "rate_limit": ({"mode": "rate_limit", "retry_after_s": 0.05}, {
        "openai": (openai.RateLimitError, 429), "anthropic": (anthropic.RateLimitError, 429),
        "genai": (errors.ClientError, 429), "ollama": (ollama.ResponseError, 429)}),
    "rate_limit quota": ({"mode": "rate_limit", "retry_after_s": 0.05, "quota": True}, {
        "openai": (openai.RateLimitError, 429), "anthropic": (anthropic.BadRequestError, 400)}),
    "server_error": ({"mode": "server_error"}, {
        "openai": (openai.InternalServerError, 503), "anthropic": (anthropic.OverloadedError, 529),
        "genai": (errors.ServerError, 503), "ollama": (ollama.ResponseError, 500)}),
    "timeout": ({"mode": "timeout", "delay_ms": 50}, {
        "openai": (openai.InternalServerError, 504), "anthropic": (anthropic.InternalServerError, 504),
        "genai": (errors.ServerError, 504), "ollama": (ollama.ResponseError, 504)}),
    "timeout then: close": ({"mode": "timeout", "delay_ms": 50, "then": "close"}, {
        "openai": (openai.APIConnectionError, None), "anthropic": (anthropic.APIConnectionError, None),
        "genai": ((genai_http.RemoteProtocolError, genai_http.ReadError), None),
        "ollama": ((httpx.RemoteProtocolError, httpx.ReadError), None)}),
    "client_error": ({"mode": "client_error", "error": "model_not_found"}, {
        "openai": (openai.NotFoundError, 404), "anthropic": (anthropic.NotFoundError, 404),
        "genai": (errors.ClientError, 404), "ollama": (ollama.ResponseError, 404)}),
    "html_error_page": ({"mode": "html_error_page"}, {
        "openai": (openai.InternalServerError, 502), "anthropic": (anthropic.InternalServerError, 502),
        "genai": (errors.ServerError, 502), "ollama": (ollama.ResponseError, 502)}),
    # Ollama has no such error: the fault cuts the conversation instead (test_ollama.py).
    "context_length_exceeded": ({"mode": "context_length_exceeded"}, {
        "openai": (openai.BadRequestError, 400), "anthropic": (anthropic.BadRequestError, 400),
        "genai": (errors.ClientError, 400)}),
}

# Retried here: rate_limit (its short retry-after keeps it fast): with max_retries=1 the
# openai and anthropic SDKs make 2 attempts. The other retried faults' attempts are counted
# in the per-provider files (their back-off is 0.5 s or more).
RETRIED = {"rate_limit": {"openai", "anthropic"}}

CASES = [pytest.param(fault, surface, streamed, id=f"{fault}-{surface}-{'streamed' if streamed else 'plain'}")
         for fault, (_, expect) in FAULTS.items() for surface, (*_, sdk) in SURFACES.items() if sdk in expect
         for streamed in (False, True)]


def status_of(e: BaseException) -> int | None:
    return getattr(e, "status_code", None) if not isinstance(e, errors.APIError) else e.code


@pytest.mark.parametrize("fault,surface,streamed", CASES)
def test_refusal_is_the_same_plain_or_streamed(request, chaos, origins, flakestorm, fault, surface, streamed):
    provider, fixture, call, sdk = SURFACES[surface]
    fields, expect = FAULTS[fault]
    exc, status = expect[sdk]
    retried = sdk in RETRIED.get(fault, set())
    kw = {"max_retries": 1 if retried else 0} if sdk in ("openai", "anthropic") else {}
    client = request.getfixturevalue(fixture)(**kw)
    chaos({"provider": provider, **fields})
    mode = fields["mode"]
    before = flakestorm.injected(mode)
    with pytest.raises(exc) as ei:
        call(client, streamed)
    assert status_of(ei.value) == status, repr(ei.value)
    if sdk == "openai" and exc is openai.APIConnectionError:
        # A closed connection, not a timeout: the SDK's own transport error is the cause.
        assert not isinstance(ei.value, openai.APITimeoutError)
        assert isinstance(ei.value.__cause__, (openai_http.RemoteProtocolError, openai_http.ReadError))
    if sdk == "anthropic" and exc is anthropic.APIConnectionError:
        assert isinstance(ei.value.__cause__, (anthropic_http.RemoteProtocolError, anthropic_http.ReadError))
    attempts = 2 if retried else 1
    assert flakestorm.wait_injected(mode, before + attempts) == before + attempts
    # Every fault here answers in the provider's place: the origin never sees the request.
    assert sum(o.count() for o in origins.all()) == 0
