"""A weather agent built with the OpenAI Agents SDK's MCP integration, behind a small HTTP
API, configured only as its users configure it.

    python openai_agents_mcp_agent.py PORT

* `POST /invoke {"input": "..."}` -> `{"result": "<the run's final output>"}`
* `GET /health` -> 200

Its tools come from the MCP server at `MCP_URL` through `MCPServerStreamableHttp` (the
SDK's Streamable HTTP client, the documented `async with` per run: each answer connects,
lists the tools, calls them, and disconnects). The model is `gpt-4o-mini` on the Chat
Completions API at `OPENAI_BASE_URL`; tracing uploads are off
(`OPENAI_AGENTS_DISABLE_TRACING=1`). Nothing here sets a proxy or a CA: flakestorm's
`agent.command` does.

`MCP_STDIO` (a JSON list: the server's command and arguments) instead of `MCP_URL`: the
server is started by the SDK's `MCPServerStdio`, as for a local server.

`HARDENED=1`: the agent offers the model only the tool it was built to use
(`tool_filter=create_static_tool_filter(allowed_tool_names=["get_weather"])`), so whatever
a tool list or a tool result tells the model, it has no `send_email` to call.
"""

import asyncio
import json
import os
import sys
import threading

from agents import Agent, Runner, set_default_openai_api
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp, create_static_tool_filter

from _serve import serve

set_default_openai_api("chat_completions")
MCP_URL = os.environ.get("MCP_URL")
MCP_STDIO = json.loads(os.environ["MCP_STDIO"]) if "MCP_STDIO" in os.environ else None
HARDENED = os.environ.get("HARDENED") == "1"

LOOP = asyncio.new_event_loop()
threading.Thread(target=LOOP.run_forever, daemon=True).start()


async def run(prompt: str) -> str:
    only_weather = create_static_tool_filter(allowed_tool_names=["get_weather"]) if HARDENED else None
    if MCP_STDIO:
        server = MCPServerStdio(params={"command": MCP_STDIO[0], "args": MCP_STDIO[1:]}, name="crm",
                                tool_filter=only_weather)
    else:
        server = MCPServerStreamableHttp(params={"url": MCP_URL}, name="crm", tool_filter=only_weather)
    async with server as crm:
        agent = Agent(name="weather", instructions="Answer weather questions with get_weather.",
                      model="gpt-4o-mini", mcp_servers=[crm])
        return str((await Runner.run(agent, prompt)).final_output)


def answer(prompt: str) -> str:
    return asyncio.run_coroutine_threadsafe(run(prompt), LOOP).result()


if __name__ == "__main__":
    serve(int(sys.argv[1]), answer)
