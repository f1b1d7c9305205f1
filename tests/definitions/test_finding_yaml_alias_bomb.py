"""Finding 1: a half-kilobyte YAML alias bomb cost seconds and gigabytes on every run.

The frontmatter of one agent file (and an ``mcp_servers.yaml``) is now measured as a node
graph before any value is built, so the bomb is refused in constant time and memory, with a
reason naming the line.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from subagents._yaml import MAX_YAML_ALIAS_VALUES, MAX_YAML_DEPTH, YAMLLimitError, load_yaml
from subagents.cli.agents import agents_app
from subagents.definitions import parse_agent_file, parse_agent_text
from subagents.errors import ConfigError
from subagents.inventory import Inventory
from subagents.mcp.config import load_mcp_servers, read_mcp_file
from subagents.store.retention import load_retention_policy

PEAK_BYTES_LIMIT = 5_000_000  # the 9-level bomb used to take 3 GB


def bomb_lines(levels: int, width: int = 9) -> list[str]:
    """``a0`` .. ``a{levels}``: each a list of ``width`` aliases of the previous one."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return lines


def bomb_agent(levels: int) -> str:
    """The attacker's file: the bomb's last level is the agent's ``tools:``."""
    lines = ["---", "name: bomber", "description: Looks harmless."]
    lines += bomb_lines(levels)
    lines += [f"tools: *a{levels}", "---", "", "You are harmless.", ""]
    return "\n".join(lines)


def peak_memory(action: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = action()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "repo"
    (directory / ".git").mkdir(parents=True)
    yield directory


@pytest.mark.parametrize("levels", [8, 9, 10, 20])
def test_finding_1_alias_bomb_in_tools_makes_the_agent_invalid_in_bounded_memory(
    tmp_path: Path, levels: int
) -> None:
    path = tmp_path / "bomber.md"
    path.write_text(bomb_agent(levels), encoding="utf-8")
    assert path.stat().st_size < 1_500  # the attack is tiny

    definition, peak = peak_memory(lambda: parse_agent_file(path, scope="project"))

    assert definition.status == "invalid"
    (error,) = definition.validation_errors
    assert "expands to more than 10,000 values through YAML aliases (&/*)" in error
    assert "write the values out" in error
    assert error.startswith("line 8:")  # a4: the first level that expands beyond the limit
    assert peak < PEAK_BYTES_LIMIT


def test_finding_1_alias_bomb_does_not_stop_agents_list(repo: Path) -> None:
    agents = repo / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "bomber.md").write_text(bomb_agent(10), encoding="utf-8")
    (agents / "helper.md").write_text(
        "---\nname: helper\ndescription: Helps.\n---\nYou help.\n", encoding="utf-8"
    )

    result = CliRunner().invoke(agents_app, ["list", "--json", "--cwd", str(repo)])

    assert result.exit_code == 0, result.output
    listed = {agent["name"]: agent for agent in json.loads(result.stdout)["agents"]}
    assert listed["helper"]["status"] == "active"
    assert listed["bomber"]["status"] == "invalid"
    inventory = Inventory.discover(repo)
    assert inventory.get("helper").status == "active"
    bomber = inventory.records["bomber"].definition
    assert any("YAML aliases" in error for error in bomber.validation_errors)


def test_a_bomb_in_an_unknown_key_or_through_merge_keys_is_refused_too() -> None:
    merges = ["m: &m {p: *a2}"] + [f"k{i}: {{<<: *m}}" for i in range(13)]  # 13 x 822 values
    for frontmatter in ([*bomb_lines(6), "tools: Read"], [*bomb_lines(2), *merges]):
        text = "\n".join(["---", "name: a", "description: d", *frontmatter, "---", "body"])
        d = parse_agent_text(text, dialect="markdown")
        assert d.status == "invalid"
        assert any("through YAML aliases" in e for e in d.validation_errors)


def test_aliases_within_the_limit_still_work() -> None:
    text = "---\nname: a\ndescription: d\nshared: &t [Read, Grep]\ntools: *t\n---\nbody\n"
    d = parse_agent_text(text, dialect="markdown")
    assert d.status == "active"
    assert d.tools == ["Read", "Grep"]


