"""The real `ollama` client through a reverse route with the proxy variables exported, as
the README tells users to do: `OLLAMA_HOST=http://<proxy>/ollama` and `HTTP_PROXY` set. The
client then sends its request to the proxy in absolute form, naming the proxy itself; it
must be that route's (issue #31: it was refused as a loop, `403 forbidden_target`), reach
the Ollama origin, and meet the route's faults in Ollama's own form.
"""

from __future__ import annotations

import os

import ollama
import pytest
from _conformance import ANSWER
from conftest import CA_VARS, PROXY_VARS, Flakestorm, clean_env


@pytest.fixture
def routed(origins, tmp_path, monkeypatch):
    upstream = origins.ollama.url("127.0.0.1")
    fs = Flakestorm.start(tmp_path, env=clean_env(),
                          proxy_config=f'  reverse: [{{prefix: /ollama, upstream: "{upstream}"}}]\n')
    for name in list(os.environ):
        if name.lower() in PROXY_VARS or name.upper() in CA_VARS:
            monkeypatch.delenv(name, raising=False)
    # The README's exports: both proxy variables, nothing in NO_PROXY.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, fs.proxy_url)
    yield fs
    fs.control("DELETE", "/v1/chaos")
    fs.stop()


def test_the_ollama_client_reaches_its_reverse_route_with_http_proxy_set(routed, origins):
    client = ollama.Client(host=f"{routed.proxy_url}/ollama")
    r = client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
    assert r.message.content == ANSWER
    assert [x.path for x in origins.ollama.requests] == ["/api/chat"], "the prefix is removed"
    # The route's LLM faults reach the client in Ollama's own form.
    status, body = routed.control("PUT", "/v1/chaos", {"llm_faults": [{"mode": "server_error"}]})
    assert status == 200, body
    with pytest.raises(ollama.ResponseError) as e:
        client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
    assert e.value.status_code == 500, e.value
    assert len(origins.ollama.requests) == 1, "the faulted call never reached the origin"
