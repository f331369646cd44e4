"""The example agent's search tool (deploy/compose): GET /search?q=... -> {"answer": ...}.
A stand-in for any HTTP API an agent calls. Standard library only. Usage: tool.py [PORT]."""

import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/search"):
            body, status = {"answer": "ACME's Q3 revenue was $12M."}, 200
        elif self.path == "/health":
            body, status = {"status": "ok"}, 200
        else:
            body, status = {"error": "not found"}, 404
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        sys.stderr.write("tool: " + fmt % args + "\n")


if __name__ == "__main__":
    # PID 1 in a container: stop at once on SIGTERM (docker stop, compose down).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    ThreadingHTTPServer(("0.0.0.0", port), Handler).serve_forever()
