"""Validation of definitions: names, required text, tools, models, limits; effective tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from subagents.definitions import (
    NAME_PATTERN,
    SCOPE_RANK,
    AgentDefinition,
    effective_tool_names,
    normalise_name,
    parse_agent_text,
    validate_definition,
)


def agent(**fields: object) -> AgentDefinition:
    base: dict[str, object] = {"name": "a", "description": "d", "system_prompt": "p"}
    base.update(fields)
    return validate_definition(AgentDefinition(**base))


def test_direct_construction_defaults() -> None:
    d = AgentDefinition(name="helper", description="d", system_prompt="p")
    assert d.status == "active"
    assert (d.scope, d.dialect, d.priority, d.schema_version) == ("explicit", "python", 0, 1)
    assert d.tools is None and d.disallowed_tools == [] and d.extra == {}
    other = AgentDefinition(name="other", description="d", system_prompt="p")
    d.disallowed_tools.append("Bash")
    assert other.disallowed_tools == []  # defaults are not shared between instances


def test_status_precedence() -> None:
    bad = agent(description="")
    assert bad.status == "invalid"
    assert bad.model_copy(update={"disabled": True}).status == "disabled"
    assert agent().status == "active"


def test_scope_rank_orders_scopes() -> None:
    assert sorted(SCOPE_RANK, key=SCOPE_RANK.__getitem__) == [
        "builtin",
        "user",
        "project",
        "explicit",
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Code_Reviewer", "code-reviewer"),
        ("Explore", "explore"),
        ("Plan", "plan"),
        ("general-purpose", "general-purpose"),
        ("  My  Agent ", "my-agent"),
        ("dotnet-4.8-expert", "dotnet-4-8-expert"),
        ("a__b", "a-b"),
    ],
)
def test_normalise_name(raw: str, expected: str) -> None:
    assert normalise_name(raw) == expected
    assert normalise_name(expected) == expected


def test_name_normalised_with_a_warning() -> None:
    d = agent(name="Code_Reviewer")
    assert (d.name, d.declared_name, d.status) == ("code-reviewer", "Code_Reviewer", "active")
    assert d.warnings == [
        "name 'Code_Reviewer' was normalised to 'code-reviewer'; write 'name: code-reviewer' "
        "to silence this"
    ]


@pytest.mark.parametrize("raw", ["1password", "-lead", "café", "a/b", ""])
def test_names_still_invalid_after_normalising(raw: str) -> None:
    d = agent(name=raw)
    assert d.status == "invalid"
    assert not NAME_PATTERN.match(d.name)
    assert any("is not valid" in e and "lowercase" in e for e in d.validation_errors)


def test_validation_is_idempotent() -> None:
    d = parse_agent_text(
        "---\nname: Code_Reviewer\ndescription: Does: x\ntools: Read, NotebookEdit\nfoo: 1\n"
        "model: sonnet\n---\nbody\n",
        dialect="markdown",
    )
    again = validate_definition(validate_definition(d))
    assert again.warnings == d.warnings
    assert again.validation_errors == d.validation_errors
    assert (again.name, again.declared_name) == ("code-reviewer", "Code_Reviewer")
    assert len(d.warnings) == 4  # lenient YAML, normalised name, NotebookEdit, unknown key


@pytest.mark.parametrize(
    "model",
    [
        None,
        "inherit",
        "haiku",
        "sonnet",
        "opus",
        "openai:gpt-4o-mini",
        "anthropic:claude-sonnet-4-5",
        "ollama:llama3.2:3b",
        "test:echo",
        "claude-opus-4-1-20250805",
        "gpt-4o",
        "o1",
        "o3-mini",
        "o4-mini",
    ],
)
def test_accepted_models(model: str | None) -> None:
    d = agent(model=model)
    assert d.status == "active" and d.warnings == []


def test_unknown_provider_is_a_warning() -> None:
    d = agent(model="groq:llama-3.1-70b")
    assert d.status == "active"
    assert any("provider 'groq'" in w and "[providers.groq]" in w for w in d.warnings)


@pytest.mark.parametrize("model", ["gemini-2.5-pro", "openai/gpt-4o", "x:", "default"])
def test_unknown_models_are_a_warning_saying_which_forms_are_accepted(model: str) -> None:
    d = agent(model=model)
    assert d.status == "active" and d.validation_errors == []
    assert any(
        "provider:model" in w and "inherit" in w and "parent's model" in w and "[models]" in w
        for w in d.warnings
    )


@pytest.mark.parametrize(
    "model", ["fable", "best", "opusplan", "Sonnet", "sonnet[1m]", "opus[1M]", "claude-x-9[1m]"]
)
def test_every_claude_code_alias_is_accepted_without_a_warning(model: str) -> None:
    d = agent(model=model)
    assert d.status == "active" and d.warnings == []


def test_config_model_aliases_are_accepted_when_known() -> None:
    d = AgentDefinition(name="a", description="d", system_prompt="p", model="fast")
    assert validate_definition(d).status == "active"
    assert validate_definition(d).warnings != []
    known = validate_definition(d, known_model_aliases=["fast"])
    assert known.status == "active" and known.warnings == []
    spelled = d.model_copy(update={"model": "Fast[1m]"})  # resolves like the run resolves it
    assert validate_definition(spelled, known_model_aliases=["fast"]).warnings == []


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"description": "   "}, "description is missing or empty"),
        ({"system_prompt": "\n\n"}, "system prompt is empty"),
        ({"max_turns": 0}, "maxTurns must be a positive whole number"),
        ({"temperature": -0.1}, "temperature must be between 0 and 2"),
        ({"temperature": float("nan")}, "temperature must be between 0 and 2"),
    ],
)
def test_field_errors(fields: dict[str, object], fragment: str) -> None:
    d = agent(**fields)
    assert d.status == "invalid"
    assert any(fragment in e for e in d.validation_errors), d.validation_errors


def test_unknown_tools_are_warnings_and_left_out() -> None:
    d = agent(
        tools=["Read", "NotebookEdit", "computer-use", "chrome-mcp", "subagent-catalog:search"]
    )
    assert d.status == "active"
    assert d.unavailable_tools == [
        "NotebookEdit",
        "computer-use",
        "chrome-mcp",
        "subagent-catalog:search",
    ]
    assert "tool 'NotebookEdit' is not available here; it is left out" in d.warnings
    assert sum("is not a known tool" in w for w in d.warnings) == 3


def test_misspelt_tool_gets_a_suggestion() -> None:
    d = agent(tools=["read", "Grep"])
    assert any("did you mean 'Read'" in w for w in d.warnings)


def test_nothing_usable_left_is_invalid() -> None:
    d = agent(tools=["NotebookEdit", "NotebookRead"])
    assert d.status == "invalid"
    assert any("none of the tools" in e and "remove 'tools'" in e for e in d.validation_errors)


def test_an_explicitly_empty_tool_list_is_valid() -> None:
    assert agent(tools=[]).status == "active"


def test_mcp_tools_judged_against_configured_servers() -> None:
    d = AgentDefinition(
        name="a",
        description="d",
        system_prompt="p",
        tools=["Read", "mcp__github__create_issue", "mcp__sentry", "mcp__local__*"],
        mcp_servers=["github", "local"],
        mcp_server_configs={"local": {"command": "python"}},
    )
    assert validate_definition(d).unavailable_tools == []  # servers unknown: not judged
    checked = validate_definition(d, known_mcp_servers={"github"})
    assert checked.status == "active"
    assert checked.unavailable_tools == ["mcp__sentry"]
    assert any("MCP server 'sentry'" in w for w in checked.warnings)
    only_mcp = validate_definition(
        d.model_copy(update={"tools": ["mcp__x__y"]}), known_mcp_servers=[]
    )
    assert only_mcp.status == "invalid"


def test_unconfigured_mcp_server_names_are_warned_about() -> None:
    d = AgentDefinition(name="a", description="d", system_prompt="p", mcp_servers=["nowhere"])
    checked = validate_definition(d, known_mcp_servers=["github"])
    assert checked.status == "active"
    assert any("MCP server 'nowhere' is not configured" in w for w in checked.warnings)


def test_unknown_disallowed_tool_is_a_warning() -> None:
    d = agent(disallowed_tools=["Bash", "Bsah"])
    assert d.status == "active"
    assert d.warnings == [
        "disallowedTools names 'Bsah', which is not a known tool; it has no effect"
    ]


AVAILABLE = [
    "Read",
    "Write",
    "Bash",
    "Task",
    "mcp__github__create_issue",
    "mcp__github__list_issues",
    "mcp__githubx__other",
    "mcp__docs__search",
]


@pytest.mark.parametrize(
    ("tools", "disallowed", "expected"),
    [
        (None, [], AVAILABLE),
        (None, ["Bash", "Task"], [t for t in AVAILABLE if t not in ("Bash", "Task")]),
        (["Write", "Read"], [], ["Read", "Write"]),
        (["Read", "WebFetch"], [], ["Read"]),
        (["mcp__github"], [], ["mcp__github__create_issue", "mcp__github__list_issues"]),
        (["mcp__github__*"], [], ["mcp__github__create_issue", "mcp__github__list_issues"]),
        (["mcp__github__list_issues"], [], ["mcp__github__list_issues"]),
        (
            None,
            ["mcp__github"],
            ["Read", "Write", "Bash", "Task", "mcp__githubx__other", "mcp__docs__search"],
        ),
        (["Read", "Bash"], ["Bash"], ["Read"]),
        (["mcp__github__*"], ["mcp__github__create_issue"], ["mcp__github__list_issues"]),
        ([], [], []),
        (None, ["*"], []),
    ],
)
def test_effective_tool_names(
    tools: list[str] | None, disallowed: list[str], expected: list[str]
) -> None:
    d = AgentDefinition(
        name="a", description="d", system_prompt="p", tools=tools, disallowed_tools=disallowed
    )
    assert effective_tool_names(d, AVAILABLE) == expected


def test_location_names_the_source() -> None:
    d = AgentDefinition(name="a", description="d", system_prompt="p", source_path=Path("x/a.md"))
    assert d.location == str(Path("x/a.md"))
    assert AgentDefinition(name="a", description="d", system_prompt="p").location == "<explicit>"
