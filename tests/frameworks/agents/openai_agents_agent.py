"""A research agent built the way OpenAI Agents SDK users build one, behind a small HTTP API.

    python openai_agents_agent.py PORT

* `POST /invoke {"input": "..."}` -> `{"result": "<the run's final output>"}`
* `GET /health` -> 200

`Agent(model="gpt-4o-mini", tools=[web_search])` run with `Runner.run`, configured only
the way its users configure it: `OPENAI_BASE_URL` and `OPENAI_API_KEY` (read by the SDK's
default client, with the openai SDK's default retries), `OPENAI_AGENTS_DISABLE_TRACING=1`
(its traces would otherwise be uploaded to the real API), and the Chat Completions API,
which OpenAI-compatible providers speak (`set_default_openai_api("chat_completions")`).
The tool calls the search API at `TOOL_URL` with httpx. Nothing here sets a proxy or a CA:
flakestorm's `agent.command` does.

Failure handling is the SDK's own: a tool that raises is reported to the model as the
tool's result (`function_tool`'s default failure function); anything `Runner.run` raises
(e.g. `openai.RateLimitError` once the retries are spent) becomes HTTP 500.
"""

import asyncio
import os
import sys
import threading

import httpx
from agents import Agent, Runner, function_tool, set_default_openai_api

from _serve import serve

set_default_openai_api("chat_completions")
TOOL_URL = os.environ["TOOL_URL"]


@function_tool
def web_search(query: str) -> str:
    """Search the web and return the top results."""
    r = httpx.get(TOOL_URL, params={"q": query}, timeout=10)
    r.raise_for_status()
    return "\n".join(r.json()["results"])


agent = Agent(name="research", instructions="Answer with web_search and cite it.",
              model="gpt-4o-mini", tools=[web_search])

# One event loop for the process, as an async web app has: the SDK's client keeps its
# connections on the loop it first ran on (a new `asyncio.run` per request would find it
# closed).
LOOP = asyncio.new_event_loop()
threading.Thread(target=LOOP.run_forever, daemon=True).start()


def answer(prompt: str) -> str:
    return str(asyncio.run_coroutine_threadsafe(Runner.run(agent, prompt), LOOP).result().final_output)


if __name__ == "__main__":
    serve(int(sys.argv[1]), answer)
