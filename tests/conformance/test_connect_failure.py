"""An unreachable upstream through flakestorm, as the SDKs see it: by default a 502 that
says the proxy's connect failed (`x-flakestorm-error: upstream_connect`); with
`proxy.upstream_connect_failure: close` the client connection closes with no response, so
the SDK takes its connection-error path, as it does against a dead host without a proxy."""

from __future__ import annotations

import os
import socket

import httpx
import ollama
import openai
import pytest

import flakestorm_harness as harness
from conftest import API_KEY, Flakestorm
from _majors import openai_http

MSG = [{"role": "user", "content": "Tell me a story."}]


def dead_port() -> int:
    """A loopback port with nothing listening on it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
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
