"""A research agent on google-genai, as its users write one, behind a small HTTP API.

    python genai_agent.py PORT

* `POST /invoke {"input": "..."}` -> `{"result": "<the model's answer>"}`
* `GET /health` -> 200

`client.models.generate_content(model="gemini-2.5-flash", contents=prompt,
config=GenerateContentConfig(tools=[web_search]))`: the SDK's automatic function calling
runs the Python tool and sends its result back. Configured as its users configure it: the
API key from `GEMINI_API_KEY`, the endpoint from `GEMINI_BASE_URL` (`http_options`), the
SDK's defaults otherwise (it does not retry by default). The tool calls the search API at
`TOOL_URL` with httpx; an exception in it is reported to the model by the SDK. Anything
`generate_content` raises becomes HTTP 500.
"""

import os
import sys

import httpx
from google import genai
from google.genai import types

from _serve import serve

TOOL_URL = os.environ["TOOL_URL"]
client = genai.Client(api_key=os.environ["GEMINI_API_KEY"],
                      http_options=types.HttpOptions(base_url=os.environ["GEMINI_BASE_URL"]))


def web_search(query: str) -> str:
    """Search the web and return the top results."""
    r = httpx.get(TOOL_URL, params={"q": query}, timeout=10)
    r.raise_for_status()
    return "\n".join(r.json()["results"])


def answer(prompt: str) -> str:
    r = client.models.generate_content(
        model="gemini-2.5-flash", contents=prompt,
        config=types.GenerateContentConfig(tools=[web_search],
                                           system_instruction="Answer with web_search and cite it."))
    return r.text or ""


if __name__ == "__main__":
    serve(int(sys.argv[1]), answer)
