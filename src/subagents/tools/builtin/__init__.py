"""The built-in tools, with Claude Code's names and argument shapes."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from subagents.tools.base import Tool

if TYPE_CHECKING:
    from subagents.tools.web.settings import WebSettings

__all__ = ["builtin_tools"]


def builtin_tools(web: WebSettings | None = None) -> list[Tool]:
    """Read, Write, Edit, Glob, Grep, LS, Bash, MultiEdit, TodoWrite, WebFetch and WebSearch,
    in that order (a fresh list each call); ``web`` is ``[web]`` of config.toml (defaults when
    ``None``).

    Each is a :class:`~subagents.tools.deferred.DeferredTool`: described from the catalogue,
    its module imported when the tool is first used."""
    from subagents.tools.builtin.catalogue import BUILTIN_TOOLS
    from subagents.tools.web.settings import WebSettings

    settings = web if web is not None else WebSettings()
    return [_deferred(entry, settings) for entry in BUILTIN_TOOLS]


def _deferred(entry: dict[str, Any], web: WebSettings) -> Tool:
    from subagents.tools.deferred import DeferredTool

    module, attribute, from_web_settings = (
        entry["module"],
        entry["attribute"],
        entry["from_web_settings"],
    )

    def load() -> Tool:
        made = getattr(import_module(module), attribute)
        tool: Tool = made(web) if from_web_settings else made
        return tool

    timeout = (
        web.timeout + entry["timeout_after_web_timeout"]
        if from_web_settings
        else entry["timeout_seconds"]
    )
    return DeferredTool(
        load,
        name=entry["name"],
        description=entry["description"],
        parameters=entry["parameters"],
        takes_context=entry["takes_context"],
        timeout_seconds=timeout,
        fallback_tools=entry["fallback_tools"],
        read_only=entry["read_only"],
        idempotent=entry["idempotent"],
        needs_approval=entry["needs_approval"],
        writes_paths=entry["writes_paths"],
    )
