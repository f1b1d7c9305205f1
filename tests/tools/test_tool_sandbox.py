"""Bash in the bubblewrap sandbox, through a real run: what a command may and may not touch.

These tests need bubblewrap; `make test` installs it where the system allows (Debian's
package). Elsewhere they skip, saying why.
"""

from __future__ import annotations

import http.server
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from subagents.errors import ConfigError
from subagents.messages import ToolResultMessage
from subagents.models.base import ModelRequest, ModelResponse
from subagents.runtime.runtime import Runtime
from subagents.store.sqlite import open_store
from subagents.testing import FunctionModel, text_response, tool_call_response
from subagents.tools.sandbox import sandbox_problem

PROBLEM = sandbox_problem()


def host_has_scratch() -> bool:
    return Path("/tmp/scratch").exists()


needs_bwrap = pytest.mark.skipif(
    PROBLEM is not None, reason=f"the Bash sandbox cannot run here: {PROBLEM}"
)


def commands(*calls: dict[str, Any]) -> FunctionModel:
    """Runs each Bash call in turn, then answers with every result."""

    def turn(request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if len(results) < len(calls):
            return tool_call_response("Bash", calls[len(results)])
        return text_response("\n---\n".join(r.content for r in results))

    return FunctionModel(turn)


def sandboxed(workspace: Path, *, network: bool = False) -> None:
    config = workspace / ".subagents" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[sandbox]\nenabled = true\nnetwork = {str(network).lower()}\n")


async def run(workspace: Path, *calls: dict[str, Any], **kwargs: Any) -> list[str]:
    model = commands(*calls)
    runtime = Runtime(cwd=workspace, model=model, permission_mode="bypassPermissions", **kwargs)
    result = await runtime.run("run the commands")
    assert result.status == "completed", result.error
    return [m.content for m in model.requests[-1].messages if isinstance(m, ToolResultMessage)]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".mcp.json").write_text('{"mcpServers": {}}')
    sandboxed(root)
    return root


@needs_bwrap
async def test_a_sandboxed_command_writes_in_the_workspace_and_nowhere_else(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    home = Path(os.environ.get("HOME", "/root"))
    marker = f"escaped-{uuid.uuid4().hex}"
    results = await run(
        workspace,
        {"command": "echo made > inside.txt && cat inside.txt"},
        {"command": f"touch {outside}/{marker}"},
        {"command": f"touch {home}/{marker}"},
        {"command": "echo x > /tmp/scratch && cat /tmp/scratch"},  # a private /tmp is fine
    )
    inside, to_outside, to_home, scratch = results
    assert inside.strip() == "made" and (workspace / "inside.txt").read_text() == "made\n"
    # /tmp is private in the sandbox: a folder under the host's /tmp is not even there
    assert "Exit code: 1" in to_outside and not (outside / marker).exists()
    assert "Read-only file system" in to_home and not (home / marker).exists()
    assert scratch.strip() == "x" and not host_has_scratch()


@needs_bwrap
async def test_protected_paths_stay_read_only_inside_the_sandbox(workspace: Path) -> None:
    results = await run(
        workspace,
        {"command": "echo '[alias] x = !touch pwned' >> .git/config"},
        {"command": "echo '#!/bin/sh' > .git/hooks/pre-commit"},
        {"command": 'echo \'{"mcpServers": {"evil": {"command": "sh"}}}\' > .mcp.json'},
        {"command": "echo '[[hooks.PreToolUse]]' >> .subagents/config.toml"},
        {"command": "rm -rf .git"},
    )
    assert all("Read-only file system" in r or "Device or resource busy" in r for r in results)
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".mcp.json").read_text() == '{"mcpServers": {}}'
    assert "hooks" not in (workspace / ".subagents" / "config.toml").read_text()


@needs_bwrap
async def test_the_task_store_is_read_only_to_sandboxed_commands(workspace: Path) -> None:
    store = open_store(workspace / "data" / "tasks.db")
    try:
        results = await run(workspace, {"command": "echo junk > data/tasks.db"}, store=store)
        assert "Read-only file system" in results[0]
        assert store.integrity_check() == []
    finally:
        store.close()


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def host_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _fetch(port: int) -> dict[str, Any]:
    script = (
        "import urllib.request as u; "
        f"print(u.urlopen('http://127.0.0.1:{port}', timeout=5).read().decode())"
    )
    return {"command": f'python3 -c "{script}"'}


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
async def test_the_network_is_off_unless_the_config_allows_it(
    workspace: Path, host_server: int, network: bool
) -> None:
    sandboxed(workspace, network=network)
    (result,) = await run(workspace, _fetch(host_server))
    if network:
        assert "hello from the host" in result
    else:
        assert "hello from the host" not in result and "Exit code" in result


@pytest.mark.slow
@needs_bwrap
async def test_a_timed_out_sandboxed_command_leaves_nothing_running(workspace: Path) -> None:
    seconds = str(30_000 + uuid.uuid4().int % 10_000)  # a duration no other process uses
    (result,) = await run(
        workspace, {"command": f"sleep {seconds} & sleep {seconds}", "timeout": 500}
    )
    assert "timed out" in result
    left = [
        p
        for p in psutil.process_iter(["cmdline", "status"])
        if seconds in (p.info["cmdline"] or ()) and p.info["status"] != psutil.STATUS_ZOMBIE
    ]
    assert left == []


async def test_asking_for_a_sandbox_that_cannot_run_is_a_clear_error(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-programs"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    runtime = Runtime(cwd=workspace, model=commands({"command": "true"}))
    with pytest.raises(ConfigError) as caught:
        await runtime.run("go")
    assert "bubblewrap (bwrap) is not installed" in caught.value.message
    assert "[sandbox] enabled = false" in (caught.value.hint or "")


@needs_bwrap
async def test_without_the_sandbox_setting_commands_run_as_before(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "project").mkdir()
    (result,) = await run(tmp_path / "project", {"command": f"touch {outside}/ok && echo done"})
    assert result.strip() == "done" and (outside / "ok").exists()
