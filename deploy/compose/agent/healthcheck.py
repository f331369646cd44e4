"""Health check of the example agent and tool containers: GET http://127.0.0.1:PORT/health
directly (never through the proxy the agent's environment names). Exit 0 when it answers 200."""

import sys
import urllib.request

port = sys.argv[1] if len(sys.argv) > 1 else "8790"
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(f"http://127.0.0.1:{port}/health", timeout=3) as r:
        sys.exit(0 if r.status == 200 else 1)
except OSError as e:
    print(f"health: {e}", file=sys.stderr)
    sys.exit(1)
