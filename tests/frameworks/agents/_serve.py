"""The small HTTP API every test agent here sits behind (not the framework's part):

* `POST /invoke {"input": "..."}` -> `{"result": "<answer(input)>"}`
* `GET /health` -> 200

Anything `answer` raises becomes HTTP 500 with `{"error": "<Type>: <message>"}`, as a web app
without a handler for it answers.
"""

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(port: int, answer: Callable[[str], str]) -> None:
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

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
