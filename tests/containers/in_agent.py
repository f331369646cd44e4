"""Run inside the example agent's container (`podman exec -i … python3 - < in_agent.py`),
with its environment: the proxy variables and SSL_CERT_FILE of the compose file or pod.
Prints one JSON object of what it saw. argv: the control API token, then the number of
extra agent invocations to make for the memory figure (0 for none)."""

import json
import os
import ssl
import sys
import threading
import urllib.error
import urllib.request

TOKEN, LOAD = sys.argv[1], int(sys.argv[2])
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
RULES = {"tool_faults": [{"tool": "search", "mode": "error", "error_code": 503}]}


def control(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        "http://127.0.0.1:8081" + path, data=data, method=method,
        headers={"authorization": "Bearer " + TOKEN, "content-type": "application/json"},
    )
    try:
        with DIRECT.open(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def invoke():
    req = urllib.request.Request(
        "http://127.0.0.1:8790/invoke", data=b'{"input": "What was ACME\'s Q3 revenue?"}',
        headers={"content-type": "application/json"},
    )
    with DIRECT.open(req, timeout=15) as r:
        return json.load(r)["result"]


seen = {"answer_before": invoke()}
seen["put"] = control("PUT", "/v1/chaos?ttl=10m", RULES)[0]
seen["bad_ttl"] = control("PUT", "/v1/chaos?ttl=2d", RULES)
seen["answer_under_fault"] = invoke()
# HTTPS through the sidecar: flakestorm's leaf certificate verified with the bundle from
# the shared volume (SSL_CERT_FILE), then the injected 503 for a tool URL it declares.
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
proxied = urllib.request.build_opener(urllib.request.HTTPSHandler(context=ctx))
try:
    proxied.open("https://search.example/search?q=x", timeout=10)
    seen["https"] = "no error"
except urllib.error.HTTPError as e:
    seen["https"] = e.code
except Exception as e:  # noqa: BLE001 - a TLS failure is what this reports
    seen["https"] = f"{type(e).__name__}: {e}"
seen["delete"] = control("DELETE", "/v1/chaos")[0]
seen["answer_after"] = invoke()
if LOAD:
    errors = []

    def worker(n):
        for _ in range(n):
            try:
                invoke()
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(LOAD // 8,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seen["load_errors"] = len(errors)
print(json.dumps(seen))
