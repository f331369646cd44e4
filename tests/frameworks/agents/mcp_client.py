"""An MCP client as the official SDK's users write one, reporting what the SDK returned
or raised at each step, as one JSON line on stdout.

    python mcp_client.py URL [--modern]
    python mcp_client.py --stdio COMMAND [ARGS...]

With `--stdio` the server is a command the SDK's `stdio_client` starts (its default,
reduced environment: what `StdioServerParameters` gives without `env`), as an MCP client
config names it; `flakestorm wrap` is such a command.

Configured only by the environment (`HTTPS_PROXY`, `SSL_CERT_FILE`), which the SDK's
default HTTP client reads. Runs on mcp 2.x and on mcp 1.x (the older-majors venv), whose
client and error are named `streamablehttp_client` and `McpError` (reported as `MCPError`). Without `--modern`: `streamable_http_client` and
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

try:  # mcp 2.x
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    MAJOR = 2
except ImportError:  # mcp 1.x: the same client and error, named so
    from mcp.client.streamable_http import streamablehttp_client as streamable_http_client
    from mcp.shared.exceptions import McpError as MCPError
    MAJOR = 1

STDIO = sys.argv[1] == "--stdio"
URL = sys.argv[1]
# Per request; a `timeout` fault holds longer (mcp 1.x takes a timedelta).
READ_TIMEOUT_S = 2 if MAJOR == 2 else __import__("datetime").timedelta(seconds=2)
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
        except Exception as e:  # noqa: BLE001 - what the SDK raised is the finding (a
            # cancellation is the transport dying: it ends the steps, reported below)
            code = getattr(getattr(e, "error", None), "code", getattr(e, "code", None))
            name = "MCPError" if isinstance(e, MCPError) else type(e).__name__
            return {"raised": name, "code": code, "message": str(e)[:300]}
        return r
    return run


def result(r) -> dict:
    text = " ".join(getattr(c, "text", "") for c in r.content)
    is_error = r.is_error if MAJOR == 2 else r.isError
    return {"is_error": bool(is_error), "text": text}


def tools(r) -> dict:
    return {"tools": {t.name: t.description for t in r.tools}}


# What each step returned or raised, kept as it goes: a transport that dies takes the
# session with it, not what was seen before.
STEPS: list = []


async def steps(session) -> None:
    STEPS.append(await outcome(lambda: _list(session))())
    for _ in range(2):
        STEPS.append(await outcome(lambda: _call(session))())
    STEPS.append(await outcome(lambda: _list(session))())


async def _list(session):
    return tools(await session.list_tools())


async def _call(session):
    return result(await session.call_tool("get_weather", {"city": "Oslo"}))


async def main() -> None:
    if STDIO:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT_S,
                                     message_handler=on_message) as session:
                await session.initialize()
                await steps(session)
    elif "--modern" in sys.argv:
        from mcp import Client
        async with Client(URL, cache=None, read_timeout_seconds=READ_TIMEOUT_S, message_handler=on_message) as c:
            await steps(c.session)
    else:
        async with streamable_http_client(URL) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, read_timeout_seconds=READ_TIMEOUT_S,
                                     message_handler=on_message) as session:
                await session.initialize()
                await steps(session)
    print(json.dumps({"steps": STEPS, "notified": NOTIFIED}), flush=True)


try:
    anyio.run(main)
except BaseException as e:  # noqa: BLE001 - the transport itself failed: say how
    def leaves(e):  # an ExceptionGroup's innermost errors say what happened
        subs = getattr(e, "exceptions", None)
        return [x for s in subs for x in leaves(s)] if subs else [e]
    why = "; ".join(f"{type(x).__name__}: {x}" for x in leaves(e))
    failed = STEPS + [{"transport": type(e).__name__, "message": why[:500]}]
    print(json.dumps({"steps": failed, "notified": NOTIFIED}), flush=True)
