"""Where MCP servers are configured: the files :func:`subagents.mcp.config.load_mcp_servers`
reads, found without loading the config models (a command that only needs the servers'
secrets when there are servers asks first whether any file exists)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["mcp_config_paths"]


def mcp_config_paths(cwd: Path | None = None, *, home: Path | None = None) -> list[Path]:
    """Every file servers are read from, lowest precedence first (many may not exist;
    ``~/.claude.json`` also holds each project's private servers, which come after that
    project's own files)."""
    from subagents.config import CONFIG_DIR_NAME, project_directories, resolve_home

    home_dir = resolve_home(home)
    paths = [home_dir / ".claude.json", home_dir / CONFIG_DIR_NAME / "mcp_servers.yaml"]
    for directory in reversed(project_directories(cwd, home=home_dir)):
        paths.append(directory / ".mcp.json")
        paths.append(directory / CONFIG_DIR_NAME / "mcp_servers.yaml")
    return paths
