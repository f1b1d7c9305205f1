"""The one way commands are run (Bash, command hooks, git): a process group of their own,
killed as a whole, on a timeout or when the caller is cancelled; output kept in bounded
memory; stdin fed whether or not the command reads it."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from processes import is_gone
from subagents._process import run_process


async def test_stdout_and_stderr_come_apart_and_stdin_is_fed() -> None:
    finished = await run_process(
        ["/bin/sh", "-c", "cat; echo oops >&2; exit 4"],
        timeout_seconds=30,
        keep_bytes=1024,
        stdin=b"payload",
    )
    assert (finished.returncode, finished.timed_out, finished.lingering) == (4, False, False)
    assert finished.stdout.data() == b"payload"
    assert finished.stderr.data() == b"oops\n"


async def test_a_command_that_does_not_read_a_large_stdin_still_ends() -> None:
    finished = await run_process(
        ["/bin/sh", "-c", "echo ignored"], timeout_seconds=30, keep_bytes=64, stdin=b"x" * 10**6
    )
    assert finished.returncode == 0
    assert finished.stdout.data() == b"ignored\n"


async def test_output_beyond_the_cap_is_counted_not_kept() -> None:
    finished = await run_process(
        ["/bin/sh", "-c", "head -c 100000 /dev/zero"], timeout_seconds=30, keep_bytes=100
    )
    assert not finished.stdout.whole
    assert finished.stdout.total == 100_000
    assert len(finished.stdout.data()) == 200


async def test_a_cancelled_caller_kills_the_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = asyncio.create_task(
        run_process(
            ["/bin/sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"],
            timeout_seconds=120,
            keep_bytes=64,
        )
    )
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert not started.done(), started.result()
        await asyncio.sleep(0.02)  # polling the file the command writes: no event to wait on
    started.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await started
    assert is_gone(int(pid_file.read_text()))
