"""The MCP server of the MCP tests: the official SDK's `MCPServer` (mcp 2.x; `FastMCP` in
mcp 1.x, which the older-majors venv runs) over Streamable HTTP and TLS
(tests/fixtures/origin.pem, signed by the test CA), with `get_weather` and `send_email`, as
its users write one.

    python mcp_server.py [--json]    # prints "PORT <n>" once listening on 127.0.0.1:<n>
    python mcp_server.py --stdio     # the stdio transport: JSON-RPC lines on stdin/stdout

The socket is bound and listening before the line is printed, so a client that connects
at once waits in the backlog while uvicorn starts: no fixed port, no sleep. `--json`:
answers as `application/json` instead of an SSE stream.
"""

import socket
import sys
from pathlib import Path

import uvicorn

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer
    MAJOR = 2
except ImportError:  # mcp 1.x: the same server, named FastMCP
    from mcp.server.fastmcp import FastMCP as MCPServer
    MAJOR = 1

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
JSON = "--json" in sys.argv
mcp = MCPServer("crm") if MAJOR == 2 else MCPServer("crm", json_response=JSON)


@mcp.tool()
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny, 22C in {city}"


@mcp.tool()
def send_email(to: str, body: str) -> str:
    """Send an email to a recipient."""
    return f"sent to {to} ({len(body)} chars)"


def main() -> None:
    if "--stdio" in sys.argv:
        mcp.run(transport="stdio")
        return
    app = mcp.streamable_http_app(json_response=JSON) if MAJOR == 2 else mcp.streamable_http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", ssl_certfile=str(FIXTURES / "origin.pem"),
                            ssl_keyfile=str(FIXTURES / "origin.key"))
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
