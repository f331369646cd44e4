"""A stdio server that misbehaves, to show what `flakestorm wrap` keeps as it was.

    python stdio_oddities.py EXIT_CODE

It writes a line to stderr, then a line to stdout that is not JSON-RPC, then answers the
first request it reads (the JSON-RPC result `{"echo": <its method>}`), then writes
another stderr line and exits with EXIT_CODE without answering the second request: a
server that dies mid-call.
"""

import json
import sys

print("oddities: starting", file=sys.stderr, flush=True)
print("this is not json-rpc", flush=True)
answered = 0
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if answered == 1:
        print("oddities: dying mid-call", file=sys.stderr, flush=True)
        sys.exit(int(sys.argv[1]))
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"echo": msg["method"]}}), flush=True)
    answered += 1
