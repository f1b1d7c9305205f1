"""A TCP proxy on 127.0.0.1 that can be cut: every connection through it is dropped, and new
ones refused, until it is restored. For a database server that goes away for a while."""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["TCPProxy"]


class TCPProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._cut = False
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        """Drop every connection; refuse new ones until :meth:`restore`."""
        with self._lock:
            self._cut = True
            for sock in self._open:
                _close(sock)
            self._open.clear()

    def restore(self) -> None:
        with self._lock:
            self._cut = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self._listener)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._cut:
                    _close(client)
                    continue
                try:
                    upstream = socket.create_connection(self.target, timeout=5)
                except OSError:
                    _close(client)
                    continue
                upstream.settimeout(None)
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
    finally:
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
