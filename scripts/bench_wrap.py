#!/usr/bin/env python3
"""Per-call latency that `flakestorm wrap` adds to a stdio MCP server (docs/benchmarks.md).

One `mcp` SDK stdio session per mode, `CALLS` `tools/call`s of a trivial tool in a row,
timed around each call; modes alternate within each round, so a machine that slows down
slows all of them alike:

* `direct`  — the client starts the server itself;
* `relay`   — `flakestorm wrap` outside a run: relayed untouched (line in, line out);
* `proxied` — `flakestorm wrap` next to `flakestorm serve`: each message POSTed through the
              proxy to the wrap's bridge and back, as in a run.

Printed: the median per-call time of each mode per round, the median over rounds, and the
ratio to `direct`.

    .venv-tests/bin/python scripts/bench_wrap.py [ROUNDS] [CALLS]
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("FLAKESTORM_BIN", REPO / "target" / "release" / "flakestorm"))
SERVER = [sys.executable, str(REPO / "tests" / "frameworks" / "agents" / "mcp_server.py"), "--stdio"]


async def session(command: list[str], calls: int, env: dict[str, str]) -> list[float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    times = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await s.call_tool("get_weather", {"city": "warm-up"})
            for i in range(calls):
                t = time.perf_counter()
                await s.call_tool("get_weather", {"city": f"c{i}"})
                times.append(time.perf_counter() - t)
    return times


def serve(tmp: Path) -> tuple[subprocess.Popen, dict[str, str]]:
    config = tmp / "flakestorm.yaml"
    config.write_text(
        'proxy: {listen: "127.0.0.1:0"}\ncontrol: {listen: "127.0.0.1:0"}\n'
        f'ca: {{dir: "{tmp / "certs"}"}}\ndata_dir: "{tmp / "data"}"\n'
        "tools:\n  - {name: crm, protocol: mcp, transport: stdio}\n")
    proc = subprocess.Popen([str(BIN), "serve", "-c", str(config)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        if m := re.search(r"(FLAKESTORM_WRAP_PROXY)=(\S+) (FLAKESTORM_WRAP_DIR)=(\S+)", line):
            return proc, {m.group(1): m.group(2), m.group(3): m.group(4)}
    raise SystemExit("flakestorm serve printed no wrap variables")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    wrap = [str(BIN), "wrap", "--tool", "crm", "--"]
    with tempfile.TemporaryDirectory() as tmp:
        proc, wrap_env = serve(Path(tmp))
        modes = {
            "direct": (SERVER, base),
            "relay": ([*wrap, *SERVER], base),
            "proxied": ([*wrap, *SERVER], {**base, **wrap_env}),
        }
        medians: dict[str, list[float]] = {m: [] for m in modes}
        try:
            for r in range(rounds):
                for name, (command, env) in modes.items():
                    t = asyncio.run(session(command, calls, env))
                    medians[name].append(statistics.median(t))
                print(f"round {r + 1}: " + ", ".join(f"{m} {v[-1] * 1e3:.2f} ms" for m, v in medians.items()))
        finally:
            proc.terminate()
            proc.wait()
    direct = statistics.median(medians["direct"])
    print(f"\n{rounds} rounds x {calls} calls, median per call (ratio to direct):")
    for name, v in medians.items():
        m = statistics.median(v)
        print(f"  {name:8} {m * 1e3:7.2f} ms  x{m / direct:.2f}  (+{(m - direct) * 1e3:.2f} ms)")


if __name__ == "__main__":
    main()
