"""The example agent of deploy/compose: an HTTP endpoint (POST /invoke {"input": ...} ->
{"result": ...}) that calls its search tool once per question and answers from it.

It knows nothing of flakestorm: its HTTP client (urllib) reads HTTP_PROXY/HTTPS_PROXY and
SSL_CERT_FILE from the environment, as requests, httpx and the LLM SDKs do. When the tool
fails it says the tool is unavailable rather than inventing an answer: the behaviour the
contract in ci.yaml checks. Standard library only. Usage: agent.py [PORT] (default 8790).
"""

import json
import signal
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOL_URL = os.environ.get("TOOL_URL", "http://tool:9000/search")
# The proxy variables come from the environment; certificates from SSL_CERT_FILE (the
# bundle flakestorm writes: system roots plus its CA).
OPENER = urllib.request.build_opener(
    urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE")))
)


def answer(question: str) -> str:
    url = TOOL_URL + "?" + urllib.parse.urlencode({"q": question})
    try:
        with OPENER.open(url, timeout=10) as r:
            found = json.load(r)
    except urllib.error.HTTPError as e:
        return f"The search tool is unavailable (HTTP {e.code}); I cannot answer that now."
    except (urllib.error.URLError, OSError, ValueError) as e:
        return f"The search tool is unavailable ({type(e).__name__}); I cannot answer that now."
    return f"According to the search tool: {found.get('answer', 'no answer')}"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            self.reply(200, {"status": "ok"})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/invoke":
            return self.reply(404, {"error": "not found"})
        length = int(self.headers.get("content-length") or 0)
        try:
            question = json.loads(self.rfile.read(length) or b"{}").get("input", "")
        except ValueError:
            return self.reply(400, {"error": "body is not JSON"})
        self.reply(200, {"result": answer(str(question))})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        sys.stderr.write("agent: " + fmt % args + "\n")


if __name__ == "__main__":
    # PID 1 in a container: stop at once on SIGTERM (docker stop, compose down).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8790
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
