"""Test instrumentation, not part of the agent: with FRAMEWORKS_NETAUDIT=<file> in the
environment and this folder on PYTHONPATH, a Python process appends one JSON line per
outbound connection and name lookup it makes (`sys.addaudithook`: `socket.connect`,
`socket.getaddrinfo`) to <file>. The suite uses it to show that the LangGraph stack calls
nothing beyond loopback (no LangSmith upload, no tokenizer download, no telemetry)."""

import json
import os
import sys

_PATH = os.environ.get("FRAMEWORKS_NETAUDIT")

if _PATH:

    def _hook(event, args):
        if event == "socket.connect":
            addr = args[1]
            rec = {"event": "connect", "addr": list(addr) if isinstance(addr, tuple) else addr}
        elif event == "socket.getaddrinfo":
            host = args[0]
            rec = {"event": "getaddrinfo", "host": host.decode() if isinstance(host, bytes) else host}
        else:
            return
        with open(_PATH, "a") as f:
            f.write(json.dumps(rec) + "\n")

    sys.addaudithook(_hook)
