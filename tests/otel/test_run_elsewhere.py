"""A run submitted to a daemon (`contract run --server`) whose config asks for other OTLP
export than the daemon's: the daemon exports where it was started to, and the run's report
says so (its warnings, the terminal summary, a `warning` event as it starts) without any
header's value; its spans reach
the daemon's receiver, none the one the run asked for."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from flakestorm_harness import clean_env
from otlp_receiver import HttpReceiver, telemetry_config


class _Agent(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", "0")))
        body = json.dumps({"result": "an answer"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def agent():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Agent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/invoke"
    server.shutdown()
    server.server_close()


def test_a_run_asking_for_other_export_is_told(flakestorm, grpc_receiver, agent, tmp_path):
    elsewhere = HttpReceiver()
    try:
        config = tmp_path / "run.yaml"
        config.write_text(
            f"agent: {{endpoint: '{agent}'}}\ngolden_prompts: [hi]\n"
            "contract:\n  name: otel-elsewhere\n"
            "  invariants: [{id: answers, type: output_not_empty}]\n"
            "  chaos_matrix: [{name: no-chaos}]\n"
            + telemetry_config(elsewhere).replace("test-key", "run-secret"))
        env = {**clean_env(), "FLAKESTORM_API_TOKEN": flakestorm.token_file.read_text().strip()}
        out = subprocess.run(
            [os.environ["FLAKESTORM_BIN"], "contract", "run", "-c", str(config),
             "--server", f"http://{flakestorm.control_addr}", "-o", str(tmp_path / "report.json")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        report = json.loads((tmp_path / "report.json").read_text())
        (note,) = [w for w in report["warnings"] if "telemetry.otlp is not applied" in w]
        assert f"it asks for spans at {elsewhere.endpoint}/v1/traces (http/protobuf)" in note, note
        assert f"the daemon sends them to {grpc_receiver.endpoint} (grpc)" in note, note
        assert "run-secret" not in note and "test-key" not in note, note
        assert "telemetry.otlp is not applied" in out.stdout, out.stdout
        # Said as the run starts too: the events stream's `warning`, printed by --server.
        (said,) = [l for l in out.stderr.splitlines() if l.startswith("flakestorm: warning: ")]
        assert "telemetry.otlp is not applied" in said and "run-secret" not in said, said
        (root,) = grpc_receiver.wait(lambda s: s.attributes.get("flakestorm.run.name") == "otel-elsewhere")
        assert root.attributes["flakestorm.run.verdict"] == "pass"
        assert elsewhere.spans == []
    finally:
        elsewhere.close()
