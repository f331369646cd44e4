"""A research agent built the way smolagents users build one, behind a small HTTP API.

    python smolagents_agent.py PORT

* `POST /invoke {"input": "..."}` -> `{"result": "<the agent's final answer>"}`
* `GET /health` -> 200

`ToolCallingAgent(tools=[web_search], model=OpenAIServerModel(...))`, the model at
`OPENAI_BASE_URL` with `OPENAI_API_KEY` (the openai SDK underneath, its default retries).
`retry=False` on the model (docs/frameworks.md, "smolagents"): smolagents' own retry on a
rate limit waits 60 s, then 120 s, ignoring `retry-after`, on top of the openai SDK's
attempts (`SMOL_RETRY=1` keeps it, as the library's default does). The tool calls the
search API at `TOOL_URL` with httpx; a tool that raises is reported to the model as an
error observation (smolagents' own handling). Nothing here sets a proxy or a CA:
flakestorm's `agent.command` does.
"""

import os
import sys

import httpx
from smolagents import OpenAIServerModel, ToolCallingAgent, tool

from _serve import serve

TOOL_URL = os.environ["TOOL_URL"]


@tool
def web_search(query: str) -> str:
    """Search the web and return the top results.

    Args:
        query: what to search for.
    """
    r = httpx.get(TOOL_URL, params={"q": query}, timeout=10)
    r.raise_for_status()
    return "\n".join(r.json()["results"])


model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"],
                          api_key=os.environ["OPENAI_API_KEY"], retry=os.environ.get("SMOL_RETRY") == "1")


def answer(prompt: str) -> str:
    agent = ToolCallingAgent(tools=[web_search], model=model, max_steps=4, verbosity_level=0)
    return str(agent.run(prompt))


if __name__ == "__main__":
    serve(int(sys.argv[1]), answer)
