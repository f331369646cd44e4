"""The host ports a newcomer's machine often has taken, held by another process for the
whole container suite: 8080 and 8081 (`flakestorm serve` on its README defaults) and 8790
(the example agent's port), listening on loopback as that daemon would. The deploy files
publish these numbers inside their containers; a test that published them on the host too
(podman 4.3's `kube play` does for every containerPort) fails while they are held, so the
suite shows that none does. A port some other process already holds is left to it: the
condition holds all the same."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

PORTS = (8080, 8081, 8790)

# Runs in its own process: binds and listens where it can, says which, and keeps them
# until its stdin closes (the suite's end, or the suite's process dying).
HOLDER = """
import json, socket, sys
held = []
for port in map(int, sys.argv[1:]):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a TIME_WAIT is not a holder
    try:
        s.bind(("127.0.0.1", port))
        s.listen(16)
        held.append((port, s))
    except OSError:
        s.close()
print(json.dumps([p for p, _ in held]), flush=True)
sys.stdin.read()
"""


class Holder:
    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, *map(str, PORTS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        self.ours = json.loads(self.proc.stdout.readline())

    def taken(self) -> list[int]:
        """The ports another process (ours or someone else's) listens on now."""
        out = []
        for port in PORTS:
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    out.append(port)
        return out

    def stop(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
