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

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from google import genai
from google.genai import types

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


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status: int, obj: dict):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            return self._send(200, {"ok": True})
        self._send(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/invoke":
            return self._send(404, {"error": "not found"})
        n = int(self.headers.get("Content-Length") or 0)
        prompt = json.loads(self.rfile.read(n) or b"{}").get("input", "")
        try:
            self._send(200, {"result": answer(prompt)})
        except Exception as e:  # noqa: BLE001 - a web app without a handler for it
            self._send(500, {"error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
