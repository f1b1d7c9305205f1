"""Turn a mapping read from any dialect (frontmatter, TOML, JSON) into an AgentDefinition.

Every spelling users write (Claude Code's camelCase, snake_case, Gemini's ``max_turns``) maps
to one field. Values of the wrong type become ``parse_errors`` with the key as written; keys we
do not know are kept verbatim in ``extra``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast, get_args

from subagents._preview import preview, shorten
from subagents.definitions.framework import from_framework_shape
from subagents.definitions.model import (
    EFFORT_LEVELS,
    AgentDefinition,
    Dialect,
    Effort,
    Isolation,
    MemoryScope,
    PermissionMode,
    Scope,
)
from subagents.tools.specs import split_tool_list

__all__ = ["BODY_KEYS", "FIELD_SPELLINGS", "definition_from_mapping"]

# spelling as written -> field name
FIELD_SPELLINGS: dict[str, str] = {
    "name": "name",
    "description": "description",
    "tools": "tools",
    "disallowedTools": "disallowed_tools",
    "disallowed_tools": "disallowed_tools",
    "disallowed-tools": "disallowed_tools",
    "model": "model",
    "maxTurns": "max_turns",
    "max_turns": "max_turns",
    "max-turns": "max_turns",
    "maxBudgetTokens": "max_budget_tokens",
    "max_budget_tokens": "max_budget_tokens",
    "max-budget-tokens": "max_budget_tokens",
    "maxBudgetUsd": "max_budget_usd",
    "max_budget_usd": "max_budget_usd",
    "max-budget-usd": "max_budget_usd",
    "outputSchema": "output_schema",
    "output_schema": "output_schema",
    "output-schema": "output_schema",
    "maxDurationSeconds": "max_duration_seconds",
    "max_duration_seconds": "max_duration_seconds",
    "max-duration-seconds": "max_duration_seconds",
    "permissionMode": "permission_mode",
    "permission_mode": "permission_mode",
    "mcpServers": "mcp_servers",
    "mcp_servers": "mcp_servers",
    "color": "color",
    "background": "background",
    "temperature": "temperature",
    "skills": "skills",
    "memory": "memory",
    "isolation": "isolation",
    "hooks": "hooks",
    "effort": "effort",
    "initialPrompt": "initial_prompt",
    "initial_prompt": "initial_prompt",
    "omitClaudeMd": "omit_claude_md",
    "omit_claude_md": "omit_claude_md",
    # the Python framework shape (see subagents.definitions.framework)
    "max_iterations": "max_turns",
    "endpoint": "endpoint",
    "api_key_env": "api_key_env",
    "llm_config.model": "model",
    "llm_config.temperature": "temperature",
    "llm_config.endpoint": "endpoint",
    "llm_config.api_key_env": "api_key_env",
}
# Where the system prompt lives when a dialect has no Markdown body.
BODY_KEYS: dict[Dialect, tuple[str, ...]] = {
    "codex-toml": ("developer_instructions",),
    "json": ("prompt", "system_prompt", "systemPrompt"),
}
_PERMISSION_MODES: dict[str, PermissionMode] = {
    mode.lower(): mode for mode in get_args(PermissionMode)
}
# Budget of values copied out of ``extra`` / MCP configs: YAML aliases can make a small file
# expand into a huge (or cyclic) structure.
_MAX_COPIED_VALUES = 10_000
_MAX_COPIED_DEPTH = 40
_MAX_NUMBER_DIGITS = 100
_SHOWN_CHARS = 60  # of a value quoted in a message


def _shown(value: object) -> str:
    """``value`` quoted for a message, at most a line long however large it is."""
    return preview(value, _SHOWN_CHARS)


class _Reader:
    """Collects converted values and the problems found on the way."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.spelling: dict[str, str] = {}
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.budget = _MAX_COPIED_VALUES
        self.truncated = False

    def error(self, key: str, expected: str, value: object) -> None:
        self.errors.append(f"{_shown(key)} must be {expected}, not {_shown(value)}")

    def copy_value(self, value: object, depth: int = 0) -> Any:
        """A JSON-compatible copy of ``value`` (dates as ISO text, other objects as text)."""
        self.budget -= 1
        if self.budget < 0 or depth > _MAX_COPIED_DEPTH:
            if not self.truncated:
                self.truncated = True
                self.warnings.append(
                    "a value in this file is too large, too deeply nested or refers to itself "
                    "(YAML aliases); it was cut short - simplify it"
                )
            return "<omitted>"
        if value is None or isinstance(value, str | bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, Mapping):
            return {str(k): self.copy_value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.copy_value(v, depth + 1) for v in value]
        if isinstance(value, dt.date | dt.time):
            return value.isoformat()
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        return str(value)


