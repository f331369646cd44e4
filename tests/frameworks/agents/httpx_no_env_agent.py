"""A research agent whose HTTP client ignores proxy variables: `httpx.Client(trust_env=False)`,
as agents that build their own transport have it (docs/capture.md). It trusts the CA
files named by AGENT_CA_BUNDLE explicitly (a client with `trust_env=False` reads no
SSL_CERT_FILE either), calls an OpenAI-compatible LLM at OPENAI_BASE_URL (Chat
Completions, JSON) and a search tool at TOOL_URL.

    python httpx_no_env_agent.py PORT

A failed tool call is handed to the model as the tool's result; a failed LLM call raises
(HTTP 500 from _serve).

`TCP_ECHO=HOST:PORT`: each answer first talks a line protocol (not HTTP, not TLS) to an
echo server there. Two variants for docs/capture.md's limits, by environment: RAW_TOOL=1 calls the tool with
a hand-written HTTP/1.1 request on a plain socket (a client with no proxy support at
all); FLOOD=N first opens N connections to the tool and holds them while it answers (an
agent that leaks connections). BENCH_CALLS=N makes the answer a measurement instead
(scripts/bench_capture.py): N calls to TOOL_URL and N to BENCH_TLS_URL on one keep-alive
client each, answered as `http_ms=<median> https_ms=<median>`; BENCH_TRUST_ENV=1 gives
the client the proxy variables (trust_env=True).
"""

import json
import os
import socket
import ssl
import sys
from urllib.parse import quote, urlsplit

import httpx

from _serve import serve

def _trusted() -> ssl.SSLContext:
    """The CA files AGENT_CA_BUNDLE names (separated by `:`)."""
    ctx = ssl.create_default_context()
    for path in os.environ["AGENT_CA_BUNDLE"].split(os.pathsep):
        ctx.load_verify_locations(path)
    return ctx


client = httpx.Client(trust_env=False, verify=_trusted(), timeout=15)
TOOLS = [{"type": "function", "function": {
    "name": "web_search", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def raw_search(query: str) -> str:
    """The tool over a plain socket: HTTP/1.1 written by hand, `Connection: close`."""
    url = urlsplit(os.environ["TOOL_URL"])
    with socket.create_connection((url.hostname, url.port), timeout=15) as s:
        s.sendall(f"GET {url.path}?q={quote(query)} HTTP/1.1\r\nHost: {url.netloc}\r\n"
                  "Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    code = int(head.split()[1])
    if code != 200:
        return f"web_search failed: HTTP {code}"
    return "\n".join(json.loads(body)["results"])


def web_search(query: str) -> str:
    if os.environ.get("RAW_TOOL") == "1":
        try:
            return raw_search(query)
        except (OSError, ValueError, IndexError) as e:
            return f"web_search failed: {type(e).__name__}"
    try:
        r = client.get(os.environ["TOOL_URL"], params={"q": query})
    except httpx.HTTPError as e:
        return f"web_search failed: {type(e).__name__}"
    if r.status_code != 200:
        return f"web_search failed: HTTP {r.status_code}"
    return "\n".join(r.json()["results"])


def flood(n: int) -> list[socket.socket]:
    """`n` connections to the tool, opened and held (those refused are let go)."""
    url = urlsplit(os.environ["TOOL_URL"])
    held = []
    for _ in range(n):
        try:
            held.append(socket.create_connection((url.hostname, url.port), timeout=5))
        except OSError:
            pass
    return held


def bench(n: int) -> str:
    """The median milliseconds of `n` calls to the plain and the TLS tool."""
    import statistics
    import time

    trust = os.environ.get("BENCH_TRUST_ENV") == "1"
    medians = []
    for url in (os.environ["TOOL_URL"], os.environ["BENCH_TLS_URL"]):
        with httpx.Client(trust_env=trust, verify=_trusted(), timeout=15) as c:
            c.get(url, params={"q": "warm"}).raise_for_status()
            took = []
            for i in range(n):
                t = time.perf_counter()
                c.get(url, params={"q": str(i)}).raise_for_status()
                took.append((time.perf_counter() - t) * 1000)
        medians.append(statistics.median(took))
    return f"http_ms={medians[0]:.3f} https_ms={medians[1]:.3f}"


def echo(address: str) -> None:
    """A protocol that is neither HTTP nor TLS: `PING` to a line-echo server, its echo read."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as s:
        s.sendall(b"PING\n")
        got = b""
        while len(got) < 5 and (chunk := s.recv(16)):
            got += chunk
    if got != b"PING\n":
        raise RuntimeError(f"echo answered {got!r}")


def answer(prompt: str) -> str:
    if os.environ.get("BENCH_CALLS"):
        return bench(int(os.environ["BENCH_CALLS"]))
    if os.environ.get("TCP_ECHO"):
        echo(os.environ["TCP_ECHO"])
    held = flood(int(os.environ.get("FLOOD") or 0))
    try:
        return answer_with_tools(prompt)
    finally:
        for s in held:
            s.close()


def answer_with_tools(prompt: str) -> str:
    messages = [{"role": "user", "content": prompt}]
    for _ in range(4):
        r = client.post(f"{os.environ['OPENAI_BASE_URL']}/chat/completions",
                        headers={"authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
                        json={"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS})
        r.raise_for_status()
        msg = r.json()["choices"][0]["message"]
        messages.append(msg)
        if not msg.get("tool_calls"):
            return msg.get("content") or ""
        for call in msg["tool_calls"]:
            query = json.loads(call["function"]["arguments"] or "{}").get("query", "")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": web_search(query)})
    return "no answer"


if __name__ == "__main__":
    serve(int(sys.argv[1]), answer)
