"""Real clients, configured only through environment variables, reach local origins
through flakestorm. Every client runs in a subprocess with an explicit environment
(see conftest.client_env): HTTP(S)_PROXY -> flakestorm, and SSL_CERT_FILE /
REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE -> the proxy's CA *only*. The HTTPS origins use a
certificate from a different CA (tests/fixtures/test-ca.pem), so an HTTPS success
proves flakestorm intercepted the TLS and re-signed with its own CA.
"""

import json
import re
import select
import subprocess
import sys
import threading

import pytest

from pathlib import Path

from _clients import CHAT_CONTENT, CHAT_ID, SSE_GATE_TIMEOUT_S, STREAM_PIECES, USAGE, clean_env

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# --------------------------------------------------------------------------- control


def test_control_endpoints(flakestorm, http_origin, client_env, run_curl):
    assert flakestorm.control_get("/healthz")[0] == 200
    status, pem = flakestorm.control_get("/v1/ca.pem")
    assert status == 200
    assert pem == flakestorm.ca_file.read_bytes()
    assert b"-----BEGIN CERTIFICATE-----" in pem
    # Counter samples appear once there was traffic: send one request through the proxy.
    # The proxy counts it when the exchange completes, so poll rather than read once.
    assert run_curl(client_env, http_origin.url() + "/control-traffic").returncode == 0
    flakestorm.assert_counted(0)
    status, metrics = flakestorm.control_get("/metrics")
    assert status == 200 and b"flakestorm_requests_total" in metrics, metrics


def test_proxy_ca_alone_does_not_trust_origin(flakestorm, https_origin, run_python):
    """Negative control: with the same CA variables but NO proxy, the origin's real
    certificate is rejected. So the HTTPS successes below can only come from
    flakestorm's interception, not from the client trusting the origin."""
    env = clean_env() | {"REQUESTS_CA_BUNDLE": str(flakestorm.ca_file), "SSL_CERT_FILE": str(flakestorm.ca_file)}
    out = run_python(
        "import json, sys, requests\n"
        "try:\n"
        "    requests.get(sys.argv[1], timeout=10); print(json.dumps({'error': None}))\n"
        "except requests.exceptions.SSLError as e:\n"
        "    print(json.dumps({'error': 'SSLError', 'msg': str(e)}))\n",
        env, https_origin.url() + "/direct",
    )
    assert out["error"] == "SSLError", out
    assert "CERTIFICATE_VERIFY_FAILED" in out["msg"]
    assert https_origin.requests == []


# ------------------------------------------------------------------------------ curl


def test_curl_http(flakestorm, http_origin, client_env, run_curl):
    before = flakestorm.requests_total()
    p = run_curl(client_env, "-H", "X-Test: curl-http", http_origin.url() + "/curl/plain?q=1")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"origin": "http", "method": "GET", "path": "/curl/plain?q=1", "body": ""}
    # curl connected to the proxy's port, not the origin's, and sent an absolute-form target.
    assert re.search(rf"Connected to \S+ \(\S+\) port {flakestorm.proxy_port}\b", p.stderr), p.stderr
    assert f"> GET {http_origin.url()}/curl/plain?q=1 HTTP/1.1" in p.stderr, p.stderr
    # ...which flakestorm turned back into origin-form for the origin.
    seen = http_origin.only_request()
    assert (seen.method, seen.path) == ("GET", "/curl/plain?q=1")
    assert seen.headers["x-test"] == "curl-http"
    assert seen.headers["host"] == f"localhost:{http_origin.port}"
    flakestorm.assert_counted(before)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])  # DNS-name and IP SANs
def test_curl_https(flakestorm, https_origin, client_env, run_curl, host):
    url = https_origin.url(host) + "/curl/tls"
    p = run_curl(client_env, "--data-binary", "curl-body", url)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"origin": "https", "method": "POST", "path": "/curl/tls", "body": "curl-body"}
    assert f"> CONNECT {host}:{https_origin.port} HTTP/1.1" in p.stderr, p.stderr
    # The certificate curl verified was not the origin's (whose issuer is the test CA).
    issuer = [l for l in p.stderr.splitlines() if "issuer:" in l]
    assert issuer and "flakestorm test origin CA" not in issuer[0], p.stderr
    seen = https_origin.only_request()
    assert (seen.method, seen.path, seen.body) == ("POST", "/curl/tls", b"curl-body")