def _text(r: _Reader, key: str, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float | dt.date):
        return str(value)
    r.error(key, "text", value)
    return None


def _name(r: _Reader, key: str, value: object) -> str | None:
    if isinstance(value, str):
        return value
    r.errors.append(f"{_shown(key)} must be text (e.g. 'name: code-reviewer'), not {_shown(value)}")
    return None


def _split_names(text: str, r: _Reader | None = None, key: str = "") -> list[str]:
    """Entries separated by commas (or whitespace) outside parentheses, so that
    ``Agent(explore, plan)`` stays one entry; unbalanced parentheses are a warning."""
    names, problems = split_tool_list(text)
    if r is not None:
        r.warnings.extend(f"{_shown(key)}: {problem}" for problem in problems)
    return names


def _name_list(r: _Reader, key: str, value: object, what: str = "tool names") -> list[str] | None:
    """A list of names from a comma/space string or a list of strings."""
    if value is None:
        return None
    if isinstance(value, str):
        names = _split_names(value, r, key)
    elif isinstance(value, list):
        names = []
        for item in value:
            if not isinstance(item, str):
                r.error(key, f"a list of {what}", value)
                return None
            if item.strip():
                names.append(item.strip())
    else:
        r.error(key, f"a comma-separated string or a list of {what}", value)
        return None
    return list(dict.fromkeys(names))


def _tools(r: _Reader, key: str, value: object) -> list[str] | None:
    """``None`` inherits every tool of the parent; an empty value (``''`` or ``[]``) gives
    none, whichever way it is spelled."""
    if value is None:
        r.warnings.append(
            f"{key!r} has no value, so the agent inherits every tool of its parent; write "
            f"'{key}: []' for no tools, or remove the key"
        )
        return None
    names = _name_list(r, key, value)
    if names is not None and "*" in names:
        return None  # "*" means every tool, as when the key is absent
    if names == []:
        r.warnings.append(
            f"{key!r} is empty, so the agent gets no tools; remove the key to give it every "
            "tool of its parent"
        )
    return names


def _disallowed(r: _Reader, key: str, value: object) -> list[str] | None:
    return _name_list(r, key, value) or []


