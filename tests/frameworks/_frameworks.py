"""Origins, runs and report helpers for the agent-framework suite (tests/frameworks).

* `ScriptedLLM` – an OpenAI-compatible Chat Completions origin over HTTPS (the test CA),
                  deterministic: asked a question with tools declared, it requests
                  `web_search`; given the tool's result, it answers "According to
                  web_search: <result>" (or admits the outage when the result is an error).
                  JSON and SSE (`stream: true`).
* `ToolAPI`     – a search API over HTTPS: `GET /search?q=…` → `{"results": [FACT]}`.
* `Stack`       – both origins plus the agent's port, and `run_contract()`, which writes a
                  flakestorm.yaml, runs `flakestorm contract run` (which starts the agent
                  with `agent.command`) and returns its exit code, output and report.

Both origins record every request and answer with `X-Origin-Seq: <n>` (the 1-based index
of the request in their record). The proxy journal keeps response headers, so each
exchange in the report says which origin request answered it, and an exchange without
the header was answered by flakestorm itself (a fault).

The origin server and `flakestorm serve` start/stop come from
tests/pyharness/flakestorm_harness.py (shared with tests/clients and tests/conformance),
which conftest.py puts on sys.path.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import flakestorm_harness as harness
from flakestorm_harness import TEST_CA, Recorded, binary, clean_env

AGENTS = Path(__file__).resolve().parent / "agents"
NETAUDIT = Path(__file__).resolve().parent / "netaudit"
FACT = "ACME Q3 revenue was $4.1B"
SORRY = "Sorry, web_search is unavailable right now."
RUN_TIMEOUT_S = 120  # a whole `contract run`, agent start-up included

# A small research contract for the recipe tests of other stacks (the LangGraph suite has
# its own, larger one): a tool outage and a provider that answers 429 every time.
SMALL_CONTRACT = """\
contract:
  name: Research agent
  invariants:
    - {id: cites-source, type: regex, pattern: "(?i)according to", severity: critical, when: no_chaos}
    - {id: admits-outage, type: contains_any, values: [unavailable, sorry], severity: high, when: tool_faults_active}
    - {id: searches, type: tool_called, tool: web_search}
    - {id: waits-on-429, type: honors_retry_after, severity: high, when: llm_faults_active}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{tool: web_search, mode: error, error_code: 503}]
    - name: llm-down-429
      llm_faults: [{mode: rate_limit, retry_after_s: 0.3}]
"""
# The same agent with its provider's answer cut after its first event: a streamed answer
# ends early with no finish, a whole answer is a connection dropped mid-body
# (docs/faults.md, `stream_cut`). What each stack does then is its recipe's third part.
CUT_CONTRACT = """\
contract:
  name: Research agent, answer cut
  invariants:
    - {id: answers, type: output_not_empty, severity: high}
    - {id: searches, type: tool_called, tool: web_search}
  chaos_matrix:
    - name: llm-cut
      llm_faults: [{mode: stream_cut, after_events: 1}]
"""
MODEL = "gpt-4o-mini"

# What a tool result that reports a failure looks like to the scripted model.
_ERROR_RE = re.compile(r"(?i)error|failed|unavailable|exception")

# Variables that would make the LangChain stack call out (LangSmith tracing, its gateway)
# or point the SDK somewhere else: never inherited by flakestorm or the agent.
_FOREIGN_PREFIXES = ("LANGSMITH_", "LANGCHAIN_", "OPENAI_", "LANGGRAPH_")


class _Recording(harness.OriginHandler):
    def _record(self) -> tuple[int, bytes]:
        body = self._read_body()
        headers: dict[str, str] = {}
        for k, v in self.headers.items():
            headers[k.lower()] = f"{headers[k.lower()]}, {v}" if k.lower() in headers else v
        return self.server.origin.record_seq(Recorded(self.command, self.path, headers, body)), body

    def _send_json(self, obj: dict, seq: int, status: int = 200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Origin-Seq", str(seq))
        self.end_headers()
        self.wfile.write(data)


class _SeqOrigin(harness.Origin):
    def record_seq(self, r: Recorded) -> int:
        with self._lock:
            self.requests.append(r)
            return len(self.requests)

    def snapshot(self) -> list[Recorded]:
        with self._lock:
            return list(self.requests)


# ------------------------------------------------------------------- scripted LLM


def _text(content) -> str:
    """A message's content as text (a string, or a list of text parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def script(req: dict) -> dict:
    """The scripted model's reply to a Chat Completions request: an assistant message."""
    messages = req.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        result = _text(last.get("content"))
        text = SORRY if _ERROR_RE.search(result) else f"According to web_search: {result}"
        return {"role": "assistant", "content": text}
    if last.get("role") == "user" and req.get("tools"):
        args = json.dumps({"query": _text(last.get("content"))})
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "web_search", "arguments": args}}]}
    return {"role": "assistant", "content": "I can only answer with web_search."}


