"""MCP server configs: .mcp.json, mcp_servers.yaml, precedence, ${VAR} expansion, bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subagents.errors import ConfigError
from subagents.mcp.config import (
    SSEServerConfig,
    StdioServerConfig,
    StreamableHTTPServerConfig,
    expand_variables,
    load_mcp_servers,
    parse_mcp_servers,
    read_mcp_file,
)
from subagents.mcp.toolset import mcp_tool_name, sanitise_name


def write_json(path: Path, servers: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def write_yaml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_claude_code_mcp_json_shapes_are_read(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / ".mcp.json",
        {
            "fs": {"command": "npx", "args": ["-y", "server-fs", "."], "env": {"A": "1"}},
            "docs": {"type": "http", "url": "https://example.com/mcp"},
            "old": {"type": "sse", "url": "https://example.com/sse", "headers": {"X": "y"}},
            "bare": {"url": "https://example.com/mcp"},
            "tuned": {
                "command": "srv",
                "timeout_seconds": 5,
                "startup_timeout_seconds": 2,
                "enabled": False,
                "alwaysAllow": ["x"],  # a key of another client: ignored
            },
        },
    )
    servers = read_mcp_file(path).servers
    fs = servers["fs"]
    assert isinstance(fs, StdioServerConfig)
    assert (fs.name, fs.command, fs.args) == ("fs", "npx", ["-y", "server-fs", "."])
    assert fs.env["A"].get_secret_value() == "1"
    assert fs.timeout_seconds == 300 and fs.startup_timeout_seconds == 30 and fs.enabled
    assert isinstance(servers["docs"], StreamableHTTPServerConfig)
    assert isinstance(servers["old"], SSEServerConfig)
    assert servers["old"].headers["X"].get_secret_value() == "y"
    assert isinstance(servers["bare"], StreamableHTTPServerConfig)
    tuned = servers["tuned"]
    assert (tuned.timeout_seconds, tuned.startup_timeout_seconds, tuned.enabled) == (5, 2, False)


def test_yaml_file_has_the_same_shape(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "mcp_servers.yaml",
        "mcpServers:\n  calc:\n    command: python\n    args: [calc.py]\n"
        "  web:\n    type: streamable-http\n    url: http://127.0.0.1:9/mcp\n",
    )
    servers = read_mcp_file(path).servers
    assert isinstance(servers["calc"], StdioServerConfig)
    assert isinstance(servers["web"], StreamableHTTPServerConfig)


def test_project_overrides_user_and_our_yaml_overrides_mcp_json(
    tmp_path: Path, isolated_home: Path
) -> None:
    write_json(isolated_home / ".claude.json", {"u1": {"command": "claude-user"}})
    write_yaml(
        isolated_home / ".subagents" / "mcp_servers.yaml",
        "mcpServers:\n  u1: {command: yaml-user}\n  u2: {command: only-user}\n"
        "  shared: {command: from-user}\n",
    )
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    write_json(
        project / ".mcp.json",
        {"shared": {"command": "from-mcp-json"}, "both": {"command": "from-mcp-json"}},
    )
    write_yaml(
        project / ".subagents" / "mcp_servers.yaml",
        "mcpServers:\n  both:\n    type: http\n    url: http://127.0.0.1:1/mcp\n",
    )
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    write_json(nested / ".mcp.json", {"near": {"command": "nearest"}})

    loaded = load_mcp_servers(nested)
    commands = {name: getattr(server, "command", None) for name, server in loaded.servers.items()}
    assert commands == {
        "u1": "yaml-user",
        "u2": "only-user",
        "shared": "from-mcp-json",
        "both": None,
        "near": "nearest",
    }
    assert isinstance(loaded.servers["both"], StreamableHTTPServerConfig)
    assert loaded.sources["both"] == project / ".subagents" / "mcp_servers.yaml"
    assert loaded.sources["u1"] == isolated_home / ".subagents" / "mcp_servers.yaml"


def test_a_project_can_disable_a_user_server(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".claude.json", {"calc": {"command": "calc"}})
    write_json(tmp_path / ".mcp.json", {"calc": {"command": "calc", "enabled": False}})
    loaded = load_mcp_servers(tmp_path)
    assert loaded.enabled() == []
    assert loaded.names() == []


def test_variables_are_expanded_in_strings(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / ".mcp.json",
        {
            "api": {
                "type": "http",
                "url": "${BASE:-http://127.0.0.1:1}/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN}"},
            },
            "cli": {
                "command": "${TOOL_BIN}/srv",
                "args": ["--level", "${LEVEL:-info}"],
                "env": {"KEY": "${TOKEN}"},
                "cwd": "${HOME_DIR:-/tmp}",
            },
        },
    )
    environ = {"TOKEN": "s3cret", "TOOL_BIN": "/opt/bin", "LEVEL": ""}
    servers = read_mcp_file(path, environ=environ).servers
    api, cli = servers["api"], servers["cli"]
    assert isinstance(api, StreamableHTTPServerConfig) and isinstance(cli, StdioServerConfig)
    assert api.url == "http://127.0.0.1:1/mcp"
    assert api.headers["Authorization"].get_secret_value() == "Bearer s3cret"
    assert cli.command == "/opt/bin/srv"
    assert cli.args == ["--level", "info"]  # empty counts as unset for ':-'
    assert cli.env["KEY"].get_secret_value() == "s3cret"
    assert cli.cwd == "/tmp"


def test_unset_variable_makes_only_that_server_a_problem(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / ".mcp.json",
        {"needs": {"command": "srv", "env": {"K": "${MISSING_VAR}"}}, "fine": {"command": "ok"}},
    )
    loaded = read_mcp_file(path, environ={})
    assert list(loaded.servers) == ["fine"]
    assert "MISSING_VAR" in loaded.problems["needs"]
    assert "mcpServers.needs" in loaded.problems["needs"]
    assert loaded.names() == ["fine", "needs"]  # still a configured server for validation


def test_secrets_are_never_printed(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / ".mcp.json",
        {
            "a": {"command": "srv", "env": {"API_KEY": "sk-very-secret"}},
            "b": {"type": "sse", "url": "http://x/sse", "headers": {"Authorization": "tok-42"}},
        },
    )
    servers = read_mcp_file(path).servers
    printed = repr(servers) + str(servers) + str(servers["a"]) + servers["b"].model_dump_json()
    assert "sk-very-secret" not in printed and "tok-42" not in printed


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", ":1:2: JSON syntax error"),
        ('["a"]', "expected an object with an 'mcpServers' key"),
        ('{"mcpServers": ["calc"]}', "'mcpServers' must map server names"),
        ('{"mcpServers": {"calc": "python"}}', "'mcpServers.calc' must be an object"),
        ('{"mcpServers": {"calc": {"args": ["x"]}}}', "'mcpServers.calc.command'"),
        ('{"mcpServers": {"calc": {"type": "ws", "url": "x"}}}', "'mcpServers.calc'"),
        ('{"mcpServers": {"calc": {"command": "x", "timeout_seconds": -1}}}', "timeout_seconds"),
        ('{"mcpServers": {"calc": {"type": "sse"}}}', "'mcpServers.calc.url'"),
    ],
)
def test_bad_json_names_file_and_key_and_says_what_to_do(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as caught:
        read_mcp_file(path)
    message = str(caught.value)
    assert str(path) in message
    assert expected in message
    assert caught.value.hint  # what to do


def test_the_first_file_a_process_reads_is_checked_as_any_other(tmp_path: Path) -> None:
    # the entry models build their validators on first use: a fresh interpreter whose first
    # file is a bad one, and one whose first file is good, answer as the tests above do
    bad = write_json(tmp_path / "bad" / ".mcp.json", {"calc": {"args": ["x"]}})
    good = write_json(tmp_path / "good" / ".mcp.json", {"calc": {"command": "python"}})
    code = (
        "import sys\n"
        "from subagents.errors import ConfigError\n"
        "from subagents.mcp.config import read_mcp_file\n"
        "try:\n"
        "    servers = read_mcp_file(__import__('pathlib').Path(sys.argv[1])).servers\n"
        "    print(type(servers['calc']).__name__, servers['calc'].command)\n"
        "except ConfigError as error:\n"
        "    print(error)\n"
    )
    for path, expected in ((bad, "'mcpServers.calc.command'"), (good, "StdioServerConfig python")):
        done = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert expected in done.stdout, done.stdout + done.stderr


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "mcp_servers.yaml", "mcpServers:\n  calc: [unclosed\n")
    with pytest.raises(ConfigError, match=r"mcp_servers\.yaml:\d+: YAML syntax error"):
        read_mcp_file(path)


def test_bad_project_file_stops_loading(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"x": {"command": 3}}}')
    with pytest.raises(ConfigError, match=r"mcpServers\.x\.command"):
        load_mcp_servers(tmp_path)


def test_empty_files_mean_no_servers(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text("")
    write_yaml(tmp_path / ".subagents" / "mcp_servers.yaml", "# nothing yet\n")
    assert load_mcp_servers(tmp_path).servers == {}


def test_tool_names_are_sanitised_and_bounded() -> None:
    assert mcp_tool_name("calc", "add") == "mcp__calc__add"
    assert mcp_tool_name("my.server", "shout loud!") == "mcp__my_server__shout_loud_"
    long_a = mcp_tool_name("s", "x" * 100 + "a")
    long_b = mcp_tool_name("s", "x" * 100 + "b")
    assert len(long_a) == 64 and len(long_b) == 64 and long_a != long_b
    assert sanitise_name("") == "_"


# -- properties ----------------------------------------------------------------------------------

_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_plain = st.text(alphabet=st.characters(blacklist_characters="$"), max_size=20)


@settings(max_examples=200)
@given(name=_names, value=_plain, before=_plain, after=_plain)
def test_set_variable_is_substituted_exactly(
    name: str, value: str, before: str, after: str
) -> None:
    text = f"{before}${{{name}}}{after}"
    assert expand_variables(text, {name: value}) == before + value + after


@pytest.mark.slow
@settings(max_examples=200)
@given(name=_names, default=st.text(alphabet=st.characters(blacklist_characters="}$")))
def test_default_is_used_when_unset(name: str, default: str) -> None:
    assert expand_variables(f"${{{name}:-{default}}}", {}) == default


@settings(max_examples=200)
@given(text=_plain)
def test_text_without_variables_is_unchanged(text: str) -> None:
    assert expand_variables(text, {}) == text


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=300)
@given(
    raw=_json
    | st.fixed_dictionaries({"mcpServers": _json})
    | st.fixed_dictionaries(
        {
            "mcpServers": st.dictionaries(
                st.text(max_size=8),
                _json
                | st.dictionaries(
                    st.sampled_from(
                        [
                            "command",
                            "args",
                            "env",
                            "type",
                            "url",
                            "headers",
                            "cwd",
                            "timeout_seconds",
                            "enabled",
                        ]
                    ),
                    _json,
                ),
                max_size=3,
            )
        }
    )
)
def test_any_json_content_loads_or_raises_config_error(raw: Any) -> None:
    try:
        loaded = parse_mcp_servers(raw, Path("/p/.mcp.json"), environ={})
    except ConfigError as error:
        assert "/p/.mcp.json" in str(error)
    else:
        assert set(loaded.servers).isdisjoint(loaded.problems)
