"""A person's agreement to the MCP servers a project brings.

A project's ``.mcp.json`` (or ``.subagents/mcp_servers.yaml``) is part of whatever was cloned:
its stdio servers are commands that run on this machine as soon as an agent starts. So the
command line does not start them until the person agreed, once per project and server; the
agreement is remembered in ``~/.subagents/mcp_consent.json`` together with a fingerprint of what
the server runs (transport, command, arguments, working directory, URL, and the *names* of its
environment variables and headers, never their values). A change of any of those asks again.

Servers from the user's own files (``~/.claude.json``, ``~/.subagents/mcp_servers.yaml``) and
servers passed in code are the user's, and are not asked about. For CI, where nobody can answer,
``--trust-project-mcp`` or ``SUBAGENTS_TRUST_PROJECT_MCP=1`` agrees to them all; on purpose there
is no config key for it, since a project's own config could set it.

The library itself trusts what it is given: :class:`~subagents.runtime.runtime.Runtime` screens
project servers only when handed a :class:`ProjectServerPolicy` (the CLI does this).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from subagents.mcp.config import MCPServerConfig, MCPServersConfig

__all__ = [
    "CONSENT_FILE_NAME",
    "CONSENT_VERSION",
    "TRUST_ENV_VAR",
    "ConsentStore",
    "ProjectServer",
    "ProjectServerPolicy",
    "project_servers",
    "screen_project_servers",
    "server_fingerprint",
]

CONSENT_FILE_NAME = "mcp_consent.json"
CONSENT_VERSION = 1
TRUST_ENV_VAR = "SUBAGENTS_TRUST_PROJECT_MCP"
_MAX_CONSENT_BYTES = 4 << 20

Ask = Callable[[Sequence["ProjectServer"]], set[str]]
"""Shown the servers awaiting an answer, returns the names the person agreed to."""


@dataclass(frozen=True, slots=True)
class ProjectServer:
    """A server a project's file configures: what it runs, for the person to judge."""

    name: str
    project: Path
    source: Path
    fingerprint: str
    summary: str
    """``stdio: npx -y server`` or ``http: https://...`` (no secret: env values not shown)."""


