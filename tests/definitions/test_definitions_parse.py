"""Parsing agent files in every dialect: Markdown frontmatter, Codex TOML, JSON, bad files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from subagents.definitions import (
    MAX_AGENT_FILE_BYTES,
    NAME_PATTERN,
    AgentDefinition,
    dialect_for_path,
    parse_agent_file,
    parse_agent_mapping,
    parse_agent_text,
)

LENIENT_CORPUS_FILES = {
    "ab-test-analysis",
    "assumption-mapping",
    "backlog-grooming",
    "cohort-analysis",
    "first-principles-thinking",
    "gdpr-ccpa-compliance",
    "growth-loops",
    "hipaa-compliance",
}

REVIEWER = """---
name: code-reviewer
description: Reviews code for bugs and style.
tools: Read, Grep, Glob
model: sonnet
---

You review code. Report problems with file and line.
"""


def md(text: str, *, source_path: Path | None = None) -> AgentDefinition:
    return parse_agent_text(text, dialect="markdown", source_path=source_path)


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# --- the corpus -------------------------------------------------------------------------------


def test_every_corpus_file_parses_as_active(corpus_dir: Path) -> None:
    files = sorted(corpus_dir.rglob("*.md"))
    assert len(files) == 158
    lenient = set()
    for path in files:
        d = parse_agent_file(path, scope="project")
        assert d.status == "active", (path, d.validation_errors)
        assert NAME_PATTERN.match(d.name)
        assert d.description.strip() and d.system_prompt.strip()
        assert d.source_path == path and d.scope == "project" and d.dialect == "markdown"
        if any("not valid YAML" in w and "read line by line" in w for w in d.warnings):
            lenient.add(path.stem)
    assert lenient == LENIENT_CORPUS_FILES


def test_lenient_reading_recovers_the_whole_description(corpus_dir: Path) -> None:
    path = next(corpus_dir.rglob("backlog-grooming.md"))
    d = parse_agent_file(path)
    assert d.description.startswith("Use when the user needs to groom")
    assert d.description.endswith("'backlog management'.")
    assert "Triggers on: 'groom backlog'" in d.description
    assert d.tools == ["Read", "Write", "Edit", "Glob", "Grep", "WebFetch", "WebSearch"]
    warning = next(w for w in d.warnings if "not valid YAML" in w)
    assert "quote the value of 'description'" in warning
    assert "line 3" in warning


def test_corpus_tools_we_lack_are_warnings_and_left_out(corpus_dir: Path) -> None:
    path = next(corpus_dir.rglob("codebase-orchestrator.md"))
    d = parse_agent_file(path)
    assert d.status == "active"
    assert "subagent-catalog:search" in d.unavailable_tools
    assert "WebFetch" not in d.unavailable_tools  # a tool we have now
    assert "Read" not in d.unavailable_tools
    assert any("'subagent-catalog:search' is not a known tool" in w for w in d.warnings)


def test_corpus_names_with_dots_are_normalised(corpus_dir: Path) -> None:
    d = parse_agent_file(next(corpus_dir.rglob("powershell-5.1-expert.md")))
    assert d.status == "active"
    assert d.name == "powershell-5-1-expert"
    assert d.declared_name == "powershell-5.1-expert"
    assert any("normalised" in w for w in d.warnings)


# --- Markdown ---------------------------------------------------------------------------------


def test_markdown_fields() -> None:
    d = md(REVIEWER)
    assert d.name == "code-reviewer"
    assert d.declared_name is None
    assert d.description == "Reviews code for bugs and style."
    assert d.tools == ["Read", "Grep", "Glob"]
    assert d.model == "sonnet"
    assert d.system_prompt == "You review code. Report problems with file and line."
    assert d.status == "active" and d.warnings == [] and d.validation_errors == []
    assert d.dialect == "markdown" and d.scope == "explicit"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("tools: Read, Grep, Glob", ["Read", "Grep", "Glob"]),
        ("tools: Read Grep Glob", ["Read", "Grep", "Glob"]),
        ("tools: Read,Grep , Glob,", ["Read", "Grep", "Glob"]),
        ("tools: [Read, Grep, Glob]", ["Read", "Grep", "Glob"]),
        ("tools:\n  - Read\n  - Grep\n  - Glob", ["Read", "Grep", "Glob"]),
        ("tools: Read, Read, Grep", ["Read", "Grep"]),
        ('tools: "*"', None),
        ("tools: ['*']", None),
        ("tools:", None),
        ("tools: ''", []),
        ("tools: []", []),
        ("tools: ' , '", []),
    ],
)
def test_tools_spellings(line: str, expected: list[str] | None) -> None:
    d = md(f"---\nname: a\ndescription: d\n{line}\n---\nbody\n")
    assert d.tools == expected
    assert d.status == "active"


def test_absent_tools_inherit_everything() -> None:
    d = md("---\nname: a\ndescription: d\n---\nbody\n")
    assert d.tools is None


def test_claude_code_spellings_map_to_fields() -> None:
    d = md(
        "---\nname: a\ndescription: d\ndisallowedTools: Bash, Write\nmaxTurns: 7\n"
        "permissionMode: acceptEdits\nmcpServers: [github, sentry]\ncolor: blue\n"
        "background: true\ntemperature: 0.3\n---\nbody\n"
    )
    assert d.disallowed_tools == ["Bash", "Write"]
    assert d.max_turns == 7
    assert d.permission_mode == "acceptEdits"
    assert d.mcp_servers == ["github", "sentry"]
    assert d.mcp_server_configs == {}
    assert d.color == "blue"
    assert d.background is True
    assert d.temperature == 0.3
    assert d.extra == {} and d.warnings == []


def test_snake_case_and_gemini_spellings() -> None:
    d = md(
        "---\nname: a\ndescription: d\ndisallowed_tools: [Bash]\nmax_turns: 3\n"
        "permission_mode: plan\nmcp_servers: github\ntemperature: 1\n---\nbody\n"
    )
    assert (d.disallowed_tools, d.max_turns, d.permission_mode) == (["Bash"], 3, "plan")
    assert d.mcp_servers == ["github"] and d.temperature == 1.0
    assert d.status == "active" and d.warnings == []


def test_two_spellings_of_one_key_warn_and_the_first_wins() -> None:
    d = md("---\nname: a\ndescription: d\nmaxTurns: 3\nmax_turns: 9\n---\nbody\n")
    assert d.max_turns == 3
    assert any("'max_turns' is ignored" in w for w in d.warnings)


def test_mcp_servers_mixing_names_and_inline_configs() -> None:
    d = md(
        "---\nname: a\ndescription: d\nmcpServers:\n  - github\n"
        "  - local:\n      command: python\n      args: [server.py]\n---\nbody\n"
    )
    assert d.mcp_servers == ["github", "local"]
    assert d.mcp_server_configs == {"local": {"command": "python", "args": ["server.py"]}}
    assert d.status == "active"


def test_mcp_servers_as_mapping() -> None:
    d = md(
        "---\nname: a\ndescription: d\nmcpServers:\n  web:\n    url: http://127.0.0.1:9/mcp\n"
        "  github:\n---\nbody\n"
    )
    assert d.mcp_servers == ["web", "github"]
    assert d.mcp_server_configs == {"web": {"url": "http://127.0.0.1:9/mcp"}}


def test_mcp_server_config_must_be_a_mapping() -> None:
    d = md("---\nname: a\ndescription: d\nmcpServers:\n  web: 5\n---\nbody\n")
    assert d.status == "invalid"
    assert any("mcpServers.web" in e for e in d.validation_errors)


def test_unknown_keys_are_kept_and_warned_about() -> None:
    d = md("---\nname: a\ndescription: d\nemoji: 🦊\nmood:\n  pre: [x]\n---\nbody\n")
    assert d.extra == {"emoji": "🦊", "mood": {"pre": ["x"]}}
    assert d.status == "active"
    assert sorted(w.split("'")[1] for w in d.warnings) == ["emoji", "mood"]


CLAUDE_CODE_FIELDS = """\
---
name: full
description: Uses every field Claude Code knows.
skills: [pdf-forms, style-guide]
memory: Project
isolation: worktree
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: ./check.sh
  Stop:
    - hooks: [{type: command, command: echo done}]
