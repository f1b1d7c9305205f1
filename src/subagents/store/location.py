"""Where the default store file lives.

The project's ``.subagents/state.db``, the project being the nearest directory at or above
``cwd`` that holds ``.subagents`` or ``.git`` (the walk of
:func:`subagents.config.project_directories`: it stops at the repository root and below the
home directory). Without a project, the user-level ``<home>/.subagents/state.db``, ``<home>``
being ``SUBAGENTS_HOME`` or ``~`` (:func:`subagents.config.resolve_home`).
"""

from __future__ import annotations

from pathlib import Path

from subagents.config import CONFIG_DIR_NAME, project_directories, resolve_home

__all__ = ["STORE_FILE_NAME", "default_store_path", "project_state_directory"]

STORE_FILE_NAME = "state.db"


def project_state_directory(cwd: Path | None = None, *, home: Path | None = None) -> Path | None:
    """The project's ``.subagents`` directory (which may not exist yet), or None."""
    for directory in project_directories(cwd, home=home):
        if (directory / CONFIG_DIR_NAME).is_dir() or (directory / ".git").exists():
            return directory / CONFIG_DIR_NAME
    return None


def default_store_path(cwd: Path | None = None, *, home: Path | None = None) -> Path:
    state_directory = project_state_directory(cwd, home=home)
    if state_directory is None:
        state_directory = resolve_home(home) / CONFIG_DIR_NAME
    return state_directory / STORE_FILE_NAME