class _LLMHandler(_Recording):
    def do_POST(self):
        seq, body = self._record()
        if self.path != "/v1/chat/completions":
            return self._send_json({"error": {"message": f"no route {self.path}", "type": "invalid_request_error",
                                              "param": None, "code": None}}, seq, 404)
        req = json.loads(body or b"{}")
        model = req.get("model", MODEL)
        message = self.server.origin.script(req)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        usage = {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}
        cid = f"chatcmpl-{seq}"
        if not req.get("stream"):
            choice = {"index": 0, "message": {"refusal": None, **message}, "finish_reason": finish, "logprobs": None}
            return self._send_json({"id": cid, "object": "chat.completion", "created": 1700000000, "model": model,
                                    "choices": [choice], "usage": usage}, seq)

        # SSE as provider-wire-formats.md §1.2: chunks, a finish chunk, [DONE].
        def chunk(delta: dict, finish_reason=None) -> dict:
            return {"id": cid, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        frames = [chunk({"role": "assistant", "content": ""})]
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            args = call["function"]["arguments"]
            name = call["function"]["name"]
            frames.append(chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                                 "function": {"name": name, "arguments": ""}}]}))
            half = len(args) // 2
            for piece in (args[:half], args[half:]):
                frames.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        else:
            words = message["content"].split(" ")
            for i, w in enumerate(words):
                frames.append(chunk({"content": w if i == 0 else " " + w}))
        frames.append(chunk({}, finish))
        if (req.get("stream_options") or {}).get("include_usage"):
            frames.append({"id": cid, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
                           "choices": [], "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Origin-Seq", str(seq))
        self.end_headers()
        try:
            for f in frames:
                self._write_chunk(f"data: {json.dumps(f)}\n\n".encode())
            self._write_chunk(b"data: [DONE]\n\n")
            self._end_chunked()
        except OSError:
            pass  # the client went away (a fault cut the stream)


class ScriptedLLM(_SeqOrigin):
    """`script_fn`: the model's reply to a request (default `script`)."""

    def __init__(self, script_fn=None):
        super().__init__(True, _LLMHandler)
        self.script = script_fn or script

    @property
    def base_url(self) -> str:
        return f"{self.url()}/v1"


class _GeminiHandler(_Recording):
    """Gemini's `generateContent` (provider-wire-formats.md), scripted as `script` is: a
    function call for the user's question, then an answer from the function's response."""

    def do_POST(self):
        seq, body = self._record()
        m = re.fullmatch(r"/v1(?:beta)?/models/([^/:]+):generateContent", urlsplit(self.path).path)
        if not m:
            return self._send_json({"error": {"code": 404, "message": f"no route {self.path}",
                                              "status": "NOT_FOUND"}}, seq, 404)
        req = json.loads(body or b"{}")
        contents = req.get("contents") or []
        parts = (contents[-1] if contents else {}).get("parts") or []
        answered = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if answered:
            result = json.dumps(answered[0].get("response"))
            text = SORRY if _ERROR_RE.search(result) else f"According to web_search: {FACT}"
            out = [{"text": text}]
        elif req.get("tools"):
            question = "".join(p.get("text", "") for p in parts)
            out = [{"functionCall": {"name": "web_search", "args": {"query": question}}}]
        else:
            out = [{"text": "I can only answer with web_search."}]
        self._send_json({
            "candidates": [{"content": {"role": "model", "parts": out}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 10, "totalTokenCount": 30},
            "modelVersion": m.group(1),
        }, seq)


class ScriptedGemini(_SeqOrigin):
    def __init__(self):
        super().__init__(True, _GeminiHandler)


class _AnthropicHandler(_Recording):
    """Anthropic's Messages API (provider-wire-formats.md), scripted as `script` is: a
    `tool_use` for the user's question, then an answer from the `tool_result`."""

    def do_POST(self):
        seq, body = self._record()
        if urlsplit(self.path).path != "/v1/messages":
            return self._send_json({"type": "error", "error": {"type": "not_found_error",
                                                               "message": f"no route {self.path}"}}, seq, 404)
        req = json.loads(body or b"{}")
        messages = req.get("messages") or []
        content = (messages[-1] if messages else {}).get("content") or ""
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:
            result = json.dumps(results[0].get("content"))
            text = SORRY if _ERROR_RE.search(result) else f"According to web_search: {FACT}"
            out, stop = [{"type": "text", "text": text}], "end_turn"
        elif req.get("tools"):
            question = "".join(b.get("text", "") for b in blocks)
            out = [{"type": "tool_use", "id": f"toolu_{seq}", "name": "web_search", "input": {"query": question}}]
            stop = "tool_use"
        else:
            out, stop = [{"type": "text", "text": "I can only answer with web_search."}], "end_turn"
        message = {"id": f"msg_{seq}", "type": "message", "role": "assistant",
                   "model": req.get("model", "claude"), "content": out, "stop_reason": stop,
                   "stop_sequence": None, "usage": {"input_tokens": 20, "output_tokens": 10}}
        if not req.get("stream"):
            return self._send_json(message, seq)
        self._stream(message, seq)

    def _stream(self, message: dict, seq: int):
        """The same message as Anthropic's event stream (provider-wire-formats.md)."""
        start = {**message, "content": [], "stop_reason": None}
        events = [("message_start", {"type": "message_start", "message": start})]
        for i, block in enumerate(message["content"]):
            if block["type"] == "text":
                first, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
            else:
                first = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [("content_block_start", {"type": "content_block_start", "index": i, "content_block": first}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                       ("content_block_stop", {"type": "content_block_stop", "index": i})]
        events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                                          "stop_sequence": None},
                                      "usage": {"output_tokens": 10}}),
                   ("message_stop", {"type": "message_stop"})]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Origin-Seq", str(seq))
        self.end_headers()
        try:
            for name, data in events:
                self._write_chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self._end_chunked()
        except OSError:
            pass  # the client went away (a fault cut the stream)


