"""The local HTTP server of the benchmarks that talk to a provider: a handler base that sends
one answer and keeps quiet, and :func:`serve`, which runs it on 127.0.0.1 (in a process of its
own, so that its CPU is not counted with the client's) and prints the port."""

from __future__ import annotations

import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["AnswerHandler", "serve", "start_server"]


class AnswerHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go in two writes: with Nagle's algorithm on, the client's delayed ACK
    # stalls each answer (which once inflated a "bare client" figure 2.4-fold)
    disable_nagle_algorithm = True

    def send_answer(self, data: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(handler: type[BaseHTTPRequestHandler]) -> None:
    """Serve ``handler`` on a free port of 127.0.0.1; the port is printed first."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def start_server(script: str) -> tuple[subprocess.Popen[str], int]:
    """Run ``script --serve`` (which calls :func:`serve`); the process and its port."""
    server = subprocess.Popen(
        [sys.executable, script, "--serve"], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    return server, int(server.stdout.readline())
