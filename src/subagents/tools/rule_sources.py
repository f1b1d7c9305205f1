"""Where permission rules come from: Claude Code's settings files, the command line and agent
files. Every source is read, all merged; a file that cannot be used is a warning naming it.

- ``<project>/.claude/settings.json`` and ``<project>/.claude/settings.local.json``: the
  project is the nearest folder at or above the workspace (up to the repository root) that has
  either file; ``/path`` rules are relative to it.
- ``<home>/.claude/settings.json`` (home as :func:`subagents.config.resolve_home` says).
- ``--allowedTools`` / ``--disallowedTools`` (``subagents run``).
- an agent's ``tools`` (entries with a specifier) and ``disallowedTools``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subagents._preview import preview
from subagents.tools.rules import (
    RULE_BEHAVIORS,
    PermissionRule,
    PermissionRules,
    ToolLimit,
    parse_rule,
    rules_from_texts,
)
from subagents.tools.specs import parse_tool_entry, split_tool_list

if TYPE_CHECKING:
    from subagents.definitions.model import AgentDefinition

__all__ = [
    "LoadedRules",
    "agent_permission_rules",
    "cli_rules",
    "load_settings_rules",
    "restored_rule_arguments",
    "rule_settings",
    "run_permission_rules",
    "settings_files",
    "split_rule_arguments",
]

SETTINGS_FILE_NAMES: tuple[str, ...] = ("settings.json", "settings.local.json")
_MAX_SETTINGS_BYTES = 1_000_000
_log = logging.getLogger(__name__)
_AGENT_LIMITED_TOOLS_SKIPPED = frozenset({"Task"})  # Agent(types) is enforced by delegation


@dataclass(slots=True)
class LoadedRules:
    """Rules read from some sources, and what could not be used (one warning each)."""

    rules: list[PermissionRule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: LoadedRules) -> None:
        self.rules.extend(other.rules)
        self.warnings.extend(other.warnings)


def settings_files(workspace: Path, home: Path) -> list[tuple[Path, Path | None]]:
    """The settings files that exist, with the project root of each (``None`` for the user's
    file): project files first, the user's last."""
    from subagents.config import project_directories

    found: list[tuple[Path, Path | None]] = []
    for directory in project_directories(workspace, home=home):
        candidates = [directory / ".claude" / name for name in SETTINGS_FILE_NAMES]
        existing = [path for path in candidates if path.exists()]
        if existing:
            found.extend((path, directory) for path in existing)
            break
    user = home / ".claude" / "settings.json"
    if user.exists():
        found.append((user, None))
    return found


def load_settings_rules(workspace: Path, home: Path) -> LoadedRules:
    """The ``permissions`` rules of every settings file (see the module docstring)."""
    loaded = LoadedRules()
    for path, project_root in settings_files(workspace, home):
        loaded.extend(_rules_of_file(path, project_root or workspace))
    return loaded


def _rules_of_file(path: Path, project_root: Path) -> LoadedRules:
    from subagents._read_capped import FileTooLargeError, NotARegularFileError, read_capped

    loaded = LoadedRules()
    fix = "fix it to use its permission rules"
    try:
        data: Any = json.loads(read_capped(path, _MAX_SETTINGS_BYTES).decode("utf-8"))
    except FileTooLargeError as error:
        loaded.warnings.append(f"{path} is too large ({error}); its rules are not used - {fix}")
        return loaded
    except (OSError, NotARegularFileError, UnicodeDecodeError) as error:
        loaded.warnings.append(f"{path} cannot be read ({error}); its rules are not used")
        return loaded
    except json.JSONDecodeError as error:
        loaded.warnings.append(
            f"{path} is not valid JSON ({error}); its rules are not used - {fix}"
        )
        return loaded
    except RecursionError:
        loaded.warnings.append(f"{path} is nested too deeply to read; its rules are not used")
        return loaded
    if not isinstance(data, dict):
        loaded.warnings.append(f"{path} is not a JSON object; its rules are not used - {fix}")
        return loaded
    permissions = data.get("permissions")
    if permissions is None:
        return loaded
    if not isinstance(permissions, dict):
        loaded.warnings.append(
            f"{path}: 'permissions' must be an object with allow / ask / deny lists; ignored"
        )
        return loaded
    mode = permissions.get("defaultMode")
    if mode not in (None, "default"):
        loaded.warnings.append(
            f"{path}: permissions.defaultMode {preview(mode, 60)} is not applied here (the "
            "mode is chosen per run); pass "
            + (f"--permission-mode {mode}" if isinstance(mode, str) and len(mode) < 40 else "it")
            + " to use it"
        )
    for behavior in RULE_BEHAVIORS:
        texts = permissions.get(behavior)
        if texts is None:
            continue
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            loaded.warnings.append(
                f"{path}: permissions.{behavior} must be a list of rule strings such as "
                '"Bash(git push *)"; ignored'
            )
            continue
        rules, problems = rules_from_texts(texts, behavior, str(path), project_root=project_root)
        loaded.rules.extend(rules)
        loaded.warnings.extend(problems)
    return loaded