class ScriptedAnthropic(_SeqOrigin):
    def __init__(self):
        super().__init__(True, _AnthropicHandler)


# ----------------------------------------------------------------------- tool API


class _ToolHandler(_Recording):
    def do_GET(self):
        seq, _ = self._record()
        parts = urlsplit(self.path)
        if parts.path != "/search":
            return self._send_json({"error": f"no route {parts.path}"}, seq, 404)
        query = parse_qs(parts.query).get("q", [""])[0]
        self._send_json({"query": query, "results": [FACT]}, seq)


class ToolAPI(_SeqOrigin):
    def __init__(self):
        super().__init__(True, _ToolHandler)

    @property
    def search_url(self) -> str:
        return f"{self.url()}/search"


# ------------------------------------------------------------------ MCP server


class McpServer:
    """agents/mcp_server.py: the MCP SDK's own server (`get_weather`, `send_email`) over
    Streamable HTTP and TLS on a port the OS chose; `url` is its endpoint."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, str(AGENTS / "mcp_server.py")], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.close()
            pytest.fail(f"the MCP server did not start: {line!r}", pytrace=False)
        self.origin = f"https://localhost:{line.split()[1]}"
        self.url = f"{self.origin}/mcp"

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


# ------------------------------------------------------------------ contract runs


_GIVEN: set[int] = set()


def closed_port() -> int:
    """A free loopback port for the agent, which its command line must name before
    flakestorm starts it (like tests/common/cli.rs `closed_port`): taken below the
    kernel's ephemeral range, where no outgoing connection's local port can take it
    before the agent binds it (EADDRINUSE)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    first, span = 10_000, max(low - 10_000, 1)
    start = (os.getpid() * 7919) % span
    for i in range(span):
        port = first + (start + i * 13) % span
        if port in _GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise RuntimeError(f"no free loopback port below {low}")


def runner_env() -> dict[str, str]:
    """flakestorm's environment (the agent inherits it): no proxy or CA variables, and
    nothing that would switch on LangSmith or point the SDK elsewhere."""
    return {k: v for k, v in clean_env().items() if not k.upper().startswith(_FOREIGN_PREFIXES)}


def q(s: str) -> str:
    """A YAML scalar (JSON strings are YAML double-quoted strings)."""
    return json.dumps(s)


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    report: dict | None
    config: str

    def why(self) -> str:
        """Context for assertion messages."""
        return f"exit {self.code}\nstdout:\n{self.stdout[-6000:]}\nstderr:\n{self.stderr[-6000:]}"