@pytest.mark.parametrize("version", ["--http1.1", "--http2"])
def test_curl_reads_a_body_closed_without_close_notify_to_its_end(flakestorm, https_origin, client_env, run_curl, version):
    """The origin ends a close-delimited body by closing TLS without close_notify, as
    Python's http.server behind ssl does: curl reads it whole directly, and through the
    proxy too (it used to fail with rc 18 over HTTP/1.1, 92 over HTTP/2)."""
    url = https_origin.url() + "/close-delimited"
    direct = run_curl(clean_env() | {"CURL_CA_BUNDLE": str(FIXTURES / "test-ca.pem")}, version, url)
    assert direct.returncode == 0, direct.stderr
    p = run_curl(client_env, version, url)
    assert p.returncode == 0, p.stderr
    assert p.stdout == direct.stdout and p.stdout.endswith("data: [DONE]\n\n"), p.stdout
    want = "HTTP/2 200" if version == "--http2" else "HTTP/1.1 200"
    assert f"< {want}" in p.stderr, p.stderr


# -------------------------------------------------------------------------- requests

REQUESTS_SCRIPT = """
import json, sys, requests
base = sys.argv[1]
with requests.Session() as s:  # two requests: the second may reuse the proxied connection
    r1 = s.get(base + "/requests/one", headers={"X-Test": "requests"}, timeout=30)
    r2 = s.post(base + "/requests/two", data="requests-body".encode(), headers={"Content-Type": "text/plain"}, timeout=30)
print(json.dumps({"r1": [r1.status_code, r1.json(), r1.headers.get("x-origin")],
                  "r2": [r2.status_code, r2.json(), r2.headers.get("x-origin")]}))
"""


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_requests(flakestorm, request, scheme, client_env, run_python):
    origin = request.getfixturevalue(f"{scheme}_origin")
    before = flakestorm.requests_total()
    out = run_python(REQUESTS_SCRIPT, client_env, origin.url())
    assert out["r1"] == [200, {"origin": scheme, "method": "GET", "path": "/requests/one", "body": ""}, scheme]
    assert out["r2"] == [200, {"origin": scheme, "method": "POST", "path": "/requests/two", "body": "requests-body"}, scheme]
    seen = origin.requests
    assert [(r.method, r.path) for r in seen] == [("GET", "/requests/one"), ("POST", "/requests/two")]
    assert seen[0].headers["x-test"] == "requests"
    assert seen[0].headers["user-agent"].startswith("python-requests/")
    assert seen[1].headers["content-type"] == "text/plain" and seen[1].body == b"requests-body"
    flakestorm.assert_counted(before, at_least=2)


def test_refused_upstream_is_502(flakestorm, closed_port, client_env, run_python):
    out = run_python(
        "import json, sys, requests\n"
        "r = requests.get(sys.argv[1], timeout=30)\n"
        "print(json.dumps({'status': r.status_code, 'error': r.headers.get('x-flakestorm-error')}))\n",
        client_env, f"http://127.0.0.1:{closed_port}/",
    )
    assert out["status"] == 502, out
    assert out["error"], f"no x-flakestorm-error header: {out}"


# ----------------------------------------------------------------------------- httpx

HTTPX_SCRIPT = """
import json, sys, httpx
base, http2 = sys.argv[1], sys.argv[2] == "h2"
with httpx.Client(http2=http2, timeout=30) as c:  # trust_env (default) reads proxy + SSL_CERT_FILE
    r1 = c.get(base + "/httpx/one", headers={"X-Test": "httpx"})
    r2 = c.put(base + "/httpx/two", content=b"httpx-body")
print(json.dumps({"r1": [r1.status_code, r1.json()], "r2": [r2.status_code, r2.json()],
                  "versions": [r1.http_version, r2.http_version]}))
"""


def _check_httpx(origin, scheme, out):
    assert out["r1"] == [200, {"origin": scheme, "method": "GET", "path": "/httpx/one", "body": ""}]
    assert out["r2"] == [200, {"origin": scheme, "method": "PUT", "path": "/httpx/two", "body": "httpx-body"}]
    seen = origin.requests
    assert [(r.method, r.path, r.body) for r in seen] == [("GET", "/httpx/one", b""), ("PUT", "/httpx/two", b"httpx-body")]
    assert seen[0].headers["x-test"] == "httpx"
    assert seen[0].headers["user-agent"].startswith("python-httpx/")


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_httpx(flakestorm, request, scheme, client_env, run_python):
    origin = request.getfixturevalue(f"{scheme}_origin")
    before = flakestorm.requests_total()
    out = run_python(HTTPX_SCRIPT, client_env, origin.url(), "h1")
    _check_httpx(origin, scheme, out)
    assert out["versions"] == ["HTTP/1.1", "HTTP/1.1"]
    flakestorm.assert_counted(before, at_least=2)


