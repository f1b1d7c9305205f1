"""One live connection to one MCP server, and the manager of every connection of a run.

Each connection is owned by a background task that enters the SDK's transport and
``ClientSession`` context managers and keeps them open until asked to stop. The SDK builds on
anyio task groups, which must be left by the task that entered them; with one owner task per
connection, tool calls may come from any task (parallel tool calls, subagents) and a reconnect
or ``aclose`` may happen anywhere.

The ``mcp`` SDK is imported here, inside functions, only once a server is actually started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO, cast
from urllib.parse import urlsplit, urlunsplit

from subagents.errors import MCPServerError
from subagents.mcp.config import (
    MCPServerConfig,
    MCPServersConfig,
    SSEServerConfig,
    StdioServerConfig,
    as_servers_config,
)

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult
    from mcp.types import Tool as MCPTool

    from subagents.tools.base import Tool

__all__ = ["MCPConnection", "MCPManager", "describe_server", "route_sdk_logging"]

logger = logging.getLogger("subagents.mcp")

_STOP_WAIT_SECONDS = 10.0
_STDERR_TAIL_CHARS = 1500
_MAX_TOOL_PAGES = 100


def describe_server(config: MCPServerConfig) -> str:
    """How to name a server's endpoint in a message: the command line, or the URL without its
    query and credentials (where tokens hide)."""
    if isinstance(config, StdioServerConfig):
        return " ".join([config.command, *config.args])
    parts = urlsplit(config.url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class MCPConnection:
    """The connection to one MCP server.

    :meth:`connect` starts it (and the server process, for stdio), initialises the session and
    lists the tools; :meth:`call_tool` calls one, reconnecting once when it finds the
    connection dead; :meth:`aclose` ends it. Failures raise :class:`MCPServerError`.
    """

    def __init__(self, config: MCPServerConfig, *, workspace: Path | None = None) -> None:
        self.config = config
        self.name = config.name
        self.workspace = workspace
        self.tools: list[MCPTool] = []
        self.reconnects = 0
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._stderr: TextIO | None = None
        self._generation = 0
        self._lock: asyncio.Lock | None = None

    @property
    def connected(self) -> bool:
        return self._session is not None and self._owner is not None and not self._owner.done()

    # -- lifecycle ---------------------------------------------------------------------------

    async def connect(self) -> None:
        """Start and initialise the server within ``startup_timeout_seconds``."""
        route_sdk_logging()
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if not self.connected:
                await self._open()

    async def aclose(self) -> None:
        """Stop the owner task (which ends the session and the server process)."""
        owner, stop, started = self._owner, self._stop, self._session is not None
        self._owner = self._stop = None
        self._session = None
        if owner is not None and stop is not None:
            if started:
                stop.set()
            else:  # still starting: it is not waiting on ``stop`` yet
                owner.cancel()
            await _finish(owner)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def _open(self) -> None:
        await self.aclose()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[tuple[ClientSession, list[MCPTool]]] = loop.create_future()
        stop = asyncio.Event()
        if isinstance(self.config, StdioServerConfig):
            self._stderr = cast(
                "TextIO",
                tempfile.TemporaryFile(  # noqa: SIM115 - closed in aclose
                    mode="w+", encoding="utf-8", errors="replace"
                ),
            )
        owner = loop.create_task(self._own(ready, stop), name=f"mcp-server-{self.name}")
        self._owner, self._stop = owner, stop
        timeout = self.config.startup_timeout_seconds
        try:
            async with asyncio.timeout(timeout):
                session, tools = await asyncio.shield(ready)
        except TimeoutError:
            error = self._error(
                f"did not finish starting within {timeout:g} s",
                hint=f"check that it starts on its own ({describe_server(self.config)}), or "
                f"raise 'startup_timeout_seconds' for {self.name!r} in the MCP server config",
            )
            await self.aclose()
            raise error from None
        except asyncio.CancelledError:
            await self.aclose()
            raise
        except Exception as exc:
            error = self._startup_error(exc)
            await self.aclose()
            raise error from exc
        self._session, self.tools = session, tools
        self._generation += 1

    async def _own(
        self,
        ready: asyncio.Future[tuple[ClientSession, list[MCPTool]]],
        stop: asyncio.Event,
    ) -> None:
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._enter_transport(stack)
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                tools = await _list_all_tools(session)
                ready.set_result((session, tools))
                await stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as exc:  # an ExceptionGroup from the SDK's task groups, too
            if not ready.done():
                ready.set_exception(_first_cause(exc))
            else:
                logger.debug("MCP server %r: connection ended: %r", self.name, exc)

    async def _enter_transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        config = self.config
        if isinstance(config, StdioServerConfig):
            from mcp import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env={key: value.get_secret_value() for key, value in config.env.items()},
                cwd=self._working_directory(config),
            )
            assert self._stderr is not None
            streams = await stack.enter_async_context(stdio_client(params, errlog=self._stderr))
            return streams[0], streams[1]
        headers = {key: value.get_secret_value() for key, value in config.headers.items()}
        read_timeout = max(300.0, config.timeout_seconds + 30.0)
        if isinstance(config, SSEServerConfig):
            from mcp.client.sse import sse_client

            streams = await stack.enter_async_context(
                sse_client(
                    config.url,
                    headers=headers,
                    timeout=config.startup_timeout_seconds,
                    sse_read_timeout=read_timeout,
                )
            )
            return streams[0], streams[1]
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(config.startup_timeout_seconds, read=read_timeout),
            )
        )
        streams = await stack.enter_async_context(
            streamable_http_client(config.url, http_client=client)
        )
        return streams[0], streams[1]

    def _working_directory(self, config: StdioServerConfig) -> str | None:
        if config.cwd is None:
            return str(self.workspace) if self.workspace is not None else None
        path = Path(config.cwd).expanduser()
        if not path.is_absolute() and self.workspace is not None:
            path = self.workspace / path
        return str(path)

    # -- calls -------------------------------------------------------------------------------

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        retry_if_lost: bool = False,
    ) -> CallToolResult:
        """Call ``tool`` on the server.

        When the connection turns out to be dead, it is reopened once. The call is then
        repeated only with ``retry_if_lost`` (for read-only or idempotent tools): whether a
        call that was cut off took effect cannot be known.
        """
        session, generation = await self._current()
        try:
            return await session.call_tool(tool, arguments)
        except Exception as exc:
            if not _connection_lost(exc):
                raise
            what = _short(exc)
        await self._reconnect(generation, what)
        if not retry_if_lost:
            raise MCPServerError(
                self.name,
                f"MCP server {self.name!r} lost its connection during the call to {tool} "
                f"({what}); it has been restarted, and whether the call took effect is unknown.",
                hint=f"check the result of {tool} if it matters, then call it again",
            )
        session, _ = await self._current()
        try:
            return await session.call_tool(tool, arguments)
        except Exception as exc:
            if not _connection_lost(exc):
                raise
            raise self._error(
                f"lost its connection again during the call to {tool} ({_short(exc)})",
                hint="the server keeps failing on this call; see its own logs, or call "
                "another tool",
            ) from exc

    async def _current(self) -> tuple[ClientSession, int]:
        if not self.connected:
            await self.connect()
        assert self._session is not None
        return self._session, self._generation

    async def _reconnect(self, generation: int, what: str) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if generation != self._generation and self.connected:
                return  # another call reconnected already
            logger.warning("MCP server %r: connection lost (%s); reconnecting", self.name, what)
            self.reconnects += 1
            await self._open()

    # -- errors ------------------------------------------------------------------------------

    def _startup_error(self, exc: BaseException) -> MCPServerError:
        config = self.config
        if isinstance(exc, FileNotFoundError) and isinstance(config, StdioServerConfig):
            return self._error(
                f"could not be started: command {config.command!r} was not found",
                hint="install it or fix 'command' (use a full path if it is not on PATH) "
                f"for {self.name!r} in .mcp.json or mcp_servers.yaml",
            )
        if isinstance(exc, PermissionError) and isinstance(config, StdioServerConfig):
            return self._error(
                f"could not be started: command {config.command!r} is not executable",
                hint=f"make it executable (chmod +x) or fix 'command' for {self.name!r}",
            )
        if isinstance(config, StdioServerConfig):
            return self._error(
                f"exited or stopped answering while starting ({_short(exc)})",
                hint=f"run '{describe_server(config)}' by hand to see why, and fix "
                f"{self.name!r} in .mcp.json or mcp_servers.yaml",
            )
        return self._error(
            f"could not be reached at {describe_server(config)} ({_short(exc)})",
            hint=f"check that the server is running and that 'url' for {self.name!r} is right",
        )

    def _error(self, what: str, *, hint: str) -> MCPServerError:
        message = f"MCP server {self.name!r} {what}."
        tail = self.stderr_tail()
        if tail:
            message += f"\nIts last output on stderr:\n{tail}"
        return MCPServerError(self.name, message, hint=hint)

    def stderr_tail(self, limit: int = _STDERR_TAIL_CHARS) -> str:
        """The end of what the server process wrote to stderr (stdio servers only)."""
        handle = self._stderr
        if handle is None or handle.closed:
            return ""
        handle.flush()
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - limit * 4)
        # pread leaves the shared file offset alone: the server may still be writing.
        data = os.pread(fd, size - start, start).decode("utf-8", errors="replace")
        return data[-limit:].strip()


class MCPManager:
    """Every MCP connection of a run.

    ``async with MCPManager(servers) as manager`` starts the enabled servers concurrently; a
    server that fails is left out (its error is in :attr:`failures` and is logged as a
    warning, or passed to ``on_warning``) and never blocks or fails the others.
    :meth:`tools` are the tools of every server that started.
    """

    def __init__(
        self,
        servers: MCPServersConfig | Mapping[str, MCPServerConfig] | Iterable[MCPServerConfig],
        *,
        workspace: Path | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        config = as_servers_config(servers)
        self.workspace = workspace
        self.configs = config
        self.connections: dict[str, MCPConnection] = {}
        self.failures: dict[str, MCPServerError] = {}
        self._on_warning = on_warning
        self._tools: list[Tool] | None = None
        for warning in config.warnings:
            self._warn(warning)
        for name, problem in config.problems.items():
            unset = "which is not set" in problem  # an unset ${VAR}; other reasons say what to do
            self._fail(
                MCPServerError(
                    name,
                    f"MCP server {name!r} is not started: {problem}.",
                    hint="set the variable, or give it a default with ${VAR:-default}"
                    if unset
                    else None,
                )
            )

    async def __aenter__(self) -> MCPManager:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Connect every enabled server at once; failures are recorded, not raised."""
        pending = [
            MCPConnection(config, workspace=self.workspace)
            for config in self.configs.enabled()
            if config.name not in self.connections
        ]
        outcomes = await asyncio.gather(
            *(connection.connect() for connection in pending), return_exceptions=True
        )
        for connection, outcome in zip(pending, outcomes, strict=True):
            if outcome is None:
                self.connections[connection.name] = connection
            elif isinstance(outcome, MCPServerError):
                self._fail(outcome)
            elif isinstance(outcome, Exception):
                self._fail(
                    MCPServerError(
                        connection.name,
                        f"MCP server {connection.name!r} failed to start: {_short(outcome)}.",
                        hint="check its settings in .mcp.json or mcp_servers.yaml",
                    )
                )
            else:
                raise outcome  # CancelledError, KeyboardInterrupt
        self._tools = None

    async def aclose(self) -> None:
        connections = list(self.connections.values())
        self.connections.clear()
        self._tools = None
        await asyncio.gather(*(c.aclose() for c in connections), return_exceptions=True)

    def tools(self) -> list[Tool]:
        """Our :class:`Tool` for every tool of every connected server, server by server."""
        if self._tools is None:
            from subagents.mcp.toolset import connection_tools

            self._tools = [
                tool
                for connection in self.connections.values()
                for tool in connection_tools(connection)
            ]
        return list(self._tools)

    def server_names(self) -> list[str]:
        """Every configured (not disabled) server, whether or not it started."""
        return self.configs.names()

    def _fail(self, error: MCPServerError) -> None:
        self.failures[error.server] = error
        self._warn(f"{error} (its tools are left out)")

    def _warn(self, text: str) -> None:
        if self._on_warning is not None:
            self._on_warning(text)
        else:
            logger.warning("%s", text)


