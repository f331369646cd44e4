"""A research agent built the way LangGraph users build one, behind a small HTTP API.

    python langgraph_agent.py PORT

* `POST /invoke {"input": "..."}` → `{"result": "<the agent's last message>"}`
* `GET /health` → 200

The model is `langchain_openai.ChatOpenAI`, configured only through the environment the
way its users do: `OPENAI_BASE_URL` and `OPENAI_API_KEY` (read by the openai SDK), and the
SDK's default retries (`max_retries` 2, so 3 attempts). The `web_search` tool calls the
search API at `TOOL_URL` with httpx. Nothing here sets a proxy or a CA bundle: whoever
starts the agent does (flakestorm's `agent.command` sets HTTPS_PROXY, SSL_CERT_FILE, …).

`LLM_STREAMING=1` makes the model stream (`ChatOpenAI(streaming=True)`).

Failure handling, as a typical app has it:
* The tool raises `ToolException` on an HTTP failure and has `handle_tool_error = True`,
  so LangChain hands the error text to the model as the tool result (LangGraph's
  ToolNode would otherwise re-raise it: by default it only returns argument errors).
* Anything the graph raises (e.g. `openai.RateLimitError` once the SDK's own retries are
  spent) becomes HTTP 500 with a JSON error body, as a web app without a handler for it
  answers.
"""

import json
import os
import sys
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from langchain_core.tools import ToolException, tool
from langchain_openai import ChatOpenAI

with warnings.catch_warnings():
    # langgraph 1.x: create_react_agent is deprecated in favour of langchain's
    # `create_agent` (the `langchain` package); it is still langgraph's own prebuilt agent.
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

TOOL_URL = os.environ["TOOL_URL"]


@tool
def web_search(query: str) -> str:
    """Search the web and return the top results."""
    try:
        r = httpx.get(TOOL_URL, params={"q": query}, timeout=10)
        r.raise_for_status()
        return "\n".join(r.json()["results"])
    except (httpx.HTTPError, ValueError, KeyError) as e:
        raise ToolException(f"web_search failed: {e}") from e


web_search.handle_tool_error = True

model = ChatOpenAI(model="gpt-4o-mini", temperature=0, streaming=os.environ.get("LLM_STREAMING") == "1")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    graph = create_react_agent(model, [web_search], prompt="Answer with web_search and cite it.")


def answer(question: str) -> str:
    state = graph.invoke({"messages": [{"role": "user", "content": question}]})
    return state["messages"][-1].content


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/health":
            return self._json(200, {"status": "ok"})
        self._json(404, {"detail": "Not Found"})

    def do_POST(self):
        if self.path != "/invoke":
            return self._json(404, {"detail": "Not Found"})
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        try:
            result = answer(body["input"])
        except Exception as e:  # what an app without an error handler answers
            print(f"langgraph_agent: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            return self._json(500, {"detail": "Internal Server Error", "error": f"{type(e).__name__}: {e}"})
        self._json(200, {"result": result})

    def _json(self, status: int, obj: dict):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
