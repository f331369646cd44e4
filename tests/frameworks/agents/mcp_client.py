"""An MCP client as the official SDK's users write one, reporting what the SDK returned
or raised at each step, as one JSON line on stdout.

    python mcp_client.py URL [--modern]

Configured only by the environment (`HTTPS_PROXY`, `SSL_CERT_FILE`), which the SDK's
default HTTP client reads. Without `--modern`: `streamable_http_client` and
`ClientSession.initialize()`, the session-based protocol; with it: `mcp.Client`, which
negotiates the sessionless one (2026-07-28), as the OpenAI Agents SDK does. Steps: list
the tools, call `get_weather` twice (the second call shows whether the session survived
the first one's fault), list the tools again. Printed: `{"steps": [...], "notified":
[methods of the server notifications the session's message handler received]}`.
"""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

URL = sys.argv[1]
READ_TIMEOUT_S = 2  # per request; a `timeout` fault holds longer
NOTIFIED: list[str] = []


async def on_message(message) -> None:
    """The session's message handler: note each server notification's method."""
    inner = getattr(message, "root", message)
    method = getattr(inner, "method", None)
    if isinstance(method, str):
        NOTIFIED.append(method)


def outcome(fn):
    async def run():
        try:
            r = await fn()
        except BaseException as e:  # noqa: BLE001 - what the SDK raised is the finding
            code = getattr(getattr(e, "error", None), "code", getattr(e, "code", None))
            return {"raised": type(e).__name__, "code": code, "message": str(e)[:300]}
        return r
    return run


def result(r) -> dict:
    text = " ".join(getattr(c, "text", "") for c in r.content)
    return {"is_error": bool(r.is_error), "text": text}


def tools(r) -> dict:
    return {"tools": {t.name: t.description for t in r.tools}}


async def steps(session) -> list:
    out = [await outcome(lambda: _list(session))()]
    for _ in range(2):
        out.append(await outcome(lambda: _call(session))())
    out.append(await outcome(lambda: _list(session))())
    return out


async def _list(session):
    return tools(await session.list_tools())


async def _call(session):
    return result(await session.call_tool("get_weather", {"city": "Oslo"}))


async def main() -> None:
    if "--modern" in sys.argv:
        from mcp import Client
        async with Client(URL, cache=None, read_timeout_seconds=READ_TIMEOUT_S, message_handler=on_message) as c:
            out = await steps(c.session)
    else:
        async with streamable_http_client(URL) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT_S,
                                     message_handler=on_message) as session:
                await session.initialize()
                out = await steps(session)
    print(json.dumps({"steps": out, "notified": NOTIFIED}), flush=True)


try:
    anyio.run(main)
except BaseException as e:  # noqa: BLE001 - the transport itself failed: say how
    failed = [{"transport": type(e).__name__, "message": str(e)[:300]}]
    print(json.dumps({"steps": failed, "notified": NOTIFIED}), flush=True)
