"""A real OTLP trace receiver on the official `opentelemetry-proto` definitions: a gRPC
server (grpcio, `TraceService/Export`) and an HTTP server (`POST /v1/traces`,
`application/x-protobuf`), both on 127.0.0.1:0, keeping every span they were sent as a
plain `Span` (ids in hex, attributes and event attributes as Python values)."""

from __future__ import annotations

import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


def _value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def _attrs(kvs) -> dict:
    return {kv.key: _value(kv.value) for kv in kvs}


@dataclass
class Event:
    name: str
    attributes: dict


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict
    events: list[Event]
    links: list[tuple[str, str]]
    status_code: int
    resource: dict = field(default_factory=dict)


class Receiver:
    """What both servers were sent, and the headers of each export."""

    def __init__(self):
        self.spans: list[Span] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()

    def take(self, request: trace_service_pb2.ExportTraceServiceRequest, headers: dict):
        got = []
        for rs in request.resource_spans:
            resource = _attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(Span(
                        trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(), name=s.name, kind=s.kind,
                        start_ns=s.start_time_unix_nano, end_ns=s.end_time_unix_nano,
                        attributes=_attrs(s.attributes),
                        events=[Event(e.name, _attrs(e.attributes)) for e in s.events],
                        links=[(lk.trace_id.hex(), lk.span_id.hex()) for lk in s.links],
                        status_code=s.status.code, resource=resource))
        with self._lock:
            self.spans.extend(got)
            self.headers.append(headers)

    def wait(self, pred, count: int = 1, within_s: float = 15.0) -> list[Span]:
        """The spans `pred` accepts, once there are at least `count` (or the deadline)."""
        deadline = time.monotonic() + within_s
        while True:
            with self._lock:
                found = [s for s in self.spans if pred(s)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def clear(self):
        with self._lock:
            self.spans.clear()
            self.headers.clear()


class _Servicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: Receiver):
        self.receiver = receiver

    def Export(self, request, context):
        self.receiver.take(request, dict(context.invocation_metadata()))
        return trace_service_pb2.ExportTraceServiceResponse()


class GrpcReceiver(Receiver):
    protocol = "grpc"

    def __init__(self):
        super().__init__()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Servicer(self), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.endpoint = f"http://127.0.0.1:{port}"

    def close(self):
        self.server.stop(grace=None)


class HttpReceiver(Receiver):
    protocol = "http/protobuf"

    def __init__(self, port: int = 0):
        super().__init__()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                ok = self.path == "/v1/traces" and \
                    self.headers.get("content-type") == "application/x-protobuf"
                if ok:
                    req = trace_service_pb2.ExportTraceServiceRequest()
                    req.ParseFromString(body)
                    receiver.take(req, {k.lower(): v for k, v in self.headers.items()})
                out = trace_service_pb2.ExportTraceServiceResponse().SerializeToString() if ok else b""
                self.send_response(200 if ok else 404)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        # The base URL: flakestorm appends /v1/traces, as for OTEL_EXPORTER_OTLP_ENDPOINT.
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def telemetry_config(receiver: Receiver, extra: str = "") -> str:
    return ("telemetry:\n  otlp:\n"
            f"    endpoint: \"{receiver.endpoint}\"\n"
            f"    protocol: \"{receiver.protocol}\"\n"
            "    headers: {x-receiver-key: test-key}\n" + extra)
