"""Checks on an AgentDefinition: name, required text, tools, model, numeric limits.

Validation never raises. It returns a copy whose ``validation_errors`` (the agent cannot run)
and ``warnings`` (it runs, but something is ignored) are recomputed from scratch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from subagents._preview import preview, shorten
from subagents.definitions.model import AgentDefinition
from subagents.models.aliases import DEFAULT_ALIASES, split_context_suffix
from subagents.models.choice import is_known_model
from subagents.tools.names import BUILTIN_TOOL_NAMES, TASK_TOOL_NAME, classify_tool_name
from subagents.tools.specs import entry_tool_name, parse_tool_entry

__all__ = [
    "KNOWN_MODEL_PROVIDERS",
    "MODEL_ALIASES",
    "NAME_PATTERN",
    "check_model",
    "effective_tool_names",
    "normalise_name",
    "validate_definition",
    "validate_in_place",
]

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]*$")
MODEL_ALIASES: frozenset[str] = frozenset({*DEFAULT_ALIASES, "inherit"})
KNOWN_MODEL_PROVIDERS: frozenset[str] = frozenset({"openai", "anthropic", "ollama", "test"})

_SHOWN_CHARS = 60  # of a value quoted in a message
_SEPARATORS = re.compile(r"[_.\s]+")
_PROVIDER_MODEL = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):(\S.*)$")
_KNOWN_TOOLS_HINT = ", ".join((*BUILTIN_TOOL_NAMES, TASK_TOOL_NAME))
_TOOL_BY_LOWER = {name.lower(): name for name in (*BUILTIN_TOOL_NAMES, TASK_TOOL_NAME)}


def _shown(value: object) -> str:
    return preview(value, _SHOWN_CHARS)


def normalise_name(raw: str) -> str:
    """The canonical spelling of an agent name: ``"Code_Reviewer"`` -> ``"code-reviewer"``.

    Lowercase; runs of ``_``, ``.`` and whitespace become one ``-``.
    """
    return _SEPARATORS.sub("-", raw.strip()).lower()


def check_model(
    model: str | None, *, known_aliases: Collection[str] | None = None
) -> tuple[str | None, str | None]:
    """Judge a ``model`` value; returns ``(error, warning)``, either may be ``None``.

    A model is never an error: what is not understood is a warning, and the agent runs on its
    parent's model (see :mod:`subagents.models.choice`).
    """
    if model is None or model in MODEL_ALIASES:
        return None, None
    if known_aliases is not None:
        text, bare = model.strip(), split_context_suffix(model)[0]  # as the run reads it
        if any(name in known_aliases for name in (text, text.lower(), bare, bare.lower())):
            return None, None
    match = _PROVIDER_MODEL.match(model)
    if match:
        provider = match.group(1)
        if provider in KNOWN_MODEL_PROVIDERS:
            return None, None
        known = ", ".join(sorted(KNOWN_MODEL_PROVIDERS))
        return None, (
            f"model {_shown(model)} names provider {_shown(provider)}, which is not "
            f"built in (built in: {known}); it must be configured under "
            f"[providers.{shorten(provider, _SHOWN_CHARS)}] in config.toml"
        )
    if is_known_model(model):
        return None, None
    return None, (
        f"model {_shown(model)} is not recognised, so the agent runs on its parent's model: "
        f"use an alias ({', '.join(DEFAULT_ALIASES)}, optionally with [1m]), 'inherit', "
        "'provider:model' (e.g. 'openai:gpt-4o-mini', 'ollama:llama3.2') or a full model id "
        "(e.g. 'claude-sonnet-5-5', 'gpt-4o'), or map it under [models] in config.toml"
    )


def _mcp_server_of(tool: str) -> str:
    rest = tool[len("mcp__") :]
    return rest.split("__", 1)[0]


def _tool_warning(tool: str, kind: str) -> str:
    if kind == "claude_code_only":
        return f"tool {_shown(tool)} is not available here; it is left out"
    if kind == "mcp":
        server = _mcp_server_of(tool)
        return (
            f"tool {_shown(tool)} needs MCP server {_shown(server)}, which is not configured "
            "(.mcp.json or mcp_servers.yaml); it is left out"
        )
    suggestion = _TOOL_BY_LOWER.get(tool.lower())
    if suggestion is not None:
        return (
            f"tool {_shown(tool)} is not a known tool (did you mean {_shown(suggestion)}?); "
            "it is left out"
        )
    return (
        f"tool {_shown(tool)} is not a known tool; it is left out "
        f"(known: {_KNOWN_TOOLS_HINT}, mcp__SERVER, mcp__SERVER__TOOL)"
    )


def _check_tools(
    d: AgentDefinition,
    usable_servers: Collection[str] | None,
    known_tools: Collection[str],
    errors: list[str],
    warnings: list[str],
) -> list[str]:
    """Warn about unusable tools; return their names."""
    unavailable: list[str] = []
    for entry in d.tools or ():
        if entry in known_tools:
            continue
        tool = _entry_tool(entry, "tools", warnings)
        if tool is None:
            unavailable.append(entry)
            continue
        if tool in known_tools:
            continue
        kind = classify_tool_name(tool)
        if kind in ("builtin", "task"):
            continue
        if kind == "mcp" and (usable_servers is None or _mcp_server_of(tool) in usable_servers):
            continue
        unavailable.append(entry)
        warnings.append(_tool_warning(tool, kind))
    if d.tools and len(unavailable) == len(d.tools):
        errors.append(
            "none of the tools listed in 'tools' is available here: name at least one of "
            f"{_KNOWN_TOOLS_HINT} or a configured MCP server's tools, or remove 'tools' to "
            "inherit every tool"
        )
    for entry in d.disallowed_tools:
        tool = entry if entry in known_tools else _entry_tool(entry, "disallowedTools", warnings)
        if tool is not None and tool not in known_tools and classify_tool_name(tool) == "unknown":
            warnings.append(
                f"disallowedTools names {_shown(tool)}, which is not a known tool; it has no effect"
            )
    return unavailable


def _entry_tool(entry: str, key: str, warnings: list[str]) -> str | None:
    """The canonical tool of an entry such as ``Bash(git push *)``; ``None`` (with a warning)
    when the entry is malformed or its specifier cannot be used."""
    parsed = parse_tool_entry(entry)
    if parsed is None:
        warnings.append(
            f"{key} entry {_shown(entry)} is not of the form Tool or Tool(specifier); "
            "it is left out"
        )
        return None
    from subagents.tools.rules import specifier_problem

    problem = specifier_problem(parsed.tool, parsed.specifier)
    if problem is not None:
        warnings.append(f"{key} entry {_shown(entry)}: {problem}; its specifier has no effect")
    return parsed.tool


def _check_name(
    d: AgentDefinition, errors: list[str], warnings: list[str]
) -> tuple[str, str | None]:
    name, declared = d.name, d.declared_name
    normalised = normalise_name(name)
    if normalised != name:
        declared = declared if declared is not None else name
        name = normalised
    if declared is not None and declared != name:
        warnings.append(
            f"name {_shown(declared)} was normalised to {_shown(name)}; write "
            f"'name: {shorten(name, _SHOWN_CHARS)}' to silence this"
        )
    if not NAME_PATTERN.match(name):
        errors.append(
            f"name {_shown(name)} is not valid: use lowercase letters, digits and '-', "
            "starting with "
            "a letter (e.g. 'code-reviewer')"
        )
    return name, declared


def _prompt_hint(d: AgentDefinition) -> str:
    if d.dialect == "codex-toml":
        return "set 'developer_instructions' to the agent's instructions"
    if d.dialect == "json":
        return "set 'prompt' to the agent's instructions"
    if d.dialect == "markdown":
        return "write the agent's instructions below the closing '---' of the frontmatter"
    return "pass system_prompt= with the agent's instructions"


def validate_definition(
    d: AgentDefinition,
    *,
    known_mcp_servers: Collection[str] | None = None,
    known_model_aliases: Collection[str] | None = None,
    known_tools: Collection[str] = (),
) -> AgentDefinition:
    """Return a copy of ``d`` with ``validation_errors`` and ``warnings`` recomputed.

    ``known_mcp_servers`` (when given) are the MCP servers configured here; tools of other
    servers are then warned about and left out. ``known_model_aliases`` adds aliases defined in
    config (``[models]``) to the built-in ones. ``known_tools`` are tools registered beyond the
    built-ins (your own ``@tool`` functions), which agent files may name.
    """
    return d.model_copy(update=_findings(d, known_mcp_servers, known_model_aliases, known_tools))


def _findings(
    d: AgentDefinition,
    known_mcp_servers: Collection[str] | None,
    known_model_aliases: Collection[str] | None,
    known_tools: Collection[str] = (),
) -> dict[str, Any]:
    errors = list(d.parse_errors)
    warnings = list(d.parse_warnings)
    name, declared = _check_name(d, errors, warnings)
    # A file the reader could not understand at all has no content; its parse error says why,
    # and "description is missing" on top of it would only be noise.
    understood = not d.unreadable
    if understood and not d.description.strip():
        errors.append(
            "description is missing or empty: add a description saying what the agent does "
            "and when to delegate to it"
        )
    if understood and not d.system_prompt.strip():
        errors.append(f"the system prompt is empty: {_prompt_hint(d)}")
    usable_servers: set[str] | None = None
    if known_mcp_servers is not None:
        usable_servers = {*known_mcp_servers, *d.mcp_server_configs}
        for server in d.mcp_servers:
            if server not in usable_servers:
                warnings.append(
                    f"MCP server {_shown(server)} is not configured (.mcp.json or "
                    "mcp_servers.yaml); "
                    "it is left out"
                )
    unavailable = _check_tools(d, usable_servers, known_tools, errors, warnings)
    if d.endpoint is None:
        model_error, model_warning = check_model(d.model, known_aliases=known_model_aliases)
    else:  # the model is whatever name that server gives it
        model_error, model_warning = None, _endpoint_warning(d)
    if model_error:
        errors.append(model_error)
    if model_warning:
        warnings.append(model_warning)
    if d.max_turns is not None and d.max_turns < 1:
        errors.append(f"maxTurns must be a positive whole number, not {_shown(d.max_turns)}")
    for field, value in (
        ("maxBudgetTokens", d.max_budget_tokens),
        ("maxDurationSeconds", d.max_duration_seconds),
    ):
        if value is not None and value < 1:
            errors.append(f"{field} must be a positive whole number, not {_shown(value)}")
    if d.max_budget_usd is not None and not (
        math.isfinite(d.max_budget_usd) and d.max_budget_usd > 0
    ):
        errors.append(f"maxBudgetUsd must be a positive amount in USD, not {d.max_budget_usd}")
    if d.temperature is not None and not (
        math.isfinite(d.temperature) and 0.0 <= d.temperature <= 2.0
    ):
        errors.append(f"temperature must be between 0 and 2, not {d.temperature}")
    for key in d.extra:
        warnings.append(f"unknown key {_shown(key)} is kept but has no effect here")
    return {
        "name": name,
        "declared_name": declared,
        "validation_errors": errors,
        "warnings": warnings,
        "unavailable_tool_names": unavailable,
    }


def _endpoint_warning(d: AgentDefinition) -> str | None:
    if d.model is None or d.model == "inherit":
        return (
            f"endpoint {_shown(d.endpoint)} is ignored without a model: name the model that "
            "server runs in 'llm_config.model' (or 'model')"
        )
    return None


def validate_in_place(d: AgentDefinition) -> AgentDefinition:
    """:func:`validate_definition` for a definition nobody else holds yet (the parsers' drafts):
    fills it in instead of copying it."""
    d.__dict__.update(_findings(d, None, None))
    return d


def _matches(pattern: str, tool: str, server: str | None) -> bool:
    if pattern == tool or pattern == "*":
        return True
    if not pattern.startswith("mcp__"):
        return False
    body = pattern[len("mcp__") :]
    if body.endswith("__*"):
        wanted = body[: -len("__*")]
    elif "__" not in body:
        wanted = body
    else:
        return False
    if server is not None:
        from subagents.mcp.toolset import sanitise_name

        return bool(server) and sanitise_name(server) == sanitise_name(wanted)
    return tool.startswith(f"mcp__{wanted}__")


def effective_tool_names(
    d: AgentDefinition,
    available: Sequence[str],
    *,
    mcp_servers: Mapping[str, str] | None = None,
) -> list[str]:
    """The tools of ``available`` this agent may use, in the order of ``available``.

    ``disallowed_tools`` are removed first, then ``tools`` filters (``None`` = everything).
    Entries with a specifier stand for their tool in ``tools`` (``Bash(git *)`` gives Bash,
    ``Agent(explore)`` gives Task) and remove nothing in ``disallowed_tools`` (they are deny
    rules, see :mod:`subagents.tools.rule_sources`).
    ``mcp__server`` and ``mcp__server__*`` stand for every tool of that server. Tool names
    alone cannot say which server a tool belongs to (``mcp__gh__admin__x`` may be tool
    ``admin__x`` of ``gh`` or tool ``x`` of ``gh__admin``), so callers that know pass
    ``mcp_servers`` (tool name -> server name, as :meth:`ToolRegistry.mcp_servers` gives): a
    tool then matches a server pattern only when it comes from that very server.
    """
    allowed = None if d.tools is None else [entry_tool_name(entry) for entry in d.tools]
    # ``Bash(git push *)`` in disallowedTools is a deny rule for some calls, not the whole tool
    removed = [
        entry_tool_name(entry)
        for entry in d.disallowed_tools
        if (parsed := parse_tool_entry(entry)) is None or parsed.specifier is None
    ]
    result: list[str] = []
    for tool in available:
        server = _server_of(tool, mcp_servers)
        if any(_matches(pattern, tool, server) for pattern in removed):
            continue
        if allowed is None or any(_matches(pattern, tool, server) for pattern in allowed):
            result.append(tool)
    return result


def _server_of(tool: str, mcp_servers: Mapping[str, str] | None) -> str | None:
    """The server of ``tool``: from ``mcp_servers`` when given ("" for a tool that is not an
    MCP tool at all), else ``None`` (unknown: fall back to the name's prefix)."""
    if mcp_servers is None:
        return None
    return mcp_servers.get(tool, "")
