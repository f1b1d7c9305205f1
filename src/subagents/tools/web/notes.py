"""What a person should know before a run about an agent's web tools: told by
``subagents agents show`` so that a missing search setup is not first met mid-run."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from subagents.tools.web.settings import WebSettings

__all__ = ["web_tool_notes"]


def web_tool_notes(
    tools: Iterable[str], settings: WebSettings, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Notes about WebSearch among ``tools`` (the agent's effective tools) with ``settings``:
    not configured, or its key variable unset. Empty when all is in place."""
    if "WebSearch" not in tools:
        return []
    if settings.search_backend is None:
        return [
            "WebSearch has no search backend here: its calls will fail until a person sets "
            '[web] search_backend (e.g. "brave", with the key in BRAVE_API_KEY) in '
            ".subagents/config.toml"
        ]
    variable = settings.search_key_variable()
    env = os.environ if environ is None else environ
    if variable is not None and not env.get(variable, "").strip():
        return [
            f"WebSearch uses {settings.search_backend}, but {variable} is not set: its calls "
            f"will fail until it is (or [web] search_api_key_env names another variable)"
        ]
    return []