def test_finding_1_alias_bomb_in_mcp_servers_yaml_is_a_config_error_naming_file_and_line(
    repo: Path, isolated_home: Path
) -> None:
    path = repo / ".subagents" / "mcp_servers.yaml"
    path.parent.mkdir()
    lines = bomb_lines(10)
    path.write_text(
        "\n".join([*lines, "mcpServers:", "  calc:", "    command: python", "    args: *a10"]),
        encoding="utf-8",
    )

    def load() -> ConfigError:
        with pytest.raises(ConfigError) as caught:
            load_mcp_servers(repo)
        return caught.value

    error, peak = peak_memory(load)

    assert error.message.startswith(f"{path}:5: ")  # a4 is on line 5 of this file
    assert "YAML aliases" in error.message
    assert error.hint
    assert peak < PEAK_BYTES_LIMIT
    with pytest.raises(ConfigError, match="YAML aliases"):
        read_mcp_file(path)


def test_a_bomb_in_the_retention_policy_is_a_config_error(repo: Path) -> None:
    path = repo / ".subagents" / "retention_policy.yaml"
    path.parent.mkdir()
    path.write_text("\n".join(["default_days: 3", *bomb_lines(9)]), encoding="utf-8")
    with pytest.raises(ConfigError, match="YAML aliases"):
        load_retention_policy(repo)


# -- the loader's other limits -----------------------------------------------------------------


def test_a_self_referencing_alias_is_refused_with_its_line() -> None:
    with pytest.raises(YAMLLimitError) as caught:
        load_yaml("a: 1\nb: &x\n  - 1\n  - *x\n")
    assert caught.value.line == 2  # where the value holding itself starts
    assert "alias (*) of itself" in caught.value.problem


def test_nesting_beyond_the_depth_limit_is_refused() -> None:
    within = "x: " + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)
    assert load_yaml(within) is not None
    beyond = "x: " + "[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH
    with pytest.raises(YAMLLimitError, match="levels deep"):
        load_yaml(beyond)
    # Through aliases too: each level is written once, the nesting comes from the references.
    chain = ["l0: &l0 [x]"] + [f"l{i}: &l{i} [*l{i - 1}]" for i in range(1, MAX_YAML_DEPTH + 1)]
    with pytest.raises(YAMLLimitError, match="levels deep"):
        load_yaml("\n".join(chain))


@pytest.mark.slow
def test_the_alias_limit_counts_values_added_by_aliases_only() -> None:
    # A large document written out in full is not an alias bomb.
    big = "x: [" + ", ".join(["1"] * (MAX_YAML_ALIAS_VALUES * 2)) + "]"
    assert len(load_yaml(big)["x"]) == MAX_YAML_ALIAS_VALUES * 2
    # Aliases adding just under the limit are fine; over it, refused.
    items = ", ".join(["1"] * 99)
    fits = f"a: &a [{items}]\nb: [" + ", ".join(["*a"] * 99) + "]"
    assert len(load_yaml(fits)["b"]) == 99
    over = f"a: &a [{items}]\nb: [" + ", ".join(["*a"] * 102) + "]"
    with pytest.raises(YAMLLimitError, match="through YAML aliases"):
        load_yaml(over)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("n: " + "1" * 5_000, "number of more than"),  # would raise ValueError in PyYAML
        ("n: 1" + ":00" * 50_000, "number of more than"),  # quadratic in PyYAML
        ("d: 2024-13-45", "month must be in 1..12"),  # PyYAML lets the ValueError through
    ],
)
def test_values_pyyaml_cannot_convert_are_yaml_errors(text: str, problem: str) -> None:
    import yaml

    with pytest.raises(yaml.YAMLError, match=problem):
        load_yaml(text)


def test_an_agent_file_with_an_impossible_date_is_read_leniently() -> None:
    d = parse_agent_text(
        "---\nname: a\ndescription: d\ncreated: 2024-13-45\n---\nbody\n", dialect="markdown"
    )
    assert d.status == "active"
    assert d.extra["created"] == "2024-13-45"
    assert any("line by line" in w for w in d.warnings)