def _model(r: _Reader, key: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    r.error(key, "text such as 'sonnet', 'inherit' or 'openai:gpt-4o'", value)
    return None


def _whole_number(r: _Reader, key: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        digits = text.removeprefix("-")
        if digits.isdecimal() and digits.isascii() and len(digits) <= _MAX_NUMBER_DIGITS:
            return int(text)
    r.error(key, "a positive whole number", value)
    return None


def _temperature(r: _Reader, key: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            return float(value)
        except (ValueError, OverflowError):  # not a number; an integer too large for a float
            pass
    r.error(key, "a number between 0 and 2", value)
    return None


def _amount(r: _Reader, key: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            return float(str(value).strip().removeprefix("$"))
        except (ValueError, OverflowError):
            pass
    r.error(key, "an amount in USD, such as 0.50", value)
    return None


def _flag(r: _Reader, key: str, value: object) -> bool | None:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    r.error(key, "true or false", value)
    return None


def _skills(r: _Reader, key: str, value: object) -> list[str] | None:
    return _name_list(r, key, value, "skill names")


def _choice(r: _Reader, key: str, value: object, choices: tuple[str, ...]) -> str | None:
    """One of ``choices`` (case-insensitive); anything else is a warning and left unset."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in choices:
        return value.strip().lower()
    r.warnings.append(
        f"{_shown(key)} value {_shown(value)} is not supported here (supported: "
        f"{', '.join(choices)}); it is ignored"
    )
    return None


def _memory(r: _Reader, key: str, value: object) -> MemoryScope | None:
    return cast("MemoryScope | None", _choice(r, key, value, ("user", "project", "local")))


def _isolation(r: _Reader, key: str, value: object) -> Isolation | None:
    return cast("Isolation | None", _choice(r, key, value, ("worktree",)))


def _effort(r: _Reader, key: str, value: object) -> Effort | None:
    return cast("Effort | None", _choice(r, key, value, EFFORT_LEVELS))


def _hooks(r: _Reader, key: str, value: object) -> dict[str, list[dict[str, Any]]] | None:
    """Claude Code's hooks shape: event -> list of ``{matcher, hooks: [{type, command}]}``.

    Entries of another shape are left out with a warning; the rest is kept as written.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        r.error(key, "a mapping of hook events to lists of hooks", value)
        return None
    copied = r.copy_value(value)
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, entries in copied.items() if isinstance(copied, dict) else ():
        if not isinstance(entries, list):
            r.warnings.append(f"{_shown(key)}.{shorten(event)} is not a list of hooks; ignored")
            continue
        kept = [entry for entry in entries if _hook_entry_ok(entry)]
        if len(kept) < len(entries):
            r.warnings.append(
                f"{_shown(key)}.{shorten(event)}: {len(entries) - len(kept)} entries are not "
                "{matcher, hooks: [{type: command, command: ...}]} and are ignored"
            )
        if kept:
            hooks[event] = kept
    from subagents.definitions.hooks import agent_hook_problems

    r.warnings.extend(agent_hook_problems(hooks))
    return hooks


def _hook_entry_ok(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    matcher = entry.get("matcher")
    commands = entry.get("hooks")
    if matcher is not None and not isinstance(matcher, str):
        return False
    if not isinstance(commands, list) or not commands:
        return False
    return all(
        isinstance(command, dict)
        and command.get("type", "command") == "command"
        and isinstance(command.get("command"), str)
        and command["command"].strip()
        for command in commands
    )


def _permission_mode(r: _Reader, key: str, value: object) -> PermissionMode | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in _PERMISSION_MODES:
        return _PERMISSION_MODES[value.strip().lower()]
    known = ", ".join(get_args(PermissionMode))
    r.warnings.append(
        f"{_shown(key)} value {_shown(value)} is not supported here (supported: {known}); "
        "the default permission mode is used"
    )
    return None


def _output_schema(r: _Reader, key: str, value: object) -> dict[str, Any] | None:
    """A JSON Schema, written as YAML or as JSON text; one JSON Schema cannot read is an
    error that says where it is wrong."""
    if value is None:
        return None
    if isinstance(value, str):
        import json

        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            r.error(key, "a JSON Schema, as YAML or as JSON text", value)
            return None
    if not isinstance(value, Mapping):
        r.error(key, "a JSON Schema (a mapping such as {type: object, properties: ...})", value)
        return None
    schema = r.copy_value(value)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        where = "/".join(str(part) for part in error.path) or "its top"
        r.errors.append(f"{_shown(key)} is not a valid JSON Schema at {where}: {error.message}")
        return None
    return dict(schema)


def _mcp_servers(r: _Reader, key: str, value: object) -> tuple[list[str], dict[str, Any]] | None:
    """Server names in order, plus the configs of servers defined inline."""
    names: list[str] = []
    configs: dict[str, Any] = {}

    def add(name: object, config: object) -> bool:
        if not isinstance(name, str) or not name.strip():
            r.error(key, "server names (text)", name)
            return False
        if config is not None and not isinstance(config, Mapping):
            r.error(
                f"{key}.{shorten(name)}", "a mapping of server settings (command, url, ...)", config
            )
            return False
        names.append(name)
        if config is not None:
            copied = r.copy_value(config)
            if not isinstance(copied, dict):
                r.error(
                    f"{key}.{shorten(name)}", "a mapping of server settings of sensible size", "..."
                )
                return False
            configs[name] = copied
        return True

    if value is None:
        return [], {}
    if isinstance(value, str):
        return _split_names(value), {}
    if isinstance(value, Mapping):
        items: list[tuple[object, object]] = list(value.items())
    elif isinstance(value, list):
        items = []
        for item in value:
            if isinstance(item, Mapping):
                items.extend(item.items())
            else:
                items.append((item, None))
    else:
        r.error(key, "a list of server names or a mapping of server configs", value)
        return None
    for name, config in items:
        if not add(name, config):
            return None
    return list(dict.fromkeys(names)), configs


def _endpoint(r: _Reader, key: str, value: object) -> str | None:
    """The base URL of an OpenAI-compatible server; anything else is a warning."""
    if value is None:
        return None
    if isinstance(value, str) and _URL.fullmatch(value.strip()):
        return value.strip()
    r.warnings.append(
        f"{_shown(key)} value {_shown(value)} is not an http(s) URL such as "
        "'http://localhost:11434/v1'; it is ignored"
    )
    return None


def _env_name(r: _Reader, key: str, value: object) -> str | None:
    """The name of an environment variable (never its value)."""
    if value is None:
        return None
    if isinstance(value, str) and _ENV_NAME.fullmatch(value.strip()):
        return value.strip()
    r.warnings.append(
        f"{_shown(key)} must name an environment variable (e.g. 'MY_LLM_KEY'), not "
        f"{_shown(value)}; it is ignored"
    )
    return None


_URL = re.compile(r"https?://[^\s/?#@]+(/\S*)?", re.IGNORECASE)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")

_Converter = Callable[[_Reader, str, Any], Any]
_CONVERTERS: dict[str, _Converter] = {
    "name": _name,
    "description": _text,
    "tools": _tools,
    "disallowed_tools": _disallowed,
    "model": _model,
    "max_turns": _whole_number,
    "max_budget_tokens": _whole_number,
    "max_budget_usd": _amount,
    "max_duration_seconds": _whole_number,
    "permission_mode": _permission_mode,
    "color": _text,
    "background": _flag,
    "temperature": _temperature,
    "skills": _skills,
    "memory": _memory,
    "isolation": _isolation,
    "hooks": _hooks,
    "effort": _effort,
    "output_schema": _output_schema,
    "initial_prompt": _text,
    "omit_claude_md": _flag,
    "endpoint": _endpoint,
    "api_key_env": _env_name,
}


def definition_from_mapping(
    data: Mapping[Any, Any],
    *,
    dialect: Dialect,
    scope: Scope,
    source_path: Path | None,
    body: str | None = None,
    default_name: str | None = None,
    errors: list[str] | None = None,
    warnings: list[str] | None = None,
    unreadable: bool = False,
) -> AgentDefinition:
    """Build an (unvalidated) definition from a mapping of keys as written.

    ``body`` is the Markdown body; other dialects carry the prompt under one of
    :data:`BODY_KEYS`. ``default_name`` is used when ``name`` is absent (JSON files default to
    their stem); without it a missing name is an error. ``unreadable`` says the source could
    not be understood at all (``errors`` say why).
    """
    r = _Reader()
    r.errors.extend(errors or ())
    r.warnings.extend(warnings or ())
    if dialect == "json":
        data, framework_warnings = from_framework_shape(data)
        r.warnings.extend(framework_warnings)
    body_keys = BODY_KEYS.get(dialect, ())
    extra: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key)
        if key in body_keys:
            if body is None:
                body = _text(r, key, value)
            else:
                r.warnings.append(f"{_shown(key)} is ignored: the prompt was already given")
            continue
        field = FIELD_SPELLINGS.get(key)
        if field is None:
            extra[key] = r.copy_value(value)
            continue
        if field in r.spelling:
            r.warnings.append(
                f"both {_shown(r.spelling[field])} and {_shown(key)} are set; {_shown(key)} is "
                "ignored"
            )
            continue
        r.spelling[field] = key
        if field == "mcp_servers":
            servers = _mcp_servers(r, key, value)
            if servers is not None:
                r.values["mcp_servers"], r.values["mcp_server_configs"] = servers
            continue
        converted = _CONVERTERS[field](r, key, value)
        if converted is not None:
            r.values[field] = converted

    name = r.values.pop("name", None)
    if name is None:
        if "name" not in r.spelling:
            if default_name is None:
                r.errors.append(_missing_name_message(dialect))
            name = default_name
        name = name if name is not None else _fallback_name(source_path)
    if body is None and dialect in BODY_KEYS:
        body = ""
    # Pydantic validates a model given every field about twice as fast as one relying on
    # defaults; validation builds new lists and dicts, so the shared defaults are never mutated.
    fields = dict(_DEFAULTS)
    fields.update(r.values)
    fields.update(
        name=name,
        description=r.values.get("description") or "",
        system_prompt=body or "",
        scope=scope,
        source_path=source_path,
        dialect=dialect,
        extra=extra,
        parse_errors=r.errors,
        parse_warnings=r.warnings,
        unreadable=unreadable,
    )
    return AgentDefinition.model_validate(fields)


_DEFAULTS: dict[str, Any] = {
    name: info.default
    for name, info in AgentDefinition.model_fields.items()
    if not info.is_required()
}


def _missing_name_message(dialect: Dialect) -> str:
    if dialect == "codex-toml":
        return "'name' is missing: add name = \"my-agent\" (lowercase letters, digits and '-')"
    return "'name' is missing: add 'name: my-agent' to the frontmatter (lowercase, digits, '-')"


def _fallback_name(source_path: Path | None) -> str:
    """A name to identify a definition that has none (it is invalid anyway)."""
    if source_path is None:
        return "unnamed"
    return source_path.stem or "unnamed"
