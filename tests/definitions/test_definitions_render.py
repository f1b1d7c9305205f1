"""Writing definitions back as Markdown, the new-agent template, the schema, the built-ins."""

from __future__ import annotations

from pathlib import Path

from subagents.definitions import (
    AgentDefinition,
    builtin_definitions,
    frontmatter_json_schema,
    new_agent_template,
    normalise_name,
    parse_agent_file,
    parse_agent_text,
    render_markdown,
)
from subagents.tools.names import READ_ONLY_TOOL_NAMES

USER_FACING = (
    "name",
    "description",
    "system_prompt",
    "tools",
    "disallowed_tools",
    "model",
    "max_turns",
    "permission_mode",
    "mcp_servers",
    "mcp_server_configs",
    "color",
    "background",
    "temperature",
    "extra",
)


def user_facing(d: AgentDefinition) -> dict[str, object]:
    return {field: getattr(d, field) for field in USER_FACING}


def round_trip(d: AgentDefinition) -> AgentDefinition:
    return parse_agent_text(render_markdown(d), dialect="markdown")


def test_round_trip_of_every_field() -> None:
    d = AgentDefinition(
        name="full",
        description='Says: "hello" - then # stops',
        system_prompt="Line one.\n\n---\n\n  indented line\nlast",
        tools=["Read", "Bash", "mcp__docs__*"],
        disallowed_tools=["Write"],
        model="openai:gpt-4o-mini",
        max_turns=12,
        permission_mode="plan",
        mcp_servers=["github", "docs"],
        mcp_server_configs={"docs": {"url": "http://127.0.0.1:9/mcp", "headers": {"a": "b"}}},
        color="green",
        background=True,
        temperature=0.7,
        extra={"emoji": "🦊", "nested": {"list": [1, 2.5, None, True]}},
    )
    back = round_trip(d)
    assert user_facing(back) == user_facing(d)
    assert back.status == "active"


def test_round_trip_keeps_tool_names_that_a_comma_string_would_break() -> None:
    d = AgentDefinition(
        name="a", description="d", system_prompt="p", tools=["Bash(git diff:*)", "Read"]
    )
    assert round_trip(d).tools == d.tools


def test_round_trip_of_an_empty_tool_list() -> None:
    d = AgentDefinition(name="a", description="d", system_prompt="p", tools=[])
    assert round_trip(d).tools == []


def test_rendered_file_uses_claude_code_spellings() -> None:
    d = AgentDefinition(
        name="a",
        description="d",
        system_prompt="p",
        tools=["Read", "Grep"],
        disallowed_tools=["Bash"],
        max_turns=3,
        permission_mode="acceptEdits",
        mcp_servers=["github"],
    )
    text = render_markdown(d)
    assert text.startswith("---\nname: a\ndescription: d\ntools: Read, Grep\n")
    for spelling in ("disallowedTools: Bash", "maxTurns: 3", "permissionMode: acceptEdits"):
        assert spelling in text
    assert "mcpServers:\n- github\n" in text
    assert text.endswith("---\n\np\n")


def test_round_trip_of_corpus_files(corpus_dir: Path) -> None:
    for path in sorted(corpus_dir.rglob("*.md")):
        d = parse_agent_file(path)
        back = round_trip(d)
        assert user_facing(back) == user_facing(d), path
        # Rewriting repairs what the lenient reader had to work around.
        assert not any("not valid YAML" in w for w in back.warnings)


def test_new_agent_template_parses_as_active() -> None:
    for name in ("code-reviewer", "Code_Reviewer", "yes", "null"):
        d = parse_agent_text(new_agent_template(name), dialect="markdown")
        assert d.status == "active", (name, d.validation_errors)
        assert d.name == normalise_name(name)
        assert d.warnings == []
        assert d.tools is None


def test_new_agent_template_documents_the_optional_keys() -> None:
    text = new_agent_template("helper")
    for key in ("# tools:", "# disallowedTools:", "# model:", "# maxTurns:", "# permissionMode:"):
        assert key in text


def test_schema_describes_the_frontmatter() -> None:
    schema = frontmatter_json_schema()
    assert schema["type"] == "object"
    assert schema["required"] == ["name", "description"]
    properties = schema["properties"]
    for key in ("tools", "disallowedTools", "model", "maxTurns", "permissionMode", "mcpServers"):
        assert key in properties
    assert properties["permissionMode"]["enum"] == [
        "default",
        "acceptEdits",
        "plan",
        "bypassPermissions",
        "dontAsk",
    ]
    assert schema["additionalProperties"] is True


def test_schema_is_valid_json_schema_and_accepts_the_template() -> None:
    import jsonschema  # installed with the mcp extra
    import yaml

    schema = frontmatter_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    frontmatter = new_agent_template("helper").split("---\n")[1]
    jsonschema.validate(yaml.safe_load(frontmatter), schema)


def test_builtin_agents() -> None:
    builtins = {d.name: d for d in builtin_definitions()}
    assert set(builtins) == {"general-purpose", "explore", "plan"}
    for d in builtins.values():
        assert d.status == "active" and d.warnings == [] and d.scope == "builtin"
        assert len(d.system_prompt) > 500
        assert d.source_path is not None and d.source_path.is_file()
    assert builtins["general-purpose"].tools is None
    assert builtins["general-purpose"].model == "inherit"
    assert builtins["explore"].tools == list(READ_ONLY_TOOL_NAMES)
    assert builtins["explore"].model == "haiku"
    assert builtins["plan"].tools == list(READ_ONLY_TOOL_NAMES)
    assert builtins["plan"].model == "inherit"
    assert normalise_name("Explore") in builtins and normalise_name("Plan") in builtins


def test_builtin_definitions_are_fresh_copies() -> None:
    first = builtin_definitions()
    first[0].priority = 99
    assert builtin_definitions()[0].priority == 0


def test_round_trip_of_the_claude_code_fields() -> None:
    d = AgentDefinition(
        name="a",
        description="d",
        system_prompt="p",
        skills=["pdf-forms"],
        memory="user",
        isolation="worktree",
        hooks={"Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}]},
        effort="max",
        initial_prompt="Start here.",
        omit_claude_md=True,
    )
    again = round_trip(d)
    for field in ("skills", "memory", "isolation", "hooks", "effort", "initial_prompt"):
        assert getattr(again, field) == getattr(d, field), field
    assert again.omit_claude_md and again.extra == {}