effort: high
initialPrompt: Review the latest commit.
omitClaudeMd: true
---
body
"""


def test_claude_code_fields_are_read_into_their_own_fields() -> None:
    d = md(CLAUDE_CODE_FIELDS)
    assert d.status == "active" and d.extra == {}
    assert not any("no effect" in w for w in d.warnings), d.warnings
    assert d.skills == ["pdf-forms", "style-guide"]
    assert (d.memory, d.isolation, d.effort) == ("project", "worktree", "high")
    assert d.initial_prompt == "Review the latest commit." and d.omit_claude_md
    assert d.hooks["PreToolUse"][0]["matcher"] == "Bash"
    assert d.hooks["Stop"][0]["hooks"][0]["command"] == "echo done"


@pytest.mark.parametrize(
    ("line", "warned"),
    [
        ("memory: everywhere", "'memory' value 'everywhere' is not supported"),
        ("isolation: container", "'isolation' value 'container' is not supported"),
        ("effort: extreme", "'effort' value 'extreme' is not supported"),
        ("hooks:\n  PreToolUse: [{matcher: Bash}]", "entries are not"),
        ("hooks:\n  PreToolUse: nope", "is not a list of hooks"),
    ],
)
def test_claude_code_field_values_we_cannot_use_are_warnings(line: str, warned: str) -> None:
    d = md(f"---\nname: a\ndescription: d\n{line}\n---\nbody\n")
    assert d.status == "active"
    assert any(warned in w for w in d.warnings), d.warnings


def test_extra_values_become_json_compatible() -> None:
    d = md("---\nname: a\ndescription: d\nreleased: 2024-05-01\nodd: .inf\n---\nbody\n")
    assert d.extra == {"released": "2024-05-01", "odd": "inf"}
    json.dumps(d.model_dump(mode="json"))


def test_crlf_and_bom() -> None:
    text = "\ufeff" + REVIEWER.replace("\n", "\r\n")
    d = md(text)
    assert d.status == "active"
    assert d.name == "code-reviewer"
    assert d.system_prompt == "You review code. Report problems with file and line."
    assert "\r" not in d.description


def test_crlf_and_bom_from_a_file(tmp_path: Path) -> None:
    path = write(tmp_path / "r.md", b"\xef\xbb\xbf" + REVIEWER.replace("\n", "\r\n").encode())
    d = parse_agent_file(path)
    assert d.status == "active" and d.tools == ["Read", "Grep", "Glob"]


def test_missing_closing_line_ends_at_first_blank_line() -> None:
    d = md("---\nname: a\ndescription: d\n\nYou are a.\n\nMore.\n")
    assert d.status == "active"
    assert d.system_prompt == "You are a.\n\nMore."
    assert any("no closing '---'" in w for w in d.warnings)


def test_missing_closing_line_and_no_body() -> None:
    d = md("---\nname: a\ndescription: d")
    assert d.status == "invalid"
    assert any("system prompt is empty" in e for e in d.validation_errors)


def test_no_frontmatter_is_invalid_with_a_clear_reason(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.md", "# Just notes\n\nNothing else.\n")
    d = parse_agent_file(path)
    assert d.status == "invalid"
    assert d.name == "notes"
    assert d.system_prompt == "# Just notes\n\nNothing else."
    assert any("no YAML frontmatter" in e for e in d.validation_errors)
    assert any("description is missing" in e for e in d.validation_errors)


def test_empty_frontmatter_reports_every_missing_field() -> None:
    d = md("---\n---\n")
    assert d.status == "invalid"
    joined = " | ".join(d.validation_errors)
    assert "'name' is missing" in joined
    assert "description is missing" in joined
    assert "system prompt is empty" in joined


@pytest.mark.parametrize(
    ("frontmatter", "kind"), [("- a\n- b", "list"), ("just words", "str"), ("42", "int")]
)
def test_frontmatter_that_is_not_a_mapping(frontmatter: str, kind: str) -> None:
    d = md(f"---\n{frontmatter}\n---\nbody\n", source_path=Path("x/my_agent.md"))
    assert d.status == "invalid"
    assert d.name == "my-agent"
    assert any(f"YAML {kind}, not a mapping" in e for e in d.validation_errors)


def test_yaml_that_cannot_be_recovered() -> None:
    d = md("---\nname: [unclosed\n  : : :\n{\n---\nbody\n")
    assert d.status == "invalid"
    assert any("not valid YAML" in e and "line" in e for e in d.validation_errors)


def test_lenient_reading_keeps_typed_values_of_valid_lines() -> None:
    d = md(
        "---\nname: a\ndescription: Does: things\nmaxTurns: 4\ntools:\n  - Read\n  - Grep\n"
        "background: true\n---\nbody\n"
    )
    assert d.status == "active"
    assert d.description == "Does: things"
    assert (d.max_turns, d.tools, d.background) == (4, ["Read", "Grep"], True)
    assert any("quote the value of 'description'" in w for w in d.warnings)


def test_lenient_reading_joins_indented_continuation_lines() -> None:
    d = md("---\nname: a\ndescription: Use: when\n  the code is\n  broken\n---\nbody\n")
    assert d.description == "Use: when the code is broken"


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("maxTurns: lots", "'maxTurns' must be a positive whole number"),
        ("maxTurns: 0", "maxTurns must be a positive whole number"),
        ("maxTurns: true", "'maxTurns' must be a positive whole number"),
        ("maxBudgetTokens: lots", "'maxBudgetTokens' must be a positive whole number"),
        ("maxBudgetTokens: 0", "maxBudgetTokens must be a positive whole number"),
        ("maxBudgetUsd: plenty", "'maxBudgetUsd' must be an amount in USD"),
        ("maxBudgetUsd: -1", "maxBudgetUsd must be a positive amount in USD"),
        ("maxBudgetUsd: .nan", "maxBudgetUsd must be a positive amount in USD"),
        ("maxDurationSeconds: soon", "'maxDurationSeconds' must be a positive whole number"),
        ("maxDurationSeconds: -5", "maxDurationSeconds must be a positive whole number"),
        ("temperature: hot", "'temperature' must be a number"),
        ("temperature: 2.5", "temperature must be between 0 and 2"),
        ("background: maybe", "'background' must be true or false"),
        ("tools: 5", "'tools' must be a comma-separated string"),
        ("tools: [Read, 5]", "'tools' must be a list of tool names"),
        ("description: [a, b]", "'description' must be text"),
        ("name: 12", "'name' must be text"),
        ("model: 3", "'model' must be text"),
    ],
)
def test_values_of_the_wrong_type_are_errors(line: str, fragment: str) -> None:
    lines = {"name": "name: a", "description": "description: d"}
    lines[line.split(":", 1)[0]] = line
    d = md("---\n" + "\n".join(lines.values()) + "\n---\nbody\n")
    assert d.status == "invalid"
    assert any(fragment in e for e in d.validation_errors), d.validation_errors


@pytest.mark.parametrize(
    ("key", "usd", "seconds"),
    [
        ("maxBudgetTokens", "maxBudgetUsd", "maxDurationSeconds"),
        ("max_budget_tokens", "max_budget_usd", "max_duration_seconds"),
        ("max-budget-tokens", "max-budget-usd", "max-duration-seconds"),
    ],
)
def test_budgets_and_a_time_limit_read_in_every_spelling_and_render_back(
    key: str, usd: str, seconds: str
) -> None:
    from subagents.definitions.render import render_markdown

    text = f"---\nname: a\ndescription: d\n{key}: 50000\n{usd}: $0.50\n{seconds}: 600\n---\nb\n"
    d = md(text)
    limits = (d.max_budget_tokens, d.max_budget_usd, d.max_duration_seconds)
    assert limits == (50_000, 0.5, 600) and d.status == "active", d.validation_errors
    again = md(render_markdown(d))
    assert (again.max_budget_tokens, again.max_budget_usd, again.max_duration_seconds) == limits


def test_numbers_written_as_text_are_accepted() -> None:
    d = md("---\nname: a\ndescription: d\nmaxTurns: '5'\ntemperature: '0.5'\n---\nb\n")
    assert (d.max_turns, d.temperature, d.status) == (5, 0.5, "active")


def test_unsupported_permission_mode_is_a_warning() -> None:
    d = md("---\nname: a\ndescription: d\npermissionMode: askAlways\n---\nbody\n")
    assert d.status == "active"
    assert d.permission_mode is None
    assert any("'askAlways'" in w and "not supported" in w for w in d.warnings)


def test_dont_ask_permission_mode_is_read() -> None:
    d = md("---\nname: a\ndescription: d\npermissionMode: dontAsk\n---\nbody\n")
    assert (d.permission_mode, d.warnings) == ("dontAsk", [])


def test_permission_mode_case_is_forgiven() -> None:
    d = md("---\nname: a\ndescription: d\npermissionMode: acceptedits\n---\nbody\n")
    assert d.permission_mode == "acceptEdits"


def test_quoted_name_that_yaml_would_read_as_boolean() -> None:
    assert md("---\nname: 'yes'\ndescription: d\n---\nbody\n").name == "yes"
    d = md("---\nname: yes\ndescription: d\n---\nbody\n")
    assert d.status == "invalid"
    assert any("'name' must be text" in e for e in d.validation_errors)


# --- Codex TOML -------------------------------------------------------------------------------

CODEX = '''name = "reviewer"
description = "Reviews diffs."
model = "gpt-5.3-codex"
model_reasoning_effort = "high"
sandbox_mode = "read-only"
developer_instructions = """
Review the diff. Report bugs first.
"""

[mcp_servers.docs]
url = "http://127.0.0.1:9/mcp"
'''


def test_codex_toml(tmp_path: Path) -> None:
    d = parse_agent_file(write(tmp_path / ".codex" / "agents" / "reviewer.toml", CODEX))
    assert d.dialect == "codex-toml"
    assert d.status == "active", d.validation_errors
    assert d.name == "reviewer"
    assert d.description == "Reviews diffs."
    assert d.model == "gpt-5.3-codex"
    assert d.system_prompt.strip() == "Review the diff. Report bugs first."
    assert d.mcp_servers == ["docs"]
    assert d.mcp_server_configs == {"docs": {"url": "http://127.0.0.1:9/mcp"}}
    assert d.extra == {"model_reasoning_effort": "high", "sandbox_mode": "read-only"}
    assert len(d.warnings) == 2


def test_codex_toml_accepts_frontmatter_keys_too() -> None:
    text = 'name="a"\ndescription="d"\ndeveloper_instructions="p"\ntools=["Read"]\nmaxTurns=2\n'
    d = parse_agent_text(text, dialect="codex-toml")
    assert (d.tools, d.max_turns, d.status) == (["Read"], 2, "active")


def test_codex_toml_errors() -> None:
    bad = parse_agent_text("name = ", dialect="codex-toml", source_path=Path("a/broken.toml"))
    assert bad.status == "invalid" and bad.name == "broken"
    assert any("not valid TOML" in e for e in bad.validation_errors)
    missing = parse_agent_text('description = "d"', dialect="codex-toml")
    assert missing.status == "invalid"
    joined = " | ".join(missing.validation_errors)
    assert "'name' is missing" in joined and "developer_instructions" in joined


# --- JSON -------------------------------------------------------------------------------------


def test_json_agent_defaults_its_name_to_the_stem(tmp_path: Path) -> None:
    payload = {"description": "d", "prompt": "You test.", "tools": ["Read"], "maxTurns": 3}
    d = parse_agent_file(write(tmp_path / "agents" / "tester.json", json.dumps(payload)))
    assert d.dialect == "json"
    assert (d.name, d.system_prompt, d.tools, d.max_turns) == ("tester", "You test.", ["Read"], 3)
    assert d.status == "active" and d.warnings == []


@pytest.mark.parametrize("key", ["prompt", "system_prompt", "systemPrompt"])
def test_json_prompt_spellings(key: str) -> None:
    d = parse_agent_text(json.dumps({"name": "a", "description": "d", key: "p"}), dialect="json")
    assert d.system_prompt == "p" and d.status == "active"


def test_json_errors() -> None:
    not_json = parse_agent_text("{nope", dialect="json")
    assert not_json.status == "invalid"
    assert any("not valid JSON" in e for e in not_json.validation_errors)
    a_list = parse_agent_text("[1, 2]", dialect="json", source_path=Path("x.json"))
    assert a_list.status == "invalid" and a_list.name == "x"
    assert any("JSON list, not an object" in e for e in a_list.validation_errors)
    no_prompt = parse_agent_text('{"name": "a", "description": "d"}', dialect="json")
    assert any("set 'prompt'" in e for e in no_prompt.validation_errors)


def test_parse_agent_mapping_for_command_line_agents() -> None:
    agents = json.loads('{"Reviewer": {"description": "d", "prompt": "p", "model": "opus"}}')
    d = parse_agent_mapping(agents["Reviewer"], name="Reviewer")
    assert (d.name, d.model, d.scope, d.status) == ("reviewer", "opus", "explicit", "active")
    bad = parse_agent_mapping([1], name="x")  # type: ignore[arg-type]
    assert bad.status == "invalid" and bad.name == "x"


# --- files that cannot be read ---------------------------------------------------------------


def test_dialect_for_path() -> None:
    assert dialect_for_path(Path("a.md")) == "markdown"
    assert dialect_for_path(Path("a.MARKDOWN")) == "markdown"
    assert dialect_for_path(Path("a.toml")) == "codex-toml"
    assert dialect_for_path(Path("a.json")) == "json"
    assert dialect_for_path(Path("a.txt")) is None


def assert_unreadable(d: object, name: str, fragment: str) -> None:
    assert d.status == "invalid"  # type: ignore[attr-defined]
    assert d.name == name  # type: ignore[attr-defined]
    assert len(d.validation_errors) == 1, d.validation_errors  # type: ignore[attr-defined]
    assert fragment in d.validation_errors[0]  # type: ignore[attr-defined]


def test_binary_file(tmp_path: Path) -> None:
    d = parse_agent_file(write(tmp_path / "blob.md", b"---\nname: a\x00\x01\x02\n"))
    assert_unreadable(d, "blob", "binary file")


def test_latin1_file(tmp_path: Path) -> None:
    text = "---\nname: caf\xe9\ndescription: d\n---\nbody\n"
    d = parse_agent_file(write(tmp_path / "cafe.md", text.encode("latin-1")))
    assert_unreadable(d, "cafe", "not UTF-8")
    assert "0xe9" in d.validation_errors[0] and "re-save it as UTF-8" in d.validation_errors[0]


def test_file_over_one_mebibyte(tmp_path: Path) -> None:
    big = "---\nname: big\ndescription: d\n---\n" + "x" * MAX_AGENT_FILE_BYTES
    d = parse_agent_file(write(tmp_path / "big.md", big))
    assert_unreadable(d, "big", "too large")


def test_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    head = "---\nname: big\ndescription: d\n---\n"
    text = head + "x" * (MAX_AGENT_FILE_BYTES - len(head))
    d = parse_agent_file(write(tmp_path / "big.md", text))
    assert d.status == "active" and len(d.system_prompt) == MAX_AGENT_FILE_BYTES - len(head)


def test_broken_symlink(tmp_path: Path) -> None:
    link = tmp_path / "gone.md"
    link.symlink_to(tmp_path / "missing-target.md")
    d = parse_agent_file(link)
    assert_unreadable(d, "gone", "broken symlink")
    assert "missing-target.md" in d.validation_errors[0]


def test_missing_file(tmp_path: Path) -> None:
    assert_unreadable(parse_agent_file(tmp_path / "nope.md"), "nope", "does not exist")


def test_directory(tmp_path: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    assert_unreadable(parse_agent_file(tmp_path / "folder.md"), "folder", "is a directory")


def test_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    assert_unreadable(parse_agent_file(fifo), "pipe", "not a regular file")


def test_permission_denied(tmp_path: Path) -> None:
    path = write(tmp_path / "secret.md", REVIEWER)
    path.chmod(0)
    try:
        d = parse_agent_file(path)
        if os.access(path, os.R_OK):
            # Running as root: mode 000 does not stop reading, so the file parses normally.
            assert d.status == "active"
        else:
            assert_unreadable(d, "secret", "permission denied")
            assert "chmod" in d.validation_errors[0]
    finally:
        path.chmod(0o644)


def test_unsupported_suffix(tmp_path: Path) -> None:
    d = parse_agent_file(write(tmp_path / "notes.txt", REVIEWER))
    assert_unreadable(d, "notes", "is not an agent file")


def test_symlink_to_a_good_file_is_followed(tmp_path: Path) -> None:
    target = write(tmp_path / "real.md", REVIEWER)
    link = tmp_path / "link.md"
    link.symlink_to(target)
    d = parse_agent_file(link)
    assert d.status == "active" and d.source_path == link


def test_unreadable_reasons_survive_revalidation(tmp_path: Path) -> None:
    from subagents.definitions import validate_definition

    d = parse_agent_file(write(tmp_path / "blob.md", b"\x00"))
    again = validate_definition(d, known_mcp_servers=["github"])
    assert again.validation_errors == d.validation_errors


def test_corpus_copied_into_a_project_parses_the_same(corpus_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / ".claude" / "agents"
    shutil.copytree(corpus_dir, target)
    for path in target.rglob("*.md"):
        assert parse_agent_file(path, scope="project").status == "active"


# --- hostile input ----------------------------------------------------------------------------


def test_yaml_alias_bombs_make_the_agent_invalid() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    text = "---\nname: a\ndescription: d\n" + "\n".join(lines) + "\n---\nbody\n"
    d = md(text)
    assert d.status == "invalid"
    assert any("through YAML aliases" in e for e in d.validation_errors)
    assert len(d.model_dump_json()) < 1_000_000


def test_self_referencing_yaml_is_an_error_not_a_crash() -> None:
    d = md("---\nname: a\ndescription: d\nmcpServers:\n  s: &m {k: *m}\n---\nbody\n")
    assert d.status == "invalid"
    assert any("infinite" in e and "line 5" in e for e in d.validation_errors)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dialect", "text"),
    [
        ("markdown", "---\nx: " + "[" * 100_000 + "]" * 100_000 + "\n---\nbody\n"),
        ("markdown", "---\nx:\n" + "- " * 100_000 + "y\n---\nbody\n"),
        ("json", '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("codex-toml", "x = " + "[" * 100_000 + "]" * 100_000),
    ],
)
def test_deep_nesting_is_reported_not_a_crash(dialect: str, text: str) -> None:
    d = parse_agent_text(text, dialect=dialect)  # type: ignore[arg-type]
    assert d.status == "invalid"
    assert any("nested too deeply" in e for e in d.validation_errors), d.validation_errors


def test_lone_surrogates_are_reported() -> None:
    escaped = parse_agent_text(
        '{"name": "a", "description": "\\ud800", "prompt": "p"}', dialect="json"
    )
    assert escaped.status == "invalid"
    assert any("lone surrogate" in e for e in escaped.validation_errors)
    pair = parse_agent_text(
        '{"name": "a", "description": "\\ud83e\\udd8a", "prompt": "p"}', dialect="json"
    )
    assert pair.description == "🦊" and pair.status == "active"
    assert parse_agent_text("---\nname: a\ud800\n---\n", dialect="markdown").status == "invalid"


def test_parsed_definitions_do_not_share_lists(tmp_path: Path) -> None:
    first = md("---\nname: a\ndescription: d\n---\nbody\n")
    second = md("---\nname: b\ndescription: d\n---\nbody\n")
    first.disallowed_tools.append("Bash")
    first.extra["k"] = 1
    first.warnings.append("w")
    assert second.disallowed_tools == [] and second.extra == {} and second.warnings == []


def test_a_path_given_as_text_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path / "r.md", REVIEWER)
    d = parse_agent_file(str(path))  # type: ignore[arg-type]
    assert d.status == "active" and d.source_path == path