def split_rule_arguments(values: Sequence[str]) -> list[str]:
    """``--allowedTools "Read,Bash(git log *)" --allowedTools Edit`` -> each rule once; commas
    and spaces inside parentheses stay in their rule."""
    texts: list[str] = []
    for value in values:
        texts.extend(split_tool_list(value)[0])
    return list(dict.fromkeys(texts))


def cli_rules(allowed: Sequence[str], disallowed: Sequence[str]) -> LoadedRules:
    """The rules of ``--allowedTools`` / ``--disallowedTools``."""
    loaded = LoadedRules()
    for behavior, values, flag in (
        ("allow", allowed, "--allowedTools"),
        ("deny", disallowed, "--disallowedTools"),
    ):
        rules, problems = rules_from_texts(split_rule_arguments(values), behavior, flag)  # type: ignore[arg-type]
        loaded.rules.extend(rules)
        loaded.warnings.extend(problems)
    return loaded


def rule_settings(allowed: Sequence[str], disallowed: Sequence[str]) -> dict[str, list[str]]:
    """A run's command-line rules as kept in its task's settings (only those it has)."""
    kept: dict[str, list[str]] = {}
    if allowed:
        kept["allowed_tools"] = list(allowed)
    if disallowed:
        kept["disallowed_tools"] = list(disallowed)
    return kept


def restored_rule_arguments(
    settings: dict[str, Any],
    allowed: Sequence[str],
    disallowed: Sequence[str],
    *,
    trusted: bool,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``allowed`` / ``disallowed`` plus the rules a task's settings kept; an untrusted
    (imported) task brings back its deny rules only."""

    def stored(key: str) -> list[str]:
        values = settings.get(key)
        if not isinstance(values, list):
            return []
        return [value for value in values if isinstance(value, str)]

    restored_allowed = [*allowed, *(stored("allowed_tools") if trusted else ())]
    restored_disallowed = [*disallowed, *stored("disallowed_tools")]
    return tuple(dict.fromkeys(restored_allowed)), tuple(dict.fromkeys(restored_disallowed))


def run_permission_rules(
    workspace: Path, allowed: Sequence[str] = (), disallowed: Sequence[str] = ()
) -> tuple[PermissionRules, list[str]]:
    """Every rule of a run (command line first, then the settings files) and the warnings
    about what could not be used, which are also logged."""
    from subagents.config import resolve_home

    loaded = cli_rules(allowed, disallowed)
    loaded.extend(load_settings_rules(workspace, resolve_home()))
    for warning in loaded.warnings:
        _log.warning("permission rules: %s", warning)
    return PermissionRules(loaded.rules), loaded.warnings


def agent_permission_rules(definition: AgentDefinition, *, main: bool) -> PermissionRules:
    """The rules an agent file adds to the session running it.

    ``disallowedTools`` entries with a specifier are deny rules. ``tools`` entries with a
    specifier limit that tool to the calls they match (unless the tool is also listed bare);
    for the main agent of a run they are also allow rules. A subagent's own entries never
    pre-approve anything: a subagent is never more permissive than the session that started it.
    """
    source = f"agent '{definition.name}'"
    rules: list[PermissionRule] = []
    for text in definition.disallowed_tools:
        entry = parse_tool_entry(text)
        if entry is None or entry.specifier is None:
            continue
        rule, _problem = parse_rule(text, "deny", f"{source} disallowedTools")
        if rule is not None:
            rules.append(rule)
    limited: dict[str, list[PermissionRule]] = {}
    bare: set[str] = set()
    for text in definition.tools or ():
        entry = parse_tool_entry(text)
        if entry is None:
            continue
        if entry.specifier is None:
            bare.add(entry.tool)
            continue
        rule, _problem = parse_rule(text, "allow", f"{source} tools")
        if rule is not None and rule.tool not in _AGENT_LIMITED_TOOLS_SKIPPED:
            limited.setdefault(rule.tool, []).append(rule)
    limits = [
        ToolLimit(tool, tuple(tool_rules), f"{source} tools")
        for tool, tool_rules in limited.items()
        if tool not in bare
    ]
    if main:
        rules.extend(rule for tool_rules in limited.values() for rule in tool_rules)
    return PermissionRules(rules, limits)