def route_sdk_logging() -> None:
    """The SDK's log records go to our logger (see :mod:`subagents._sdk_logs`): a server
    that prints a banner before speaking MCP makes it log "Failed to parse JSONRPC message"
    with a traceback, which the person need not see."""
    from subagents._sdk_logs import route_to_debug

    route_to_debug("mcp", logger)


async def _list_all_tools(session: ClientSession) -> list[MCPTool]:
    from mcp.types import PaginatedRequestParams

    result = await session.list_tools()
    tools = list(result.tools)
    pages = 1
    while result.next_cursor is not None and pages < _MAX_TOOL_PAGES:
        result = await session.list_tools(params=PaginatedRequestParams(cursor=result.next_cursor))
        tools.extend(result.tools)
        pages += 1
    return tools


async def _finish(owner: asyncio.Task[None]) -> None:
    """Wait for a stopping owner task; cancel it if its shutdown hangs."""
    done, _ = await asyncio.wait({owner}, timeout=_STOP_WAIT_SECONDS)
    if not done:
        owner.cancel()
        await asyncio.wait({owner}, timeout=_STOP_WAIT_SECONDS)
    if owner.done() and not owner.cancelled():
        owner.exception()  # retrieved, so asyncio does not log it as never retrieved


def _connection_lost(exc: BaseException) -> bool:
    import anyio
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    lost: tuple[type[BaseException], ...] = (
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
        anyio.EndOfStream,
        ConnectionError,
        OSError,
    )
    try:
        import httpx2

        lost = (*lost, httpx2.TransportError)
    except ImportError:  # pragma: no cover - httpx2 comes with the mcp SDK
        pass
    return isinstance(exc, lost)


def _first_cause(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK's task groups wrap what went wrong)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _short(exc: BaseException) -> str:
    exc = _first_cause(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
