"""Tool entries as agent files and permission rules write them: ``Tool`` or ``Tool(specifier)``.

``tools: Read, Agent(explore, plan), Bash(git push *)`` holds three entries: commas inside
parentheses belong to the entry. Kept free of imports beyond the standard library so that agent
validation can read entries without loading any tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DELEGATION_ALIASES",
    "ToolEntry",
    "canonical_tool_name",
    "delegation_limit",
    "entry_tool_name",
    "parse_tool_entry",
    "split_tool_list",
    "subagent_types",
]

# Claude Code now calls its delegation tool ``Agent``; here it is ``Task``. Both are understood.
DELEGATION_ALIASES: dict[str, str] = {"Agent": "Task"}

_ENTRY = re.compile(r"^\s*([^\s(),]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """One entry: the tool as written (``Agent``), its canonical name (``Task``) and the text
    between the parentheses (``None`` for a bare tool)."""

    written: str
    specifier: str | None
    text: str

    @property
    def tool(self) -> str:
        return canonical_tool_name(self.written)


def canonical_tool_name(name: str) -> str:
    """The name this library uses for ``name`` (``Agent`` -> ``Task``)."""
    return DELEGATION_ALIASES.get(name, name)


def split_tool_list(text: str) -> tuple[list[str], list[str]]:
    """Entries of a ``tools`` string, and the problems found (for warnings).

    Entries are separated by commas outside parentheses; a string without such a comma is
    separated by whitespace outside parentheses (``Read Grep Bash(git push *)``). A stray ``)``
    is kept as text; an unclosed ``(`` makes its entry run to the end of the string. Both are
    reported, never raised.
    """
    problems: list[str] = []
    depth = 0
    top_level_comma = False
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")" and depth > 0:
            depth -= 1
        elif char == "," and depth == 0:
            top_level_comma = True
            break

    def is_separator(char: str) -> bool:
        return char == "," if top_level_comma else char.isspace()

    entries: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                problems.append(f"a ')' without its '(' in {text.strip()!r}")
            else:
                depth -= 1
        elif depth == 0 and is_separator(char):
            entries.append("".join(current))
            current = []
            continue
        current.append(char)
    entries.append("".join(current))
    if depth > 0:
        problems.append(
            f"a '(' is never closed in {text.strip()!r}; the entry from it runs to the end"
        )
    return [entry.strip() for entry in entries if entry.strip()], problems


def parse_tool_entry(text: str) -> ToolEntry | None:
    """``Bash(git push *)`` -> ``ToolEntry("Bash", "git push *")``; ``None`` when ``text`` is
    not of the form ``Tool`` or ``Tool(specifier)`` (with balanced parentheses)."""
    match = _ENTRY.match(text)
    if match is None:
        return None
    specifier = match.group(2)
    if specifier is not None and not _balanced(specifier):
        return None
    return ToolEntry(match.group(1), specifier.strip() if specifier is not None else None, text)


def entry_tool_name(text: str) -> str:
    """The canonical tool an entry is about (``Agent(explore)`` -> ``Task``); the text itself
    when it is not a well-formed entry."""
    entry = parse_tool_entry(text)
    return entry.tool if entry is not None else text


def subagent_types(specifier: str) -> list[str]:
    """The agent types of ``Agent(explore, plan)``'s specifier, in order, without repeats."""
    names = [name.strip() for name in re.split(r"[,\s]+", specifier)]
    return list(dict.fromkeys(name for name in names if name))


def delegation_limit(tools: list[str] | None) -> list[str] | None:
    """The agent types a ``tools`` list lets its agent start: those of its ``Agent(...)`` /
    ``Task(...)`` entries, or ``None`` (no limit) when it names the tool bare or not at all."""
    types: list[str] = []
    limited = False
    for text in tools or ():
        entry = parse_tool_entry(text)
        if entry is None or entry.tool != "Task":
            continue
        if entry.specifier is None:
            return None
        limited = True
        types.extend(subagent_types(entry.specifier))
    return list(dict.fromkeys(types)) if limited else None


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0
