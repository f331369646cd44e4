#!/usr/bin/env python3
"""What OTLP span export costs the proxy (docs/benchmarks.md): sequential LLM calls (an
OpenAI-shaped JSON answer from a loopback origin, declared under `llm:` so each exchange
gets its GenAI span) through `flakestorm serve`, in three modes interleaved: each round runs
every mode, in turn forwards and backwards (A B C, C B A, …), so a machine whose load drifts
slows all of them alike:

* `none`    — no `telemetry:` (baseline);
* `stopped` — `telemetry.otlp` pointing at a port nothing listens on (every export fails);
* `running` — exporting over gRPC to a real receiver (tests/otel/otlp_receiver.py), spans
  gathered for the default linger (200 ms) before each request;
* `each`    — the same with `OTEL_BSP_SCHEDULE_DELAY=0`: a request per span, as before the
  linger.

Printed: the machine's load average before and after, the median per-call time of each
mode per round, the median over rounds with the spread of the round medians, the ratio
to `none`, and for the exporting modes the spans and export requests the receiver got.

    FLAKESTORM_BIN=target/release/flakestorm .venv-tests/bin/python scripts/bench_otel.py [ROUNDS] [CALLS]
"""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "otel"))
from otlp_receiver import GrpcReceiver  # noqa: E402

BIN = Path(os.environ.get("FLAKESTORM_BIN", REPO / "target" / "release" / "flakestorm"))
ANSWER = json.dumps({"id": "c", "object": "chat.completion", "model": "gpt-bench",
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": "ok"}}],
                     "usage": {"prompt_tokens": 12, "completion_tokens": 40}}).encode()


class Origin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", "0")))
        # One write: a head and a body written apart meet Nagle and delayed ACKs (40 ms).
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(ANSWER)}\r\n\r\n"
        self.wfile.write(head.encode() + ANSWER)


def serve(tmp: Path, origin: int, telemetry: str, extra: dict) -> tuple[subprocess.Popen, str]:
    config = tmp / "flakestorm.yaml"
    config.write_text(
        'proxy: {listen: "127.0.0.1:0"}\ncontrol: {listen: "127.0.0.1:0"}\n'
        f'ca: {{dir: "{tmp / "certs"}"}}\ndata_dir: "{tmp / "data"}"\n'
        f'llm:\n  - {{provider: openai, match_url: ["http://127.0.0.1:{origin}/v1/*"]}}\n' + telemetry)
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")} | extra
    proc = subprocess.Popen([str(BIN), "serve", "-c", str(config)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    for line in proc.stdout:
        if m := re.match(r"^flakestorm: proxy listening on (\S+)$", line.strip()):
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            return proc, f"http://{m.group(1)}"
    raise SystemExit("flakestorm did not start")


def calls(proxy: str, origin: int, n: int) -> list[float]:
    body = {"model": "gpt-bench", "messages": [{"role": "user", "content": "hi"}]}
    times = []
    with httpx.Client(proxy=proxy, trust_env=False) as c:
        c.post(f"http://127.0.0.1:{origin}/v1/chat/completions", json=body)
        for _ in range(n):
            t = time.perf_counter()
            c.post(f"http://127.0.0.1:{origin}/v1/chat/completions", json=body)
            times.append(time.perf_counter() - t)
    return times


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    origin = ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    port = origin.server_address[1]
    receiver = GrpcReceiver()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    running = f'telemetry:\n  otlp: {{endpoint: "{receiver.endpoint}", protocol: grpc}}\n'
    modes = {
        "none": ("", {}),
        "stopped": (f'telemetry:\n  otlp: {{endpoint: "http://127.0.0.1:{closed}", protocol: grpc}}\n', {}),
        "running": (running, {}),
        "each": (running, {"OTEL_BSP_SCHEDULE_DELAY": "0"}),
    }
    medians: dict[str, list[float]] = {m: [] for m in modes}
    received = {m: [0, 0] for m in modes}  # spans, export requests
    print(f"load average before: {os.getloadavg()}, {os.cpu_count()} cores")
    for r in range(rounds):
        order = list(modes.items()) if r % 2 == 0 else list(modes.items())[::-1]
        for mode, (telemetry, extra) in order:
            before = (len(receiver.spans), len(receiver.headers))
            with tempfile.TemporaryDirectory() as tmp:
                proc, proxy = serve(Path(tmp), port, telemetry, extra)
                try:
                    medians[mode].append(statistics.median(calls(proxy, port, n)) * 1000)
                finally:
                    proc.terminate()
                    proc.wait()
            received[mode][0] += len(receiver.spans) - before[0]
            received[mode][1] += len(receiver.headers) - before[1]
        print(f"round {r + 1}: " + ", ".join(f"{m} {v[-1]:.3f} ms" for m, v in medians.items()))
    print(f"load average after: {os.getloadavg()}")
    base = statistics.median(medians["none"])
    for mode, v in medians.items():
        m = statistics.median(v)
        spans, requests = received[mode]
        print(f"{mode:8} median per call {m:.3f} ms (rounds {min(v):.3f}-{max(v):.3f})  "
              f"ratio {m / base:.3f}  added {m - base:+.3f} ms  "
              f"spans {spans} of {rounds * (n + 1)} calls in {requests} requests")
    receiver.close()


if __name__ == "__main__":
    main()
