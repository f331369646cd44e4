"""Per-call latency an agent's calls pay under `agent.capture: netns` against `proxy` mode
and against no proxy at all (docs/benchmarks.md, "agent.capture: netns").

    .venv-tests/bin/python scripts/bench_capture.py [--runs 5] [--calls 300]

Each run is one `flakestorm contract run` per mode, in turn, of the same agent
(tests/frameworks/agents/httpx_no_env_agent.py with BENCH_CALLS): it sends `--calls`
sequential GETs on one keep-alive httpx client to a local origin over plain HTTP, then as
many over HTTPS, and answers the median of each. The modes:

* `direct`: `capture: proxy` with a client that ignores the proxy variables: it reaches
  the origins itself (the baseline: what the calls cost with no flakestorm);
* `proxy`: `capture: proxy`, the client following HTTPS_PROXY (absolute-form HTTP,
  CONNECT + TLS interception);
* `netns`: `capture: netns`, the same client ignoring the proxy variables, captured.

It prints, per mode and scheme, the median over the runs of each run's median, and the
added latency against the same run's `direct`. Machine noise hits the modes alike: they
alternate within each run.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests" / "frameworks"), str(REPO / "tests" / "pyharness")]

from _frameworks import Stack, ToolAPI, _SeqOrigin, _ToolHandler  # noqa: E402
from flakestorm_harness import TEST_CA  # noqa: E402

CONTRACT = """\
contract:
  name: capture bench
  invariants:
    - {id: measured, type: contains, value: "http_ms="}
  chaos_matrix:
    - name: no-chaos
"""
AGENT = REPO / "tests" / "frameworks" / "agents" / "httpx_no_env_agent.py"


class _OneWrite(_ToolHandler):
    """The search answer in one write: a head and a body written apart meet Nagle and a
    delayed ACK (40 ms a call on Linux), which would hide everything measured here."""

    def do_GET(self):
        body = json.dumps({"query": "", "results": ["x" * 64]}).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        self.wfile.write(head.encode() + body)


class PlainTool(ToolAPI):
    def __init__(self, tls: bool = False):
        _SeqOrigin.__init__(self, tls, _OneWrite)


class BenchStack(Stack):
    def __init__(self, tmp: Path, capture: str, trust_env: bool, calls: int):
        super().__init__(tmp)
        self.tool.close()
        self.tls_tool, self.tool = PlainTool(tls=True), PlainTool()
        self.capture, self.trust_env, self.calls = capture, trust_env, calls

    def close(self):
        super().close()
        self.tls_tool.close()

    def agent_command(self, prefix: str = "") -> str:
        return f"exec {sys.executable} {AGENT} {self.agent_port}"

    def agent_env(self, **extra: str) -> dict[str, str]:
        env = super().agent_env(**extra)
        env.update({
            "AGENT_CA_BUNDLE": f"{self.tmp / 'certs' / 'ca.pem'}{os.pathsep}{TEST_CA}",
            "BENCH_CALLS": str(self.calls),
            "BENCH_TLS_URL": self.tls_tool.search_url,
            "BENCH_TRUST_ENV": "1" if self.trust_env else "0",
            "PYTHONPATH": "",
        })
        return env

    def config(self, contract: str, prompts: list[str], **kw) -> str:
        text = super().config(contract, prompts, **kw)
        return text.replace("agent:\n", f"agent:\n  capture: {self.capture}\n", 1)


MODES = {"direct": ("proxy", False), "proxy": ("proxy", True), "netns": ("netns", False)}


def measure(mode: str, calls: int) -> tuple[float, float]:
    capture, trust_env = MODES[mode]
    with tempfile.TemporaryDirectory() as tmp:
        stack = BenchStack(Path(tmp), capture, trust_env, calls)
        try:
            run = stack.run_contract(stack.config(CONTRACT, ["measure"]))
        finally:
            stack.close()
        answer = (run.report or {}).get("cases", [{}])[0].get("answer") or ""
        if "http_ms=" not in answer:
            sys.exit(f"{mode}: no measurement\n{run.why()}")
        got = dict(part.split("=") for part in answer.split())
        return float(got["http_ms"]), float(got["https_ms"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    seen = {m: [] for m in MODES}
    for i in range(args.runs):
        for mode in MODES:
            seen[mode].append(measure(mode, args.calls))
        print(f"run {i + 1}: " + json.dumps({m: seen[m][-1] for m in MODES}), file=sys.stderr)
    print(f"{args.runs} runs × {args.calls} calls per scheme, medians of the runs' medians (ms per call)\n")
    print("| mode | HTTP per call | added vs direct | HTTPS per call | added vs direct |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        row = [f"`{mode}`"]
        for k in (0, 1):
            med = statistics.median(r[k] for r in seen[mode])
            added = statistics.median(r[k] - d[k] for r, d in zip(seen[mode], seen["direct"]))
            row += [f"{med:.3f}", "—" if mode == "direct" else f"+{added:.3f}"]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
