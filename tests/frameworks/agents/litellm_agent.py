"""A research agent on LiteLLM, as its users write one, behind a small HTTP API.

    python litellm_agent.py PORT

* `POST /invoke {"input": "..."}` -> `{"result": "<the model's answer>"}`
* `GET /health` -> 200

`litellm.completion(model="openai/gpt-4o-mini", api_base=OPENAI_BASE_URL, tools=[…],
num_retries=2)` in a tool loop, configured as LiteLLM users configure it:
`LITELLM_LOCAL_MODEL_COST_MAP=True` (else it fetches its cost map from GitHub at import),
the key from `OPENAI_API_KEY`, 2 retries. The tool calls the search API at `TOOL_URL` with
httpx; a failed call is handed to the model as the tool's result. Anything
`litellm.completion` raises once its retries are spent becomes HTTP 500.
"""

import json
import os
import sys

import httpx
import litellm

from _serve import serve

TOOL_URL = os.environ["TOOL_URL"]
TOOLS = [{
    "type": "function",
    "function": {
        "name": "web_search",
        "description": "Search the web and return the top results.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                       "required": ["query"]},
    },
}]


def web_search(query: str) -> str:
    try:
        r = httpx.get(TOOL_URL, params={"q": query}, timeout=10)
        r.raise_for_status()
        return "\n".join(r.json()["results"])
    except (httpx.HTTPError, ValueError, KeyError) as e:
        return f"web_search failed: {e}"


def answer(prompt: str) -> str:
    messages = [{"role": "system", "content": "Answer with web_search and cite it."},
                {"role": "user", "content": prompt}]
    for _ in range(4):
        r = litellm.completion(model="openai/gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"],
                               messages=messages, tools=TOOLS, num_retries=2)
        msg = r.choices[0].message
        calls = msg.tool_calls or []
        messages.append(msg.model_dump(exclude_none=True))
        if not calls:
            return msg.content or ""
        for call in calls:
            query = json.loads(call.function.arguments or "{}").get("query", "")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": web_search(query)})
    return "I could not finish."


if __name__ == "__main__":
    serve(int(sys.argv[1]), answer)
