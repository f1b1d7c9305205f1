"""Bash: run a shell command in the workspace, with a timeout and an output cap."""

from __future__ import annotations

import signal
from typing import Annotated

from pydantic import Field

from subagents._process import CappedOutput, run_process
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

_DESCRIPTION = f"""\
Run a command with {SHELL} in the workspace root and return its output (stdout and stderr \
together). Each call starts a fresh shell: `cd` and variables do not carry over. `timeout` is \
in milliseconds (default {DEFAULT_BASH_TIMEOUT_MS}, at most {MAX_BASH_TIMEOUT_MS}); a command \
that runs longer is killed with every process it started. Output beyond \
{MAX_BASH_OUTPUT_CHARS} characters is cut in the middle. A non-zero exit code is reported. \
Prefer Read, Grep, Glob and LS over cat, grep, find and ls. Give a short `description` of what \
the command does."""


def _text(output: CappedOutput) -> str:
    """The output for the model: at most :data:`MAX_BASH_OUTPUT_CHARS`, cut in the middle."""
    if output.whole:
        full = output.data().decode("utf-8", errors="replace")
        if len(full) <= MAX_BASH_OUTPUT_CHARS:
            return full
        cut = len(full) - 2 * _HALF_CHARS
        return _join_cut(full[:_HALF_CHARS], full[-_HALF_CHARS:], f"{cut} characters")
    head = output.head.decode("utf-8", errors="replace")[:_HALF_CHARS]
    tail = output.tail.decode("utf-8", errors="replace")[-_HALF_CHARS:]
    kept = len(head.encode()) + len(tail.encode())
    return _join_cut(head, tail, f"about {output.total - kept} bytes")


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
    try:
        finished = await run_process(
            argv,
            timeout_seconds=timeout_ms / 1000,
            keep_bytes=_KEEP_BYTES,
            cwd=root,
            env=ctx.env if ctx.env is not None else tool_environment(),
            merge_stderr=True,
        )
    except OSError as exc:
        raise ToolError(f"Could not start {SHELL} in {root}: {exc}.") from exc
    report = _report(
        _text(finished.stdout),
        finished.returncode,
        finished.timed_out,
        finished.lingering,
        timeout_ms,
    )
    if finished.timed_out:
        raise ToolError(report)
    return report


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
