"""Starting the test MCP servers: stdio configs, and HTTP/SSE server processes on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from subagents.mcp.config import SSEServerConfig, StdioServerConfig, StreamableHTTPServerConfig

CALC_SERVER = Path(__file__).resolve().parent / "calc_server.py"
START_WAIT_SECONDS = 30.0


def stdio_calc(name: str = "calc", **settings: Any) -> StdioServerConfig:
    return StdioServerConfig(
        name=name, command=sys.executable, args=[str(CALC_SERVER), "stdio"], **settings
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def http_calc(
    kind: Literal["http", "sse"],
) -> Iterator[tuple[subprocess.Popen[bytes], StreamableHTTPServerConfig | SSEServerConfig]]:
    """The calc server as its own process, serving ``kind`` on a free port until the end."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(CALC_SERVER), kind, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(process, port)
        config: StreamableHTTPServerConfig | SSEServerConfig
        if kind == "http":
            config = StreamableHTTPServerConfig(name=kind, url=f"http://127.0.0.1:{port}/mcp")
        else:
            config = SSEServerConfig(name=kind, url=f"http://127.0.0.1:{port}/sse")
        yield process, config
    finally:
        process.kill()
        process.wait(timeout=10)


def _wait_for_port(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + START_WAIT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"test MCP server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"test MCP server did not listen on port {port} in time")
