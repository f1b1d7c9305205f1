"""Running a command bounded in time and memory: it runs in a process group of its own, killed
as a whole when the time is up; what it leaves running in the background once it exits is
stopped when it keeps the output open; of each output stream the head and tail are kept.

Output goes through plain pipes read by the event loop, not asyncio's pipe transports: on
Python 3.11 ``Process.wait()`` also waits for those to close, which a grandchild holding them
(``sleep`` in a script) delays past any timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CappedOutput", "Finished", "run_process"]

_READ_BYTES = 65_536
# After the command exits, how long its output may stay open (background jobs holding it)
# before the rest of its process group is stopped.
DRAIN_SECONDS = 1.0


class CappedOutput:
    """The head and tail of a stream of bytes, ``keep_bytes`` of each at most."""

    __slots__ = ("dropped", "head", "keep_bytes", "tail", "total")

    def __init__(self, keep_bytes: int) -> None:
        self.keep_bytes = keep_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep_bytes - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.keep_bytes
            if excess > 0:
                self.dropped += excess
                del self.tail[:excess]

    @property
    def whole(self) -> bool:
        return not self.dropped

    def data(self) -> bytes:
        """All of it when :attr:`whole`; otherwise the head and tail joined."""
        return bytes(self.head + self.tail)


@dataclass(frozen=True, slots=True)
class Finished:
    returncode: int
    """Negative: killed by that signal (the group is killed with SIGKILL on timeout)."""
    stdout: CappedOutput
    stderr: CappedOutput
    """The same object as ``stdout`` when the streams were merged."""
    timed_out: bool
    lingering: bool
    """Processes it left running kept its output open after it exited, and were stopped."""


async def run_process(
    argv: Sequence[str],
    *,
    timeout_seconds: float,
    keep_bytes: int,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    merge_stderr: bool = False,
) -> Finished:
    """Run ``argv`` to its end or its timeout. ``OSError`` when it cannot be started; a
    cancelled caller kills the process group before the cancellation goes on."""
    loop = asyncio.get_running_loop()
    stdout = CappedOutput(keep_bytes)
    stderr = stdout if merge_stderr else CappedOutput(keep_bytes)
    pipes = [os.pipe() for _ in range(1 if merge_stderr else 2)]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
            stdout=pipes[0][1],
            stderr=pipes[-1][1],
            start_new_session=True,  # its own process group, killed as a whole
        )
    except BaseException:
        for read_fd, _ in pipes:
            os.close(read_fd)
        raise
    finally:
        for _, write_fd in pipes:
            os.close(write_fd)
    closed: list[asyncio.Future[None]] = []
    for (read_fd, _), output in zip(pipes, (stdout, stderr), strict=False):
        done = loop.create_future()
        closed.append(done)
        os.set_blocking(read_fd, False)
        loop.add_reader(read_fd, _pump, read_fd, output, done)
    timed_out = lingering = False
    try:
        try:
            async with asyncio.timeout(timeout_seconds):
                if stdin is not None:
                    await _feed(process, stdin)
                await process.wait()
        except TimeoutError:
            timed_out = True
            _kill_group(process.pid)
            await _wait_killed(process)
        if not await _closed_within(closed, DRAIN_SECONDS):
            lingering = True
            _kill_group(process.pid)
            await _closed_within(closed, DRAIN_SECONDS)
    finally:
        if process.returncode is None:
            _kill_group(process.pid)
            await asyncio.shield(_wait_killed(process))
        for read_fd, _ in pipes:
            loop.remove_reader(read_fd)
            os.close(read_fd)
    returncode = process.returncode
    assert returncode is not None
    return Finished(returncode, stdout, stderr, timed_out, lingering)


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Write ``data`` to the command's stdin and close it; a command that exits without
    reading all of it is not an error."""
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(data)
        await process.stdin.drain()
    process.stdin.close()


async def _wait_killed(process: asyncio.subprocess.Process) -> None:
    if process.stdin is not None:
        process.stdin.close()  # else a stdin still being written keeps wait() waiting
    await process.wait()


def _pump(fd: int, output: CappedOutput, closed: asyncio.Future[None]) -> None:
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


async def _closed_within(closed: list[asyncio.Future[None]], seconds: float) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await asyncio.shield(asyncio.gather(*closed))
    except TimeoutError:
        return False
    return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
