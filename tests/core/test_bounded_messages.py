"""Error messages quote untrusted values in bounded time and space; settings files are capped.

``repr(value)[:60]`` formats the whole value first: an expanded alias bomb, a 1 MiB list, a
cyclic structure or a 5,000-digit integer (whose repr raises) made an error message cost
seconds, gigabytes or an exception. :func:`subagents._preview.preview` walks the value instead.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subagents._preview import preview, shorten
from subagents.config import MAX_CONFIG_FILE_BYTES, load_config
from subagents.definitions import parse_agent_mapping, parse_agent_text
from subagents.errors import ConfigError
from subagents.mcp.config import MAX_MCP_FILE_BYTES, load_mcp_servers, read_mcp_file
from subagents.messages import ToolCall
from subagents.tools.base import ToolContext, ToolRegistry
from subagents.tools.builtin import builtin_tools
from subagents.tools.execution import execute_tool_call

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


# -- the preview helper ------------------------------------------------------------------------


@pytest.mark.slow
@given(value=json_values, limit=st.integers(4, 200))
@settings(max_examples=300, deadline=None)
def test_previews_are_repr_or_json_when_short_and_cut_otherwise(value: Any, limit: int) -> None:
    for style, full in (("python", repr(value)), ("json", json.dumps(value, ensure_ascii=False))):
        shown = preview(value, limit, style=style)  # type: ignore[arg-type]
        if len(full) <= limit:
            assert shown == full
        else:
            assert len(shown) == limit
            assert shown.endswith("...")
            assert full.startswith(shown[:-3])


def test_previews_of_hostile_values_are_bounded_and_never_raise() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    deep: Any = {}
    for _ in range(100_000):
        deep = {"k": deep}
    shared: Any = ["lol"] * 9
    for _ in range(30):  # 9**30 values if formatted in full
        shared = [shared] * 9
    for value in (cyclic, deep, shared, 10**5000, "x" * 10_000_000, b"\0" * 10**6, {1, 2}):
        for style in ("python", "json"):
            assert len(preview(value, 60, style=style)) <= 60
    assert preview(10**5000) == "<a 5,001-digit number>"
    assert preview(math.inf, style="json") == '"inf"'
    assert shorten("abcdef", 5) == "ab..." and shorten("abc", 5) == "abc"


# -- agent files -------------------------------------------------------------------------------


def test_a_huge_hex_integer_in_tools_is_a_clear_error_not_a_crash() -> None:
    # YAML reads 0x... as an int; repr() of an int over 4,300 digits raises ValueError.
    text = "---\nname: a\ndescription: d\ntools: 0x" + "f" * 900 + "\n---\nbody\n"
    d = parse_agent_text(text, dialect="markdown")
    assert d.status == "invalid"
    (error,) = d.validation_errors
    assert error.startswith("'tools' must be a comma-separated string or a list of tool names")
    assert "digit number>" in error and len(error) < 200


def test_huge_values_in_json_agents_are_quoted_briefly() -> None:
    d = parse_agent_mapping(
        {
            "description": "d",
            "prompt": "p",
            "tools": [["x"] * 100_000],
            "maxTurns": "9" * 10_000,
            "temperature": 10**400,
            "permissionMode": "y" * 100_000,
            "model": "m" * 100_000,
        },
        name="a",
    )
    assert d.status == "invalid"
    assert all(len(message) < 600 for message in [*d.validation_errors, *d.warnings])
    assert any("'maxTurns' must be a positive whole number" in e for e in d.validation_errors)
    assert any("'temperature' must be a number" in e for e in d.validation_errors)
    assert any(w.startswith("model 'mmmm") for w in d.warnings)


def test_unicode_digits_in_max_turns_are_an_error_not_a_crash() -> None:
    d = parse_agent_mapping({"description": "d", "prompt": "p", "maxTurns": "²"}, name="a")
    assert any("'maxTurns' must be a positive whole number" in e for e in d.validation_errors)


# -- config.toml -------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".subagents").mkdir()
    return root


def write_config(project: Path, text: str) -> Path:
    path = project / ".subagents" / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_config_errors_quote_values_and_keys_briefly(project: Path, isolated_home: Path) -> None:
    big_array = "[" + ", ".join(["1"] * 100_000) + "]"
    long_key = "k" * 50_000
    write_config(project, f"[subagents]\nmax_depth = {big_array}\n{long_key} = 1\n")
    with pytest.raises(ConfigError) as caught:
        load_config(project)
    message = caught.value.message
    assert "key 'subagents.max_depth'" in message and "(got [1, 1, 1" in message
    assert "unknown key 'subagents.kkkk" in message
    assert len(message) < 1_000


def test_many_config_problems_are_counted_not_all_described(
    project: Path, isolated_home: Path
) -> None:
    write_config(project, "[models]\n" + "".join(f"a{i} = {i}\n" for i in range(5_000)))
    with pytest.raises(ConfigError) as caught:
        load_config(project)
    lines = caught.value.message.splitlines()
    assert len(lines) == 21
    assert lines[-1].endswith("... and 4980 more problems")


def test_a_table_header_line_inside_a_string_does_not_backtrack(
    project: Path, isolated_home: Path
) -> None:
    # The line scan that finds a bad key's line used a regex cubic on such a line (64 s).
    write_config(project, 'x = """\n[' + " " * 20_000 + 'a\n"""\n')
    with pytest.raises(ConfigError, match="unknown key 'x'"):
        load_config(project)


def test_config_toml_is_capped_in_size(project: Path, isolated_home: Path) -> None:
    path = write_config(project, "# padding\n" * (MAX_CONFIG_FILE_BYTES // 10 + 1))
    with pytest.raises(ConfigError) as caught:
        load_config(project)
    assert f"{path}: the config file is too large" in caught.value.message
    assert "limit is 1,048,576" in caught.value.message
    assert caught.value.hint


def test_deeply_nested_toml_is_a_config_error(project: Path, isolated_home: Path) -> None:
    write_config(project, "x = " + "[" * 5_000 + "]" * 5_000 + "\n")
    with pytest.raises(ConfigError, match="nests arrays or tables too deeply"):
        load_config(project)


def test_a_fifo_instead_of_a_config_file_is_refused_not_waited_on(
    project: Path, isolated_home: Path
) -> None:
    (isolated_home / ".subagents").mkdir()
    os.mkfifo(isolated_home / ".subagents" / "config.toml")  # read whenever it exists
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(project)


# -- MCP server files --------------------------------------------------------------------------


def test_mcp_files_are_capped_but_claude_json_may_be_large(
    tmp_path: Path, isolated_home: Path
) -> None:
    servers = {"mcpServers": {"calc": {"command": "python"}}}
    padding = {"history": ["x" * 1_000] * (MAX_MCP_FILE_BYTES // 1_000 + 10)}
    project_file = tmp_path / ".mcp.json"
    project_file.write_text(json.dumps({**servers, **padding}))
    with pytest.raises(ConfigError, match=r"\.mcp\.json: the MCP server file is too large"):
        read_mcp_file(project_file)
    user_file = isolated_home / ".claude.json"  # Claude Code keeps its history there
    user_file.write_text(json.dumps({**servers, **padding}))
    assert list(read_mcp_file(user_file).servers) == ["calc"]


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_deep_mcp_server_settings_are_a_config_error(tmp_path: Path, suffix: str) -> None:
    deep = "[" * 900 + "]" * 900
    path = tmp_path / f"servers{suffix}"
    path.write_text('{"mcpServers": {"calc": {"command": "python", "args": ' + deep + "}}}")
    with pytest.raises(ConfigError, match=r"levels deep|nested too deeply"):
        read_mcp_file(path)


def test_long_server_names_are_quoted_briefly(tmp_path: Path, isolated_home: Path) -> None:
    name = "s" * 100_000
    (tmp_path / ".git").mkdir()
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {name: "not an object"}}))
    with pytest.raises(ConfigError) as caught:
        load_mcp_servers(tmp_path)
    assert len(caught.value.message) < 500
    assert re.search(r"'mcpServers\.s+\.\.\.' must be an object", caught.value.message)


# -- tool errors -------------------------------------------------------------------------------


async def test_invalid_tool_arguments_are_previewed_briefly(tmp_path: Path) -> None:
    deep: Any = "x"
    for _ in range(60):
        deep = [deep]
    registry = ToolRegistry(builtin_tools())
    outcome = await execute_tool_call(
        ToolCall("c", "Read", {"file_path": deep, "limit": "9" * 100_000}),
        registry,
        ToolContext(workspace=tmp_path),
    )
    assert outcome.status == "error"
    assert "file_path: Input should be a valid string (got [[[[" in outcome.message.content
    assert len(outcome.message.content) < 800


@pytest.mark.parametrize("value", ["00000'", "ab'cd\"e", b"000'0", "it's fine, it's"])
def test_a_cut_string_keeps_the_quotes_of_its_full_repr(value: str | bytes) -> None:
    for limit in range(4, len(repr(value)) + 1):
        shown = preview(value, limit)
        assert repr(value).startswith(shown.removesuffix("..."))
