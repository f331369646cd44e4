"""A research agent on pydantic-ai with Anthropic, as its users write one, behind a small
HTTP API.

    python pydantic_ai_agent.py PORT

* `POST /invoke {"input": "..."}` -> `{"result": "<the run's output>"}`
* `GET /health` -> 200

`Agent("anthropic:claude-sonnet-4-5")` with a plain tool, run with `agent.run` on one event
loop (an async web app has one), configured as its users configure it: `ANTHROPIC_API_KEY`
and `ANTHROPIC_BASE_URL`, read by the anthropic SDK underneath (its default 2 retries,
honouring `retry-after`). The tool calls the search API at `TOOL_URL` with httpx and
returns the failure as its result when the call fails. Anything the run raises becomes
HTTP 500.
"""

import asyncio
import os
import sys
import threading

import httpx
from pydantic_ai import Agent

from _serve import serve

TOOL_URL = os.environ["TOOL_URL"]
agent = Agent("anthropic:claude-sonnet-4-5", instructions="Answer with web_search and cite it.")


@agent.tool_plain
def web_search(query: str) -> str:
    """Search the web and return the top results."""
    try:
        r = httpx.get(TOOL_URL, params={"q": query}, timeout=10)
        r.raise_for_status()
        return "\n".join(r.json()["results"])
    except (httpx.HTTPError, ValueError, KeyError) as e:
        return f"web_search failed: {e}"


LOOP = asyncio.new_event_loop()
threading.Thread(target=LOOP.run_forever, daemon=True).start()


def answer(prompt: str) -> str:
    return str(asyncio.run_coroutine_threadsafe(agent.run(prompt), LOOP).result().output)


if __name__ == "__main__":
    serve(int(sys.argv[1]), answer)