def test_httpx_http2(https_origin, client_env, run_python):
    """An HTTP/2-capable client through the MITM tunnel (the origin itself is HTTP/1.1)."""
    pytest.importorskip("h2")
    out = run_python(HTTPX_SCRIPT, client_env, https_origin.url(), "h2")
    _check_httpx(https_origin, "https", out)
    # flakestorm offers h2 over ALPN on intercepted connections, so an h2-capable client
    # speaks HTTP/2 to the proxy, which translates to the HTTP/1.1 origin.
    assert out["versions"] == ["HTTP/2", "HTTP/2"], out


# ---------------------------------------------------------------------------- openai

# The SDK is told only the origin's URL and a key; proxy and trust come from the env.
OPENAI_SCRIPT = """
import json, sys
from openai import OpenAI
base, mode = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base, api_key="sk-test", max_retries=0)
msgs = [{"role": "user", "content": "ping"}]
if mode == "plain":
    r = client.chat.completions.create(model="gpt-test", messages=msgs)
    c = r.choices[0]
    print(json.dumps({"type": type(r).__name__, "id": r.id, "role": c.message.role,
                      "content": c.message.content, "finish_reason": c.finish_reason,
                      "usage_type": type(r.usage).__name__,
                      "usage": [r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens]}))
else:
    deltas, finish, types = [], None, set()
    for chunk in client.chat.completions.create(model="gpt-test", messages=msgs, stream=True):
        types.add(type(chunk).__name__)
        for ch in chunk.choices:
            deltas.append(ch.delta.content or "")
            finish = ch.finish_reason or finish
            if ch.delta.content and not any(deltas[:-1]):
                print("first-delta:", ch.delta.content, flush=True)  # test_..._not_buffered waits for this
    print(json.dumps({"types": sorted(types), "deltas": deltas, "finish_reason": finish}))
"""


def _check_openai_request(origin, stream: bool):
    seen = origin.only_request()
    assert (seen.method, seen.path) == ("POST", "/v1/chat/completions")
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.headers["content-type"] == "application/json"
    body = json.loads(seen.body)
    assert body["model"] == "gpt-test"
    assert body["messages"] == [{"role": "user", "content": "ping"}]
    assert bool(body.get("stream")) is stream


def test_openai_chat_completion(https_origin, client_env, run_python):
    out = run_python(OPENAI_SCRIPT, client_env, https_origin.url() + "/v1", "plain")
    assert out == {
        "type": "ChatCompletion", "id": CHAT_ID, "role": "assistant", "content": CHAT_CONTENT,
        "finish_reason": "stop", "usage_type": "CompletionUsage",
        "usage": [USAGE["prompt_tokens"], USAGE["completion_tokens"], USAGE["total_tokens"]],
    }
    _check_openai_request(https_origin, stream=False)


def test_openai_chat_completion_stream(https_origin, client_env, run_python):
    out = run_python(OPENAI_SCRIPT, client_env, https_origin.url() + "/v1", "stream")
    assert out["types"] == ["ChatCompletionChunk"]
    assert "".join(out["deltas"]) == "".join(STREAM_PIECES)
    assert [d for d in out["deltas"] if d] == STREAM_PIECES  # one chunk per SSE event, in order
    assert out["finish_reason"] == "stop"
    _check_openai_request(https_origin, stream=True)


def test_openai_stream_is_not_buffered(https_origin, client_env):
    """The first delta reaches the SDK while the origin still holds the rest of the
    stream: flakestorm relays SSE incrementally instead of buffering the response."""
    https_origin.sse_gate = threading.Event()
    p = subprocess.Popen(
        [sys.executable, "-c", OPENAI_SCRIPT, https_origin.url() + "/v1", "stream"],
        env=client_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        ready, _, _ = select.select([p.stdout], [], [], SSE_GATE_TIMEOUT_S * 2)
        first = p.stdout.readline() if ready else ""
        https_origin.sse_gate.set()
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert first.strip() == f"first-delta: {STREAM_PIECES[0]}", (first, err)
    assert https_origin.sse_gate_opened is True, "origin's stream stayed paused: the proxy buffered the SSE response"
    assert "".join(json.loads(out.strip().splitlines()[-1])["deltas"]) == "".join(STREAM_PIECES)