class Stack:
    """A scripted LLM, a tool API and a port for the agent, for one contract run.

    With `pool=N` flakestorm runs N instances of the agent at once, and spares for cases to
    settle on (docs/config.md, "The agent pool"): the agent's port is `{port}`, which it
    replaces with a free port per instance, and the run's `advanced.concurrency` is N."""

    # The agent script (agents/) and what its stack's users set besides `agent_env()`.
    AGENT = "langgraph_agent.py"
    AGENT_ENV: dict[str, str] = {}

    def __init__(self, tmp: Path, pool: int = 0):
        self.tmp = tmp
        self.llm = ScriptedLLM()
        self.tool = ToolAPI()
        self.agent_port = "{port}" if pool else closed_port()
        self.concurrency = pool or 1
        self.netaudit_log = tmp / "netaudit.jsonl"

    def netaudit(self) -> list[dict]:
        """What the agent process connected to and looked up (netaudit/sitecustomize.py)."""
        if not self.netaudit_log.is_file():
            return []
        return [json.loads(line) for line in self.netaudit_log.read_text().splitlines()]

    def close(self):
        self.llm.close()
        self.tool.close()

    def agent_env(self, **extra: str) -> dict[str, str]:
        """How its users configure the agent: the SDK's own variables, tracing off."""
        env = {
            "OPENAI_BASE_URL": self.llm.base_url,
            "OPENAI_API_KEY": "sk-test",
            "TOOL_URL": self.tool.search_url,
            # No LangSmith uploads (they are off unless switched on; said explicitly).
            "LANGSMITH_TRACING": "false",
            "LANGCHAIN_TRACING_V2": "false",
            "LANGCHAIN_TRACING": "false",
            # Test instrumentation (netaudit/sitecustomize.py): log every connect and lookup.
            "PYTHONPATH": str(NETAUDIT),
            "FRAMEWORKS_NETAUDIT": str(self.netaudit_log),
        }
        env.update(self.AGENT_ENV)
        env.update(extra)
        return env

    def agent_command(self, prefix: str = "") -> str:
        """The agent's command line (`AGENT`, a script in agents/): the env it needs comes
        from `agent.env` (`agent_env()`), the proxy and CA variables from flakestorm."""
        agent = AGENTS / self.AGENT
        return f"{prefix}exec {shlex.quote(sys.executable)} {shlex.quote(str(agent))} {self.agent_port}"

    def tools(self) -> str:
        """The `tools:` entries of the stack's config."""
        return f"  - {{name: web_search, match_url: {q(self.tool.url() + '/*')}}}\n"

    def config(self, contract: str, golden_prompts: list[str], *, prefix: str = "", extra: str = "",
               **env: str) -> str:
        """A flakestorm.yaml that starts the agent (`agent.command` + `agent.env`, with `env`
        added to `agent_env()`) and lets flakestorm pick its ports."""
        agent_env = "".join(f"    {k}: {q(v)}\n" for k, v in self.agent_env(**env).items())
        return (
            "proxy:\n"
            f"  upstream_ca_file: {q(str(TEST_CA))}\n"
            "ca:\n"
            f"  dir: {q(str(self.tmp / 'certs'))}\n"
            "tools:\n" + self.tools() +
            "agent:\n"
            f"  endpoint: {q(f'http://127.0.0.1:{self.agent_port}/invoke')}\n"
            f"  command: {q(self.agent_command(prefix))}\n"
            "  env:\n" + agent_env +
            f"  ready_url: {q(f'http://127.0.0.1:{self.agent_port}/health')}\n"
            "  timeout: 20000\n"
            f"advanced: {{seed: 3, concurrency: {self.concurrency}}}\n"
            "golden_prompts:\n" + "".join(f"  - {q(p)}\n" for p in golden_prompts) + extra + contract
        )

    def run_contract(self, config: str) -> Run:
        return self.flakestorm(config, "contract", "run", report=self.tmp / "report.json")

    def run_replay(self, config: str, sessions: Path) -> Run:
        """`flakestorm replay run SESSIONS` (the agent started by `agent.command` as in
        the run); its report is `replay.json`."""
        return self.flakestorm(config, "replay", "run", str(sessions), report=self.tmp / "replay.json")

    def flakestorm(self, config: str, *args: str, report: Path) -> Run:
        """`flakestorm ARGS -c flakestorm.yaml -o REPORT` with `config` as the file."""
        path = self.tmp / "flakestorm.yaml"
        path.write_text(config)
        try:
            p = subprocess.run(
                [str(binary()), *args, "-c", str(path), "-o", str(report)],
                cwd=self.tmp, env=runner_env(), capture_output=True, text=True,
                timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"flakestorm {' '.join(args)} took over {RUN_TIMEOUT_S}s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}",
                        pytrace=False)
        data = json.loads(report.read_text()) if report.is_file() else None
        return Run(p.returncode, p.stdout, p.stderr, data, config)


