"""A recording proxy between the CLI and the model server of the evaluation.

Every request goes on to the server unchanged and its answer comes back unchanged, streamed
answers chunk by chunk as the server sends them; each exchange (request body, answer body,
status, seconds) is appended as one JSON line to the file :attr:`RecordingProxy.log` names
at that moment. A failed task's exchanges are what its replay test is written from.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["RecordingProxy"]

_HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "host"})
_TIMEOUT_SECONDS = 3600.0  # a slow CPU model; the client's own timeout is what counts


class RecordingProxy:
    """Serves on 127.0.0.1 (:attr:`port`), forwarding to ``upstream`` (``http://host:port``)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.log: Path | None = None
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                proxy._forward(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                proxy._forward(self, self.rfile.read(length))

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        started = time.monotonic()
        connection = http.client.HTTPConnection(*self.upstream, timeout=_TIMEOUT_SECONDS)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_HEADERS}
        try:
            connection.request(handler.command, handler.path, body=body, headers=headers)
            answer = connection.getresponse()
            handler.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in _HOP_HEADERS and key.lower() != "content-length":
                    handler.send_header(key, value)
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            received = bytearray()
            while chunk := answer.read1(65536):
                received += chunk
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")
            self._record(handler.path, body, answer.status, bytes(received), started)
        except (OSError, http.client.HTTPException) as error:
            # the client went away (a timeout, a cancelled run): say so in the log
            self._record(handler.path, body, 0, str(error).encode(), started)
            handler.close_connection = True
        finally:
            connection.close()

    def _record(
        self, path: str, request: bytes, status: int, answer: bytes, started: float
    ) -> None:
        log = self.log
        if log is None or path.endswith("/models"):
            return
        entry = {
            "path": path,
            "seconds": round(time.monotonic() - started, 2),
            "status": status,
            "request": _json_or_text(request),
            "answer": _json_or_text(answer),
        }
        with self._lock, log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _json_or_text(data: bytes) -> Any:
    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text  # a stream of server-sent events, or an error page