def server_fingerprint(server: MCPServerConfig) -> str:
    """A digest of what the server runs or reaches: a change asks the person again."""
    shape: dict[str, Any] = {"type": server.type}
    for name in ("command", "args", "cwd", "url"):
        if hasattr(server, name):
            shape[name] = getattr(server, name)
    shape["env"] = sorted(getattr(server, "env", {}) or {})
    shape["headers"] = sorted(getattr(server, "headers", {}) or {})
    encoded = json.dumps(shape, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()


def _summary(server: MCPServerConfig) -> str:
    url = getattr(server, "url", None)
    if url:
        return f"{server.type}: {url}"
    parts = [getattr(server, "command", ""), *getattr(server, "args", [])]
    return f"stdio: {' '.join(parts)}".strip()


def project_servers(config: MCPServersConfig, *, home: Path) -> list[ProjectServer]:
    """The enabled servers ``config`` has from project files (not the user's own: their
    ``~/.claude.json``, ``~/.subagents/mcp_servers.yaml``, or an agent file of theirs)."""
    from subagents.config import CONFIG_DIR_NAME

    home = home.resolve()
    user_files = {home / ".claude.json", home / CONFIG_DIR_NAME / "mcp_servers.yaml"}
    user_folders = {home / folder for folder in _CONFIG_FOLDERS}  # the user's own agents
    found = []
    for name, server in config.servers.items():
        source = config.sources.get(name)
        if source is None or not server.enabled or source.resolve() in user_files:
            continue
        if not user_folders.isdisjoint(source.resolve().parents):
            continue
        project = _project_of(source.resolve())
        found.append(
            ProjectServer(name, project, source, server_fingerprint(server), _summary(server))
        )
    return found


_CONFIG_FOLDERS = frozenset({".subagents", ".claude", ".wave", ".codex", ".gemini"})


def _project_of(source: Path) -> Path:
    """The project a file configures: the folder holding its config folder
    (``.subagents/mcp_servers.yaml``, an agent file in ``.claude/agents/``), else its own."""
    for folder in source.parents:
        if folder.name in _CONFIG_FOLDERS:
            return folder.parent
    return source.parent


class ConsentStore:
    """The remembered answers, one JSON file under the user's ``.subagents`` folder.

    A file that cannot be read is treated as empty (everything is asked again) and is only
    replaced when a new answer is written: an unreadable file never agrees to anything.
    """

    def __init__(self, home: Path) -> None:
        from subagents.config import CONFIG_DIR_NAME

        self.path = home / CONFIG_DIR_NAME / CONSENT_FILE_NAME

    def _load(self) -> dict[str, dict[str, dict[str, Any]]]:
        try:
            if self.path.stat().st_size > _MAX_CONSENT_BYTES:
                return {}
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        if not isinstance(data, dict) or data.get("schema_version", 0) > CONSENT_VERSION:
            return {}
        projects = data.get("projects")
        return projects if isinstance(projects, dict) else {}

    def decision(self, server: ProjectServer) -> bool | None:
        """``True``/``False`` as the person answered for this very server; ``None`` when not
        asked yet, or asked about something else (the fingerprint changed)."""
        entry = self._load().get(str(server.project), {}).get(server.name)
        if not isinstance(entry, dict) or entry.get("fingerprint") != server.fingerprint:
            return None
        allowed = entry.get("allowed")
        return allowed if isinstance(allowed, bool) else None

    def record(self, servers: Sequence[ProjectServer], *, allowed: bool) -> None:
        projects = self._load()
        now = datetime.now(UTC).isoformat()
        for server in servers:
            answers = projects.setdefault(str(server.project), {})
            answers[server.name] = {
                "fingerprint": server.fingerprint,
                "allowed": allowed,
                "summary": server.summary,
                "at": now,
            }
        self._write({"schema_version": CONSENT_VERSION, "projects": projects})

    def forget(self, project: Path, names: Sequence[str]) -> list[str]:
        """Drop the answers about ``names`` in ``project``; returns the ones there were."""
        projects = self._load()
        answers = projects.get(str(project.resolve()), {})
        dropped = [name for name in names if answers.pop(name, None) is not None]
        if dropped:
            self._write({"schema_version": CONSENT_VERSION, "projects": projects})
        return dropped

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".mcp_consent.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, ensure_ascii=False)
            Path(temporary).chmod(0o600)
            Path(temporary).replace(self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


@dataclass(slots=True)
class ProjectServerPolicy:
    """How a run treats project MCP servers: remembered answers first; then ``ask`` (a
    person at a terminal) if given; ``trust_all`` agrees to everything (CI)."""

    home: Path
    ask: Ask | None = None
    trust_all: bool = False
    refused: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_environment(
        cls, home: Path, *, ask: Ask | None = None, trust_all: bool = False
    ) -> ProjectServerPolicy:
        trusted = os.environ.get(TRUST_ENV_VAR, "").strip().lower() in ("1", "true", "yes")
        return cls(home=home, ask=ask, trust_all=trust_all or trusted)


def screen_project_servers(
    config: MCPServersConfig, policy: ProjectServerPolicy
) -> MCPServersConfig:
    """``config`` without the project servers the person has not agreed to; each one left out
    is in ``problems`` with what to do (and in ``policy.refused``)."""
    if policy.trust_all:
        return config
    store = ConsentStore(policy.home)
    pending: list[ProjectServer] = []
    declined: list[ProjectServer] = []
    for server in project_servers(config, home=policy.home):
        answer = store.decision(server)
        if answer is None:
            pending.append(server)
        elif not answer:
            declined.append(server)
    if pending and policy.ask is not None:
        agreed = policy.ask(pending)
        yes = [s for s in pending if s.name in agreed]
        no = [s for s in pending if s.name not in agreed]
        if yes:
            store.record(yes, allowed=True)
        if no:
            store.record(no, allowed=False)
        declined += no
        pending = []
    if not pending and not declined:
        return config
    screened = MCPServersConfig(
        servers=dict(config.servers), problems=dict(config.problems), sources=config.sources
    )
    for server in pending:
        reason = (
            f"project server not approved yet ({server.summary}): approve it with 'subagents "
            f"mcp trust {server.name}', or run with --trust-project-mcp "
            f"({TRUST_ENV_VAR}=1) where nobody can answer"
        )
        _leave_out(screened, server.name, reason, policy)
    for server in declined:
        reason = (
            f"project server declined ({server.summary}): 'subagents mcp trust {server.name}' "
            "approves it"
        )
        _leave_out(screened, server.name, reason, policy)
    return screened


def _leave_out(
    config: MCPServersConfig, name: str, reason: str, policy: ProjectServerPolicy
) -> None:
    config.servers.pop(name, None)
    config.problems[name] = reason
    policy.refused[name] = reason