def run_small_contract(stack: Stack, prompts: list[str]) -> Run:
    """`SMALL_CONTRACT` on `stack`'s agent, the stack closed after."""
    try:
        return stack.run_contract(stack.config(SMALL_CONTRACT, prompts))
    finally:
        stack.close()


def run_cut_contract(stack: Stack, prompts: list[str]) -> Run:
    """`CUT_CONTRACT` on `stack`'s agent, the stack closed after."""
    try:
        return stack.run_contract(stack.config(CUT_CONTRACT, prompts))
    finally:
        stack.close()


# --------------------------------------------------------------- report helpers


def cases(report: dict, scenario: str) -> list[dict]:
    out = [c for c in report["cases"] if c["scenario"] == scenario]
    assert out, f"no cases for scenario {scenario!r} in {[c['scenario'] for c in report['cases']]}"
    return out


def assert_cells(run: Run, want: dict[tuple[str, str], str]) -> dict:
    """The run's report, once each (invariant, scenario) cell of `want` has its verdict."""
    r = run.report
    assert r is not None, run.why()
    got = {k: cell(r, *k)["verdict"] for k in want}
    assert got == want, run.why()
    return r


def cut_case(run: Run, attempts: int) -> dict:
    """The one case of a `CUT_CONTRACT` run where the agent failed: no answer, no tool
    called, its LLM called `attempts` times with each answer cut, the run FAIL (exit 1)."""
    r = assert_cells(run, {("answers", "llm-cut"): "fail", ("searches", "llm-cut"): "fail"})
    [cut] = cases(r, "llm-cut")
    faults = [(e["fault"]["mode"], e["fault"]["applied"]) for e in exchanges(cut, "llm")]
    assert faults == [("stream_cut", True)] * attempts, run.why()
    assert run.code == 1, run.why()
    return cut


def cell(report: dict, invariant: str, scenario: str) -> dict:
    hits = [c for c in report["cells"] if c["invariant"] == invariant and c["scenario"] == scenario]
    assert len(hits) == 1, f"cell {invariant} × {scenario}: {hits}"
    return hits[0]


def exchanges(case: dict, kind: str) -> list[dict]:
    """The case's exchanges to `kind` (`llm` or `tool`), in journal order."""
    assert case["exchanges"] is not None, f"case has no exchanges (traffic not attributed): {case}"
    return sorted((e for e in case["exchanges"] if e["target"]["kind"] == kind), key=lambda e: e["id"])


def header(e: dict, name: str, side: str = "response") -> str | None:
    """A header of an exchange's request or response, case-insensitively."""
    if side == "request":
        hs = e["request"]["headers"]
    else:
        resp = e["outcome"].get("response") or {}
        hs = resp.get("headers") or {}
    items = hs.items() if isinstance(hs, dict) else (tuple(h) for h in hs)
    for k, v in items:
        if k.lower() == name.lower():
            return v[0] if isinstance(v, list) else v
    return None


def status(e: dict) -> int | None:
    o = e["outcome"]
    return (o.get("response") or {}).get("status") if o.get("outcome") == "response" else o.get("status")


def origin_seq(e: dict) -> int | None:
    """Which origin request answered this exchange (None: flakestorm answered it)."""
    v = header(e, "x-origin-seq")
    return int(v) if v is not None else None


def sdk_retry_count(e: dict) -> int | None:
    """The openai SDK numbers its attempts: `x-stainless-retry-count` (0 = first try)."""
    v = header(e, "x-stainless-retry-count", side="request")
    return int(v) if v is not None else None


# ------------------------------------------------------------ flakestorm serve


class Flakestorm(harness.Flakestorm):
    def metric(self, name: str, **labels: str) -> float:
        """Sum of every sample of `name` whose labels include `labels`."""
        code, body = self.control("GET", "/metrics")
        assert code == 200, body
        total = 0.0
        for line in body.decode().splitlines():
            m = re.match(rf"^{re.escape(name)}(?:\{{(.*)\}})?\s+(\S+)$", line)
            if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
                total += float(m.group(2))
        return total

    def llm_calls(self) -> float:
        return self.metric("flakestorm_requests_total", target="llm")

    def chaos(self, body: dict):
        code, resp = self.control("PUT", "/v1/chaos", body)
        assert code == 200, f"PUT /v1/chaos {body} -> {code} {resp!r}"
