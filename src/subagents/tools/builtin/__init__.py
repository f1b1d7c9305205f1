"""The built-in tools, with Claude Code's names and argument shapes."""

from __future__ import annotations

from subagents.tools.base import Tool

__all__ = ["builtin_tools"]


def builtin_tools() -> list[Tool]:
    """Read, Write, Edit, Glob, Grep, LS, Bash, MultiEdit and TodoWrite, in that order (a fresh
    list each call)."""
    from subagents.tools.builtin.bash import bash_tool
    from subagents.tools.builtin.edit import edit_tool
    from subagents.tools.builtin.glob import glob_tool
    from subagents.tools.builtin.grep import grep_tool
    from subagents.tools.builtin.ls import ls_tool
    from subagents.tools.builtin.multiedit import multi_edit_tool
    from subagents.tools.builtin.read import read_tool
    from subagents.tools.builtin.todowrite import todo_write_tool
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
    ]
