"""A real OTLP trace receiver on 127.0.0.1, over HTTP (protobuf) or gRPC, as a collector
speaks it: decodes each ExportTraceServiceRequest and keeps the spans, for tests to wait on.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

__all__ = ["ReceivedSpan", "Receiver", "grpc_receiver", "http_receiver"]


@dataclass(slots=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    attributes: dict[str, Any]
    status_code: int
    service: str


@dataclass
class Receiver:
    """What the receiver got; ``endpoint`` is what OTEL_EXPORTER_OTLP_ENDPOINT should say."""

    endpoint: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    _arrived: threading.Condition = field(default_factory=threading.Condition)

    def take(self, body: bytes) -> bytes:
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = [
            _span(span, _service(resource.resource))
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with self._arrived:
            self.spans.extend(found)
            self.requests += 1
            self._arrived.notify_all()
        answer: bytes = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        return answer

    def wait_for(self, count: int, timeout: float = 30.0) -> bool:
        """Wait until ``count`` spans arrived (an event, not a sleep); False at ``timeout``."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.spans) >= count, timeout)

    def named(self, name: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.name == name]


def _service(resource: Any) -> str:
    for attribute in resource.attributes:
        if attribute.key == "service.name":
            return str(attribute.value.string_value)
    return ""


def _span(span: Any, service: str) -> ReceivedSpan:
    return ReceivedSpan(
        name=span.name,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        kind=span.kind,
        attributes={item.key: _value(item.value) for item in span.attributes},
        status_code=span.status.code,
        service=service,
    )


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


@contextmanager
def http_receiver() -> Iterator[Receiver]:
    """OTLP/HTTP (``POST /v1/traces``, protobuf) on a free port of 127.0.0.1."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            answer = receiver.take(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def grpc_receiver() -> Iterator[Receiver]:
    """OTLP/gRPC (the TraceService) on a free port of 127.0.0.1."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc  # type: ignore[import-untyped]  # grpcio ships no type stubs
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    receiver = Receiver()

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            receiver.take(request.SerializeToString())
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
        Service(), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    receiver.endpoint = f"http://127.0.0.1:{port}"
    try:
        yield receiver
    finally:
        server.stop(grace=None)
