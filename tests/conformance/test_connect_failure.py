"""An unreachable upstream through flakestorm, as the SDKs see it: by default a 502 that
says the proxy's connect failed (`x-flakestorm-error: upstream_connect`); with
`proxy.upstream_connect_failure: close` the client connection closes with no response, so
the SDK takes its connection-error path, as it does against a dead host without a proxy."""

from __future__ import annotations

import os
import socket

import anthropic
import httpx
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

import flakestorm_harness as harness
from conftest import API_KEY, Flakestorm
from _majors import genai_http, openai_http
from _surfaces import SURFACES

MSG = [{"role": "user", "content": "Tell me a story."}]


# The sockets that hold dead_port()'s ports until the suite's process ends.
_HELD: list[socket.socket] = []


def dead_port() -> int:
    """A loopback port with nothing listening on it for the rest of the suite: a socket holds
    it bound and never listens, so no other process can listen there (no SO_REUSEADDR)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _HELD.append(s)
    return s.getsockname()[1]


@pytest.fixture(scope="module")
def closing_flakestorm(tmp_path_factory):
    env = {**harness.clean_env(), "FLAKESTORM_PROXY__UPSTREAM_CONNECT_FAILURE": "close"}
    fs = Flakestorm.start(tmp_path_factory.mktemp("closing"), env=env)
    yield fs
    fs.stop()


def route_through(fs, monkeypatch):
    for name in list(os.environ):
        if name.lower() in harness.PROXY_VARS or name.upper() in harness.CA_VARS:
            monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, fs.proxy_url)
    monkeypatch.setenv("SSL_CERT_FILE", str(fs.ca_file))


def llm_errors(fs) -> float:
    return fs.metric("flakestorm_requests_total", target="llm", status_class="error")


def test_default_is_a_502_that_names_the_proxy(flakestorm, monkeypatch):
    route_through(flakestorm, monkeypatch)
    c = openai.OpenAI(base_url=f"https://localhost:{dead_port()}/v1", api_key=API_KEY, max_retries=0)
    with pytest.raises(openai.InternalServerError) as ei:
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert ei.value.status_code == 502
    assert ei.value.response.headers["x-flakestorm-error"] == "upstream_connect"


def test_close_openai_connection_error_retried(closing_flakestorm, monkeypatch):
    route_through(closing_flakestorm, monkeypatch)
    before = llm_errors(closing_flakestorm)
    c = openai.OpenAI(base_url=f"https://localhost:{dead_port()}/v1", api_key=API_KEY, max_retries=2)
    with pytest.raises(openai.APIConnectionError) as ei:
        c.chat.completions.create(model="gpt-test", messages=MSG)
    assert not isinstance(ei.value, openai.APITimeoutError)
    assert isinstance(ei.value.__cause__, (openai_http.RemoteProtocolError, openai_http.ReadError)), repr(ei.value.__cause__)
    # Retried like a real connection error: 3 attempts, each journaled and counted.
    assert closing_flakestorm.wait_metric("flakestorm_requests_total", before + 3, target="llm",
                                          status_class="error") == before + 3


def test_close_ollama_transport_error_not_a_response_error(closing_flakestorm, monkeypatch):
    # Without a proxy ollama maps httpx.ConnectError to ConnectionError; through any proxy
    # the connect (to the proxy) succeeded, so the closest it gets is a raw transport error
    # instead of ResponseError(502).
    route_through(closing_flakestorm, monkeypatch)
    c = ollama.Client(host=f"http://127.0.0.1:{dead_port()}")
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        c.chat(model="llama-test", messages=MSG, stream=False)



# ------------------------------------------------------------------ every surface


def dead_client(sdk: str):
    """A client of `sdk` whose base URL is a loopback port with nothing listening."""
    port = dead_port()
    if sdk == "openai":
        return openai.OpenAI(base_url=f"https://localhost:{port}/v1", api_key=API_KEY, max_retries=0)
    if sdk == "anthropic":
        return anthropic.Anthropic(base_url=f"https://localhost:{port}", api_key=API_KEY, max_retries=0)
    if sdk == "genai":
        return genai.Client(api_key=API_KEY, http_options=genai_types.HttpOptions(
            base_url=f"https://localhost:{port}", api_version="v1beta"))
    return ollama.Client(host=f"http://127.0.0.1:{port}")


# What each SDK raises for a connection closed with no response (as for a dead host: its
# connection-error path); openai and anthropic wrap it, google-genai and ollama do not.
CLOSED = {"openai": (openai.APIConnectionError,), "anthropic": (anthropic.APIConnectionError,),
          "genai": (genai_http.RemoteProtocolError, genai_http.ReadError),
          "ollama": (httpx.RemoteProtocolError, httpx.ReadError)}
# The default: the proxy's 502, which each SDK maps by status.
BAD_GATEWAY = {"openai": openai.InternalServerError, "anthropic": anthropic.InternalServerError,
               "genai": genai_errors.ServerError, "ollama": ollama.ResponseError}


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("surface", list(SURFACES))
def test_close_every_surface_is_a_connection_failure(closing_flakestorm, monkeypatch, surface, streamed):
    route_through(closing_flakestorm, monkeypatch)
    _, _, call, sdk = SURFACES[surface]
    with pytest.raises(CLOSED[sdk]) as ei:
        call(dead_client(sdk), streamed)
    assert not isinstance(ei.value, (openai.APIStatusError, anthropic.APIStatusError)), repr(ei.value)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("surface", list(SURFACES))
def test_default_every_surface_is_a_502(flakestorm, monkeypatch, surface, streamed):
    route_through(flakestorm, monkeypatch)
    _, _, call, sdk = SURFACES[surface]
    with pytest.raises(BAD_GATEWAY[sdk]) as ei:
        call(dead_client(sdk), streamed)
    assert (ei.value.code if sdk == "genai" else ei.value.status_code) == 502
