"""Bash: run a shell command in the workspace, with a timeout and an output cap."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from typing import Annotated

from pydantic import Field

from subagents.errors import ToolError
from subagents.secrets import tool_environment
from subagents.tools.base import ToolContext
from subagents.tools.decorator import tool
from subagents.tools.workspace import workspace_of

__all__ = [
    "DEFAULT_BASH_TIMEOUT_MS",
    "MAX_BASH_OUTPUT_CHARS",
    "MAX_BASH_TIMEOUT_MS",
    "bash_tool",
]

DEFAULT_BASH_TIMEOUT_MS = 120_000
MAX_BASH_TIMEOUT_MS = 600_000
MAX_BASH_OUTPUT_CHARS = 30_000
SHELL = "/bin/bash"

_HALF_CHARS = MAX_BASH_OUTPUT_CHARS // 2
_KEEP_BYTES = MAX_BASH_OUTPUT_CHARS * 4  # kept at each end: enough for any UTF-8 text
_READ_BYTES = 65_536
# After the shell exits, how long its output may stay open (background jobs holding it)
# before the rest of its process group is stopped.
_DRAIN_SECONDS = 1.0

_DESCRIPTION = f"""\
Run a command with {SHELL} in the workspace root and return its output (stdout and stderr \
together). Each call starts a fresh shell: `cd` and variables do not carry over. `timeout` is \
in milliseconds (default {DEFAULT_BASH_TIMEOUT_MS}, at most {MAX_BASH_TIMEOUT_MS}); a command \
that runs longer is killed with every process it started. Output beyond \
{MAX_BASH_OUTPUT_CHARS} characters is cut in the middle. A non-zero exit code is reported. \
Prefer Read, Grep, Glob and LS over cat, grep, find and ls. Give a short `description` of what \
the command does."""


class _Output:
    """The head and tail of a stream of bytes, in bounded memory."""

    __slots__ = ("dropped", "head", "tail", "total")

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = _KEEP_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - _KEEP_BYTES
            if excess > 0:
                self.dropped += excess
                del self.tail[:excess]

    def text(self) -> str:
        if not self.dropped:
            full = (self.head + self.tail).decode("utf-8", errors="replace")
            if len(full) <= MAX_BASH_OUTPUT_CHARS:
                return full
            cut = len(full) - 2 * _HALF_CHARS
            return _join_cut(full[:_HALF_CHARS], full[-_HALF_CHARS:], f"{cut} characters")
        head = self.head.decode("utf-8", errors="replace")[:_HALF_CHARS]
        tail = self.tail.decode("utf-8", errors="replace")[-_HALF_CHARS:]
        kept = len(head.encode()) + len(tail.encode())
        return _join_cut(head, tail, f"about {self.total - kept} bytes")


def _join_cut(head: str, tail: str, amount: str) -> str:
    return (
        f"{head}\n\n[... output cut: {amount} omitted from the middle; the limit is "
        f"{MAX_BASH_OUTPUT_CHARS} characters. Redirect to a file and Read or Grep it to see "
        f"everything ...]\n\n{tail}"
    )


async def run_bash(
    command: Annotated[str, Field(description="The command to run.")],
    ctx: ToolContext,
    timeout: Annotated[  # noqa: ASYNC109 - Claude Code's argument name, in milliseconds
        int | None,
        Field(
            ge=1,
            le=MAX_BASH_TIMEOUT_MS,
            description=f"Timeout in milliseconds (default {DEFAULT_BASH_TIMEOUT_MS}, max "
            f"{MAX_BASH_TIMEOUT_MS}).",
        ),
    ] = None,
    description: Annotated[
        str | None, Field(description="What the command does, in 5-10 words.")
    ] = None,
) -> str:
    if not command.strip():
        raise ToolError("The command is empty; give the shell command to run.")
    if "\0" in command:
        raise ToolError("The command contains a NUL character; send it as plain text.")
    timeout_ms = timeout or DEFAULT_BASH_TIMEOUT_MS
    root = workspace_of(ctx).root
    argv = [SHELL, "-c", command]
    if ctx.sandbox is not None:
        argv = ctx.sandbox.wrap(argv)
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=root,
            env=dict(ctx.env) if ctx.env is not None else tool_environment(),
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,  # its own process group, killed as a whole
        )
    except OSError as exc:
        os.close(read_fd)
        raise ToolError(f"Could not start {SHELL} in {root}: {exc}.") from exc
    finally:
        os.close(write_fd)
    output = _Output()
    closed = loop.create_future()
    os.set_blocking(read_fd, False)
    loop.add_reader(read_fd, _pump, read_fd, output, closed)
    timed_out = lingering = False
    try:
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await process.wait()
        except TimeoutError:
            timed_out = True
            _kill_group(process.pid)
            await process.wait()
        if not await _closed_within(closed, _DRAIN_SECONDS):
            lingering = True
            _kill_group(process.pid)
            await _closed_within(closed, _DRAIN_SECONDS)
    finally:
        if process.returncode is None:
            _kill_group(process.pid)
            await asyncio.shield(process.wait())
        loop.remove_reader(read_fd)
        os.close(read_fd)
    report = _report(output.text(), process.returncode, timed_out, lingering, timeout_ms)
    if timed_out:
        raise ToolError(report)
    return report


def _pump(fd: int, output: _Output, closed: asyncio.Future[None]) -> None:
    try:
        chunk = os.read(fd, _READ_BYTES)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    if chunk:
        output.add(chunk)
    elif not closed.done():
        asyncio.get_running_loop().remove_reader(fd)
        closed.set_result(None)


async def _closed_within(closed: asyncio.Future[None], seconds: float) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await asyncio.shield(closed)
    except TimeoutError:
        return False
    return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _report(
    text: str, returncode: int | None, timed_out: bool, lingering: bool, timeout_ms: int
) -> str:
    notes: list[str] = []
    if timed_out:
        notes.append(
            f"Command timed out after {timeout_ms} ms and was killed, with every process it "
            "started. Pass a larger timeout (at most 600000) or make the command faster."
        )
    elif returncode:
        if returncode < 0:
            notes.append(f"Command was killed by signal {_signal_name(-returncode)}.")
        else:
            notes.append(f"Exit code: {returncode}")
    if lingering:
        notes.append(
            "Processes the command left running in the background kept its output open and "
            "were stopped; each Bash call waits for its command to finish."
        )
    body = text if text else "(no output)"
    if not notes:
        return body
    return body.rstrip("\n") + "\n\n" + "\n".join(notes)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


bash_tool = tool(
    name="Bash",
    description=_DESCRIPTION,
    timeout_seconds=MAX_BASH_TIMEOUT_MS / 1000 + 30,
)(run_bash)
