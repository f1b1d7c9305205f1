"""A real HTTP server on 127.0.0.1, scripted per test with a queue of planned replies.

Each request pops the next :class:`PlannedReply`: a JSON body with a status and headers, raw
bytes under any content type (a body that is not JSON, an HTML page from a proxy), a list of
Server-Sent-Event frames (optionally cut off after N frames by dropping the connection), and an
optional delay before answering (to make a client time out; :meth:`FakeHTTPServer.hang` never
answers at all). Every request received is recorded so tests can assert what the SDK actually
sent.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

__all__ = ["FakeHTTPServer", "PlannedReply", "RecordedRequest", "sse_frame"]

_FOREVER = 3600.0


def sse_frame(data: Any, event: str | None = None) -> str:
    """One Server-Sent Event; ``data`` that is not a str is sent as JSON."""
    payload = data if isinstance(data, str) else json.dumps(data)
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {payload}\n\n"


@dataclass(slots=True)
class PlannedReply:
    status: int = 200
    json_body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    sse_frames: list[str] | None = None
    drop_after: int | None = None
    delay_seconds: float = 0.0
    raw_body: bytes | None = None
    """Sent as is instead of ``json_body``, with ``content_type``."""
    content_type: str = "application/json"
    frame_gap_seconds: float = 0.0
    """A pause before each SSE frame after the first: a slow model that keeps streaming."""


@dataclass(slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr logging."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {key.lower(): value for key, value in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body)
        owner = self.server.owner
        reply = owner.shaped(request, owner.record(request))
        if reply.delay_seconds and self.server.owner.released.wait(reply.delay_seconds):
            self._drop()
            return
        try:
            if reply.sse_frames is not None:
                self._send_sse(reply)
            else:
                self._send_json(reply)
        except OSError:
            self.close_connection = True

    def _send_json(self, reply: PlannedReply) -> None:
        if reply.raw_body is not None:
            payload = reply.raw_body
        else:
            payload = json.dumps(reply.json_body if reply.json_body is not None else {}).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_sse(self, reply: PlannedReply) -> None:
        assert reply.sse_frames is not None
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        for index, frame in enumerate(reply.sse_frames):
            if reply.drop_after is not None and index >= reply.drop_after:
                self._drop()
                return
            if (
                index
                and reply.frame_gap_seconds
                and self.server.owner.released.wait(reply.frame_gap_seconds)
            ):
                self._drop()
                return
            data = frame.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if reply.drop_after is not None:
            self._drop()
            return
        self.wfile.write(b"0\r\n\r\n")

    def _drop(self) -> None:
        """Cut the connection without ending the body, as a crashed proxy would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeHTTPServer


class FakeHTTPServer:
    """Base of the provider fakes: start with ``with``, plan replies, read ``requests``."""

    def __init__(self, *, tls: ssl.SSLContext | None = None) -> None:
        """``tls``: serve HTTPS with this (server-side) context."""
        self.requests: list[RecordedRequest] = []
        self.released = threading.Event()
        self._planned: deque[PlannedReply] = deque()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            self._scheme = "https"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def plan(self, reply: PlannedReply) -> None:
        with self._lock:
            self._planned.append(reply)

    def hang(self) -> None:
        """Take the next request and never answer it (until the server stops)."""
        self.plan(PlannedReply(delay_seconds=_FOREVER))

    @property
    def unused_replies(self) -> int:
        with self._lock:
            return len(self._planned)

    def shaped(self, request: RecordedRequest, reply: PlannedReply) -> PlannedReply:
        """``reply`` in the form ``request`` asks for (a provider's fake streams a planned
        body to a request that asks for a stream, as its server would)."""
        return reply

    def record(self, request: RecordedRequest) -> PlannedReply:
        with self._lock:
            self.requests.append(request)
            if self._planned:
                return self._planned.popleft()
        # 418 is not retried by anyone: the test fails at once, naming the cause.
        return PlannedReply(
            status=418,
            json_body={"error": {"message": "fake server: no reply planned for this request"}},
        )
