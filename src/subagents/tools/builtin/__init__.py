"""The built-in tools, with Claude Code's names and argument shapes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from subagents.tools.base import Tool

if TYPE_CHECKING:
    from subagents.tools.web.settings import WebSettings

__all__ = ["builtin_tools"]


def builtin_tools(web: WebSettings | None = None) -> list[Tool]:
    """Read, Write, Edit, Glob, Grep, LS, Bash, MultiEdit, TodoWrite, WebFetch and WebSearch,
    in that order (a fresh list each call); ``web`` is ``[web]`` of config.toml (defaults when
    ``None``)."""
    from subagents.tools.builtin.bash import bash_tool
    from subagents.tools.builtin.edit import edit_tool
    from subagents.tools.builtin.glob import glob_tool
    from subagents.tools.builtin.grep import grep_tool
    from subagents.tools.builtin.ls import ls_tool
    from subagents.tools.builtin.multiedit import multi_edit_tool
    from subagents.tools.builtin.read import read_tool
    from subagents.tools.builtin.todowrite import todo_write_tool
    from subagents.tools.builtin.webfetch import webfetch_tool
    from subagents.tools.builtin.websearch import websearch_tool
    from subagents.tools.builtin.write import write_tool

    return [
        read_tool,
        write_tool,
        edit_tool,
        glob_tool,
        grep_tool,
        ls_tool,
        bash_tool,
        multi_edit_tool,
        todo_write_tool,
        webfetch_tool(web),
        websearch_tool(web),
    ]
